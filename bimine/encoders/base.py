"""The Encoder protocol and what every encoder shares: its model id, its folder, the shipped
default's path (how to load one by name or path: :mod:`bimine.encoders.registry`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Encoder(Protocol):
    """Maps sentences of one language to L2-normalised float32 rows, one per sentence."""

    #: a short identifier stored in manifests so embeddings of different models never mix
    model_id: str
    #: embedding dimension
    dim: int

    def encode(self, sentences: list[str], lang: str) -> np.ndarray:
        """Return ``float32`` array of shape ``(len(sentences), dim)`` with unit-norm rows."""
        ...


def uses_language(encoder) -> bool:
    """Whether ``encoder.encode(sentences, lang)`` depends on ``lang``: a model with a tower per
    language, or whose character n-grams follow the language code, needs the right code; a
    by-script model, or e5, does not (the CLI then needs no ``--lang``)."""
    return bool(getattr(encoder, "uses_language", True))


def weights_digest(weights: dict[str, np.ndarray], config: dict | None = None) -> str:
    """The first 16 hex digits of a sha256 over the config (as JSON) and every tensor's name,
    dtype, shape and bytes: the identity of an encoder built in memory (one loaded from a
    folder hashes its file)."""
    h = hashlib.sha256(json.dumps(config, sort_keys=True).encode())
    for name in sorted(weights):
        a = np.ascontiguousarray(weights[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.reshape(-1).view(np.uint8))
    return h.hexdigest()[:16]


def model_folder(encoder) -> Path | None:
    """The folder an encoder was loaded from (``None`` for e5-small, which has none)."""
    f = getattr(encoder, "_weights_file", None)
    return Path(f).parent if f is not None else None


def default_model_path() -> Path:
    """Folder of the model shipped inside the package."""
    return Path(__file__).resolve().parent.parent / "models" / "default"
