"""Bad input to the core's calls, the pages' helpers, `gemm-lab` and the environment is refused at once with an error
that names the argument, what was given and what is allowed (never a bare KeyError, a value truncated into another
instance, nor a typo dropped in silence); NumPy numbers are numbers."""
import numpy as np
import pytest

import gemm_lab as gl
from gemm_lab import compiler, device, liverun, spec, timing
from gemm_lab.lab import cli
from gemm_lab.pages import exercises, questions
from gemm_lab.pages.explorers import sweep_explorer
from gemm_lab.pages.widgets import tile_explorer


@pytest.mark.parametrize("call,name", [(lambda: gl.answer("fp32peak", 66.9), "'fp32peak'"),
                                       (lambda: gl.answer(None, 5), "None"), (lambda: gl.ask("fp32peak"), "'fp32peak'"),
                                       (lambda: questions.publish("fp32peak"), "'fp32peak'")])
def test_an_unknown_question_is_named_with_the_questions_there_are(call, name):
    with pytest.raises(ValueError, match=f"no question {name}; the questions are occupancy, .*, fp32_peak, "):
        call()


@pytest.mark.parametrize("call", [gl.skeleton, exercises.solution, exercises.hole_lines])
def test_an_unknown_exercise_is_named_with_the_exercises_there_are(call):
    with pytest.raises(ValueError, match="no write-the-kernel exercise 'warp_per_outpt'; the exercises are "
                                         "warp_per_output, "):
        call("warp_per_outpt")


def test_numpy_numbers_answer_and_publish(replay):
    right = questions.QUESTIONS["fp32_peak"].solve()[0]
    assert str(gl.answer("fp32_peak", np.float32(right))).startswith("Right")
    assert str(gl.answer("fp32_peak", np.int64(66908))).startswith("Not quite: you said 66,908")
    with pytest.raises(TypeError, match="answer a number, not True"):
        gl.answer("fp32_peak", True)
    published = gl.publish(x=np.int64(3), y=np.float32(1.5))
    assert published == {"x": 3, "y": 1.5} and type(published["x"]) is int and type(published["y"]) is float
    with pytest.raises(ValueError, match="y: nan is no number to print"):
        gl.publish(y=np.float32("nan"))
    with pytest.raises(TypeError, match="x: publish a number or its text, not bool"):
        gl.publish(x=np.bool_(True))


@pytest.mark.parametrize("explorer", [sweep_explorer, tile_explorer])
def test_an_explorer_refuses_axes_the_kernel_lacks(replay, explorer):
    with pytest.raises(ValueError, match="naive has one parameter, BLOCK: the explorer's heatmap needs two"):
        explorer("naive")
    with pytest.raises(ValueError, match="coalesced has one parameter, BLOCK"):
        explorer("coalesced", 2048)
    with pytest.raises(ValueError, match="smem_tiled has no parameter bn; pick x and y from BM, BN, BK"):
        explorer("smem_tiled", 2048, x="bn")
    with pytest.raises(ValueError, match="x and y are both BM"):
        explorer("smem_tiled", 2048, x="BM", y="BM")


def test_an_explorer_takes_the_size_as_a_shape_too(replay):
    title = tile_explorer("smem_tiled", (2048, 2048, 2048)).to_dict()["title"]["text"]
    assert title.startswith("smem_tiled at 2048x2048x2048")
    with pytest.raises(LookupError, match="no recorded sweep of smem_tiled at 2048x1024x2048 on .*; the book's "
                                          "sweeps are at 2048"):
        sweep_explorer("smem_tiled", (2048, 1024, 2048))


def test_an_excerpt_refuses_a_backward_range_and_takes_one_line_as_an_int():
    with pytest.raises(ValueError, match="highlight='5-2': the range 5-2 runs backwards; write it first line to "
                                         "last, 2-5"):
        gl.excerpt("naive", highlight="5-2")
    marked = [x.new for x in gl.excerpt("naive", highlight=14).lines if x.kind == "!"]
    assert marked == [14]
    with pytest.raises(TypeError, match=r"highlight=\[14\]: give a line's number, or lines and ranges as a text"):
        gl.excerpt("naive", highlight=[14])
    with pytest.raises(ValueError, match="skip='9-3': the range 9-3 runs backwards"):
        gl.changes("coalesced", skip="9-3")


