"""The pictures of chapters 3 and 4, drawn from the kernels' own parameters: a thread's outer product, the transposed A
tile and the float4 lane map. Each redraws for another instance, agrees with the index arithmetic of the kernel (and
with the bank model's addresses), and reads at 800 px."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gemm_lab import catalog
from gemm_lab.models import banks
from gemm_lab.pages import diagrams, style  # noqa: E402

TILE_2D = [catalog.get("thread_tile_2d").full_params(), {"BM": 64, "BN": 128, "BK": 16, "TM": 4, "TN": 8}]
VECTORIZED = [catalog.get("vectorized").full_params(), {"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 4},
              {"BM": 128, "BN": 64, "BK": 16, "TM": 8, "TN": 4}]


def _gids(fig) -> list[str]:
    return [p.get_gid() for ax in fig.axes for p in ax.patches if p.get_gid()]


def _ids(params: dict[str, int]) -> str:
    return "-".join(f"{k}{v}" for k, v in params.items())


@pytest.mark.parametrize("params", TILE_2D, ids=_ids)
def test_outer_product_draws_tm_plus_tn_loads_and_tm_times_tn_accumulators(params):
    fig = diagrams.outer_product(params)
    try:
        gids = _gids(fig)
        assert sum(g.startswith("a ") for g in gids) == params["TM"]
        assert sum(g.startswith("b ") for g in gids) == params["TN"]
        assert sum(g.startswith("acc ") for g in gids) == params["TM"] * params["TN"]
        assert str(params["TM"] * params["TN"]) in fig._suptitle.get_text()
        assert not style.fits(fig)
    finally:
        plt.close(fig)


def test_outer_product_refuses_a_thread_outside_the_block():
    p = TILE_2D[0]
    with pytest.raises(ValueError, match="threads"):
        diagrams.outer_product(p, thread=(p["BM"] // p["TM"]) * (p["BN"] // p["TN"]))


@pytest.mark.parametrize("params", VECTORIZED, ids=_ids)
def test_transposed_a_marks_the_threads_float4s_and_one_copied_float4(params):
    fig = diagrams.transposed_a(params)
    try:
        gids = _gids(fig)
        assert sum(g.startswith("read A ") for g in gids) == sum(g.startswith("read As ") for g in gids) == \
            params["TM"] // 4
        assert gids.count("copy A") == gids.count("copy As") == 1
        assert not style.fits(fig)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("params", VECTORIZED, ids=_ids)
def test_float4_lane_map_agrees_with_the_bank_model(params):
    """Each lane's first float4 is the address `banks.sites` models for the fragment loads; a quarter-warp's first
    loads of Bs are eight neighbouring float4s, and every lane reads TN/4 of Bs and TM/4 of As."""
    fig = diagrams.float4_lanes(params)
    try:
        read: dict[str, dict[int, list[int]]] = {"A": {}, "B": {}}
        for gid in _gids(fig):
            name, lane, float4 = gid.split()
            read[name].setdefault(int(lane), []).append(int(float4))
        sites = {s.name: s for s in banks.sites("vectorized", params)}
        for name, site in (("A", sites["load As[kk][tr+i] (float4)"]), ("B", sites["load Bs[kk][tc+j] (float4)"])):
            assert [read[name][lane][0] for lane in range(32)] == [a // 16 for a in site.addresses]
        assert all(len(read["B"][lane]) == params["TN"] // 4 and len(read["A"][lane]) == params["TM"] // 4
                   for lane in range(32))
        if params["BN"] // params["TN"] >= 8:  # at least a quarter-warp's worth of threads along a row of C
            for q in range(4):
                firsts = sorted(read["B"][lane][0] for lane in range(8 * q, 8 * q + 8))
                assert firsts == list(range(firsts[0], firsts[0] + 8))
        assert not style.fits(fig)
    finally:
        plt.close(fig)


def _page_rule(float4s: list[int]) -> int:
    """Chapter 2's three-part rule for a warp's 128-bit load, as the page states it: each quarter-warp takes a pass;
    distinct float4s of one quarter-warp on the same banks (a multiple of 128 bytes apart) take a pass each; the two
    quarter-warps of a half-warp share a pass when each reads at most two distinct float4s."""
    def on_same_banks(reads: set[int]) -> int:  # passes: the most distinct float4s that are 128 bytes apart
        return max(sum(g % 8 == f % 8 for g in reads) for f in reads)

    passes = 0
    for h in (0, 16):
        a, b = set(float4s[h:h + 8]), set(float4s[h + 8:h + 16])
        passes += on_same_banks(a | b) if max(len(a), len(b)) <= 2 else on_same_banks(a) + on_same_banks(b)
    return passes


def test_lds128_passes_draws_the_bank_models_passes_which_are_chapter_2s_rule():
    cases = diagrams.lds128_cases()
    assert [banks.lds128_wavefronts(list(f)) for f in cases.values()] == [2, 4, 8]
    fig = diagrams.lds128_passes()
    try:
        drawn: dict[str, dict[int, list[tuple[int, list[int]]]]] = {}
        for gid in _gids(fig):
            name, pass_, float4, lanes = gid.split(" | ")
            drawn.setdefault(name, {}).setdefault(int(pass_.split()[1]), []).append(
                (int(float4.split()[1]), [int(x) for x in lanes.split()[1].split(",")]))
        assert list(drawn) == list(cases)
        for name, float4s in cases.items():
            passes = drawn[name]
            assert sorted(passes) == list(range(1, len(passes) + 1))
            assert len(passes) == banks.lds128_wavefronts(list(float4s)) == _page_rule(list(float4s))
            served = sorted(lane for boxes in passes.values() for _, lanes in boxes for lane in lanes)
            assert served == list(range(32))  # every lane once, with the float4 it reads
            assert all(float4s[lane] == f for boxes in passes.values() for f, lanes in boxes for lane in lanes)
            for boxes in passes.values():  # a pass reads one word per bank: its float4s on distinct banks
                assert len({f % 8 for f, _ in boxes}) == len(boxes)
                assert len({lane // 16 for _, lanes in boxes for lane in lanes}) == 1  # one half-warp a pass
            assert f"{len(passes)} passes" in " ".join(ax.get_title("left") for ax in fig.axes)
        assert not style.fits(fig)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("float4s", [[0] * 32, [i % 8 for i in range(32)],
                                     [i % 4 + 8 * (i // 4 % 2) for i in range(32)], [i // 8 * 8 for i in range(32)],
                                     [i % 2 * 8 for i in range(32)], [i % 3 for i in range(32)],
                                     [i * 5 % 17 for i in range(32)]])
def test_bank_models_lds128_count_is_chapter_2s_three_part_rule(float4s):
    assert banks.lds128_wavefronts(float4s) == _page_rule(float4s)
