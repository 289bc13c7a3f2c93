"""Live on a GPU that cannot run everything (a Colab T4, no ncu): the chapters still run, from the records."""
import warnings
from types import SimpleNamespace

import pytest

from gemm_lab import device, timing
from gemm_lab.models import hardware

T4 = SimpleNamespace(name="Tesla T4", cc=(7, 5))
A100 = SimpleNamespace(name="NVIDIA A100-SXM4-80GB", cc=(8, 0))


@pytest.fixture
def live_t4(monkeypatch):
    monkeypatch.setattr(device, "live", lambda: True)
    monkeypatch.setattr(device, "gpu", lambda: T4)
    monkeypatch.setattr(device, "reader_gpu", lambda: T4.name)
    monkeypatch.delenv(device.GPU_ENV, raising=False)
    device._warn_unsupported.cache_clear()


def test_a_kernel_the_gpu_cannot_run_is_read_back_with_a_warning(live_t4):
    with pytest.warns(UserWarning, match=r"multistage needs a GPU of compute capability 8.0 or newer .*this one is 7.5 "
                                         r"\(Tesla T4\): its results are read back from the records of NVIDIA H100"):
        x = timing.bench("multistage", 4096)
    assert x.replayed and x.gpu == device.DEFAULT_REPLAY_GPU


def test_counters_without_ncu_are_read_back_with_a_warning(live_t4, monkeypatch):
    monkeypatch.setattr(hardware.shutil, "which", lambda name: None)
    with pytest.warns(UserWarning, match="`ncu` is not on PATH: showing the counters recorded on NVIDIA H100"):
        row = hardware.counters("coalesced", (4096,) * 3, {"BLOCK": 32})
    assert row["gpu"] == device.DEFAULT_REPLAY_GPU
    with pytest.warns(UserWarning, match="`ncu` is not on PATH"):  # cuBLAS runs on every GPU: ncu is looked for
        assert hardware.counters("cublas", (4096,) * 3)["kernel"] == "cublas"
    with pytest.raises(RuntimeError, match="not on PATH"), warnings.catch_warnings():
        hardware.counters("coalesced", (4096,) * 3, {"BLOCK": 32}, fallback=False)  # recording never falls back


@pytest.mark.parametrize("gpu", [A100, SimpleNamespace(name="NVIDIA B200", cc=(10, 0))])
def test_wgmma_runs_only_on_hopper_and_mma_on_anything_since_ampere(live_t4, monkeypatch, gpu):
    monkeypatch.setattr(device, "gpu", lambda: gpu)
    with pytest.warns(UserWarning, match=rf"wgmma_tf32 uses Hopper-only instructions .* compiled for sm_90a: it runs "
                                         rf"only on compute capability 9.0 GPUs such as H100/H200; this one is "
                                         rf"{gpu.cc[0]}.{gpu.cc[1]} \({gpu.name}\)"):
        assert not device.runs_here("wgmma_tf32")
    assert device.runs_here("mma_3xtf32")


def test_tensor_core_peaks_a_gpu_lacks_are_read_back_with_a_warning(live_t4, monkeypatch):
    """A T4 measures its own FP32 peak and DRAM copy, and reads the tensor-core peaks (no TF32 mma.sync below 8.0,
    no wgmma off Hopper) from the records, so chapter 8's budget still has its rows."""
    own = {"gpu": T4.name, "peak_gflops": 8100.0, "dram_gbs": 250.0, "sms": 40, "clock_mhz": 1590.0}
    monkeypatch.setattr(hardware, "measured_ceilings", lambda: dict(own))
    with pytest.warns(UserWarning, match=r"Tesla T4 \(compute capability 7.5\) lacks mma.sync and wgmma: its "
                                         r"tensor-core peak is read back from the records of NVIDIA H100"):
        ceil = hardware.ceilings()
    recorded = hardware.records.read_kind("device", device.DEFAULT_REPLAY_GPU)[0]
    assert ceil["peak_gflops"] == own["peak_gflops"] and ceil["gpu"] == T4.name
    assert ceil["mma_sync_tf32_gflops"] == recorded["mma_sync_tf32_gflops"]
    assert ceil["wgmma_tf32_gflops"] == recorded["wgmma_tf32_gflops"]
    with pytest.raises(ValueError, match="read back from another GPU's records"):  # never saved as the T4's own
        hardware.save_ceilings(ceil)
