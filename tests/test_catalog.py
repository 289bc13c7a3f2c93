"""Catalog rules refuse bad tiles and shapes before anything compiles, and name the rule."""
import pytest

from gemm_lab import catalog
from gemm_lab import spec as spec_model


def test_defaults_are_legal_and_in_template_order():
    for spec in catalog.KERNELS.values():
        assert list(catalog.validate(spec)) == list(spec.param_names)
        assert spec.path.exists(), spec.source


@pytest.mark.parametrize("kernel,params,rule", [
    ("smem_tiled", {"BM": 64, "BN": 32}, "threads per block"),
    ("smem_tiled", {"BM": 32, "BN": 32, "BK": 256}, "shared memory"),
    ("smem_tiled", {"BM": 0}, "positive"),
    ("naive", {"BLOCK": 33}, "threads per block"),
    ("thread_tile_2d", {"TM": 16, "TN": 16}, "TM x TN accumulators, two sets of fragments must fit"),  # 255 + spills
    ("prefetch", {"BM": 32, "BN": 64, "BK": 32, "TM": 8, "TN": 8}, "and the staged tiles must fit"),  # spills 232 B
    ("warp_tiling", {"BM": 128, "BN": 176, "BK": 4, "WM": 64, "WN": 16, "TM": 8, "TN": 4}, "multiple of 4 warps"),
    ("warp_tiling", {"BM": 64, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "TM": 8, "TN": 16}, "staged tiles must fit"),
])
def test_broken_rules_are_named(kernel, params, rule):
    with pytest.raises(ValueError, match=rule):
        catalog.validate(kernel, params)


@pytest.mark.parametrize("value", [-1, 2, 4])
@pytest.mark.parametrize("switch", ["SPACED_B", "TRANSPOSED_A"])
def test_the_step_parts_switches_are_0_or_1(switch, value):
    """vectorized_parts' SPACED_B picks B's fragment reads (0: side by side, 1: spaced) and TRANSPOSED_A A's tile
    (0: as A's rows lie, 1: transposed); any other value is refused before anything compiles, naming the rule."""
    with pytest.raises(ValueError, match=f"{switch} must be 0 .* or 1"):
        catalog.instance("vectorized_parts", {switch: value}, (4096, 4096, 4096))
    for legal in (0, 1):
        assert catalog.validate("vectorized_parts", {switch: legal})[switch] == legal


def test_the_step_parts_share_the_vectorized_kernels_tile_rules():
    parts, vec = catalog.get("vectorized_parts"), catalog.get("vectorized")
    flags = ("SPACED_B", "TRANSPOSED_A")
    assert parts.source == vec.source and {k: v for k, v in parts.defaults.items() if k not in flags} == vec.defaults
    assert parts.name_expression({"SPACED_B": 0, "TRANSPOSED_A": 0}) == \
        "sgemm_vectorized_parts<128, 128, 32, 8, 8, 0, 0>"
    with pytest.raises(ValueError, match="multiples of 4"):
        catalog.validate("vectorized_parts", {"BK": 6, "SPACED_B": 0})


def test_step_2s_parts_are_kernel_10b_without_its_ptxas_option():
    """Chapter 7b's steps part by part (`plan.PIPELINED_PARTS`): kernel 10b's file, tiles and rules, another entry
    point whose LANES and VOLATILE switch step 2's lanes and volatile loads (both 0: step 1 alone), and ptxas' default
    register-usage level."""
    parts, b = catalog.get("pipelined_parts"), catalog.get("pipelined_warp_tiling")
    assert parts.source == b.source and {k: v for k, v in parts.defaults.items() if k not in ("LANES", "VOLATILE")} \
        == b.defaults
    assert [r.why for r in parts.rules][:len(b.rules)] == [r.why for r in b.rules]
    assert b.ptxas_options and not parts.ptxas_options
    assert parts.name_expression({}) == "sgemm_pipelined_parts<128, 256, 8, 64, 64, 8, 16, 2, 0, 0, 0, 0>"
    with pytest.raises(ValueError, match="8 x 4 or 4 x 8"):
        catalog.validate("pipelined_parts", {"TM": 4})
    with pytest.raises(ValueError, match="VOLATILE must be 0"):
        catalog.validate("pipelined_parts", {"VOLATILE": 2})


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="parameters are BM, BN, BK"):
        catalog.validate("smem_tiled", {"TM": 4})
    with pytest.raises(ValueError, match="catalog has"):
        catalog.get("fastest")


