"""Recorded data: well-formed, fresh, written atomically, never lost, and clear about what is wrong."""
import json
import multiprocessing
import os
from types import SimpleNamespace

import pytest

from gemm_lab import catalog, device, folders, records, timing, turns
from gemm_lab.lab import autotune, freshness, plan, power, sanitize, sweeps


def test_repository_records_are_well_formed_and_fresh():
    assert freshness.problems() == [] and plan.unsustained() == []


def test_every_catalogued_kernel_has_fresh_h100_records():
    have = {m.kernel for m in records.measurements(gpu=records_gpu())}
    assert set(catalog.KERNELS) - set(plan.RECORDED_ONLY_ON) <= have
    for m in records.measurements(gpu=records_gpu()):
        if m.kernel in records.CUBLAS_KERNELS.values():  # the library: no kernel source of ours behind it
            continue
        for field in records.REQUIRED:
            assert getattr(m, field) not in (None, ""), (m.kernel, field)


def records_gpu() -> str:
    from gemm_lab import device

    return device.DEFAULT_REPLAY_GPU


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    monkeypatch.setattr(folders, "RECORDS_DIR", tmp_path)
    return tmp_path


def _row(kernel="naive", **over):
    """A fresh measurement row of a catalogued kernel at its defaults (naive: BLOCK=32), or of a pseudo-kernel."""
    spec = catalog.KERNELS.get(kernel)
    row = {"kernel": kernel, "source": spec.source if spec else "",
           "source_sha256": spec.source_sha256() if spec else "", "params": spec.full_params() if spec else {},
           "m": 64, "n": 64, "k": 64, "precision": records.precision_of(kernel) or "fp32", "gflops": 1.0,
           "cublas_gflops": 2.0, "max_rel_err": 1e-7, "gpu": "Test GPU", "recorded_at": "2026-11-23T00:00:00+00:00"}
    row.update(over)
    return row


def test_upsert_replaces_the_same_key_and_keeps_others(sandbox):
    path = sandbox / "g" / "naive.json"
    records.upsert(path, [_row(), _row(m=128)], records.BENCH_KEY)
    records.upsert(path, [_row(gflops=5.0)], records.BENCH_KEY)
    rows = records.read_rows(path)
    assert sorted((r["m"], r["gflops"]) for r in rows) == [(64, 5.0), (128, 1.0)]


@pytest.mark.parametrize("step", ["fsync", "replace"])  # while the temporary file is written; at the rename
def test_a_crash_mid_write_leaves_the_old_file_intact(sandbox, monkeypatch, step):
    path = sandbox / "g" / "naive.json"
    records.upsert(path, [_row()], records.BENCH_KEY)
    before = path.read_text()

    def crash(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, step, crash)
    with pytest.raises(KeyboardInterrupt):
        records.upsert(path, [_row(m=256)], records.BENCH_KEY)
    assert path.read_text() == before
    assert [p.name for p in path.parent.iterdir() if p.suffix == ".tmp"] == []


def test_concurrent_writers_lose_no_rows(sandbox):
    """Four processes upsert one row at a time into one file: the lock serialises read-modify-write."""
    path = sandbox / "g" / "naive.json"
    jobs = [(path, [_row(m=m)], records.BENCH_KEY) for m in range(1, 121)]
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.starmap(records.upsert, jobs, chunksize=1)
    assert sorted(r["m"] for r in records.read_rows(path)) == list(range(1, 121))


