"""Compiled (numba) kernels of the two-pass aligner (:mod:`bimine.documents.twopass`).

**First pass** (:func:`anchor_chain`): the heaviest chain of 1:1 links ``(i, j)``, strictly
increasing in both ``i`` and ``j``, among the candidate links (each source sentence's top-k
target sentences inside a window around the diagonal), a link weighing its cosine. Bertalign's
first pass is a DP over 1:1 beads and skips whose 1:1 beads score their cosine when the target is
among the source's top-k and 0 otherwise, and whose skips score 0; the best path of that DP is
this chain (a 1:1 bead scoring 0 is worth two skips), found here in ``O(N k log M)`` with a
Fenwick tree of prefix maxima over the target positions, instead of a DP over a window of
hundreds of cells per row.

**Second pass** (:func:`band_dp_affine`): a DP over the band around the anchors with beads ``a:b``
(``a + b <=`` a maximum, both >= 1) and skips. A bead scores the cosine of the joined runs'
embeddings, less the mean of the runs' baselines ``bx``/``by`` (zero, or each run's mean cosine to
random sentences of the other document), less (``margin``) the mean cosine of each run to the sentences just outside the
other run, times (``length``) ``log2(1 + short / long)`` of the runs' character lengths (the
target's scaled by the documents' length ratio); a skip of source sentence ``i`` scores
``skip_x[i]`` (of target ``j``: ``skip_y[j]``), plus ``open_x[i]`` (``open_y[j]``) when it starts a run
of skips on its side (all zero: independent skips, Bertalign's). The DP maximises the total score;
stored as costs (negated scores) in the layout of :mod:`bimine.documents._align_kernel` (row ``i``
holds columns ``lo[i]..hi[i]`` from ``off[i]``).

Ties go to the first candidate: the earlier predecessor state (bead, deletion, insertion) and the
earlier bead type in the order given (tests/test_twopass.py checks the best score against a
brute-force search of every path).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def anchor_chain(cand_i, cand_j, cand_w, m):
    """The heaviest chain of candidate links strictly increasing in both coordinates.

    ``cand_i`` must be sorted (non-decreasing); ``cand_w`` > 0. Returns the indices of the
    chosen candidates in increasing order. Ties: the first maximum in candidate order."""
    n_c = cand_i.shape[0]
    tree_v = np.zeros(m + 1, np.float64)  # Fenwick tree over target positions 1..m: prefix maximum
    tree_a = np.full(m + 1, -1, np.int64)  # the candidate reaching that maximum
    best = np.zeros(n_c, np.float64)
    prev = np.full(n_c, -1, np.int64)
    start = 0
    while start < n_c:
        end = start
        while end < n_c and cand_i[end] == cand_i[start]:
            end += 1
        # every candidate of this source sentence reads chains ending at earlier sentences only
        for c in range(start, end):
            q = cand_j[c]  # targets < cand_j[c]: positions 1..q in the tree (j + 1 is position)
            v = 0.0
            a = -1
            while q > 0:
                if tree_v[q] > v:
                    v = tree_v[q]
                    a = tree_a[q]
                q -= q & (-q)
            best[c] = v + cand_w[c]
            prev[c] = a
        for c in range(start, end):
            p = cand_j[c] + 1
            while p <= m:
                if best[c] > tree_v[p]:
                    tree_v[p] = best[c]
                    tree_a[p] = c
                p += p & (-p)
        start = end
    top = -1
    top_v = 0.0
    for c in range(n_c):
        if best[c] > top_v:
            top_v = best[c]
            top = c
    k = 0
    c = top
    while c >= 0:
        k += 1
        c = prev[c]
    out = np.empty(k, np.int64)
    c = top
    while c >= 0:
        k -= 1
        out[k] = c
        c = prev[c]
    return out


@njit(cache=True, nogil=True, fastmath=True)
def _dot(X, xr, Y, yr):
    s = np.float32(0.0)
    for k in range(X.shape[1]):
        s += X[xr, k] * Y[yr, k]
    return s


@njit(cache=True, nogil=True)
def _outside_mean(V, vr, W, w0, left, right, count):
    """Mean cosine of row ``vr`` of ``V`` to the single sentences ``left`` and ``right`` of ``W``
    (those of ``0..count-1`` that exist; layer 1 of ``W`` starts at row ``w0``); 0 for none."""
    t = 0.0
    k = 0
    if left >= 0:
        t += _dot(V, vr, W, w0 + left)
        k += 1
    if right < count:
        t += _dot(V, vr, W, w0 + right)
        k += 1
    return t / k if k else 0.0


@njit(cache=True, nogil=True)
def _popcount(v):
    """Set bits of a uint64 (SWAR)."""
    v = v - ((v >> np.uint64(1)) & np.uint64(0x5555555555555555))
    v = (v & np.uint64(0x3333333333333333)) + ((v >> np.uint64(2)) & np.uint64(0x3333333333333333))
    v = (v + (v >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((v * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, nogil=True)
def token_counts(XT, xr, YT, yr):
    """Tokens in both rows' bit sets, and in one of them only."""
    both = 0
    total = 0
    for w in range(XT.shape[1]):
        both += _popcount(XT[xr, w] & YT[yr, w])
        total += _popcount(XT[xr, w]) + _popcount(YT[yr, w])
    return both, total - 2 * both


