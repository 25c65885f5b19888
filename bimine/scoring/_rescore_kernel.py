"""Compiled (numba) word-match features of the rescorer (:func:`bimine.scoring.rescore.word_features`).

Pair ``n`` has source words ``a_ids[a_off[n]:a_off[n+1]]`` (rows of ``A``, unit vectors) and
target words ``b_ids[b_off[n]:b_off[n+1]]`` (rows of ``B``). For each side: the mean over its
words of the best cosine to a word of the other side, the worst word's best cosine, and the
share of words whose best cosine reaches ``match``; zeros when a side has no words.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, fastmath=True, parallel=True)
def word_match(A, a_ids, a_off, B, b_ids, b_off, match):
    n = len(a_off) - 1
    out = np.zeros((n, 6), dtype=np.float32)
    d = A.shape[1]
    for p in prange(n):
        a0, a1, b0, b1 = a_off[p], a_off[p + 1], b_off[p], b_off[p + 1]
        na, nb = a1 - a0, b1 - b0
        if na == 0 or nb == 0:
            continue
        best_b = np.full(nb, -2.0, dtype=np.float32)
        sum_a = 0.0
        min_a = 2.0
        hit_a = 0
        for i in range(na):
            ra = a_ids[a0 + i]
            best = np.float32(-2.0)
            for j in range(nb):
                rb = b_ids[b0 + j]
                s = np.float32(0.0)
                for k in range(d):
                    s += A[ra, k] * B[rb, k]
                if s > best:
                    best = s
                if s > best_b[j]:
                    best_b[j] = s
            sum_a += best
            if best < min_a:
                min_a = best
            if best >= match:
                hit_a += 1
        sum_b = 0.0
        min_b = 2.0
        hit_b = 0
        for j in range(nb):
            sum_b += best_b[j]
            if best_b[j] < min_b:
                min_b = best_b[j]
            if best_b[j] >= match:
                hit_b += 1
        out[p, 0] = sum_a / na
        out[p, 1] = sum_b / nb
        out[p, 2] = min_a
        out[p, 3] = min_b
        out[p, 4] = hit_a / na
        out[p, 5] = hit_b / nb
    return out
