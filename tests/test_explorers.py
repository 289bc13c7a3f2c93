"""The in-page explorers: controls bound to inputs drive filters over the recorded grid."""
import pytest

from gemm_lab import catalog, records
from gemm_lab.pages import grids
from gemm_lab.pages.explorers import sweep_explorer

CASES = [("smem_tiled", "BN", "BM"), ("thread_tile_2d", "BN", "BM"), ("vectorized", "BN", "BM"),
         ("bank_conflicts", "BK", "BM"), ("prefetch", "BK", "BM"), ("multistage", "STAGES", "BK")]


@pytest.mark.parametrize("kernel,x,y", CASES)
def test_controls_are_bound_and_filter_the_recorded_grid(kernel, x, y):
    spec = catalog.get(kernel)
    d = sweep_explorer(kernel, x=x, y=y).to_dict()
    controls = [p for p in spec.param_names if p not in (x, y)]
    params = {p["name"]: p for p in d["params"]}
    for c in controls:
        bound = params[f"pick_{c}"]
        assert bound["bind"]["input"] == "select"
        assert bound["value"] in bound["bind"]["options"]
        assert set(bound["bind"]["options"]) <= set(grids.SWEEPS[kernel][c])
        for layer in d["layer"]:
            assert {"filter": f"datum.{c} == pick_{c}"} in layer["transform"]
    recorded = [m for m in records.measurements(kernel) if m.m == grids.EXPLORER_SIZE]
    assert len(d["data"]["values"]) == len(recorded) > 0
    assert "recorded on" in d["title"]["subtitle"][0] and len(d["title"]["subtitle"]) == 1  # the whole grid


def test_an_explorer_says_what_is_not_recorded_yet(monkeypatch):
    recorded = [m for m in records.measurements("smem_tiled") if m.m == grids.EXPLORER_SIZE]
    monkeypatch.setattr(records, "measurements", lambda kernel, gpu=None: recorded[:-3])
    subtitle = sweep_explorer("smem_tiled").to_dict()["title"]["subtitle"]
    assert subtitle[1] == f"3 of its {len(catalog.legal_grid('smem_tiled', grids.SWEEPS['smem_tiled']))} swept " \
        "instances not recorded yet"
