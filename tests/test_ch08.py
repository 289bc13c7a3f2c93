"""Chapter 8's pictures, on the CPU: the mma.sync fragment layout and the TMA box with its swizzle, each checked
against the kernels' own code and redrawn for another instance."""
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gemm_lab import catalog, diagrams, style  # noqa: E402

KERNELS = catalog.ROOT / "kernels"


def _gids(fig, prefix: str) -> list[str]:
    return [p.get_gid() for ax in fig.axes for p in ax.patches if (p.get_gid() or "").startswith(prefix)]


@pytest.mark.parametrize("k", [4, 8])
def test_every_element_of_an_mma_has_one_lane_and_every_lane_its_registers(k):
    layout = diagrams.mma_fragments(k)
    for name, (rows, cols) in {"A": (16, k), "B": (k, 8), "C": (16, 8)}.items():
        assert sorted(layout[name]) == [(r, c) for r in range(rows) for c in range(cols)], name
        per_lane = rows * cols // 32  # registers each lane holds of this operand
        held = sorted(layout[name].values())
        assert held == [(lane, i) for lane in range(32) for i in range(per_lane)], name


def test_the_m16n8k8_layout_is_the_one_kernel_11_states():
    """11_tf32_mma.cu's header names lane 4g + t's elements; its epilogue stores C by the same rule."""
    header = (KERNELS / "11_tf32_mma.cu").read_text()
    assert "A[g][t], A[g + 8][t], A[g][t + 4], A[g + 8][t + 4], B[t][g], B[t + 4][g]" in header
    assert "C[g][2t], C[g][2t + 1],\n// C[g + 8][2t], C[g + 8][2t + 1]" in header
    layout = diagrams.mma_fragments(8)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        assert [layout["A"][e] for e in ((g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4))] == [(lane, i) for i in range(4)]
        assert [layout["B"][e] for e in ((t, g), (t + 4, g))] == [(lane, 0), (lane, 1)]
        assert [layout["C"][e] for e in ((g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1))] == \
            [(lane, i) for i in range(4)]


@pytest.mark.parametrize("k, lane", [(8, 5), (4, 0)])
def test_the_fragment_picture_redraws_for_another_instruction_and_lane(k, lane):
    fig = diagrams.mma_fragment(k, lane)
    try:
        for name, elements in (("A", 16 * k), ("B", 8 * k), ("C", 128)):
            assert len(_gids(fig, f"{name} lane")) == elements
            assert _gids(fig, f"{name} lane").count(f"{name} lane {lane}") == elements // 32
        outlined = [p for ax in fig.axes for p in ax.patches if p.get_linewidth() > 2]
        assert len(outlined) == (16 * k + 8 * k + 128) // 32 and not style.fits(fig)
        assert f"m16n8k{k}" in fig._suptitle.get_text()
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="m16n8k4 or m16n8k8"):
        diagrams.mma_fragments(16)
    with pytest.raises(ValueError, match="lanes 0 to 31"):
        diagrams.mma_fragment(8, 32)


def test_the_swizzle_is_the_kernels_own():
    """The picture's rule is wgmma.cuh's `swizzled(r, k)` (evaluated from the file) and kernel 13's `b_at`."""
    source = (KERNELS / "wgmma.cuh").read_text()
    body = re.search(r"unsigned swizzled\(int r, int k\) \{\s*return (.*?);", source, re.S)[1]
    for r in range(64):
        for k in range(32):
            assert diagrams.swizzle_offset(r * 128 + 4 * k) == eval(body, {"r": r, "k": k})
    assert "row * 128 + (chunk ^ row) * 16" in (KERNELS / "13_tf32_mma_tma.cu").read_text()
    assert all(diagrams.swizzle_offset(row * 128 + chunk * 16) == row * 128 + ((chunk ^ row) % 8) * 16
               for row in range(8) for chunk in range(8))
    assert diagrams.swizzle_offset(300, 0) == 300
    with pytest.raises(ValueError, match="32, 64 or 128"):
        diagrams.swizzle_offset(0, 256)


@pytest.mark.parametrize("rows, cols, span", [(32, 32, 128), (16, 16, 64)])
def test_the_swizzle_picture_redraws_for_another_box(rows, cols, span):
    fig = diagrams.tma_swizzle(rows, cols, span)
    try:
        shown = min(rows * cols * 4 // 128, 16)  # lines drawn
        chunks = cols * 4 // 16
        for kind in ("plain", "swizzled"):
            assert len(_gids(fig, kind)) == shown * 8 == min(rows * chunks, 16 * 8)
        # chunk 0 of the rows shown: one column of banks without the swizzle, every column with it
        plain = {int(p.get_x()) for p in fig.axes[0].patches if p.get_gid().endswith(" 0")}
        swizzled = {int(p.get_x()) for p in fig.axes[1].patches if p.get_gid().endswith(" 0")}
        assert len(swizzled) == 8 and len(plain) == 128 // (cols * 4)
        assert f"{rows} x {cols} box" in fig._suptitle.get_text() and not style.fits(fig)
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="wider than the 64-byte swizzle"):
        diagrams.tma_swizzle(32, 32, 64)


def test_the_fragment_loads_are_free_of_bank_conflicts_and_the_padding_is_why():
    from gemm_lab import banks

    unpadded, padded, ldmatrix = banks.fragment_sites("mma_tf32")
    assert unpadded.conflicts == 3 and padded.conflicts == ldmatrix.conflicts == 0
    # the same loads from another tile: BN a multiple of 32 keeps the four rows t on the same banks
    assert banks.fragment_sites("mma_tf32", {"BN": 128, "WN": 32})[0].conflicts == 3
    (swizzled,) = banks.fragment_sites("mma_tf32_tma")
    assert swizzled.width == 8 and swizzled.conflicts == 0
    with pytest.raises(ValueError, match="no fragment model"):
        banks.fragment_sites("wgmma_tf32")
