"""Compiled (numba) dynamic programme of the sentence aligner (:mod:`bimine.documents.align`).

One kernel serves both the exact search (every row holds every column) and the banded search
of the down-sampled recursion (row ``i`` holds columns ``lo[i]..hi[i]`` only): the cells of a
row are stored one after the other, row ``i`` starting at ``off[i]``. A DP state ``(i, j)``
means "the first ``i`` source and ``j`` target sentences are aligned"; a bead of type
``(a, b)`` moves from ``(i - a, j - b)`` to ``(i, j)``, a deletion ``(1, 0)`` and an insertion
``(0, 1)`` each cost ``skip``.

The cost of an ``a:b`` bead (Vecalign's, Thompson & Koehn 2019) is

    2 * a * b * (1 - cos(x, y)) / (nx + ny)  +  length_weight * |lx - ly|

with ``x`` the embedding of the ``a`` source sentences joined (``X[xstart[a-1] + i - a]``),
``y`` likewise on the target side, ``nx``/``ny`` their normalisers (one minus the mean cosine
to random vectors of the other document) and ``lx``/``ly`` the logarithms of their lengths,
the target side's scaled by the document's length ratio (a Gale-Church-like length prior,
off when ``length_weight`` is 0). Every cost is >= 0, so a predecessor already worse than the
best candidate is not costed at all.

Ties go to the first candidate in this order: deletion, insertion, then the bead types in the
order given (the brute-force reference in tests/test_align.py searches every path).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, fastmath=True)
def _dot(X, xr, Y, yr):
    s = np.float32(0.0)
    for k in range(X.shape[1]):
        s += X[xr, k] * Y[yr, k]
    return s


@njit(cache=True, nogil=True)
def bead_cost(a, b, xr, yr, X, nx, lx, Y, ny, ly, length_weight):
    """Cost of the bead joining overlap row ``xr`` of ``X`` (``a`` sentences) and row ``yr``
    of ``Y`` (``b`` sentences); see the module docstring."""
    dist = 1.0 - np.float64(_dot(X, xr, Y, yr))
    if dist < 0.0:
        dist = 0.0
    den = nx[xr] + ny[yr]
    if den < 1e-6:
        den = 1e-6
    c = 2.0 * a * b * dist / den
    if length_weight > 0.0:
        c += length_weight * abs(lx[xr] - ly[yr])
    return c


@njit(cache=True, nogil=True)
def banded_dp(n, m, lo, hi, off, ta, tb, X, xstart, nx, lx, Y, ystart, ny, ly, skip, length_weight, xcut, ycut):
    """Fill the DP over the band; return (cumulative cost, move) per stored cell.

    ``xcut``/``ycut`` (one flag per overlap row of ``X``/``Y``) forbid the beads whose run of
    sentences crosses a paragraph break (a blank line of the document, removed before).

    ``move`` is the index of the bead type in ``ta``/``tb`` that reached the cell, ``T`` for a
    deletion, ``T + 1`` for an insertion, -1 for the start or an unreachable cell.
    """
    T = ta.shape[0]
    total = off[n] + hi[n] - lo[n] + 1
    D = np.full(total, np.inf)
    B = np.full(total, -1, np.int8)
    for i in range(n + 1):
        base = off[i] - lo[i]
        for j in range(lo[i], hi[i] + 1):
            if i == 0 and j == 0:
                D[base] = 0.0
                continue
            best = np.inf
            arg = -1
            if i > 0 and lo[i - 1] <= j <= hi[i - 1]:
                v = D[off[i - 1] - lo[i - 1] + j] + skip
                if v < best:
                    best = v
                    arg = T
            if j > lo[i]:
                v = D[base + j - 1] + skip
                if v < best:
                    best = v
                    arg = T + 1
            for t in range(T):
                a = ta[t]
                b = tb[t]
                if i < a or j < b:
                    continue
                pi = i - a
                pj = j - b
                if pj < lo[pi] or pj > hi[pi]:
                    continue
                prev = D[off[pi] - lo[pi] + pj]
                if prev >= best:  # costs are >= 0: this bead cannot win (also skips +inf)
                    continue
                xr = xstart[a - 1] + pi
                yr = ystart[b - 1] + pj
                if xcut[xr] or ycut[yr]:
                    continue
                v = prev + bead_cost(a, b, xr, yr, X, nx, lx, Y, ny, ly, length_weight)
                if v < best:
                    best = v
                    arg = t
            D[base + j] = best
            B[base + j] = arg
    return D, B


@njit(cache=True, nogil=True)
def backtrack(n, m, lo, off, ta, tb, B):
    """The path from ``(n, m)`` back to ``(0, 0)`` as (moves, end rows, end columns), last
    bead first; a move is a bead type index, ``T`` (deletion) or ``T + 1`` (insertion)."""
    T = ta.shape[0]
    moves = np.empty(n + m, np.int64)
    ends_i = np.empty(n + m, np.int64)
    ends_j = np.empty(n + m, np.int64)
    k = 0
    i = n
    j = m
    while i > 0 or j > 0:
        t = B[off[i] - lo[i] + j]
        moves[k] = t
        ends_i[k] = i
        ends_j[k] = j
        k += 1
        if t == T:
            i -= 1
        elif t == T + 1:
            j -= 1
        elif t >= 0:
            i -= ta[t]
            j -= tb[t]
        else:  # unreachable: cannot happen when the band holds a path (the caller checks)
            return moves[:0], ends_i[:0], ends_j[:0]
    return moves[:k], ends_i[:k], ends_j[:k]