def test_an_interrupted_sweep_resumes_and_keeps_what_it_measured(sandbox, monkeypatch):
    spec, choices = catalog.get("smem_tiled"), {"BM": (8, 16), "BN": (8, 16), "BK": (8, 16)}
    grid = catalog.legal_grid(spec, choices)
    monkeypatch.setattr(device, "live", lambda: True)
    monkeypatch.setattr(device, "gpu", lambda: SimpleNamespace(name="Test GPU", cc=(9, 0)))
    monkeypatch.setattr(autotune, "precompile", lambda cases, workers=None: 0)  # nothing to compile: no GPU
    measured = []

    def bench(kernel, size, params, interrupt_after=None, method=None):
        assert method is turns.SHORT  # a sweep's races are short ones
        if len(measured) == interrupt_after:
            raise KeyboardInterrupt
        measured.append(params)
        return records.Measurement.from_row(_row(
            kernel=spec.name, source=spec.source, source_sha256=spec.source_sha256(),
            build_sha256=spec.build_sha256(), params=params, m=size[0], n=size[1], k=size[2],
            recorded_at=f"2026-11-23T00:00:{len(measured):02d}+00:00"))

    monkeypatch.setattr(timing, "bench", lambda *a, **kw: bench(*a, interrupt_after=3, **kw))
    with pytest.raises(KeyboardInterrupt):
        sweeps.sweep(spec, 64, choices, progress=False)
    kept = records.read_rows(sandbox / "test-gpu" / "smem_tiled.json")
    assert sorted(json.dumps(r["params"], sort_keys=True) for r in kept) == \
        sorted(json.dumps(p, sort_keys=True) for p in grid[:3])

    monkeypatch.setattr(timing, "bench", bench)
    out = sweeps.sweep(spec, 64, choices, progress=False)
    assert [x.params for x in out] == grid and measured == grid  # each combination measured exactly once
    rows = records.read_rows(sandbox / "test-gpu" / "smem_tiled.json")
    assert len(rows) == len(grid) and all(r in rows for r in kept)  # the first three, untouched


@pytest.mark.parametrize("text,match", [
    ("{not json", "not valid JSON"),
    ('{"rows": []}', "expected"),
    ('{"format": 1, "rows": [3]}', "row 0 is not an object"),
])
def test_malformed_files_name_the_file(sandbox, text, match):
    path = sandbox / "g" / "naive.json"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(records.RecordError, match=match) as err:
        records.read_rows(path)
    assert str(path) in str(err.value)
    assert any(match in p for p in freshness.problems(sandbox))


def test_a_mistyped_field_is_named_on_load_and_in_check(sandbox):
    path = sandbox / "test-gpu" / "naive.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"format": 1, "rows": [_row(gflops="fast")]}))
    with pytest.raises(records.RecordError, match="field 'gflops' must be float") as err:
        records.measurements("naive", gpu="Test GPU")
    assert str(path) in str(err.value)
    assert [p for p in freshness.problems(sandbox) if str(path) in p and "'gflops'" in p]


def test_an_unknown_gpu_is_named_with_the_recorded_ones():
    with pytest.raises(ValueError, match="no records for a GPU named 'nope'; recorded GPUs: .*H200"):
        records.measurements(gpu="nope")


def test_a_missing_field_is_named(sandbox):
    row = _row()
    del row["max_rel_err"]
    path = sandbox / "g" / "naive.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"format": 1, "rows": [row]}))
    assert any("'max_rel_err'" in p for p in freshness.problems(sandbox))


def test_stale_source_hash_is_reported(sandbox):
    records.upsert(sandbox / "g" / "naive.json", [_row(source_sha256="0" * 64)], records.BENCH_KEY)
    problems = freshness.problems(sandbox)
    assert len(problems) == 1 and "older kernels/01_naive.cu" in problems[0]


def test_a_full_record_drops_stale_rows_and_keeps_fresh_ones(sandbox):
    path = records.gpu_dir("Test GPU") / "naive.json"
    records.upsert(path, [_row(), _row(m=128, source_sha256="0" * 64)], records.BENCH_KEY)
    records.upsert(path.with_name("cublas.json"), [_row(kernel="cublas", source="", source_sha256="")],
                   records.BENCH_KEY)
    assert freshness.drop_stale("Test GPU") == 1
    assert [r["m"] for r in records.read_rows(path)] == [64]
    assert len(records.read_rows(path.with_name("cublas.json"))) == 1 and freshness.problems(sandbox) == []


