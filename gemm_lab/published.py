"""Numbers published by the articles the book builds on, quoted as data with their source, and the
tables that set them beside our own measurements.
"""
from __future__ import annotations

from .tables import Table, provenance

SEED000 = "seed 000, a Zhihu article on GEMM optimisation (part 2) measured on a V100 at M = N = K = 4096"

# (BM, BK, BN, TM, TN) in the article's column order -> (GFLOP/s on the V100, % of cuBLAS there).
SEED000_TABLE: dict[tuple[int, int, int, int, int], tuple[float, float]] = {
    (64, 16, 64, 4, 4): (13036.2, 86.0),
    (64, 32, 64, 4, 4): (11738.8, 77.5),
    (64, 4, 64, 8, 8): (13065.6, 86.2),
    (64, 8, 64, 8, 8): (13463.9, 88.9),
    (64, 16, 64, 8, 8): (12682.8, 83.7),
    (64, 32, 64, 8, 8): (8517.43, 56.2),
    (128, 16, 128, 8, 8): (13506.8, 89.1),
    (128, 8, 128, 8, 8): (14167.1, 93.5),
}
SEED000_CONFIGS = tuple(SEED000_TABLE)


def seed000_table(size: int = 4096) -> Table:
    """Seed 000's eight configurations: its V100 column beside ours (same run as cuBLAS each), with
    what explains the differences: registers, resident blocks per SM, and the share of FFMA peak
    that shared-memory wavefronts allow on the H100 (128 FP32 lanes per SM) and the V100 (64)."""
    from . import banks, model, plan, timing

    cases = plan.seed_table_cases(size)
    rows, ms = [], []
    for bm, bk, bn, tm, tn in SEED000_CONFIGS:
        tile = {"BM": bm, "BN": bn, "BK": bk, "TM": tm, "TN": tn}
        v100_gflops, v100_pct = SEED000_TABLE[(bm, bk, bn, tm, tn)]
        off, on = (timing.bench("prefetch", size, {**tile, "PREFETCH": p}) for p in (0, 1))
        staged = [timing.bench(k, size, p) for k, p, _ in cases if k == "multistage" and tile.items() <= p.items()]
        best_async = max(staged, key=lambda x: x.gflops)
        ms += [off, on, *staged]
        res = [model.resident("prefetch", x.params) for x in (off, on)]
        rows.append((
            f"{bm}, {bk}, {bn}, {tm}, {tn}", f"{v100_gflops:,.0f}", f"{v100_pct:.1f}%",
            f"{off.pct_cublas:.1f}%", f"{on.gflops:,.0f}", f"{on.pct_cublas:.1f}%",
            f"{best_async.pct_cublas:.1f}% ({best_async.params['STAGES']})",
            " / ".join(str(r["registers"]) for r in res), " / ".join(f"{r['blocks']} ({r['warps']})" for r in res),
            f"{banks.fma_ceiling('prefetch', tile, 128):.0%} / {banks.fma_ceiling('prefetch', tile, 64):.0%}",
        ))
    return Table(
        ("BM, BK, BN, TM, TN", "V100 GFLOP/s", "V100 % cuBLAS", "no prefetch", "prefetch GFLOP/s",
         "prefetch % cuBLAS", "cp.async (stages)", "registers (no / with prefetch)",
         "blocks (warps) per SM, no / with", "shared-memory ceiling H100 / V100"),
        tuple(rows),
        f"M = N = K = {size}. V100 columns: {SEED000} (quoted as data). Ours: {provenance(ms)}; % of cuBLAS "
        f"in the same run; cp.async: the better of 2 and 3 stages. Registers: {res[0]['origin']}.",
    )
