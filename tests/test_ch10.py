"""Chapter 10's helpers, on the CPU: the Chinese-remainder arithmetic a reader does by hand, the bits the moduli buy,
the pipeline's least traffic, the speed of light and stage tables from the records, and the chapter's pictures and
charts redrawn from other instances."""
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gemm_lab import catalog, records
from gemm_lab.pages import diagrams, plots, precision_tables, style, tables
from gemm_lab.precision import emulation, int8, ozaki  # noqa: E402


def _gids(fig) -> list[str]:
    return [p.get_gid() for ax in fig.axes for p in ax.patches if p.get_gid()]


@pytest.mark.parametrize("moduli", [(3, 5, 7), (4, 9, 25), (255, 253, 251)])
def test_crt_rebuilds_every_integer_within_p_from_its_residues(moduli):
    big = math.prod(moduli)
    for x in (0, 1, -1, big // 2, -((big - 1) // 2), 38 % big, -(38 % big)):  # [-(P - 1) / 2, P / 2]
        assert ozaki.crt([x % p for p in moduli], moduli) == x
    w = ozaki.weights(moduli)
    assert all(w[i] % q == (q == p) for i, p in enumerate(moduli) for q in moduli)


def test_the_worked_example_of_the_chapter():
    assert ozaki.weights((3, 5, 7)) == [70, 21, 15]
    a, b = np.array([5, 3]), np.array([4, 6])
    assert ozaki.crt([int((a % p) @ (b % p)) % p for p in (3, 5, 7)], (3, 5, 7)) == 38


def test_bad_moduli_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="not pairwise coprime"):
        ozaki.weights((4, 6, 7))
    with pytest.raises(ValueError, match="between 1 and 9"):
        ozaki.product(10)
    with pytest.raises(ValueError, match="residues for"):
        ozaki.crt([1, 2], (3, 5, 7))
    with pytest.raises(ValueError, match="no bits at all"):
        ozaki.norm_bound((3, 5, 7), 4096)


def test_each_modulus_buys_about_four_bits_and_eight_keep_fp32s():
    g = [ozaki.bits(m, 4096)["G"] for m in range(6, 10)]
    assert all(3.8 < b - a < 4.1 for a, b in zip(g, g[1:]))
    assert 24 <= ozaki.bits(8, 4096)["element_bits"] < 26


def test_the_numpy_model_takes_moduli_of_its_own():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((16, 200)).astype(np.float32), rng.standard_normal((200, 8)).astype(np.float32)
    mods = (255, 253, 251, 247, 241, 239, 233)
    ra, rb, e, f = ozaki.residues(a, b, mods)
    c = ozaki.reconstruct([x @ y for x, y in zip(ra, rb)], e, f, mods)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - ref).max() / np.abs(ref).max() < 2.0 ** (4 - ozaki.bits(mods, 200)["element_bits"])


def test_traffic_counts_the_planes_as_the_kernels_pad_them():
    t = ozaki.traffic(8, 100, 60, 30)  # K padded to 32 bytes, N to 64 (the residues of C: rows of whole 16 bytes)
    assert t["split"][1] == 8 * (100 + 60) * 32
    assert t["products"] == (8 * 160 * 32, 8 * 100 * 64)
    assert t["reconstruct"][1] == 4 * 100 * 60 and t["scale"][0] == 4 * (100 * 30 + 30 * 60)


def test_speed_of_light_is_the_int8_rate_over_the_moduli(replay):
    import gemm_lab as gl

    sol, gpu = emulation.speed_of_light(8192, 8), emulation.scheme_gpu()  # the GPU whose records hold the races
    assert sol.int8_tops == pytest.approx(_k15(8192, gpu).cublas_gflops / 1e3)
    assert sol.tflops == pytest.approx(sol.int8_tops / 8)
    sgemm = records.lookup("cublas", {}, 8192, 8192, 8192, gpu=gpu)
    assert sol.times_sgemm == pytest.approx(sol.tflops / (sgemm.gflops / 1e3))
    assert gl.bench("ozaki", 8192).gpu == gpu
    assert sol.products_ms == pytest.approx(8 * 2 * 8192**3 / (sol.int8_tops * 1e12) * 1e3)
    table = precision_tables.speed_of_light_table((4096, 8192), (6, 9))
    assert [r[0] for r in table.rows] == ["6", "9"] and len(table.columns) == 7


