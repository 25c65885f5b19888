"""Margin scores over k nearest neighbours (Artetxe & Schwenk 2019; paper 002 Eq. 2).

For candidates x (source) and y (target) with cosine ``cos(x, y)``::

    m(x, y) = (mean cos of x to its k nearest targets + mean cos of y to its k nearest sources) / 2
    absolute: cos(x, y)
    distance: cos(x, y) - m(x, y)
    ratio:    cos(x, y) / m(x, y)          (default; LASER's "ratio")

``knn_mean`` is the per-row mean of the k best similarities from a kNN search.
"""

from __future__ import annotations

import numpy as np

SCORES = ("ratio", "distance", "absolute")


def knn_mean(sims: np.ndarray, k: int) -> np.ndarray:
    """Mean of the ``k`` best similarities of each row (rows sorted best-first, as FAISS returns)."""
    return sims[:, :k].mean(axis=1, dtype=np.float64).astype(np.float32)


def margin_score(cos: np.ndarray, mean_x: np.ndarray, mean_y: np.ndarray, kind: str = "ratio") -> np.ndarray:
    """Score of candidate pairs with cosine ``cos`` and neighbourhood means ``mean_x``, ``mean_y``
    (all broadcastable arrays)."""
    if kind == "absolute":
        return np.asarray(cos, dtype=np.float32)
    m = (mean_x + mean_y) / 2
    if kind == "distance":
        return cos - m
    if kind == "ratio":
        return cos / np.maximum(m, 1e-6)
    raise ValueError(f"unknown margin {kind!r}: choose one of {', '.join(SCORES)}")
