"""Chapter 8's pictures (pages 8, 8a and 8c), on the CPU: the mma.sync fragment layout and ldmatrix, the warpgroup
and its descriptor, the TMA boxes with their swizzle and the mbarrier handoff, each checked against the kernels' own
code and redrawn for another instance."""
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gemm_lab import catalog
from gemm_lab.pages import diagrams, style  # noqa: E402

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
        assert [layout["A"][e] for e in ((g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4))] == \
            [(lane, i) for i in range(4)]
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
    from gemm_lab.models import banks

    unpadded, padded, ldmatrix = banks.fragment_sites("mma_tf32")
    assert unpadded.conflicts == 3 and padded.conflicts == ldmatrix.conflicts == 0
    # the same loads from another tile: BN a multiple of 32 keeps the four rows t on the same banks
    assert banks.fragment_sites("mma_tf32", {"BN": 128, "WN": 32})[0].conflicts == 3
    (swizzled,) = banks.fragment_sites("mma_tf32_tma")
    assert swizzled.width == 8 and swizzled.conflicts == 0
    with pytest.raises(ValueError, match="no fragment model"):
        banks.fragment_sites("wgmma_tf32")


def _c_expr(text: str) -> str:
    """A C integer expression of non-negative ints as Python: / is floor division, no casts or suffixes."""
    return " ".join(re.sub(r"(\d)ull", r"\1", text.replace("(unsigned long long)", "")).replace("/", "//").split())


def test_ldmatrix_rows_are_kernel_11s_and_each_value_reaches_its_fragment_lane():
    source = (KERNELS / "11_tf32_mma.cu").read_text()
    row, col = re.search(r"const int lm_row = (.*?), lm_col = (.*?);", source).groups()
    for lane in range(32):
        assert diagrams.ldmatrix_rows(lane) == (eval(_c_expr(row), {"lane": lane}), eval(_c_expr(col), {"lane": lane}))
    # the 32 row addresses cover the 16 x 8 tile once, in 16-byte rows
    assert sorted((r, c + i) for r, c in map(diagrams.ldmatrix_rows, range(32)) for i in range(4)) == \
        [(r, c) for r in range(16) for c in range(8)]
    fig = diagrams.ldmatrix_x4()
    try:
        cells = _gids(fig, "row ")
        assert len(cells) == 128 and not style.fits(fig)
        layout = diagrams.mma_fragments(8)["A"]
        texts = {(round(t.get_position()[1] - 0.55), round(t.get_position()[0] - 0.5)): t.get_text()
                 for t in fig.axes[0].texts if t.get_text().isdigit()}
        assert all(texts[r, c] == str(layout[r, c][0]) for r in range(16) for c in range(8))
    finally:
        plt.close(fig)


@pytest.mark.parametrize("params", [None, {"BM": 64, "BN": 128}])
def test_the_warpgroup_picture_redraws_from_kernel_12s_tiles(params):
    p = catalog.get("wgmma_tf32").full_params(params)
    fig = diagrams.warpgroup(params)
    try:
        assert len(_gids(fig, "warpgroup")) == p["BN"] // 64 == catalog.get("wgmma_tf32").threads(p) // 128
        assert len(_gids(fig, "register warp")) == len(_gids(fig, "accumulator warp")) == 4
        assert f"m64n{p['BM']}k8" in fig._suptitle.get_text() and not style.fits(fig)
        assert any(f"{p['BM'] // 2} per thread" in ax.get_xlabel() for ax in fig.axes)
    finally:
        plt.close(fig)


