"""Pruning a parameter space with the offline ptxas report, before anything is timed."""
from gemm_lab import catalog, compiler
from gemm_lab.lab import autotune

GRID = {"BM": (64, 128), "BN": (128,), "BK": (8, 32), "TM": (8,), "TN": (8,), "PREFETCH": (1,)}


def test_prune_keeps_what_compiles_cleanly():
    keep, pruned = autotune.prune("prefetch", GRID, workers=1)
    assert keep and not pruned  # every legal instance of this grid compiles without spills
    assert len(keep) == len(catalog.legal_grid("prefetch", GRID))


def test_prune_drops_spills_and_thin_occupancy(monkeypatch):
    def fake(case):
        p = case[1]
        return compiler.PtxasReport(instance="", arch="sm_90", registers=255 if p["BM"] == 128 else 64,
                                   spill_stores=16 if p["BK"] == 32 else 0, spill_loads=0, stack_bytes=0,
                                   smem_bytes=4096)

    monkeypatch.setattr(autotune, "_ptxas", fake)
    autotune._reports.cache_clear()  # the first test's real reports are cached for this grid
    keep, pruned = autotune.prune("prefetch", GRID, min_warps=16, workers=1)
    autotune._reports.cache_clear()
    why = {(x.params["BM"], x.params["BK"]): x.why for x in pruned}
    assert [(p["BM"], p["BK"]) for p in keep] == [(64, 8)]
    assert why[(64, 32)].startswith("spills 16 bytes")
    assert "resident warps" in why[(128, 8)]  # 255 registers x 256 threads: one block, 8 warps


def test_a_grid_is_compiled_once_per_kernel_build(monkeypatch):
    calls = []

    def fake(case):
        calls.append(case)
        return compiler.PtxasReport(instance="", arch="sm_90", registers=64, spill_stores=0, spill_loads=0,
                                   stack_bytes=0, smem_bytes=4096)

    monkeypatch.setattr(autotune, "_ptxas", fake)
    autotune._reports.cache_clear()
    first = autotune.prune("prefetch", GRID, workers=1)
    second = autotune.prune("prefetch", GRID, workers=1)  # a sweep at the next size prunes the same grid
    autotune._reports.cache_clear()
    assert first == second and len(calls) == len(catalog.legal_grid("prefetch", GRID))


def test_prune_drops_serialized_wgmmas(monkeypatch):
    warning = "ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized"

    def fake(case):
        return compiler.PtxasReport(instance="", arch="sm_90a", registers=168, spill_stores=0, spill_loads=0,
                                   stack_bytes=0, smem_bytes=0,
                                   performance_warnings=(warning,) if case[1]["BM"] == 256 else ())

    monkeypatch.setattr(autotune, "_ptxas", fake)
    autotune._reports.cache_clear()
    keep, pruned = autotune.prune("wgmma_tf32", {"BM": (128, 256), "BN": (128,), "STAGES": (4,)}, workers=1)
    autotune._reports.cache_clear()
    assert [p["BM"] for p in keep] == [128] and [x.why for x in pruned] == [f"ptxas: {warning}"]
