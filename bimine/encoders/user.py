"""A user's own encoder as a bimine encoder (issue 74).

Anything with ``encode(list[str]) -> array`` (the sentence-transformers shape: a SentenceTransformer,
LaBSE; LASER's ``laser_encoders`` or SONAR through a two-line wrapper whose ``encode`` calls theirs) is accepted wherever a model is
taken: :class:`UserEncoder` calls it, checks what comes back (one finite row per sentence, the same
width every call) and L2-normalises the rows, as bimine's own encoders give them. Its ``model_id``
is new for every wrapping (``user-<class>-<random>``): a cache or store made with it is never reused
for another model, or for the same object changed since (fine-tuned, reloaded).

``-m st:PATH`` on the command line loads a local sentence-transformers model folder this way
(extra ``bimine[st]``), its ``model_id`` then named by the folder's files, so that its stores can be
reused by a later run.

A job object holds its model as a name; :func:`object_model_name` gives an encoder object one
(``object:<model_id>``) that :func:`bimine.encoders.registry.encoder_spec` finds again in this
process (an object cannot be sent to a Ray worker by name: refused there in one line).
"""

from __future__ import annotations

import functools
import hashlib
import os
import uuid
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from bimine.diskcache import file_digest
from bimine.encoders.base import Encoder
from bimine.errors import ConfigError, InputError

OBJECT_PREFIX = "object:"
_OBJECTS: weakref.WeakValueDictionary[str, Encoder] = weakref.WeakValueDictionary()


def _to_array(raw: Any) -> np.ndarray:
    """What a user's ``encode`` returned as a float32 array (a NumPy array, a list of rows, a
    PyTorch tensor on any device, a list of tensors)."""
    if hasattr(raw, "detach"):  # a torch tensor: off the graph, onto the CPU
        raw = raw.detach().cpu().float().numpy()
    elif isinstance(raw, (list, tuple)) and raw and hasattr(raw[0], "detach"):
        raw = [r.detach().cpu().float().numpy() for r in raw]
    return np.asarray(raw, dtype=np.float32)


class UserEncoder(Encoder):
    """``obj`` (anything with ``encode(list[str]) -> array``) as a bimine :class:`Encoder`.

    ``model_id``: the name caches and stores know it by (default: new for every wrapping);
    ``dim``: the vectors' width (default: sentence-transformers' ``get_embedding_dimension()`` (or
    its older name) where it has one, else one sentence encoded to see). The language is not passed to ``obj``."""

    uses_language = False

    def __init__(self, obj: Any, *, model_id: str | None = None, dim: int | None = None) -> None:
        if not callable(getattr(obj, "encode", None)):
            raise ConfigError(f"model: {type(obj).__name__} has no encode method; give a model name ('default', "
                              "'e5-small', 'auto'), a model folder, or an object with encode(list[str]) -> array")
        self.obj = obj
        self.name = type(obj).__name__
        self.model_id = model_id or f"user-{self.name}-{uuid.uuid4().hex[:16]}"
        self.dim = 0
        if dim is None:
            get = getattr(obj, "get_embedding_dimension", None) or getattr(obj, "get_sentence_embedding_dimension", None)
            dim = get() if callable(get) else None
        self.dim = int(dim) if dim else self._encode(["dimension"], "und").shape[1]

    def _encode(self, sentences: list[str], lang: str) -> np.ndarray:
        if not sentences and self.dim:
            return np.zeros((0, self.dim), dtype=np.float32)
        raw = self.obj.encode(sentences)  # the user's code: its own errors are its own
        try:
            arr = _to_array(raw)
        except (TypeError, ValueError) as e:
            raise InputError(f"model {self.name}: its encode(list of {len(sentences)} str) did not give an array "
                             f"of numbers: {e}") from None
        if arr.ndim != 2 or arr.shape[0] != len(sentences) or (self.dim and arr.shape[1] != self.dim):
            want = f"({len(sentences)}, {self.dim or 'dim'})"
            raise InputError(f"model {self.name}: its encode(list of {len(sentences)} str) gave shape {arr.shape}, "
                             f"not {want}: one row per sentence, the same width every call")
        if not np.isfinite(arr).all():
            row = int(np.where(~np.isfinite(arr).all(axis=1))[0][0])
            raise InputError(f"model {self.name}: the vector of sentence {row} ({sentences[row][:40]!r}) is not "
                             "finite (NaN or inf)")
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        return np.ascontiguousarray(arr / np.maximum(norms, 1e-12), dtype=np.float32)


