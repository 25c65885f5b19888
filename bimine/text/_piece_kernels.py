"""Compiled (numba) kernels of the subword pieces (``features.subwords``): a per-word cache.

A sentence's pieces are the concatenation of its words' pieces, each word cut by SentencePiece
on its own (``bimine.text.subwords.Pieces``). A corpus repeats its words, so the pieces of the
words already seen are kept in an open-addressing hash table keyed by the word's code points
(compared in full on every hit: a hash collision can never return another word's pieces), and
SentencePiece only cuts the words not seen yet. The kernels read the normalised batch the
hashed n-gram kernels read (``_kernels.token_stream``: ``" w1 w2 \\n w1 \\n ..."``) and write the
pieces straight after each sentence's n-gram ids, with no Python loop over words.

The table's arrays belong to a :class:`bimine.text.subwords.WordCache` (one per thread: the
kernels release the GIL and the table is not locked).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_SPACE = np.uint32(32)
_OFF = np.uint64(0xCBF29CE484222325)
_PRIME = np.uint64(0x100000001B3)
_MIX = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True, inline="always")
def _hash(c, a, b):
    h = _OFF
    for i in range(a, b):
        h = (h ^ np.uint64(c[i])) * _PRIME
    return h ^ (h >> np.uint64(29))


@njit(cache=True, nogil=True, inline="always")
def _find(c, a, b, h, table, slot_hash, slot_word, word_cp):
    """The slot of word ``c[a:b]`` (hash ``h``), or ``-1 - position`` of the empty table cell
    where it would go."""
    mask = len(table) - 1
    p = np.int64((h * _MIX) >> np.uint64(20)) & mask
    n = b - a
    while True:
        s = table[p]
        if s < 0:
            return -1 - p
        if slot_hash[s] == h and slot_word[s, 1] - slot_word[s, 0] == n:
            w0 = slot_word[s, 0]
            same = True
            for k in range(n):
                if word_cp[w0 + k] != c[a + k]:
                    same = False
                    break
            if same:
                return s
        p = (p + 1) & mask


@njit(cache=True, nogil=True)
def emit(c, starts, ids, offsets, table, slot_hash, slot_word, slot_piece, word_cp, piece_ids):
    """``(ids2, offsets2, misses)``: each sentence's ``ids[offsets[i]:offsets[i + 1]]`` followed
    by the rows of its words' pieces (as the table holds them: ``buckets + piece``), in order.
    ``misses`` holds the ``(start, end)`` spans in ``c`` of the words not in the table (a word
    as often as it occurs); when there are any, ``ids2``/``offsets2`` are incomplete and the
    caller adds the words and calls again."""
    n = len(starts) - 1
    # a word of k characters has at most k + 1 pieces ("_" and each character) and a space
    # follows it: the pieces of a batch never outnumber its code points
    out = np.empty(len(ids) + len(c), dtype=np.int64)
    off2 = np.zeros(n + 1, dtype=np.int64)
    misses = np.empty((0, 2), dtype=np.int64)
    nmiss = 0
    q = 0
    for i in range(n):
        for k in range(offsets[i], offsets[i + 1]):
            out[q] = ids[k]
            q += 1
        j = starts[i]
        end = starts[i + 1] - 1
        while j < end:
            while j < end and c[j] == _SPACE:
                j += 1
            a = j
            while j < end and c[j] != _SPACE:
                j += 1
            if j == a:
                continue
            s = _find(c, a, j, _hash(c, a, j), table, slot_hash, slot_word, word_cp)
            if s < 0:
                if nmiss == len(misses):
                    grown = np.empty((max(16, 2 * nmiss), 2), dtype=np.int64)
                    grown[:nmiss] = misses[:nmiss]
                    misses = grown
                misses[nmiss, 0] = a
                misses[nmiss, 1] = j
                nmiss += 1
                continue
            for k in range(slot_piece[s, 0], slot_piece[s, 1]):
                out[q] = piece_ids[k]
                q += 1
        off2[i + 1] = q
    return out[:q], off2, misses[:nmiss].copy()  # ``out[:q]``: a view, no copy of the batch again


@njit(cache=True, nogil=True)
def insert(c, spans, pieces, piece_off, table, slot_hash, slot_word, slot_piece, word_cp, piece_ids, counts):
    """Add the words ``c[spans[k, 0]:spans[k, 1]]`` with rows ``pieces[piece_off[k]:piece_off[k + 1]]``.
    ``counts`` = [slots, code points, pieces] used so far (updated); the caller has made room."""
    for k in range(len(spans)):
        a, b = spans[k, 0], spans[k, 1]
        h = _hash(c, a, b)
        s = _find(c, a, b, h, table, slot_hash, slot_word, word_cp)
        if s >= 0:
            continue
        cell = -1 - s
        ns, nc, npc = counts[0], counts[1], counts[2]
        for t in range(b - a):
            word_cp[nc + t] = c[a + t]
        m = piece_off[k + 1] - piece_off[k]
        for t in range(m):
            piece_ids[npc + t] = pieces[piece_off[k] + t]
        slot_hash[ns] = h
        slot_word[ns, 0] = nc
        slot_word[ns, 1] = nc + (b - a)
        slot_piece[ns, 0] = npc
        slot_piece[ns, 1] = npc + m
        table[cell] = ns
        counts[0] = ns + 1
        counts[1] = nc + (b - a)
        counts[2] = npc + m


@njit(cache=True, nogil=True)
def rehash(table, slot_hash, nslots):
    """Fill an empty (all -1) ``table`` with the first ``nslots`` slots (a grown table)."""
    mask = len(table) - 1
    for s in range(nslots):
        p = np.int64((slot_hash[s] * _MIX) >> np.uint64(20)) & mask
        while table[p] >= 0:
            p = (p + 1) & mask
        table[p] = s
