"""Bad input to the core's calls, the pages' helpers, `gemm-lab` and the environment is refused at once with an error
that names the argument, what was given and what is allowed (never a bare KeyError, a value truncated into another
instance, nor a typo dropped in silence); NumPy numbers are numbers."""
import numpy as np
import pytest

import gemm_lab as gl
from gemm_lab import compiler, device, liverun, records, spec, timing
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


# Round 2: submit's signature, files and includes; listings' lines, markers and flags; the explorers' sweeps and
# arguments; gemm-lab's options that would be dropped in silence

WARP_DOT = exercises.spec_of("warp_dot").path.read_text()


def test_submit_compares_the_contracts_types_in_order_and_leaves_the_names_free(monkeypatch):
    monkeypatch.setattr(compiler, "offline", lambda *a: pytest.fail("compiled a refused submission"))
    monkeypatch.setattr(compiler, "load", lambda *a: pytest.fail("compiled a refused submission"))
    head = (r"sgemm_warp_dot must take the book's contract \(int M, int N, int K, float alpha, const float\* A, .*\), "
            r"these types in this order \(the names are yours\): its parameter ")
    for old, new, differs in (
            ("int M, int N, int K, float alpha,", "float alpha, int M, int N, int K,",
             "1 is `float alpha`, where the contract has `int M`"),
            ("float alpha,", "int alpha,", "4 is `int alpha`, where the contract has `float alpha`"),
            ("float* __restrict__ C", "double* __restrict__ C",
             r"8 is `double\* __restrict__ C`, where the contract has `float\* C`")):
        with pytest.raises(ValueError, match=head + differs):
            gl.submit(WARP_DOT.replace(old, new), "warp_dot")
    renamed = WARP_DOT.replace("const float* __restrict__ A", "float const *__restrict__ a_in")
    assert exercises.submission(renamed, "warp_dot").text == renamed


def test_lines_past_the_end_of_a_file_are_refused_at_once():
    lines = gl.excerpt("naive").lines[-1].new
    with pytest.raises(ValueError, match=f"highlight='1-100000000': kernels/01_naive.cu has {lines} lines, so there "
                                         "is no line 100000000"):
        gl.excerpt("naive", highlight="1-100000000")
    with pytest.raises(ValueError, match="skip='1-99999': kernels/05_thread_tile_2d.cu has .* lines, so there is no "
                                         "line 99999"):
        gl.changes("thread_tile_2d", skip="1-99999")


