"""Pair selection from scored kNN candidates (LASER ``mine_bitexts`` conventions).

forward: each source with its best-scoring target; backward: each target with its best source;
intersection: pairs chosen in both directions (mutual best); max: forward and backward
candidates together, taken by descending score, each source and each target at most once.
"""

from __future__ import annotations

import numpy as np

STRATEGIES = ("forward", "backward", "intersection", "max")


def best_candidates(scores: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row, the best score and the candidate index it belongs to."""
    j = scores.argmax(axis=1)
    rows = np.arange(len(scores))
    return scores[rows, j], cand[rows, j]


def select_pairs(
    fwd_scores: np.ndarray,
    fwd_cand: np.ndarray,
    bwd_scores: np.ndarray,
    bwd_cand: np.ndarray,
    strategy: str = "max",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(score, src_index, tgt_index)`` arrays, sorted by descending score.

    ``fwd_scores[i, c]`` scores source i with target ``fwd_cand[i, c]``; ``bwd_scores[j, c]``
    scores target j with source ``bwd_cand[j, c]``.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    fs, ft = best_candidates(fwd_scores, fwd_cand) if len(fwd_scores) else (np.zeros(0), np.zeros(0, int))
    bs, bt = best_candidates(bwd_scores, bwd_cand) if len(bwd_scores) else (np.zeros(0), np.zeros(0, int))
    fsrc = np.arange(len(fs))
    btgt = np.arange(len(bs))
    if strategy == "forward":
        s, x, y = fs, fsrc, ft
    elif strategy == "backward":
        s, x, y = bs, bt, btgt
    elif strategy == "intersection":
        mutual = bt[ft] == fsrc if len(bs) else np.zeros(len(fs), bool)
        s, x, y = fs[mutual], fsrc[mutual], ft[mutual]
    else:
        s = np.concatenate([fs, bs])
        x = np.concatenate([fsrc, bt])
        y = np.concatenate([ft, btgt])
        order = np.argsort(-s, kind="stable")
        used_x: set[int] = set()
        used_y: set[int] = set()
        keep = []
        for o in order:
            xi, yi = int(x[o]), int(y[o])
            if xi in used_x or yi in used_y:
                continue
            used_x.add(xi)
            used_y.add(yi)
            keep.append(o)
        keep = np.asarray(keep, dtype=np.int64)
        s, x, y = s[keep], x[keep], y[keep]
    order = np.argsort(-s, kind="stable")
    return s[order].astype(np.float32), x[order].astype(np.int64), y[order].astype(np.int64)
