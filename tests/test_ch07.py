"""Chapter 7's two helpers, on the CPU: the warp-tile diagram and the instruction mix of the main loop."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gemm_lab import catalog, diagrams, sass  # noqa: E402

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