def test_lookup_says_what_was_recorded(sandbox):
    records.upsert(sandbox / "test-gpu" / "naive.json", [_row()], records.BENCH_KEY)
    assert records.lookup("naive", {"BLOCK": 32}, 64, 64, 64, gpu="Test GPU").gflops == 1.0
    with pytest.raises(LookupError, match=r"recorded shapes for these parameters: \[\(64, 64, 64\)\]"):
        records.lookup("naive", {"BLOCK": 32}, 65, 64, 64, gpu="Test GPU")


def _sanitizer_row(kernel, tool, **over):
    spec = catalog.get(kernel)
    row = {"kernel": kernel, "source": spec.source, "source_sha256": spec.source_sha256(),
           "build_sha256": spec.build_sha256(), "tool": tool, "errors": 0,
           "cases": [{"params": spec.full_params(), "shapes": [[1, 1, 1]]}], "gpu": "Test GPU",
           "recorded_at": "2026-11-23T00:00:00+00:00", "versions": {"compute_sanitizer": "2025.3.1.0"}}
    row.update(over)
    return row


def _sanitized(sandbox, *changed):
    """Measurements of every kernel and a sanitizer.json with a clean run of every tool on each, except `changed`
    rows (None drops one)."""
    rows = {(k, t): _sanitizer_row(k, t) for k in catalog.KERNELS for t in sanitize.SANITIZER_TOOLS}
    for (kernel, tool), row in changed:
        rows[kernel, tool] = row
    path = sandbox / "test-gpu" / "sanitizer.json"
    for kernel in catalog.KERNELS:
        records.upsert(path.with_name(f"{kernel}.json"), [_row(kernel)], records.BENCH_KEY)
    records.upsert(path, [r for r in rows.values() if r is not None], sanitize.SANITIZER_KEY)
    return path


def test_a_complete_clean_sanitizer_record_passes(sandbox):
    _sanitized(sandbox)
    assert freshness.problems(sandbox) == []
    assert len(sanitize.sanitizer_runs("Test GPU")) == len(catalog.KERNELS) * len(sanitize.SANITIZER_TOOLS)


@pytest.mark.parametrize("row,problem", [
    (None, "naive has no racecheck record: run `gemm-lab sanitize naive`"),
    (_sanitizer_row("naive", "racecheck", build_sha256="0" * 64), "the racecheck record of naive is of an older"),
    (_sanitizer_row("naive", "racecheck", errors=3), "racecheck found 3 error(s) in naive"),
])
def test_sanitizer_records_missing_stale_or_with_errors_are_problems(sandbox, row, problem):
    _sanitized(sandbox, (("naive", "racecheck"), row))
    problems = freshness.problems(sandbox)
    assert len(problems) == 1 and problem in problems[0]


@pytest.mark.parametrize("over,field", [({"errors": "none"}, "errors"), ({"errors": -1}, "errors"),
                                        ({"tool": "leakcheck"}, "tool"), ({"cases": {}}, "cases")])
def test_a_malformed_sanitizer_row_names_the_file_and_field(sandbox, over, field):
    path = _sanitized(sandbox, (("naive", "memcheck"), {**_sanitizer_row("naive", "memcheck"), **over}))
    with pytest.raises(records.RecordError, match=f"field '{field}'") as err:
        sanitize.sanitizer_runs("Test GPU")
    assert str(path) in str(err.value)
    problems = freshness.problems(sandbox)
    assert len(problems) == 1 and str(path) in problems[0] and f"field '{field}'" in problems[0]


def test_a_kernel_never_measured_on_a_gpu_needs_no_sanitizer_record_until_it_is(sandbox):
    """A kernel added since a GPU was recorded, or one it cannot run (wgmma off Hopper), has no rows there."""
    path = _sanitized(sandbox, *((("wgmma_tf32", t), None) for t in sanitize.SANITIZER_TOOLS))
    path.with_name("wgmma_tf32.json").unlink()
    assert freshness.problems(sandbox) == []
    records.upsert(path.with_name("wgmma_tf32.json"), [_row("wgmma_tf32")], records.BENCH_KEY)
    problems = freshness.problems(sandbox)
    assert len(problems) == 4 and all("wgmma_tf32 has no" in p and "gemm-lab sanitize wgmma_tf32" in p
                                      for p in problems)


