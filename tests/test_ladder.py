"""The ladder the intro and the scoreboard open with: one row a kernel in the book's order, each with its one change,
its share of the cuBLAS it races and the binding row of its budget."""
import gemm_lab as gl
from gemm_lab.lab import plan
from gemm_lab.pages import ladder
from gemm_lab.pages.tables import _recorded_l2_gbs
from gemm_lab.precision import emulation


def test_the_ladder_follows_the_book_and_names_each_steps_ceiling(replay):
    board = gl.bench_all([(k, None, 8192) for k in (*plan.HEADLINE, *plan.TENSOR_CORES, *plan.EMULATION)])
    table = ladder.ladder(board, gl.ceilings(), _recorded_l2_gbs())
    chapters = [r[0] for r in table.rows]
    assert chapters[:3] == ["1", "1", "2"] and chapters.index("8a") < chapters.index("8b") < chapters.index("8c")
    by_kernel = {r[2].split(" (")[0]: r for r in table.rows}  # "ozaki (H200)": another GPU's row, labelled
    assert [r[1] for r in table.rows][:3] == ["1", "2", "3"] and by_kernel["pipelined_warp_tiling"][1] == "10b"
    assert by_kernel["mma_3xtf32"][1] == "11, 3x" and by_kernel["ozaki"][1] == "16"
    assert by_kernel["wgmma_ws_tf32"][5].endswith("(TF32)") and by_kernel["ozaki"][5].endswith("(SGEMM)")
    assert all(r[6].split(" (")[0] in ("L2", "DRAM", "issue", "shared memory", "registers", "tensor peak", "peak")
               for r in table.rows if not r[2].startswith("ozaki")), [r[6] for r in table.rows]
    passed = [r[2].split(" (")[0] for r in table.rows if "passed" in r[6]]
    assert all(float(by_kernel[k][4].replace(",", "")) > float(by_kernel[k][6].split("(")[1].split(",")[0])
               for k in passed)


def test_the_ozaki_rows_ceiling_is_chapter_10s_speed_of_light(replay):
    """Chapter 10 takes the INT8 products alone (cuBLAS INT8's rate over the moduli chosen) as the scheme's speed of
    light; the ladder names the same number, not a budget row its kernel never meets."""
    x = gl.bench("ozaki", 8192)
    table = ladder.ladder([x], gl.ceilings(), _recorded_l2_gbs())
    sol = emulation.speed_of_light(8192, x.details["moduli"]).tflops
    assert table.rows[0][6] == f"INT8 products ({sol:,.1f})", table.rows[0]
