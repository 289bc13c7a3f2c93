"""The page on published claims: every case it shows is recorded, its tables are complete, and the ways of
timing cuBLAS replay without a GPU and run on one."""
import pytest

from gemm_lab import device
from gemm_lab.lab import baselines, cli, plan, published


def test_every_claim_case_is_recorded_from_the_current_sources(replay):
    cases = plan.claim_cases()
    assert {size for *_, size in cases} == {*plan.CLAIM_SIZES, published.SIBOEHM_SIZE}
    assert all(cli._recorded(*c, device.DEFAULT_REPLAY_GPU, sustained=False) for c in cases)


def test_the_tables_have_a_measured_row_per_published_step(replay):
    seed = published.seed002_table()
    assert [r[0].split(":")[0] for r in seed.rows] == [s[0] for s in published.SEED002_STEPS]
    assert all(cell.endswith("%)") for r in seed.rows for cell in r[3:5])
    assert "quoted as data" in seed.caption and "recorded on NVIDIA H100" in seed.caption
    sib = published.siboehm_table()
    assert len(sib.rows) == len(published.SIBOEHM_STEPS) and all(r[3].endswith("%)") for r in sib.rows)


def test_cublas_is_recorded_every_way_and_the_book_way_is_the_fastest_timing(replay):
    for size in plan.CUBLAS_WAYS_SIZES:
        ways = baselines.ways(size)
        assert list(ways) == list(baselines.WAYS)
        book = ways["book"]["time_ms"]
        assert all(r["time_ms"] >= 0.95 * book for r in ways.values())  # 5 %: the two event-timed ways tie
        assert ways["first_call"]["time_ms"] > 10 * book and ways["host_copies"]["time_ms"] > 5 * book
    table = published.cublas_ways(plan.CUBLAS_WAYS_SIZES[0]).table
    assert len(table.rows) == len(baselines.WAYS) and "recorded on" in table.caption
    with pytest.raises(LookupError, match="gemm-lab record --only claims"):
        baselines.recorded(3000)


@pytest.mark.gpu
def test_every_way_times_cublas_live():
    rows = baselines.measure(512)
    assert [r["way"] for r in rows] == list(baselines.WAYS)
    assert all(r["time_ms"] > 0 and r["gflops"] > 0 and r["gpu"] == device.gpu().name for r in rows)


def test_the_best_ffma_kernel_quoted_is_a_sustained_race_where_one_is_recorded(replay, monkeypatch):
    """A short race of a faster instance (the other setting of stream-K than the best sustained race's) is not quoted
    over a sustained one; words name the instance, so a page says which of kernel 10b's options it quotes."""
    import dataclasses

    from gemm_lab import records
    from gemm_lab.pages import tables

    x = published.best_ffma(8192)
    stream = x.params["STREAM"]
    short = dataclasses.replace(x, method="", gflops=2 * x.gflops, params={**x.params, "STREAM": 1 - stream})
    real = records.measurements
    monkeypatch.setattr(records, "measurements", lambda name, gpu=None: [*real(name, gpu), short])
    best = published.best_ffma(8192)
    assert best.method == "sustained" and best.gflops < short.gflops
    words = ("at its defaults", "with STREAM=1")
    assert published.instance_words(best).endswith(words[stream])
    assert published.instance_words(short).endswith(words[1 - stream])
    assert tables.short_races([best]) == "their rows here are sustained races too"
    assert "(pipelined_warp_tiling)" in tables.short_races([best, short])
    assert "1 of their 1" in tables.short_races([short])
    assert "short" not in tables.provenance([best])
    assert tables.provenance([short]).endswith("; short races, not sustained ones")
    assert tables.provenance([best, short]).endswith("; 1 of these 2 results from short races, the others not")