@pytest.mark.parametrize("shape,match", [
    ((0, 4, 4), "at least 1"),
    ((70000, 70000, 4), "2\\*\\*31"),
    ((2_100_000, 16, 16), "grid's y dimension"),
])
def test_unsupported_shapes_are_refused(shape, match):
    with pytest.raises(ValueError, match=match):
        catalog.validate("naive", {"BLOCK": 8}, shape=shape)


def test_device_shared_memory_limit():
    with pytest.raises(ValueError, match="this GPU allows 1024"):
        catalog.validate("smem_tiled", smem_limit=1024)


def test_grid_and_instance_derive_from_the_spec():
    spec = catalog.get("smem_tiled")
    p = {"BM": 16, "BN": 64, "BK": 8}
    assert spec.name_expression(p) == "sgemm_smem_tiled<16, 64, 8>"
    assert spec.grid(p, m=100, n=130) == (3, 7, 1)
    assert spec.threads(p) == 1024 and spec.smem_bytes(p) == 4 * (16 * 8 + 8 * 64)


def test_legal_grid_keeps_only_legal_combinations():
    grid = catalog.legal_grid("smem_tiled", {"BM": (32, 64), "BN": (32, 64), "BK": (8,)})
    assert grid == [{"BM": 32, "BN": 32, "BK": 8}]


def test_kernels_refuse_gpus_too_old_for_their_instructions():
    with pytest.raises(ValueError, match=r"multistage needs a GPU of compute capability 8.0 or newer \(cp.async"):
        catalog.validate("multistage", cc=(7, 5))
    assert catalog.validate("multistage", cc=(9, 0)) and catalog.validate("prefetch", cc=(7, 5))


@pytest.mark.parametrize("kernel,params,rule", [
    ("wgmma_tf32", {"BN": 96}, "BN must be a multiple of 64 from 64 to 256"),
    ("wgmma_tf32", {"BN": 320}, "1 to 4 warpgroups"),
    ("wgmma_tf32", {"STAGES": 2}, "STAGES must be at least 3"),
    ("wgmma_3xtf32", {"BM": 192}, "BM must be one of 64, 128, 256"),
    ("wgmma_tf32", {"BM": 256, "BN": 192, "STAGES": 3}, "registers each thread can have"),  # ptxas: C7512, spills
    ("wgmma_3xtf32", {"BM": 64, "BN": 256, "STAGES": 4}, "registers each thread can have"),
    ("wgmma_tf32", {"BM": 256, "BN": 128, "STAGES": 5}, "dynamic shared memory must fit in 232448 bytes"),
    ("mma_tf32", {"WM": 24}, "WM must be a multiple of 16 and WN of 8"),
    ("mma_tf32", {"BK": 24}, "BK must be a multiple of 16"),
    ("mma_tf32", {"BK": 48}, r"split evenly over the float4 columns of the A tile \(BK / 4\)"),  # cp_async.cuh's assert
    ("mma_tf32", {"BM": 64, "BN": 448, "WM": 64, "WN": 32}, "registers each thread can have"),  # 14 warps: 128 each
    ("mma_tf32", {"WN": 48}, "WN must divide BN"),
    ("mma_3xtf32", {"STAGES": 1}, "STAGES must be at least 2"),
    ("mma_3xtf32", {"WM": 64, "WN": 64}, "the accumulators, the per-step sums and the fragments"),
    ("mma_tf32", {"BM": 256, "BN": 128, "BK": 64}, "dynamic shared memory must fit"),
    ("mma_tf32_tma", {"WN": 16}, "WN of 32"),
    ("mma_tf32_tma", {"BN": 128, "WN": 64, "CLUSTER": 4}, "CLUSTER must be 1 or 2"),
    ("mma_tf32_tma", {"STAGES": 5}, "dynamic shared memory must fit"),
    ("mma_tf32_tma", {"BM": 256, "BN": 256}, "registers each thread can have"),
])
def test_tensor_core_rules_are_named(kernel, params, rule):
    with pytest.raises(ValueError, match=rule):
        catalog.validate(kernel, params)