@pytest.mark.parametrize("kernel", ["mma_tf32", "mma_3xtf32", "wgmma_tf32", "wgmma_3xtf32"])
def test_tensor_core_measurements_carry_their_kernels_precision(sandbox, kernel):
    records.upsert(sandbox / "test-gpu" / f"{kernel}.json", [_row(kernel)], records.BENCH_KEY)
    records.upsert(sandbox / "test-gpu" / "cublas_tf32.json", [_row("cublas_tf32")], records.BENCH_KEY)
    assert freshness.problems(sandbox) == []
    x = records.lookup(kernel, catalog.get(kernel).full_params(), 64, 64, 64, gpu="Test GPU")
    assert x.precision == catalog.get(kernel).precision in ("tf32", "3xtf32")
    assert records.lookup(records.CUBLAS_TF32, {}, 64, 64, 64, gpu="Test GPU").precision == "tf32"


@pytest.mark.parametrize("kernel,precision,allowed", [
    ("mma_tf32", "fp32", "'tf32' for mma_tf32"),
    ("mma_3xtf32", "tf32", "'3xtf32' for mma_3xtf32"),
    ("naive", "3xtf32", "'fp32' for naive"),
    ("cublas", "tf32", "'fp32' for cublas"),
    ("cublas_tf32", "fp32", "'tf32' for cublas_tf32"),
    ("retired_kernel", "fp16", "'fp32' or 'tf32' or '3xtf32'"),
])
def test_a_precision_that_is_not_the_kernels_is_named(sandbox, kernel, precision, allowed):
    path = sandbox / "test-gpu" / f"{'naive' if kernel == 'retired_kernel' else kernel}.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"format": 1, "rows": [_row(kernel, precision=precision)]}))
    problems = freshness.problems(sandbox)
    assert len(problems) == 1 and str(path) in problems[0] and f"field 'precision' must be {allowed}" in problems[0]


def test_latency_rows_need_their_seconds(tmp_path):
    folder = tmp_path / "some-gpu"
    folder.mkdir()
    good = {"kernel": "smem_tiled", "open_s": 3.2, "cold_s": [0.4, 0.5], "warm_s": [0.1], "recorded_at": "2026-11-24"}
    bad = {**good, "kernel": "warp_tiling", "cold_s": ["fast"]}
    rows = [good, {**good, "open_s": None}, bad]
    (folder / "widget_latency.json").write_text(json.dumps({"format": 1, "rows": rows}))
    problems = freshness.problems(tmp_path)
    assert len(problems) == 2
    assert "'open_s' must be float" in problems[0] and "'cold_s' must list seconds" in problems[1]
    with pytest.raises(records.RecordError, match="open_s"):
        freshness.save_latency([{**good, "open_s": "3 s", "gpu": "Some GPU"}])


def test_a_tensor_core_headline_is_the_median_of_its_rounds():
    """The share of cuBLAS that a tensor-core row reports lies within its rounds (the pooled medians of the two sides
    could lie outside every round); an FP32 row keeps the ratio of its medians."""
    common = {"source": "", "source_sha256": "", "params": {}, "m": 8, "n": 8, "k": 8, "gflops": 100.0,
              "cublas_gflops": 80.0, "max_rel_err": 0.0, "gpu": "G", "recorded_at": "2026-11-25T00:00:00+00:00",
              "rounds_pct": [98.0, 103.0, 99.0, 120.0]}
    tc = records.Measurement(kernel="wgmma_ws_tf32", precision="tf32", **common)
    assert tc.pct_cublas == 101.0 and tc.pct_range == (98.0, 120.0)
    fp32 = records.Measurement(kernel="naive", precision="fp32", **common)
    assert fp32.pct_cublas == 125.0
    assert records.Measurement(kernel="ozaki", precision="ozaki", **{**common, "rounds_pct": []}).pct_cublas == 125.0


