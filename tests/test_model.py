"""The paper models give the numbers worked out by hand in the chapters."""
from pathlib import Path

import pytest

from gemm_lab.models import model

ROOT = Path(__file__).resolve().parent.parent


def test_flops_and_compulsory_traffic():
    assert model.flops(2, 3, 4) == 48
    assert model.compulsory_bytes(4096, 4096, 4096) == 4 * 3 * 4096**2


def test_tiling_traffic_model():
    n = 4096
    assert model.global_load_bytes("coalesced", n, n, n) == 4 * 2 * n**3
    p = {"BM": 32, "BN": 32, "BK": 8}
    assert model.global_load_bytes("smem_tiled", n, n, n, p) == pytest.approx(4 * n**3 * (2 / 32))
    # BK does not change the traffic; a tall tile reuses B more and A less
    assert model.global_load_bytes("smem_tiled", n, n, n, {**p, "BK": 32}) == model.global_load_bytes(
        "smem_tiled", n, n, n, p)
    assert model.reuse("smem_tiled", {"BM": 64, "BN": 16, "BK": 8}) == (16, 64)
    # two blocks of a cluster, stacked along M, read B once between them (TMA multicast)
    tma = {"BM": 128, "BN": 256, "WM": 64, "WN": 64, "STAGES": 4}
    assert model.reuse("mma_tf32_tma", {**tma, "CLUSTER": 2}) == (256, 256)
    assert model.reuse("mma_tf32_tma", {**tma, "CLUSTER": 1}) == (256, 128)


def test_roofline_is_the_lower_of_the_two_limits():
    assert model.roofline(1.0, peak_gflops=1000, bandwidth_gbs=100) == 100
    assert model.roofline(100.0, peak_gflops=1000, bandwidth_gbs=100) == 1000


# A made-up GPU whose budget is easy to work out by hand: 100 SMs at 1 GHz, 128 FP32 lanes each.
GPU = {"gpu": "test GPU", "sms": 100, "clock_mhz": 1000.0, "fp32_lanes_per_sm": 128, "peak_gflops": 25600.0,
       "dram_gbs": 2000.0, "mma_sync_tf32_gflops": 100000.0, "wgmma_tf32_gflops": 200000.0}


@pytest.fixture
def sass_of(monkeypatch):
    """Give the budget a main loop and its FFMAs' bank report, of our choosing (no compile)."""
    from gemm_lab.models import sass

    def use(loop: list[str], ffma: int = 100, conflicts: int = 0) -> None:
        monkeypatch.setattr(sass, "main_loop", lambda kernel, params=None: loop)
        monkeypatch.setattr(sass, "loop_report", lambda kernel, params=None: sass.Report(ffma, 0, conflicts, 0))
    return use


def test_budget_of_an_ffma_kernel_by_hand(sass_of):
    sass_of(["FFMA"] * 3 + ["LDS"], ffma=100, conflicts=25)
    b = model.speed_of_light("smem_tiled", None, 4096, GPU)
    tflops = {c.level: c.tflops for c in b.ceilings}
    assert tflops["FFMA peak"] == pytest.approx(25.6)  # 100 SMs x 128 lanes x 2 FLOP x 1 GHz
    assert tflops["issue"] == pytest.approx(0.75 * 25.6)  # 3 FFMA of 4 instructions
    assert tflops["registers"] == pytest.approx(25.6 * 100 / 125)  # 25 FFMAs take a second cycle
    # one output per thread: 2 shared loads (8 bytes) per FMA (2 FLOP), at 100 SMs x 128 B x 1 GHz = 12.8 TB/s
    assert tflops["shared memory"] == pytest.approx(0.25 * 12.8)
    # A, B and C read once and C written: 16 n^2 bytes for 2 n^3 FLOP, n / 8 = 512 FLOP per byte at 2 TB/s
    assert tflops["DRAM"] == pytest.approx(512 * 2.0)
    assert "L2" not in tflops and b.bound.level == "shared memory"
    with_l2 = model.speed_of_light("smem_tiled", None, 4096, GPU, l2_gbs=10000.0)
    # 32 x 32 tiles: 4 n^3 (2 / 32) bytes of loads + 4 n^2 of stores, at 10 TB/s
    n = 4096
    assert with_l2["L2"].tflops == pytest.approx(2 * n**3 / (4 * n**3 / 16 + 4 * n**2) * 10.0)


