"""The Ozaki scheme's pipeline on the GPU (kernels/16_ozaki.cu, and kernels/ozaki_check.cu for the row and column
check): `Pipeline`, the call that scales, equilibrates, estimates, splits, multiplies, reconstructs and checks, which
`run.gemm("ozaki", ...)` launches (importing this module registers its launcher with the core, and `warn_recorded`,
which says a replayed record's warnings again). The scheme itself, its constants, its NumPy model and the accuracy
contract are `ozaki`'s.

**Streams.** B's statistics and residues run on a second stream beside A's, the estimate's sample and verdict on a
third beside the split (which reads the number it splits for from a buffer of its own, and is queued after the sample's
operands are gathered, so that the sample's blocks reach the SMs first); only the products wait for the verdict, on
the GPU.

**Steady calls return at once.** The default's third call alike replays a captured graph whose last kernel,
`ozaki_escape`, acts on the verdict and the check on the GPU (SGEMM computes C where either fails), so the call
returns without waiting, as a cuBLAS call does; `report` waits for the last call.
"""
from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from .. import catalog, compiler, device, run, yardstick
from ..catalog import Instance, SourceFile
from ..spec import MAX_GRID_Y, ceil_div, round_up
from . import int8, ozaki
from .ozaki import Estimate

WAIT_S = 0.0  # between two looks at a result from the GPU: sleep(0) lets other Python threads run without a timer's
# wake-up (~60 us), which the check at the end of every call would add to it
STATS_ROWS = 64  # kernels/16_ozaki.cu's: rows of A or B one block of the statistics kernels reads
REBUILD_ROWS = 64  # kernels/16_ozaki.cu's: rows of C one block of ozaki_reconstruct writes
RESIDUE_RUN = 16  # kernels/16_ozaki.cu's: consecutive k of a row of A (or a column of B) one thread splits
B_COLS, B_DEPTH = 16, 256  # kernels/16_ozaki.cu's: the columns of B and the k one block of ozaki_residues_b splits
ESCAPED = "ozaki_escape"  # the report's fallback where a replayed call's C came from ozaki_escape's SGEMM
ESCAPE_TILE = 128  # kernels/ozaki_check.cu's: the rows and columns of C one block of ozaki_escape's SGEMM computes
ESCAPE_BLOCKS_PER_SM = 2  # ozaki_escape's grid: blocks that leave at once on a steady call, or share the SGEMM's tiles

class CheckSource(SourceFile):
    """kernels/ozaki_check.cu: the row and column check, compiled apart from kernel 16 (whose build the recorded Ozaki
    measurements are tied to) and loaded as the probes are."""

    source = "kernels/ozaki_check.cu"
    functions = ("ozaki_lines", "ozaki_escape")


CHECK = CheckSource()


class Compiled(NamedTuple):
    """What a call with one number of moduli launches: its products kernel, the companions (every instance's cubin
    holds the other kernels), the chunks' tensor maps, the CRT constants (`ozaki.constants`), and the verdict the
    split reads instead of the estimate's, so that the split need not wait for the estimate: it names that number
    ([0]), and each split copies in whether A and B were equilibrated ([ozaki.EQUILIBRATED])."""

    products: Any
    kernels: dict[str, Any]
    maps: list[tuple[Any, Any]]
    consts: Any
    ruling: Any
    slots: int  # the products' persistent grid: the blocks of this instance the GPU holds at once (`run.slots`)


