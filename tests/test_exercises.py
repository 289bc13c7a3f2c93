"""`gl.submit`: a reader's kernel (a string, or a file's path) is refused before compiling when it breaks the contract
(with a TMA kernel's tensor maps) or the rules, compiled offline with errors at the reader's own lines, and (on a GPU)
checked on guarded buffers: the book's kernel passes, and a wrong index, a missing barrier (at small shapes or only at
the timing size) and a tail left out are each caught and named. On the CPU: `diagnose` with made-up buffers (and a
variant's own cause), `judge` with launches emulated in NumPy (the column-major layouts of the variants), `check` and
`submit` with fake trials (a kernel wrong only at the timing size, a launch that never finishes), and every
write-the-kernel exercise's solution and planted mistakes compiled offline. On a GPU: each solution passes and each
planted mistake is named, those that may hang the GPU in a process of their own."""
import contextlib
import math
import re

import numpy as np
import pytest

import gemm_lab as gl
from gemm_lab import catalog, compiler, device, run, timing
from gemm_lab.pages import exercises, submissions, variants

SOURCE = (catalog.ROOT / "kernels" / "03_smem_tiling.cu").read_text()


def test_what_is_not_the_contract_is_refused_before_compiling(monkeypatch):
    monkeypatch.setattr(compiler, "offline", lambda *a: pytest.fail("compiled a refused kernel"))
    with pytest.raises(TypeError, match="no __global__"):
        gl.submit("int main() {}", "smem_tiled")
    with pytest.raises(ValueError,
                       match="no kernel `template <int BM, int BN, int BK> __global__ void sgemm_smem_tiled"):
        gl.submit(SOURCE.replace("sgemm_smem_tiled", "my_gemm"), "smem_tiled")
    with pytest.raises(ValueError, match="template parameters are <BN, BM, BK>"):
        gl.submit(SOURCE.replace("template <int BM, int BN, int BK>", "template <int BN, int BM, int BK>"),
                  "smem_tiled")
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


def test_a_wrong_result_after_the_small_shapes_passed_is_named_a_likely_race():
    rng = np.random.default_rng(0)
    ref = rng.uniform(-1, 1, (6, 6))
    c = ref.copy()
    c[3, 2] += 0.5
    got = exercises.diagnose(_guarded(c), _guarded(c), ref, c.shape, 1e-5, 1.0, (4, 4), False, passed=5)
    assert "most likely a race" in got and "5 smaller shapes" in got and "__syncthreads" in got, got


def test_the_index_hint_follows_the_layout():
    rng = np.random.default_rng(0)
    ref = rng.uniform(-1, 1, (6, 5))
    c = ref.copy()
    c[3, 2] += 0.5
    row_major = exercises.diagnose(_guarded(c), _guarded(c), ref, c.shape, 1e-5, 1.0, (4, 4), False)
    assert "A[row * K + k]" in row_major and "B[k * N + col]" in row_major and "C[" not in row_major.split(":", 1)[1]
    column_major = exercises.diagnose(_guarded(c), _guarded(c), ref, c.shape, 1e-5, 1.0, (4, 4), False,
                                      column_major=("A", "B", "C"))
    assert "A[k * M + row]" in column_major and "B[col * K + k]" in column_major and "C[col * M + row]" in column_major


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
    monkeypatch.setenv(compiler.CACHE_ENV, str(tmp_path))
    assert submissions.scoreboard_path() == tmp_path / "scoreboard.json" and submissions.scoreboard() == []


def test_an_unreadable_scoreboard_is_named_and_kept_aside_not_overwritten(tmp_path, monkeypatch):
    monkeypatch.setenv(compiler.CACHE_ENV, str(tmp_path))
    submissions.scoreboard_path().write_text('[{"like": "smem_tiled"')  # cut short
    with pytest.raises(ValueError, match="scoreboard.json is not the scoreboard's JSON"):
        submissions.scoreboard()
    x = type("X", (), {"params": {}, "m": 64, "gflops": 1.0, "cublas_gflops": 2.0, "gpu": "test"})()
    with pytest.warns(UserWarning, match="kept it as .*unreadable"):
        submissions.remember(x, "smem_tiled")
    aside = [f for f in tmp_path.iterdir() if "unreadable" in f.name]
    assert len(aside) == 1 and aside[0].read_text() == '[{"like": "smem_tiled"'
    assert [r["like"] for r in submissions.scoreboard()] == ["smem_tiled"]


