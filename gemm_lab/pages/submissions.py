"""The reader's own scoreboard: every write-the-kernel submission `submit` timed on this machine, kept as JSON beside
the compile cache, so that a later session can compare attempts."""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

from .. import compiler, records
from ..records import Measurement


def scoreboard_path() -> Path:
    """Where the personal scoreboard is kept: beside the compile cache (GEMM_LAB_CACHE, else ~/.cache/gemm_lab)."""
    return Path(os.environ.get(compiler.CACHE_ENV) or Path.home() / ".cache" / "gemm_lab") / "scoreboard.json"


def scoreboard() -> list[dict[str, Any]]:
    """Every timed submission so far on this machine, oldest first."""
    path = scoreboard_path()
    try:
        rows = json.loads(path.read_text()) if path.exists() else []
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not the scoreboard's JSON ({e}): move it away to start a new one") from None
    if not isinstance(rows, list):
        raise ValueError(f"{path} holds no list of submissions: move it away to start a new one")
    return rows


def remember(x: Measurement, like: str) -> None:
    """Add a timed submission to the scoreboard; an unreadable one is kept aside (never overwritten) with a warning."""
    path = scoreboard_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        earlier = scoreboard()
    except ValueError as e:
        aside = path.with_name(f"{path.stem}.unreadable-{records.utc_now().replace(':', '')}.json")
        path.rename(aside)
        warnings.warn(f"{e}; kept it as {aside} and started a new scoreboard", stacklevel=3)
        earlier = []
    rows = earlier + [{"like": like, "params": x.params, "size": x.m, "gflops": x.gflops,
                       "cublas_gflops": x.cublas_gflops, "gpu": x.gpu, "at": records.utc_now()}]
    path.write_text(json.dumps(rows, indent=1))
