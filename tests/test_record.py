"""What `gemm-lab record` measures, on the CPU with a stand-in GPU: the tensor-core kernels with the headline and
in the error-vs-K figure (in short races: it plots errors alone), cuBLAS in both maths, and a kernel the GPU
cannot run skipped with the reason."""
from types import SimpleNamespace

import pytest

from gemm_lab import catalog, device, records, timing, turns
from gemm_lab.lab import cli, freshness, plan, sweeps
from gemm_lab.pages import grids

PARTS = ["--only", "device", "--only", "headline", "--only", "sweeps", "--only", "tensor_cores"]


@pytest.fixture
def recorder(monkeypatch):
    """A live stand-in GPU on which `record` measures nothing: the returned dict collects what it was asked for."""
    asked = {"cases": [], "cublas": [], "sweeps": [], "methods": {}, "pins": 0}  # methods: each case's race
    monkeypatch.setattr(device, "live", lambda: True)
    monkeypatch.setattr(cli.hardware, "measured_ceilings", lambda: {})
    monkeypatch.setattr(cli.hardware, "save_ceilings", lambda ceilings: None)
    monkeypatch.setattr(records, "save", lambda ms: list(ms))
    monkeypatch.setattr(timing, "cublas", lambda size, math="fp32", method=turns.SUSTAINED:
                        asked["cublas"].append((size, math, method.name)))
    def bench_all(cases, desc="", method=turns.SUSTAINED, **kw):
        cases = list(cases)
        asked["cases"].extend(cases)
        asked["methods"].update({plan.case_key(*c): method for c in cases})

    monkeypatch.setattr(timing, "bench_all", bench_all)
    monkeypatch.setattr(sweeps, "sweep", lambda name, size, choices, **kw: asked["sweeps"].append(name))
    monkeypatch.setattr(cli, "_recorded", lambda *case, **kw: False)
    monkeypatch.setattr(records, "lookup_or_none", lambda *a, **k: None)  # nothing recorded yet, cuBLAS included
    monkeypatch.setattr(freshness, "pin", lambda workers=None: asked.update(pins=asked["pins"] + 1) or (0, 0))
    monkeypatch.setattr(freshness, "adopt", lambda: 0)  # it would rewrite the repository's records
    return asked


def test_the_error_vs_k_plan():
    assert tuple((1024, 1024, k) for k in (64, 256, 1024, 4096, 16384, 65536)) == plan.ERROR_VS_K
    assert plan.ERROR_VS_K_KERNELS == ("warp_tiling", "mma_tf32", "mma_3xtf32", "mma_tf32_tma", "wgmma_tf32",
                                       "wgmma_3xtf32", "wgmma_ws_tf32", "wgmma_ws_3xtf32")
    assert len(plan.error_vs_k_cases()) == 6 * 8 and all(p is None for _, p, _ in plan.error_vs_k_cases())
    for name in plan.TENSOR_CORES:  # every size and the odd shape at the defaults, like every other kernel
        odd = [plan.ODD_SHAPE] if name in plan.ODD_SHAPE_KERNELS else []  # the TMA kernel refuses N, K % 4 != 0
        assert [s for k, p, s in plan.headline_cases() if k == name] == [*plan.SIZES, *odd]
    assert "mma_tf32_tma" not in plan.ODD_SHAPE_KERNELS and "mma_tf32" in plan.ODD_SHAPE_KERNELS


def test_on_hopper_everything_is_recorded_with_cublas_in_both_maths(recorder, monkeypatch, capsys):
    monkeypatch.setattr(device, "gpu", lambda: SimpleNamespace(name="NVIDIA H100 80GB HBM3", cc=(9, 0)))
    assert cli.main(["record", *PARTS]) == 0
    assert "skipping" not in capsys.readouterr().out
    assert recorder["pins"] == 1  # the code of what it recorded, for `records --check` after a refactor
    cases = recorder["cases"]
    assert all(case in cases for case in plan.headline_cases() + plan.error_vs_k_cases())
    # the error-vs-K figure plots errors alone, so its races are short, except those a page quotes (K = 1024)
    quoted = plan.quoted_keys()
    methods = recorder["methods"]
    assert all(methods[plan.case_key(*c)] is turns.SHORT for c in plan.error_vs_k_cases() if c[2][2] != 1024)
    assert all(m is not turns.SHORT for key, m in methods.items() if key in quoted)
    assert recorder["sweeps"] == list(grids.SWEEPS) and {"mma_tf32", "wgmma_tf32"} <= set(grids.SWEEPS)
    # cuBLAS alone: sustained at the headline's sizes (which include K = 1024 of error vs K), short at the others
    errors_only = [s for s in plan.ERROR_VS_K if s != (plan.SIZES[0],) * 3]
    maths = ("fp32", "tf32")
    assert recorder["cublas"] == [(s, math, "sustained") for s in (*plan.SIZES, plan.ODD_SHAPE) for math in maths] \
        + [(s, math, "short") for s in errors_only for math in maths]


def test_a_kernel_the_gpu_cannot_run_is_skipped_saying_why(recorder, monkeypatch, capsys):
    monkeypatch.setattr(device, "gpu", lambda: SimpleNamespace(name="NVIDIA A100-SXM4-80GB", cc=(8, 0)))
    assert cli.main(["record", *PARTS]) == 0
    out = capsys.readouterr().out
    for name in ("wgmma_tf32", "wgmma_3xtf32"):
        assert f"skipping {name}: {catalog.unsupported(name, (8, 0))}" in out
        assert name not in {k for k, _, _ in recorder["cases"]} | set(recorder["sweeps"])
    assert {"mma_tf32", "mma_3xtf32", "warp_tiling"} <= {k for k, _, _ in recorder["cases"]}
    assert "mma_tf32" in recorder["sweeps"]
