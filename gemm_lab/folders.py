"""Where recorded results live: `records/<gpu>/` in the repository, one folder per GPU.

`device` looks here to choose whose records to replay, and `records` to read and write them: this module sits below
both, so neither needs the other to find a folder.
"""
from __future__ import annotations

import re
from pathlib import Path

from .catalog import ROOT

RECORDS_DIR = ROOT / "records"


def slug(gpu_name: str) -> str:
    """Folder name of a GPU's records: 'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    return re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")


def gpu_folder(gpu_name: str) -> Path:
    return RECORDS_DIR / slug(gpu_name)


def has_records(gpu_name: str) -> bool:
    """Whether records/ holds a complete set for this GPU, enough to replay every page: `gemm-lab record` writes the
    ceilings first and the counters last; a `--only headline` folder (a second GPU) lacks them, so replay uses the
    H100's records instead of failing on a missing case."""
    folder = gpu_folder(gpu_name)
    return (folder / "device.json").is_file() and (folder / "ncu.json").is_file()
