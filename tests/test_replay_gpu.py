"""Replay shows the reader's GPU where records/ has it, else the H100, and the banner says which."""
import os
import re
import sys
from types import SimpleNamespace

import pytest

from gemm_lab import catalog, device, folders, records
from gemm_lab.pages import tables

H100 = device.DEFAULT_REPLAY_GPU


@pytest.fixture(autouse=True)
def forced_replay(monkeypatch):
    monkeypatch.setenv(device.REPLAY_ENV, "1")
    monkeypatch.delenv(device.GPU_ENV, raising=False)
    cached = (device.live, device.reader_gpu)  # tests may replace them; clear the real ones
    for f in cached:
        f.cache_clear()
    yield
    for f in cached:
        f.cache_clear()


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """records/ with one measurement of the H100 and one of 'NVIDIA H200'."""
    monkeypatch.setattr(folders, "RECORDS_DIR", tmp_path)
    spec = catalog.get("naive")
    records.save(
        records.Measurement("naive", spec.source, spec.source_sha256(), {"BLOCK": 32}, 64, 64, 64, "fp32", 1.0, 2.0,
                            1e-7, gpu, f"2026-11-{day}T00:00:00+00:00")
        for gpu, day in ((H100, "20"), ("NVIDIA H200", "22"))
    )
    for gpu in (H100, "NVIDIA H200"):  # a complete recording also has ceilings and counters
        for kind in ("device", "ncu"):
            records.upsert(records.gpu_dir(gpu) / f"{kind}.json", [{"gpu": gpu}], ("gpu",))


def nvml(name=None, error=None):
    """A stand-in for pynvml: device 0 is called `name`, or nvmlInit raises `error`."""
    def init():
        if error:
            raise error

    return SimpleNamespace(nvmlInit=init, nvmlDeviceGetHandleByIndex=lambda i: i,
                           nvmlDeviceGetName=lambda h: name.encode())


def test_forced_replay_names_the_gpu_through_nvml_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # importing CuPy would fail
    monkeypatch.setitem(sys.modules, "pynvml", nvml("NVIDIA H200"))
    assert device.reader_gpu() == "NVIDIA H200"


@pytest.mark.parametrize("module", [None, nvml(error=RuntimeError("NVML Shared Library Not Found"))])
def test_no_nvml_or_no_driver_means_no_gpu(monkeypatch, module):
    monkeypatch.setitem(sys.modules, "pynvml", module)
    assert device.reader_gpu() is None


def test_replay_shows_the_readers_gpu_when_it_has_records(sandbox, monkeypatch):
    monkeypatch.setattr(device, "reader_gpu", lambda: "NVIDIA H200")
    assert device.replay_gpu() == "NVIDIA H200"
    assert records.gpu_dir() == folders.RECORDS_DIR / "nvidia-h200"
    text = str(tables.banner())
    assert "recorded on NVIDIA H200, 2026-11-22." in text and "GEMM_LAB_REPLAY is set" in text
    assert "Unset GEMM_LAB_REPLAY to measure your NVIDIA H200" in text


def test_a_gpu_without_records_replays_the_h100_and_says_so(sandbox, monkeypatch):
    monkeypatch.setattr(device, "reader_gpu", lambda: "Tesla T4")
    assert device.replay_gpu() == H100
    text = str(tables.banner())
    assert f"recorded on {H100}, 2026-11-20." in text and "none from your Tesla T4" in text


def test_gemm_lab_gpu_chooses_the_records(sandbox, monkeypatch):
    monkeypatch.setattr(device, "reader_gpu", lambda: "NVIDIA H200")
    monkeypatch.setenv(device.GPU_ENV, H100)
    assert device.replay_gpu() == H100
    assert "GEMM_LAB_GPU chose these records" in str(tables.banner())


def test_no_gpu_replays_the_h100(monkeypatch):
    monkeypatch.delenv(device.REPLAY_ENV)
    monkeypatch.setattr(device, "reader_gpu", lambda: None)
    monkeypatch.setattr(device, "live", lambda: False)
    assert device.replay_gpu() == H100
    text = str(tables.banner())
    assert text.startswith("Replay (no CUDA GPU in use)")
    assert re.search(rf"recorded on {H100}, \d{{4}}-\d{{2}}-\d{{2}}", text)


def test_a_partial_recording_replays_the_h100(sandbox, monkeypatch):
    """Headline results alone (`record --only headline`) cannot replay every page."""
    (records.gpu_dir("NVIDIA H200") / "ncu.json").unlink()
    monkeypatch.setattr(device, "reader_gpu", lambda: "NVIDIA H200")
    assert device.replay_gpu() == H100


def test_a_page_whose_kernels_the_replayed_gpu_lacks_replays_the_gpu_that_has_them(monkeypatch):
    """Chapter 10's kernel, the Ozaki scheme, has its current build recorded on the H200 alone: replayed on the H100
    its page reads the H200's records throughout (one GPU's numbers), and its banner says so."""
    monkeypatch.delenv(device.GPU_ENV, raising=False)  # restored after the test, as the banner sets it
    monkeypatch.setattr(device, "reader_gpu", lambda: None)
    text = str(tables.banner("ch10_ozaki"))
    assert os.environ[device.GPU_ENV] == "NVIDIA H200" and device.replay_gpu() == "NVIDIA H200"
    assert "no records of this page's own kernel (ozaki, its current build), so the page replays the NVIDIA H200's" \
        in text
    monkeypatch.delenv(device.GPU_ENV)
    assert "recorded on NVIDIA H100" in str(tables.banner("ch09_hopper_pipeline"))  # it has some of its kernels
    assert device.GPU_ENV not in os.environ