def test_bench_refuses_a_parameter_no_kernel_has(replay, monkeypatch, capsys):
    monkeypatch.setattr(timing, "bench", lambda *a, **k: pytest.fail("timed with a parameter dropped"))
    assert cli.main(["bench", "smem_tiled", "--param", "bm=16", "--param", "BLOK=3"]) == 2
    assert "smem_tiled has no parameter BLOK, bm; its parameters are BM, BN, BK" in capsys.readouterr().err
    assert cli.main(["bench", "naive", "smem_tiled", "--param", "BLOK=3"]) == 2
    assert "none of naive, smem_tiled has a parameter BLOK; their parameters are BLOCK, BM, BN, BK" in \
        capsys.readouterr().err


def test_gemm_lab_refuses_sizes_and_counts_below_one(replay, capsys):
    assert cli.main(["bench", "naive", "--size", "0"]) == 2
    assert "every dimension must be at least 1" in capsys.readouterr().err
    for workers in ("-1", "0"):
        with pytest.raises(SystemExit) as refused:
            cli.main(["records", "--pin", "--workers", workers])
        assert refused.value.code == 2
        assert f"argument --workers: must be a whole number of at least 1, not '{workers}'" in capsys.readouterr().err


def test_gemm_lab_measure_is_checked_where_it_is_read(monkeypatch):
    for value in ("bogus", "counters,typo"):
        monkeypatch.setenv(liverun.MEASURE_ENV, value)
        with pytest.raises(ValueError, match=f"GEMM_LAB_MEASURE='{value}' \\(a comma list\\) takes all, races, "
                                             "probes, .*, not '(bogus|typo)'"):
            liverun._kinds_in_env()
    monkeypatch.setenv(liverun.MEASURE_ENV, "counters, sweeps")
    assert liverun._kinds_in_env() == {"counters", "sweeps"}


def test_counters_refuse_metrics_not_recorded_and_take_one_size(replay):
    with pytest.raises(LookupError, match="not recorded: no.such.metric; the recorded metrics of warp_tiling at "
                                          "4096x4096x4096 on .* are dram__bytes_read.sum, "):
        gl.counters("warp_tiling", (4096,) * 3, metrics=("no.such.metric",))
    assert gl.counters("naive", 4096) == gl.counters("naive", (4096,) * 3)


def test_submit_checks_its_size_and_parameters_before_compiling(monkeypatch):
    monkeypatch.setattr(compiler, "offline", lambda *a: pytest.fail("compiled a refused submission"))
    monkeypatch.setattr(compiler, "load", lambda *a: pytest.fail("compiled a refused submission"))
    source = exercises.spec_of("warp_dot").path.read_text()
    with pytest.raises(TypeError, match=r"size \(M = N = K, one integer\) must be an integer, not \(2048, 2048, "):
        gl.submit(source, "warp_dot", size=(2048,) * 3)
    with pytest.raises(ValueError, match="WARPS must be an integer, not 8.5"):
        gl.submit(source, "warp_dot", {"WARPS": 8.5})


# The core's checks: sizes, tile parameters, sweeps' choices, budgets, runs (replay, no GPU needed)

@pytest.mark.parametrize("size, error, match", [
    ("4096", TypeError, "M must be an integer, not '4096'"),
    ((4096, 4096), ValueError, "one integer .* or three"),
    (4096.5, ValueError, "must be an integer, not 4096.5"),
    (True, TypeError, "not True"),
    (0, ValueError, "every dimension must be at least 1"),
    ((4096, -1, 4096), ValueError, "every dimension must be at least 1"),
])
def test_a_size_is_one_integer_or_three(replay, size, error, match):
    with pytest.raises(error, match=match):
        gl.bench("thread_tile_2d", size)


