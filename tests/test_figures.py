"""Every picture (`diagrams`) and chart (`plots`) keeps the style's rule: no text smaller than the page's body text
when the page is 800 px wide (the content column the narrower), drawn from the records in replay."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import math  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gemm_lab import catalog, records
from gemm_lab.lab import plan, power, published  # noqa: E402
from gemm_lab.models import banks, model
from gemm_lab.pages import diagrams, grids, plots, power_plots, style
from gemm_lab.precision import emulation


def _figures():
    import gemm_lab as gl
    from gemm_lab.models import hardware

    ceil = gl.ceilings()
    board = gl.bench_all([(k, None, 4096) for k in (*plan.HEADLINE, *plan.TENSOR_CORES)], progress=False)
    grid = [m for m in records.measurements("smem_tiled") if (m.m, m.n, m.k) == (grids.EXPLORER_SIZE,) * 3]
    n = grids.COUNTER_SIZE
    stall_rows = [hardware.counters(k, (n, n, n)) for k in ("warp_tiling", "cublas")]
    tt2 = catalog.get("thread_tile_2d").full_params()
    traffic_cases = [(k, p) for k, p in plan.COUNTERS if k == "smem_tiled"][:2]
    traffic_rows = [hardware.counters(k, (n, n, n), p) for k, p in traffic_cases]
    by_k = [x for k in ("mma_tf32", "mma_3xtf32") for x in records.measurements(k) if x.m == 1024 and x.n == 1024]
    return {
        "tiling": lambda: diagrams.tiling(32, 32, 32),
        "warp_access": lambda: diagrams.warp_access(),
        "levels": lambda: diagrams.levels("thread_tile_2d", tt2, ceil, 128),
        "bank_grid": lambda: diagrams.bank_grid(banks.sites("bank_conflicts", {"LAYOUT": 1})[0]),
        "pipeline": lambda: diagrams.pipeline(catalog.get("multistage").full_params()),
        "producer_consumer": lambda: diagrams.producer_consumer(catalog.get("wgmma_ws_tf32").full_params()),
        "warp_tiles": lambda: diagrams.warp_tiles({"BM": 64, "BN": 128, "WM": 32, "WN": 64, "TM": 4, "TN": 16}),
        "mma_fragment": lambda: diagrams.mma_fragment(),
        "tma_swizzle": lambda: diagrams.tma_swizzle(),
        "ldmatrix_x4": lambda: diagrams.ldmatrix_x4(),
        "warpgroup": lambda: diagrams.warpgroup(),
        "wgmma_descriptor": lambda: diagrams.wgmma_descriptor(),
        "tma_boxes": lambda: diagrams.tma_boxes(),
        "mbarrier_handoff": lambda: diagrams.mbarrier_handoff(),
        "scoreboard": lambda: plots.scoreboard(board),
        "bars": lambda: plots.bars(board[:4]),
        "vs_size": lambda: plots.vs_size(gl.bench_all([(k, None, s) for k in plan.HEADLINE for s in plan.SIZES],
                                                      progress=False)),
        "roofline": lambda: plots.roofline(ceil, board[:6]),
        "tile_heatmaps": lambda: plots.tile_heatmaps(grid, "BN", "BM", "BK"),
        "stalls": lambda: plots.stalls(stall_rows, ["warp tiling", "cuBLAS"]),
        "traffic": lambda: plots.traffic(traffic_rows, [model.global_load_bytes("smem_tiled", n, n, n, p)
                                                        for _, p in traffic_cases], ["8x8", "16x16"]),
        "paired": lambda: plots.paired(list(zip(grid, grid[1:])), "one", "the next"),
        "gpu_bars": lambda: plots.gpu_bars(plan.HEADLINE, plan.SIZES[-1], records.recorded_gpus()),
        "error_vs_k": lambda: plots.error_vs_k(by_k),
        "accuracy_vs_speed": lambda: plots.accuracy_vs_speed(board[-6:]),
        "claims": lambda: plots.claims(published.claims_beside_ours()),
        "crt": lambda: diagrams.crt((3, 5, 7), 38),
        "ozaki_pipeline": lambda: diagrams.ozaki_pipeline(catalog.get("ozaki").full_params(), 8192),
        "outlier_channel": lambda: diagrams.outlier_channel(),
        "median_error_vs_speed": lambda: plots.median_error_vs_speed(
            gl.bench_all([("ozaki", {"MODULI": m}, 8192) for m in (0, 6, 7, 9)], progress=False),
            emulation.errors(emulation.HEADLINE_SHAPE, None)),
        "stage_costs": lambda: plots.stage_costs({s: emulation.stage_ms(s) for s in emulation.STAGE_SIZES},
                                                 [gl.cublas(s) for s in emulation.STAGE_SIZES], "test"),
        "errors": lambda: plots.errors([e for s in emulation.ERROR_VS_K for e in emulation.errors(s, None)]),
        "ladder": lambda: plots.ladder({s: gl.bench_all([("wgmma_tf32", None, s), ("wgmma_ws_tf32", None, s)],
                                                        progress=False) for s in plan.LADDER_SIZES}, ["8", "14"]),
        "quarter_warps": lambda: diagrams.quarter_warps(),
        "lds128_passes": lambda: diagrams.lds128_passes(),
        "power_turns": lambda: power_plots.power_turns(power.rows(), cap_w=700),
        "speed_shares": lambda: power_plots.speed_shares(ceil, records.lookup("mma_tf32", catalog.get("mma_tf32")
                                                                        .full_params(), 4096, 4096, 4096),
                                                   hardware.counters("mma_tf32", (4096,) * 3)),
        "wgmma_wait": lambda: diagrams.wgmma_wait(),
        "ring_flight": lambda: diagrams.ring_flight(model.Ring(571.0, 140.0, 883.0), 4),
    }


def test_every_figure_text_reads_at_800_px(replay):
    small = {}
    for name, draw in _figures().items():
        fig = draw()
        if style.fits(fig):
            small[name] = style.fits(fig)[:3]
        plt.close(fig)
    assert not small, f"figure text smaller than the body's {style.BODY_PX} px: {small}"


def test_gpu_bars_has_every_kernel_on_every_gpu(replay):
    """The scoreboard draws the GPUs' bars at the largest size, where the widest gap is: a kernel missing there on
    one GPU would be drawn as a bar of 0 % (`gpu_bars`), so every one it draws must be recorded on each GPU."""
    s = plan.SIZES[-1]
    missing = [(k, g) for k in plan.HEADLINE for g in records.recorded_gpus()
               if records.lookup_or_none(k, catalog.get(k).full_params(), s, s, s, gpu=g) is None]
    assert not missing, f"not recorded at {s}: {missing}"


def test_fits_sees_small_text():
    fig, ax = plt.subplots(figsize=(style.WIDTH, 2))
    ax.set_title("tiny", fontsize=6)
    assert ("tiny", pytest.approx(6 * style.DPI / 72, abs=0.2)) in style.fits(fig)
    wide, ax = plt.subplots(figsize=(2 * style.WIDTH, 2))  # shrunk to the column: 12 pt reads as about 8 px
    ax.set_title("shrunk")
    assert "shrunk" in dict(style.fits(wide))
    plt.close("all")


def test_heatmap_colour_bar_and_cells_say_the_same_unit(replay):
    grid = [m for m in records.measurements("smem_tiled") if (m.m, m.n, m.k) == (grids.EXPLORER_SIZE,) * 3]
    fig = plots.tile_heatmaps(grid, "BN", "BM", "BK")
    bar = fig.axes[-1]
    assert bar.get_ylabel() == "TFLOP/s"
    top = max(m.gflops for m in grid) / 1e3
    assert bar.get_ylim()[1] == pytest.approx(top)
    cells = [float(t.get_text()) for ax in fig.axes[:-1] for t in ax.texts]
    assert max(cells) == pytest.approx(top, abs=0.05)
    plt.close(fig)


def test_points_that_would_look_alike_are_told_apart(replay):
    """The roofline gives each size its marker, and a chart of several points of one kernel (chapter 10's moduli)
    gives each its shade: no two legend entries draw the same mark."""
    import gemm_lab as gl

    def marks(fig) -> list[tuple]:
        """What each legend entry draws: a line's marker and colour, a scatter's shape and colours."""
        def mark(h) -> tuple:
            if hasattr(h, "get_marker"):
                return h.get_marker(), str(h.get_color())
            return str(h.get_paths()[0].vertices.round(2).tolist()), str(h.get_facecolor().round(3).tolist())
        return [mark(h) for h in fig.legends[0].legend_handles]

    roof = plots.roofline(gl.ceilings(), [gl.cublas(s) for s in plan.SIZES])
    ozaki = plots.accuracy_vs_speed(gl.bench_all([("ozaki", {"MODULI": m}, 8192) for m in (0, 6, 7, 9)],
                                                 progress=False))
    for fig in (roof, ozaki):
        found = marks(fig)
        assert len(found) == 4 and len(set(found)) == 4, found
    plt.close("all")


def test_pipeline_timelines_take_blocks_per_sm_from_the_occupancy_model(replay):
    """Chapter 6's timelines say as many resident blocks as its occupancy table (and the primer's exercise)."""
    tile = {k: v for k, v in catalog.get("prefetch").full_params().items() if k != "PREFETCH"}
    for params in ({**tile, "PREFETCH": 0}, {**tile, "PREFETCH": 1}):
        fig = diagrams.pipeline(params)
        blocks = model.resident("prefetch", params)["blocks"]
        assert any(f"{blocks} blocks/SM by the occupancy model" in " ".join(t.get_text().split())
                   for t in fig.texts), params
        plt.close(fig)



def test_power_turns_draws_a_line_per_kernel_and_redraws_from_the_rows_given(replay):
    """Chapter 8's power-cap figure: one line of markers per kernel in each panel (the kernel's share; each side's
    clock and mean power), at exactly the recorded turn lengths on a log axis, every axis labelled with its unit; fewer
    rows redraw it with fewer lines and points, their values the rows' own."""
    rows = power.rows()
    kernels = list(dict.fromkeys(x.kernel for _, x in rows))

    def lines(ax):
        return [line for line in ax.get_lines() if not line.get_label().startswith("_") and line.get_marker() != "None"]

    fig = power_plots.power_turns(rows, cap_w=700)
    share, clock, watts = fig.axes
    assert len(lines(share)) == len(kernels) and len(lines(clock)) == len(lines(watts)) == len(kernels)
    assert share.get_xscale() == "log" and all("(" in ax.get_ylabel() for ax in fig.axes)
    assert "ms" in watts.get_xlabel() and any("recorded on" in t.get_text().replace("\n", " ") for t in fig.texts)
    for line, kernel in zip(lines(share), kernels):
        mine = sorted((t, x) for t, x in rows if x.kernel == kernel)
        assert list(line.get_xdata()) == [t for t, _ in mine]
        assert list(line.get_ydata()) == pytest.approx([x.pct_cublas for _, x in mine])
    assert any(line.get_ydata()[0] == 700 for line in watts.get_lines())  # the cap
    plt.close(fig)

    some = [(t, x) for t, x in rows if x.kernel == kernels[0]][:3]
    fig = power_plots.power_turns(some)
    share, clock, watts = fig.axes
    assert len(lines(share)) == 1 and len(lines(share)[0].get_xdata()) == 3
    assert list(lines(watts)[0].get_ydata()) == pytest.approx([x.telemetry["mean_power_w"] for _, x in some])
    assert not any(line.get_ydata()[0] == 700 for line in watts.get_lines())  # no cap asked for, none drawn
    plt.close(fig)


