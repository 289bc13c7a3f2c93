"""Chapters 7 and 7b's helpers, on the CPU: their pictures (warp tiles, loop nest, quarter-warps, stream-K), the
schedules they draw, the instruction mix of the main loop and the issue-rate table."""
import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gemm_lab import catalog
from gemm_lab.models import banks, issue_rate, sass, schedule
from gemm_lab.pages import diagrams, hardware_tables, style  # noqa: E402

SPEC = catalog.get("warp_tiling")
SHAPES = [SPEC.full_params(), *(p for p in catalog.legal_grid(SPEC) if p["BK"] == 8 and p["BM"] == 256)]


def _gids(fig, prefix: str) -> list[str]:
    return [p.get_gid() for ax in fig.axes for p in ax.patches if (p.get_gid() or "").startswith(prefix)]


@pytest.mark.parametrize("params", SHAPES, ids=lambda p: "-".join(map(str, p.values())))
def test_warp_tiles_draws_every_warp_and_the_outputs_of_lanes_0_and_1(params):
    fig = diagrams.warp_tiles(params)
    try:
        warps = SPEC.threads(params) // 32
        assert sorted(_gids(fig, "warp")) == sorted(f"warp {w}" for w in range(warps))
        squares = params["TM"] // 4 * (params["TN"] // 4)  # a lane's outputs: 4 x 4 squares
        assert _gids(fig, "lane").count("lane 0") == _gids(fig, "lane").count("lane 1") == squares
    finally:
        plt.close(fig)


def test_every_output_of_a_warp_tile_has_exactly_one_lane():
    """The diagonal numbering is a bijection: the 32 lanes' squares tile the warp tile without overlap."""
    for params in SHAPES:
        owned = [diagrams.lane_position(lane, params) for lane in range(32)]
        lanes_m, lanes_n = params["WM"] // params["TM"], params["WN"] // params["TN"]
        assert sorted(owned) == [(m, n) for m in range(lanes_m) for n in range(lanes_n)]


def test_each_quarter_warp_reads_every_fragment_float4():
    """What the numbering is for: lanes 8q..8q+7 ask for all 8 float4s along one side and all 4 along the other."""
    params = SPEC.full_params()
    for q in range(4):
        positions = [diagrams.lane_position(lane, params) for lane in range(8 * q, 8 * q + 8)]
        assert {m for m, _ in positions} == set(range(8)) and {n for _, n in positions} == set(range(4))


def test_main_loop_mix_of_the_default_is_ffma_bound():
    mix = sass.main_loop_mix("warp_tiling")
    p = SPEC.full_params()
    assert mix["FFMA"] >= 1024 and mix["FFMA"] % (p["TM"] * p["TN"] * p["BK"]) == 0  # whole steps
    assert mix["FFMA"] / sum(mix.values()) > 0.85
    assert mix["LDS"] * 4 * p["TM"] * p["TN"] == mix["FFMA"] * (p["TM"] + p["TN"])  # float4 fragments per FFMA
    assert list(mix)[0] == "FFMA"  # most frequent first


def test_main_loop_mix_picks_the_unchecked_copy():
    """Both copies of the main loop hold the same FFMAs; the one without bounds checks has fewer other instructions."""
    text = sass.disassemble("warp_tiling")
    mix = sass.main_loop_mix("warp_tiling")
    assert text.count("FFMA ") > mix["FFMA"]  # more FFMAs exist outside the chosen loop (the checked copy)
    assert "BSSY" not in mix  # no divergent guards in the unchecked loop


def test_global_load_lead_counts_instructions_from_a_load_to_its_store():
    lead = sass.global_load_lead("warp_tiling")
    assert 0 < lead < len(sass.main_loop("warp_tiling"))
    # chapter 6's kernel issues its loads most of a loop ahead of the stores
    assert sass.global_load_lead("prefetch") > len(sass.main_loop("prefetch")) // 2


def _texts(fig) -> str:
    return " ".join(t.get_text() for t in fig.findobj(matplotlib.text.Text))


@pytest.mark.parametrize("params,size", [(None, 4096), ({"BM": 64, "BN": 128, "BK": 16, "WM": 32, "WN": 32, "TM": 4,
                                                          "TN": 8}, 1024)])