def test_whole_numbers_of_any_type_are_sizes_and_parameters():
    assert spec.shape_of(np.int64(4096)) == spec.shape_of(4096.0) == (4096, 4096, 4096)
    assert gl.validate("thread_tile_2d", {"BM": np.int64(128), "BN": 128.0})["BM"] == 128


@pytest.mark.parametrize("value, error", [(128.7, ValueError), (True, TypeError), ("128", TypeError),
                                          (None, TypeError)])
def test_a_tile_parameter_is_never_truncated_into_another_instance(value, error):
    with pytest.raises(error, match="thread_tile_2d's BM must be an integer"):
        gl.validate("thread_tile_2d", {"BM": value})


def test_a_kernel_is_named_by_a_string():
    with pytest.raises(TypeError, match="named by a string.*gl.gemm"):
        gl.verify(np.ones((4, 4), np.float32), 4096, 4096, 4096)


@pytest.mark.parametrize("choices, error, match", [
    ({"BX": (64,)}, ValueError, "smem_tiled has no parameter BX; its parameters are BM, BN, BK"),
    ({"BM": 64}, TypeError, "a tuple of values"),
    ({"BM": ()}, ValueError, "no values"),
    ({"BM": (64.5,)}, ValueError, "BM must be an integer"),
])
def test_a_sweeps_choices_are_checked(replay, choices, error, match):
    with pytest.raises(error, match=match):
        gl.sweep("smem_tiled", 2048, choices)


def test_a_replayed_sweep_says_what_was_never_timed(replay):
    with pytest.raises(LookupError, match=r"no recorded sweep of smem_tiled at 1000x1000x1000.*recorded sizes"):
        gl.sweep("smem_tiled", 1000)
    with pytest.warns(UserWarning, match="never timed"):
        assert gl.sweep("smem_tiled", 4096)


def test_a_budget_refuses_a_measurement_of_another_kernel_or_size(replay):
    with pytest.raises(ValueError, match="measured is warp_tiling"):
        gl.budget("naive", measured=gl.bench("warp_tiling", 4096))
    with pytest.raises(ValueError, match="not the budget's naive at 2048x2048x2048"):
        gl.budget("naive", size=2048, measured=gl.bench("naive", 4096))
    with pytest.raises(TypeError, match="the second argument is the tile parameters"):
        gl.budget("warp_tiling", 4096)
    with pytest.raises(ValueError, match="must be positive"):
        gl.budget("warp_tiling", l2_gbs=0)


def test_runs_are_checked_in_replay_too(replay):
    with pytest.raises(ValueError, match="runs=-1"):
        gl.bench("thread_tile_2d", 4096, runs=-1)
    with pytest.raises(TypeError, match="runs must be an integer"):
        gl.cublas(4096, runs="many")
    with pytest.raises(TypeError, match="method is a turns.Method"):
        gl.bench("thread_tile_2d", 4096, method="short")


def test_a_misspelt_kernel_has_no_records_rather_than_none():
    with pytest.raises(ValueError, match="no kernel 'smem_tyled'"):
        gl.measurements("smem_tyled")


def test_gemm_names_the_missing_gpu_after_the_kernel(monkeypatch):
    monkeypatch.setattr(device, "gpu_present", lambda: False)
    monkeypatch.setattr(device, "live", lambda: False)
    with pytest.raises(ValueError, match="unknown kernel"):
        gl.gemm("smem_tyled", None, None)
    with pytest.raises(RuntimeError, match="on a CUDA GPU"):
        gl.gemm("smem_tiled", np.ones((64, 64), np.float32), np.ones((64, 64), np.float32))


def test_gemm_lab_gpu_must_name_a_recorded_gpu(monkeypatch):
    monkeypatch.setenv(device.GPU_ENV, "nope")
    with pytest.raises(ValueError, match="GEMM_LAB_GPU='nope'.*nvidia-h200"):
        device.replay_gpu()


def test_a_missing_record_lists_the_shapes_of_every_gpu_looked_on(replay):
    with pytest.raises(LookupError, match=r"K=4100 on .* or .*\(4096, 4096, 4096\)"):
        gl.bench("ozaki", (4096, 4096, 4100))
