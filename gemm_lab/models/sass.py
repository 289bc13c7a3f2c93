"""Register banks of the FFMAs in a kernel's SASS, read from the offline cubin (no GPU needed).

Model (an assumption for Hopper, which no public microbenchmark study covers to our knowledge):
Volta and Turing have two 64-bit register banks, bank = register index mod 2, and an instruction
stalls for a bank conflict only when all three of its source registers that are not served by
the operand reuse cache sit in the same bank (Jia, Maggioni, Staiger and Scarpazza, "Dissecting
the NVIDIA Volta GPU Architecture via Microbenchmarking", arXiv:1804.06826, 2018; Jia, Maggioni,
Smith and Scarpazza, "Dissecting the NVidia Turing T4 GPU via Microbenchmarking",
arXiv:1903.07486, 2019). Maxwell and Pascal had four 32-bit banks (index mod 4) and conflicted
when two sources shared one, the model the seed article on GEMM register blocking describes; we
count under both. A source operand marked `.reuse` by the previous instruction in the same slot
is read from the reuse cache, not from a bank.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import compiler
from ..catalog import KernelSpec, Params

_FFMA = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(?:@!?P\d\s+)?FFMA\s+(R\d+|RZ),\s*(.+?)\s*;")
_REG = re.compile(r"^-?\|?(R\d+)(\.reuse)?\|?$")


@dataclass(frozen=True)
class Ffma:
    """One FFMA: its offset, destination and three source operands (register or None) with reuse flags."""

    offset: int
    dest: str
    sources: tuple[str | None, str | None, str | None]
    reuse: tuple[bool, bool, bool]
    text: str


def nvdisasm() -> str:
    """Path of nvdisasm: on PATH (CUDA toolkit) or from NVIDIA's pip wheel nvidia-cuda-nvdisasm."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    try:
        import nvidia
    except ImportError:
        nvidia = None
    for root in getattr(nvidia, "__path__", []):
        for candidate in sorted(Path(root).glob("cu*/bin/nvdisasm")):
            return str(candidate)
    raise RuntimeError("nvdisasm not found: install the CUDA toolkit or `pip install nvidia-cuda-nvdisasm`")


def disassemble(kernel: str | KernelSpec, params: Params | None = None, arch: str | None = None) -> str:
    """SASS of the offline-compiled instance (for `arch`: default sm_90, or the kernel's arch-specific target). Kept
    on disk beside the cubins, by the cubin's hash: a page reads the same instance's SASS many times, each chapter in
    its own process, and nvdisasm takes half a second a call."""
    binary = compiler.cubin(kernel, params, arch)
    path = compiler.cache_dir() / f"{hashlib.sha256(binary).hexdigest()}.sass"
    if path.exists():
        return path.read_text()
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(binary)
        f.flush()
        sass = subprocess.run([nvdisasm(), f.name], capture_output=True, text=True, check=True).stdout
    compiler.write_atomic(path, sass.encode())
    return sass


def ffmas(sass: str) -> list[Ffma]:
    out = []
    for line in sass.splitlines():
        match = _FFMA.match(line)
        if not match:
            continue
        operands = [o.strip() for o in match.group(3).split(",")]
        regs, reuse = [], []
        for o in operands[:3]:
            m = _REG.match(o)
            regs.append(m.group(1) if m and m.group(1) != "RZ" else None)
            reuse.append(bool(m and m.group(2)))
        out.append(Ffma(int(match.group(1), 16), match.group(2), tuple(regs), tuple(reuse), " ".join(line.split())))
    return out


def bank_reads(ffma: list[Ffma], banks: int) -> list[list[int]]:
    """For each FFMA, the banks of the source registers read from the register file (not the reuse cache)."""
    reads = []
    previous: Ffma | None = None
    for f in ffma:
        banks_read = []
        for slot, reg in enumerate(f.sources):
            cached = previous is not None and previous.reuse[slot] and previous.sources[slot] == reg
            if reg is not None and not cached:
                banks_read.append(int(reg[1:]) % banks)
        reads.append(banks_read)
        previous = f
    return reads


def conflicts(ffma: list[Ffma], model: str = "volta") -> list[bool]:
    """Whether each FFMA stalls for a register bank conflict under the 'volta' or 'maxwell' model."""
    if model == "volta":
        return [len(b) == 3 and len(set(b)) == 1 for b in bank_reads(ffma, 2)]
    if model == "maxwell":
        return [len(b) != len(set(b)) for b in bank_reads(ffma, 4)]
    raise ValueError(f"model must be 'volta' or 'maxwell', not {model!r}")


@dataclass(frozen=True)
class Report:
    ffma: int
    with_reuse: int
    volta_conflicts: int
    maxwell_conflicts: int


def report(kernel: str | KernelSpec, params: Params | None = None) -> Report:
    """Counts over all FFMAs of an instance's SASS."""
    f = ffmas(disassemble(kernel, params))
    return Report(len(f), sum(any(x.reuse) for x in f), sum(conflicts(f, "volta")), sum(conflicts(f, "maxwell")))


