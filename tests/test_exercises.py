"""`gl.submit`: a reader's kernel is refused before compiling when it breaks the contract or the rules, compiled
offline with errors at the reader's own lines, and (on a GPU) checked on guarded buffers: the book's kernel passes,
and a wrong index, a missing barrier and a tail left out are each caught and named. `diagnose` is checked on the CPU
with made-up buffers."""
import math

import numpy as np
import pytest

import gemm_lab as gl
from gemm_lab import catalog, compile, device, exercises

SOURCE = (catalog.ROOT / "kernels" / "03_smem_tiling.cu").read_text()


def test_what_is_not_the_contract_is_refused_before_compiling(monkeypatch):
    monkeypatch.setattr(compile, "offline", lambda *a: pytest.fail("compiled a refused kernel"))
    with pytest.raises(TypeError, match="no __global__"):
        gl.submit("int main() {}", "smem_tiled")
    with pytest.raises(ValueError, match="no kernel `template <int BM, int BN, int BK> __global__ void sgemm_smem_tiled"):
        gl.submit(SOURCE.replace("sgemm_smem_tiled", "my_gemm"), "smem_tiled")
    with pytest.raises(ValueError, match="template parameters are <BN, BM, BK>"):
        gl.submit(SOURCE.replace("template <int BM, int BN, int BK>", "template <int BN, int BM, int BK>"), "smem_tiled")
    with pytest.raises(ValueError, match="the book's contract"):
        gl.submit(SOURCE.replace("float beta, float* __restrict__ C", "float* __restrict__ C"), "smem_tiled")
    with pytest.raises(ValueError, match="breaks a rule: threads per block"):
        gl.submit(SOURCE, "smem_tiled", {"BM": 64, "BN": 64})


def test_offline_the_reader_sees_errors_at_their_own_lines_or_the_resources():
    pytest.importorskip("cuda.bindings.nvrtc")  # the offline extra
    broken = SOURCE.replace("acc += As[tr][kk] * Bs[kk][tc];", "acc += As[tr][kk] * Bs[kk][tc]")
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if "__syncthreads();  // everyone" in text)
    attempt = gl.submit(broken, "smem_tiled")
    assert not attempt.compiled and f"{exercises.FILE}({line}): error" in attempt.compile_log
    assert "It does not compile" in str(exercises.report(attempt))
    good = gl.submit(SOURCE, "smem_tiled", {"BM": 16, "BN": 16, "BK": 8})
    assert good.compiled and good.registers > 0 and good.smem_bytes == 4 * (16 * 8 + 8 * 16)
    if not device.live():
        assert "need a GPU" in good.note and "need a GPU" in str(exercises.report(good))


def _guarded(c: np.ndarray, canary: bool = True) -> np.ndarray:
    words = np.full(c.size + 2 * exercises.GUARD, exercises.CANARY, np.uint32)
    words[exercises.GUARD:exercises.GUARD + c.size] = c.astype(np.float32).ravel().view(np.uint32)
    if not canary:
        words[-1] = 0
    return words


def _diagnose(c: np.ndarray, ref: np.ndarray, second: np.ndarray | None = None, k_tail: bool = False) -> str:
    first = _guarded(c)
    return exercises.diagnose(first, first if second is None else _guarded(second), ref, c.shape, 1e-5, 1.0,
                              (4, 4), k_tail)


@pytest.mark.parametrize("case,expected", [
    ("right", ""), ("outside", "wrote outside C (past its last element)"), ("tail", "only the last, partial tiles"),
    ("hole", "threads that never reach their store"), ("nan", "read the NaN padding"), ("race", "a race"),
    ("transposed", "transpose"), ("k_tail", "the last, partial step along K"), ("index", "indices of A"),
])
def test_diagnose_names_what_usually_causes_each_pattern(case, expected):
    rng = np.random.default_rng(0)
    ref = rng.uniform(-1, 1, (6, 6))
    c = ref.copy()
    if case == "outside":
        assert expected in exercises.diagnose(_guarded(c, canary=False), _guarded(c), ref, c.shape, 1e-5, 1.0, (4, 4),
                                              False)
        return
    if case in ("tail", "hole"):
        words = _guarded(c)
        body = words[exercises.GUARD:exercises.GUARD + c.size].reshape(c.shape)
        body[4:, :] = exercises.POISON if case == "tail" else body[4:, :]
        body[1, 1] = exercises.POISON if case == "hole" else body[1, 1]
        assert expected in exercises.diagnose(words, words, ref, c.shape, 1e-5, 1.0, (4, 4), False)
        return
    second = None
    if case == "nan":
        c[2, 3] = np.nan
    elif case == "race":
        c[0, 0] += 1
        second = ref.copy()
    elif case == "transposed":
        c = ref.T.copy()
    elif case in ("k_tail", "index"):
        c[3, 2] += 0.5
    got = _diagnose(c, ref, second, k_tail=case == "k_tail")
    assert (got == "") if expected == "" else expected in got, got