def _emulated(column_major=(), store_row_major=False):
    """A launch emulated in NumPy from the guarded words, indexing A, B and C as the layouts say (as a kernel of a
    variant does), optionally storing C row-major whatever its layout (a bug)."""
    def make(m, n, k, alpha, beta):
        def launch(a_words, b_words, c_words):
            g = exercises.GUARD

            def body(words, rows, cols, col):
                """The matrix between the guards, as stored: rows x cols, or its transpose where column-major."""
                return words[g:g + rows * cols].view(np.float32).reshape((cols, rows) if col else (rows, cols))

            a, b = body(a_words, m, k, "A" in column_major), body(b_words, k, n, "B" in column_major)
            a, b = (a.T if "A" in column_major else a), (b.T if "B" in column_major else b)
            out = c_words.copy()
            col_c = "C" in column_major and not store_row_major
            c_old = body(c_words, m, n, "C" in column_major)
            c_old = c_old.T if "C" in column_major else c_old
            c = alpha * (a.astype(np.float64) @ b) + (beta * c_old if beta else 0)
            out[g:g + m * n] = np.ascontiguousarray(c.T if col_c else c).astype(np.float32).ravel().view(np.uint32)
            return out
        return launch
    return make


@pytest.mark.parametrize("column_major", [(), ("A",), ("B",), ("A", "B"), ("A", "B", "C")])
@pytest.mark.parametrize("beta", [0.0, -2.0])
def test_judge_stores_each_operand_as_its_layout_says(column_major, beta):
    """A launch that reads and writes the layouts as a variant's kernel does is right on every shape, with and without
    beta; one that stores a column-major C row-major is caught (on a square C, as the transpose)."""
    for m, n, k in [(1, 1, 1), (17, 19, 23), (12, 12, 8)]:
        launch = _emulated(column_major)(m, n, k, 0.5, beta)
        why, err = exercises.judge(launch, (m, n, k), (4, 4), alpha=0.5, beta=beta, column_major=column_major)
        assert why == "" and err < 1e-6, (m, n, k, why)
    if "C" in column_major:
        launch = _emulated(column_major, store_row_major=True)(12, 12, 8, 1.0, 0.0)
        why, _ = exercises.judge(launch, (12, 12, 8), (4, 4), column_major=column_major)
        assert "transpose" in why and "C[col * M + row]" in why, why


def test_stored_words_are_the_transposes_rows_for_a_column_major_matrix():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert list(exercises.stored(x, False).view(np.float32)) == [0, 1, 2, 3, 4, 5]
    assert list(exercises.stored(x, True).view(np.float32)) == [0, 3, 1, 4, 2, 5]  # x[i, j] at i + 2 j
    words = exercises.guarded(exercises.stored(x, True), exercises.CANARY)
    back = exercises.row_major_c(words, 2, 3, True)
    assert list(back[exercises.GUARD:exercises.GUARD + 6].view(np.float32)) == [0, 1, 2, 3, 4, 5]


def _fake_trial(wrong_at: int | None, differs: bool = False):
    """A stand-in for a GPU run: right on every shape but M = N = K = `wrong_at`, where one output is off (and a second
    run disagrees, if `differs`), judged by `diagnose` as `_run_and_judge` would."""
    calls = []

    def trial(sub, params, shape, alpha=1.0, beta=0.0, k_tail=False, column_major=(), cause="", passed=0):
        calls.append((shape, passed))
        m, n, _ = shape
        ref = np.ones((m, n))
        c = ref.copy()
        if shape == (wrong_at,) * 3:
            c[1, 2] = 3.0
        second = ref.copy() if differs and shape == (wrong_at,) * 3 else c
        return exercises.diagnose(_guarded(c), _guarded(second), ref, (m, n), 1e-5, 1.0, sub.tile(params), k_tail,
                                  column_major=column_major, cause=cause, passed=passed), 0.0
    return trial, calls


