"""The files of a cross-encoder stage (``cross.json`` and ``cross.safetensors`` in a folder), what
every kind of cross-encoder shares: the e5-small one (:mod:`bimine.scoring.cross_encoder`) and
the one trained from scratch (:mod:`bimine.scoring.cross_scratch`). Which class reads a folder is
decided by its ``kind`` (:func:`bimine.scoring.rescore.load_cross_stage`)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from bimine.errors import InputError
from bimine.weights import read_json, save_safetensors, write_json

FORMAT = 1
META_FILE = "cross.json"
WEIGHTS_FILE = "cross.safetensors"


def state_fingerprint(meta: dict, state: dict) -> str:
    """A hash of a cross-encoder's settings and weights (what cached probabilities depend on)."""
    h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    for k, v in sorted(state.items()):
        h.update(k.encode())
        h.update(v.numpy().tobytes())
    return h.hexdigest()[:16]


def save_stage(folder: str | os.PathLike, state: dict, meta: dict) -> None:
    """Write ``cross.safetensors`` (``state``, readable by all) and ``cross.json`` (``meta``
    with the format number), each through a temporary file and a rename."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_safetensors(folder / WEIGHTS_FILE, state)
    write_json(folder / META_FILE, {"format": FORMAT, **meta}, indent=1, sort_keys=True)


def checked_labels(src: list[str], tgt: list[str], y) -> np.ndarray:
    """``y`` as float32, refused unless it has one label per pair and both labels occur."""
    y = np.asarray(y, dtype=np.float32)
    if len(src) != len(tgt) or len(src) != len(y):
        raise ValueError("src, tgt and y must have the same length")
    if y.min() == y.max():
        raise InputError("the cross-encoder needs both positive and negative pairs to learn from")
    return y


def read_stage_meta(folder: Path) -> tuple[dict, Path]:
    """The settings of the cross-encoder saved in ``folder`` (``format`` checked and removed)
    and the path of its weights; a folder without both files is refused."""
    meta_path, w_path = folder / META_FILE, folder / WEIGHTS_FILE
    if not meta_path.is_file() or not w_path.is_file():
        raise InputError(f"{folder}: not a cross-encoder folder (expected {META_FILE} and {WEIGHTS_FILE})")
    meta = read_json(meta_path, "cross-encoder config")
    if meta.get("format") != FORMAT:
        raise InputError(f"{meta_path}: cross-encoder format {meta.get('format')!r}; this bimine reads {FORMAT}")
    meta.pop("format")
    return meta, w_path
