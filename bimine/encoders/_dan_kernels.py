"""Compiled (numba) kernels of the DAN encoder's forward pass: pooling table rows into a sentence
vector and a hidden layer's bias, ReLU and residual in one pass.

They compute exactly what the NumPy reference computes (``DANEncoder._pooled_numpy`` and
``_forward``): the same float32 sums in the same order. Serial and ``nogil``, cached on disk
like the feature kernels of :mod:`bimine.text._kernels` (:mod:`bimine.jitcache`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def relu_residual(z, b, h):
    """``z = max(z + b, 0) + h`` in place: a hidden layer's bias, ReLU and residual in one
    pass (the reference makes three), with the same float32 operations."""
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            v = z[i, j] + b[j]
            if v < 0:
                v = np.float32(0.0)
            z[i, j] = v + h[i, j]


@njit(cache=True, nogil=True)
def _weight(n):
    return np.float32(1.0 / np.sqrt(np.float64(max(n, 1))))


# Pooling: row i of ``out`` = sum over the features f of sentence i of w_i * E[f], w_i =
# float32(1 / sqrt(n_i)), accumulated in float32 in feature order as the reference's sparse
# product does (scipy csr_matvecs: y += a * x). Rows are decoded as the reference decodes them.


_AHEAD = 4  # rows of the table touched this many features ahead (measured: 15-20% faster)


@njit(cache=True, nogil=True)
def pool_int4(ids, offsets, nibbles, scale, out):
    """int4 rows: two codes per byte (low nibble first), ``(code - 8) * scale[row]``.

    Even and odd columns are summed in two contiguous accumulators (vectorised loops) and
    interleaved at the end; every element sees the same float32 operations as the reference.
    The row ``_AHEAD`` features on is read early (its first and last byte, its scale), so that
    the table's cache misses overlap with the arithmetic; returns that touch's sum (unused).
    """
    n = len(offsets) - 1
    m = len(ids)
    half = nibbles.shape[1]
    eight = np.float32(8.0)
    lo_mask = np.uint8(15)
    shift = np.uint8(4)
    even = np.empty(half, dtype=np.float32)
    odd = np.empty(half, dtype=np.float32)
    touch = np.uint32(0)
    for i in range(n):
        even[:] = 0
        odd[:] = 0
        w = _weight(offsets[i + 1] - offsets[i])
        for p in range(offsets[i], offsets[i + 1]):
            if p + _AHEAD < m:
                g = ids[p + _AHEAD]
                touch += nibbles[g, 0] + nibbles[g, half - 1] + np.uint32(scale[g] > 0)
            f = ids[p]
            s = scale[f]
            row = nibbles[f]
            for j in range(half):
                even[j] += w * ((np.float32(row[j] & lo_mask) - eight) * s)
            for j in range(half):
                odd[j] += w * ((np.float32(row[j] >> shift) - eight) * s)
        for j in range(half):
            out[i, 2 * j] = even[j]
            out[i, 2 * j + 1] = odd[j]
    return touch


@njit(cache=True, nogil=True)
def pool_scaled(ids, offsets, weight, scale, out):
    """int8 (or other integer) rows times one float32 scale per row (rows touched ahead)."""
    n = len(offsets) - 1
    m = len(ids)
    d = weight.shape[1]
    touch = np.int64(0)
    for i in range(n):
        acc = out[i]
        acc[:] = 0
        w = _weight(offsets[i + 1] - offsets[i])
        for p in range(offsets[i], offsets[i + 1]):
            if p + _AHEAD < m:
                g = ids[p + _AHEAD]
                touch += np.int64(weight[g, 0]) + np.int64(weight[g, d - 1]) + np.int64(scale[g] > 0)
            f = ids[p]
            s = scale[f]
            row = weight[f]
            for j in range(d):
                acc[j] += w * (np.float32(row[j]) * s)
    return touch


@njit(cache=True, nogil=True)
def pool_dense(ids, offsets, weight, out):
    """float32 rows."""
    n = len(offsets) - 1
    d = weight.shape[1]
    for i in range(n):
        acc = out[i]
        acc[:] = 0
        w = _weight(offsets[i + 1] - offsets[i])
        for p in range(offsets[i], offsets[i + 1]):
            row = weight[ids[p]]
            for j in range(d):
                acc[j] += w * row[j]


@njit(cache=True, nogil=True)
def pool_pq(ids, offsets, codes, codebook, out):
    """Product-quantised rows: sub-vector m of row f is ``codebook[m, codes[f, m]]``."""
    n = len(offsets) - 1
    m_sub, _, dsub = codebook.shape
    for i in range(n):
        acc = out[i]
        acc[:] = 0
        w = _weight(offsets[i + 1] - offsets[i])
        for p in range(offsets[i], offsets[i + 1]):
            f = ids[p]
            for m in range(m_sub):
                cen = codebook[m, codes[f, m]]
                for t in range(dsub):
                    acc[m * dsub + t] += w * cen[t]


@njit(cache=True, nogil=True)
def pool_overlay(ids, offsets, slot, delta, scale, out):
    """An adapted language's rows on top of the table (:class:`bimine.encoders.adapters.Adapter`):
    row i of ``out`` = sum over the features f of sentence i that have a slot (``slot[f] >= 0``)
    of w_i * (delta[slot[f]] * scale[slot[f]]) (int8 rows, one float32 scale each), w_i as the
    table's pooling weighs them, in feature order (what the reference's sparse product over the
    decoded delta rows gives: the other features add exact zeros)."""
    n = len(offsets) - 1
    d = delta.shape[1]
    for i in range(n):
        acc = out[i]
        acc[:] = 0
        w = _weight(offsets[i + 1] - offsets[i])
        for p in range(offsets[i], offsets[i + 1]):
            k = slot[ids[p]]
            if k >= 0:
                row = delta[k]
                s = scale[k]
                for j in range(d):
                    acc[j] += w * (np.float32(row[j]) * s)