@pytest.mark.parametrize("differs", [False, True])
def test_a_kernel_right_on_small_shapes_and_wrong_at_the_timing_size_gets_a_diagnosis(monkeypatch, differs):
    """The timing size is checked like the small shapes, last: its failure is a diagnosis naming a race, never an
    error from the timing."""
    monkeypatch.setattr(run, "faults", lambda *a, **k: contextlib.nullcontext())
    sub = exercises.submission(SOURCE, "smem_tiled")
    params = catalog.validate(sub, {"BM": 16, "BN": 16, "BK": 16})
    trial, calls = _fake_trial(64, differs)
    why, passed = exercises.check(sub, params, 64, trial=trial)
    assert why.startswith("at M = N = K = 64: C[1][2]") and "race" in why, why
    assert calls[-1] == ((64, 64, 64), len(passed)) and len(passed) == len(calls) - 2  # all small shapes passed
    trial, calls = _fake_trial(None)
    assert exercises.check(sub, params, 64, trial=trial)[0] == "" and calls[-1][0] == (64, 64, 64)


def test_submit_reports_the_race_and_times_nothing(monkeypatch):
    """`submit` on a GPU (faked): compiled, checked with the timing size, wrong there: the attempt says so, no
    traceback, and nothing is timed."""
    class Fn:
        num_regs, local_size_bytes, shared_size_bytes = 32, 0, 2048

    monkeypatch.setattr(device, "runs_here", lambda spec: True)
    monkeypatch.setattr(compiler, "load", lambda inst: Fn())
    monkeypatch.setattr(run, "faults", lambda *a, **k: contextlib.nullcontext())
    trial, _ = _fake_trial(256)
    monkeypatch.setattr(exercises, "_run_and_judge", trial)
    monkeypatch.setattr(timing, "raced", lambda *a, **k: pytest.fail("timed a wrong kernel"))
    monkeypatch.setattr(timing, "bench", lambda *a, **k: pytest.fail("timed a wrong kernel"))
    attempt = gl.submit(SOURCE, "smem_tiled", {"BM": 16, "BN": 16, "BK": 16}, size=256)
    assert attempt.compiled and not attempt.ok and not attempt.timed
    shown = str(exercises.report(attempt))
    assert "Wrong: at M = N = K = 256" in shown and "race" in shown, shown


def test_variants_are_refused_before_compiling_when_their_rules_break(monkeypatch):
    monkeypatch.setattr(compiler, "offline", lambda *a: pytest.fail("compiled a refused kernel"))
    ring = (catalog.ROOT / variants.SOLUTIONS / "06_multistage_full_ring.cu").read_text()
    with pytest.raises(ValueError, match="STAGES must be 2, 3 or 4"):
        gl.submit(ring, "multistage_full_ring", {"STAGES": 5})
    with pytest.raises(ValueError, match="static shared memory"):
        gl.submit(ring, "multistage_full_ring", {"BM": 128, "BN": 128, "BK": 32, "STAGES": 4})
    with pytest.raises(ValueError, match="BK must be a multiple of 8"):
        gl.submit((catalog.ROOT / variants.SOLUTIONS / "07_warp_tiling_along_k.cu").read_text(),
                  "warp_tiling_along_k", {"BK": 4})
    with pytest.raises(ValueError, match="TN must divide BN"):
        gl.submit((catalog.ROOT / variants.SOLUTIONS / "03_thread_tile_2d_conflict_free.cu").read_text(),
                  "thread_tile_2d_conflict_free", {"BN": 32, "TN": 16 + 8})
    with pytest.raises(ValueError, match="threads per block"):  # 32 * WARPS of them
        gl.submit((catalog.ROOT / variants.SOLUTIONS / "01_warp_dot.cu").read_text(), "warp_dot", {"WARPS": 64})
    with pytest.raises(ValueError, match="unknown kernel 'nope'.*warp_dot"):
        gl.submit(SOURCE, "nope")
    with pytest.raises(ValueError, match="sgemm_warp_dot"):
        gl.submit(SOURCE, "warp_dot")  # a book's kernel is not the variant


def test_a_tma_kernel_takes_the_tensor_maps_after_the_contract(monkeypatch):
    """A stand-in for a TMA kernel takes A's and B's tensor maps after C (and C's where it stores by TMA): the refusal
    spells out that contract."""
    monkeypatch.setattr(compiler, "offline", lambda *a: pytest.fail("compiled a refused kernel"))
    ring = exercises.spec_of("ring_producer").path.read_text()
    two_maps = "const void* __restrict__ map_a, const void* __restrict__ map_b"
    assert exercises.contract(exercises.spec_of("ring_producer")).endswith("float* C, const void* map_a, "
                                                                          "const void* map_b)")
    assert exercises.contract(catalog.get("wgmma_ws_tf32")).endswith("const void* map_b, const void* map_c)")
    assert exercises.contract(catalog.get("smem_tiled")) == exercises.CONTRACT
    with pytest.raises(ValueError, match="must take the book's contract .*float\\* C, const void\\* map_a"):
        gl.submit(ring.replace(f", {two_maps}", ""), "ring_producer")


