"""Every catalogued kernel compiles for sm_90 without a GPU, with no register spills."""
import pytest

from gemm_lab import catalog, compile, plan

CASES = [
    pytest.param(name, p, id=f"{name}-{'-'.join(map(str, p.values()))}")
    for name in catalog.KERNELS
    for p in catalog.legal_grid(name, plan.SWEEPS.get(name))
]


@pytest.mark.parametrize("kernel,params", CASES)
def test_compiles_for_sm90_without_spills(kernel, params):
    r = compile.ptxas_report(kernel, params)
    assert r.arch == "sm_90" and 0 < r.registers <= 255
    assert r.spills == 0 and r.stack_bytes == 0, r
    assert r.smem_bytes == catalog.get(kernel).smem_bytes(params)


def test_cubin_is_an_elf_image():
    assert compile.cubin("smem_tiled")[:4] == b"\x7fELF"


def test_compile_errors_quote_the_source_line(tmp_path, monkeypatch):
    bad = tmp_path / "bad.cu"
    bad.write_text("template <int B>\n__global__ void sgemm_bad(int M) {\n  undefined_name = M;\n}\n")
    spec = catalog.KernelSpec(name="bad", source=str(bad), function="sgemm_bad", title="bad",
                              choices={"B": (1,)}, defaults={"B": 1}, tile=lambda p: (1, 1),
                              threads=lambda p: 1, smem_bytes=lambda p: 0)
    monkeypatch.setitem(catalog.KERNELS, "bad", spec)
    with pytest.raises(compile.CompileError) as err:
        compile.ptxas_report("bad")
    assert "undefined_name = M;" in str(err.value) and ":3 |" in str(err.value)
