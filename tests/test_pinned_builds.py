"""Records survive a refactor: a row whose kernel was edited since stays fresh while each instance it ran compiles to
the code `freshness.pin` pinned for it (records/builds.json), under the same NVRTC."""
import dataclasses

import pytest

from gemm_lab import catalog, compiler, folders, records
from gemm_lab.lab import freshness, sanitize

STORE = "  float* c = &C[row * N + col];\n  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;\n"
HELPER = ("__device__ __forceinline__ void store_c(float* c, float alpha, float acc, float beta) {\n"
          "  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;\n}\n")


@pytest.fixture
def naive(tmp_path, monkeypatch):
    """A copy of kernel 1 catalogued in its place, its records on one GPU (a race and a clean run of each sanitizer
    tool over two instances) in a records folder of their own, and a cubin cache of their own."""
    monkeypatch.setattr(folders, "RECORDS_DIR", tmp_path / "records")
    monkeypatch.setenv(compiler.CACHE_ENV, str(tmp_path / "cache"))
    path = tmp_path / "kernels" / "01_naive.cu"
    path.parent.mkdir()
    path.write_text(catalog.get("naive").path.read_text())
    spec = dataclasses.replace(catalog.get("naive"), source=str(path))
    monkeypatch.setitem(catalog.KERNELS, "naive", spec)
    hashes = {"source": spec.source, "source_sha256": spec.source_sha256(), "build_sha256": spec.build_sha256()}
    race = dict(kernel="naive", params={"BLOCK": 32}, m=64, n=64, k=64, precision="fp32", gflops=1.0,
                cublas_gflops=2.0, max_rel_err=1e-7, gpu="Test GPU", recorded_at="2026-12-01T00:00:00+00:00", **hashes)
    folder = records.gpu_dir("Test GPU")
    records.upsert(folder / "naive.json", [race], records.BENCH_KEY)
    sanitize.save_sanitizer(sanitize.SanitizerRun(
        kernel="naive", tool=tool, errors=0, cases=[{"params": {"BLOCK": b}, "shapes": [[1, 1, 1]]} for b in (16, 32)],
        gpu="Test GPU", recorded_at="2026-12-01T00:00:00+00:00", versions={}, **hashes)
        for tool in sanitize.SANITIZER_TOOLS)
    return path


def edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_comment_edit_needs_no_pin(naive):
    edit(naive, "// Step 1: naive SGEMM", "// Step 1: the naive SGEMM")
    assert freshness.problems() == []


def test_a_refactor_that_compiles_to_the_same_code_leaves_the_records_fresh(naive):
    edit(naive, "acc", "sum")  # a local variable renamed
    unpinned = freshness.problems()  # nothing pinned: stale, saying why
    assert len(unpinned) == 5 and all("builds.json pins no code of the build it was recorded from" in p
                                      for p in unpinned)
    edit(naive, "sum", "acc")
    assert freshness.pin(workers=1) == (2, 2)  # BLOCK=32 (the race and the tools ran it) and BLOCK=16
    pinned = freshness.pinned_builds()
    assert [sorted(b["sass"]) for b in pinned.values()] == [["sgemm_naive<16> sm_90", "sgemm_naive<32> sm_90"]]
    assert freshness.pin(workers=1) == (2, 0)  # pinned already: nothing compiles
    edit(naive, "acc", "sum")
    assert freshness.problems() == []
    edit(naive, "template <int BLOCK>", '#include "store.cuh"\ntemplate <int BLOCK>')  # a helper, in a header
    (naive.parent / "store.cuh").write_text(HELPER.replace("acc", "sum"))
    edit(naive, STORE.replace("acc", "sum"), "  store_c(&C[row * N + col], alpha, sum, beta);\n")
    assert freshness.problems() == []
    assert freshness.pin(workers=1) == (2, 0) and freshness.pinned_builds() == pinned  # the rows still name that build


def test_rows_whose_code_compiles_unchanged_adopt_todays_hashes_and_the_rest_stay_stale(naive, monkeypatch):
    freshness.pin(workers=1)
    edit(naive, "acc", "sum")  # the same code
    assert freshness.adopt() == 5  # the race and the three tools' runs
    spec = catalog.get("naive")
    rows = [r for path in records.gpu_dir("Test GPU").glob("*.json") for r in records.read_rows(path)]
    assert {(r["source_sha256"], r["build_sha256"]) for r in rows} == {(spec.source_sha256(), spec.build_sha256())}
    with monkeypatch.context() as m:
        m.setattr(compiler, "cached_cubin", lambda *args: pytest.fail("compiled"))
        assert freshness.problems() == [] and freshness.adopt() == 0  # fresh by their hashes: nothing compiles
    freshness.pin(workers=1)
    edit(naive, "alpha * sum :", "alpha * sum + 1.0f :")  # other code: nothing adopted, stale
    assert freshness.adopt() == 0 and len(freshness.problems()) == 5