def test_budget_of_tensor_core_kernels_uses_their_own_peak(sass_of):
    sass_of(["HMMA"] * 2 + ["LDS"] * 2)
    mma = model.speed_of_light("mma_tf32", None, 4096, GPU)
    assert mma["tensor peak"].tflops == pytest.approx(100.0) and "FFMA peak" not in {c.level for c in mma.ceilings}
    # half the instructions are m16n8k8 HMMAs of 2048 FLOP; 4 per clock per SM
    assert mma["issue"].tflops == pytest.approx(0.5 * 2048 * 4 * 100 * 1e9 / 1e12)
    assert mma["registers"].tflops is None
    p = model.catalog.get("mma_tf32").full_params()  # a warp's WM x WN tile per fragment load
    assert mma["shared memory"].tflops == pytest.approx(2 / (4 * (1 / p["WM"] + 1 / p["WN"])) * 12.8)
    assert model.speed_of_light("mma_3xtf32", None, 4096, GPU)["tensor peak"].tflops == pytest.approx(100 / 3)
    wgmma = model.speed_of_light("wgmma_tf32", None, 4096, GPU)
    assert wgmma["tensor peak"].tflops == pytest.approx(200.0)
    assert wgmma["issue"].tflops is None and wgmma["shared memory"].tflops is None
    assert model.math_instruction("mma_tf32_tma") == "mma.sync" and model.math_instruction("wgmma_ws_tf32") == "wgmma"


def test_issue_ceiling_of_warp_tiling_is_its_ffma_share_of_the_peak(replay):
    """From the offline SASS and the H100's record: the number chapter 7 explains its result with."""
    import gemm_lab as gl
    from gemm_lab.models import sass

    ceil = gl.ceilings()
    mix = sass.main_loop_mix("warp_tiling")
    b = model.speed_of_light("warp_tiling", None, 4096, ceil)
    assert b["issue"].tflops == pytest.approx(mix["FFMA"] / sum(mix.values()) * ceil["peak_gflops"] / 1e3)
    assert b.bound.level == "issue"
    view = gl.budget("warp_tiling", ceilings=ceil)
    assert view.measured.gflops / 1e3 < b.bound.tflops  # no kernel beats its speed of light
    assert "issue" in view.caption() and "recorded on" in str(view) and "<table" in view._repr_html_()


def test_the_registers_row_counts_the_ffmas_the_issue_row_counts():
    """Both rows read the same main loop: the registers row's FFMAs are the issue row's (chapter 6's prefetch kernel
    has more FFMAs outside its loop than in it)."""
    b = model.speed_of_light("prefetch", None, 4096, GPU)
    in_loop = b["issue"].how.split(" FFMA")[0]
    assert f"of the main loop's {in_loop} FFMAs" in b["registers"].how


def test_a_page_shows_the_budget_rows_taught_so_far(sass_of):
    """Each row names the chapter that teaches it; a budget shown before that chapter leaves the row out, and its bound
    is the lowest row shown."""
    sass_of(["FFMA"] * 3 + ["LDS"] * 5, ffma=100, conflicts=25)
    full = model.speed_of_light("smem_tiled", None, 4096, GPU)
    assert all((ROOT / "book" / f"{page}.md").exists() for page in model.ROW_CHAPTERS.values())
    early = full.upto("ch02_smem_tiling")
    assert {c.level for c in early.ceilings} == {"FFMA peak", "shared memory", "DRAM"}
    assert set(early.hidden) == {"issue", "registers"} and early.bound.level == "shared memory"
    with pytest.raises(KeyError, match="chapter 3"):
        early["issue"]
    assert full.upto("ch05_bank_conflicts").hidden == () and full.upto("scoreboard").hidden == ()
    assert model.chapter_key("ch07_warp_tiling") < model.chapter_key("ch07b_pipelined_warp_tiling") < model.chapter_key(
        "ch08_tensor_cores") and model.chapter_label("ch08b_precision") == "8b"


def test_the_caption_states_the_one_rule_and_the_rows_to_come(replay):
    import gemm_lab as gl

    view = gl.budget("smem_tiled", ceilings=gl.ceilings())  # chapter 2's page: issue and registers come later
    caption = view.caption()
    assert "is the prediction where the model counts right" in caption and "that row overcounts" in caption
    assert "issue (chapter 3)" in caption and "registers (chapter 5)" in caption
    assert "(ch. 2)" in str(view) and "issue" not in [line.split()[0] for line in str(view).splitlines()[1:]]


def test_issue_binds_the_ffma_chapters_3_to_7b_and_no_tensor_core_kernel(replay):
    """What the GPU primer and the glossary say of the issue ceiling, as each chapter's own budget shows it (the
    chapter-3 and chapter-7b kernels, the ends of that range; warp_tiling's test is above)."""
    import gemm_lab as gl

    ceil = gl.ceilings()
    for kernel in ("thread_tile_2d", "pipelined_warp_tiling"):
        spec = gl.KERNELS[kernel]
        assert model.speed_of_light(spec, None, 4096, ceil).upto(spec.chapter).bound.level == "issue", kernel
    for kernel in ("mma_tf32", "wgmma_tf32"):
        b = model.speed_of_light(kernel, None, 4096, ceil)
        assert b["issue"].tflops is None or b["issue"].tflops > b["tensor peak"].tflops, kernel
