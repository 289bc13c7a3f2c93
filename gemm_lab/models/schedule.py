"""How a launch shares its tiles of C out among the SMs: waves of one block per tile, or stream-K.

With one block per tile, the GPU runs the tiles in waves of as many blocks as it holds at once (its resident slots);
a last wave that is not full leaves slots idle. Kernel 10b's stream-K (`kernels/10b_pipelined_warp_tiling.cu`,
`stream_k`) starts one block per slot instead, cuts the tiles left over after whole waves along K into one equal run
of k-steps per block, and then hands out the whole tiles. `stream_k` mirrors that schedule, so the book can draw it
and the tests can check that it covers every k-step of every tile once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

GROUP = 8  # kernel 10b's `GROUP`: block rows its tile order walks down before moving one block column right


@dataclass(frozen=True)
class Piece:
    """Part of one tile's work: k-steps [first, first + steps) of tile `tile`; all of them for a whole tile."""

    tile: int
    first: int
    steps: int


def tile_position(tile: int, tiles_m: int, tiles_n: int) -> tuple[int, int]:
    """(block row, block column) of tile index `tile` in kernel 10b's grouped order: down GROUP block rows, then one
    column right, so that the tiles in flight share rows of A and columns of B in L2."""
    per_group = GROUP * tiles_n
    first_row = tile // per_group * GROUP
    rows_here = min(tiles_m - first_row, GROUP)
    return first_row + tile % per_group % rows_here, tile % per_group // rows_here


def waves(tiles: int, slots: int) -> float:
    """Tiles per resident slot: 3.88 means three full waves and a last one 88 % full."""
    return tiles / slots


def idle_share(tiles: int, slots: int) -> float:
    """The share of slot time the waves leave idle, if every tile takes as long: the empty part of the last wave."""
    return 1 - tiles / (slots * math.ceil(tiles / slots))


def stream_k(tiles: int, steps: int, blocks: int) -> list[list[Piece]]:
    """Each block's pieces in the order it runs them, as kernel 10b's `stream_k` hands them out: first its run of
    k-steps over the tiles % blocks shared tiles (a run may span two tiles), then every `blocks`-th whole tile."""
    if tiles < 0 or steps < 0 or blocks < 1:
        raise ValueError(f"stream_k: tiles={tiles}, steps={steps}, blocks={blocks}: need tiles, steps >= 0 and "
                         "blocks >= 1")
    shared = tiles % blocks if steps else 0  # K = 0: only whole (empty) tiles
    units = shared * steps
    out = []
    for b in range(blocks):
        pieces, unit, end = [], units * b // blocks, units * (b + 1) // blocks
        while unit < end:
            tile, first = divmod(unit, steps)
            count = min(steps - first, end - unit)
            pieces.append(Piece(tile, first, count))
            unit += count
        pieces += [Piece(t, 0, steps) for t in range(shared + b, tiles, blocks)]
        out.append(pieces)
    return out
