"""What NVML saw while a race's timed launches ran: the SM clock and temperature, sampled, and the joules from the
driver's energy counter, per side. Behind the timing spine: a race declares its turns as phases (`turns.race`), and
a record keeps the summary (`energy_fields`). NVML is optional: without it a measurement only lacks these fields.
"""
from __future__ import annotations

import bisect
import statistics
import threading
import time
from collections.abc import Callable, Sequence

TELEMETRY_INTERVAL_S = 0.002  # between NVML polls while timed launches run (each NVML read takes about a millisecond)


CLOCK_EVERY = 8  # polls between two samples of the clock and temperature (the energy counter is read at every poll)


TICK_WAIT_S = 0.3  # after the last phase, how long to wait for the energy counter's next step (it steps every 100 ms)


class Telemetry:
    """What NVML saw while timed launches ran, per kind of launch: the SM clock and the temperature, sampled, and the
    energy, from the driver's counter of millijoules (`nvmlDeviceGetTotalEnergyConsumption`).

    Declare each phase (kind, started, finished) in the order the GPU runs them, say the kernel's turns and cuBLAS's
    alternating; a thread of its own polls (`start()`) while the host queues them and while it waits for the GPU, even
    inside a launch that synchronises (the Ozaki scheme's reads its estimate back); `finish()` polls until the last
    phase ends and stops the thread. A clock sample goes to the kind whose phase
    has `started()` (its first timed launch began) and not yet `finished()`, so an idle or still-warming GPU never
    stands in for a loaded one. The energy counter moves in steps (every 100 ms on the H100 and H200, measured): each
    step is timed when a poll sees it, the counter is interpolated linearly between steps, and a phase's joules are
    the counter when the phase was seen to end less when it was seen to start. Per kind: the median clock, the highest
    temperature, the number of clock samples, and the joules and seconds of its phases; empty when NVML is missing or
    the launches ended before a first reading. Where the driver has no energy counter, the median of NVML's power
    readings stands in (`power_w`: instantaneous where the driver has it, else its one-second average).
    """

    def __init__(self, interval_s: float = TELEMETRY_INTERVAL_S):
        self.interval_s = interval_s
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._phases: list[tuple[str, Callable[[], bool], Callable[[], bool]]] = []
        self._times: list[list[float | None]] = []  # per phase: when it was seen to start, and to end
        self._samples: dict[str, list[tuple[float, float, float]]] = {}
        self._ticks: list[tuple[float, float]] = []  # (when seen, millijoules): each step of the energy counter
        self._current, self._due, self._polls = 0, 0.0, 0
        try:
            self._read, self._energy = _nvml_reader()
        except Exception:  # NVML is optional: a missing library only drops these fields
            self._read, self._energy = None, None

    def phase(self, kind: str, started: Callable[[], bool], finished: Callable[[], bool]) -> None:
        self._samples.setdefault(kind, [])
        self._times.append([None, None])
        self._phases.append((kind, started, finished))  # last: the polling thread never sees a phase half declared

    def start(self) -> Telemetry:
        """Poll from a thread of its own until `finish()`, on the calling thread's CUDA device."""
        import cupy

        device_id = cupy.cuda.Device().id

        def run() -> None:
            cupy.cuda.Device(device_id).use()
            while not self._stop.is_set():
                self.poll()
                time.sleep(self.interval_s / 4)

        self._thread = threading.Thread(target=run, name="gemm_lab telemetry", daemon=True)
        self._thread.start()
        return self

    def poll(self) -> None:
        """One reading if `interval_s` has passed since the last: the energy counter, and every CLOCK_EVERY polls the
        clock of the phase running now."""
        now = time.monotonic()
        if now < self._due:
            return
        self._due = now + self.interval_s
        while self._current < len(self._phases) and self._phases[self._current][2]():
            seen = self._times[self._current]
            seen[0], seen[1] = seen[0] if seen[0] is not None else now, now
            self._current += 1
        running = self._current < len(self._phases) and self._phases[self._current][1]()
        if running and self._times[self._current][0] is None:
            self._times[self._current][0] = now
        self._read_energy(now)
        if self._read is None or not running:
            return
        self._polls += 1
        if (self._polls - 1) % CLOCK_EVERY == 0:
            try:
                self._samples[self._phases[self._current][0]].append(self._read())
            except Exception:  # a failing sensor read loses the telemetry, never the measurement
                self._read = None

    def finish(self) -> dict[str, dict[str, float]]:
        """Poll until the last phase has finished (and the energy counter has stepped past it); the summary per kind."""
        if self._thread is not None:
            while self._current < len(self._phases):
                time.sleep(self.interval_s / 4)
            self._stop.set()
            self._thread.join()
        while self._current < len(self._phases):
            self.poll()
            time.sleep(self.interval_s / 4)
        last = max((t[1] for t in self._times if t[1] is not None), default=None)
        deadline = time.monotonic() + TICK_WAIT_S
        while self._energy is not None and last is not None and self._ticks[-1][0] <= last \
                and time.monotonic() < deadline:
            time.sleep(self.interval_s / 4)
            self._read_energy(time.monotonic())
        return {kind: self._summary(kind) for kind in self._samples}

    def _read_energy(self, now: float) -> None:
        if self._energy is None:
            return
        try:
            mj = self._energy()
        except Exception:  # a driver without the counter: no joules
            self._energy = None
            return
        if not self._ticks or mj != self._ticks[-1][1]:
            self._ticks.append((now, float(mj)))

    def _summary(self, kind: str) -> dict[str, float]:
        samples = self._samples[kind]
        if not samples:
            return {}
        clocks, powers, temps = zip(*samples)
        out = {"sm_clock_mhz": statistics.median(clocks), "temperature_c": max(temps), "samples": float(len(samples))}
        spans = [t for (k, _, _), t in zip(self._phases, self._times) if k == kind and None not in t]
        ticks = self._ticks
        if self._energy is not None and len(ticks) >= 2 and spans and ticks[0][0] <= min(t[0] for t in spans) \
                and ticks[-1][0] >= max(t[1] for t in spans):
            when, mj = zip(*ticks)
            out["joules"] = sum(_interpolate(when, mj, end) - _interpolate(when, mj, start)
                                for start, end in spans) / 1e3
            out["seconds"] = sum(end - start for start, end in spans)
        else:
            out["power_w"] = statistics.median(powers)
        return out


