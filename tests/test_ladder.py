"""The ladder the intro and the scoreboard open with: one row a kernel in the book's order, each with its one change,
its share of the cuBLAS it races and the binding row of its budget."""
import gemm_lab as gl
from gemm_lab.lab import plan
from gemm_lab.pages import ladder
from gemm_lab.pages.tables import _recorded_l2_gbs


def test_the_ladder_follows_the_book_and_names_each_steps_ceiling(replay):
    board = gl.bench_all([(k, None, 8192) for k in (*plan.HEADLINE, *plan.TENSOR_CORES, *plan.EMULATION)])
    table = ladder.ladder(board, gl.ceilings(), _recorded_l2_gbs())
    chapters = [r[0] for r in table.rows]
    assert chapters[:3] == ["1", "1", "2"] and chapters.index("8a") < chapters.index("8b") < chapters.index("8c")
    by_kernel = {r[1]: r for r in table.rows}
    assert by_kernel["wgmma_ws_tf32"][4].endswith("of cuBLAS TF32") and by_kernel["ozaki"][4].endswith("SGEMM")
    assert all(r[5].split(" (")[0] in ("L2", "DRAM", "issue", "shared memory", "registers", "tensor peak", "peak")
               for r in table.rows), [r[5] for r in table.rows]
    passed = [r[1] for r in table.rows if "passed" in r[5]]
    assert all(float(by_kernel[k][3].replace(",", "")) > float(by_kernel[k][5].split("(")[1].split(",")[0])
               for k in passed)