def test_speed_shares_is_a_waterfall_of_the_page_s_factors_beside_the_race(replay):
    """Chapter 8's waterfall: peak, × clock share, × busy share (each bar labelled with its factor), and the measured
    speed as its own bar; the levels are the ceilings', the race's and the counters' own numbers, in TFLOP/s."""
    import gemm_lab as gl
    from gemm_lab.models import hardware

    ceil, race = gl.ceilings(), records.lookup("mma_tf32", catalog.get("mma_tf32").full_params(), 4096, 4096, 4096)
    row = hardware.counters("mma_tf32", (4096,) * 3)
    fig = power_plots.speed_shares(ceil, race, row)
    ax = fig.axes[0]
    clock, busy = race.telemetry["sm_clock_mhz"] / ceil["clock_mhz"], row["metrics"][hardware.TENSOR_METRICS[0]] / 100
    peak = ceil["mma_sync_tf32_gflops"] / 1e3
    tops = [round(b.get_y() + b.get_height(), 6) for b in ax.patches]
    assert len(ax.patches) == 6  # three levels, the two factors' cuts, the measurement
    assert tops == pytest.approx([peak, peak * clock, peak * clock * busy, peak, peak * clock, race.gflops / 1e3])
    labels = [t.get_text() for t in ax.texts]
    assert f"× {clock:.2f}" in labels[1] and f"× {busy:.2f}" in labels[2] and labels[3] == f"{race.gflops / 1e3:,.0f}"
    assert "TFLOP/s" in ax.get_ylabel() and len(ax.get_xticklabels()) == 4
    assert any("Nsight Compute" in t.get_text().replace("\n", " ") for t in fig.texts)  # whose counters
    plt.close(fig)


