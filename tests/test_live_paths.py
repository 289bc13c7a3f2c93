"""Live code paths on the CPU, with NumPy standing in for CuPy: a kernel fault becomes an error that names the
kernel and says to restart, each measurement carries the SM clock and power read while it was timed, and each
kernel is timed beside cuBLAS in the math of its precision."""
import dataclasses
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from gemm_lab import catalog, device, run, telemetry, timing, turns, yardstick

GPU = SimpleNamespace(name="Test GPU", driver="580.65", cuda_runtime="13.0", cupy="14.0.0", peak_gflops=60_000.0,
                      l2_bytes=50 * 2**20, smem_per_block=227 * 1024, cc=(9, 0), arch="sm_90")
TELEMETRY = {"sm_clock_mhz": 1755.0, "power_w": 612.5, "temperature_c": 61.0}
ROUNDS = 4  # the stand-in sustained race's rounds: 5 launches a turn make MIN_RUNS


class CUDARuntimeError(RuntimeError):
    pass


class CUDADriverError(RuntimeError):
    pass


@pytest.fixture
def log(monkeypatch):
    """A live stand-in GPU and a CuPy made of NumPy; the returned list records what reached the 'GPU'. Timings take
    exactly MIN_RUNS launches (a sustained race with no lead-in or turn length, in ROUNDS rounds) unless a test says
    otherwise."""
    monkeypatch.setattr(turns, "SUSTAINED", turns.Method("sustained", settle_ms=0.0, rounds=ROUNDS, turn_ms=0.0))
    events = []

    class Event:
        def record(self):
            events.append("record")

        def synchronize(self):
            events.append("sync")

    linalg = SimpleNamespace(COMPUTE_TYPE_DEFAULT=1, COMPUTE_TYPE_TF32=7, types={np.float32: 1})
    linalg.get_compute_type = lambda dtype: linalg.types[dtype]
    linalg.set_compute_type = lambda dtype, value: linalg.types.__setitem__(dtype, value)

    def matmul(a, b, out=None):
        events.append("cublas" if linalg.types[np.float32] == 1 else "cublas tf32")
        return None if a is None else np.matmul(a, b, out=out)

    cupy = SimpleNamespace(
        float32=np.float32, float64=np.float64, nan=np.nan, empty=np.empty, full=np.full, matmul=matmul,
        ndarray=np.ndarray,
        cuda=SimpleNamespace(Event=Event, get_elapsed_time=lambda start, end: 0.5, Device=lambda: Event(),
                             runtime=SimpleNamespace(CUDARuntimeError=CUDARuntimeError),
                             driver=SimpleNamespace(CUDADriverError=CUDADriverError)),
    )
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy._core", SimpleNamespace(_routines_linalg=linalg))
    monkeypatch.setitem(sys.modules, "cupy._core._routines_linalg", linalg)
    monkeypatch.setattr(device, "live", lambda: True)
    monkeypatch.setattr(device, "gpu", lambda: GPU)
    class Telemetry:  # NVML's readings while the launches run: TELEMETRY, one sample per phase
        def __init__(self):
            self.phases = []

        def phase(self, kind, started, finished):
            self.phases.append(kind)

        def start(self):
            return self

        def finish(self):
            events.append("telemetry")
            return {kind: dict(TELEMETRY, samples=float(len(self.phases))) for kind in self.phases}

    monkeypatch.setattr(telemetry, "Telemetry", Telemetry)
    rng = np.random.default_rng(0)
    monkeypatch.setattr(run, "random_inputs", lambda m, n, k, seed=None: (
        rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.uniform(-1, 1, (k, n)).astype(np.float32)))
    monkeypatch.setattr(timing, "input_sets", lambda m, n, k: [(None, None, None)])
    monkeypatch.setattr(run, "_as_operand", lambda x, name: x)  # NumPy arrays have no device pointer to align
    return events


def launching(log, fault=None):
    """A stand-in for run.launcher whose launches log 'kernel' and compute C on the CPU, or raise `fault`."""
    def launcher(inst, a, b, *, alpha=1.0, beta=0.0, out, round_copies=False):
        assert isinstance(inst, catalog.Instance) and not round_copies

        class Launch:  # run.Launch: a call that returns C, and what it chose
            report = None

            def __call__(self):
                log.append("kernel")
                if fault:
                    raise fault
                if a is not None:
                    out[...] = a @ b
                return out
        return Launch()
    return launcher


ILLEGAL_ADDRESS = CUDARuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")