def test_stage_table_and_speed_tables_read_the_records(replay):
    import gemm_lab as gl

    t = precision_tables.stage_table(8192)
    assert [r[0] for r in t.rows] == list(ozaki.STAGES) and "TOP/s" in t.rows[ozaki.STAGES.index("products")][4]
    assert "recorded on" in emulation.stage_source()
    x = gl.bench("ozaki", 8192)
    assert x.method == "sustained" and x.details["moduli"] in ozaki.CANDIDATES
    row = precision_tables.race_table([x]).rows[0]
    assert row[1] == f"auto ({x.details['moduli']})" and row[2] == f"{x.pct_cublas:.0f}%"
    assert row[3] == tables.clock_and_power(x.telemetry) and "W" in row[3] and "power_w" not in x.telemetry
    assert row[4] == f"{x.gflop_per_joule():,.0f}" and row[6] == f"{x.gflop_per_joule(cublas=True):,.0f}"
    assert precision_tables.int8_table((4096,)).rows[0][3].startswith(f"{int8.bench(4096).pct_cublas:.1f}%")


def test_speed_of_light_at_the_measured_clock(replay):
    import gemm_lab as gl

    x = gl.bench("ozaki", 8192)
    k15 = _k15(8192, x.gpu)  # the same GPU's rate
    ceiling = emulation.clock_speed_of_light(x)
    assert ceiling == pytest.approx(k15.gflops / 1e3 * x.telemetry["sm_clock_mhz"] / k15.telemetry["sm_clock_mhz"]
                                    / x.details["moduli"])
    assert x.gflops / 1e3 < ceiling  # a measurement below its own ceiling, clock and all


def test_the_choices_table_reads_each_reports_verdict(replay):
    table = precision_tables.choices()
    assert len(table.rows) == len(emulation.cases())
    by_inputs = {r[1]: r for r in table.rows if r[0] == "4096×4096×4096"}
    assert by_inputs["outlier channel"][6] != "0"  # the outlier column was shifted
    for row in table.rows:
        fell_back = row[7].startswith("yes")
        assert (row[2] == "–") == fell_back
        if fell_back:
            assert row[4] == "1.00"  # SGEMM ran: its own error
            assert float(row[3].split()[0]) > 1.0 or float(row[5]) > 1.0  # the rule's reason is in the row
        else:
            assert int(row[2]) in ozaki.CANDIDATES and float(row[3]) <= 1.0 and float(row[5]) <= 1.0
            assert float(row[4]) <= float(row[3]) + 0.01  # the estimate is no rosier than the measurement
    # chapter 10 counts the inputs whose estimate held by comparing columns 3 and 4: the estimate and the measurement
    assert table.columns[3].startswith("estimated") and table.columns[4].startswith("measured")
    assert all(by_inputs[emulation.case_name(phi)][7].startswith("yes") for phi in emulation.PHIS if phi >= 4)


def test_one_row_per_method_after_a_re_recording(replay):
    rows = emulation.errors(emulation.PHI_SHAPE, emulation.PHIS[-1])
    keys = [(e.method, e.params.get("MODULI")) for e in rows]
    assert len(keys) == len(set(keys)) == len(emulation.METHODS)