@njit(cache=True, nogil=True)
def bead_score(a, b, pi, pj, n, m, X, xstart, xlen, Y, ystart, ylen, ratio, margin, length, bx, by, extra,
               XT, YT, tok_weight, tok_unmatched):
    """Score of the bead of source sentences ``pi..pi+a-1`` and target ``pj..pj+b-1``."""
    xr = xstart[a - 1] + pi
    yr = ystart[b - 1] + pj
    s = np.float64(_dot(X, xr, Y, yr)) - (bx[xr] + by[yr]) / 2.0
    if margin:
        # the source run against the target sentences just outside the target run, and back
        t = _outside_mean(X, xr, Y, ystart[0], pj - 1, pj + b, m)
        u = _outside_mean(Y, yr, X, xstart[0], pi - 1, pi + a, n)
        s -= (t + u) / 2.0
    if length:
        lx = xlen[xr]
        ly = ylen[yr] * ratio
        lo = min(lx, ly)
        hi = max(lx, ly)
        s *= np.log2(1.0 + lo / hi) if hi > 0 else 0.0
    if tok_weight != 0.0:
        both, one = token_counts(XT, xr, YT, yr)
        s += tok_weight * (both - tok_unmatched * one)
    return s + extra * (a + b - 2)


@njit(cache=True, nogil=True)
def band_dp_affine(n, m, lo, hi, off, ta, tb, X, xstart, xlen, Y, ystart, ylen, ratio, margin, length, skip_x,
                   skip_y, open_x, open_y, xcut, ycut, bx, by, extra, XT, YT, tok_weight, tok_unmatched):
    """Fill the maximising DP over the band with affine skips (Gotoh): a run of skipped sentences on one side scores
    the opening score of its first sentence (``open_x``/``open_y``) once plus each sentence's
    skip score, so that a block of lines with no
    counterpart (figure captions, a page's header and footer) is skipped as one gap instead of
    being spread over beads. Three states per cell: 0 = the last move was a bead (or the start),
    1 = a deletion, 2 = an insertion. Returns ``(D, B, P)``: per state and cell the cumulative
    cost, the move that reached it (bead type, ``T`` deletion, ``T + 1`` insertion) and the state
    it came from."""
    T = ta.shape[0]
    total = off[n] + hi[n] - lo[n] + 1
    D = np.full((3, total), np.inf)
    B = np.full((3, total), -1, np.int8)
    P = np.full((3, total), -1, np.int8)
    for i in range(n + 1):
        base = off[i] - lo[i]
        for j in range(lo[i], hi[i] + 1):
            c = base + j
            if i == 0 and j == 0:
                D[0, c] = 0.0
                continue
            # deletion of source sentence i - 1
            if i > 0 and lo[i - 1] <= j <= hi[i - 1]:
                pc = off[i - 1] - lo[i - 1] + j
                for s in range(3):
                    v = D[s, pc] - skip_x[i - 1] - (open_x[i - 1] if s != 1 else 0.0)
                    if v < D[1, c]:
                        D[1, c] = v
                        B[1, c] = T
                        P[1, c] = s
            # insertion of target sentence j - 1
            if j > lo[i]:
                pc = c - 1
                for s in range(3):
                    v = D[s, pc] - skip_y[j - 1] - (open_y[j - 1] if s != 2 else 0.0)
                    if v < D[2, c]:
                        D[2, c] = v
                        B[2, c] = T + 1
                        P[2, c] = s
            for t in range(T):
                a = ta[t]
                b = tb[t]
                if i < a or j < b:
                    continue
                pi = i - a
                pj = j - b
                if pj < lo[pi] or pj > hi[pi]:
                    continue
                pc = off[pi] - lo[pi] + pj
                ps = 0
                prev = D[0, pc]
                if D[1, pc] < prev:
                    prev = D[1, pc]
                    ps = 1
                if D[2, pc] < prev:
                    prev = D[2, pc]
                    ps = 2
                if prev == np.inf:
                    continue
                if xcut[xstart[a - 1] + pi] or ycut[ystart[b - 1] + pj]:
                    continue
                v = prev - bead_score(a, b, pi, pj, n, m, X, xstart, xlen, Y, ystart, ylen, ratio, margin, length,
                                      bx, by, extra, XT, YT, tok_weight, tok_unmatched)
                if v < D[0, c]:
                    D[0, c] = v
                    B[0, c] = t
                    P[0, c] = ps
    return D, B, P


@njit(cache=True, nogil=True)
def backtrack_affine(n, m, lo, off, ta, tb, D, B, P):
    """The path of :func:`band_dp_affine` from ``(n, m)`` back to ``(0, 0)``: (moves, end rows,
    end columns, cumulative cost at each end), last bead first."""
    T = ta.shape[0]
    moves = np.empty(n + m, np.int64)
    ends_i = np.empty(n + m, np.int64)
    ends_j = np.empty(n + m, np.int64)
    cum = np.empty(n + m, np.float64)
    c = off[n] - lo[n] + m
    s = 0
    for q in range(1, 3):
        if D[q, c] < D[s, c]:
            s = q
    k = 0
    i = n
    j = m
    while i > 0 or j > 0:
        c = off[i] - lo[i] + j
        t = B[s, c]
        moves[k] = t
        ends_i[k] = i
        ends_j[k] = j
        cum[k] = D[s, c]
        k += 1
        ps = P[s, c]
        if t == T:
            i -= 1
        elif t == T + 1:
            j -= 1
        elif t >= 0:
            i -= ta[t]
            j -= tb[t]
        else:
            return moves[:0], ends_i[:0], ends_j[:0], cum[:0]
        s = ps
    return moves[:k], ends_i[:k], ends_j[:k], cum[:k]
