"""ptxas' reports pinned in records/ptxas_reports.json: read instead of compiling, and checked against a compile
where GEMM_LAB_UNPINNED is set (the exhaustive tier)."""
import pytest

from gemm_lab import catalog, compiler
from gemm_lab.lab import pins


def _key(kernel: str) -> str:
    spec = catalog.get(kernel)
    names = compiler.names_of(spec, spec.full_params())
    return compiler._stem(spec.build_sha256(), names, spec.arch or compiler.OFFLINE_ARCH)


def test_a_pinned_report_is_read_without_compiling(monkeypatch):
    pinned = {"registers": 77, "spill_stores": 0, "spill_loads": 0, "stack_bytes": 0, "smem_bytes": 8192,
              "performance_warnings": ["a note"]}
    monkeypatch.delenv(compiler.UNPINNED_ENV, raising=False)
    monkeypatch.setattr(compiler, "pinned_reports", lambda: {_key("smem_tiled"): pinned})
    monkeypatch.setattr(compiler, "_offline", lambda *a: pytest.fail("compiled a pinned report"))
    report = compiler.ptxas_report("smem_tiled")
    assert (report.registers, report.smem_bytes, report.performance_warnings) == (77, 8192, ("a note",))
    assert report.instance == compiler.names_of(catalog.get("smem_tiled"), catalog.get("smem_tiled").full_params())[0]


def test_unpinned_compiles_and_a_pin_that_differs_fails(monkeypatch):
    fresh = compiler.report_fields(compiler._offline(*_offline_args("smem_tiled"))[1])
    monkeypatch.setenv(compiler.UNPINNED_ENV, "1")
    monkeypatch.setattr(compiler, "pinned_reports", lambda: {_key("smem_tiled"): fresh})
    assert compiler.ptxas_report("smem_tiled").registers == fresh["registers"]
    monkeypatch.setattr(compiler, "pinned_reports", lambda: {_key("smem_tiled"): {**fresh, "registers": 1}})
    with pytest.raises(compiler.CompileError, match="pins another report"):
        compiler.ptxas_report("smem_tiled")


def test_pinning_reads_every_report_of_a_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(compiler.CACHE_ENV, str(tmp_path))
    compiler._offline.cache_clear()
    monkeypatch.setenv(compiler.UNPINNED_ENV, "1")
    report = compiler.ptxas_report("smem_tiled")
    found = pins.reports(compiler.cache_dir())
    assert found == {_key("smem_tiled"): compiler.report_fields(report)}


def _offline_args(kernel: str) -> tuple:
    spec = catalog.get(kernel)
    names = compiler.names_of(spec, spec.full_params())
    return spec.name, spec.build_sha256(), names, spec.arch or compiler.OFFLINE_ARCH