def test_wgmma_wait_alternates_fragment_sets_as_kernel_12_runs_its_steps(replay):
    """Chapter 8a's timeline follows 12_tf32_wgmma.cu: steps run in pairs (frag0 even, frag1 odd), a step issues the
    tile STAGES - 2 ahead into the stage read two steps before, and the picture draws each step's loads into its own
    set, one group per step, one stage read per step, for any STAGES."""
    source = (catalog.ROOT / "kernels" / "12_tf32_wgmma.cu").read_text()
    assert "run_step(step, frag0, small);\n    run_step(step + 1, frag1, small);" in source
    assert "issue(step + STAGES - 2)" in source and "wgmma_wait<1>();" in source
    for stages in (3, 4, 6):
        steps = diagrams.wgmma_steps(stages, range(8))
        assert [x["frag"] for x in steps] == [0, 1] * 4
        assert all(x["fills"] == steps[i - 2]["reads"] for i, x in enumerate(steps) if i >= 2)
        fig = diagrams.wgmma_wait({"STAGES": stages, "BN": 128}, step=4)  # six stages of 256 columns do not fit
        gids = [p.get_gid() for p in fig.axes[0].patches if p.get_gid()]
        loads = sorted((int(g.split()[-1]), g.split()[0]) for g in gids if " loads " in g)
        assert loads == [(3, "frag1"), (4, "frag0"), (5, "frag1")]
        assert {g.split()[-1] for g in gids if " group " in g} >= {"2", "3", "4", "5"}
        assert {g.split()[1] for g in gids if g.startswith("stage")} == {str(k) for k in range(stages)}
        plt.close(fig)
    with pytest.raises(ValueError, match="at least 3"):
        diagrams.wgmma_steps(2, range(2))


