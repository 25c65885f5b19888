"""Decontamination: drop training pairs with a side that occurs in a held-out evaluation set.

The key of a sentence is the one of the held-out key lists (``holdout-keys.txt.gz``): NFKC,
casefold, remove every character whose Unicode category starts with P (punctuation), S
(symbols), Z (separators) or C (control, format, unassigned), then the first 16 hex digits of
SHA-1 over the UTF-8 bytes. Texts whose normalised form is shorter than 4 characters are never
listed, so they are never dropped.
"""

from __future__ import annotations

import hashlib
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from bimine.errors import InputError
from bimine.text.io import read_lines


@lru_cache(maxsize=1)
def _removed() -> re.Pattern:
    """One character class of every code point in categories P*, S*, Z*, C* (as ranges)."""
    ranges, start = [], None
    for cp in range(sys.maxunicode + 2):
        drop = cp <= sys.maxunicode and unicodedata.category(chr(cp))[0] in "PSZC"
        if drop and start is None:
            start = cp
        elif not drop and start is not None:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(cp - 1))}" if cp - 1 > start else re.escape(chr(start)))
            start = None
    return re.compile("[" + "".join(ranges) + "]+")


def normalize_for_key(s: str) -> str:
    """NFKC, casefold, and no punctuation, symbols, separators or control characters."""
    return _removed().sub("", unicodedata.normalize("NFKC", s).casefold())


@lru_cache(maxsize=1)
def _drop_table() -> np.ndarray:
    """``table[cp]``: whether code point cp is removed (category P*, S*, Z* or C*)."""
    return np.array([unicodedata.category(chr(cp))[0] in "PSZC" for cp in range(sys.maxunicode + 1)], dtype=bool)


def normalize_many(texts: list[str]) -> list[str]:
    """``[normalize_for_key(t) for t in texts]``, with the removal done for the whole batch at
    once in NumPy (the per-string regex costs ~35 µs a sentence)."""
    folded = [unicodedata.normalize("NFKC", t).casefold() for t in texts]
    try:
        cp = np.frombuffer("".join(folded).encode("utf-32-le"), dtype=np.uint32)
    except UnicodeEncodeError:  # a lone surrogate: the per-string path
        return [_removed().sub("", f) for f in folded]
    lens = np.fromiter(map(len, folded), dtype=np.int64, count=len(folded))
    keep = ~_drop_table()[cp]
    kept = np.bincount(np.repeat(np.arange(len(folded)), lens)[keep], minlength=len(folded))
    joined = cp[keep].tobytes().decode("utf-32-le")
    ends = np.cumsum(kept).tolist()
    return [joined[a:b] for a, b in zip([0, *ends[:-1]], ends)]


def sentence_key(s: str) -> str:
    """The 16-hex-digit key of ``s`` in the held-out key lists."""
    return hashlib.sha1(normalize_for_key(s).encode("utf-8")).hexdigest()[:16]


@dataclass
class DecontamReport:
    pairs: int = 0
    dropped: int = 0


class HeldOutKeys:
    """The keys of a held-out key list (one 16-hex-digit key per line, plain or compressed),
    kept as a sorted uint64 array (8 bytes per key)."""

    def __init__(self, keys: Iterable[str], name: str = "keys") -> None:
        is_key = re.compile(r"[0-9a-fA-F]{16}").fullmatch
        values = []
        for no, k in enumerate(keys, 1):
            k = k.strip()
            if not k:
                continue
            if not is_key(k):
                raise InputError(f"{name}:{no}: expected one hexadecimal key of 16 digits per line (a held-out key "
                                 f"list), got {k[:40]!r}")
            values.append(int(k, 16))
        if not values:
            raise InputError(f"{name}: holds no key (expected one 16-hex-digit key per line); give the held-out key "
                             "list ('bimine data build --no-decontam' builds without one)")
        self.keys = np.unique(np.array(values, dtype=np.uint64))

    @classmethod
    def load(cls, path: str) -> HeldOutKeys:
        return cls(read_lines(path), name=path)

    def __len__(self) -> int:
        return len(self.keys)

    def contains(self, texts: list[str]) -> np.ndarray:
        """Whether each text's key is listed (texts normalised shorter than 4 characters never are)."""
        norm = normalize_many(texts)
        k = np.array([int(hashlib.sha1(n.encode("utf-8")).hexdigest()[:16], 16) for n in norm], dtype=np.uint64)
        pos = np.searchsorted(self.keys, k)
        hit = (pos < len(self.keys)) & (self.keys[np.minimum(pos, len(self.keys) - 1)] == k)
        return hit & np.array([len(n) >= 4 for n in norm], dtype=bool)

    def filter_pairs(self, pairs: Iterable[tuple[str, str]], report: DecontamReport | None = None,
                     batch: int = 10_000) -> Iterator[tuple[str, str]]:
        """The pairs neither of whose sides is listed; ``report`` counts pairs seen and dropped."""
        rep = report if report is not None else DecontamReport()
        buf: list[tuple[str, str]] = []

        def flush():
            src = self.contains([a for a, _ in buf])
            tgt = self.contains([b for _, b in buf])
            rep.pairs += len(buf)
            rep.dropped += int((src | tgt).sum())
            return [p for p, bad in zip(buf, src | tgt) if not bad]

        for p in pairs:
            buf.append(p)
            if len(buf) == batch:
                yield from flush()
                buf = []
        if buf:
            yield from flush()
