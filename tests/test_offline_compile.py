"""Every catalogued kernel compiles without a GPU (sm_90, or sm_90a for wgmma), with no register spills and no
ptxas "Potential Performance Loss" (wgmmas serialized: right results, much slower).

The default run compiles the instances that reach the edges of each kernel's rules and a few that `validate` accepts
beyond the offered values (tests/instances.py); `python -m pytest -m exhaustive` compiles the rest: every instance
of the recorded FFMA sweeps, every offered tensor-core instance (the register rules are estimates, calibrated on
ptxas over these grids) and many more beyond the offered values.
"""
import pytest
from instances import beyond, edges

from gemm_lab import catalog, compiler
from gemm_lab.lab import plan
from gemm_lab.pages import grids

EDGES = {name: edges(name) for name in catalog.KERNELS}
BEYOND_FAST, BEYOND_EXHAUSTIVE = 1, 11  # instances beyond the offered values per kernel, in each run
BEYOND = {name: beyond(name, BEYOND_FAST + BEYOND_EXHAUSTIVE) for name in catalog.KERNELS}


def _grid(name: str) -> list[dict[str, int]]:
    """What the exhaustive run compiles besides the edges: the swept FFMA grid or the whole offered tensor-core
    grid."""
    grid = catalog.legal_grid(name) if name in plan.TENSOR_CORES else catalog.legal_grid(name, grids.SWEEPS.get(name))
    return [p for p in grid if p not in EDGES[name]]


def _cases(instances: dict[str, list[dict[str, int]]], *marks: pytest.MarkDecorator) -> list:
    return [pytest.param(name, p, id=f"{name}-{'-'.join(map(str, p.values()))}", marks=marks)
            for name, grid in instances.items() for p in grid]


def assert_clean(spec: catalog.KernelSpec, params: dict[str, int], r: compiler.PtxasReport) -> None:
    assert r.arch == (spec.arch or "sm_90") and 0 < r.registers <= 255, r
    assert r.spills == 0 and r.stack_bytes == 0, r
    assert r.performance_warnings == (), r
    # ptxas sees static arrays only: a dynamic-smem kernel's bookkeeping words, or a static kernel's tiles
    assert r.smem_bytes == (spec.static_smem(params) if spec.dynamic_smem else spec.smem_bytes(params)), r


@pytest.mark.parametrize("kernel,params", [
    *_cases(EDGES), *_cases({name: _grid(name) for name in catalog.KERNELS}, pytest.mark.exhaustive)])
def test_compiles_without_spills(kernel, params):
    assert_clean(catalog.get(kernel), params, compiler.ptxas_report(kernel, params))


@pytest.mark.parametrize("kernel,params", [
    *_cases({name: found[:BEYOND_FAST] for name, found in BEYOND.items()}),
    *_cases({name: found[BEYOND_FAST:] for name, found in BEYOND.items()}, pytest.mark.exhaustive)])
def test_what_validate_accepts_beyond_the_offered_values_compiles_clean(kernel, params):
    """The rules know what the compiler enforces (static_asserts, register budgets): an instance they accept compiles,
    clean. Where one does not, the catalog's rule is wrong, not this test."""
    assert_clean(catalog.get(kernel), params, compiler.ptxas_report(kernel, params))


@pytest.mark.exhaustive
@pytest.mark.parametrize("kernel,params", [
    *_cases(EDGES), *_cases({name: found[:BEYOND_FAST] for name, found in BEYOND.items()})])
def test_the_default_runs_pinned_reports_are_what_ptxas_says(kernel, params, monkeypatch):
    """The default run reads these instances' reports from records/ptxas_reports.json: here each is compiled, and
    `ptxas_report` fails where its pin differs (re-pin with `python -m gemm_lab.lab.pins`)."""
    monkeypatch.setenv(compiler.UNPINNED_ENV, "1")
    assert_clean(catalog.get(kernel), params, compiler.ptxas_report(kernel, params))


@pytest.mark.parametrize("kernel", list(catalog.KERNELS))
def test_resources_count_static_and_dynamic_shared_memory(kernel):
    """Each instance a default call launches (the Ozaki default's own launches nothing: its chosen ones)."""
    spec = catalog.get(kernel)
    for p in {tuple(q.items()): q for q in spec.runs(spec.full_params())}.values():
        if len(spec.runs(p)) == 1:
            assert compiler.resources(kernel, p).smem_bytes == spec.smem_bytes(p)


def test_ptxas_reports_serialized_wgmmas():
    """The rules refuse this instance: ptxas serializes its wgmmas for want of registers (C7512), and says so."""
    spec = catalog.get("wgmma_tf32")
    with pytest.raises(ValueError, match="registers each thread can have"):
        compiler.ptxas_report(spec, {"BM": 256, "BN": 192, "STAGES": 3})
    r = compiler._offline(spec.name, spec.build_sha256(), ("sgemm_tf32_wgmma<256, 192, 3>",), "sm_90a")[1]
    assert r.spills and len(r.performance_warnings) == 1
    assert "(C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized" in \
        r.performance_warnings[0]


def test_arch_specific_kernels_compile_only_for_their_target():
    assert compiler.cubin("wgmma_tf32")[:4] == b"\x7fELF"
    with pytest.raises(ValueError, match="uses arch-specific instructions: compile it for sm_90a, not sm_90"):
        compiler.ptxas_report("wgmma_tf32", arch="sm_90")


def test_cubin_is_an_elf_image():
    assert compiler.cubin("smem_tiled")[:4] == b"\x7fELF"


def test_compile_errors_quote_the_source_line(tmp_path, monkeypatch):
    bad = tmp_path / "bad.cu"
    bad.write_text("template <int B>\n__global__ void sgemm_bad(int M) {\n  undefined_name = M;\n}\n")
    spec = catalog.KernelSpec(name="bad", source=str(bad), function="sgemm_bad", title="bad",
                              choices={"B": (1,)}, defaults={"B": 1}, tile=lambda p: (1, 1),
                              threads=lambda p: 1, smem_bytes=lambda p: 0)
    monkeypatch.setitem(catalog.KERNELS, "bad", spec)
    with pytest.raises(compiler.CompileError) as err:
        compiler.ptxas_report("bad")
    assert "undefined_name = M;" in str(err.value) and ":3 |" in str(err.value)