class Pipeline:
    """The scheme on one validated ozaki instance and its operands, as a call that launches it and returns C (`run`'s
    launcher for the ozaki spec). Each call scales and equilibrates A and B, estimates on a sample which numbers of
    moduli are as accurate as SGEMM (`ozaki_decide` writes the verdict on the GPU), splits (beside the estimate),
    multiplies and reconstructs with the number it expects (the last call's choice, or the pinned number: the products
    and the reconstruction run only if the verdict agrees, so the GPU never waits for the host), then reads the verdict
    back and, if the choice was another, queues that number's kernels; then it checks every row and column of C
    (`hold_lines`: the one wait for the GPU) and runs more moduli where they fail; where no number will do, cuBLAS SGEMM
    computes C with a `Fallback` warning; it puts SGEMM's infinities and NaNs back. The default's third call alike on
    replays a captured graph and returns at once (`capture`, `settle`).
    `report` is the last call's `Estimate`; `stages()` the same work as separately launched parts, for timing each."""

    def __init__(self, inst: Instance, a: Any, b: Any, *, alpha: float, beta: float, out: Any):
        import cupy

        self.inst, self.a, self.b, self.alpha, self.beta, self.out = inst, a, b, alpha, beta, out
        m, n, k = inst.shape
        self.pinned = inst.params["MODULI"]
        most = self.pinned or ozaki.CANDIDATES[-1]
        self.kp, self.np = round_up(k, ozaki.K_ALIGN), round_up(n, ozaki.N_ALIGN)
        self.chunks = [(k0, min(self.kp, k0 + ozaki.K_CHUNK)) for k0 in range(0, self.kp, ozaki.K_CHUNK)]
        self.kernels = compiler.companions(inst)  # the analysis kernels are in every instance's cubin
        # everything a call zeroes first, in one buffer: a single memset
        self.zeroed, self.z = carved({
            "rn2": (m, np.float64), "cn2": (n, np.float64), "cn2_eq": (n, np.float64), "best": (2, np.uint64),
            "col_exp": (k, np.int32), "col_count": (k, np.int32), "row_exp": (k, np.int32), "row_count": (k, np.int32),
            "row_bad": (m, np.int32), "col_bad": (n, np.int32), "flags": (4, np.int32)})
        self.shift = cupy.empty(k, cupy.int32)
        rows, cols = ozaki.sample_picks(m, n)
        self.rows, self.cols = cupy.asarray(rows), cupy.asarray(cols)
        self.bt = cupy.empty((ozaki.SAMPLE_COLS, k), cupy.float32)
        self.sample = cupy.empty(ozaki.SAMPLE_ROWS * ozaki.SAMPLE_COLS * ozaki.SAMPLE_FIELDS, cupy.float64)
        self.verdict = cupy.empty(16, cupy.float64)  # ozaki_decide's (VERDICT of them), read into pinned host memory
        self.host = np.frombuffer(cupy.cuda.alloc_pinned_memory(self.verdict.nbytes), np.float64, self.verdict.size)
        self.decided = cupy.cuda.Event()  # the verdict is on the host
        # the estimate's sample and verdict, beside the split: at the GPU's highest priority, so that their blocks
        # reach the SMs before the split's still waiting (the products wait for the verdict; the split need not)
        self.side = cupy.cuda.Stream(non_blocking=True, priority=highest_priority())
        self.aux = cupy.cuda.Stream(non_blocking=True)  # B's half of the scaling and of the split, beside A's
        self.forks = {s: cupy.cuda.Event(disable_timing=True) for s in ("side", "aux", "aux back")}
        self.estimated = cupy.cuda.Event(disable_timing=True)  # the verdict is on the GPU: the products may start
        self.gs = cupy.asarray([ozaki.norm_bound(c, k) for c in ozaki.CANDIDATES], dtype=cupy.float64)
        self.e_a, self.f_b = cupy.empty(m, cupy.int32), cupy.empty(n, cupy.int32)
        self.planes_a = cupy.empty((most, m, self.kp), cupy.int8)
        self.planes_b = cupy.empty((most, n, self.kp), cupy.int8)
        self.r = cupy.empty((len(self.chunks), most, m, self.np), cupy.uint8)
        self.expected = self.pinned or ozaki.CANDIDATES[1]  # the number the later kernels are queued for first
        self.built = 0  # the number of moduli whose products were last queued
        # the products' C: `out`, or with beta != 0 a buffer of its own, which the check reads before beta C is added
        self.c = out if beta == 0 else cupy.empty_like(out)
        self.check_zeroed, check = carved({"row_max": (m, np.uint32), "col_max": (n, np.uint32),
                                           "lines": (ozaki.LINES, np.float64)})  # the check's, zeroed by one memset
        self.row_max, self.col_max, self.lines = check["row_max"], check["col_max"], check["lines"]
        self.lines_host = np.frombuffer(cupy.cuda.alloc_pinned_memory(8 * ozaki.LINES), np.float64, ozaki.LINES)
        self.checked = cupy.cuda.Event(disable_timing=True)
        self.lines_of = 0  # the number of moduli whose check's result lies in lines_host
        self.capturing = cupy.cuda.Stream(non_blocking=True)  # a capture cannot run on the legacy default stream
        self.graph: tuple[int, Any] | None = None  # (the expected number, the call captured for it: `capture`)
        self.steady = False  # the last call ran the expected number on finite inputs, and the check raised none
        self.state = cupy.zeros(2, np.int64)  # ozaki_escape's: whether the last replay escaped, and how many did
        self.state_host = np.frombuffer(cupy.cuda.alloc_pinned_memory(self.state.nbytes), np.int64, 2)
        self.escapes = 0  # the count of escapes the host has seen
        self.replayed = cupy.cuda.Event(disable_timing=True)  # the last replay that returned at once is done
        self.pending = False  # a replay returned at once, and the host has not read what it left
        self._report: Estimate | None = None
        self._verdict: tuple[bytes, Estimate | None] = (b"", None)  # the last verdict read and its report
        self._held: tuple[Estimate | None, bytes, Estimate | None] = (None, b"", None)  # `_hold_lines`' last
        self._instances: dict[int, Compiled] = {}

    @property
    def report(self) -> Estimate | None:
        """The last call's `Estimate` (waiting for it, if it returned at once)."""
        self.settle(block=True)
        return self._report

    @report.setter
    def report(self, value: Estimate | None) -> None:
        self._report = value

    # the parts of a call, in order
    def scale(self) -> None:
        m, n, k = self.inst.shape
        z, i32, threads = self.z, np.int32, (256,)
        self.zeroed.fill(0)
        self._fork("aux")
        self.kernels["ozaki_stats_a"]((ceil_div(k, 256), ceil_div(m, STATS_ROWS)), threads,
                                      (i32(m), i32(k), self.a, z["rn2"], z["col_exp"], z["col_count"], z["row_bad"],
                                       z["flags"]))
        self.kernels["ozaki_stats_b"]((ceil_div(n, 256), ceil_div(k, STATS_ROWS)), threads,
                                      (i32(k), i32(n), self.b, z["cn2"], z["row_exp"], z["row_count"], z["col_bad"],
                                       z["flags"]), stream=self.aux)
        self._join_aux()

    def equilibrate(self) -> None:
        m, n, k = self.inst.shape
        z, i32, threads = self.z, np.int32, (256,)
        self.kernels["ozaki_equilibrate"]((ceil_div(k, 256),), threads,
                                          (i32(k), z["col_exp"], z["col_count"], z["row_exp"], z["row_count"],
                                           self.shift, z["flags"]))
        self.kernels["ozaki_rescale_a"]((ceil_div(m, 8),), threads,
                                        (i32(m), i32(k), self.a, self.shift, z["flags"], z["rn2"]))
        self.kernels["ozaki_rescale_b"]((ceil_div(n, 256), ceil_div(k, STATS_ROWS)), threads,
                                        (i32(k), i32(n), self.b, self.shift, z["flags"], z["cn2_eq"]))

    def estimate(self) -> None:
        """Queue the estimate after the scaling, its sample and verdict on the side stream, and the verdict's copy to
        the host (read by `read_verdict`): the split runs meanwhile; the products wait for the verdict on the GPU
        (`multiply`). The sample's operands are gathered on the current stream, so that the split queued after them
        is ready no sooner than the sample: the sample's blocks take their places on the SMs first, and its latency
        hides behind the split's traffic instead of adding to it."""
        m, n, k = self.inst.shape
        z, i32, side = self.z, np.int32, self.side
        self.kernels["ozaki_extremes"]((min(1024, ceil_div(m + n, 256)),), (256,),
                                       (i32(m), i32(n), z["rn2"], z["cn2"], z["cn2_eq"], z["flags"], z["best"]))
        self.kernels["ozaki_gather_b"]((ceil_div(k, 256), ozaki.SAMPLE_COLS), (256,),
                                       (i32(k), i32(n), self.b, self.cols, z["best"], self.bt))
        self._fork("side")
        split = i32(ozaki.split_k(m, n, k, device.gpu().sms))
        self.kernels["ozaki_sample"]((ozaki.SAMPLE_ROWS * ozaki.SAMPLE_COLS // 4,), (128,),
                                     (i32(m), i32(n), i32(k), split, self.a, self.bt,
                                      self.rows, self.cols, z["best"],
                                      self.shift, z["flags"], z["rn2"], z["cn2"], z["cn2_eq"], self.gs, self.sample),
                                     stream=side)
        self.kernels["ozaki_decide"]((1,), (1024,), (i32(self.pinned), self.sample, z["flags"], self.verdict),
                                     stream=side)
        self.estimated.record(side)
        to_host(self.host[:ozaki.VERDICT], self.verdict[:ozaki.VERDICT], side)
        self.decided.record(side)

    def read_verdict(self) -> Estimate:
        """Wait for the estimate's verdict and keep it as `report`; warn when a pinned number does not qualify."""
        wait(self.decided)
        if (read := self.host.tobytes()) != self._verdict[0]:  # a steady call reads the last one's bytes: its report
            self._verdict = (read, ozaki.verdict(self.host, bool(self.pinned)))
        self.report = report = self._verdict[1]
        for text in ozaki.pinned_warnings(report):  # the estimate's alone: the row and column check has not run
            warnings.warn(text, ozaki.AccuracyWarning, stacklevel=4)
        return report

    def split(self, moduli: int) -> None:
        m, n, k = self.inst.shape
        c = self._instance(moduli)
        i32, threads, z, kernels, ruling = np.int32, (256,), self.z, c.kernels, c.ruling
        ruling[ozaki.EQUILIBRATED:ozaki.EQUILIBRATED + 1] = z["flags"][1:2]  # ozaki_decide copies flags from [10] on
        kernels[f"ozaki_exponents<{moduli}>"]((ceil_div(m + n, 256),), threads,
                                              (i32(m), i32(n), z["rn2"], z["cn2"], z["cn2_eq"],
                                               np.float64(ozaki.norm_bound(moduli, k)), ruling, self.e_a, self.f_b))
        self._fork("aux")
        with self.aux:
            self.check_zeroed.fill(0)  # the check's maxima of |C|, which the reconstruction leaves
        kernels[f"ozaki_residues_a<{moduli}>"]((ceil_div(m * self.kp, 256 * RESIDUE_RUN),), threads,
                                               (i32(m), i32(k), i32(self.kp), self.a, self.e_a, self.shift,
                                                ruling, c.consts, self.planes_a))
        b_grid = (ceil_div(n, B_COLS), min(ceil_div(self.kp, B_DEPTH), MAX_GRID_Y))
        kernels[f"ozaki_residues_b<{moduli}>"](b_grid, threads, (i32(k), i32(n), i32(self.kp), self.b, self.f_b,
                                                                 self.shift, ruling, c.consts, self.planes_b),
                                               stream=self.aux)
        self._join_aux()

    def multiply(self, moduli: int) -> None:
        import cupy

        m, n, _ = self.inst.shape
        c = self._instance(moduli)
        spec, p = self.inst.spec, {**self.inst.params, "MODULI": moduli}
        cupy.cuda.get_current_stream().wait_event(self.estimated)  # they run only where the verdict names `moduli`
        for chunk, ((k0, k1), (map_a, map_b)) in enumerate(zip(self.chunks, c.maps)):
            c.products(spec.grid(p, m, n, c.slots), (spec.threads(p),),
                       (np.int32(m), np.int32(n), np.int32(k1 - k0), np.int32(self.np), c.consts, self.r[chunk], map_a,
                        map_b, self.verdict), shared_mem=spec.launch_smem(p))

    def rebuild(self, moduli: int) -> None:
        m, n, _ = self.inst.shape
        c = self._instance(moduli)
        beta = self.beta if self.c is self.out else 0.0  # else beta C is added after the check
        grid = (ceil_div(n, 256), min(ceil_div(m, REBUILD_ROWS), MAX_GRID_Y))
        c.kernels[f"ozaki_reconstruct<{moduli}>"](grid, (256,),
                                                  (np.int32(m), np.int32(n), np.int32(self.np),
                                                   np.int32(len(self.chunks)), np.int64(self.r[0].nbytes),
                                                   np.float32(self.alpha), np.float32(beta), self.c, self.r,
                                                   self.e_a, self.f_b, self.verdict, c.consts, self.row_max,
                                                   self.col_max))

    def finish(self) -> None:
        """After the verdict: the chosen number's kernels if it was not the expected one; the row and column check,
        which may run more moduli; the fallback where none will do, else beta C; then SGEMM's infinities and NaNs."""
        m, n, k = self.inst.shape
        moduli = self.report.moduli
        if moduli and moduli != self.expected:
            self.products(moduli)
            self.expected = moduli  # inputs like these come again: expect the same next time
        if moduli:
            self.report = self._hold_lines(self.report)
            self._warn_lines(self.report)
        if not self.report.moduli:
            self._fallen_back()
        elif self.c is not self.out:  # in place: no temporary copied over (initcheck counts only kernels' writes)
            self.out *= np.float32(self.beta)
            self.out += self.c
        if self.report.nonfinite:
            self.kernels["ozaki_nonfinite"]((ceil_div(n, 256), m), (256,),
                                            (np.int32(m), np.int32(n), np.int32(k), np.float32(self.alpha), self.a,
                                             self.b, self.z["row_bad"], self.z["col_bad"], self.out))

    def _hold_lines(self, report: Estimate) -> Estimate:
        """`hold_lines` on this call's verdict; where the check's result is on the host already and reads as the last
        call's did, on the same verdict, the last call's outcome (a steady call spends no Python on it)."""
        ready = report.moduli == self.lines_of
        read = self.lines_host.tobytes() if ready else b""
        if ready and self._held[0] is report and self._held[1] == read:
            return self._held[2]
        held = ozaki.hold_lines(report, self.check)
        if ready:
            self._held = (report, read, held)
        return held

    def products(self, moduli: int) -> None:
        """Split, multiply and rebuild with `moduli` moduli (their kernels run only where the verdict names it)."""
        self.split(moduli)
        self.multiply(moduli)
        self.rebuild(moduli)
        self.built, self.lines_of = moduli, 0

    def check(self, moduli: int) -> np.ndarray:
        """`hold_lines`' check: C with `moduli` moduli (queued now, the verdict rewritten to name it, where the last
        products were of another number), its rows' and columns' max |C| and `ozaki_lines` on them; waits for the
        result (through pinned memory, as `read_verdict`), unless the replayed graph left it already."""
        if moduli != self.lines_of:
            if moduli != self.built:
                self.verdict[:1].fill(moduli)
                self.products(moduli)
            self.queue_check()
            wait(self.checked)
            self.lines_of = moduli
        return self.lines_host.copy()

    def queue_check(self, copy: bool = True) -> None:
        """The check's kernel on the maxima of |C| the reconstruction left, and the copy of its result to the host
        (`copy`: else `queue_escape` writes it there)."""
        import cupy

        m, n, _ = self.inst.shape
        z, i32, kernels, samples = self.z, np.int32, _check_kernels(), ozaki.SAMPLE_ROWS * ozaki.SAMPLE_COLS
        kernels["ozaki_lines"]((min(1024, ceil_div(m + n + samples, 256)),), (256,),
                               (i32(m), i32(n), np.float64(self.alpha), z["rn2"], z["cn2"], z["cn2_eq"], z["flags"],
                                z["best"], self.gs, self.row_max, self.col_max, self.sample, i32(samples), self.lines))
        if copy:
            to_host(self.lines_host, self.lines, cupy.cuda.get_current_stream())
            self.checked.record()

    def stages(self) -> list[tuple[str, Callable[[], Any]]]:
        """The pipeline as (stage of `STAGES`, a call launching that stage's kernels on the current stream), with the
        verdict read at the end of the estimate and the number it chose."""
        def estimate() -> None:
            self.estimate()
            self.read_verdict()

        def chosen(part: Callable[[int], None]) -> Callable[[], None]:
            return lambda: part(self.report.moduli) if self.report.moduli else None

        parts = (self.scale, self.equilibrate, estimate, chosen(self.split), chosen(self.multiply),
                 chosen(self.rebuild))
        return list(zip(ozaki.STAGES, parts))

    def __call__(self) -> Any:
        import cupy

        self.settle(block=not self.replays())
        if self.replays():
            self.graph[1].launch(stream=cupy.cuda.get_current_stream())
            for event in (self.estimated, self.decided, self.checked):  # last recorded inside the capture, where the
                event.record()  # host never sees them complete (queried, they never report done): recorded again
            if not self.pinned:  # ozaki_escape settles C on the GPU: return at once
                self.replayed.record()
                self.pending = True
                return self.out
            wait(self.checked)
            self.built = self.lines_of = self.expected
        else:
            self.queue_expected()
        self.read_verdict()
        self.finish()
        report = self.report  # inputs with infinities or NaNs stay off the graph: its escape would take them each time
        steady = report.moduli == self.expected and not report.raised_from and not report.nonfinite
        if steady and self.steady and not self.replays():
            self.capture()  # the second call alike: more will come (a one-off call never pays for a capture)
        self.steady = steady
        return self.out

    def settle(self, block: bool) -> None:
        """Read what the replays that returned at once left, once the last is done (waiting for it where `block`).
        One that escaped drops the graph, so that the next call plans again; `report` is the last call's."""
        if not self.pending or not (block or self.replayed.done):
            return
        wait(self.replayed)
        self.pending = False
        self.built = self.lines_of = self.expected
        report = self.read_verdict()
        escaped, escapes = (int(x) for x in self.state_host)
        if escapes != self.escapes:
            self.escapes, self.graph, self.steady = escapes, None, False
        self._report = replace(report, moduli=0, fallback=ESCAPED) if escaped else self._hold_lines(report)

    def queue_escape(self) -> None:
        """`ozaki_escape` on the verdict and the check: it adds beta C, or computes C as SGEMM where the call cannot
        keep the number the graph was captured for; it writes its state and the check's result into pinned host
        memory itself."""
        m, n, k = self.inst.shape
        slots = ESCAPE_BLOCKS_PER_SM * device.gpu().sms
        _check_kernels()["ozaki_escape"](
            (min(slots, ceil_div(m, ESCAPE_TILE) * ceil_div(n, ESCAPE_TILE)),), (256,),
            (np.int32(m), np.int32(n), np.int32(k), np.float32(self.alpha), np.float32(self.beta), self.a, self.b,
             self.c, self.out, self.verdict, self.z["flags"], self.lines, np.int32(self.expected),
             np.int32(ozaki.CANDIDATES.index(self.expected)), np.float64(ozaki.ROW_SLACK), np.float64(ozaki.C_ROUNDING),
             self.state, np.uint64(self.lines_host.ctypes.data), np.uint64(self.state_host.ctypes.data)))
        self.checked.record()

    def queue_expected(self) -> None:
        """A call's work up to C with the number of moduli it expects, the estimate beside it."""
        self.scale()
        self.equilibrate()
        self.estimate()
        self.products(self.expected)

    def replays(self) -> bool:
        """Whether a call replays the graph: one was captured for the number of moduli expected now."""
        return self.graph is not None and self.graph[0] == self.expected

    def capture(self) -> None:
        """The call as it runs where the verdict keeps the expected number, the check included, captured into a CUDA
        graph (`graph`) that later calls replay with one launch, never queueing a kernel the GPU has to wait for. The
        default's graph ends in `queue_escape`, so its calls return at once; a pinned number's calls wait once, to
        warn where it falls short."""
        stream = self.capturing
        with stream:
            stream.begin_capture()
            try:
                self.queue_expected()
                self.queue_check(copy=bool(self.pinned))
                if not self.pinned:
                    self.queue_escape()
                stream.wait_event(self.decided)  # the estimate's stream joins the graph
            finally:
                graph = stream.end_capture()
        self.graph = (self.expected, Replay(graph))

    # what the parts share
    def _fork(self, name: str) -> None:
        """The side or aux stream waits for what the current stream has queued so far."""
        import cupy

        self.forks[name].record(cupy.cuda.get_current_stream())
        getattr(self, name).wait_event(self.forks[name])

    def _join_aux(self) -> None:
        """The current stream waits for what the aux stream has queued so far."""
        import cupy

        self.forks["aux back"].record(self.aux)
        cupy.cuda.get_current_stream().wait_event(self.forks["aux back"])

    def _instance(self, moduli: int) -> Compiled:
        """What a call with `moduli` moduli launches, compiled and set up once."""
        import cupy

        if moduli not in self._instances:
            inst = catalog.instance(self.inst.spec, {**self.inst.params, "MODULI": moduli}, self.inst.shape)
            bm, bn = inst.spec.tile(inst.params)
            maps = [(int8.planes_map(self.planes_a, bm, k0, k1),
                     int8.planes_map(self.planes_b, bn // inst.params["CLUSTER"], k0, k1)) for k0, k1 in self.chunks]
            self._instances[moduli] = Compiled(compiler.load(inst), compiler.companions(inst), maps,
                                               cupy.asarray(ozaki.constants(moduli, self.inst.shape[2])),
                                               cupy.asarray(np.array([moduli] + [0] * 15, np.float64)),
                                               run.slots(inst.spec, inst.params))
        return self._instances[moduli]

    def _warn_lines(self, report: Estimate) -> None:
        """A pinned number whose worst row or column errs more than ozaki.ROW_SLACK times SGEMM's warns (the estimate's
        verdict was said by `read_verdict`)."""
        for text in ozaki.pinned_warnings(report, estimate=False):
            warnings.warn(text, ozaki.AccuracyWarning, stacklevel=5)

    def _fallen_back(self) -> None:
        """No number of moduli qualified: cuBLAS SGEMM computes C, FP32's accuracy by definition (3xTF32, the other
        candidate, was measured less accurate than SGEMM on such inputs at short K), infinities and NaNs as
        zeros (`ozaki_nonfinite` puts them back as for every call)."""
        import cupy

        report, most = self.report, ozaki.CANDIDATES[-1]
        why = (f"the worst row or column of C is estimated to err {max(report.rows[most], report.columns[most]):.3g} "
               f"times SGEMM's with {most}, more than {ozaki.ROW_SLACK:g}" if report.raised_from else
               f"estimated median error {report.ratio(most):.3g} times SGEMM's with {most}")
        warnings.warn(f"no number of moduli up to {most} is as accurate as SGEMM on these inputs ({why}): "
                      "cuBLAS SGEMM computed C instead", ozaki.Fallback, stacklevel=4)
        self.report = Estimate(**{**self.report.__dict__, "fallback": "cublas"})
        a, b = (cupy.where(cupy.isfinite(x), x, 0) if self.report.nonfinite else x for x in (self.a, self.b))
        with yardstick.cublas_math("fp32"):
            product = cupy.matmul(a, b)
        self.out[...] = self.alpha * product + (self.beta * self.out if self.beta else 0)


def _runtime(what: str, result: tuple) -> tuple:
    """A CUDA runtime call's result after its status (cuda-bindings returns it first), raising where it failed."""
    from cuda.bindings import runtime

    if result[0] != runtime.cudaError_t.cudaSuccess:
        raise RuntimeError(f"{what}: {result[0].name}")
    return result[1:]


@functools.cache
def highest_priority() -> int:
    """The GPU's greatest stream priority (CUDA's lowest number)."""
    from cuda.bindings import runtime

    _, greatest = _runtime("asking for the GPU's stream priorities", runtime.cudaDeviceGetStreamPriorityRange())
    return greatest


class Replay:
    """A captured CUDA graph (CuPy's), instantiated again so that its kernels keep the priorities of the streams they
    were captured from (CuPy's own instance runs them all at the priority of the stream it is launched into)."""

    def __init__(self, graph: Any):
        from cuda.bindings import runtime

        self.graph = graph  # owns the captured cudaGraph_t
        self._runtime = runtime
        self.exec, = _runtime("instantiating the captured Ozaki call", runtime.cudaGraphInstantiateWithFlags(
            runtime.cudaGraph_t(init_value=graph.graph),
            runtime.cudaGraphInstantiateFlags.cudaGraphInstantiateFlagUseNodePriority))

    def launch(self, stream: Any) -> None:
        _runtime("launching the captured Ozaki call", self._runtime.cudaGraphLaunch(self.exec, stream.ptr))

    def __del__(self) -> None:
        if getattr(self, "exec", None) is not None:
            self._runtime.cudaGraphExecDestroy(self.exec)


def carved(arrays: dict[str, tuple[int, Any]]) -> tuple[Any, dict[str, Any]]:
    """One GPU buffer holding an array of each (count, dtype), each from an 8-byte boundary, so that one memset zeroes
    them all: (the buffer, the arrays by name)."""
    import cupy

    offsets, at = {}, 0
    for name, (count, dtype) in arrays.items():
        offsets[name] = at
        at += round_up(count * np.dtype(dtype).itemsize, 8)
    buffer = cupy.empty(at, cupy.uint8)
    return buffer, {name: buffer[offsets[name]:offsets[name] + count * np.dtype(dtype).itemsize].view(dtype)
                    for name, (count, dtype) in arrays.items()}


def wait(event: Any) -> None:
    """Wait for an event's work: a sleep, unlike a CUDA synchronisation, lets other Python threads run."""
    while not event.done:
        time.sleep(WAIT_S)


def to_host(host: np.ndarray, device_array: Any, stream: Any) -> None:
    """Copy a CuPy array into pinned host memory, queued on `stream` (the runtime's copy, which a stream being
    captured into a graph records; CuPy's `get` refuses to)."""
    import cupy

    cupy.cuda.runtime.memcpyAsync(host.ctypes.data, device_array.data.ptr, host.nbytes,
                                  cupy.cuda.runtime.memcpyDeviceToHost, stream.ptr)


@functools.cache
def _check_kernels() -> dict[str, Any]:
    """kernels/ozaki_check.cu's kernels, compiled for the live GPU."""
    import cupy

    module = cupy.RawModule(code=CHECK.source_text(), options=(*compiler.NVRTC_OPTIONS, f"-arch={device.gpu().arch}"))
    return {name: module.get_function(name) for name in CHECK.functions}


def launcher(inst: Instance, a: Any, b: Any, *, alpha: float, beta: float, out: Any) -> Pipeline:
    """`run.launcher` for the ozaki spec: a call that launches the whole pipeline (`Pipeline`) and returns C."""
    return Pipeline(inst, a, b, alpha=alpha, beta=beta, out=out)


def warn_recorded(x: Any) -> None:
    """`run`'s replay check for the ozaki spec: a record of a pinned number of moduli (`x`, a `records.Measurement`)
    warns as its call did live, from the report it kept (`details`); a record without one stays silent."""
    if not x.details:
        return
    for text in ozaki.pinned_warnings(Estimate.from_dict(x.details)):
        warnings.warn(f"the recorded call's estimate ({x.gpu}, {x.recorded_at[:10]}): {text}", ozaki.AccuracyWarning,
                      stacklevel=4)  # at the caller of `bench`, through run.replayed


run.register_launcher("ozaki", launcher)
run.register_replay_check("ozaki", warn_recorded)