def test_tensor_core_derivations_follow_the_kernels():
    mma, wgmma, split = catalog.get("mma_tf32"), catalog.get("wgmma_tf32"), catalog.get("wgmma_3xtf32")
    p = {"BM": 128, "BN": 256, "BK": 16, "WM": 64, "WN": 32, "STAGES": 3}
    assert mma.name_expression(p) == "sgemm_tf32_mma<128, 256, 16, 64, 32, 3>"
    assert mma.threads(p) == 2 * 8 * 32 and mma.launch_smem(p) == 4 * 3 * (128 * 20 + 16 * 264)
    q = {"BM": 128, "BN": 192, "STAGES": 5}
    assert wgmma.threads(q) == 384 and wgmma.grid(q, m=1000, n=1000) == (6, 8, 1)
    assert wgmma.launch_smem(q) == 5 * (128 * 128 + 25 * 1024) + 1024  # B: 32 x 200 floats, rounded up to 1 KiB
    assert split.launch_smem(q) == 5 * (2 * 128 * 128 + 25 * 1024) + 1024
    assert catalog.get("naive").launch_smem({}) == 0  # static __shared__ arrays: nothing asked for at launch
    assert [s.precision for s in map(catalog.get, ("mma_tf32", "mma_3xtf32", "wgmma_tf32", "wgmma_3xtf32"))] == \
        ["tf32", "3xtf32", "tf32", "3xtf32"]
    assert (wgmma.arch, mma.arch, wgmma.dynamic_smem, mma.dynamic_smem) == ("sm_90a", "", True, True)


def test_the_tma_kernel_runs_whole_clusters_and_refuses_rows_tma_cannot_read():
    spec = catalog.get("mma_tf32_tma")
    p = spec.full_params()
    assert spec.name_expression(p) == "sgemm_tf32_mma_tma<128, 256, 64, 64, 4, 2>"
    assert spec.tma and spec.arch == "sm_90a"
    assert spec.grid(p, m=300, n=260) == (2, 4, 1)  # 3 block rows, rounded up to 2 clusters of 2
    assert spec.grid({**p, "CLUSTER": 1}, m=300, n=260) == (2, 3, 1)
    assert spec.launch_smem(p) == 4 * (128 + 256) * 128 + 1024 + 64  # 4 stages, base alignment, 8 mbarriers
    for n, k in ((258, 64), (256, 30)):
        with pytest.raises(ValueError, match="K and N must be multiples of 4"):
            catalog.validate(spec, shape=(300, n, k))
    assert catalog.validate(spec, shape=(301, 260, 36))


def test_register_rules_keep_what_ptxas_compiles_and_refuse_what_spills():
    """Measured with ptxas (sm_90a): these compile clean, or spill and serialize the wgmmas."""
    legal = {tuple(p.values()) for p in catalog.legal_grid("wgmma_tf32")}
    assert {(256, 64, 5), (256, 128, 4), (128, 256, 4)} <= legal and (256, 192, 3) not in legal
    legal = {tuple(p.values()) for p in catalog.legal_grid("wgmma_3xtf32")}
    assert (128, 128, 4) in legal and not {(128, 192, 3), (64, 256, 4), (128, 256, 3)} & legal
    kernels = ("mma_tf32", "mma_3xtf32", "wgmma_tf32", "wgmma_3xtf32", "mma_tf32_tma")
    counts = [len(catalog.legal_grid(k)) for k in kernels]
    assert counts == [156, 54, 33, 16, 84]


