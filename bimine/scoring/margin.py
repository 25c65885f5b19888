"""Scores of kNN candidates: cosine and margin variants.

With ``cos(x, y)`` the cosine of a candidate pair, ``mx`` the mean cosine of source x to its
k nearest targets and ``my`` the mean cosine of target y to its k nearest sources:

    absolute  cos(x, y)                                   (margin "absolute" of Artetxe & Schwenk 2019)
    distance  cos(x, y) - (mx + my) / 2
    ratio     cos(x, y) / ((mx + my) / 2)                 (Artetxe & Schwenk 2019; paper 002 Eq. 2)
    eq9       cos(x, y) / ((mx + my) / 2) + cos(x, y)     (paper 001 Eq. 9: margin over both sides, cosine added)
    eq10      cos(q, c) / mq + cos(q, c)                  (paper 001 Eq. 10: only the query's own neighbourhood)

For ``eq10`` the query q is the source in the forward direction and the target in the
backward direction; its margin needs no kNN search in the other direction.
"""

from __future__ import annotations

import numpy as np

SCORES = ("ratio", "distance", "absolute", "eq9", "eq10")


def knn_mean(sims: np.ndarray, k: int, ids: np.ndarray | None = None) -> np.ndarray:
    """Mean of the ``k`` best similarities of each row (rows sorted best-first, as FAISS returns).

    Only valid neighbours count: with ``ids``, entries whose id is -1 (FAISS pads a row with id -1
    and similarity -3.4e38 when an approximate search finds fewer than k neighbours) are left out,
    as are non-finite similarities. A row with no valid neighbour gets NaN, never a huge number;
    :func:`margin_score` then takes the margin from the other side's mean alone.
    """
    s = np.asarray(sims[:, :k], dtype=np.float64)
    ok = np.isfinite(s) & (s > -1e30)
    if ids is not None:
        ok &= ids[:, :k] >= 0
    n = ok.sum(axis=1)
    total = np.where(ok, s, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan).astype(np.float32)


def _pair_mean(mean_x: np.ndarray, mean_y: np.ndarray) -> np.ndarray:
    """(mean_x + mean_y) / 2, or the one that exists when the other is NaN (no valid neighbour)."""
    both = (mean_x + mean_y) / 2
    return np.where(np.isnan(mean_x), mean_y, np.where(np.isnan(mean_y), mean_x, both))


def margin_score(cos: np.ndarray, mean_x: np.ndarray, mean_y: np.ndarray, kind: str = "ratio") -> np.ndarray:
    """Score of candidate pairs with cosine ``cos`` and neighbourhood means ``mean_x``, ``mean_y``
    (broadcastable arrays). For ``eq10``, ``mean_x`` is the query's mean and ``mean_y`` unused.
    A NaN mean (a sentence without valid neighbours) is replaced by the other side's mean; where
    both are NaN the score is NaN (and the candidate is never selected)."""
    cos = np.asarray(cos, dtype=np.float32)
    if kind == "absolute":
        return cos
    if kind == "eq10":
        return cos / np.maximum(mean_x, 1e-6) + cos
    m = _pair_mean(mean_x, mean_y)
    if kind == "distance":
        return cos - m
    if kind == "ratio":
        return cos / np.maximum(m, 1e-6)
    if kind == "eq9":
        return cos / np.maximum(m, 1e-6) + cos
    raise ValueError(f"unknown score {kind!r}: choose one of {', '.join(SCORES)}")


def score_candidates(kind: str, k: int, sxy: np.ndarray, ixy: np.ndarray, syx: np.ndarray | None,
                     iyx: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Scores of the forward candidates ``(sxy, ixy)`` and backward candidates ``(syx, iyx)``.

    ``sxy[i, c]`` is the cosine of source i to its c-th nearest target ``ixy[i, c]``. Rows
    with id -1 (no candidate) score ``-inf``. ``syx``/``iyx`` may be None only for ``eq10``
    and ``absolute`` (which need no backward search); the backward scores are then None.
    """
    mx = knn_mean(sxy, k, ixy)
    sxy = np.where(ixy >= 0, sxy, np.float32(np.nan))  # padding (-3.4e38) never enters a formula
    if syx is None:
        if kind not in ("eq10", "absolute"):
            raise ValueError(f"score {kind!r} needs kNN in both directions")
        return _mask(margin_score(sxy, mx[:, None], None, kind), ixy), None
    my = knn_mean(syx, k, iyx)
    syx = np.where(iyx >= 0, syx, np.float32(np.nan))
    # id -1 (no neighbour) would index the last row: those candidates are masked below anyway
    fwd = margin_score(sxy, mx[:, None], my[ixy] if kind != "eq10" else None, kind)
    bwd = margin_score(syx, my[:, None], mx[iyx] if kind != "eq10" else None, kind)
    return _mask(fwd, ixy), _mask(bwd, iyx)


def _mask(scores: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """-inf for candidates that do not exist (id -1) or whose score is undefined (NaN)."""
    with np.errstate(invalid="ignore"):
        return np.where((ids >= 0) & np.isfinite(scores), scores, -np.inf).astype(np.float32)
