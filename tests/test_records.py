"""Recorded data: well-formed, fresh, written atomically, and clear about what is wrong."""
import json
import os

import pytest

from gemm_lab import catalog, records


def test_repository_records_are_well_formed_and_fresh():
    assert records.check() == []


def test_every_catalogued_kernel_has_fresh_h100_records():
    have = {m.kernel for m in records.measurements(gpu=records_gpu())}
    assert set(catalog.KERNELS) <= have
    for m in records.measurements(gpu=records_gpu()):
        if m.kernel == records.CUBLAS:  # the library: no kernel source of ours behind it
            continue
        for field in records.REQUIRED:
            assert getattr(m, field) not in (None, ""), (m.kernel, field)


def records_gpu() -> str:
    from gemm_lab import device

    return device.DEFAULT_REPLAY_GPU


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "RECORDS_DIR", tmp_path)
    return tmp_path


def _row(**over):
    spec = catalog.get("naive")
    row = dict(kernel="naive", source=spec.source, source_sha256=spec.source_sha256(), params={"BLOCK": 32},
               m=64, n=64, k=64, precision="fp32", gflops=1.0, cublas_gflops=2.0, max_rel_err=1e-7,
               gpu="Test GPU", recorded_at="2026-11-23T00:00:00+00:00")
    row.update(over)
    return row


def test_upsert_replaces_the_same_key_and_keeps_others(sandbox):
    path = sandbox / "g" / "naive.json"
    records.upsert(path, [_row(), _row(m=128)], records.BENCH_KEY)
    records.upsert(path, [_row(gflops=5.0)], records.BENCH_KEY)
    rows = records.read_rows(path)
    assert sorted((r["m"], r["gflops"]) for r in rows) == [(64, 5.0), (128, 1.0)]


def test_a_crash_mid_write_leaves_the_old_file_intact(sandbox, monkeypatch):
    path = sandbox / "g" / "naive.json"
    records.upsert(path, [_row()], records.BENCH_KEY)
    before = path.read_text()

    def crash(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        records.upsert(path, [_row(m=256)], records.BENCH_KEY)
    assert path.read_text() == before
    assert [p.name for p in path.parent.iterdir() if p.suffix == ".tmp"] == []


@pytest.mark.parametrize("text,match", [
    ("{not json", "not valid JSON"),
    ('{"rows": []}', "expected"),
    ('{"format": 1, "rows": [3]}', "row 0 is not an object"),
])
def test_malformed_files_name_the_file(sandbox, text, match):
    path = sandbox / "g" / "naive.json"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(records.RecordError, match=match) as err:
        records.read_rows(path)
    assert str(path) in str(err.value)
    assert any(match in p for p in records.check(sandbox))


def test_a_missing_field_is_named(sandbox):
    row = _row()
    del row["max_rel_err"]
    path = sandbox / "g" / "naive.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"format": 1, "rows": [row]}))
    assert any("'max_rel_err'" in p for p in records.check(sandbox))


def test_stale_source_hash_is_reported(sandbox):
    records.upsert(sandbox / "g" / "naive.json", [_row(source_sha256="0" * 64)], records.BENCH_KEY)
    problems = records.check(sandbox)
    assert len(problems) == 1 and "older kernels/01_naive.cu" in problems[0]


def test_lookup_says_what_was_recorded(sandbox):
    records.upsert(sandbox / "test-gpu" / "naive.json", [_row()], records.BENCH_KEY)
    assert records.lookup("naive", {"BLOCK": 32}, 64, 64, 64, gpu="Test GPU").gflops == 1.0
    with pytest.raises(LookupError, match=r"recorded shapes for these parameters: \[\(64, 64, 64\)\]"):
        records.lookup("naive", {"BLOCK": 32}, 65, 64, 64, gpu="Test GPU")
