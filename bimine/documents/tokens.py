"""Tokens both documents of a pair share (numbers, names), as bit sets per run of sentences.

A translation keeps numbers and most names as they are: ``1952``, ``8848``, ``Lombard``,
``H.W.Tilman``. A token of one document is *shared* when the same token (case-folded) occurs
somewhere in the other document: a number or a capitalised word of 3+ letters on both sides. Each
run of sentences (a row of :class:`~bimine.documents.beads.Overlaps`) gets the set of shared
tokens of its sentences as a bit set (those in at most ``max_df`` sentences of each document),
and the two-pass search adds ``token_weight`` to a bead's score per token in both of its sets and
subtracts ``token_weight * token_unmatched`` per token in one set only
(:class:`~bimine.documents.beads.AlignConfig`), the way hunalign uses identical numbers beside
its dictionary.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

WORDS = 8  #: uint64 words per bit set (512 bits; exact while a pair shares at most 512 tokens)

_TOKEN = re.compile(r"\w+")


def candidates(sentence: str) -> dict[str, None]:
    """The tokens of ``sentence`` that a translation may keep as they are: those holding a digit,
    and capitalised words of at least 3 characters; case-folded, each once, in the order of the
    sentence (a dict used as an ordered set)."""
    out: dict[str, None] = {}
    for t in _TOKEN.findall(sentence):
        if any(c.isdigit() for c in t) or (len(t) >= 3 and t[0].isupper()):
            out.setdefault(t.casefold())
    return out


def shared_token_bits(src: list[str], tgt: list[str], src_ov, tgt_ov, max_df: int = 0,
                      words: int = WORDS) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``src_ov`` and ``tgt_ov`` (runs of sentences), the bit set of the shared
    tokens of the run's sentences (module docstring); with ``max_df``, only tokens found in at
    most that many sentences of each document."""
    cs = [candidates(s) for s in src]
    ct = [candidates(t) for t in tgt]
    fs, ft = Counter(t for c in cs for t in c), Counter(t for c in ct for t in c)
    # bits in the order of first occurrence in the source document: when there are more shared
    # tokens than bits, two tokens share a bit only if 64 * words other shared tokens lie between
    # them, too far apart to meet in one bead
    shared = [t for t in fs if t in ft and (not max_df or max(fs[t], ft[t]) <= max_df)]
    bit = {t: i % (64 * words) for i, t in enumerate(shared)}
    return _rows(cs, bit, src_ov, words), _rows(ct, bit, tgt_ov, words)


def attach_shared_tokens(src: list[str], tgt: list[str], src_ov, tgt_ov, config) -> None:
    """Give ``src_ov`` and ``tgt_ov`` (the overlaps of the sentences ``src`` and ``tgt``) the token
    bit sets that the search of ``config`` (an :class:`~bimine.documents.beads.AlignConfig`)
    reads: the two-pass search with a ``token_weight``; None otherwise."""
    if config.method == "two-pass" and config.token_weight:
        src_ov.tokens, tgt_ov.tokens = shared_token_bits(src, tgt, src_ov, tgt_ov, config.token_max_df)
    else:
        src_ov.tokens = tgt_ov.tokens = None


def _rows(cands: list[dict[str, None]], bit: dict[str, int], ov, words: int) -> np.ndarray:
    n = len(cands)
    single = np.zeros((n, words), np.uint64)
    for i, c in enumerate(cands):
        for t in c:
            b = bit.get(t)
            if b is not None:
                single[i, b // 64] |= np.uint64(1) << np.uint64(b % 64)
    out = np.zeros((len(ov.vectors), words), np.uint64)
    for s in range(1, ov.k + 1):
        rows = n - s + 1
        if rows <= 0:
            break
        acc = single[:rows].copy()
        for d in range(1, s):
            acc |= single[d : d + rows]
        out[ov.start[s - 1] : ov.start[s - 1] + rows] = acc
    return out