def test_submit_takes_a_files_path_and_errors_name_the_file(tmp_path, monkeypatch):
    """`submit` reads a kernel from a path (a Path, or a string naming a .cu file), and compile errors name that file
    at the reader's lines; `Source.save` writes a skeleton to edit and never overwrites the reader's work."""
    pytest.importorskip("cuda.bindings.nvrtc")  # the offline extra
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="no file 'missing.cu'"):
        gl.submit("missing.cu", "smem_tiled")
    broken = exercises.Source(SOURCE.replace("acc += As[tr][kk] * Bs[kk][tc];", "acc += As[tr][kk] * Bs[kk][tc]"))
    path = broken.save("mine.cu")
    assert path.resolve() == (tmp_path / "mine.cu").resolve()
    assert exercises.Source("other").save("mine.cu").read_text() == broken  # the reader's file is kept
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "__syncthreads();  // everyone" in text)
    for source in (path, "mine.cu"):
        attempt = gl.submit(source, "smem_tiled", {"BM": 16, "BN": 16, "BK": 8})
        assert not attempt.compiled and f"mine.cu({line}): error" in attempt.compile_log, attempt.compile_log
    path.write_text(SOURCE)
    assert gl.submit(str(path), "smem_tiled", {"BM": 16, "BN": 16, "BK": 8}).compiled


def test_a_launch_that_never_finishes_is_named_and_ends_the_check(monkeypatch):
    """`finished` gives up after its deadline with the usual causes of a kernel that never returns; `check` stops at
    the first such launch (nothing else can run on the GPU) and reports it as the diagnosis."""
    with pytest.raises(exercises.Hung, match="did not finish within 0 s.*mbarrier.*restart the Python kernel"):
        exercises.finished((64, 64, 64), within=0.01, is_done=lambda: False)
    exercises.finished((64, 64, 64), within=0.01, is_done=lambda: True)
    monkeypatch.setattr(run, "faults", lambda *a, **k: contextlib.nullcontext())
    calls = []

    def trial(sub, params, shape, **_):
        calls.append(shape)
        if len(calls) == 2:
            raise exercises.Hung("it did not finish")
        return "", 0.0

    sub = exercises.submission(SOURCE, "smem_tiled")
    why, passed = exercises.check(sub, catalog.validate(sub, {"BM": 16, "BN": 16, "BK": 16}), 64, trial=trial)
    assert why == "it did not finish" and len(passed) == 1 and len(calls) == 2


def test_a_variant_names_its_own_likelier_cause():
    """Where a variant names a cause of its own, a wrong value and a race are explained by it instead of the generic
    indices or __syncthreads."""
    rng = np.random.default_rng(0)
    ref = rng.uniform(-1, 1, (6, 5))
    c = ref.copy()
    c[3, 2] += 0.5
    cause = exercises.cause_of("ozaki_by_thread")
    wrong = exercises.diagnose(_guarded(c), _guarded(c), ref, c.shape, 1e-5, 1.0, (4, 4), False, cause=cause)
    assert wrong.endswith(cause) and "indices" not in wrong, wrong
    raced = exercises.diagnose(_guarded(c), _guarded(ref), ref, c.shape, 1e-5, 1.0, (4, 4), False, cause=cause)
    assert "a race" in raced and cause in raced and "__syncthreads" not in raced, raced
    assert exercises.cause_of("smem_tiled") == "" and exercises.cause_of("ring_producer")