@pytest.mark.parametrize("cc", [(8, 0), (8, 9), (10, 0), (12, 0)])
def test_wgmma_runs_only_on_compute_capability_9_0(cc):
    for kernel in ("wgmma_tf32", "wgmma_3xtf32"):
        with pytest.raises(ValueError, match=rf"{kernel} uses Hopper-only instructions \(wgmma, Hopper's warpgroup MMA"
                                             rf".*compiled for sm_90a: it runs only on compute capability 9.0 GPUs "
                                             rf"such as H100/H200; this one is {cc[0]}.{cc[1]}"):
            catalog.validate(kernel, cc=cc)
        assert catalog.validate(kernel, cc=(9, 0))
    assert catalog.validate("mma_tf32", cc=cc) and catalog.validate("mma_3xtf32", cc=cc)  # mma.sync: 8.0 or newer
    with pytest.raises(ValueError, match=r"mma_tf32 needs a GPU of compute capability 8.0 or newer \(mma.sync"):
        catalog.validate("mma_tf32", cc=(7, 5))


def test_a_spec_states_a_known_precision_and_arch():
    spec = catalog.get("naive")
    with pytest.raises(ValueError, match="precision must be one of fp32, tf32, 3xtf32, ozaki, not 'fp16'"):
        catalog.KernelSpec(**{**vars(spec), "precision": "fp16"})
    with pytest.raises(ValueError, match="arch must be one of sm_90a"):
        catalog.KernelSpec(**{**vars(spec), "arch": "sm_100a"})


@pytest.mark.parametrize("params,rule", [
    ({"ALONG_K": 1, "BK": 12}, "with ALONG_K = 1, a multiple of 8"),
    ({"BK": 1}, "BK must be even"),
    ({"ALONG_K": 0, "TM": 6, "WM": 48}, "so must TM with ALONG_K = 0"),
    ({"ALONG_K": 2}, "ALONG_K must be 0"),
    ({"STAGES": 0}, "must be positive"),
    ({"STREAM": 2}, "STREAM must be 0"),
    ({"BM": 128, "BN": 256, "WM": 64, "WN": 32, "TM": 8, "TN": 8}, "registers each thread can have"),  # spills at 128
    ({"BK": 16, "STAGES": 10}, "dynamic shared memory must fit"),
])
def test_pipelined_rules_are_named(params, rule):
    with pytest.raises(ValueError, match=rule):
        catalog.validate("pipelined_warp_tiling", params)


def test_stream_k_launches_one_block_per_resident_slot():
    spec = catalog.get("pipelined_warp_tiling")
    p = spec.full_params({"STREAM": 1})
    assert spec.grid(p, m=300, n=600, slots=132) == (132, 1, 1) and spec.persistent(p)
    assert spec.grid(p, m=300, n=600) == (3, 3, 1)  # no slots known (offline analysis): one block per tile
    assert spec.grid(spec.full_params(), m=300, n=600, slots=132) == (3, 3, 1)
    assert not catalog.get("warp_tiling").persistent({})
    # transposed A tile (rows BM + 4) or row-major (rows BK + 4), and B, per stage
    assert spec.launch_smem(p) == 4 * 2 * (8 * 132 + 8 * 256)
    assert spec.launch_smem({**p, "ALONG_K": 1}) == 4 * 2 * (128 * 12 + 8 * 256)
    assert spec.static_smem(p) == 64 and spec.static_smem(spec.full_params()) == 0  # stream-K's schedule words