def _interpolate(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    """ys at x, linearly between the points (xs increasing)."""
    i = bisect.bisect_right(xs, x)
    if i == 0:
        return ys[0]
    if i == len(xs):
        return ys[-1]
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 > x0 else y1


def _nvml_reader() -> tuple[Callable[[], tuple[float, float, float]], Callable[[], float] | None]:
    """Functions that read, from NVML, (SM clock MHz, power W, temperature C) of the device in use, and its energy
    counter in millijoules (None where the driver has none)."""
    import pynvml

    pynvml.nvmlInit()
    h = _nvml_handle(pynvml)
    instant = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", None)

    def power_w() -> float:
        if instant is not None:
            value = pynvml.nvmlDeviceGetFieldValues(h, [instant])[0]
            if value.nvmlReturn == pynvml.NVML_SUCCESS:
                return value.value.uiVal / 1e3  # milliwatts
        return pynvml.nvmlDeviceGetPowerUsage(h) / 1e3

    def read() -> tuple[float, float, float]:
        return (float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)), power_w(),
                float(pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)))

    def energy_mj() -> float:
        return float(pynvml.nvmlDeviceGetTotalEnergyConsumption(h))

    try:
        energy_mj()
    except Exception:  # not supported on this GPU or driver
        return read, None
    return read, energy_mj


def _device_index() -> int:
    import cupy

    return cupy.cuda.Device().id


def _nvml_handle(pynvml) -> object:
    """NVML's handle of the CUDA device in use, found by its PCI bus ID: NVML numbers every GPU of the host, ignoring
    CUDA_VISIBLE_DEVICES, so CUDA's device 0 need not be NVML's."""
    index = _device_index()
    try:
        import cupy

        return pynvml.nvmlDeviceGetHandleByPciBusId(cupy.cuda.runtime.deviceGetPCIBusId(index).encode())
    except Exception:  # no bus ID to match (a stand-in device): by index
        return pynvml.nvmlDeviceGetHandleByIndex(index)


def energy_fields(seen: dict[str, float], timed_ms: float, launches: int) -> dict[str, float]:
    """A side's telemetry as recorded: its clock samples' summary, its timed milliseconds, and, where NVML's energy
    counter was read, its joules per launch and mean power (joules over the seconds its turns were seen running)."""
    out = {k: v for k, v in seen.items() if k not in ("joules", "seconds")}
    out["timed_ms"] = timed_ms
    if seen.get("seconds"):
        out["energy_j"] = seen["joules"] / launches
        out["mean_power_w"] = seen["joules"] / seen["seconds"]
    return out
