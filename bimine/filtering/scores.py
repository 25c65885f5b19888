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


def corpus_margin(u: np.ndarray, v: np.ndarray, *, k: int = 4, kind: str = "ratio",
                  valid_src: np.ndarray | None = None, valid_tgt: np.ndarray | None = None,
                  index=None) -> np.ndarray:
    """Margin of each aligned pair ``(u[i], v[i])`` against the corpus itself (paper 002 Eq. 2):
    ``cos(u_i, v_i)`` over the mean cosine of ``u_i`` to its ``k`` nearest targets and of
    ``v_i`` to its ``k`` nearest sources, all targets/sources of the corpus being candidates
    (``kind`` "ratio" is Eq. 2; "distance", "eq9" as in mining). Rows not in ``valid_src`` /
    ``valid_tgt`` (blank sentences) are never neighbours and get NaN. ``index``: an
    :class:`~bimine.index.IndexConfig` (default: exact search below 300k rows, as in mining).
    """
    from dataclasses import replace

    from bimine.mining.margin import knn_mean, margin_score
    from bimine.mining.pipeline import MineConfig, knn_both_ways, side_from_array

    n = len(u)
    vs = np.arange(n) if valid_src is None else np.asarray(valid_src, dtype=np.int64)
    vt = np.arange(n) if valid_tgt is None else np.asarray(valid_tgt, dtype=np.int64)
    out = np.full(n, np.nan)
    if len(vs) == 0 or len(vt) == 0:
        return out
    cfg = MineConfig(k=min(k, len(vs), len(vt)))
    if index is not None:
        cfg = replace(cfg, index=index)
    sxy, ixy, syx, iyx = knn_both_ways(side_from_array(u, vs), side_from_array(v, vt), cfg)
    mx = np.full(n, np.nan, dtype=np.float32)
    my = np.full(n, np.nan, dtype=np.float32)
    mx[vs] = knn_mean(sxy, cfg.k, ixy)
    my[vt] = knn_mean(syx, cfg.k, iyx)
    both = np.intersect1d(vs, vt)
    cos = np.einsum("ij,ij->i", u[both], v[both])
    out[both] = margin_score(cos, mx[both], my[both], kind)
    return out