class ProtocolEncoder(Encoder):
    """An object already in bimine's own encoder shape (``model_id``, ``dim``, ``encode(sentences,
    lang)``: a stand-in, a plug-in's encoder) as an :class:`Encoder`: called with the language, known
    by its own ``model_id``."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.model_id = str(obj.model_id)
        self.dim = int(obj.dim)
        self.uses_language = bool(getattr(obj, "uses_language", True))

    def _encode(self, sentences: list[str], lang: str) -> np.ndarray:
        return np.asarray(self.obj.encode(sentences, lang), dtype=np.float32)


def as_encoder(model: Any) -> Encoder:
    """``model`` as an encoder: one of bimine's as it is; an object in bimine's encoder shape (with
    ``model_id`` and ``dim``) called as it expects; anything else with ``encode`` wrapped in a
    :class:`UserEncoder`."""
    if isinstance(model, Encoder):
        return model
    if all(hasattr(model, a) for a in ("model_id", "dim", "encode")):
        return ProtocolEncoder(model)
    return UserEncoder(model)


def object_model_name(model: Any) -> str | os.PathLike | None:
    """The name for ``model``: a str or path as it is; an encoder object (or any object with
    ``encode``) registered for this process under ``object:<model_id>``. The registry holds it
    weakly: whoever keeps the name keeps the object too (:func:`hold_model`)."""
    if model is None or isinstance(model, (str, os.PathLike)):
        return model
    enc = as_encoder(model)
    name = f"{OBJECT_PREFIX}{enc.model_id}:{uuid.uuid4().hex[:12]}"  # one a registration: two objects never share one
    _OBJECTS[name] = enc
    return name


def hold_model(job: Any) -> None:
    """A job object given an encoder object as ``model``: ``job.model`` becomes its name
    (:func:`object_model_name`) and the job keeps the object, so that the name finds it while the
    job lives (a job holds names: what YAML and the command line give)."""
    model = job.model
    if not callable(getattr(model, "encode", None)) or isinstance(model, (str, os.PathLike)):
        return  # a name, or a wrong value that the job's schema check names (model: 5)
    enc = as_encoder(model)
    object.__setattr__(job, "_model_object", enc)  # not a field: a copy made by replace() finds it by name
    object.__setattr__(job, "model", object_model_name(enc))


def registered_object(name: str) -> Encoder:
    """The encoder object registered as ``name`` by :func:`object_model_name`."""
    enc = _OBJECTS.get(name)
    if enc is None:
        raise ConfigError(f"model {name!r}: an encoder object given in Python is known only to the process that "
                          "gave it, while it lives (not to a Ray worker or a later run); give a model name or folder")
    return enc


@functools.lru_cache(maxsize=256)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """:func:`bimine.diskcache.file_digest`, once a process for the same size and time (LaBSE's 1.8 GB
    is read once)."""
    return file_digest(path)


def load_sentence_transformer(path: str, **options: Any) -> Encoder:
    """``-m st:PATH``: the local sentence-transformers model folder ``PATH`` (never downloaded), its
    ``model_id`` named by the folder's files (names, sizes, bytes)."""
    folder = Path(path)
    unknown = sorted(set(options) - {"device"})
    if unknown:
        raise ConfigError(f"model st:{path}: unknown option(s) {', '.join(unknown)}; a sentence-transformers model "
                          "takes device (default cpu)")
    if not folder.is_dir():
        raise ConfigError(f"model st:{path}: no such folder (st: takes a local sentence-transformers model folder)")
    try:
        from sentence_transformers import SentenceTransformer  # loaded on use: an extra
    except ImportError:
        raise ConfigError(f"model st:{path} needs sentence-transformers: pip install 'bimine[st]'") from None
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        meta = f.stat()
        h.update(f"{f.relative_to(folder).as_posix()}|{meta.st_size}|".encode())
        h.update(_file_sha256(str(f), meta.st_size, meta.st_mtime_ns).encode())
    try:
        st = SentenceTransformer(str(folder), device=options.get("device", "cpu"), local_files_only=True)
    except (OSError, ValueError) as e:
        raise ConfigError(f"model st:{path}: not a sentence-transformers model folder: {e}") from None
    return UserEncoder(st, model_id=f"st-{h.hexdigest()[:16]}")