@pytest.mark.parametrize("fault", [ILLEGAL_ADDRESS, CUDADriverError("CUDA_ERROR_ILLEGAL_ADDRESS")])
def test_a_fault_at_launch_names_the_kernel_and_says_restart(log, monkeypatch, fault):
    monkeypatch.setattr(run, "launcher", launching(log, fault))
    a, b = run.random_inputs(8, 8, 8)
    with pytest.raises(run.KernelFault) as err:
        run.gemm("smem_tiled", a, b, {"BM": 16, "BN": 16, "BK": 8})
    text = str(err.value)
    assert "smem_tiled with {'BM': 16, 'BN': 16, 'BK': 8}" in text and "ILLEGAL" in text.upper()
    assert "context is now unusable" in text and "restart the Python kernel" in text
    assert err.value.__cause__ is fault
    with pytest.raises(run.KernelFault, match=r"naive with \{'BLOCK': 32\} at M=9, N=7, K=5"):
        timing.bench("naive", (9, 7, 5))


def test_a_fault_that_surfaces_at_the_next_synchronisation_is_named_too(log, monkeypatch):
    monkeypatch.setattr(run, "launcher", launching(log))

    def sync():  # the launch returned; CUDA reports the fault at the next synchronisation
        raise ILLEGAL_ADDRESS

    monkeypatch.setattr(sys.modules["cupy"].cuda, "Device", lambda: SimpleNamespace(synchronize=sync))
    with pytest.raises(run.KernelFault, match=r"naive with \{'BLOCK': 16\} at M=3, N=4, K=5: cudaErrorIllegal"):
        run.measure_error(catalog.instance("naive", {"BLOCK": 16}, (3, 4, 5)))


def test_other_errors_pass_through_unchanged(log, monkeypatch):
    monkeypatch.setattr(run, "launcher", launching(log, ValueError("out must be a C-contiguous, 16-byte aligned")))
    with pytest.raises(ValueError, match="16-byte aligned"):
        run.gemm("naive", *run.random_inputs(8, 8, 8))
    with pytest.raises(ValueError, match="A is 8x8 and B is 9x8: inner dimensions differ"):
        run.gemm("naive", run.random_inputs(8, 8, 8)[0], run.random_inputs(9, 8, 9)[1])


def test_a_measurement_carries_the_telemetry_read_while_its_launches_ran(log, monkeypatch):
    monkeypatch.setattr(run, "launcher", launching(log))
    x = timing.bench("naive", 16)
    phases = 2 * ROUNDS  # the kernel's turns and cuBLAS's, each a phase of the telemetry
    per_turn = turns.MIN_RUNS // ROUNDS  # each turn's events span 0.5 ms in the stand-in, over its launches
    assert x.telemetry == x.cublas_telemetry == dict(TELEMETRY, samples=phases, timed_ms=ROUNDS * 0.5)
    assert x.time_ms == 0.5 / per_turn and x.gflops > 0
    last_launch = max(i for i, what in enumerate(log) if what.startswith(("kernel", "cublas")))
    assert last_launch < log.index("telemetry") < log.index("sync", last_launch)  # while the launches are queued
    # the verification, warm-up, untimed turn, then the timed turns:
    assert log.count("kernel") == 1 + 2 * turns.WARMUP + per_turn + turns.MIN_RUNS and x.runs == turns.MIN_RUNS
    assert x.rounds_pct == [100.0] * ROUNDS

    log.clear()
    y = timing.cublas(16)
    last_launch = max(i for i, what in enumerate(log) if what == "cublas")
    assert y.telemetry == dict(TELEMETRY, samples=ROUNDS, timed_ms=ROUNDS * 0.5)
    assert last_launch < log.index("telemetry") < log.index("sync", last_launch)
    assert y.cublas_telemetry == {} and y.rounds_pct == []  # cuBLAS alone races nobody


