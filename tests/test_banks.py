"""The shared-memory bank model on cases worked out by hand, and the register-bank analysis of SASS."""
import pytest

from gemm_lab import catalog
from gemm_lab.models import banks, sass


@pytest.mark.parametrize("stride,wavefronts", [(1, 1), (2, 2), (4, 4), (32, 32), (33, 1), (0, 1)])
def test_scalar_strides(stride, wavefronts):
    a = banks.access("x", [lane * stride for lane in range(32)])
    assert a.wavefronts == wavefronts and a.conflicts == wavefronts - 1


def test_float4_accesses():
    contiguous = banks.access("x", [4 * lane for lane in range(32)], width=16)  # 512 distinct bytes
    assert (contiguous.wavefronts, contiguous.ideal, contiguous.conflicts) == (4, 4, 0)
    strided = banks.access("x", [8 * lane for lane in range(32)], width=16)  # half of each 32-byte pair
    assert (strided.wavefronts, strided.ideal, strided.conflicts) == (8, 4, 4)
    broadcast = banks.access("x", [0] * 32, width=16)
    assert (broadcast.wavefronts, broadcast.conflicts) == (1, 0)


def test_banks_of_lanes():
    assert banks.access("x", [lane * 33 for lane in range(4)]).banks() == [0, 1, 2, 3]


@pytest.mark.parametrize("layout,ways", [(0, 8), (1, 4), (2, 1)])
def test_transposing_store_by_layout(layout, ways):
    store = banks.sites("bank_conflicts", {"LAYOUT": layout})[0]
    assert store.store and store.wavefronts == ways


def test_swizzle_keeps_float4_reads_contiguous():
    for k in range(32):
        cols = [banks.a_col(2, k, m) for m in range(8, 12)]
        assert cols == list(range(cols[0], cols[0] + 4)) and cols[0] % 4 == 0


def test_predicted_totals_scale_with_the_grid():
    small = banks.predict("bank_conflicts", 1024, 1024, 1024, {"LAYOUT": 0})
    big = banks.predict("bank_conflicts", 2048, 2048, 2048, {"LAYOUT": 0})
    assert big["st_conflicts"] == 8 * small["st_conflicts"] > 0
    assert banks.predict("bank_conflicts", 1024, 1024, 1024, {"LAYOUT": 2})["st_conflicts"] == 0


def test_sass_register_banks_from_the_offline_cubin():
    ffma = sass.ffmas(sass.disassemble("vectorized"))
    assert len(ffma) >= 128 * 8 * 2  # at least BK x TM x TN FFMAs in the unrolled main loop
    r = sass.report("vectorized")
    assert r.ffma == len(ffma) and 0 < r.with_reuse <= r.ffma
    assert 0 <= r.volta_conflicts <= r.maxwell_conflicts


def test_reuse_cache_hides_a_bank_read():
    line = "        /*0010*/                   FFMA R1, R2.reuse, R4, R6 ;"
    nxt = "        /*0020*/                   FFMA R3, R2, R8, R10 ;"
    f = sass.ffmas(f"{line}\n{nxt}")
    assert sass.bank_reads(f, 2) == [[0, 0, 0], [0, 0]]
    assert sass.conflicts(f, "volta") == [True, False]


def test_model_sites_follow_the_compiled_loads():
    """The 2-D kernel's model assumes the compiler merged its shared reads into 128-bit loads."""
    text = sass.disassemble("thread_tile_2d")
    p = {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8}
    assert text.count("LDS.128") >= sum(s.per_step for s in banks.sites("thread_tile_2d", p) if not s.store)
    assert " LDS " not in text and "LDS.32" not in text


def test_model_matches_the_recorded_counters():
    from gemm_lab import device
    from gemm_lab.lab import plan
    from gemm_lab.models import hardware
    from gemm_lab.pages import grids

    n = grids.COUNTER_SIZE
    for kernel, params in plan.COUNTERS:
        if kernel not in ("thread_tile_2d", "vectorized", "bank_conflicts", "prefetch"):
            continue
        spec = banks.catalog.get(kernel)
        row = hardware.recorded_counters(spec, spec.full_params(params), (n, n, n), device.DEFAULT_REPLAY_GPU)
        if row is None:  # a case plan.py asks for before `gemm-lab record --only counters` has recorded it
            continue
        hw = row["metrics"]
        model = banks.predict(kernel, n, n, n, params)
        for kind in ("ld", "st"):
            assert model[f"{kind}_instructions"] == hw[f"smsp__inst_executed_op_shared_{kind}.sum"]
            measured = hw[f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{kind}.sum"]
            if model[f"{kind}_conflicts"]:  # every predicted conflict is counted; up to 14 % more is
                # observed (prefetch without double buffering), never fewer
                assert 0.98 * model[f"{kind}_conflicts"] < measured < 1.15 * model[f"{kind}_conflicts"]
            else:  # the residue the chapter discusses: small beside the instructions
                assert measured < 0.15 * model[f"{kind}_instructions"]


@pytest.mark.parametrize("kernel,math", [("mma_tf32", "HMMA"), ("mma_3xtf32", "HMMA"), ("wgmma_tf32", "HGMMA"),
                                         ("wgmma_3xtf32", "HGMMA")])
def test_sass_of_the_tensor_core_kernels_from_their_own_targets(kernel, math):
    """mma.sync compiles for sm_90, wgmma for sm_90a; the hottest loop is the one with the tensor-core instructions."""
    mix = sass.main_loop_mix(kernel)
    assert mix.get(math, 0) > 0 and "FFMA" not in mix  # the FFMAs of alpha * C + beta * C_old are after the loop


def test_sass_is_disassembled_once_per_cubin(tmp_path, monkeypatch):
    """nvdisasm runs once per cubin; later reads (other processes too) come from the file beside the cubins."""
    import subprocess

    pytest.importorskip("cuda.bindings.nvrtc")  # the offline extra
    monkeypatch.setenv("GEMM_LAB_CACHE", str(tmp_path))
    first = sass.disassemble("smem_tiled")
    assert "FFMA" in first and len(list((tmp_path / "cubins").glob("*.sass"))) == 1
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("nvdisasm ran again"))
    assert sass.disassemble("smem_tiled") == first


def test_the_step_parts_passes():
    """Chapter 4's step in parts, from the 2-D kernel at BK 32: float4 copies, then A transposed, keep the 2-D kernel's
    passes per warp FFMA (the
    compiled 2-D loop already reads four k-values of A's row per 128-bit load); the spaced reads of B take them to the
    vectorized kernel's (12 passes for 64 warp FFMAs a step kk)."""
    def per_ffma(kernel, params):
        p = catalog.get(kernel).full_params(params)
        return sum(s.wavefronts * s.per_step for s in banks.sites(kernel, p) if not s.store) / (
            p["TM"] * p["TN"] * p["BK"])

    from gemm_lab.lab import plan
    got = [per_ffma(k, q) for k, q in plan.STEP_PARTS]
    assert got[1:] == [0.3125, 0.3125, 0.3125, 0.1875]
    assert per_ffma("vectorized_parts", {"SPACED_B": 1}) == per_ffma("vectorized", {})