def test_a_quoted_tensor_core_race_must_be_sustained_with_joules(sandbox):
    """kernel 14 at its defaults at 8192 is a key share (`catalog.KEY_SHARES`, raced in 2 s turns): a row of it from a
    short race, from a sustained race whose turns did not settle or were not each timed under one pair of events
    (recorded before they were), without each side's joules, or with less timed GPU time on a side than its turns ask
    (8 rounds of the 1 s turns of a row older than `turn_ms`, of 2 s for a row that keeps it) is a problem; a row with
    them is not, nor one whose short side is so brief that its turns stop at max_turn_launches; a quoted FP32 row (it
    runs below the cap) needs only today's sustained race, turns timed whole."""
    spec = catalog.get("wgmma_ws_tf32")
    side = {"sm_clock_mhz": 1500.0, "timed_ms": 8400.0, "energy_j": 2.3, "mean_power_w": 690.0}
    base = {"kernel": spec.name, "source": spec.source, "source_sha256": spec.source_sha256(),
            "build_sha256": spec.build_sha256(), "params": spec.full_params(), "m": 8192, "n": 8192, "k": 8192,
            "precision": "tf32", "time_ms": 3.3, "cublas_time_ms": 3.2}
    settles = turns.SUSTAINED.turn_settle_ms
    sustained = {"method": "sustained", "turn_settle_ms": settles, "timed_per": turns.TIMED_PER}
    cases = {"short": {"method": "short", "telemetry": side, "cublas_telemetry": side},
             "no joules": dict(sustained, telemetry={"timed_ms": 8400.0}, cublas_telemetry=side),
             "too brief": dict(sustained, telemetry={**side, "timed_ms": 400.0}, cublas_telemetry=side),
             "2 s turns": dict(sustained, telemetry={**side, "timed_ms": 2400.0}, cublas_telemetry=side),
             "cuBLAS too brief": dict(sustained, telemetry=side, cublas_telemetry={**side, "timed_ms": 7990.0}),
             "turns unsettled": dict(sustained, turn_settle_ms=0.0, telemetry=side, cublas_telemetry=side),
             "events around each launch": dict(sustained, timed_per="launch", telemetry=side, cublas_telemetry=side),
             "2 s turns kept, 8 s timed": dict(sustained, turn_ms=2000.0, telemetry=side, cublas_telemetry=side),
             "sustained": dict(sustained, telemetry=side, cublas_telemetry=side),
             "sustained, 2 s turns kept": dict(sustained, turn_ms=2000.0, telemetry={**side, "timed_ms": 16400.0},
                                               cublas_telemetry={**side, "timed_ms": 16100.0}),
             "sustained, small work": dict(sustained, time_ms=0.05, telemetry={**side, "timed_ms": 400.0},
                                           cublas_telemetry=side)}
    assert plan.method_for(spec.name, None, 8192) is turns.LONG_TURNS
    assert plan.method_for(spec.name, {"GROUP": 4}, 8192) is plan.method_for(spec.name, None, 2048) is turns.SUSTAINED
    for what, over in cases.items():
        records.upsert(sandbox / "g" / f"{spec.name}.json", [_row(**{**base, **over})], records.BENCH_KEY)
        problems = [p for p in plan.unsustained(sandbox) if "not timed in today's sustained race" in p]
        assert bool(problems) == (not what.startswith("sustained")), what
        assert what != "2 s turns" or "8 s timed a side" in problems[0]
        assert what != "2 s turns kept, 8 s timed" or "16 s timed a side" in problems[0]
    ffma = dict(sustained, turn_settle_ms=0.0)  # an FP32 race takes no turn settles
    for what, over in {"short": {"method": "short"}, "events around each launch": dict(ffma, timed_per="launch"),
                       "sustained, no joules": ffma}.items():
        records.upsert(sandbox / "g" / "naive.json", [_row(m=8192, n=8192, k=8192, **over)], records.BENCH_KEY)
        problems = [p for p in plan.unsustained(sandbox) if "naive" in p]
        assert bool(problems) == (not what.startswith("sustained")), what
        assert what.startswith("sustained") or "joules" not in problems[0]