def test_the_scoreboard_lists_kernels_in_the_order_the_chapters_are_read(replay):
    """Chapter 8c's kernel comes after 8a's and 8b's, as in _toc.yml, though the catalog lists it before them."""
    import gemm_lab as gl

    kernels = (*plan.HEADLINE, *plan.TENSOR_CORES, *plan.EMULATION)
    board = gl.bench_all([(k, None, plan.SIZES[-1]) for k in reversed(kernels)], progress=False)
    fig = plots.scoreboard(board)
    shown = [t.get_text().split(" ", 1)[1] for t in fig.axes[0].get_yticklabels()]
    toc = (catalog.ROOT / "_toc.yml").read_text()
    places = [toc.index(catalog.get(k).chapter) for k in shown]
    assert len(shown) == len(kernels) and places == sorted(places), shown
    plt.close(fig)


@pytest.mark.parametrize("step, latency, fill", [(571.0, 140.0, 883.0), (300.0, 500.0, 400.0), (1000.0, 200.0, 300.0)])
def test_ring_flight_counts_little_s_law_at_its_marked_moment(step, latency, fill):
    """The copies drawn across the dashed line are the ring's in_flight (ceil(W / pace)), each W long, one pace
    apart (the slower of a step and a fill), so no two fills overlap; the consumers' math is a step long."""
    ring = model.Ring(step, latency, fill)
    fig = diagrams.ring_flight(ring, ring.stages)
    ax = fig.axes[0]
    now = next(line.get_xdata()[0] for line in ax.get_lines())
    fills = {p.get_gid(): p for p in ax.patches if (p.get_gid() or "").endswith(" fill")}
    crossing = [g for g, p in fills.items() if p.get_x() - latency <= now < p.get_x() + p.get_width()]
    assert len(crossing) == ring.in_flight == math.ceil((latency + fill) / max(step, fill))
    starts = sorted(p.get_x() for p in fills.values())
    assert np.allclose(np.diff(starts), max(step, fill)) and all(p.get_width() == pytest.approx(fill)
                                                                 for p in fills.values())
    assert all(b - a >= fill - 1e-9 for a, b in zip(starts, starts[1:]))  # one SM's share fills one stage at a time
    assert all(p.get_width() == pytest.approx(step) for p in ax.patches if (p.get_gid() or "").startswith("math"))
    title = ax.get_title(loc="left").replace("\n", " ")
    assert f"{ring.in_flight + ring.held} of the ring's {ring.stages} stages" in title
    plt.close(fig)