def test_the_ozaki_exercise_carries_the_schemes_constants():
    """The one-thread Ozaki kernel's moduli, CRT weights and P are `ozaki`'s for eight moduli, as doubles."""
    from gemm_lab.precision import ozaki

    text = exercises.spec_of("ozaki_by_thread").path.read_text()
    moduli = [int(x) for x in re.search(r"MODULUS\[MODULI\] = \{([^}]*)\}", text).group(1).split(",")]
    weights = [float(x) for x in re.search(r"WEIGHT\[MODULI\] = \{([^}]*)\}", text).group(1).split(",")]
    assert int(re.search(r"constexpr int MODULI = (\d+);", text).group(1)) == len(moduli) == 8
    assert tuple(moduli) == ozaki.MODULI[:8] and weights == [float(w) for w in ozaki.weights(8)]
    assert float(re.search(r"constexpr double P = ([^;]+);", text).group(1)) == float(ozaki.product(8))


@pytest.mark.parametrize("name", list(exercises.VARIANTS))
def test_each_variant_is_a_kernel_the_book_does_not_show(name):
    """Its solution lies in kernels/exercises/ and defines its function; its defaults pass its rules; it stores only
    A, B and C column-major."""
    variant = exercises.VARIANTS[name]
    spec = variant.spec
    assert spec.path.parent == catalog.ROOT / variants.SOLUTIONS and f"{spec.function}(" in spec.path.read_text()
    assert name not in catalog.KERNELS and catalog.validate(spec) == spec.full_params()
    assert set(variant.column_major) <= set(variants.OPERANDS)
    headers = re.findall(r'^#include "([^"]+)"', spec.path.read_text(), re.M)  # found in kernels/, as a submission's
    assert all(f'#line 1 "{h}"' in spec.source_text() for h in headers)


BROKEN = {
    "index": ("acc += As[tr][kk] * Bs[kk][tc];", "acc += As[kk][tr] * Bs[tc][kk];", ("indices", "transpose")),
    "barrier": ("__syncthreads();  // the tiles are complete before anyone reads them", "",
                ("race", "wrong", "written")),
    # right on the small shapes, wrong at the timing size: the check at that size names a race (issue 40)
    "second_barrier": ("__syncthreads();  // everyone is done reading before the next copy overwrites them", "",
                       ("race",)),
    "tail": ("store_c(C, row0 + tr, col0 + tc, M, N, alpha, beta, acc);",
             "C[(row0 + tr) * N + col0 + tc] = alpha * acc;", ("outside C", "written", "edge")),
}


@pytest.mark.gpu
def test_the_books_kernel_passes_and_is_timed():
    attempt = gl.submit(SOURCE, "smem_tiled", size=1024)
    assert attempt.ok and len(attempt.checked) >= 5 and len(attempt.timed) == 2
    assert attempt.timed[0].gflops > 0 and submissions.scoreboard()[-1]["like"] == "smem_tiled"


@pytest.mark.gpu
@pytest.mark.parametrize("bug", list(BROKEN))
def test_each_broken_variant_is_caught_with_its_diagnosis(bug):
    old, new, words = BROKEN[bug]
    assert old in SOURCE
    attempt = gl.submit(SOURCE.replace(old, new), "smem_tiled", {"BM": 16, "BN": 16, "BK": 16})
    assert attempt.compiled and attempt.wrong and any(w in attempt.wrong for w in words), attempt.wrong


@pytest.mark.parametrize("name", list(exercises.KERNEL_EXERCISES))
def test_each_write_the_kernel_exercise_has_its_holes_and_its_solution_compiles(name):
    """The skeleton removes every hole's line (each in the file exactly once); the solution (the variant's file)
    compiles offline as a submission, at the exercise's parameters and at the variant's defaults, without spills
    (CPU: CI runs this)."""
    pytest.importorskip("cuda.bindings.nvrtc")  # the offline extra
    exercise = exercises.KERNEL_EXERCISES[name]
    assert exercise.like in exercises.VARIANTS and exercises.spec_of(exercise.like).chapter == exercise.chapter
    source = exercises.spec_of(exercise.like).path.read_text()
    skeleton = exercises.skeleton(name)
    assert skeleton.count("// TODO: ") == len([hole for hole in exercise.holes if hole.hint])  # a block: one TODO
    assert all(hole.line not in skeleton for hole in exercise.holes)
    assert all(source.count(m.line) == 1 and m.written != m.line and m.named for m in exercise.mistakes)
    defaults = exercises.spec_of(exercise.like).full_params()
    for params in [exercise.params] + ([defaults] if defaults != exercise.params else []):
        attempt = gl.submit(source, exercise.like, params)
        assert attempt.compiled and attempt.spills == 0, attempt.compile_log


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", list(exercises.KERNEL_EXERCISES))
def test_each_planted_mistake_compiles(name):
    """Each planted mistake applies to the solution's file and compiles, so that on a GPU it is the check, not the
    compiler, that names it (the exhaustive tier: a compile per mistake)."""
    pytest.importorskip("cuda.bindings.nvrtc")  # the offline extra
    exercise = exercises.KERNEL_EXERCISES[name]
    source = exercises.spec_of(exercise.like).path.read_text()
    for mistake in exercise.mistakes:
        attempt = gl.submit(source.replace(mistake.line, mistake.written), exercise.like, exercise.params)
        assert attempt.compiled, (mistake.written, attempt.compile_log)