def test_the_descriptor_is_the_kernels_own_and_points_at_the_slice_it_reads():
    source = (KERNELS / "wgmma.cuh").read_text()
    body = re.search(r"k_major_desc\(unsigned smem_byte_address\) \{\s*return (.*?);", source, re.S)[1]
    for address in (0, 32, 1024, 4096 + 64, 0x3FFF0, 0x40000 + 96):
        assert diagrams.k_major_desc(address) == eval(_c_expr(body), {"smem_byte_address": address})
    fields = diagrams.descriptor_fields(diagrams.k_major_desc(2048 + 32))
    assert fields == {"start address": (2048 + 32) // 16, "leading byte offset": 1, "stride byte offset": 1024 // 16,
                      "swizzle": 1}
    for kk in range(4):
        fig = diagrams.wgmma_descriptor(kk=kk)
        try:
            outlined = {p.get_gid() for ax in fig.axes for p in ax.patches
                        if (p.get_gid() or "").startswith("row ") and p.get_linewidth() > 2}
            assert outlined == {f"row {r} chunk {c}" for r in range(16) for c in (2 * kk, 2 * kk + 1)}
            # each outlined cell sits where the swizzle puts its chunk
            for p in (p for ax in fig.axes for p in ax.patches if p.get_gid() in outlined):
                r, c = map(int, p.get_gid().split()[1::2])
                assert int(p.get_x()) == (c ^ r % 8) and int(p.get_y()) == r
            assert not style.fits(fig)
        finally:
            plt.close(fig)
    with pytest.raises(ValueError, match="slices 0 to 3"):
        diagrams.wgmma_descriptor(kk=4)


@pytest.mark.parametrize("params", [None, {"CLUSTER": 1}, {"BM": 64, "BN": 128, "WN": 32}])
def test_the_tma_boxes_redraw_from_kernel_13s_tiles(params):
    p = catalog.get("mma_tf32_tma").full_params(params)
    fig = diagrams.tma_boxes(params)
    try:
        boxes = p["BN"] // 32
        assert len(_gids(fig, "A box")) == p["CLUSTER"] and len(_gids(fig, "B box")) == boxes
        assert len(_gids(fig, "stage ")) == p["CLUSTER"] * (boxes + 1)
        colour = {g: p_.get_facecolor() for ax in fig.axes for p_ in ax.patches if (g := p_.get_gid())}
        for j in range(boxes):  # box j: issued by rank j % CLUSTER, the same colour wherever it lands
            assert colour[f"B box {j}"] == colour[f"A box {j % p['CLUSTER']}"]
            assert all(colour[f"stage {r} B {j}"] == colour[f"B box {j}"] for r in range(p["CLUSTER"]))
        sent = (p["CLUSTER"] * p["BM"] + p["BN"]) * 128 // 1024
        assert f"{sent} KiB per step" in fig.texts[-1].get_text() and not style.fits(fig)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_the_handoff_follows_kernel_13s_waits(stages):
    source = (KERNELS / "13_tf32_mma_tma.cu").read_text()
    empty = re.search(r"mbar_wait\(empty0 \+ 8 \* \(next % STAGES\), (.*?)\);", source)[1]
    full = re.search(r"mbar_wait\(full0 \+ 8 \* \(\(step \+ 1\) % STAGES\), (.*?)\);", source)[1]
    p = catalog.get("mma_tf32_tma").full_params({"STAGES": stages})
    plan_ = diagrams.handoff_schedule(p, 4 * stages, latency=1500, step_clk=2048)
    for row in plan_:
        i = row["step"]
        assert row["full_parity"] == eval(_c_expr(full), {"step": i - 1, "STAGES": stages})
        if i >= stages:  # thread 0 waits on empty only once the ring has gone round
            assert row["empty_parity"] == eval(_c_expr(empty), {"next": i, "STAGES": stages})
        assert row["landed"] <= row["start"] < row["end"] <= row["released"]
    for a, b in zip(plan_, plan_[1:]):
        assert b["start"] >= a["end"]  # the warps take the steps in order
    for a, b in zip(plan_, plan_[stages:]):  # a stage is refilled only after its last user released it
        assert b["stage"] == a["stage"] and b["issued"] >= a["released"]
    fig = diagrams.mbarrier_handoff(p)
    try:
        assert set(_gids(fig, "stage ")) == {f"stage {s}" for s in range(stages)} and not style.fits(fig)
    finally:
        plt.close(fig)


def test_the_swizzle_is_what_keeps_kernel_13s_reads_free_of_conflicts():
    from gemm_lab.models import banks

    assert "a_swz = (lane / 8 % 2) ^ (lane % 8)" in (KERNELS / "13_tf32_mma_tma.cu").read_text()
    (a_plain, a_swz), (b_plain, b_swz) = banks.swizzle_sites().values()
    assert a_swz.conflicts == b_swz.conflicts == 0 and a_swz.width == 16 and b_swz.width == 8
    assert a_plain.wavefronts == 8 * a_swz.wavefronts and b_plain.wavefronts == 4 * b_swz.wavefronts
    assert b_swz.addresses == banks.fragment_sites("mma_tf32_tma")[0].addresses  # the same reads chapter 8c draws


