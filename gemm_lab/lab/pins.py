"""Pin ptxas' reports: `python -m gemm_lab.lab.pins [CACHE]` writes every report in a compile cache (its `.log`
beside each offline cubin) to records/ptxas_reports.json, keyed as the cache is (`compiler._stem`: the compiled
text, the instance, the arch, the options and NVRTC). A clean checkout then reads a report instead of compiling.

Fill the cache first with nothing pinned read, so that it holds exactly what the tests and pages ask for:
    GEMM_LAB_UNPINNED=1 GEMM_LAB_CACHE=/tmp/pins python -m pytest && \
    GEMM_LAB_UNPINNED=1 GEMM_LAB_CACHE=/tmp/pins jupyter-book build . && python -m gemm_lab.lab.pins /tmp/pins/cubins
A report pinned for an older source is never asked for again: the next pinning drops it. The exhaustive test tier
runs with GEMM_LAB_UNPINNED=1, so every pin it meets is checked against a fresh compile.
"""
from __future__ import annotations

import sys
from pathlib import Path

from .. import catalog, compiler, records


def reports(cache: Path) -> dict[str, dict]:
    """The pinned form of every ptxas report in a cache folder of cubins, by file stem."""
    found = {}
    for log in sorted(cache.glob("*.log")):
        mangled = log.with_suffix(".name").read_text().splitlines()[0]
        report = compiler._parse_ptxas(log.read_text(), "", mangled, "")
        if report is not None:
            found[log.stem] = compiler.report_fields(report)
    return found


def main(argv: list[str]) -> int:
    cache = Path(argv[0]) if argv else compiler.cache_dir()
    found = reports(cache)
    path = catalog.ROOT / "records" / f"{compiler.REPORTS}.json"
    records.write_rows(path, [{"key": stem, **fields} for stem, fields in found.items()])
    print(f"pinned {len(found)} ptxas report(s) from {cache} in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
