"""Without a GPU every public function replays recorded H100 results, and says so."""
import matplotlib

matplotlib.use("Agg")

import pytest

import gemm_lab as gl
from gemm_lab import catalog, device
from gemm_lab.lab import cli, plan
from gemm_lab.models import model
from gemm_lab.pages import diagrams, grids, plots, widgets
from gemm_lab.pages.tables import by_size


@pytest.fixture(autouse=True)
def _replay(replay):
    yield


def test_mode_and_banner():
    assert gl.mode() == "replay" and not gl.live()
    assert "recorded on NVIDIA H100 80GB HBM3" in str(gl.banner())


def test_bench_verify_and_cublas_replay_records():
    x = gl.bench("smem_tiled", 4096)
    assert x.replayed and x.gpu == device.DEFAULT_REPLAY_GPU and x.gflops > 0 and 0 < x.pct_cublas < 100
    assert gl.verify("naive", 2048, 2048, 2048).ok
    assert gl.cublas(8192).gflops > 10 * gl.bench("naive", 8192).gflops
    with pytest.raises(LookupError, match="no recorded result"):
        gl.bench("smem_tiled", 4096, {"BM": 4, "BN": 4, "BK": 4})
    with pytest.raises(ValueError, match="breaks a rule"):
        gl.bench("smem_tiled", 4096, {"BM": 64, "BN": 64})


def test_every_headline_case_is_recorded():
    ms = gl.bench_all(plan.headline_cases())
    kernels = plan.HEADLINE + plan.TENSOR_CORES + plan.EMULATION
    assert len(ms) == len(kernels) * len(plan.SIZES) + len(plan.ODD_SHAPE_KERNELS)
    assert {(x.m, x.n, x.k) for x in ms if x.kernel == "naive"} >= {plan.ODD_SHAPE}
    assert "recorded on NVIDIA H100" in str(gl.measurements_table(ms))
    square = [x for x in ms if x.m == x.n == x.k]
    pivot = by_size(square)
    assert [r[0].split(" (")[0] for r in pivot.rows] == list(kernels)  # a row of another GPU says which
    assert len(pivot.columns) == 1 + len(plan.SIZES)
    assert all(c.endswith("%)") for r in pivot.rows for c in r[1:])
    assert all(cli._recorded(name, params, size, plan.RECORDED_ONLY_ON.get(name, device.DEFAULT_REPLAY_GPU),
                             sustained=False) for name, params, size in plan.headline_cases())


def test_autotuning_is_recorded_at_every_size_and_best_picks_the_fastest():
    from gemm_lab import records
    from gemm_lab.lab import sweeps

    for name, sizes in plan.AUTOTUNE.items():
        for size in (*sizes, plan.AUTOTUNE_CONFIRM[0]):
            found = [x for x in records.measurements(name) if (x.m, x.n, x.k) == (size,) * 3]
            # most of it survives pruning
            space = min(200, len(catalog.legal_grid(name, plan.AUTOTUNE_SPACE.get(name))))
            assert len(found) >= (plan.AUTOTUNE_CONFIRM[1] if size == plan.AUTOTUNE_CONFIRM[0] else space)
            assert sweeps.best(name, size).gflops == max(x.gflops for x in found)
    with pytest.raises(LookupError, match="gemm-lab sweep warp_tiling --size 3000"):
        sweeps.best("warp_tiling", 3000)


def test_cublas_counters_replay_with_the_same_metrics():
    from gemm_lab.models import hardware

    n = grids.COUNTER_SIZE
    row = gl.counters("cublas", (n, n, n))
    assert row["kernel"] == "cublas" and row["params"] == {} and set(hardware.METRICS) <= set(row["metrics"])


@pytest.mark.parametrize("name", list(grids.SWEEPS))
def test_sweeps_replay_the_whole_grid(name):
    choices = grids.SWEEPS[name]
    assert len(gl.sweep(name, grids.EXPLORER_SIZE, choices)) == len(catalog.legal_grid(name, choices))


@pytest.mark.parametrize("name, params", plan.COUNTERS, ids=[k for k, _ in plan.COUNTERS])
def test_every_planned_counter_row_replays(name, params):
    from gemm_lab.models import hardware

    n = grids.COUNTER_SIZE
    assert set(hardware.metrics_for(name)) <= set(gl.counters(name, (n, n, n), params)["metrics"])


@pytest.mark.parametrize("name, params", plan.ENERGY_COUNTERS, ids=[f"{k}-{p}" for k, p in plan.ENERGY_COUNTERS])
def test_every_energy_counter_row_replays(name, params):
    from gemm_lab.models import hardware

    n = plan.ENERGY_SIZE
    assert set(hardware.metrics_for(name)) <= set(gl.counters(name, (n, n, n), params)["metrics"])


def test_recorded_counters_match_the_traffic_model_exactly():
    n = grids.COUNTER_SIZE
    for name, params in [(k, p) for k, p in plan.COUNTERS if k == "smem_tiled"]:
        sectors = gl.counters(name, (n, n, n), params)["metrics"]["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
        assert sectors * 32 == model.global_load_bytes(name, n, n, n, params)


def test_ceilings_and_plots_carry_provenance():
    ceil = gl.ceilings()
    assert 60_000 < ceil["peak_gflops"] < 70_000 and ceil["dram_gbs"] > 1000
    ms = gl.bench_all([(k, None, 4096) for k in plan.HEADLINE])

    def texts(fig):
        return " ".join(t.get_text() for t in fig.texts)

    assert "recorded on NVIDIA H100 80GB HBM3" in texts(plots.bars(ms))
    assert "recorded on" in texts(plots.vs_size(ms))
    assert "ceilings recorded" in texts(plots.roofline(ceil, ms))
    grid = gl.sweep("smem_tiled", grids.EXPLORER_SIZE, grids.SWEEPS["smem_tiled"])
    assert "recorded on" in texts(plots.tile_heatmaps(grid, "BN", "BM", "BK"))
    diagrams.tiling(32, 32, 8)
    diagrams.warp_access()


def test_tile_explorer_in_replay_is_the_in_page_explorer():
    """No kernel runs: sliders could not move in the static page, so the explorer is the Vega-Lite one."""
    chart = widgets.tile_explorer("warp_tiling", x="BN", y="BM")
    controls = {p["name"] for p in chart.to_dict()["params"]}
    assert controls == {f"pick_{p}" for p in catalog.get("warp_tiling").param_names if p not in ("BN", "BM")}


def test_tile_explorer_moves_over_the_recorded_grid():
    box = widgets.tile_explorer("smem_tiled", sliders_in_replay=True)
    header, sliders, _, status, _ = box.children
    assert "replay" in header.value
    bm, bn, bk = sliders.children
    assert bm.options == grids.SWEEPS["smem_tiled"]["BM"]
    assert "GFLOP/s" in status.value
    bm.value, bn.value = 64, 64  # 4096 threads: refused with the rule, nothing looked up
    assert "threads per block" in status.value


def test_cli(capsys):
    assert cli.main(["bench", "--size", "4096"]) == 0
    out = capsys.readouterr().out
    assert "smem_tiled" in out and "% cuBLAS" in out and "recorded on" in out
    assert cli.main(["records", "--check"]) == 0
    assert cli.main(["record"]) == 2  # measuring needs a GPU: a clear error, not a traceback
    assert "measures on a GPU" in capsys.readouterr().err
    assert cli.main(["bench", "--param", "BM=x"]) == 2
    assert "expected NAME=INTEGER" in capsys.readouterr().err