def test_equilibration_repairs_the_outlier_channel_in_the_model():
    err = emulation.outlier_model()
    assert err["plain"] > 100 * err["float32"] and err["equilibrated"] <= err["float32"]
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((8, 20)), rng.standard_normal((20, 4))
    a[:, 3] *= 2.0**20
    b[3, :] *= 2.0**-20
    s = ozaki.shifts(a, b)
    assert abs(s[3] + 20) <= 1 and np.abs(s[np.arange(20) != 3]).max() <= 1  # the outlier, not the rest
    ra, _, _, _ = ozaki.residues(a, b, 7, s)
    assert all(((-p // 2 <= r) & (r < p - p // 2)).all() for r, p in zip(ra, ozaki.MODULI))  # signed: fits int8
    assert max(int(np.abs(r).max()) for r in ra) <= 128


def test_outlier_picture_redraws_from_its_arguments():
    for k, column, factor in ((48, 16, 1e6), (20, 0, 1e4)):
        fig = diagrams.outlier_channel(k=k, column=column, factor=factor)
        try:
            for ax in fig.axes:
                bars = [p for p in ax.patches if p.get_gid()]
                assert len(bars) == k and bars[column].get_gid() == "outlier"
            plain, equilibrated = ([p.get_height() for p in ax.patches if p.get_gid() == "column"] for ax in fig.axes)
            assert np.median(equilibrated) > np.median(plain) + 8 and not style.fits(fig)
        finally:
            plt.close(fig)
    with pytest.raises(ValueError, match="columns 0 to"):
        diagrams.outlier_channel(k=8, column=8)


def test_median_error_chart_pairs_each_race_with_its_accuracy_record(replay):
    import gemm_lab as gl

    errs = emulation.errors(emulation.HEADLINE_SHAPE, None)
    ms = [gl.bench("ozaki", 8192), gl.bench("ozaki", 8192, {"MODULI": 6}), gl.cublas(8192)]
    fig = plots.median_error_vs_speed(ms, errs)
    try:
        points = [c.get_offsets()[0] for c in fig.axes[0].collections]
        assert len(points) == 3 and not style.fits(fig)
        auto = next(e for e in errs if e.method == "ozaki" and e.params["MODULI"] == 0)
        assert tuple(points[0]) == pytest.approx((ms[0].gflops / 1e3, auto.median_rel_err))
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="no accuracy record"):
        plots.median_error_vs_speed([gl.bench("ozaki", 4096)], errs)


def test_crt_picture_redraws_from_its_moduli_and_number():
    for moduli, x in (((3, 5, 7), 38), ((4, 9), -11)):
        fig = diagrams.crt(moduli, x)
        try:
            big = math.prod(moduli)
            gids = _gids(fig)
            for p in moduli:
                assert gids.count(f"p={p}") == big // p  # every integer of the range with x's residue
            assert gids.count("all") == 1 and not style.fits(fig)
        finally:
            plt.close(fig)
    with pytest.raises(ValueError, match="pin down"):
        diagrams.crt((3, 5, 7), 60)


def test_pipeline_picture_redraws_from_the_instance_and_size():
    texts = []
    for params, size in (({"MODULI": 8}, 8192), ({"MODULI": 6}, (1000, 2000, 512))):
        fig = diagrams.ozaki_pipeline(params, size)
        try:
            assert sorted(_gids(fig)) == sorted(ozaki.STAGES) and not style.fits(fig)
            bars = [p.get_width() for p in fig.axes[1].patches]
            t = ozaki.traffic(params["MODULI"], *((size,) * 3 if isinstance(size, int) else size))
            assert bars == pytest.approx([t[s][0] / 1e9 for s in ozaki.STAGES] + [t[s][1] / 1e9 for s in ozaki.STAGES])
            texts.append(" ".join(t.get_text() for ax in fig.axes for t in ax.texts))
        finally:
            plt.close(fig)
    assert "8 exact INT8" in texts[0] and "6 exact INT8" in texts[1]
    with pytest.raises(ValueError, match=r"MODULI must be 0 \(auto"):
        diagrams.ozaki_pipeline({"MODULI": 5}, 1024)


def test_stage_chart_stacks_each_size_against_sgemm(replay):
    import gemm_lab as gl

    times = {s: emulation.stage_ms(s) for s in emulation.STAGE_SIZES}
    fig = plots.stage_costs(times, [gl.cublas(s) for s in emulation.STAGE_SIZES], "test")
    try:
        widths = [p.get_width() for p in fig.axes[0].patches]  # per size: its stages, then SGEMM's own bar
        per_size = len(ozaki.STAGES) + 1
        assert len(widths) == len(times) * per_size and not style.fits(fig)
        assert widths[per_size - 1::per_size] == [100] * len(times)
        s = emulation.STAGE_SIZES[-1]
        sgemm_ms = 2e-6 * s**3 / gl.cublas(s).gflops
        assert sum(widths[-per_size:-1]) == pytest.approx(100 * sum(times[s].values()) / sgemm_ms)
        assert f"{sgemm_ms:.2f} ms" in {t.get_text() for t in fig.axes[0].texts}  # SGEMM's time beside its bar
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="no cuBLAS SGEMM"):
        plots.stage_costs(times, [gl.cublas(4096)], "test")


@pytest.mark.parametrize("along", ["k", "phi"])
def test_error_charts_draw_a_line_per_method_in_both_panels(along, replay):
    cases = [(s, None) for s in emulation.ERROR_VS_K] if along == "k" else \
        [(emulation.PHI_SHAPE, phi) for phi in emulation.PHIS]
    rows = [e for shape, phi in cases for e in emulation.errors(shape, phi)]
    fig = plots.errors(rows, along)
    try:
        methods = {(e.method, e.params.get("MODULI")) for e in rows}
        for ax in fig.axes[:2]:
            assert len(ax.lines) == len(methods) and all(len(line.get_xdata()) == len(cases) for line in ax.lines)
        assert not style.fits(fig)
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="'k' or 'phi'"):
        plots.errors(rows, "m")


def test_the_ozaki_rows_of_speed_charts_are_named_by_their_moduli(replay):
    import gemm_lab as gl

    assert plots.label(gl.bench("ozaki", 8192, {"MODULI": 7})) == "Ozaki, 7 moduli"
    assert catalog.get("ozaki").chapter == "ch10_ozaki"


def _k15(size: int, gpu: str):
    """Kernel 15's recorded race beside cuBLAS INT8 on that GPU."""
    return records.lookup(int8.PROBE.name, int8.full_params(), size, size, size, gpu=gpu)