def annotate(ffma: list[Ffma], limit: int = 16) -> str:
    """The first FFMAs with the banks they read, for the book."""
    lines = []
    v, mx = conflicts(ffma, "volta"), conflicts(ffma, "maxwell")
    for f, b2, b4, cv, cm in zip(ffma[:limit], bank_reads(ffma, 2), bank_reads(ffma, 4), v, mx):
        flag = ("VOLTA-CONFLICT " if cv else "") + ("maxwell-conflict" if cm else "")
        lines.append(f"{f.text:<44s} mod 2: {b2!s:<10s} mod 4: {b4!s:<10s} {flag}")
    return "\n".join(lines)


_LABEL = re.compile(r"^\s*\.(L_x_\d+):")
# groups: the opcode without its modifiers (LDS for LDS.128), the operands
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P[T\d]\s+)?([A-Z][A-Z0-9_]*)\S*\s*(.*?)\s*;")
_TARGET = re.compile(r"`\(\.(L_x_\d+)\)")


MATH = ("FFMA", "HMMA", "HGMMA")  # FP32 FMAs, mma.sync and wgmma tensor-core instructions


def main_loop(kernel: str | KernelSpec, params: Params | None = None) -> list[str]:
    """Opcodes (FFMA, LDS, ...) of the kernel's hottest loop in the offline SASS, in program order
    (`main_loop_lines`)."""
    return [_INSTRUCTION.match(line).group(1) for line in main_loop_lines(kernel, params)]


def main_loop_lines(kernel: str | KernelSpec, params: Params | None = None) -> list[str]:
    """The SASS lines of the kernel's hottest loop in the offline SASS, in program order.

    The hottest loop is the innermost backward branch whose body holds the most math (`MATH`: FFMAs, or the
    tensor cores' HMMAs and HGMMAs): a loop around it (over the tiles of a persistent kernel) runs it, and
    not the other way round. A backward branch from past the kernel's EXIT is no loop: it returns from a block the
    compiler placed out of line (an mbarrier wait's retry), and the span it would close holds the EXIT. Where two
    bodies hold as many (the bounds-checked and unchecked copies of a main loop), the shorter one, which the blocks
    wholly inside C run. What it says about issue slots holds for large, tile-aligned shapes.
    """
    labels: dict[str, int] = {}
    lines: list[str] = []
    opcodes: list[str] = []
    loops: list[tuple[int, int]] = []  # (first, last) instruction of each loop body
    exits: list[int] = []  # unconditional EXITs
    for line in disassemble(kernel, params).splitlines():
        label = _LABEL.match(line)
        if label:
            labels[label.group(1)] = len(opcodes)
            continue
        instruction = _INSTRUCTION.match(line)
        if not instruction:
            continue
        lines.append(line)
        opcodes.append(instruction.group(1))
        if instruction.group(1) == "EXIT" and "@" not in line:
            exits.append(len(opcodes) - 1)
        target = _TARGET.search(instruction.group(2)) if instruction.group(1) == "BRA" else None
        if target and target.group(1) in labels:  # a label seen already: a backward branch
            loops.append((labels[target.group(1)], len(opcodes) - 1))
    loops = [(a, b) for a, b in loops if not any(a <= e < b for e in exits)]
    if not loops:
        raise ValueError(f"no loop in the SASS of {kernel if isinstance(kernel, str) else kernel.name}")
    math = {ab: sum(op in MATH for op in opcodes[ab[0]:ab[1] + 1]) for ab in loops}
    innermost = [ab for ab in loops if not any(o != ab and ab[0] <= o[0] and o[1] <= ab[1] and math[o] for o in loops)]
    first, last = max(innermost, key=lambda ab: (math[ab], ab[0] - ab[1]))
    return lines[first:last + 1]


def loop_report(kernel: str | KernelSpec, params: Params | None = None) -> Report:
    """`report`'s counts over the FFMAs of the hottest loop only (`main_loop_lines`): the instructions the budget's
    issue row counts, so that its registers row counts the same ones."""
    f = ffmas("\n".join(main_loop_lines(kernel, params)))
    return Report(len(f), sum(any(x.reuse) for x in f), sum(conflicts(f, "volta")), sum(conflicts(f, "maxwell")))


def main_loop_mix(kernel: str | KernelSpec, params: Params | None = None) -> dict[str, int]:
    """Opcode counts of the kernel's hottest loop (`main_loop`), most frequent first."""
    body = main_loop(kernel, params)
    return {op: body.count(op) for op in sorted(set(body), key=lambda op: (-body.count(op), op))}


def global_load_lead(kernel: str | KernelSpec, params: Params | None = None) -> int:
    """How many instructions ahead of their use the register-staged global loads are issued.

    For each global load (LDG) of the hottest loop, the instructions up to the next shared store (STS,
    which consumes the staged tile), going round the loop; the smallest. The compiler, not the source,
    decides where a load sits: the longer the lead, the more of a load's latency the math in between
    hides when no other warp is there to issue.
    """
    body = main_loop(kernel, params)
    loads = [i for i, op in enumerate(body) if op == "LDG"]
    stores = [i for i, op in enumerate(body) if op == "STS"]
    if not loads or not stores:
        raise ValueError("the main loop has no register-staged global loads (LDG followed by STS)")
    return min(min((j - i) % len(body) for j in stores) for i in loads)