def test_the_questions_agree_with_the_pictures():
    import math

    from gemm_lab.models import hardware
    from gemm_lab.pages import questions

    # the lane question asks about an element of a warp's A block outside the one tile the picture labels: its lane
    # is the picture's for the same place in that tile (kernel 11 steps its ldmatrix by 16 rows, its slices by 8)
    row, col = questions.FRAGMENT_ELEMENT
    p = catalog.get("mma_tf32").full_params()
    assert row < p["WM"] and col < p["BK"] and (row, col) not in diagrams.mma_fragments(8)["A"]
    assert questions.QUESTIONS["fragment_lane"].solve()[0] == diagrams.mma_fragments(8)["A"][row % 16, col % 8][0]
    assert "as + 16 * i * lda" in (KERNELS / "11_tf32_mma.cu").read_text()
    # the mma question's clocks: the measured peak's FLOP per clock over the SM quarters' tensor cores
    ceil = hardware.ceilings()
    clocks = questions.QUESTIONS["mma_flop"].solve()[0]
    assert math.isclose(clocks * ceil["mma_sync_tf32_gflops"] * 1e3,
                        2 * 16 * 8 * 8 * ceil["sms"] * catalog.SCHEDULERS_PER_SM * ceil["clock_mhz"])
    assert clocks > 1  # several clocks a tensor core for each mma.sync: issue (one a clock) is not the limit
    p = catalog.get("mma_tf32_tma").full_params()
    row = diagrams.handoff_schedule(p, questions.FULL_PARITY_STEP + 1, 1500, 2048)[-1]
    assert questions.QUESTIONS["full_parity"].solve()[0] == row["full_parity"]
    p = {**p, **questions.TMA_STAGE_INSTANCE}  # the question asks about another instance than the one drawn
    assert questions.QUESTIONS["tma_stage_bytes"].solve()[0] == \
        catalog.get("mma_tf32_tma").smem_bytes({**p, "STAGES": 2}) - catalog.get("mma_tf32_tma").smem_bytes(
            {**p, "STAGES": 1}) - 16  # a stage: its boxes, and two mbarriers of 8 bytes


def test_energy_headline_quotes_both_sides_work_per_joule_where_recorded(replay):
    """The intro's and scoreboard's headline: the share, then the kernel's and cuBLAS's GFLOP/J from the energy counter;
    a row recorded before the counter was read keeps its share and says nothing of energy."""
    import dataclasses

    import gemm_lab as gl
    from gemm_lab.pages import tables

    x = gl.bench("wgmma_ws_tf32", 8192)
    text = tables.energy_headline(x)
    assert text.startswith(f"{x.pct_cublas:.1f} % of cuBLAS TF32")
    assert f"{x.gflop_per_joule():,.0f} GFLOP/J, cuBLAS {x.gflop_per_joule(cublas=True):,.0f}" in text
    old = dataclasses.replace(x, telemetry={"sm_clock_mhz": 1500.0}, cublas_telemetry={})
    assert "GFLOP/J" not in tables.energy_headline(old)


def test_the_counter_table_counts_instructions_per_flop_not_per_cycle(replay):
    """Chapter 8a's claim that kernel 12 issues fewer instructions per FLOP than kernel 11, though it uses more of its
    issue slots: the table's instructions per 1,000 FLOP (slots used x cycles x schedulers x SMs over the FLOPs) say
    so. It quotes no speed: a counted launch is a short burst, not a sustained race."""
    from gemm_lab.pages import tables

    t = tables.tensor_pipe([("mma_tf32", {}), ("wgmma_tf32", {})], 4096)
    (k11, k12) = t.rows
    slots, per_kflop = t.columns.index("issue slots used"), t.columns.index("warp instructions per 1,000 FLOP")
    assert float(k12[slots].rstrip("%")) > float(k11[slots].rstrip("%"))  # more of its slots ...
    assert float(k12[per_kflop]) < float(k11[per_kflop])  # ... yet fewer instructions per FLOP
    assert not any("FLOP/s" in c for c in t.columns)
