"""Compiled walk of py3langid's byte automaton and its naive Bayes scores over a whole batch of
texts (numba).

py3langid walks each text's UTF-8 bytes through a DFA in pure Python (~28k short texts/s
here). The automaton is kept as py3langid has it: ``nextmove[rowbase[state] + byte]`` is the
next state, ``output[state]`` the feature it emits (or -1); ``rowbase`` and ``output`` are
small (one entry per state, in cache), ``nextmove`` holds state numbers as int32.

The class scores are sums of the model's per-feature rows (100k rows of ~140 classes, 58 MB):
read once per text and feature they come from memory each time. :func:`class_probability`
therefore works feature-major over blocks of texts: it walks a block, sorts the (feature,
text, weight) triples by feature with a counting sort, and adds each feature's row to every
text of the block that has it while the row is in cache. Each text still gets its features
added in increasing feature order, whatever the block holds, so a text's score does not
depend on its neighbours, and equals :func:`visit_counts` + a CSR product (sorted features
too: :func:`bimine.filtering.langid.language_probs`) exactly.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def visit_counts(data, offsets, nextmove, rowbase, output):
    """For text ``i`` (bytes ``data[offsets[i]:offsets[i+1]]``): the features the automaton
    emits and how often. Returns ``(rows, features, counts)``, sorted by row then feature."""
    n = len(offsets) - 1
    cap = max(16, len(data))
    rows = np.empty(cap, dtype=np.int64)
    feats = np.empty(cap, dtype=np.int64)
    k = 0
    start = rowbase[0]
    for i in range(n):
        pos = start
        for p in range(offsets[i], offsets[i + 1]):
            s = nextmove[pos + data[p]]
            f = output[s]
            pos = rowbase[s]
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
def class_probability(data, offsets, nextmove, rowbase, output, ptc, pc, classes, wanted, fold_to, is_wanted,
                      pairwise, block=2048):
    """The probability, summed over the columns ``wanted``, of each text's py3langid class
    distribution (with ``pairwise``: that probability over itself plus the probability of the
    most likely other language, aliased columns folded by ``fold_to``, ``is_wanted`` marking
    the folded columns that count as the declared language), without building the ``(texts,
    classes)`` matrix: per text, the automaton's features are counted, ``log1p(count) *
    ptc[feature]`` summed (in increasing feature order) with the class priors ``pc``, scaled
    by ``1 / sqrt(bytes)`` and normalised (softmax over the first ``classes`` columns). A text
    with no feature gets the uniform distribution, as py3langid gives. Texts are taken
    ``block`` at a time, feature-major (module docstring).

    ``ptc`` and ``pc`` have their class columns padded with zeros to a multiple of the vector
    width (and ``ptc``'s rows aligned to cache lines), so each row is added in whole vectors;
    the padding columns are never read back. ``log1p`` of each count comes from a table."""
    n = len(offsets) - 1
    width = ptc.shape[1]
    nf = ptc.shape[0]
    out = np.empty(n, dtype=np.float64)
    longest = 1
    for i in range(n):
        longest = max(longest, offsets[i + 1] - offsets[i])
    weight = np.empty(longest + 1, dtype=np.float32)
    for j in range(longest + 1):
        weight[j] = np.float32(np.log1p(np.float32(j)))
    counts = np.zeros(nf, dtype=np.int32)
    first = np.zeros(nf + 1, dtype=np.int32)  # counting sort: where each feature's triples start
    folded = np.empty(classes, dtype=np.float64)
    simple = _unaliased(fold_to, classes)
    block = max(1, block)
    acc = np.empty((min(block, max(n, 1)), width), dtype=np.float32)
    nfeat = np.empty(block, dtype=np.int32)
    cap = 1  # triples of the largest block: at most one per byte
    for b0 in range(0, n, block):
        cap = max(cap, offsets[min(n, b0 + block)] - offsets[b0])
    tf = np.empty(cap, dtype=np.int32)  # feature, text in the block, weight: in walk order
    tt = np.empty(cap, dtype=np.int32)
    tw = np.empty(cap, dtype=np.float32)
    sf = np.empty(cap, dtype=np.int32)  # the same, sorted by feature
    st = np.empty(cap, dtype=np.int32)
    sw = np.empty(cap, dtype=np.float32)
    start = rowbase[0]
    for b0 in range(0, n, block):
        b1 = min(n, b0 + block)
        # walk: each text's distinct features, in order of first appearance, and their weights
        k = 0
        for i in range(b0, b1):
            pos = start
            k0 = k
            for p in range(offsets[i], offsets[i + 1]):
                s = nextmove[pos + data[p]]
                f = output[s]
                pos = rowbase[s]
                if f >= 0:
                    if counts[f] == 0:
                        tf[k] = f
                        k += 1
                    counts[f] += 1
            nfeat[i - b0] = k - k0
            for j in range(k0, k):
                f = tf[j]
                tt[j] = i - b0
                tw[j] = weight[counts[f]]
                counts[f] = 0
        # counting sort of the triples by feature (stable: texts stay in order within a feature)
        for j in range(k):
            first[tf[j] + 1] += 1
        run = 0
        for f in range(nf + 1):
            run += first[f]
            first[f] = run
        for j in range(k):
            f = tf[j]
            d = first[f]
            first[f] = d + 1
            sf[d] = f
            st[d] = tt[j]
            sw[d] = tw[j]
        first[:] = 0
        for t in range(b1 - b0):
            acc[t, :] = pc
        for j in range(k):
            row = ptc[sf[j]]
            a = acc[st[j]]
            w = sw[j]
            for c in range(width):
                a[c] += w * row[c]
        for t in range(b1 - b0):
            i = b0 + t
            s = acc[t]
            if nfeat[t] == 0:  # the uniform distribution
                for c in range(classes):
                    s[c] = 0.0
                out[i] = _share(s, np.float32(0.0), classes, wanted, fold_to, simple, is_wanted, folded, pairwise)
                continue
            scale = np.float32(1.0 / np.sqrt(max(offsets[i + 1] - offsets[i], 1)))
            top = s[0] * scale
            for c in range(classes):
                s[c] *= scale
                if s[c] > top:
                    top = s[c]
            out[i] = _share(s, top, classes, wanted, fold_to, simple, is_wanted, folded, pairwise)
    return out


@njit(cache=True, nogil=True)
def _unaliased(fold_to, classes):
    """Columns that no aliased label folds into and that fold into no other."""
    simple = np.ones(classes, dtype=np.bool_)
    for c in range(classes):
        if fold_to[c] != c:
            simple[c] = False
            simple[fold_to[c]] = False
    return simple


@njit(cache=True, nogil=True)
def _share(s, top, classes, wanted, fold_to, simple, is_wanted, folded, pairwise):
    """From class log-weights ``s`` (``top`` their maximum; the weights are ``exp(s - top)``):
    the declared language's probability, or (with ``pairwise``) its weight over itself plus
    the heaviest other folded column. The pairwise score needs the weights of the declared
    columns, of the aliased ones and of the largest other log-weight only: the others are not
    exponentiated (``exp`` is monotonic, so the result is the same)."""
    if not pairwise:
        total = 0.0
        for c in range(classes):
            s[c] = np.exp(s[c] - top)
            total += s[c]
        part = 0.0
        for c in wanted:
            part += s[c]
        return part / total
    part = 0.0
    for c in wanted:
        part += np.exp(s[c] - top)
    best_at = -1
    for c in range(classes):
        if simple[c] and not is_wanted[c] and (best_at < 0 or s[c] > s[best_at]):
            best_at = c
    best = 0.0
    if best_at >= 0:
        best = np.float64(np.exp(s[best_at] - top))
    for c in range(classes):
        if not simple[c]:
            folded[fold_to[c]] = 0.0
    for c in range(classes):
        if not simple[c]:
            folded[fold_to[c]] += np.exp(s[c] - top)
    for c in range(classes):
        if not simple[c] and fold_to[c] == c and not is_wanted[c] and folded[c] > best:
            best = folded[c]
    if part + best <= 0.0:
        return 0.5
    return part / (part + best)
