"""The GPU primer's memory probes: they compile offline, replay (or say how to record them), their records are
checked like every other, and the primer's prose reads right once they are recorded (a fake row in a temporary
records folder, never in records/). The live run is a GPU test."""
import json
import re
import shutil
from pathlib import Path

import pytest

from gemm_lab import catalog, compiler, device, folders, records
from gemm_lab.lab import cli, freshness, sanitize
from gemm_lab.models import gpus, hardware, memory, model
from gemm_lab.pages import diagrams, hardware_tables, plots

ROOT = Path(__file__).resolve().parent.parent
PRIMER = ROOT / "book" / "gpu_primer.md"
GLUE = re.compile(r"\{glue:text\}`([\w]+)(?::([^`]*))?`")
PROBE = catalog.PROBES["memory_probes"]


@pytest.mark.parametrize("probe,name,arch", [(p, n, a) for p in catalog.PROBES.values() for n, a in p.instances],
                         ids=lambda x: getattr(x, "name", x))
def test_every_probe_kernel_compiles_offline_without_spills(probe, name, arch):
    r = compiler.probe_report(probe, name, arch)
    assert r.arch == arch and 0 < r.registers <= 255 and r.spills == 0 and r.stack_bytes == 0, r


@pytest.mark.parametrize("nbytes", [memory.SMALLEST, memory.L1_BYTES, 2**20])
def test_one_lap_of_the_chase_visits_every_line_once_a_kibibyte_apart(nbytes):
    words, seen, offset = memory.ring(nbytes), [], 0
    for _ in range(nbytes // memory.LINE):
        seen.append(offset)
        offset = int(words[offset // 8])
    assert offset == 0 and sorted(seen) == list(range(0, nbytes, memory.LINE))
    steps = {b - a for a, b in zip(seen, seen[1:])}
    assert memory.STRIDE_LINES * memory.LINE in steps and len(steps) == 2  # a stride, and the jump to the next pass


@pytest.mark.parametrize("l2_bytes", [4 * 2**20, 50 * 2**20, 60 * 2**20])
def test_working_sets_sit_in_l1_in_l2_and_beyond_it(l2_bytes):
    sets = memory.working_sets(l2_bytes)
    assert sets["L1"] < 64 * 2**10 < sets["L2"] <= l2_bytes / 4 and sets["DRAM"] >= 8 * l2_bytes
    sizes = memory.sweep_sizes(l2_bytes)
    assert sizes[0] == memory.SMALLEST and sizes[-1] == sets["DRAM"] and set(sets.values()) <= set(sizes)


def fake_row(gpu: str = "NVIDIA H100 80GB HBM3", **over) -> dict:
    """A memory row of the current probe source, with invented but plausible numbers (tests only)."""
    sets = memory.working_sets(52428800)
    row = {
        "kernel": PROBE.name, "source": PROBE.source, "source_sha256": PROBE.source_sha256(),
        "build_sha256": PROBE.build_sha256(), "gpu": gpu, "recorded_at": "2026-12-01T10:00:00+00:00",
        "versions": {"driver": "580.159.04", "cuda_runtime": "13.2", "cupy": "14.2.0"},
        "properties": {"cc": [9, 0], "sms": 132, "clock_mhz": 1980.0, "registers_per_sm": 65536,
                       "smem_per_sm": 233472, "smem_per_block": 232448, "smem_reserved_per_block": 1024,
                       "max_threads_per_sm": 2048, "max_blocks_per_sm": 32, "l2_bytes": 52428800,
                       "dram_bytes": 85045231616},
        "latency": [{"level": "shared", "bytes": 4096, "cycles": 30.0, "ns": 15.2},
                    {"level": "L1", "bytes": sets["L1"], "cycles": 34.0, "ns": 17.2},
                    {"level": "L2", "bytes": sets["L2"], "cycles": 260.0, "ns": 131.3},
                    {"level": "DRAM", "bytes": sets["DRAM"], "cycles": 960.0, "ns": 484.8}],
        "bandwidth": [{"level": "L2", "bytes": sets["L2"], "gbs": 9000.0},
                      {"level": "DRAM", "bytes": sets["DRAM"], "gbs": 3000.0}],
        "sweep": [{"bytes": b, "cycles": 34.0 if b <= 2**17 else 960.0, "ns": 17.2 if b <= 2**17 else 484.8}
                  for b in memory.sweep_sizes(52428800)],
    }
    row.update(over)
    return row


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A records folder in tmp with the H100's and H200's device records and nothing else, replayed."""
    for gpu in (device.DEFAULT_REPLAY_GPU, "NVIDIA H200"):
        folder = tmp_path / folders.slug(gpu)
        folder.mkdir()
        shutil.copy(folders.gpu_folder(gpu) / "device.json", folder / "device.json")
    monkeypatch.setattr(folders, "RECORDS_DIR", tmp_path)
    monkeypatch.setenv(device.REPLAY_ENV, "1")
    monkeypatch.delenv(device.GPU_ENV, raising=False)
    device.live.cache_clear()
    yield tmp_path
    device.live.cache_clear()


def record(sandbox: Path, row: dict) -> Path:
    path = sandbox / folders.slug(row["gpu"]) / f"{records.MEMORY}.json"
    records.upsert(path, [row], ("gpu",))
    return path


def test_without_a_record_replay_says_how_to_record_one(sandbox):
    with pytest.raises(LookupError, match=r"not yet recorded on NVIDIA H100 80GB HBM3: run `gemm-lab record --only "
                                          r"memory`"):
        memory.hierarchy()
    assert memory.find() is None and memory.recorded() is None
    note = str(hardware_tables.missing_note(memory.gpus_to_show()))
    assert "gemm-lab record --only memory" in note and "NVIDIA H200" in note
    table = hardware_tables.memory_table(memory.gpus_to_show())
    assert all(cell == memory.MISSING for row in table.rows for cell in row[1:])


def test_a_recorded_hierarchy_replays_and_passes_the_check(sandbox):
    record(sandbox, fake_row())
    rec = memory.hierarchy()
    assert rec.replayed and rec.gpu == device.DEFAULT_REPLAY_GPU and rec.latency_of("DRAM")["cycles"] == 960.0
    assert freshness.problems(sandbox) == []
    assert memory.MemoryRecord.from_row(rec.to_row()) == rec
    table = hardware_tables.memory_table(memory.gpus_to_show())
    assert table.rows[1][1].startswith("34 clocks, 17 ns (16 KiB)") and table.rows[1][2] == memory.MISSING
    assert "recorded on NVIDIA H100 80GB HBM3, 2026-12-01" in table.caption
    assert hardware_tables.missing_note([device.DEFAULT_REPLAY_GPU]) is None


def test_an_edited_probe_makes_its_record_stale(sandbox):
    record(sandbox, fake_row(source_sha256="0" * 64))
    (problem,) = freshness.problems(sandbox)
    assert "memory_probes was recorded from an older kernels/memory_probes.cu" in problem
    assert "gemm-lab record --only memory" in problem


@pytest.mark.parametrize("change,message", [
    (lambda r: r["latency"].pop(), "latency lacks the level 'DRAM'"),
    (lambda r: r["bandwidth"][0].update(gbs=-1.0), "each bandwidth entry needs"),
    (lambda r: r["properties"].pop("sms"), "properties lack 'sms'"),
    (lambda r: r.pop("sweep"), "lacks the field 'sweep'"),
])
def test_a_malformed_memory_row_is_named(sandbox, change, message):
    row = fake_row()
    change(row)
    path = record(sandbox, row)
    problems = freshness.problems(sandbox)
    assert len(problems) == 1 and str(path) in problems[0] and message in problems[0]


def test_a_recorded_probe_needs_its_sanitizer_runs(sandbox):
    path = record(sandbox, fake_row())
    runs = [sanitize.SanitizerRun(k.name, k.source, k.source_sha256(), k.build_sha256(), tool, 0, [], path.parent.name,
                                 "2026-12-01T10:00:00+00:00", {})
            for k in (*catalog.KERNELS.values(), catalog.PROBES["tensor_core_peak"])
            for tool in sanitize.SANITIZER_TOOLS]
    records.upsert(path.with_name("sanitizer.json"), [r.to_row() for r in runs], sanitize.SANITIZER_KEY)
    problems = freshness.problems(sandbox)
    assert len(problems) == len(sanitize.SANITIZER_TOOLS)
    assert all("memory_probes has no" in p and "gemm-lab sanitize memory_probes" in p for p in problems)


def test_the_sanitizer_checks_the_probe_by_its_kernels_names():
    line = sanitize.command(PROBE, "memcheck", sanitize.cases(PROBE.name), "compute-sanitizer")
    assert line[line.index("--kernel-name") + 1] == "regex=chase_global|chase_shared|copy_cg"
    assert catalog.unsupported(PROBE, (7, 5)) is None and "7.5 or newer" in catalog.unsupported(PROBE, (7, 0))


def test_record_has_a_memory_part():
    assert "memory" in cli.PARTS
    assert cli.main(["record", "--only", "memory"]) == 2  # no GPU here: refused before anything runs


def rendered(numbers: dict[str, str]) -> str:
    """The primer's markdown up to its exercises (their text is the questions', tests/test_pages_exercises.py) with
    every {glue:text} role replaced as myst-nb renders it (a glued string's quotes dropped), or a KeyError naming a
    role the numbers lack."""
    from myst_nb.core.variables import format_plain_text

    return GLUE.sub(lambda m: format_plain_text(repr(numbers[m[1]]), m[2] or ""),
                    PRIMER.read_text().split("\n## Exercises\n")[0])


def test_the_primer_prose_reads_right_once_recorded(sandbox):
    record(sandbox, fake_row())
    text = " ".join(rendered(memory.prose_numbers(memory.find(), hardware.ceilings())).split())
    assert memory.MISSING not in text and "{glue" not in text
    for sentence in ("One load from shared memory takes 30 clock cycles (15 ns); one that hits L1 takes 34 clock "
                     "cycles (17 ns).",
                     "A load that misses L1 and hits L2 takes 260 clock cycles (131 ns), and all the SMs copying from "
                     "L2 move 9.0 TB/s.",
                     "takes 960 clock cycles (485 ns), about 28 times an L1 hit", "this one has 132.",
                     "issue 1.05 trillion warp instructions per second, and the FP32 peak is 66.9 TFLOP/s: at most "
                     "1.05 trillion warp FFMAs per second, × 32 lanes, × 2 FLOP",
                     "(fused multiply-add) in almost every issue slot of every scheduler.",
                     "From DRAM: 3.0 TB/s × 485 ns is 1.5 MB in flight across the GPU, 10.8 KiB per SM: 22 warp-wide",
                     "threads fit 2 blocks", "The smallest cap wins: 2 blocks, 16 warps, an occupancy of 25%, limited "
                     "by registers.", "put 64 KiB on the way, 5.9 times what DRAM needs",
                     "16 KiB stays in L1, 8 MiB is too large for L1 but fits in L2, and 512 MiB fits in neither"):
        assert sentence in text, sentence


def test_the_primer_prose_says_what_is_missing_before_it_is_recorded(sandbox):
    text = " ".join(rendered(memory.prose_numbers(None, hardware.ceilings())).split())
    assert "One load from shared memory takes (not yet recorded)" in text and "this one has 132." in text


def test_the_diagram_and_the_latency_chart_draw_with_and_without_records(sandbox):
    import matplotlib.pyplot as plt

    bare = memory.parameters()
    assert "latency" not in bare and "not yet recorded" in bare["provenance"]
    diagrams.gpu_diagram(bare)
    record(sandbox, fake_row())
    full = memory.parameters()
    assert full["registers_per_sm"] == 65536 and full["latency"]["L2"]["cycles"] == 260.0
    assert full["provenance"].endswith("memory probes of 2026-12-01")
    texts = " ".join(t.get_text() for t in diagrams.gpu_diagram(full).axes[0].texts)
    assert "16,384 registers" in texts and "hit: 260 clocks; copy: 9.0 TB/s" in texts and "?" not in texts
    assert "256 KiB: shared memory (≤ 228 KiB) + L1" in texts
    plots.memory_latency([memory.find()])
    plots.memory_latency([])
    plt.close("all")


def test_occupancy_names_the_blocks_each_limit_allows():
    occ = model.occupancy(256, 126, 32768)
    assert occ["limits"] == {"registers": 2, "shared memory": 6, "threads": 8, "blocks": 32}
    assert (occ["blocks"], occ["warps"], occ["limited_by"]) == (2, 16, "registers")


def test_the_chapters_table_follows_the_catalog():
    table = hardware_tables.chapters_table()
    chapters = [r[0] for r in table.rows]
    assert chapters[0] == "0" and len(chapters) == len({s.chapter for s in catalog.KERNELS.values()}) + 1
    by = {column: dict(zip(chapters, (r[i] for r in table.rows))) for i, column in enumerate(table.columns)}
    assert set(by["H100, H200"].values()) == {"live"}
    assert by["T4"]["9"] == by["A100"]["9"] == "replay" and by["T4"]["6"] == "1 of 2 live"
    assert "RTX 3090, RTX 4090" in table.columns  # the same outcome on both: one column
    assert "T4, chapter 6: multistage replays" in table.caption


def test_the_facts_table_computes_each_cards_peak():
    rows = {r[0]: r[1:] for r in hardware_tables.facts_table().rows}
    assert rows["FP32 peak (TFLOP/s)"][gpus.CARDS.index(next(c for c in gpus.CARDS if c.short == "H100"))] == "66.9"
    assert rows["TMA, wgmma, clusters (8, 9)"] == tuple("yes" if c.cc == (9, 0) else "no" for c in gpus.CARDS)


@pytest.mark.gpu
def test_the_probes_measure_the_hierarchy_live():
    """Their time is the primer's live plan's to hold (records/live_plan.json), not a timed test's. Other test workers
    may share the GPU (pyproject's `-n auto`), and a probe timed beside them can read a level slower than it is: the
    hierarchy must show in one of three measurements (on the H200 it failed once under `-n 4`, never alone)."""
    def ordered(rec: memory.MemoryRecord) -> bool:
        cycles = [rec.latency_of(level)["cycles"] for level in memory.MEMORY_LEVELS]
        return (cycles[1] < cycles[2] < cycles[3] and cycles[0] < cycles[2]  # shared, L1 near; L2, DRAM farther
                and rec.bandwidth_of("L2")["gbs"] > rec.bandwidth_of("DRAM")["gbs"] > 100)

    rec = next((r for r in (memory.measure() for _ in range(3)) if ordered(r)), None)
    assert rec is not None, "three measurements, none with shared/L1 < L2 < DRAM in latency, L2 > DRAM in bandwidth"
    assert memory.MemoryRecord.from_row(json.loads(json.dumps(rec.to_row()))).latency == rec.latency
