"""The scored TSV's rows put together as bytes in compiled loops (numba).

:func:`format_cells` writes a column of scores as :func:`bimine.filtering.pipeline._fmt`
(``mode`` 0: ``nan``, whole numbers below 1e15 as integers, the rest as ``%.6g``) or as
``%.6g`` (``mode`` 1, the combined score) would, for the values it can do exactly, and marks
the others for Python. ``%.6g`` keeps six significant digits, rounded half to even on the
exact binary value: the value is scaled by an exact power of ten in float64 (an error below
2e-10 on a six-digit mantissa), and a value whose seventh digit is within 1e-8 of a tie, or
outside 1e-280..1e280 (where the power of ten is not exact), is left to Python's own
formatting; so every cell is what Python writes (tested on millions of values).
:func:`assemble` joins the input rows, the cells, ``keep`` and ``reason`` into the lines.
"""

from __future__ import annotations

import numpy as np
from numba import njit

WIDTH = 24  # bytes of a formatted cell ("-1.23457e+308" is 13)

_POW10 = np.array([10.0 ** k for k in range(23)])  # exact in float64


@njit(cache=True, nogil=True)
def _put_int(buf, pos, x):
    """Decimal digits of ``x >= 0`` at ``buf[pos:]``; returns the new position."""
    if x == 0:
        buf[pos] = 48
        return pos + 1
    tmp = np.empty(20, dtype=np.uint8)
    k = 0
    while x > 0:
        tmp[k] = 48 + x % 10
        x //= 10
        k += 1
    for j in range(k):
        buf[pos + j] = tmp[k - 1 - j]
    return pos + k


@njit(cache=True, nogil=True)
def _put_g(buf, pos, v, pow10):
    """``%.6g`` of a finite ``v`` at ``buf[pos:]``; returns the new position, or -1 when the
    value is left to Python (near a rounding tie, or too small or large to scale exactly)."""
    if v == 0.0:
        if np.signbit(v):
            buf[pos] = 45
            pos += 1
        buf[pos] = 48
        return pos + 1
    a = abs(v)
    if a < 1e-280 or a > 1e280:
        return -1
    e = int(np.floor(np.log10(a)))
    for _ in range(3):  # log10 may be off by one near a power of ten
        k = 5 - e
        if k > 22 or k < -22:
            return -1
        m = a * pow10[k] if k >= 0 else a / pow10[-k]
        if m >= 1e6:
            e += 1
        elif m < 1e5:
            e -= 1
        else:
            break
    else:
        return -1
    r = np.floor(m)
    f = m - r
    if abs(f - 0.5) < 1e-8:
        return -1
    digits = np.int64(r) + (1 if f > 0.5 else 0)
    if digits >= 1000000:
        digits //= 10
        e += 1
    d = np.empty(6, dtype=np.uint8)
    for j in range(5, -1, -1):
        d[j] = 48 + digits % 10
        digits //= 10
    last = 5  # the last significant digit kept (insignificant trailing zeros dropped)
    while last > 0 and d[last] == 48:
        last -= 1
    if v < 0:
        buf[pos] = 45
        pos += 1
    if -4 <= e < 6:
        if e >= 0:
            for j in range(e + 1):
                buf[pos] = d[j]
                pos += 1
            if last > e:
                buf[pos] = 46
                pos += 1
                for j in range(e + 1, last + 1):
                    buf[pos] = d[j]
                    pos += 1
        else:
            buf[pos] = 48
            buf[pos + 1] = 46
            pos += 2
            for _ in range(-e - 1):
                buf[pos] = 48
                pos += 1
            for j in range(last + 1):
                buf[pos] = d[j]
                pos += 1
        return pos
    buf[pos] = d[0]
    pos += 1
    if last > 0:
        buf[pos] = 46
        pos += 1
        for j in range(1, last + 1):
            buf[pos] = d[j]
            pos += 1
    buf[pos] = 101
    buf[pos + 1] = 43 if e >= 0 else 45
    pos += 2
    x = abs(e)
    if x < 10:
        buf[pos] = 48
        pos += 1
    return _put_int(buf, pos, x)


@njit(cache=True, nogil=True)
def format_cells(values, mode, pow10, cells, lens):
    """Each value as ``mode`` 0 (``_fmt``) or 1 (``%.6g``) writes it, into ``cells[i,
    :lens[i]]`` (ASCII; ``cells`` is ``(n, WIDTH)``); ``lens[i] == -1`` where Python must."""
    n = len(values)
    for i in range(n):
        v = values[i]
        row = cells[i]
        if np.isnan(v):
            row[0] = 110
            row[1] = 97
            row[2] = 110
            lens[i] = 3
        elif np.isinf(v):
            p = 0
            if v < 0:
                row[0] = 45
                p = 1
            row[p] = 105
            row[p + 1] = 110
            row[p + 2] = 102
            lens[i] = p + 3
        elif mode == 0 and abs(v) < 1e15 and v == np.trunc(v):
            x = np.int64(v)
            p = 0
            if x < 0:
                row[0] = 45
                p = 1
                x = -x
            lens[i] = _put_int(row, p, x)
        else:
            lens[i] = _put_g(row, 0, v, pow10)


@njit(cache=True, nogil=True)
def assemble(rows, ends, cells, lens, keep, reason_of, reasons, reason_ends, filtering, kept_only):
    """The output lines: input row ``i`` (``rows[ends[i-1]+1:ends[i]]``, its ``\\n`` at
    ``ends[i]``), a tab and each cell of ``cells[i]`` (``cells[i, c, :lens[i, c]]``), then when
    ``filtering`` ``keep`` (1/0) and the reason (``reasons`` bytes, ``reason_of[i]`` an index
    into ``reason_ends``, -1 for none). ``kept_only``: the kept input rows alone instead."""
    n = len(ends)
    size = 0
    start = 0
    for i in range(n):
        if kept_only:
            if keep[i]:
                size += ends[i] - start + 1
        else:
            size += ends[i] - start + 1
            for c in range(cells.shape[1]):
                size += 1 + lens[i, c]
            if filtering:
                size += 3
                r = reason_of[i]
                if r >= 0:
                    size += reason_ends[r] - (reason_ends[r - 1] if r > 0 else 0)
        start = ends[i] + 1
    out = np.empty(size, dtype=np.uint8)
    p = 0
    start = 0
    for i in range(n):
        if kept_only and not keep[i]:
            start = ends[i] + 1
            continue
        for j in range(start, ends[i]):
            out[p] = rows[j]
            p += 1
        start = ends[i] + 1
        if not kept_only:
            for c in range(cells.shape[1]):
                out[p] = 9
                p += 1
                for j in range(lens[i, c]):
                    out[p] = cells[i, c, j]
                    p += 1
            if filtering:
                out[p] = 9
                out[p + 1] = 49 if keep[i] else 48
                out[p + 2] = 9
                p += 3
                r = reason_of[i]
                if r >= 0:
                    for j in range(reason_ends[r - 1] if r > 0 else 0, reason_ends[r]):
                        out[p] = reasons[j]
                        p += 1
        out[p] = 10
        p += 1
    return out[:p]
