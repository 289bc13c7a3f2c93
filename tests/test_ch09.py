"""Chapter 9's helpers, on the CPU: the mbarrier ring and the cluster-reads pictures (each redrawn by another
instance, text readable at 800 px), the multicast in the traffic model, the headline share with its range, the
ladder chart and Little's law for the ring's stages."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gemm_lab import catalog
from gemm_lab.lab import plan  # noqa: E402
from gemm_lab.models import model
from gemm_lab.pages import diagrams, plots, style
from gemm_lab.pages.prose import fold, share  # noqa: E402
from gemm_lab.spec import ceil_div

SPEC = catalog.get("wgmma_ws_tf32")
RINGS = [SPEC.full_params(), SPEC.full_params({"STAGES": 3, "CONSUMERS": 1, "CLUSTER": 1}),
         SPEC.full_params({"STAGES": 6, "BM": 64, "CONSUMERS": 2})]


def _texts(fig) -> str:
    """Every text of the figure, wrapped lines joined."""
    return " ".join(" ".join(t for ax in fig.axes for t in (*(x.get_text() for x in ax.texts), ax.get_title())).split())


@pytest.mark.parametrize("params", RINGS, ids=lambda p: f"S{p['STAGES']}-C{p['CONSUMERS']}-K{p['CLUSTER']}")
def test_the_ring_has_a_stage_per_stage_and_the_kernels_barrier_counts(params):
    fig = diagrams.mbarrier_ring(params)
    try:
        stages = sorted(p.get_gid() for ax in fig.axes for p in ax.patches if (p.get_gid() or "").startswith("stage"))
        assert stages == sorted(f"stage {s}" for s in range(params["STAGES"]))
        text = _texts(fig)
        arrivals = params["CONSUMERS"] * 4 * params["CLUSTER"]  # mbar_init(empty, CONSUMERS * 4 * CLUSTER)
        assert f"{arrivals} arrivals" not in text  # Exercise 4 asks for it
        assert "empty: an arrival from each consumer warp" in text
        assert f"{(params['BM'] + 64 * params['CONSUMERS']) * 128 // 1024} KiB" in text  # TX_BYTES of a stage
        assert not style.fits(fig)
    finally:
        plt.close(fig)


def test_ring_moment_holds_every_stage_once_in_the_kernels_order():
    for stages in (3, 4, 6):
        step = 2 * stages + 1
        held = diagrams.ring_moment(stages, step)
        assert sorted(held) == list(range(stages))
        assert all(i % stages == s for s, (i, _) in held.items())
        states = {state: i for i, state in held.values()}
        assert states["read by the wgmmas"] == step and states["wgmmas finishing: released next"] == step - 1
        assert states["copy in flight (TMA)"] == step + stages - 2  # the producer waits to load step + stages - 1
    with pytest.raises(ValueError, match="STAGES >= 3"):
        diagrams.ring_moment(2, 5)


def test_cluster_reads_draws_each_block_and_the_bytes_per_k():
    tiles = {"kernel 14": (256, 128, 2), "cuBLAS TF32": (256, 128, -2)}  # stacked along M; side by side along N
    for drawn in (tiles, {"one block": (128, 192, 1)}):
        fig = diagrams.cluster_reads(drawn)
        try:
            blocks = [p for ax in fig.axes for p in ax.patches if (p.get_gid() or "").startswith("block")]
            assert len(blocks) == sum(abs(c) for _, _, c in drawn.values())
            if drawn is tiles:  # the pair along N: two blocks at the same rows, one block's width apart
                pair = blocks[2:]
                assert pair[0].get_y() == pair[1].get_y() and pair[1].get_x() - pair[0].get_x() == 128
                assert "A: 256 rows" in _texts(fig) and "B: 256 columns" in _texts(fig)
            assert not style.fits(fig)
            if drawn is tiles:
                assert "2.5 KiB per 65,536" in _texts(fig) and "2.0 KiB per 65,536" in _texts(fig)
        finally:
            plt.close(fig)


def test_multicast_clusters_read_b_once_per_cluster():
    n = 8192
    assert model.reuse("wgmma_ws_tf32") == (128, 512)  # BN; BM x CLUSTER
    assert model.reuse("wgmma_ws_tf32", {"CLUSTER": 1}) == (128, 256)
    assert model.global_load_bytes("wgmma_ws_tf32", n, n, n) == model.tile_read_bytes(n, n, n, 512, 128)
    assert model.tile_read_bytes(n, n, n, 512, 128) / model.tile_read_bytes(n, n, n, 256, 256) == 1.25


def test_a_pair_along_n_shares_a_and_each_block_maps_half_its_rows(monkeypatch):
    from gemm_lab import tma

    pair = plan.PAIR_ALONG_N
    assert model.reuse("wgmma_ws_tf32", pair) == (256, 256)  # A serves both blocks' columns; B one block's rows
    assert SPEC.grid(pair, 8192, 8192) == SPEC.grid({"CLUSTER": 2}, 8192, 8192)  # the same clusters, turned
    boxes = []
    monkeypatch.setattr(tma, "tensor_map", lambda x, rows, tf32=False: boxes.append((x, rows)))
    tma.kernel_maps(SPEC, SPEC.full_params(pair), "A", "B", "C")
    tma.kernel_maps(SPEC, SPEC.full_params(), "A", "B", "C")
    assert boxes == [("A", 128), ("B", 32), ("C", 32), ("A", 256), ("B", 32), ("C", 32)]


def test_share_shows_the_rounds_range_of_tensor_core_headlines(replay):
    import gemm_lab as gl

    x = gl.bench("wgmma_ws_tf32", 4096)
    low, high = x.pct_range
    assert low <= x.pct_cublas <= high
    assert share(x) == f"{x.pct_cublas:.1f} % (rounds {low:.1f}–{high:.1f} %)"
    assert share(gl.bench("warp_tiling", 4096)).endswith("%") and "rounds" not in share(gl.bench("warp_tiling", 4096))


def test_fold_glues_without_showing_and_closes_figures(monkeypatch):
    import myst_nb

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: glued.setdefault(name, display))
    fig = plt.figure()
    assert fold(table="a table", figure=fig) is None  # as a cell's last line it shows nothing
    assert glued == {"table": False, "figure": False} and not plt.fignum_exists(fig.number)
    with pytest.raises(ValueError, match="letters, digits"):
        fold(**{"bad-name": 1})


def test_ladder_draws_each_rungs_rounds_as_an_interval_at_each_size(replay):
    import gemm_lab as gl

    cases = [("wgmma_tf32", None), *(("wgmma_ws_tf32", rung) for rung in plan.HOPPER_LADDER), ("wgmma_ws_tf32", None)]
    ladder = {s: gl.bench_all([(k, q, s) for k, q in cases], progress=False) for s in plan.LADDER_SIZES}
    labels = [f"rung {i}" for i in range(len(cases))]
    fig = plots.ladder(ladder, labels, "a ladder")
    try:
        (ax,) = fig.axes
        spans = sorted(tuple(line.get_xdata()) for line in ax.lines if len(line.get_xdata()) == 2
                       and line.get_linestyle() == "-")
        assert spans == sorted(tuple(x.pct_range) for xs in ladder.values() for x in xs)  # one bar per rung and size
        medians = [line for line in ax.lines if line.get_marker() in ("o", "s")]
        assert [list(line.get_xdata()) for line in medians] == [[x.pct_cublas for x in xs] for xs in ladder.values()]
        assert [t.get_text() for t in ax.get_yticklabels()] == labels and not style.fits(fig)
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="one measurement per label"):
        plots.ladder(ladder, labels[:-1])


def test_littles_law_for_the_ring():
    ceilings = {"wgmma_tf32_gflops": 132 * 2048 * 1.8, "sms": 132}  # 1,024 MACs (2,048 FLOP) per clock at 1.8 GHz
    ring = model.ring("wgmma_ws_tf32", None, ceilings, latency_ns=140, bandwidth_gbs=132 * 40.96)
    p = SPEC.full_params()
    assert ring.step_ns == pytest.approx(p["BM"] * 128 * 32 / 1024 / 1.8)  # a stage's MACs at 1,024 per clock
    assert ring.fill_ns == pytest.approx((p["BM"] + 128 / p["CLUSTER"]) * 32 * 4 / 40.96)  # bytes at 40.96 GB/s
    pace = max(ring.step_ns, ring.fill_ns)  # one SM's share fills one stage at a time
    assert ring.in_flight == ceil_div(140 + ring.fill_ns, pace) and ring.stages == max(ring.in_flight, ring.at_peak) + 2
    assert model.Ring(500, 100, 0).stages == 3 and model.Ring(500, 100, 400).stages == 3  # W <= T: one in flight
    assert model.Ring(500, 100, 401).stages == 4
    # a fill longer than a step sets the pace (one stage per fill); at the peak's pace W is at most latency + T
    slow = model.Ring(500, 100, 900)
    assert (slow.pace_ns, slow.in_flight, slow.at_peak, slow.stages) == (900, 2, 2, 4)
    assert model.Ring(500, 600, 900).in_flight == 2 and model.Ring(500, 600, 900).at_peak == 3
    lone = model.ring("wgmma_ws_tf32", {"CLUSTER": 1}, ceilings, 140, 132 * 40.96)
    assert lone.fill_ns > ring.fill_ns  # without multicast a block requests all of B's boxes
