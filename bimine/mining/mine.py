"""Mining pairs from two embedded sentence sets: kNN both ways, margin, selection."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bimine.mining.knn import knn_exact
from bimine.mining.margin import knn_mean, margin_score
from bimine.mining.select import select_pairs


@dataclass(frozen=True)
class MineConfig:
    """k: neighbours for the margin (LASER/001: 4); score: ratio, distance or absolute;
    strategy: forward, backward, intersection or max; threshold: minimum score (0 keeps all)."""

    k: int = 4
    score: str = "ratio"
    strategy: str = "max"
    threshold: float = 0.0


def mine_embeddings(
    x: np.ndarray, y: np.ndarray, cfg: MineConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mine pairs between unit-norm rows ``x`` (sources) and ``y`` (targets).

    Returns ``(score, src_index, tgt_index)`` sorted by descending score, at or above the
    threshold. Exact kNN (FAISS flat inner product) in both directions.
    """
    if len(x) == 0 or len(y) == 0:
        return np.zeros(0, np.float32), np.zeros(0, np.int64), np.zeros(0, np.int64)
    k = min(cfg.k, len(x), len(y))
    sxy, ixy = knn_exact(x, y, k)
    syx, iyx = knn_exact(y, x, k)
    mx, my = knn_mean(sxy, k), knn_mean(syx, k)
    fwd = margin_score(sxy, mx[:, None], my[ixy], cfg.score)
    bwd = margin_score(syx, my[:, None], mx[iyx], cfg.score)
    s, i, j = select_pairs(fwd, ixy, bwd, iyx, cfg.strategy)
    keep = s >= cfg.threshold
    return s[keep], i[keep], j[keep]
