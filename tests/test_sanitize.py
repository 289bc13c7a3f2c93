"""`gemm-lab sanitize` without a GPU: what it runs, how it reads the tool's verdict, what it records, and that
it refuses clearly where it cannot run. The tool itself is a stand-in here; benchmarks/trust.py runs it."""
import json
import re
import subprocess
from types import SimpleNamespace

import pytest

from gemm_lab import catalog, compiler, device, folders, records
from gemm_lab.lab import cli, freshness, plan, sanitize
from gemm_lab.pages import grids

GPU = SimpleNamespace(name="Test GPU", cc=(9, 0), driver="580.65", cuda_runtime="13.0", cupy="14.0.0")


def test_cases_are_the_defaults_and_boundaries_on_tail_shapes():
    for spec in catalog.KERNELS.values():
        cases = sanitize.cases(spec)
        params = [c["params"] for c in cases]
        grid, everything = catalog.legal_grid(spec, grids.SWEEPS.get(spec.name)), catalog.legal_grid(spec)
        extra = [spec.full_params(p) for p in plan.SANITIZE_EXTRA.get(spec.name, ())]
        for p in (spec.full_params(), grid[0], grid[len(grid) // 2], grid[-1], *extra):
            assert p in params, (spec.name, p)
        threads = {spec.threads(p) for p in params}
        assert {min(map(spec.threads, everything)), max(map(spec.threads, everything))} <= threads
        assert len({json.dumps(p) for p in params}) == len(params)  # no case twice
        for case in cases:
            bm, bn = spec.tile(case["params"])
            shapes = [tuple(s) for s in case["shapes"]]
            assert any(m % bm == 1 for m, n, k in shapes) and any(m % bm == bm - 1 for m, n, k in shapes)
            assert any(m % bm == 0 and n % bn == 0 and k % 64 == 0 for m, n, k in shapes)  # whole tiles
            if spec.tma:  # rows of 16-byte multiples only: tails in N and K against the tile and TMA's 32-float boxes
                assert (1, 4, 4) in shapes and all(n % 4 == 0 and k % 4 == 0 for m, n, k in shapes)
                assert any(n % bn and k % 32 for m, n, k in shapes) and any(n % 32 for m, n, k in shapes)
                continue
            assert (1, 1, 1) in shapes
            assert any(n % 4 and k % 4 for m, n, k in shapes)  # scalar loads of A and B
            assert any(n % 4 == 0 and k % 4 for m, n, k in shapes)  # float4 B and C, scalar A
            assert any(k % 4 == 0 and n % 4 for m, n, k in shapes)  # float4 A, scalar B and C
            for shape in shapes:
                catalog.validate(spec, case["params"], shape)


def test_the_kernel_filter_matches_every_instance_and_only_its_kernel():
    """The prefix that `--kernel-name kns=` gets is how NVRTC mangles each kernel's instances, and no other's: the
    mangled name is the kernel's section in the offline cubin (the compile the other offline tests share)."""
    pytest.importorskip("cuda.bindings.nvrtc")  # the offline extra
    sections = {name: [s.decode() for s in re.findall(rb"\.text\.(_Z\w+)", compiler.cubin(name))]
                for name in catalog.KERNELS}

    def caught(spec, symbol: str) -> bool:
        kind, pattern = sanitize.kernel_filter(spec).split("=")
        return symbol.startswith(pattern) if kind == "kns" else bool(re.search(pattern, symbol))

    for name, spec in catalog.KERNELS.items():
        assert all(caught(spec, symbol) for symbol in sections[name]), (sanitize.kernel_filter(spec), sections[name])
        others = [k for k, symbols in sections.items() if k != name and any(caught(spec, s) for s in symbols)]
        assert others == [], (sanitize.kernel_filter(spec), others)


def test_the_command_checks_one_kernel_in_one_child():
    spec = catalog.get("smem_tiled")
    cases = sanitize.cases(spec)
    cmd = sanitize.command(spec, "memcheck", cases, "/cuda/bin/compute-sanitizer")
    assert cmd[:5] == ["/cuda/bin/compute-sanitizer", "--tool", "memcheck",
                       "--kernel-name", "kns=_Z16sgemm_smem_tiledI"]
    assert "--padding" in cmd and "--error-exitcode" in cmd
    assert cmd[-4:] == ["-m", "gemm_lab.lab.sanitize", "smem_tiled", json.dumps(cases)]
    assert "--padding" not in sanitize.command(spec, "racecheck", cases, "compute-sanitizer")  # memcheck's option


@pytest.mark.parametrize("output,errors", [
    ("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n", 0),
    ("========= Invalid __global__ read of size 4 bytes\n...\n========= ERROR SUMMARY: 1 error\n", 1),
    ("========= ERROR SUMMARY: 1 error\n... ERROR SUMMARY: 12 errors\n", 12),
    ("========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\n", 2),
    ("========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n", 0),
    ("========= Error: Target application terminated before first instrumented API call\n", None),
])
def test_the_error_count_comes_from_the_summary(output, errors):
    assert sanitize.parse_errors(output) == errors


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """records/ in a temporary folder, a live stand-in GPU and a stand-in compute-sanitizer on PATH."""
    monkeypatch.setattr(folders, "RECORDS_DIR", tmp_path)
    monkeypatch.setattr(device, "live", lambda: True)
    monkeypatch.setattr(device, "gpu", lambda: GPU)
    monkeypatch.setattr(sanitize.shutil, "which", lambda exe: f"/cuda/bin/{exe}")
    return tmp_path


def fake_tool(monkeypatch, errors=lambda cmd: 0, returncode=None, done=True):
    """compute-sanitizer as a function of its command line; returns the list of tool runs it was asked for."""
    calls = []

    def run(cmd, **kwargs):
        if cmd[1:] == ["--version"]:
            return subprocess.CompletedProcess(cmd, 0, "Compute Sanitizer\nVersion 2025.3.1.0 (build 1)\n", "")
        calls.append((cmd[cmd.index("--tool") + 1], cmd[-2]))
        n = errors(cmd)
        out = (sanitize.DONE if done else "Traceback: RuntimeError") + f"\n========= ERROR SUMMARY: {n} errors\n"
        status = returncode if returncode is not None else sanitize.ERROR_EXITCODE if n else 0
        return subprocess.CompletedProcess(cmd, status, out, "")

    monkeypatch.setattr(sanitize.subprocess, "run", run)
    return calls


def test_every_run_is_recorded_and_a_second_call_resumes(sandbox, monkeypatch):
    calls = fake_tool(monkeypatch)
    runs = sanitize.sanitize(["naive", "coalesced"], progress=False)
    assert sorted(calls) == sorted((t, k) for k in ("naive", "coalesced") for t in sanitize.TOOLS)
    stored = sanitize.sanitizer_runs(GPU.name)
    assert sorted(stored, key=str) == sorted(runs, key=str) and len(stored) == 8
    row = stored[0].to_row()
    spec = catalog.get(row["kernel"])
    assert row["errors"] == 0 and row["cases"] == sanitize.cases(spec) and row["build_sha256"] == spec.build_sha256()
    assert row["versions"] == {"driver": "580.65", "cuda_runtime": "13.0", "cupy": "14.0.0",
                               "compute_sanitizer": "2025.3.1.0"}
    table = sanitize.summary(stored)
    assert table.columns == ("kernel", *sanitize.TOOLS) and {r[0] for r in table.rows} == {"naive", "coalesced"}
    assert all(r[1:] == ("0",) * 4 for r in table.rows) and "2025.3.1.0" in table.caption
    assert freshness.problems(sandbox) == []  # no other kernel was measured on this GPU
    spec = catalog.get("smem_tiled")
    records.save([records.Measurement(
        kernel=spec.name, source=spec.source, source_sha256=spec.source_sha256(), build_sha256=spec.build_sha256(),
        params=spec.full_params(),
        m=64, n=64, k=64, precision="fp32", gflops=1.0, cublas_gflops=2.0, max_rel_err=1e-7, gpu=GPU.name,
        recorded_at="2026-11-23T00:00:00+00:00")])
    problems = freshness.problems(sandbox)  # measured, never sanitized
    assert len(problems) == 4 and all("smem_tiled has no" in p for p in problems)

    again = fake_tool(monkeypatch)
    assert sanitize.sanitize(["naive", "coalesced"], progress=False) == runs and again == []
    sanitize.sanitize(["naive"], ["initcheck"], fresh=True, progress=False)
    assert again == [("initcheck", "naive")]


def test_errors_are_recorded_and_fail_the_command(sandbox, monkeypatch, capsys):
    fake_tool(monkeypatch, errors=lambda cmd: 3 if "racecheck" in cmd else 0)
    assert cli.main(["sanitize", "smem_tiled"]) == 1
    out = capsys.readouterr().out
    assert "smem_tiled" in out and "racecheck" in out
    found = {r.tool: r.errors for r in sanitize.sanitizer_runs(GPU.name)}
    assert found == {"memcheck": 0, "racecheck": 3, "synccheck": 0, "initcheck": 0}
    assert ["racecheck found 3 error(s) in smem_tiled" in p for p in freshness.problems(sandbox)].count(True) == 1


def test_racecheck_of_a_tma_kernel_runs_each_case_alone_and_retries_a_slow_one(sandbox, monkeypatch):
    calls = fake_tool(monkeypatch)
    real = sanitize.subprocess.run
    slow = {"left": 2}

    def run(cmd, **kwargs):  # the first two racecheck children hang
        if "racecheck" in cmd and slow["left"]:
            slow["left"] -= 1
            raise subprocess.TimeoutExpired(cmd, kwargs["timeout"])
        return real(cmd, **kwargs)

    monkeypatch.setattr(sanitize.subprocess, "run", run)
    spec = catalog.get("wgmma_ws_tf32")
    (race,) = sanitize.sanitize([spec.name], ["racecheck"], progress=False)
    shapes = sum(len(c["shapes"]) for c in sanitize.cases(spec))
    assert race.errors == 0 and calls.count(("racecheck", spec.name)) == shapes  # each case alone, once it finished
    slow["left"] = sanitize.RACECHECK_TRIES
    with pytest.raises(RuntimeError, match=f"ran past {sanitize.RACECHECK_CASE_S} s 3 times"):
        sanitize.sanitize([spec.name], ["racecheck"], fresh=True, progress=False)


@pytest.mark.parametrize("returncode,done", [(1, False), (0, False)])
def test_a_child_that_did_not_finish_is_an_error_not_a_clean_record(sandbox, monkeypatch, returncode, done):
    fake_tool(monkeypatch, returncode=returncode, done=done)
    with pytest.raises(RuntimeError, match="memcheck on naive did not finish"):
        sanitize.sanitize(["naive"], progress=False)
    assert sanitize.sanitizer_runs(GPU.name) == []


def test_without_a_gpu_or_the_tool_nothing_runs(sandbox, monkeypatch, capsys):
    calls = fake_tool(monkeypatch)
    monkeypatch.setattr(device, "live", lambda: False)
    assert cli.main(["sanitize"]) == 2
    assert "none is in use" in capsys.readouterr().err
    monkeypatch.setattr(device, "live", lambda: True)
    monkeypatch.setattr(sanitize.shutil, "which", lambda exe: None)
    with pytest.raises(RuntimeError, match="compute-sanitizer is not on PATH"):
        sanitize.sanitize()
    assert calls == [] and not list(sandbox.iterdir())


def test_unknown_kernels_and_tools_are_refused_before_anything_runs(sandbox, monkeypatch):
    calls = fake_tool(monkeypatch)
    with pytest.raises(ValueError, match="catalog has"):
        sanitize.sanitize(["fastest"])
    with pytest.raises(ValueError, match="the tools are memcheck"):
        sanitize.sanitize(["naive"], ["leakcheck"])
    assert calls == []


def test_kernels_the_gpu_cannot_run_are_skipped_saying_why(sandbox, monkeypatch, capsys):
    calls = fake_tool(monkeypatch)
    monkeypatch.setattr(device, "gpu", lambda: SimpleNamespace(**{**vars(GPU), "cc": (8, 0)}))
    runs = sanitize.sanitize(["wgmma_tf32", "naive"], ["memcheck"], progress=False)
    assert calls == [("memcheck", "naive")] and [r.kernel for r in runs] == ["naive"]
    assert "skipping wgmma_tf32: wgmma_tf32 uses Hopper-only instructions" in capsys.readouterr().out


def test_the_tensor_core_probe_is_checked_by_its_kernels_names():
    probe = catalog.PROBES["tensor_core_peak"]
    line = sanitize.command(probe, "racecheck", sanitize.cases(probe.name), "compute-sanitizer")
    assert line[line.index("--kernel-name") + 1] == "regex=mma_peak|wgmma_peak"
    assert line[-2:] == ["tensor_core_peak", json.dumps([sanitize.PROBE_CASE])]