def test_loop_nest_is_drawn_from_the_instance_and_reads_at_800_px(params, size):
    p = SPEC.full_params(params)
    fig = diagrams.loop_nest(params, size)
    try:
        text = _texts(fig)
        blocks = (size // p["BM"]) * (size // p["BN"])
        assert f"{blocks:,} blocks of {p['BM']} x {p['BN']}" in text
        assert f"{SPEC.threads(p) // 32} warps of {p['WM']} x {p['WN']}" in text
        assert f"32 lanes of {p['TM']} x {p['TN']}" in text and f"{p['TM'] * p['TN']} FFMAs" in text
        assert len(_gids(fig, "level")) == 6 and not style.fits(fig)
    finally:
        plt.close(fig)


def test_kernel_10b_numbers_its_lanes_in_quarter_warps_of_4_x_2():
    """Kernel 10b's lane code (mirrored by lane_position): a bijection onto the lane grid, and each quarter-warp
    4 lanes along the wide side by 2 along the narrow one."""
    source = catalog.get("pipelined_warp_tiling").path.read_text()
    assert "wide = LANES ? lane / 8 % 2 * 4 + lane % 4 : lane % 8;" in source  # LANES false: kernel 10's lanes
    assert "narrow = LANES ? lane / 16 * 2 + lane / 4 % 2 : (lane / 8 + lane % 8) % 4;" in source
    for params in SHAPES:
        owned = [diagrams.lane_position(lane, params, "pipelined_warp_tiling") for lane in range(32)]
        lanes_m, lanes_n = params["WM"] // params["TM"], params["WN"] // params["TN"]
        assert sorted(owned) == [(m, n) for m in range(lanes_m) for n in range(lanes_n)]
        for q in range(4):
            quarter = owned[8 * q:8 * q + 8]
            rows, cols = len({m for m, _ in quarter}), len({n for _, n in quarter})
            assert (rows, cols) == ((4, 2) if lanes_m == 8 else (2, 4))
    with pytest.raises(ValueError, match="no lane grid"):
        diagrams.lane_position(0, SPEC.full_params(), "prefetch")


def test_wavefront_models_count_what_the_kernel_headers_state():
    """24 wavefronts per k for kernel 10's 8 x 16 thread tiles, 16 for 10b's (both headers say so), by the H100's
    rule; the two simpler models of chapter 7b give other counts, each contradicted by one of the recorded kernels."""
    assert banks.float4_passes([0, 1, 2, 3, 4, 5, 6, 7]) == 1 and banks.float4_passes([0, 8]) == 2
    assert banks.lds128_wavefronts(list(range(32)), "quarter") == 4 == banks.lds128_wavefronts(list(range(32)))
    assert banks.lds128_wavefronts([0] * 16 + [1] * 16) == 2 == banks.lds128_wavefronts([0] * 16 + [1] * 16, "bytes")
    assert banks.lds128_wavefronts([0] * 32, "quarter") == 4
    four = [0, 1, 2, 3] * 8  # every quarter-warp the same four float4s: not shared on the H100, packed by bytes
    assert (banks.lds128_wavefronts(four), banks.lds128_wavefronts(four, "bytes")) == (4, 2)
    with pytest.raises(ValueError, match="no model"):
        banks.lds128_wavefronts(four, "guess")
    for params, (ten, ten_b) in ((None, (24, 16)), ({"BM": 128, "BN": 128, "WM": 32, "WN": 64, "TM": 8, "TN": 8},
                                                    (16, 12))):
        per_k = {k: sum(banks.lds128_wavefronts(f) * n for _, f, n in banks.fragment_loads(k, params))
                 for k in ("warp_tiling", "pipelined_warp_tiling")}
        assert per_k == {"warp_tiling": ten, "pipelined_warp_tiling": ten_b}
    assert banks.lds128_per_load("vectorized") == 3 and banks.lds128_per_load("vectorized", rule="quarter") == 4
    assert banks.lds128_per_load("warp_tiling", rule="bytes") == 2


@pytest.mark.parametrize("params", [None, {"BM": 128, "BN": 128, "WM": 32, "WN": 64, "TM": 8, "TN": 8}])
def test_quarter_warps_draws_each_lane_and_the_float4s_each_quarter_reads(params):
    fig = diagrams.quarter_warps(params)
    try:
        for kernel in ("warp_tiling", "pipelined_warp_tiling"):
            assert len(_gids(fig, f"{kernel} lane")) == 32
            for operand, float4s, _ in banks.fragment_loads(kernel, params):
                drawn = _gids(fig, f"{kernel} {operand} q")
                assert len(drawn) == sum(len(set(float4s[i:i + 8])) for i in range(0, 32, 8))
        assert "wavefront" not in _texts(fig)  # the page derives the wavefronts from this picture
        assert not style.fits(fig)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("tiles,steps,blocks", [(512, 64, 132), (32, 128, 132), (2048, 16, 132), (7, 3, 4),
                                                (5, 0, 3), (132, 64, 132)])
def test_stream_k_runs_every_k_step_of_every_tile_once(tiles, steps, blocks):
    done = {}
    pieces = schedule.stream_k(tiles, steps, blocks)
    assert len(pieces) == blocks
    for block in pieces:
        for x in block:
            assert x.steps > 0 or steps == 0
            for s in range(x.first, x.first + x.steps):
                done[(x.tile, s)] = done.get((x.tile, s), 0) + 1
    assert done == {(t, s): 1 for t in range(tiles) for s in range(steps)}
    work = [sum(x.steps for x in block) for block in pieces]
    assert max(work) - min(work) <= steps  # a block has at most one tile more (and one k-step) than another


def test_stream_k_rejects_impossible_launches():
    with pytest.raises(ValueError, match="blocks >= 1"):
        schedule.stream_k(10, 8, 0)


def test_tile_order_is_the_kernels_grouped_order():
    source = catalog.get("pipelined_warp_tiling").path.read_text()
    assert re.search(rf"constexpr int GROUP = {schedule.GROUP};", source)
    for tiles_m, tiles_n in ((32, 16), (8, 4), (13, 5)):
        seen = [schedule.tile_position(t, tiles_m, tiles_n) for t in range(tiles_m * tiles_n)]
        assert sorted(seen) == [(r, c) for r in range(tiles_m) for c in range(tiles_n)]
    assert [schedule.tile_position(t, 32, 16) for t in (0, 1, 8)] == [(0, 0), (1, 0), (0, 1)]


@pytest.mark.parametrize("size", [4096, 1024])
def test_stream_k_picture_draws_every_tile_and_reads_at_800_px(size):
    p = catalog.get("pipelined_warp_tiling").full_params()
    fig = diagrams.stream_k(p, size, slots=132)
    try:
        tiles = (size // p["BM"]) * (size // p["BN"])
        assert len(_gids(fig, "tile")) == tiles
        assert f"orange: {tiles % 132} tiles left over" in _texts(fig)
        assert not style.fits(fig)
    finally:
        plt.close(fig)


def test_waves_and_their_idle_tail():
    assert schedule.waves(512, 132) == pytest.approx(3.879, abs=1e-3)
    assert schedule.idle_share(512, 132) == pytest.approx(16 / 528)
    assert schedule.idle_share(264, 132) == 0


def test_issue_rate_rows_account_for_the_measured_speed(replay):
    (row,) = issue_rate.rows([("default", "warp_tiling", None)])
    assert row.sass_share == pytest.approx(sass.main_loop_mix("warp_tiling")["FFMA"] /
                                           sum(sass.main_loop_mix("warp_tiling").values()))
    assert row.ceiling_tflops > row.from_counters_tflops
    assert row.from_counters_tflops == pytest.approx(row.measured.gflops / 1e3, rel=0.06)
    assert issue_rate.missing([row]) == []


def test_issue_rate_table_says_what_is_not_recorded(replay):
    (row,) = issue_rate.rows([("default", "warp_tiling", None)])
    bare = issue_rate.Row("bare", row.kernel, row.params, row.sass_share, row.peak_tflops, None, None)
    first, second = hardware_tables.issue_rate_table([row, bare]).parts
    assert first.rows[1][1:3] == first.rows[0][1:3] and set(first.rows[1][3:]) == {"not recorded"}
    assert set(second.rows[1][1:]) == {"not recorded"} and second.rows[1][0] == "bare"
    assert issue_rate.missing([row, bare]) == ["gemm-lab record --only headline", "gemm-lab record --only counters"]
