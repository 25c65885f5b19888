"""Score combination (paper 002 §2.4) and selection of the best pairs.

- :func:`minmax` is 002 Eq. 4: ``(S - S_min) / (S_max - S_min)`` over all pairs.
- :func:`combine_scores` is 002 Eq. 3: the plain sum of the component scores (each oriented
  so that higher is cleaner), optionally min-max normalised first.
- Selection keeps pairs by a threshold on the combined score, the best ``fraction`` of them,
  or the best pairs up to a budget of target-side tokens (the WMT19/20 filtering tasks' "5M
  English words"). Ties are broken by input order (the earlier pair first) so selection is
  deterministic.
"""

from __future__ import annotations

import numpy as np

from bimine.errors import ConfigError


def minmax(s: np.ndarray) -> np.ndarray:
    """002 Eq. 4 over the finite values; a constant score becomes 0 everywhere, NaN stays NaN."""
    s = np.asarray(s, dtype=np.float64)
    fin = np.isfinite(s)
    if not fin.any():
        return s.copy()
    lo, hi = s[fin].min(), s[fin].max()
    if hi == lo:
        return np.where(fin, 0.0, s)
    return (s - lo) / (hi - lo)


def combine_scores(components: list[np.ndarray], normalize: bool = False) -> np.ndarray:
    """002 Eq. 3: sum of the clean-high component scores (Eq. 4 applied to each first when
    ``normalize``). A NaN component counts as 0 for that pair."""
    if not components:
        raise ConfigError("nothing to combine: the pipeline has no graded score")
    total = np.zeros(len(components[0]))
    for c in components:
        c = minmax(c) if normalize else np.asarray(c, dtype=np.float64)
        total += np.nan_to_num(c, nan=0.0, posinf=0.0, neginf=0.0)
    return total


def rank(scores: np.ndarray) -> np.ndarray:
    """Indices from the best score to the worst (NaN last), ties in input order."""
    s = np.asarray(scores, dtype=np.float64)
    key = np.where(np.isnan(s), -np.inf, s)
    return np.lexsort((np.arange(len(s)), -key))


def select_threshold(scores: np.ndarray, threshold: float) -> np.ndarray:
    """Keep pairs whose score is at least ``threshold`` (NaN never)."""
    s = np.asarray(scores, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return s >= threshold


def select_fraction(scores: np.ndarray, fraction: float, eligible: np.ndarray | None = None) -> np.ndarray:
    """Keep the best ``round(fraction * n)`` pairs among the ``eligible`` ones (default: all)."""
    if not 0 <= fraction <= 1:
        raise ConfigError(f"top fraction must be in [0, 1], got {fraction}")
    s = np.asarray(scores, dtype=np.float64)
    ok = np.ones(len(s), dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    order = [i for i in rank(s) if ok[i]]
    keep = np.zeros(len(s), dtype=bool)
    keep[order[: int(round(fraction * len(order)))]] = True
    return keep


def select_budget(scores: np.ndarray, tokens: np.ndarray, budget: int, eligible: np.ndarray | None = None) -> np.ndarray:
    """Keep the best pairs, in score order, while their ``tokens`` (e.g. target-side words)
    add up to at most ``budget``; the first pair that would exceed it ends the selection
    (as the WMT filtering tasks cut the ranked list)."""
    if budget < 0:
        raise ConfigError(f"token budget must be >= 0, got {budget}")
    s = np.asarray(scores, dtype=np.float64)
    t = np.asarray(tokens, dtype=np.int64)
    ok = np.ones(len(s), dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    keep = np.zeros(len(s), dtype=bool)
    used = 0
    for i in rank(s):
        if not ok[i]:
            continue
        if used + t[i] > budget:
            break
        used += int(t[i])
        keep[i] = True
    return keep


def greedy_one_to_one(src_ids, tgt_ids, scores: np.ndarray, eligible: np.ndarray | None = None) -> np.ndarray:
    """Paper 003 §5.2: go through the pairs from the best score down (ties in input order)
    and keep a pair only if neither its source nor its target is in a pair kept before, so
    that each sentence appears in at most one pair. ``src_ids``/``tgt_ids`` identify the
    sentences (row numbers, or the texts themselves); NaN scores and pairs not ``eligible``
    are never kept."""
    s = np.asarray(scores, dtype=np.float64)
    if not (len(src_ids) == len(tgt_ids) == len(s)):
        raise ValueError("src_ids, tgt_ids and scores must have the same length")
    ok = ~np.isnan(s) if eligible is None else np.asarray(eligible, dtype=bool) & ~np.isnan(s)
    used_s, used_t = set(), set()
    keep = np.zeros(len(s), dtype=bool)
    for i in rank(s):
        if not ok[i]:
            continue
        a, b = src_ids[i], tgt_ids[i]
        if a in used_s or b in used_t:
            continue
        used_s.add(a)
        used_t.add(b)
        keep[i] = True
    return keep
