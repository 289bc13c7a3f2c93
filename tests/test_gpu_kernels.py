"""On a GPU: every catalogued kernel is right on many shapes, and bad input never launches. A kernel the GPU
cannot run (wgmma off Hopper) is skipped, and so is an instance that needs more shared memory than it has."""
import pytest

from gemm_lab import catalog, device, records, run, timing
from gemm_lab.lab import plan
from gemm_lab.pages import grids
from gemm_lab.spec import round_up

pytestmark = pytest.mark.gpu

# 30+ shapes: tile multiples, one off either side, primes, 1x1x1, K = 1, tall/skinny and wide/short.
SHAPES = [
    (1, 1, 1), (1, 1, 7), (7, 1, 1), (1, 9, 1), (2, 3, 1), (64, 64, 1), (1, 512, 512), (512, 1, 512),
    (512, 512, 1), (17, 19, 23), (31, 33, 29), (33, 31, 65), (63, 65, 64), (64, 64, 64), (65, 63, 127),
    (127, 129, 128), (128, 128, 128), (97, 101, 103), (255, 257, 33), (256, 256, 256), (1000, 3, 1000),
    (3, 1000, 1000), (2048, 16, 8), (16, 2048, 8), (8, 8, 2048), (1001, 517, 333), (333, 1001, 517),
    (513, 511, 257), (1024, 1024, 1024), (1023, 1025, 1000), (4099, 31, 97), (31, 4099, 97),
]


def shapes_for(spec: catalog.KernelSpec) -> list[tuple[int, int, int]]:
    """SHAPES, with N and K rounded up to multiples of 4 for the TMA kernels (catalog refuses others for them,
    tested in test_catalog): still tails in M, N and K against every tile."""
    if not spec.tma:
        return SHAPES
    return sorted({(m, round_up(n, 4), round_up(k, 4)) for m, n, k in SHAPES})


