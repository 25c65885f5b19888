"""Graded pair scores from sentence embeddings (kind ``"score"``: summed into ``score``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bimine.filtering.base import PairFilter


@dataclass
class CosineScore(PairFilter):
    """Score: cosine of the two sides' embeddings (``encoder``, unit-norm rows); no threshold
    by default (it only scores)."""

    encoder: object = None
    src_lang: str = "en"
    tgt_lang: str = "en"
    name: str = "cosine"
    threshold: float | None = None
    clean_high: bool = True
    reason: str = "embedding cosine below the threshold"
    kind: str = "score"
    batch_size: int = field(default=8192, repr=False)

    def score(self, src, tgt):
        u = self.encoder.encode(src, self.src_lang)
        v = self.encoder.encode(tgt, self.tgt_lang)
        return np.einsum("ij,ij->i", u, v).astype(np.float64)