def test_kernel_and_cublas_take_turns_in_mirrored_order(log, monkeypatch):
    """After each side's warm-up and an untimed turn of each, ROUNDS turns each: kernel then cuBLAS, cuBLAS then
    kernel, ... so that a drift of the clock over the run weighs on both sides alike."""
    monkeypatch.setattr(run, "launcher", launching(log))
    timing.bench("naive", 16)
    launches = [what for what in log if what in ("kernel", "cublas")][1 + 4 * turns.WARMUP:]
    per_turn = turns.MIN_RUNS // ROUNDS
    sides = [launches[i] for i in range(0, len(launches), per_turn)]
    assert len(launches) == 2 * (turns.MIN_RUNS + per_turn)
    assert all(set(launches[i:i + per_turn]) == {sides[i // per_turn]} for i in range(0, len(launches), per_turn))
    assert sides == ["cublas", "kernel"] + ["kernel", "cublas", "cublas", "kernel"] * (ROUNDS // 2)


def test_the_record_keeps_each_rounds_share_of_cublas(log, monkeypatch):
    """Kernel launches of 1.0 ms against cuBLAS's 0.9, 1.1, 1.0, 1.2 ms in its four turns: 90, 110, 100, 120 % per
    round; each side's time is the median of its turns' time per launch."""
    monkeypatch.setattr(run, "launcher", launching(log))
    before = 2 * turns.WARMUP + turns.MIN_RUNS // ROUNDS  # cuBLAS's warm-up and lead-in, at 1.0 ms
    clocked(log, monkeypatch, {"kernel": lambda n: 1.0,
                               "cublas": lambda n: 1.0 if n < before else (0.9, 1.1, 1.0, 1.2)[(n - before) // 5]})
    x = timing.bench("naive", 16)
    assert x.rounds_pct == pytest.approx([90.0, 110.0, 100.0, 120.0])
    assert x.time_ms == pytest.approx(1.0) and x.cublas_time_ms == pytest.approx(1.05)


def test_a_turn_is_timed_by_one_pair_of_events_around_its_launches(log, monkeypatch):
    """No event between two timed launches: one there costs cuBLAS more than our kernels (measured on the
    H100). The lead-in's last quarter runs under one pair too (it sizes the turns)."""
    monkeypatch.setattr(run, "launcher", launching(log))
    timing.bench("naive", 16)
    per_turn = turns.MIN_RUNS // ROUNDS
    order = ["kernel", "cublas", "cublas", "kernel"] * (ROUNDS // 2)
    timed = [w for w in log if w in ("record", "kernel", "cublas")][-len(order) * (per_turn + 2):]
    assert timed == [w for who in order for w in ["record", *[who] * per_turn, "record"]]
    lead_in = [w for w in log if w in ("record", "kernel", "cublas")][-len(order) * (per_turn + 2) - 3:][:3]
    assert lead_in == ["record", "kernel", "record"]  # the lead-in's last quarter: its last launch, of 5


def clocked(log, monkeypatch, ms):
    """CUDA events that read a clock advancing `ms` for each launch that reached the stand-in GPU, or, given a dict,
    ms[kind](n) for the nth launch of that kind."""
    def duration(kind, n):
        return ms[kind](n) if isinstance(ms, dict) else ms

    class Event:
        def record(self):
            seen, self.at = {}, 0.0
            for what in log:
                if what not in ("sync", "telemetry", "record"):
                    self.at += duration(what, seen.get(what, 0))
                    seen[what] = seen.get(what, 0) + 1

        def synchronize(self):
            log.append("sync")

    monkeypatch.setattr(sys.modules["cupy"].cuda, "Event", Event)
    monkeypatch.setattr(sys.modules["cupy"].cuda, "get_elapsed_time", lambda start, end: end.at - start.at)


def runs_of(log):
    """The log's launches as (what, how many in a row)."""
    out = []
    for what in (w for w in log if w not in ("sync", "telemetry")):
        if out and out[-1][0] == what:
            out[-1] = (what, out[-1][1] + 1)
        else:
            out.append((what, 1))
    return out


def test_a_sustained_race_settles_then_takes_turns_of_at_least_turn_ms(log, monkeypatch):
    """Each launch takes 0.25 ms: turns of 2.5 ms need 10 launches, a lead-in of 10 ms 40, kernel and cuBLAS alike;
    the record says how many were timed and how long."""
    monkeypatch.setattr(run, "launcher", launching(log))
    clocked(log, monkeypatch, 0.25)
    monkeypatch.setattr(turns, "TURN_HEADROOM", 1.0)
    monkeypatch.setattr(turns, "FFMA_SETTLE_MS", 10.0)
    method = turns.Method("sustained", settle_ms=10.0, rounds=4, turn_ms=2.5)
    x = timing.bench("naive", 16, method=method)
    assert (method.per_turn(0.25, turns.MIN_RUNS), method.lead_in(0.25, 10)) == (10, 40)
    assert x.runs == 40 and log.count("kernel") == 1 + 2 * turns.WARMUP + 40 + 40  # + the lead-in
    assert log.count("cublas") == 2 * turns.WARMUP + 40 + 40 and x.method == "sustained"
    assert x.telemetry["timed_ms"] == x.cublas_telemetry["timed_ms"] == method.side_ms == 4 * 2.5
    monkeypatch.setattr(turns, "FFMA_SETTLE_MS", 1.0)  # FP32 races settle for FFMA_SETTLE_MS at most
    assert method.for_precision("fp32").lead_in(0.25, 10) == 10 and method.for_precision("tf32") == method
    short = turns.Method("short", settle_ms=0.0, rounds=4, turn_ms=0.1)  # never fewer than MIN_RUNS
    assert timing.bench("naive", 16, method=short).runs == turns.MIN_RUNS


def test_a_side_short_of_its_timed_time_gets_a_mirrored_pair_of_rounds_more(log, monkeypatch):
    """The lead-in's timed last quarter took 0.5 ms a launch, the rounds' take 0.25: turns of 5 launches time
    1.25 ms, 5 ms a side of the 10 asked, so a pair of rounds (A B, B A) of 2.5 ms turns follows. Small work whose
    turns stop at max_turn_launches gets none."""
    warm = 2 * turns.WARMUP  # each side's warm-up; its lead-in of 10 then times its last 2 launches

    def lead_ending_at(ms):  # a side's nth launch: `ms` in the lead-in's timed last quarter, else 0.25 ms
        return lambda n: ms if warm + 8 <= n < warm + 10 else 0.25

    clocked(log, monkeypatch, {"a": lead_ending_at(0.5), "b": lead_ending_at(0.5)})
    monkeypatch.setattr(turns, "TURN_HEADROOM", 1.0)
    method = turns.Method("sustained", settle_ms=0.0, rounds=4, turn_ms=2.5)
    a, b = [lambda: log.append("a")], [lambda: log.append("b")]
    mine, theirs = turns.race([a, b], 4, method)
    assert mine.runs == theirs.runs == 4 * 5 + 2 * 10
    assert mine.telemetry["timed_ms"] == theirs.telemetry["timed_ms"] == method.side_ms
    # the warm-ups (A, then B), the lead-ins (B, then A: a turn of 10 each at the warm-up's 0.25 ms), 4 rounds of
    # turns of 5, then the pair's turns of 10
    assert runs_of(log) == [("a", warm), ("b", warm + 10), ("a", 10 + 5), ("b", 5 + 5), ("a", 5 + 5), ("b", 5 + 5),
                            ("a", 5 + 10), ("b", 10 + 10), ("a", 10)]
    assert len(mine.turns_ms) == 6
    log.clear()
    clocked(log, monkeypatch, {"a": lead_ending_at(0.3), "b": lead_ending_at(0.3)})  # turns of 9: 1 ms a side short
    mine, _ = turns.race([a, b], 4, method)
    assert runs_of(log)[-1] == ("a", 10) and len(mine.turns_ms) == 6  # the pair's turns as long as the rounds'
    log.clear()
    clocked(log, monkeypatch, 0.25)
    method = dataclasses.replace(method, max_turn_launches=4)  # 2.5 ms would take 10 launches of 0.25
    mine, theirs = turns.race([a, b], 4, method)
    assert method.capped(0.25) and mine.runs == theirs.runs == 4 * 4 and mine.telemetry["timed_ms"] == 16 * 0.25


def test_a_turn_that_follows_the_other_sides_first_settles_untimed(log, monkeypatch):
    """Four mirrored rounds run A B, B A, A B, B A after the lead-ins (B, then A): the turns that follow the other
    side's are B, A, B, A (the 2nd, 4th, 6th and 8th), so each side runs two settles of turn_lead launches (1 ms over
    launches of 0.25 ms: 4), none timed; a turn after its own side's, and FP32's races, start timed at once."""
    clocked(log, monkeypatch, 0.25)
    monkeypatch.setattr(run, "launcher", launching(log))
    monkeypatch.setattr(turns, "TURN_HEADROOM", 1.0)
    method = turns.Method("sustained", settle_ms=10.0, rounds=4, turn_ms=2.5, turn_settle_ms=1.0)
    a, b = [lambda: log.append("a")], [lambda: log.append("b")]
    mine, theirs = turns.race([a, b], turns.MIN_RUNS, method)
    assert method.turn_lead(0.25) == 4 and mine.runs == theirs.runs == 4 * 10
    assert log.count("a") == log.count("b") == 2 * turns.WARMUP + 40 + 4 * 10 + 2 * 4
    assert method.for_precision("fp32").turn_settle_ms == 0 and method.for_precision("ozaki") == method
    assert timing.bench("naive", 16, method=method).turn_settle_ms == 0  # FP32: kernel and SGEMM share one clock


def test_a_turns_settle_runs_outside_its_events_and_its_telemetry_phase_spans_them(log, monkeypatch):
    """In a tensor-core race, the untimed launches before a turn that follows the other side's come before the turn's
    start event; the telemetry's phase for the turn has started (start event reached) and not finished during its
    launches, and has finished once its end event is reached, so the other side's settle counts for neither."""
    clocked(log, monkeypatch, 0.25)
    cuda = sys.modules["cupy"].cuda
    recorded = cuda.Event.record

    class Event(cuda.Event):  # the stand-in GPU reaches an event as soon as it is recorded
        done = False

        def record(self):
            recorded(self)
            self.done = True
            log.append("record")

    monkeypatch.setattr(cuda, "Event", Event)
    phases = []
    monkeypatch.setattr(telemetry, "Telemetry", lambda: SimpleNamespace(
        start=lambda: SimpleNamespace(phase=lambda *p: phases.append(p), finish=lambda: {"0": {}, "1": {}})))
    seen = []  # at each launch: the newest phase's kind, and whether it has started and finished

    def side(name):
        return [lambda: (log.append(name), seen.append((name, *(
            (p[0], p[1](), p[2]()) if (p := phases[-1] if phases else None) else (None,)))))]

    method = turns.Method("sustained", settle_ms=0.0, rounds=2, turn_ms=1.0, turn_settle_ms=0.5)
    monkeypatch.setattr(turns, "TURN_HEADROOM", 1.0)
    turns.race([side("a"), side("b")], 4, method)
    # after the lead-ins (B, then A), rounds A B, B A: B's first turn follows A's, so it settles for 2 launches first
    tail = "".join("|" if w == "record" else w for w in log if w in ("a", "b", "record"))  # | : an event
    assert tail.endswith("|aaaa|bb|bbbb||bbbb|aa|aaaa|")
    kind = {"a": "0", "b": "1"}  # the telemetry's name for each side
    in_rounds = [s for s in seen if s[1] is not None]  # once the first turn's phase is declared
    assert [s for s in in_rounds if s[1] != kind[s[0]]] == [("b", "0", True, True)] * 2 + [("a", "1", True, True)] * 2
    assert all(s[2:] == (True, False) for s in in_rounds if s[1] == kind[s[0]])  # started, not finished, while it runs


def test_only_a_race_with_todays_settles_holds_as_sustained():
    """A tensor-core record from before turns settled (turn_settle_ms 0), or from before each turn was timed under one
    pair of events (timed_per "launch"), is not today's sustained race; an FP32 one needs no turn settle."""
    x = SimpleNamespace(method="sustained", precision="tf32", turn_settle_ms=0.0, timed_per=turns.TIMED_PER)
    assert not turns.SUSTAINED.holds(x)
    today = SimpleNamespace(**{**vars(x), "turn_settle_ms": turns.SUSTAINED.turn_settle_ms})
    assert turns.SUSTAINED.holds(today)
    assert not turns.SUSTAINED.holds(SimpleNamespace(**{**vars(today), "timed_per": "launch"}))
    assert turns.SUSTAINED.holds(SimpleNamespace(**{**vars(x), "precision": "fp32"}))
    assert not turns.SUSTAINED.holds(SimpleNamespace(**{**vars(x), "precision": "fp32", "method": "short"}))


def test_turns_are_sized_from_the_lead_ins_last_quarter(log, monkeypatch):
    """A clock that sinks under the cap makes the warm-up's launches faster than the settled ones: the lead-in's
    last quarter (2 of its 8 launches here) runs under one pair of events, and its 2 ms a launch sizes the turns, not
    the first ones' 1 ms."""
    clocked(log, monkeypatch, {"a": lambda n: 1.0 if n < 6 else 2.0})
    lead = turns._lead_in(0, [lambda: log.append("a")], 8)
    assert lead.launches == 2 and lead.ms / lead.launches == 2.0 and log.count("a") == 8


def test_turns_of_small_work_stop_at_max_turn_launches():
    assert turns.SUSTAINED.per_turn(1e-4, turns.MIN_RUNS) == turns.MAX_TURN_LAUNCHES
    assert turns.SUSTAINED.lead_in(1e-4, 10) == turns.MAX_SETTLE_LAUNCHES
    assert turns.SUSTAINED.per_turn(25.0, turns.MIN_RUNS) == 11  # 8 rounds of 250 ms sized 10 % long: 2.2 s a side
    assert turns.SUSTAINED.rounds * turns.SUSTAINED.turn_ms >= 2000


def test_energy_becomes_joules_per_launch_and_mean_power():
    seen = {"sm_clock_mhz": 1500.0, "temperature_c": 60.0, "samples": 9.0, "joules": 1400.0, "seconds": 2.0}
    fields = telemetry.energy_fields(seen, 2010.0, 700)
    assert fields == {"sm_clock_mhz": 1500.0, "temperature_c": 60.0, "samples": 9.0, "timed_ms": 2010.0,
                      "energy_j": 2.0, "mean_power_w": 700.0}
    assert "energy_j" not in telemetry.energy_fields({"power_w": 650.0}, 2010.0, 700)  # no counter: what NVML gave


class FakeNVML:
    """pynvml's calls that `device.telemetry` makes, answering from a GPU that idles at 1980 MHz and 70 W
    until its launches start, then runs at 1755 MHz and 690 W."""

    NVML_CLOCK_SM, NVML_TEMPERATURE_GPU, NVML_SUCCESS, NVML_FI_DEV_POWER_INSTANT = 1, 0, 0, 186

    def __init__(self):
        self.busy = False

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetClockInfo(self, handle, clock):
        return 1755 if self.busy else 1980

    def nvmlDeviceGetFieldValues(self, handle, fields):
        assert fields == [self.NVML_FI_DEV_POWER_INSTANT]
        milliwatts = 690_000 if self.busy else 70_000
        return [SimpleNamespace(nvmlReturn=self.NVML_SUCCESS, value=SimpleNamespace(uiVal=milliwatts))]

    def nvmlDeviceGetPowerUsage(self, handle):  # a one-second average: still low just after the launches began
        return 131_000

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return 64 if self.busy else 40


@pytest.fixture(autouse=True)
def every_poll_samples_the_clock(monkeypatch):
    monkeypatch.setattr(telemetry, "CLOCK_EVERY", 1)
    monkeypatch.setattr(telemetry, "TICK_WAIT_S", 0.0)


def test_telemetry_is_sampled_only_while_the_timed_launches_run(monkeypatch):
    nvml = FakeNVML()
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    monkeypatch.setattr(telemetry, "_device_index", lambda: 0)
    polls = iter(range(100))

    def started():  # the GPU reaches the first timed launch at the third poll
        return next(polls) >= 2

    def finished():  # ... and ends the last one after eight polls; the GPU is busy in between
        done = nvml.calls >= 8
        nvml.calls += 1
        nvml.busy = 2 <= nvml.calls <= 8
        return done

    nvml.calls = 0
    watch = telemetry.Telemetry(interval_s=0)
    watch.phase("kernel", started, finished)
    seen = watch.finish()
    assert seen == {"kernel": {"sm_clock_mhz": 1755.0, "power_w": 690.0, "temperature_c": 64.0, "samples": 6.0}}


def test_each_sample_goes_to_the_side_whose_turn_is_running(monkeypatch):
    """Three turns (kernel, cuBLAS, kernel), each finished after two polls: the GPU runs at 1700 MHz in the kernel's
    turns and 1900 MHz in cuBLAS's."""
    nvml = FakeNVML()
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    monkeypatch.setattr(telemetry, "_device_index", lambda: 0)
    running = []
    nvml.nvmlDeviceGetClockInfo = lambda handle, clock: {"kernel": 1700, "cublas": 1900}[running[-1]]

    def turn(kind):
        polls = iter([False, False, True])

        def finished():
            running.append(kind)
            return next(polls)
        return kind, lambda: True, finished

    watch = telemetry.Telemetry(interval_s=0)
    for kind in ("kernel", "cublas", "kernel"):
        watch.phase(*turn(kind))
    seen = watch.finish()
    assert (seen["kernel"]["sm_clock_mhz"], seen["kernel"]["samples"]) == (1700.0, 4.0)
    assert (seen["cublas"]["sm_clock_mhz"], seen["cublas"]["samples"]) == (1900.0, 2.0)


def test_joules_of_each_side_come_from_the_energy_counter_interpolated_between_its_steps(monkeypatch):
    """A counter that steps by 3 J every 3 s of a clock that ticks once per reading, while a kernel turn and a cuBLAS
    turn run (700 W would be 2.1 kJ in 3 s: these are small numbers on purpose): each side gets the joules the counter,
    drawn straight between its steps, rose by from the reading that saw its turn start to the one that saw it end, and
    the seconds between them; together, what the counter rose by over both turns."""
    nvml = FakeNVML()
    now = [0.0]

    def monotonic():
        now[0] += 1.0
        return now[0]

    nvml.nvmlDeviceGetTotalEnergyConsumption = lambda handle: 3000 * (now[0] // 3)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    monkeypatch.setattr(telemetry, "_device_index", lambda: 0)
    monkeypatch.setattr(telemetry.time, "monotonic", monotonic)
    monkeypatch.setattr(telemetry, "TICK_WAIT_S", 10.0)
    polls = []

    def turn(kind, ends_after):
        def finished():
            polls.append(kind)
            return len(polls) > ends_after
        return kind, lambda: True, finished

    watch = telemetry.Telemetry(interval_s=0)
    watch.phase(*turn("kernel", 3))
    watch.phase(*turn("cublas", 6))
    seen = watch.finish()
    assert seen["kernel"]["joules"] > 0 and seen["cublas"]["joules"] > 0 and "power_w" not in seen["kernel"]
    both = seen["kernel"]["joules"] + seen["cublas"]["joules"]
    assert both == pytest.approx(seen["kernel"]["seconds"] + seen["cublas"]["seconds"], rel=0.25)  # 1 J a second
    assert telemetry._interpolate([0.0, 2.0, 4.0], [0.0, 10.0, 10.0], 1.0) == 5.0  # straight between steps
    assert telemetry._interpolate([0.0, 2.0], [0.0, 10.0], 9.0) == 10.0  # and flat past the last


def test_launches_too_short_to_sample_carry_no_telemetry(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML())
    monkeypatch.setattr(telemetry, "_device_index", lambda: 0)
    def seen(finished, interval_s=telemetry.TELEMETRY_INTERVAL_S):
        watch = telemetry.Telemetry(interval_s)
        watch.phase("kernel", lambda: True, finished)
        return watch.finish()

    assert seen(lambda: True) == {"kernel": {}}  # ended before a first sample: no idle reading
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML at all: the measurement goes on without telemetry
    calls = iter([False, True])
    assert seen(lambda: next(calls), interval_s=0) == {"kernel": {}}


def test_relative_error_of_a_cancelling_result_is_measured_against_its_terms():
    ref = np.array([[1e-3]])  # a 1 x 1 result whose terms were of size 1 and cancelled
    got = ref + 1e-9
    assert run.max_rel_err(got, ref) == pytest.approx(1e-6)
    assert run.max_rel_err(got, ref, floor=1.0) == pytest.approx(1e-9)  # the floor applies
    assert run.max_rel_err(got * 1e6, ref * 1e6, floor=1.0) == pytest.approx(1e-6)  # large results: no effect


@pytest.mark.parametrize("kernel,math", [("mma_tf32", "cublas tf32"), ("wgmma_tf32", "cublas tf32"),
                                         ("mma_3xtf32", "cublas"), ("wgmma_3xtf32", "cublas"), ("naive", "cublas")])
def test_each_kernel_races_cublas_in_the_math_of_its_precision(log, monkeypatch, kernel, math):
    monkeypatch.setattr(run, "launcher", launching(log))
    x = timing.bench(kernel, 16)
    assert x.precision == catalog.get(kernel).precision and yardstick.BASELINE[x.precision] in ("fp32", "tf32")
    assert {e for e in log if e.startswith("cublas")} == {math}
    per_turn = turns.MIN_RUNS // ROUNDS  # every precision takes the same rounds
    assert log.count(math) == 2 * turns.WARMUP + per_turn + ROUNDS * per_turn and len(x.rounds_pct) == ROUNDS
    linalg = sys.modules["cupy._core._routines_linalg"]
    assert linalg.get_compute_type(np.float32) == linalg.COMPUTE_TYPE_DEFAULT  # restored for everyone else


def test_cublas_alone_in_either_math_is_its_own_pseudo_kernel(log):
    fp32, tf32 = timing.cublas(16), timing.cublas(16, "tf32")
    assert (fp32.kernel, fp32.precision, tf32.kernel, tf32.precision) == ("cublas", "fp32", "cublas_tf32", "tf32")
    untimed = turns.MIN_RUNS // ROUNDS
    assert log.count("cublas") == log.count("cublas tf32") == 1 + 2 * turns.WARMUP + untimed + turns.MIN_RUNS
    with pytest.raises(ValueError, match="cuBLAS computes in fp32 or tf32, not '3xtf32'; 3xtf32 kernels race cuBLAS "
                                         "in fp32"):
        timing.cublas(16, "3xtf32")


def test_the_tf32_math_is_restored_even_when_timing_fails(log, monkeypatch):
    linalg = sys.modules["cupy._core._routines_linalg"]
    monkeypatch.setattr(turns, "race", lambda *args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        timing.cublas(16, "tf32")
    assert linalg.get_compute_type(np.float32) == linalg.COMPUTE_TYPE_DEFAULT
    monkeypatch.setenv("CUPY_TF32", "1")
    with pytest.raises(RuntimeError, match="CUPY_TF32 is set"):  # FP32 SGEMM refuses a TF32 environment
        timing.cublas(16)


@pytest.fixture
def nvrtc(log, monkeypatch):
    """A stand-in NVRTC: each compile records its target arch, and the loaded kernels record each launch and compute C
    on the CPU. Returns (arch of each instance compiled, (grid, block, shared memory) of each launch)."""
    from gemm_lab import compiler

    built, launched = [], []

    class Kernel:
        max_dynamic_shared_size_bytes = 48 * 1024

        def __call__(self, grid, block, args, shared_mem=0):
            launched.append((grid, block, shared_mem))
            alpha, a, b, beta, out = args[3:8]
            out[...] = alpha * (a @ b) + (beta * out if beta else 0)

    class RawModule:
        def __init__(self, path):
            assert path.endswith(".cubin")

        def get_function(self, name):
            assert name.startswith("_Z")  # the mangled name NVRTC gave the instance
            return Kernel()

    monkeypatch.setattr(sys.modules["cupy"], "RawModule", RawModule, raising=False)
    monkeypatch.setattr(compiler, "cubin_file", lambda inst, arch: built.append(arch) or ("k.cubin", "_Zk"))
    monkeypatch.setattr(compiler, "_live_cache", {})
    return built, launched


def test_dynamic_shared_memory_is_opted_into_and_asked_for_and_wgmma_compiles_for_sm_90a(nvrtc):
    from gemm_lab import compiler

    built, launched = nvrtc
    a, b = run.random_inputs(300, 200, 100)
    for kernel in ("wgmma_tf32", "mma_tf32", "naive"):
        spec = catalog.get(kernel)
        run.gemm(kernel, a, b)
        smem = spec.smem_bytes(spec.full_params()) if spec.dynamic_smem else 0
        assert launched[-1] == (spec.grid(spec.full_params(), 300, 200), (spec.threads(spec.full_params()),), smem)
        assert compiler.load(kernel).max_dynamic_shared_size_bytes == (smem or 48 * 1024)
    assert built == ["sm_90a", "sm_90", "sm_90"]
    assert launched[0][2] == 201728 > catalog.STATIC_SMEM_LIMIT


def test_a_kernel_name_is_validated_once_on_its_way_to_the_gpu(nvrtc, monkeypatch):
    """bench, verify and gemm make one catalog.Instance of a name; check, the launcher and compiler.load trust it."""
    made, instance = [], catalog.instance
    monkeypatch.setattr(catalog, "instance", lambda *args, **kw: made.append(args[1:3]) or instance(*args, **kw))
    monkeypatch.setattr(timing, "input_sets",
                        lambda m, n, k: [(*run.random_inputs(m, n, k), np.empty((m, n), np.float32))])
    params = {"BM": 16, "BN": 16, "BK": 8}
    x = timing.bench("smem_tiled", (40, 24, 16), params)
    assert made == [(params, (40, 24, 16))] and x.max_rel_err < 1e-6
    untimed = turns.MIN_RUNS // ROUNDS  # every launch of the verification and the timing:
    assert len(nvrtc[1]) == 1 + 2 * turns.WARMUP + untimed + turns.MIN_RUNS
    made.clear()
    assert run.verify("smem_tiled", 40, 24, 16, params).ok and len(made) == 1
    made.clear()
    run.gemm("smem_tiled", *run.random_inputs(40, 24, 16), params)
    assert made == [(params, (40, 24, 16))]
    monkeypatch.setattr(device, "gpu", lambda: SimpleNamespace(**{**vars(GPU), "smem_per_block": 100 * 1024}))
    needs = catalog.get("mma_tf32").smem_bytes(catalog.get("mma_tf32").full_params())
    with pytest.raises(ValueError, match=f"needs {needs} bytes of shared memory per block; this GPU allows 102400"):
        timing.bench("mma_tf32", 64)  # a GPU with less shared memory refuses it before anything compiles
    assert len(nvrtc[0]) == 1
