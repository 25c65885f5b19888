"""Compiled walk of py3langid's byte automaton over a whole batch of texts (numba).

py3langid walks each text's UTF-8 bytes through a DFA in pure Python (~28k short texts/s
here); this kernel walks a batch's bytes in one compiled loop and returns the feature counts
as COO triplets, which :func:`bimine.filtering.langid.language_probs` turns into the same
class probabilities (tested against py3langid's own ``_decide``).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def visit_counts(data, offsets, automaton, start):
    """For text ``i`` (bytes ``data[offsets[i]:offsets[i+1]]``): the features the automaton
    emits and how often. ``automaton[q] = (row base of the next state, its feature or -1)``
    for ``q = row base + byte``; ``start``: the row base of the first state. Returns ``(rows,
    features, counts)``, sorted by row then feature."""
    n = len(offsets) - 1
    cap = max(16, len(data))
    rows = np.empty(cap, dtype=np.int64)
    feats = np.empty(cap, dtype=np.int64)
    k = 0
    for i in range(n):
        pos = start
        for p in range(offsets[i], offsets[i + 1]):
            q = pos + data[p]
            f = automaton[q, 1]
            pos = automaton[q, 0]
            if f >= 0:
                rows[k] = i
                feats[k] = f
                k += 1
    rows, feats = rows[:k], feats[:k]
    # count equal (row, feature) pairs: sort each row's features
    out_r = np.empty(k, dtype=np.int64)
    out_f = np.empty(k, dtype=np.int64)
    out_c = np.empty(k, dtype=np.float32)
    m = 0
    begin = 0
    while begin < k:
        end = begin
        while end < k and rows[end] == rows[begin]:
            end += 1
        seg = np.sort(feats[begin:end])
        j = 0
        while j < len(seg):
            j2 = j
            while j2 < len(seg) and seg[j2] == seg[j]:
                j2 += 1
            out_r[m] = rows[begin]
            out_f[m] = seg[j]
            out_c[m] = j2 - j
            m += 1
            j = j2
        begin = end
    return out_r[:m], out_f[:m], out_c[:m]


@njit(cache=True, nogil=True)
def class_probability(data, offsets, automaton, start, ptc, pc, classes, wanted, fold_to, is_wanted, pairwise):
    """The probability, summed over the columns ``wanted``, of each text's py3langid class
    distribution (with ``pairwise``: that probability over itself plus the probability of the
    most likely other language, aliased columns folded by ``fold_to``, ``is_wanted`` marking
    the folded columns that count as the declared language), without building the ``(texts, classes)`` matrix: per text, the automaton's
    features are counted, ``log1p(count) * ptc[feature]`` summed with the class priors
    ``pc`` (features in order of first appearance, as py3langid's float32 sums go), scaled by
    ``1 / sqrt(bytes)`` and normalised (softmax over the first ``classes`` columns). A text
    with no feature gets the uniform distribution, as py3langid gives.

    ``ptc`` and ``pc`` have their class columns padded with zeros to a multiple of the vector
    width (and ``ptc``'s rows aligned to cache lines), so each row is added in whole vectors;
    the padding columns are never read back. ``log1p`` of each count comes from a table."""
    n = len(offsets) - 1
    width = ptc.shape[1]
    out = np.empty(n, dtype=np.float64)
    longest = 1
    for i in range(n):
        longest = max(longest, offsets[i + 1] - offsets[i])
    touched = np.empty(longest, dtype=np.int64)
    weight = np.empty(longest + 1, dtype=np.float32)
    for j in range(longest + 1):
        weight[j] = np.float32(np.log1p(np.float32(j)))
    counts = np.zeros(ptc.shape[0], dtype=np.int32)
    s = np.empty(width, dtype=np.float32)
    folded = np.empty(classes, dtype=np.float64)
    for i in range(n):
        k = 0
        pos = start
        for p in range(offsets[i], offsets[i + 1]):
            q = pos + data[p]
            f = automaton[q, 1]
            pos = automaton[q, 0]
            if f >= 0:
                if counts[f] == 0:
                    touched[k] = f
                    k += 1
                counts[f] += 1
        if k == 0:  # the uniform distribution
            for c in range(classes):
                s[c] = 1.0
            out[i] = _share(s, classes, wanted, fold_to, is_wanted, folded, pairwise)
            continue
        s[:] = pc
        for j in range(k):
            f = touched[j]
            w = weight[counts[f]]
            counts[f] = 0
            row = ptc[f]
            for c in range(width):
                s[c] += w * row[c]
        scale = np.float32(1.0 / np.sqrt(max(offsets[i + 1] - offsets[i], 1)))
        top = s[0] * scale
        for c in range(classes):
            s[c] *= scale
            if s[c] > top:
                top = s[c]
        for c in range(classes):
            s[c] = np.exp(s[c] - top)
        out[i] = _share(s, classes, wanted, fold_to, is_wanted, folded, pairwise)
    return out


@njit(cache=True, nogil=True)
def _share(s, classes, wanted, fold_to, is_wanted, folded, pairwise):
    """From unnormalised class weights ``s``: the declared language's probability, or (with
    ``pairwise``) its weight over itself plus the heaviest other folded column."""
    total = 0.0
    for c in range(classes):
        total += s[c]
    part = 0.0
    for c in wanted:
        part += s[c]
    if not pairwise:
        return part / total
    folded[:] = 0.0
    for c in range(classes):
        folded[fold_to[c]] += s[c]
    best = 0.0
    for c in range(classes):
        if not is_wanted[c] and folded[c] > best:
            best = folded[c]
    if part + best <= 0.0:
        return 0.5
    return part / (part + best)