def _planted(name: str, mistake: exercises.Mistake | None = None) -> exercises.Attempt:
    """Exercise `name`'s solution, or the solution with `mistake` planted, submitted at the exercise's parameters."""
    exercise = exercises.KERNEL_EXERCISES[name]
    source = exercises.spec_of(exercise.like).path.read_text()
    return gl.submit(source.replace(mistake.line, mistake.written) if mistake else source, exercise.like,
                     exercise.params)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(exercises.KERNEL_EXERCISES))
def test_each_solution_passes_and_each_broken_one_is_named(name):
    """At the default timing size (2048), which `submit` checks too: a race that small shapes miss shows there. The
    mistakes that may hang the GPU are the next test's."""
    attempt = _planted(name)
    assert attempt.ok and attempt.checked[-1][0] == (2048,) * 3 and len(attempt.timed) == 2, attempt.wrong
    for mistake in (m for m in exercises.KERNEL_EXERCISES[name].mistakes if not m.hangs):
        attempt = _planted(name, mistake)
        assert attempt.compiled and attempt.wrong and any(w in attempt.wrong for w in mistake.named), \
            (mistake.written, attempt.wrong)


HANGING = [(name, i) for name, e in exercises.KERNEL_EXERCISES.items() for i, m in enumerate(e.mistakes) if m.hangs]


@pytest.mark.gpu
@pytest.mark.parametrize("name,index", HANGING, ids=[f"{n}-{i}" for n, i in HANGING])
def test_a_mistake_that_may_hang_is_named_in_a_process_of_its_own(name, index):
    """A wait that nothing completes leaves the GPU running the kernel until its process ends: each such mistake is
    submitted in a fresh process, which prints the diagnosis and leaves without waiting for the GPU (os._exit)."""
    import subprocess
    import sys

    mistake = exercises.KERNEL_EXERCISES[name].mistakes[index]
    code = ("import os, sys\nsys.path.insert(0, 'tests')\nfrom test_exercises import _planted\n"
            "from gemm_lab.pages import exercises\n"
            f"mistake = exercises.KERNEL_EXERCISES[{name!r}].mistakes[{index}]\n"
            f"attempt = _planted({name!r}, mistake)\n"
            "print('WRONG:', attempt.compiled, attempt.wrong, flush=True)\nos._exit(0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         cwd=catalog.ROOT).stdout.replace("\x00", " ")  # a hung launch's process printed NULs
    assert "WRONG: True" in out and any(w in out for w in mistake.named), (mistake.written, out)


@pytest.mark.parametrize("name", list(gl.questions.QUESTIONS))
def test_each_question_asks_with_its_givens_and_judges_an_answer(name, replay):
    from gemm_lab.pages import questions

    q = questions.QUESTIONS[name]
    right, how = q.solve()
    assert math.isfinite(right) and how and q.ask()
    assert str(gl.answer(name, right)).startswith("Right") and "None" in str(gl.answer(name, None))
    assert str(gl.answer(name, right * 3 + 7)).startswith("Not quite") and how in str(gl.answer(name, right * 3 + 7))
    with pytest.raises(TypeError, match="answer a number"):
        gl.answer(name, "8")


def test_every_chapter_from_the_primer_to_chapter_10_has_two_questions():
    from collections import Counter

    from gemm_lab.pages import questions

    count = Counter(q.chapter for q in questions.QUESTIONS.values())
    chapters = ["gpu_primer", *sorted(p.stem for p in (catalog.ROOT / "book").glob("ch*.md"))]
    assert all(count[c] >= 2 for c in chapters if c != "ch07b_pipelined_warp_tiling"), count