def _instances():
    for name in catalog.KERNELS:
        grid = catalog.legal_grid(name, grids.SWEEPS.get(name))
        picked = {tuple(catalog.get(name).full_params().items())}
        picked |= {tuple(grid[0].items()), tuple(grid[-1].items()), tuple(grid[len(grid) // 2].items())}
        picked |= {tuple(catalog.get(name).full_params(p).items()) for k, p, _ in plan.EXTRA if k == name}
        for p in sorted(picked):
            yield pytest.param(name, dict(p), id=f"{name}-{'-'.join(str(v) for _, v in p)}")


@pytest.mark.parametrize("kernel,params", list(_instances()))
def test_correct_on_every_shape(kernel, params):
    spec = catalog.get(kernel)
    if spec.smem_bytes(params) > device.gpu().smem_per_block:
        pytest.skip(f"{spec.describe(params)} needs {spec.smem_bytes(params)} B of shared memory per block; "
                    f"{device.gpu().name} allows {device.gpu().smem_per_block}")
    assert len(shapes_for(spec)) >= 30
    for m, n, k in shapes_for(spec):
        err = run.measure_error(catalog.instance(spec, params, (m, n, k)))
        assert err <= run.tolerance(k, spec.precision), f"{kernel} {params} at {m}x{n}x{k}: max rel err {err}"


@pytest.mark.parametrize("params", [{**plan.VECTORIZED_TILE, "SPACED_B": s, "TRANSPOSED_A": a} for s in (0, 1)
                                    for a in (0, 1)]
                         + [{"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 8, "SPACED_B": 0, "TRANSPOSED_A": a}
                            for a in (0, 1)])
def test_the_step_parts_are_correct_on_odd_shapes(params):
    """Chapter 4's step in parts (`plan.STEP_PARTS`): with A's tile transposed or not and B's reads side by side or
    spaced, right on tails in M, N
    and K, with K or N not multiples of 4 (scalar copies) and with both (float4 copies and stores)."""
    inst = catalog.instance("vectorized_parts", params)
    for m, n, k in [*SHAPES, *catalog.tail_shapes(inst.spec, inst.params)]:
        err = run.measure_error(catalog.instance(inst.spec, params, (m, n, k)))
        assert err <= run.tolerance(k, inst.spec.precision), f"{params} at {m}x{n}x{k}: max rel err {err}"


def test_alpha_beta_follow_blas():
    import cupy

    a, b = run.random_inputs(70, 52, 28)  # N and K multiples of 4, as the TMA kernel needs
    c = cupy.random.default_rng(1).uniform(-1, 1, (70, 52), dtype=cupy.float32)
    want = 0.5 * (a.astype(cupy.float64) @ b.astype(cupy.float64)) - 2.0 * c.astype(cupy.float64)
    for spec in catalog.KERNELS.values():
        if catalog.unsupported(spec, device.gpu().cc):
            continue
        got = run.gemm(spec, a, b, alpha=0.5, beta=-2.0, out=c.copy())
        assert run.max_rel_err(got, want) < run.tolerance(28, spec.precision), spec.name


@pytest.mark.parametrize("kernel,params", [("smem_tiled", {"BM": 64, "BN": 64}), ("naive", {"BLOCK": 64}),
                                           ("smem_tiled", {"BM": 64, "BN": 16, "BK": 256})])
def test_invalid_params_raise_before_launch(kernel, params, monkeypatch):
    from gemm_lab import compiler

    monkeypatch.setattr(compiler, "load", lambda *a, **k: pytest.fail("compiled an invalid instance"))
    a, b = run.random_inputs(64, 64, 64)
    with pytest.raises(ValueError, match="breaks a rule"):
        run.gemm(kernel, a, b, params)


def test_bad_operands_are_refused():
    import cupy
    import numpy as np

    a, b = run.random_inputs(8, 8, 8)
    with pytest.raises(TypeError, match="CuPy array"):
        run.gemm("naive", np.ones((8, 8), np.float32), b)
    with pytest.raises(TypeError, match="float32"):
        run.gemm("naive", a.astype(cupy.float64), b)
    with pytest.raises(ValueError, match="inner dimensions"):
        run.gemm("naive", a, run.random_inputs(8, 8, 9)[1])
    transposed = run.gemm("coalesced", a.T, b)  # a non-contiguous view is copied, not misread
    assert run.max_rel_err(transposed, a.T.astype(cupy.float64) @ b.astype(cupy.float64)) < 1e-5


def test_bench_reports_a_verified_time():
    x = timing.bench("smem_tiled", 512)
    assert x.gflops > 0 and x.cublas_gflops > 0 and x.max_rel_err <= run.tolerance(512)
    assert x.source_sha256 == catalog.get("smem_tiled").source_sha256()


def test_the_tf32_baseline_is_cublas_on_tensor_cores():
    """On the H100 at 4096: FP32 SGEMM 51.4 TFLOP/s (max rel err 3.3e-6), TF32 402 TFLOP/s (2.6e-4), one process."""
    import numpy
    from cupy._core import _routines_linalg as linalg

    if device.gpu().cc < (8, 0):
        pytest.skip("TF32 tensor cores need compute capability 8.0 or newer")
    fp32, tf32 = timing.cublas(4096), timing.cublas(4096, "tf32")
    assert (fp32.kernel, tf32.kernel, tf32.precision) == (records.CUBLAS, records.CUBLAS_TF32, "tf32")
    assert tf32.gflops > 4 * fp32.gflops, (tf32.gflops, fp32.gflops)  # data-center GPUs: 5 to 8 times
    assert tf32.max_rel_err > 1e-4 > 1e-5 > fp32.max_rel_err
    assert linalg.get_compute_type(numpy.float32) == linalg.COMPUTE_TYPE_DEFAULT  # FP32 again for everything else
    assert timing.cublas(4096).max_rel_err < 1e-5  # FP32's accuracy again (a speed would compare races that other
    # tests, sharing the GPU under pytest -n, may slow)
    x = timing.bench("mma_tf32", 4096)  # a TF32 kernel races the TF32 baseline
    assert x.precision == "tf32" and x.cublas_gflops > 4 * fp32.gflops


def test_bench_refuses_a_wrong_kernel(monkeypatch):
    monkeypatch.setattr(run, "measure_error", lambda *a: 0.5)
    with pytest.raises(timing.VerificationError):
        timing.bench("naive", 256)


def test_misaligned_views_are_copied_not_misread():
    import cupy

    a, b_sq = run.random_inputs(64, 64, 64)
    a_off = cupy.empty(64 * 64 + 1, dtype=cupy.float32)[1:].reshape(64, 64)  # one float past an aligned start
    a_off[...] = a
    assert a_off.data.ptr % 16
    got = run.gemm("vectorized", a_off, b_sq)
    assert run.max_rel_err(got, a_off.astype(cupy.float64) @ b_sq.astype(cupy.float64)) < 1e-5
    bad_out = cupy.empty(64 * 64 + 1, dtype=cupy.float32)[1:].reshape(64, 64)
    with pytest.raises(ValueError, match="16-byte aligned"):
        run.gemm("vectorized", a_off, b_sq, out=bad_out)


FAULTY = """
template <int T>
__global__ void sgemm_fault(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  C[threadIdx.x + (1ull << 40)] = alpha;  // a terabyte past C: an illegal address
}
"""


def test_a_kernel_fault_names_the_kernel_and_says_restart(tmp_path):
    """In a process of its own: after a fault, every CUDA call of the process fails."""
    import subprocess
    import sys

    source = tmp_path / "fault.cu"
    source.write_text(FAULTY)
    script = (
        "from gemm_lab import catalog, run\n"
        f"spec = catalog.KernelSpec(name='fault', source={str(source)!r}, function='sgemm_fault', title='fault', "
        "choices={'T': (1,)}, defaults={'T': 1}, tile=lambda p: (4, 4), threads=lambda p: 1, smem_bytes=lambda p: 0)\n"
        "run.measure_error(catalog.instance(spec, {'T': 1}, (4, 4, 4)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert out.returncode != 0 and "KernelFault: CUDA failed while running fault with {'T': 1} at M=4, N=4, K=4" \
        in out.stderr, out.stderr[-2000:]
    assert "restart the Python kernel" in out.stderr


@pytest.mark.parametrize("m,n,k", [(1000, 1000, 1000), (129, 257, 4001), (4096, 2048, 64), (8, 8, 2048)])
def test_stream_k_adds_each_share_once_and_unlocks_its_tiles(m, n, k):
    """Stream-K blocks add their shares of a tile into C one at a time, the first applying beta, and the last
    leaves the tile's lock word at 0: a second launch of the same module must be as right as the first."""
    import cupy

    a, b = run.random_inputs(m, n, k)
    c = cupy.random.default_rng(1).uniform(-1, 1, (m, n), dtype=cupy.float32)
    want = 0.5 * (a.astype(cupy.float64) @ b.astype(cupy.float64)) - 2.0 * c.astype(cupy.float64)
    for _ in range(2):
        got = run.gemm("pipelined_warp_tiling", a, b, {"STREAM": 1}, alpha=0.5, beta=-2.0, out=c.copy())
        assert run.max_rel_err(got, want) < run.tolerance(k), (m, n, k)


@pytest.mark.parametrize("kernel, params", [("mma_tf32_tma", {}), ("wgmma_ws_tf32", {}),
                                            ("wgmma_ws_tf32", plan.PAIR_ALONG_N)])
@pytest.mark.parametrize("shape", [(300, 520, 260), (1024, 1024, 1024)])
def test_copies_that_round_to_tf32_give_c_of_operands_rounded_to_nearest_even(kernel, params, shape):
    """`round_copies`: TMA rounds A and B to TF32 (ties to even) on the copy, so C is, bit for bit, the plain launch's
    C on operands rounded so beforehand; and no farther from float64 than the plain launch's (kernel 14's tensor cores
    truncate, kernel 13 rounds with cvt.rna: ties aside, the same values)."""
    if not device.gpu().cc >= catalog.get(kernel).min_cc:
        pytest.skip(f"{kernel} needs compute capability {catalog.get(kernel).min_cc}")
    import cupy

    from gemm_lab.precision import tf32

    m, n, k = shape
    a, b = run.random_inputs(m, n, k, seed=5)
    rounded = run.gemm(kernel, a, b, params, round_copies=True)
    plain = run.gemm(kernel, tf32.to_tf32(a, "even"), tf32.to_tf32(b, "even"), params)
    own = run.gemm(kernel, a, b, params)
    assert bool((rounded == plain).all())
    exact, _ = run.reference(a, b)
    assert float(cupy.abs(rounded - exact).max()) <= 1.05 * float(cupy.abs(own - exact).max())