def test_a_skeleton_is_saved_to_a_file_in_a_folder_that_exists(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = gl.skeleton("warp_per_output")
    with pytest.raises(IsADirectoryError, match=f"'{tmp_path}' is a folder: save the source to a file's path in it, "
                                                "such as '.*exercise.cu'"):
        source.save(tmp_path)
    with pytest.raises(FileNotFoundError, match="no folder 'no/such/dir' .* to save x.cu in: create it first"):
        source.save("no/such/dir/x.cu")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("call, error, match", [
    (lambda: gl.excerpt("naive", function=""), ValueError, "function must be a non-empty str .*, not ''"),
    (lambda: gl.excerpt("naive", start_at=""), ValueError, "start_at must be a non-empty str .*, not ''"),
    (lambda: gl.excerpt("naive", skip_block=""), ValueError, "skip_block must be a non-empty str .*, not ''"),
    (lambda: gl.changes("thread_tile_2d", context=-1), ValueError,
     "context=-1: the unchanged lines shown around a change are 0 or more"),
    (lambda: gl.changes("thread_tile_2d", context="three"), TypeError,
     r"context \(unchanged lines around a change\) must be an integer, not 'three'"),
    (lambda: gl.changes("mma_tf32_tma", against="mma_tf32", whole_file="no"), TypeError,
     "whole_file must be True or False, not 'no'"),
])
def test_listings_refuse_empty_markers_a_bad_context_and_a_flag_that_is_no_bool(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_slider_explorer_refuses_a_flag_that_is_no_bool_and_axes_the_kernel_lacks(replay):
    with pytest.raises(TypeError, match="sliders_in_replay must be True or False, not 'no'"):
        tile_explorer("smem_tiled", 2048, sliders_in_replay="no")
    with pytest.raises(ValueError, match="smem_tiled has no parameter ZZ; pick x and y from BM, BN, BK"):
        tile_explorer("smem_tiled", 2048, x="ZZ", y="QQ", sliders_in_replay=True)


def test_gemm_lab_refuses_options_that_would_be_dropped_in_silence(replay, monkeypatch, capsys):
    monkeypatch.setattr(timing, "bench", lambda *a, **k: pytest.fail("timed what was refused"))
    with pytest.raises(SystemExit) as refused:
        cli.main(["bench", "naive", "--size", "2048", "--shape", "4096", "4096", "4096"])
    assert refused.value.code == 2
    assert "argument --shape: not allowed with argument --size" in capsys.readouterr().err
    assert cli.main(["bench", "smem_tiled", "--param", "BM=64", "--param", "BM=128"]) == 2
    assert "--param BM=64, BM=128: give each parameter once" in capsys.readouterr().err
    assert cli.main(["records", "--workers", "3"]) == 2
    assert "--workers 3 counts the processes compiling for --pin: give --pin too" in capsys.readouterr().err
    assert cli.main(["bench", "cublas"]) == 2
    assert "cublas: cuBLAS is no kernel to bench; every bench times it already" in capsys.readouterr().err


def test_submit_reads_what_names_a_file_as_a_path_without_a_bom_and_refuses_what_is_not_utf8(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(compiler, "offline", lambda *a: pytest.fail("compiled a refused submission"))
    for name in ("good.txt", "UPPER.CU", "my_kernel", "good.cu\n"):
        with pytest.raises(FileNotFoundError, match=f"no file '{name.strip()}' .*: submit reads a string of one line "
                                                    "that ends in .cu, .cuh or .txt, or has no spaces or braces, as a "
                                                    "file's path"):
            gl.submit(name, "warp_dot")
    (tmp_path / "bom.cu").write_bytes(b"\xef\xbb\xbf" + WARP_DOT.encode())
    assert exercises.submission("bom.cu", "warp_dot").text == WARP_DOT
    (tmp_path / "latin.cu").write_bytes(WARP_DOT.encode() + b"// caf\xe9\n")
    with pytest.raises(ValueError, match="latin.cu is not UTF-8 text .*: save the kernel as UTF-8"):
        gl.submit("latin.cu", "warp_dot")


def test_submit_names_an_include_that_kernels_lacks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(compiler, "offline", lambda *a: pytest.fail("compiled a refused submission"))
    (tmp_path / "helper.cuh").write_text("// a helper beside the reader's kernel, where includes are not looked for\n")
    (tmp_path / "mine.cu").write_text('#include "helper.cuh"\n' + WARP_DOT)
    with pytest.raises(FileNotFoundError, match=r"mine.cu includes \"helper.cuh\", which is not in .*kernels: a "
                                                r"submission's includes are looked for there, among the book's "
                                                r"headers \(.*tiles.cuh"):
        gl.submit("mine.cu", "warp_dot")


def test_submit_stands_in_only_for_a_kernel_that_takes_the_contract_named_by_a_string():
    with pytest.raises(ValueError, match=r"ozaki is the Ozaki scheme's INT8 products, which take residues, not the "
                                         r"book's contract: a submission stands in for a kernel of the catalog "
                                         r"\(naive, .*\) or an exercise's variant \(warp_dot, "):
        gl.submit(WARP_DOT, "ozaki")
    with pytest.raises(TypeError, match=r"like names the kernel yours stands in for, a str such as 'warp_dot', not "
                                        r"\['warp_dot'\]"):
        gl.submit(WARP_DOT, ["warp_dot"])


@pytest.mark.parametrize("kernel, size, x, y", [("ozaki", 2048, "BN", "MODULI"),
                                               ("vectorized_parts", 4096, "BN", "BM")])
def test_an_explorer_of_a_kernel_without_a_sweep_says_so(replay, kernel, size, x, y):
    for explorer in (sweep_explorer, tile_explorer):
        with pytest.raises(LookupError, match=f"{kernel} has no recorded sweep at any size; the kernels with one are "
                                              "naive, coalesced, smem_tiled, "):
            explorer(kernel, size, x=x, y=y)


def test_explorers_and_excerpts_name_an_argument_of_the_wrong_type(replay):
    from gemm_lab.pages.widgets import bank_explorer

    with pytest.raises(TypeError, match="extra must be a function of the parameters that returns a Figure, not 'nope'"):
        tile_explorer("smem_tiled", 2048, extra="nope", sliders_in_replay=True)
    with pytest.raises(TypeError, match=r"size \(M = N = K, one integer\) must be an integer, not \(4096, 4096, "):
        bank_explorer((4096,) * 3)
    for source in (None, 123):
        with pytest.raises(TypeError, match=rf"source must be a kernel's name or the name of a file of kernels/ \(a "
                                            rf"str\), not {source}"):
            gl.excerpt(source)
    with pytest.raises(TypeError, match="function must be a non-empty str .*, not 123"):
        gl.excerpt("naive", function=123)
    with pytest.raises(TypeError, match="start_at must be a non-empty str .*, not 5"):
        gl.excerpt("naive", start_at=5)


@pytest.mark.parametrize("value, on", [("0", False), ("", False), ("no", False), ("False", False), (" 0", False),
                                       ("1", True), ("yes", True), ("ON", True)])
def test_an_on_off_variable_means_what_it_says(monkeypatch, value, on):
    monkeypatch.setenv(device.REPLAY_ENV, value)
    assert device.env_flag(device.REPLAY_ENV) is on


def test_an_on_off_variable_refuses_other_words(monkeypatch):
    monkeypatch.setenv(device.REPLAY_ENV, "bogus")
    with pytest.raises(ValueError, match="GEMM_LAB_REPLAY='bogus': set it to 1"):
        device.forced_replay()


def test_a_budget_takes_its_measurements_gpus_ceilings_and_refuses_the_ozaki_pipeline(replay):
    with pytest.raises(ValueError, match="pipeline of some twenty kernels"):
        gl.budget("ozaki")
    other = next(g for g in records.recorded_gpus() if g != device.replay_gpu())
    theirs = next(x for x in gl.measurements("warp_tiling", other) if x.m == 4096)
    with pytest.raises(ValueError, match=f"ceilings are {device.replay_gpu()}'s and the measurement {other}'s"):
        gl.budget("warp_tiling", theirs.params, ceilings=gl.ceilings(), measured=theirs)
    assert gl.budget("warp_tiling", theirs.params, measured=theirs).measured is theirs


def test_every_recorded_measurement_has_a_baseline_name(replay):
    assert "INT8 for kernel 15" in gl.measurements_table(gl.measurements())._repr_html_()


def test_measure_needs_a_kind():
    with pytest.raises(ValueError, match="one or more of all, races"):
        gl.measure()


def test_a_page_is_one_of_the_books_and_a_case_has_three_parts(replay):
    with pytest.raises(ValueError, match="no book page 'ch99'; the pages are intro, "):
        gl.budget("warp_tiling", upto="ch99")
    with pytest.raises(ValueError, match="no book page 'ch99_nope'"):
        gl.banner("ch99_nope")
    with pytest.raises(ValueError, match=r"\(kernel, params, size\) cases"):
        gl.bench_all([("naive", 4096)])
    with pytest.raises(TypeError, match="parameters must be True or False"):
        gl.measurements_table(gl.measurements("naive"), parameters="no")


def test_models_and_pictures_refuse_instances_and_shapes_the_kernels_refuse(replay):
    from gemm_lab.models import banks, model
    from gemm_lab.pages import diagrams

    for call in (lambda: diagrams.warp_tiles({"WM": 48}), lambda: diagrams.tma_boxes({"BM": 512}),
                 lambda: diagrams.outer_product({"TM": 3}), lambda: banks.sites("thread_tile_2d", {"TM": 3}),
                 lambda: model.reuse("wgmma_ws_tf32", {"CLUSTER": 3})):
        with pytest.raises(ValueError, match="breaks a rule|must be|not offered|one of"):
            call()
    with pytest.raises(ValueError, match="every dimension must be at least 1"):
        banks.predict("smem_tiled", -4096, 4096, 4096)
    with pytest.raises(ValueError, match="every dimension must be at least 1"):
        model.global_load_bytes("smem_tiled", -4096, 4096, 4096)
    with pytest.raises(ValueError, match="multiple"):
        model.speed_of_light("mma_tf32_tma", None, (4096, 4094, 4094), gl.ceilings())


def test_kernel_15_has_no_moduli(replay):
    from gemm_lab.precision import int8

    with pytest.raises(ValueError, match="has no MODULI"):
        int8.bench(4096, {"MODULI": 9})


def test_gpu_bars_need_recorded_gpus_and_a_size(replay):
    from gemm_lab.pages import plots

    with pytest.raises(ValueError, match="no records of 'nope'; the recorded GPUs are"):
        plots.gpu_bars(["naive"], 4096, ["nope"])
    with pytest.raises(ValueError, match="every dimension must be at least 1"):
        plots.gpu_bars(["naive"], -4, records.recorded_gpus())


@pytest.mark.parametrize("words,kw,message", [
    ([1.5], {}, "word offset must be an integer, not 1.5"), ([], {}, "0 lanes; a warp has 1 to 32"),
    (list(range(33)), {}, "33 lanes"), ([-1], {}, "word offset -1"), ([0], {"width": 12}, "width 12 bytes"),
    ([2], {"width": 16}, "word offset 2 is not aligned to 16-byte"), ([0], {"per_step": 0}, "per_step 0"),
    ([0], {"store": 1}, "store must be True or False")])
def test_a_bank_access_is_one_warps_aligned_request(words, kw, message):
    from gemm_lab.models import banks

    with pytest.raises((ValueError, TypeError), match=message):
        banks.access("x", words, **kw)


@pytest.mark.parametrize("args,message", [((0, 32, 0), r"threads 0: from 1 to 1024 \(a block\)"),
                                          ((2048, 32, 0), "threads 2048"), ((256, 256, 0), "registers 256"),
                                          ((256, 32, -1), "smem_bytes -1"), ((256, 32, 10**6), "smem_bytes 1000000"),
                                          ((256.5, 32, 0), "threads must be an integer")])
def test_occupancy_takes_a_block_the_sm_can_hold(args, message):
    from gemm_lab.models import model

    with pytest.raises(ValueError, match=message):
        model.occupancy(*args)


def test_the_quarter_warp_picture_names_a_parameter_neither_kernel_has():
    from gemm_lab.pages import diagrams

    with pytest.raises(ValueError, match="BMX is not a parameter of kernel 10 or 10b"):
        diagrams.quarter_warps({"BMX": 64})


def test_the_ozaki_defaults_resources_ask_for_the_instance_a_call_launches():
    with pytest.raises(ValueError, match=r"chooses the instance it launches \(MODULI = 6, 7, 8, 9\)"):
        gl.resources("ozaki")


@pytest.mark.parametrize("call,message", [
    (lambda d: d.lane_position(40, gl.KERNELS["warp_tiling"].full_params()), "lane = 40: a warp has lanes 0 to 31"),
    (lambda d: d.ldmatrix_rows(2.5), "lane must be an integer, not 2.5"),
    (lambda d: d.swizzle_offset(-16), "offset = -16"),
    (lambda d: d.pipeline(gl.KERNELS["prefetch"].full_params(), steps=0), "steps = 0: a timeline shows at least one"),
    (lambda d: d.pipeline(gl.KERNELS["prefetch"].full_params(), latency=-5), "a duration of -5 clocks"),
    (lambda d: d.handoff_schedule(gl.KERNELS["mma_tf32_tma"].full_params(), 4, 100, True), "a duration of True")])
def test_the_diagrams_lanes_offsets_and_timelines_are_checked(call, message):
    from gemm_lab.pages import diagrams

    with pytest.raises(ValueError, match=message):
        call(diagrams)


@pytest.mark.parametrize("kernel", ["mma_tf32", "wgmma_ws_3xtf32", "ozaki"])
def test_the_levels_figure_refuses_a_tensor_core_kernel(kernel):
    from gemm_lab.pages import diagrams

    with pytest.raises(ValueError, match=f"levels draws FFMA kernels.*{kernel}"):
        diagrams.levels(kernel, {}, {}, 128)
