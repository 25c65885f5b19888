"""Compiled (numba) kernels of the DAN's features: tokenising and hashing n-grams (its pooling
and dense layers: :mod:`bimine.encoders._dan_kernels`).

They compute exactly what the NumPy reference computes (``Featurizer._featurize_numpy`` and
``DANEncoder._pooled_numpy``): the same bucket ids in the same order, and the same float32
sums in the same order, so embeddings match the reference to the last bit in practice. The
NumPy reference needs two sorts (``np.unique`` and a stable ``argsort``) per batch; here each
sentence is handled on its own, with no sort at all.

The kernels are serial and release the GIL (``nogil``): ``DANEncoder`` runs slices of a batch
in a few Python threads, one per core. Measured on 2 cores, that beats numba's own ``prange``
threads, whose pool and OpenBLAS's (which spins between calls) then compete for the cores.

Compiled code is cached on disk (``cache=True``): the first run on a machine compiles (a few
seconds); later processes load the machine code from the cache, a per-user folder outside the
package (``~/.cache/bimine/numba``, or ``NUMBA_CACHE_DIR``: :mod:`bimine.jitcache`).

Importing this module imports numba; ``bimine.text.features`` imports it only when the compiled
path is first used, so commands that never featurise text do not pay for it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_B = np.uint64(0x100000001B3)  # the polynomial hash multiplier (features._B)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_SPACE = np.uint32(32)
_NL = np.uint32(10)

# classes of code points, as the tokeniser regex ``\w+|[^\w\s]`` sees them
SPACE, WORD, OTHER, UNKNOWN = 0, 1, 2, 255


@njit(cache=True, nogil=True)
def _splitmix64(z):
    z = z ^ (z >> _S30)
    z = z * _M1
    z = z ^ (z >> _S27)
    z = z * _M2
    return z ^ (z >> _S31)


@njit(cache=True, nogil=True, inline="always")
def _bucket(z, buckets):
    """``z % buckets``; a mask when ``buckets`` is a power of two (same value, no division)."""
    if buckets & (buckets - np.uint64(1)) == 0:
        return np.int64(z & (buckets - np.uint64(1)))
    return np.int64(z % buckets)


@njit(cache=True, nogil=True)
def unknown_code_points(cp, classes):
    """Code points of ``cp`` whose class is not yet known, each once (marked as pending)."""
    out = np.empty(len(cp), dtype=np.uint32)
    m = 0
    for i in range(len(cp)):
        c = cp[i]
        if classes[c] == UNKNOWN:
            classes[c] = 254  # pending: classified by the caller before any use
            out[m] = c
            m += 1
    return out[:m]


@njit(cache=True, nogil=True)
def token_stream(cp, classes, n):
    """Normalised, joined batch from the NFKC'd, lower-cased batch joined with ``\\n``.

    ``cp`` holds the code points of ``"\\n".join(sentences)`` (exactly ``n - 1`` newlines);
    the result holds those of ``"\\n".join(" " + " ".join(tokens(s)) + " " for s in sentences)``,
    ``tokens`` being ``re.findall(r"\\w+|[^\\w\\s]", s)``: maximal runs of word characters, and
    every other non-space character on its own. Also returns where each sentence starts in it
    (``n + 1`` offsets; sentence ``i`` spans ``[starts[i], starts[i + 1] - 1)``, its trailing
    newline excluded).
    """
    out = np.empty(2 * len(cp) + 3 * n + 1, dtype=np.uint32)
    starts = np.empty(n + 1, dtype=np.int64)
    m = 0
    s = 0
    starts[0] = 0
    out[m] = _SPACE
    m += 1
    first = True  # no token yet in this sentence
    in_word = False
    for i in range(len(cp)):
        c = cp[i]
        if c == _NL:
            out[m] = _SPACE
            out[m + 1] = _NL
            m += 2
            s += 1
            starts[s] = m
            out[m] = _SPACE
            m += 1
            first = True
            in_word = False
            continue
        k = classes[c]
        if k == WORD or k == OTHER:
            # a token starts here (every punctuation mark is one): a space before it, except first
            if not (k == WORD and in_word) and not first:
                out[m] = _SPACE
                m += 1
            first = False
            out[m] = c
            m += 1
        in_word = k == WORD
    out[m] = _SPACE
    m += 1
    starts[n] = m + 1  # as if followed by a newline
    return out[:m], starts


@njit(cache=True, nogil=True)
def _sentence_ids(c, lo, hi, kmin, kmax, within_word, word1, word2, salts, buckets, buf, cnt, nstab, kmin2, kmax2):
    """Bucket ids of the sentence ``c[lo:hi]`` (with its boundary spaces) into ``buf[:count]``;
    returns ``count``. Same ids, same order as the NumPy reference: character n-grams by length,
    then hash, then position; word unigrams by hash; bigrams by hash.

    ``salts[j, r]`` is the premultiplied salt of feature kind j (0: words, 1: bigrams, 2 + k:
    character k-grams) and hash r. One pass over the positions: the n-grams starting at a
    position share their hash prefix, and each kind is appended to its own region of ``buf``
    (``hi - lo + 1`` slots each, ``regions(...)`` of them; ``cnt`` counts per region); the
    regions are then packed in order.

    ``nstab`` (by-script mode, empty otherwise): 1 for code points of scripts written without
    spaces; an n-gram whose first non-space character is one of them takes its lengths from
    ``[kmin2, kmax2]`` instead of ``[kmin, kmax]``. Regions then cover both ranges.
    """
    nh = salts.shape[1]
    stride = hi - lo + 1
    by_script = len(nstab) > 0
    klo, khi = kmin, kmax
    if by_script and kmax2 > 0:
        klo = min(kmin, kmin2) if kmax > 0 else kmin2
        khi = max(kmax, kmax2)
    nk = khi - klo + 1 if khi > 0 else 0
    nreg = nk * nh + 2 * nh
    for s in range(nreg):
        cnt[s] = 0
    if khi > 0:
        for a in range(lo, hi):
            lo_k, hi_k = kmin, kmax
            if by_script:
                x = c[a] if c[a] != _SPACE or a + 1 >= hi else c[a + 1]
                if nstab[x]:
                    lo_k, hi_k = kmin2, kmax2
            h = np.uint64(0)
            blank = True  # all spaces so far: an n-gram of spaces only is never a feature
            for k in range(1, hi_k + 1):
                b = a + k - 1
                if b >= hi:
                    break
                ch = c[b]
                if within_word and k >= 3 and c[b - 1] == _SPACE:
                    break  # a space strictly inside: no feature, nor any longer one from here
                if ch != _SPACE:
                    blank = False
                h = h * _B + np.uint64(ch)
                if k >= lo_k and not blank:
                    for r in range(nh):
                        s = (k - klo) * nh + r
                        buf[s * stride + cnt[s]] = _bucket(_splitmix64(h + salts[2 + k, r]), buckets)
                        cnt[s] += 1
    if word1 or word2:
        uni = nk * nh
        bi = uni + nh
        prev = np.uint64(0)
        nw = 0
        a = lo
        while a < hi:
            if c[a] == _SPACE:
                a += 1
                continue
            b = a
            h = np.uint64(0)
            while b < hi and c[b] != _SPACE:
                h = h * _B + np.uint64(c[b])
                b += 1
            for r in range(nh):
                if word1:
                    buf[(uni + r) * stride + cnt[uni + r]] = _bucket(_splitmix64(h + salts[0, r]), buckets)
                    cnt[uni + r] += 1
                if word2 and nw > 0:
                    bh = _splitmix64(prev) * _B + h
                    buf[(bi + r) * stride + cnt[bi + r]] = _bucket(_splitmix64(bh + salts[1, r]), buckets)
                    cnt[bi + r] += 1
            prev = h
            nw += 1
            a = b
    q = 0
    for s in range(nreg):
        base = s * stride
        for t in range(cnt[s]):
            buf[q + t] = buf[base + t]  # q <= base: a forward copy never overwrites unread ids
        q += cnt[s]
    return q


@njit(cache=True, nogil=True)
def _scratch(starts, kmin, kmax, nh):
    """Per-sentence work space of ``_sentence_ids`` for the longest sentence of a batch."""
    longest = 0
    for i in range(len(starts) - 1):
        longest = max(longest, starts[i + 1] - 1 - starts[i])
    nreg = (kmax - kmin + 1 if kmax > 0 else 0) * nh + 2 * nh
    return np.empty(nreg * (longest + 1), dtype=np.int64), np.empty(nreg, dtype=np.int64)


@njit(cache=True, nogil=True)
def featurize(c, starts, kmin, kmax, within_word, word1, word2, salts, buckets, nstab, kmin2, kmax2):
    """Bucket ids of every sentence of a normalised batch (see ``token_stream``): ``(ids, offsets)``.
    ``nstab``/``kmin2``/``kmax2``: the by-script mode of ``_sentence_ids`` (``nstab`` empty: off)."""
    n = len(starts) - 1
    klo, khi = kmin, kmax
    if len(nstab) > 0 and kmax2 > 0:
        klo = min(kmin, kmin2) if kmax > 0 else kmin2
        khi = max(kmax, kmax2)
    buf, cnt = _scratch(starts, klo, khi, salts.shape[1])
    offsets = np.zeros(n + 1, dtype=np.int64)
    ids = np.empty(max(16, 2 * len(c)), dtype=np.int64)
    q = 0
    for i in range(n):
        m = _sentence_ids(c, starts[i], starts[i + 1] - 1, kmin, kmax, within_word, word1, word2, salts, buckets,
                          buf, cnt, nstab, kmin2, kmax2)
        if q + m > len(ids):
            grown = np.empty(max(2 * len(ids), q + m), dtype=np.int64)
            grown[:q] = ids[:q]
            ids = grown
        ids[q : q + m] = buf[:m]
        q += m
        offsets[i + 1] = q
    return ids[:q].copy(), offsets
