"""Pair selection from scored kNN candidates (LASER ``mine_bitexts`` conventions, plus greedy).

forward: each source with its best-scoring target; backward: each target with its best source;
intersection: pairs chosen in both directions (mutual best); max: forward and backward
best candidates together, taken by descending score, each source and target at most once;
greedy: *all* k candidates of both directions, taken by descending score, each sentence at
most once (the one-to-one post-processing of paper 003 §5.2).
"""

from __future__ import annotations

import numpy as np

STRATEGIES = ("forward", "backward", "intersection", "max", "greedy")


def best_candidates(scores: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row, the best score and the candidate index it belongs to."""
    if len(scores) == 0:
        return np.zeros(0, np.float32), np.zeros(0, np.int64)
    j = scores.argmax(axis=1)
    rows = np.arange(len(scores))
    return scores[rows, j], cand[rows, j]


def one_to_one(s: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the pairs kept when taking pairs by descending score, each x and y once."""
    order = np.argsort(-s, kind="stable")
    used_x: set[int] = set()
    used_y: set[int] = set()
    keep = []
    for o, xi, yi in zip(order.tolist(), x[order].tolist(), y[order].tolist()):
        if xi in used_x or yi in used_y:
            continue
        used_x.add(xi)
        used_y.add(yi)
        keep.append(o)
    return np.asarray(keep, dtype=np.int64)


def select_pairs(
    fwd_scores: np.ndarray, fwd_cand: np.ndarray, bwd_scores: np.ndarray | None, bwd_cand: np.ndarray | None,
    strategy: str = "max",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(score, src_index, tgt_index)`` arrays, sorted by descending score.

    ``fwd_scores[i, c]`` scores source i with target ``fwd_cand[i, c]``; ``bwd_scores[j, c]``
    scores target j with source ``bwd_cand[j, c]``. Candidates scoring ``-inf`` (no neighbour)
    are never selected.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    if bwd_scores is None and strategy != "forward":
        raise ValueError(f"strategy {strategy!r} needs backward candidates")
    fs, ft = best_candidates(fwd_scores, fwd_cand)
    fsrc = np.arange(len(fs))
    if bwd_scores is not None:
        bs, bt = best_candidates(bwd_scores, bwd_cand)
        btgt = np.arange(len(bs))
    if strategy == "forward":
        s, x, y = fs, fsrc, ft
    elif strategy == "backward":
        s, x, y = bs, bt, btgt
    elif strategy == "intersection":
        ok = ft >= 0
        mutual = np.zeros(len(fs), bool)
        mutual[ok] = bt[ft[ok]] == fsrc[ok]
        s, x, y = fs[mutual], fsrc[mutual], ft[mutual]
    elif strategy == "max":
        s, x, y = np.concatenate([fs, bs]), np.concatenate([fsrc, bt]), np.concatenate([ft, btgt])
        keep = one_to_one(s, x, y)
        s, x, y = s[keep], x[keep], y[keep]
    else:  # greedy over all candidates
        k1, k2 = fwd_scores.shape[1], bwd_scores.shape[1]
        s = np.concatenate([fwd_scores.ravel(), bwd_scores.ravel()])
        x = np.concatenate([np.repeat(np.arange(len(fwd_scores)), k1), bwd_cand.ravel()])
        y = np.concatenate([fwd_cand.ravel(), np.repeat(np.arange(len(bwd_scores)), k2)])
        keep = one_to_one(s, x, y)
        s, x, y = s[keep], x[keep], y[keep]
    valid = np.isfinite(s) & (x >= 0) & (y >= 0)
    s, x, y = s[valid], x[valid], y[valid]
    order = np.argsort(-s, kind="stable")
    return s[order].astype(np.float32), x[order].astype(np.int64), y[order].astype(np.int64)