@pytest.mark.parametrize("kernel,params,rule", [
    ("wgmma_ws_tf32", {"BM": 256, "CONSUMERS": 3}, "registers a consumer thread gets after setmaxnreg"),
    ("wgmma_ws_tf32", {"CONSUMERS": 4}, "CONSUMERS must be 1 to 3"),
    ("wgmma_ws_tf32", {"BM": 192}, "BM must be one of 64, 128, 256"),
    ("wgmma_ws_tf32", {"STAGES": 5}, "dynamic shared memory must fit"),  # 5 x 48 KiB
    ("wgmma_ws_tf32", {"CLUSTER": 4}, "CLUSTER must be 1, 2 .* or -2"),
    ("wgmma_ws_3xtf32", {"CLUSTER": -2}, "CLUSTER must be 1 or 2"),
    ("wgmma_ws_tf32", {"PERSIST": 2}, "PERSIST must be 0"),
    ("wgmma_ws_3xtf32", {"SUM": 2}, "registers a consumer thread gets after setmaxnreg"),  # BM 128: ptxas spills
    ("wgmma_ws_3xtf32", {"SUM": 0}, "SUM must be positive"),
    ("wgmma_ws_tf32", {"BSMEM": 1}, "dynamic shared memory must fit"),  # 4 x 64 KiB with B^T
    ("wgmma_ws_tf32", {"BSMEM": 1, "BM": 64}, "BSMEM = 1 needs BM 128 or 256"),
    ("wgmma_ws_tf32", {"STORE": 2}, "STORE must be 0"),
    ("wgmma_ws_3xtf32", {"SPLITTER": 2}, "SPLITTER must be 0"),
])
def test_warp_specialised_rules_are_named(kernel, params, rule):
    with pytest.raises(ValueError, match=rule):
        catalog.validate(kernel, params)


def test_warp_specialised_kernels_split_the_register_file_and_launch_whole_clusters():
    # the producer keeps 40 of the SM's 64 K registers per thread; consumers share the rest, at most 240
    assert [catalog.consumer_registers(c) for c in (1, 2, 3)] == [240, 232, 152]
    spec = catalog.get("wgmma_ws_tf32")
    p = spec.full_params()
    assert spec.threads(p) == 384 and spec.tile(p) == (256, 128) and spec.persistent(p) and spec.tma
    assert spec.grid(p, m=4096, n=4096, slots=132) == (66, 2, 1)  # 66 clusters of 2 along y
    assert spec.grid({**p, "PERSIST": 0}, m=4096, n=4096, slots=132) == (32, 16, 1)  # one block per tile
    assert spec.grid({**p, "PERSIST": 0}, m=300, n=200) == (2, 2, 1)  # whole clusters: 2 tile rows
    # A, B and 3 mbarriers per stage, two 8 KiB buffers per consumer for the TMA stores; B^T takes another 16 KiB
    assert spec.launch_smem(p) == 4 * (256 * 128 + 2 * 64 * 128 + 24) + 2 * 16384 + 1024
    assert spec.launch_smem({**p, "BSMEM": 1, "STAGES": 3, "STORE": 0}) == \
        3 * (256 * 128 + 2 * 2 * 64 * 128 + 24) + 1024
    assert spec.tma_c and spec.name_expression(p) == "sgemm_tf32_wgmma_ws<256, 2, 4, 2, 1, 8, 0, 1>"
    assert catalog.validate("wgmma_ws_3xtf32", {"BM": 64, "SUM": 4})["SUM"] == 4  # short tiles leave room for it


def test_every_kernel_has_a_colour_of_its_own():
    from gemm_lab.pages import plots

    assert len({plots.color(name) for name in catalog.KERNELS}) == len(catalog.KERNELS)


def test_kernel_hashes_cover_code_not_comments(tmp_path, monkeypatch):
    """Correcting a comment keeps a kernel's records fresh; a change of code (or of a string the code holds, such as
    an asm template) does not."""
    src = tmp_path / "k.cu"
    monkeypatch.setattr(spec_model, "ROOT", tmp_path)
    spec = catalog.Probe("k", "k.cu", ("k",), (9, 0), "device", ())

    def hashes(text: str) -> tuple[str, str]:
        src.write_text(text)
        return spec.source_sha256(), spec.build_sha256()

    base = hashes('// what it does\n__global__ void k() { asm("// not a comment"); }  // trailing\n')
    assert hashes('// what it really does\n\n__global__ void k() { asm("// not a comment"); }\n') == base
    assert hashes('/* a block\n comment */\n__global__ void k() { asm("// not a comment"); }\n') == base
    assert hashes('__global__ void k() { asm("// changed"); }\n') != base
    assert hashes('__global__ void k() { asm("// not a comment"); }\n__device__ int x;\n') != base