def test_the_scoreboard_lives_beside_the_compile_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(compile.CACHE_ENV, str(tmp_path))
    assert exercises.scoreboard_path() == tmp_path / "scoreboard.json" and exercises.scoreboard() == []


BROKEN = {
    "index": ("acc += As[tr][kk] * Bs[kk][tc];", "acc += As[kk][tr] * Bs[tc][kk];", ("indices", "transpose")),
    "barrier": ("__syncthreads();  // the tiles are complete before anyone reads them", "", ("race", "wrong", "written")),
    "tail": ("store_c(C, row0 + tr, col0 + tc, M, N, alpha, beta, acc);",
             "C[(row0 + tr) * N + col0 + tc] = alpha * acc;", ("outside C", "written", "edge")),
}


@pytest.mark.gpu
def test_the_books_kernel_passes_and_is_timed():
    attempt = gl.submit(SOURCE, "smem_tiled", size=1024)
    assert attempt.ok and len(attempt.checked) >= 5 and len(attempt.timed) == 2
    assert attempt.timed[0].gflops > 0 and exercises.scoreboard()[-1]["like"] == "smem_tiled"


@pytest.mark.gpu
@pytest.mark.parametrize("bug", list(BROKEN))
def test_each_broken_variant_is_caught_with_its_diagnosis(bug):
    old, new, words = BROKEN[bug]
    assert old in SOURCE
    attempt = gl.submit(SOURCE.replace(old, new), "smem_tiled", {"BM": 16, "BN": 16, "BK": 16})
    assert attempt.compiled and attempt.wrong and any(w in attempt.wrong for w in words), attempt.wrong


@pytest.mark.parametrize("name", list(exercises.KERNEL_EXERCISES))
def test_each_write_the_kernel_exercise_has_its_holes_and_its_solution_compiles(name):
    """The skeleton removes every hole's line (each in the file exactly once), each broken solution applies to the
    file, and the solution (the chapter's kernel) compiles offline as a submission (CPU: CI runs this)."""
    pytest.importorskip("cuda.bindings.nvrtc")  # the offline extra
    exercise = exercises.KERNEL_EXERCISES[name]
    source = catalog.get(exercise.like).path.read_text()
    skeleton = exercises.skeleton(name)
    assert skeleton.count("// TODO: ") == len(exercise.holes)
    assert all(hole.line not in skeleton for hole in exercise.holes)
    assert all(source.count(old) == 1 for old, _, _ in exercise.bugs)
    assert gl.submit(source, exercise.like, exercise.params).compiled


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(exercises.KERNEL_EXERCISES))
def test_each_solution_passes_and_each_broken_one_is_named(name):
    exercise = exercises.KERNEL_EXERCISES[name]
    source = catalog.get(exercise.like).path.read_text()
    assert gl.submit(source, exercise.like, exercise.params, size=1024).ok
    for old, new, words in exercise.bugs:
        attempt = gl.submit(source.replace(old, new), exercise.like, exercise.params, size=1024)
        assert attempt.compiled and attempt.wrong and any(w in attempt.wrong for w in words), (old, attempt.wrong)


@pytest.mark.parametrize("name", list(gl.questions.QUESTIONS))
def test_each_question_asks_with_its_givens_and_judges_an_answer(name, replay):
    from gemm_lab import questions

    q = questions.QUESTIONS[name]
    right, how = q.solve()
    assert math.isfinite(right) and how and q.ask()
    assert str(gl.answer(name, right)).startswith("Right") and "None" in str(gl.answer(name, None))
    assert str(gl.answer(name, right * 3 + 7)).startswith("Not quite") and how in str(gl.answer(name, right * 3 + 7))
    with pytest.raises(TypeError, match="answer a number"):
        gl.answer(name, "8")


def test_every_chapter_from_the_primer_to_chapter_10_has_two_questions():
    from collections import Counter

    from gemm_lab import questions

    count = Counter(q.chapter for q in questions.QUESTIONS.values())
    chapters = ["gpu_primer", *sorted(p.stem for p in (catalog.ROOT / "book").glob("ch*.md"))]
    assert all(count[c] >= 2 for c in chapters if c != "ch07b_pipelined_warp_tiling"), count