def test_the_clock_after_a_switch_comes_from_settle_json_else_the_default_gpus(sandbox):
    """Chapter 8 quotes how far a side ran from its settled time in the first 50 ms after the other side's turn: the
    largest deviation over both sides of every block, windows starting before 50 ms only; a GPU without a settle.json
    reads the default replay GPU's, and says so; none at all is a clear error."""
    with pytest.raises(LookupError, match="benchmarks/settle.py"):
        power.switch_offset()
    rows = [{"kernel": "ozaki", "m": 8192, "windows_ms": [0, 25, 50, 100],
             "blocks": [{"kernel_rel": [92.5, 97.0, 130.0, 100.0], "cublas_rel": [119.4, 104.0, 100.0, 100.0]}]}]
    records.upsert(folders.gpu_folder(device.DEFAULT_REPLAY_GPU) / f"{power.SETTLE}.json", rows, ("kernel", "m"))
    assert power.switch_offset() == (pytest.approx(19.4), device.DEFAULT_REPLAY_GPU)  # 130 starts at 50 ms
    assert power.switch_offset(within_ms=25.0)[0] == pytest.approx(19.4)
    assert power.switch_offset(gpu="Other GPU")[1] == device.DEFAULT_REPLAY_GPU


def test_the_outside_re_timing_sits_beside_each_key_share_and_names_those_apart(sandbox):
    """The scoreboard sets benchmarks/retime.py's blocks beside the races the pages quote: a row more than
    tables.RETIME_AGREE % of its re-timed share from its race is named with its gap; a GPU without a retime.json reads
    the default replay GPU's; none at all is a clear error."""
    from gemm_lab.pages import tables

    with pytest.raises(LookupError, match="benchmarks/retime.py"):
        tables.retimed()
    gpu = device.DEFAULT_REPLAY_GPU
    spec = catalog.get("wgmma_ws_tf32")
    for size, pct in ((4096, 96.0), (8192, 95.0)):
        records.save([records.Measurement.from_row(_row(
            spec.name, params=spec.full_params(), m=size, n=size, k=size, precision="tf32", gpu=gpu,
            rounds_pct=[pct - 1, pct, pct + 1], gflops=pct, cublas_gflops=100.0))])
    blocks = [{"kernel": spec.name, "params": spec.full_params(), "m": size, "n": size, "k": size, "gpu": gpu,
               "pct_blocks": pct, "pairs_pct": [pct - 0.2, pct + 0.2], "recorded_at": "2026-11-27T09:00:00+00:00",
               "warm_s": 1.5, "lead_s": 0.5, "block_s": 2.0, "blocks": 10}
              for size, pct in ((4096, 95.5), (8192, 97.5))]
    records.upsert(folders.gpu_folder(gpu) / f"{records.RETIME}.json", blocks, ("kernel", "params", "m"))
    check = tables.retimed(gpu="Other GPU")
    assert check.gpu == gpu and check.apart == ("wgmma_ws_tf32 at 8,192 (2.5 points, 2.6 %)",)
    assert check.how == "after 1.5 s untimed, 5 runs of 2 s a side, each after 0.5 s untimed"
    assert [r[-1] for r in check.table.rows] == ["+0.5 (0.5 %)", "-2.5 (2.6 %)"]
    assert "95.0% (94.0–96.0)" in check.table.rows[1] and check.where == "H100"  # one GPU's rows: none other named


