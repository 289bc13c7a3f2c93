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