def test_a_change_of_code_makes_the_records_stale(naive):
    freshness.pin(workers=1)
    edit(naive, "alpha * acc :", "alpha * acc + 1.0f :")
    problems = freshness.problems()
    assert len(problems) == 5 and all("sgemm_naive<32> sm_90 compiles to other code today" in p
                                      or "sgemm_naive<16> sm_90 compiles to other code today" in p for p in problems)
    assert "naive.json: naive {'BLOCK': 32} was recorded from an older" in problems[0]
    assert all("the racecheck record of naive is of an older" in p for p in problems if "racecheck" in p)


def test_code_pinned_under_another_nvrtc_does_not_count(naive):
    freshness.pin(workers=1)
    path = folders.RECORDS_DIR / "builds.json"
    path.write_text(path.read_text().replace(f'"nvrtc":"{compiler.nvrtc_version()}"', '"nvrtc":"12.9"'))
    assert freshness.problems() == []  # unedited: fresh by its hashes
    edit(naive, "acc", "sum")
    problems = freshness.problems()
    assert len(problems) == 5 and all(f"pinned its code under NVRTC 12.9, not the installed "
                                      f"{compiler.nvrtc_version()}" in p for p in problems)
    assert freshness.pin(workers=1) == (2, 0)  # its source is gone: nothing to compile it again from
    edit(naive, "sum", "acc")
    assert freshness.pin(workers=1) == (2, 2)  # pinned again, under the installed NVRTC


def test_a_malformed_manifest_is_named(naive):
    path = folders.RECORDS_DIR / "builds.json"
    records.upsert(path, [{"source": "kernels/01_naive.cu", "sass": []}], freshness.BUILDS_KEY)
    (problem,) = freshness.problems()
    assert str(path) in problem and "'sass'" in problem


def test_the_repositorys_records_are_pinned():
    """Every instance that a row fresh by its hashes ran has its code pinned (`gemm-lab record`, `sanitize`, `sweep`
    and `bench --save` pin what they record; `gemm-lab records --pin` pins the rest)."""
    pinned = freshness.pinned_builds()
    _, ran = freshness.recorded_builds()
    unpinned = [f"{key[0]}: {name}" for key, builds in ran.items() for name in builds
                if name not in pinned.get(key, {"sass": {}})["sass"]]
    assert unpinned == [], "run `gemm-lab records --pin`"


def test_check_compiles_nothing_while_the_hashes_match(monkeypatch):
    def refuse(*args):
        raise AssertionError("compiled")

    monkeypatch.setattr(compiler, "cached_cubin", refuse)
    assert freshness.problems() == []


def test_a_probe_runs_the_instance_its_params_name_or_else_each_of_its_kernels():
    int8 = catalog.PROBES[catalog.INT8_PRODUCT]
    row = {"kernel": int8.name, "params": {"BN": 128, "CLUSTER": 1, "CONSUMERS": 1, "GROUP": 8, "STAGES": 3}}
    assert [b.key for b in freshness.builds_of(row, "sm_90")] == ["igemm_s8_wgmma_ws<128, 1, 3, 1, 8> sm_90a"]
    peak = {"kernel": "tensor_core_peak", "cases": [{"blocks_per_sm": 1, "iters": 4}]}  # a sanitizer row's cases
    assert [b.key for b in freshness.builds_of(peak, "sm_90")] == ["mma_peak<16> sm_90", "wgmma_peak<256> sm_90a"]
    ozaki = catalog.get("ozaki")
    (build,) = freshness.builds_of({"kernel": "ozaki", "params": {"MODULI": 8}}, "sm_90")
    p = ozaki.full_params({"MODULI": 8})
    assert build.names == (ozaki.name_expression(p), *ozaki.companions(p))


def test_a_record_of_the_ozaki_default_is_of_every_instance_it_may_choose():
    """The auto default (MODULI = 0) runs the instance of the number of moduli it chose: its records are of their
    code (their residues and reconstruction), not only of the MODULI = 0 cubin, which holds neither."""
    from gemm_lab.precision import ozaki

    builds = freshness.builds_of({"kernel": "ozaki", "params": {}}, "sm_90")
    assert [b.names[0] for b in builds] == [catalog.get("ozaki").name_expression({**catalog.get("ozaki").full_params(),
                                                                                  "MODULI": m})
                                            for m in (0, *ozaki.CANDIDATES)]
    assert all(f"ozaki_reconstruct<{m}>" in b.names for b, m in zip(builds[1:], ozaki.CANDIDATES))


def test_the_code_hash_is_of_the_code_not_of_the_toolkits_notes():
    binary = compiler.cubin("naive")
    notes = next(s for s in freshness._sections(binary) if s[0] == ".note.nv.tkinfo")[4]
    code = next(s for s in freshness._sections(binary) if s[0].startswith(".text."))[4]
    other_toolkit = binary.replace(notes, notes.replace(b"ptxas", b"PTXAS"))  # the notes name the toolkit's tools
    assert other_toolkit != binary and freshness.code_sha256(other_toolkit) == freshness.code_sha256(binary)
    assert freshness.code_sha256(binary.replace(code, code[:-16] + b"\x01" * 16)) != freshness.code_sha256(binary)