def test_a_kernel_only_another_gpu_measured_is_read_from_it_and_says_whose(sandbox, monkeypatch):
    """A replayed GPU without a kernel's rows reads them from the first GPU of `records.fallbacks` that has them: the
    row keeps its GPU, and the stamps and the table rows name it among the others."""
    from gemm_lab.pages import tables

    mine, other = device.DEFAULT_REPLAY_GPU, "NVIDIA H200"
    for gpu in (mine, other):
        records.upsert(folders.gpu_folder(gpu) / "device.json", [{"gpu": gpu}], ("gpu",))
    monkeypatch.setattr(device, "replay_gpu", lambda: mine)
    records.save([records.Measurement.from_row(_row("naive", gpu=mine)),
                  records.Measurement.from_row(_row("coalesced", gpu=mine)),
                  records.Measurement.from_row(_row("smem_tiled", gpu=other))])
    found = [records.lookup(k, catalog.get(k).full_params(), 64, 64, 64) for k in ("naive", "coalesced", "smem_tiled")]
    assert [x.gpu for x in found] == [mine, mine, other] and records.fallbacks()[:2] == [mine, other]
    assert tables.provenance(found).startswith(f"recorded on {mine} (smem_tiled: {other}),")
    assert [tables.kernel_label(x, found) for x in found] == ["naive", "coalesced", "smem_tiled (H200)"]
    with pytest.raises(LookupError):  # a named GPU is that GPU's alone
        records.lookup("smem_tiled", catalog.get("smem_tiled").full_params(), 64, 64, 64, gpu=mine)


def test_toggling_rows_read_back_as_measurements_and_tabulate_each_side(sandbox):
    from gemm_lab.pages import precision_tables

    spec = catalog.get("wgmma_ws_tf32")
    rows = [_row("wgmma_ws_tf32", params=spec.full_params(p), m=8192, n=8192, k=8192, gpu="NVIDIA H200",
                 rounds_pct=[pct, pct + 1], details={"inputs": inputs},
                 telemetry={"sm_clock_mhz": mhz, "mean_power_w": 690.0, "energy_j": 2.0},
                 cublas_telemetry={"sm_clock_mhz": 1545.0, "mean_power_w": 700.0, "energy_j": 2.1})
            for p, inputs, pct, mhz in (({}, "fp32", 96.0, 1455.0), ({}, "A as TF32", 98.0, 1560.0),
                                        ({"CLUSTER": -2}, "fp32", 97.5, 1485.0),
                                        ({"CLUSTER": -2}, precision_tables.TMA_ROUNDS, 100.0, 1500.0))]
    records.upsert(records.gpu_dir("NVIDIA H200") / f"{records.TOGGLING}.json", rows,
                   ("kernel", "params", "m", "details"))
    got = precision_tables.toggling_races("NVIDIA H200")
    assert sorted(x.details["inputs"] for x in got) == ["A as TF32", "fp32", "fp32", precision_tables.TMA_ROUNDS]
    table = precision_tables.toggling_table(got)
    cells = [row[:4] for row in table.rows]
    # the default's rows first (FP32 inputs, then rounded), then the pair's; the share is the rounds' median
    assert cells == [("default", "8192³", "fp32", "96.5% (96.0–97.0)"),
                     ("default", "8192³", "A as TF32", "98.5% (98.0–99.0)"),
                     ("pair along N", "8192³", "fp32", "98.0% (97.5–98.5)"),
                     ("pair along N", "8192³", precision_tables.TMA_ROUNDS, "100.5% (100.0–101.0)")]
    # the pair with copies that round to TF32, by size, and the phrase the intro and the scoreboard glue
    assert list(precision_tables.rounded_copies("NVIDIA H200")) == [8192]
    gflop = 2 * 8192**3 / 1e9
    assert precision_tables.rounded_copies_headline("NVIDIA H200") == \
        f"100.5 % of cuBLAS TF32 at 8,192, {gflop / 2.0:,.0f} against {gflop / 2.1:,.0f} GFLOP/J"
    assert precision_tables.rounded_copies_headline("Other GPU") == ""
    assert "1,560\u00a0MHz" in table.rows[1][4] and table.rows[0][5] == f"{2 * 8192**3 / 1e9 / 2.0:,.0f}"
    assert precision_tables.toggling_races("Other GPU") == []
