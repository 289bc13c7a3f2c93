"""A live page measures what its main text quotes and reads the rest back from the records, says so before the wait,
and keeps a ledger of its work that its plan (records/live_plan.json) and the 90 s budget are checked against."""
import json

import pytest

from gemm_lab import catalog, device, liverun, timing, turns


@pytest.fixture
def live(monkeypatch):
    monkeypatch.setattr(device, "live", lambda: True)


def test_replay_measures_nothing(monkeypatch):
    monkeypatch.setattr(device, "live", lambda: False)
    assert not any(liverun.measures(kind) for kind in liverun.KINDS)


def test_off_a_page_everything_live_is_measured(live):
    """Your own notebook, `gemm-lab record` and `gemm-lab sweep` measure what they ask for."""
    assert all(liverun.measures(kind) for kind in liverun.KINDS)


def test_a_page_measures_its_races_and_probes_and_replays_the_rest_unless_asked(live, monkeypatch, capsys):
    monkeypatch.setattr(device, "gpu", lambda: type("G", (), {"peak_gflops": 60_000.0})())
    liverun.SESSION.page = "ch02_smem_tiling"
    assert [k for k in liverun.KINDS if liverun.measures(k)] == ["races", "probes"]
    liverun.measure("counters")
    assert liverun.measures("counters") and not liverun.measures("sweeps")
    assert "counters live from here on" in capsys.readouterr().out
    liverun.lab_notes()
    assert not liverun.measures("races") and not liverun.measures("probes") and liverun.measures("counters")
    liverun.measure("all")
    assert all(liverun.measures(k) for k in liverun.KINDS)
    with pytest.raises(ValueError, match="gl.measure takes all, races"):
        liverun.measure("everything")
    with pytest.raises(ValueError, match="unknown kind"):
        liverun.measures("notes and more")


def test_the_ledger_notes_each_piece_once_and_a_page_measures_it_once(live, monkeypatch, tmp_path):
    ledger = tmp_path / "ledger.json"
    monkeypatch.setenv(liverun.LEDGER_ENV, str(ledger))
    liverun.SESSION.page = "p"
    measured = []
    for _ in range(2):
        with liverun.work("races", "k at 4096", 5.0, instances=[("smem_tiled", {"BM": 32})]) as task:
            assert task.live
            task.result = task.result or measured.append(1) or "result"
    liverun.lab_notes()
    with liverun.work("races", "k at 8192", 9.0) as task:
        assert not task.live
    with liverun.work("counters", "ncu k", 20.0) as task:
        assert not task.live
    assert measured == [1]  # the second call found the first's result
    kept = json.loads(ledger.read_text())
    assert [(x["label"], x["live"], x["planned"], x["estimate_s"]) for x in kept["work"]] == [
        ("k at 4096", True, True, 5.0), ("k at 4096", False, False, 0.0), ("k at 8192", False, False, 9.0),
        ("ncu k", False, False, 20.0)]
    assert kept["work"][0]["instances"] == [["smem_tiled", {"BM": 32}]]


def test_off_a_page_a_second_call_measures_again(live):
    for _ in range(2):
        with liverun.work("races", "k at 4096", 5.0) as task:
            assert task.result is None


def test_a_page_opens_saying_what_it_measures_and_what_it_costs(live, monkeypatch, tmp_path):
    plan = {"gpu": "G", "peak_gflops": 60_000.0, "pages": {"p": {
        "work": [{"kind": "races", "label": "a", "live": True, "estimate_s": 30.0},
                 {"kind": "counters", "label": "b", "live": False, "estimate_s": 40.0}],
        "instances": [["smem_tiled", {"BM": 32, "BN": 32, "BK": 32}]], "compile_s": 4.0, "page_s": 6.0}}}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    monkeypatch.setattr(liverun, "PLAN_FILE", tmp_path / "plan.json")
    monkeypatch.setattr(device, "gpu", lambda: type("G", (), {"peak_gflops": 60_000.0, "arch": "sm_90",
                                                              "cc": (9, 0)})())
    monkeypatch.setattr(device, "runs_here", lambda spec: True)
    words = liverun.page("p")
    assert "measures 1 result now, in about 40 s" in words and "about 4 s of it" in words
    assert "1 more back from the records (counters)" in words and "about 40 s more" in words
    assert liverun.to_compile() == [("smem_tiled", {"BM": 32, "BN": 32, "BK": 32}, "sm_90")]
    assert liverun.SESSION.bar.total == 40.0
    assert liverun.planned(plan["pages"]["p"]) == 40.0


def test_a_smaller_gpu_scales_the_estimate_and_says_it_is_one(live, monkeypatch, tmp_path):
    (tmp_path / "plan.json").write_text(json.dumps({"peak_gflops": 60_000.0, "pages": {"p": {
        "work": [{"kind": "races", "label": "a", "live": True, "estimate_s": 30.0}], "instances": [],
        "compile_s": 0.0, "page_s": 0.0}}}))
    monkeypatch.setattr(liverun, "PLAN_FILE", tmp_path / "plan.json")
    monkeypatch.setattr(device, "gpu", lambda: type("T4", (), {"peak_gflops": 8_000.0, "arch": "sm_75"})())
    words = liverun.page("p")
    assert "in about 225 s" in words and "an estimate, scaled from the recording GPU by FP32 peak" in words


def test_replay_banners_say_nothing_of_a_live_plan(monkeypatch):
    monkeypatch.setattr(device, "live", lambda: False)
    assert liverun.page("ch02_smem_tiling") == ""


def test_a_page_races_key_shares_settled_and_the_rest_short():
    k14 = catalog.get("wgmma_ws_tf32")
    assert turns.reader_method(k14.name, k14.full_params(), (8192,) * 3) is turns.BRIEF
    assert turns.reader_method(k14.name, {**k14.full_params(), "GROUP": 4}, (8192,) * 3) is turns.SHORT
    assert turns.reader_method(k14.name, k14.full_params(), (2048,) * 3) is turns.SHORT
    assert turns.reader_method("smem_tiled", catalog.get("smem_tiled").full_params(), (4096,) * 3) is turns.SHORT
    assert turns.BRIEF.turn_settle_ms == turns.SUSTAINED.turn_settle_ms and turns.BRIEF.rounds == 4
    assert timing.default_method("smem_tiled", {}, (4096,) * 3) is turns.SUSTAINED  # off a page
    liverun.SESSION.page = "p"
    assert timing.default_method("smem_tiled", {}, (4096,) * 3) is turns.SHORT


def test_a_race_costs_its_warm_up_lead_in_rounds_and_settles():
    """Launches of 1 ms: SUSTAINED settles 1 s a side, then 8 turns of 275 ms and 7 settles of 250 ms a side."""
    assert turns.SUSTAINED.seconds(1.0, 1.0) == pytest.approx(2 * (6 + 1000 + 8 * 275 + 7 * 250) / 1e3)
    assert turns.SHORT.seconds(1.0, 1.0) < 1.0
    slow = turns.SHORT.seconds(2000.0, 1.0)  # a naive kernel at 8192: 2 warm-ups, a lead-in turn, 4 timed
    fast_turn = turns.SHORT.per_turn(1.0, turns.SHORT.min_runs)  # cuBLAS's side: turns of 50 ms, 10 % long
    assert slow == pytest.approx((7 * 2000.0 + (6 + 5 * fast_turn) * 1.0) / 1e3)
