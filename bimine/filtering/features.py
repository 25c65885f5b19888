"""Evidence about a pair's shape that the combined score reads (issue 42; kind ``"feature"``).

Web-crawl noise that passes the hard rules and that an embedding cosine cannot see: boilerplate
(short, repeated on every page, no sentence punctuation, menu separators), partial translations
(one side holds a sentence more, or is cut), and pairs whose side recurs with other partners.
Each is a column of its own, graded, with no threshold: the combiner of
:mod:`bimine.filtering.combine` weighs them with the rules' and the embeddings' scores into
``score``. They are not summed by 002's Eq. 3 (``combine: sum``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numpy as np

from bimine.filtering.rules import _units, unmatched_numbers
from bimine.scoring.base import PairFilter
from bimine.text.sentences import split_sentences

_END_RE = re.compile(r"[.!?…。！？;:؟।][\"'»”’)\]]*\s*$")
# a menu bar or breadcrumb trail: not », ›, · (French and German quotes, the Catalan l·l)
_SEPARATORS_RE = re.compile(r"[|•]| [>/] ")
# a sentence end inside a line: . ! ? then white space and an upper-case letter or an opening quote


def ends_sentence(s: str) -> bool:
    """Whether ``s`` ends with sentence punctuation (closing quotes and brackets allowed after it)."""
    return _END_RE.search(s) is not None


@dataclass
class Punctuation(PairFilter):
    """Score: how many of the two sides end with sentence punctuation (0, 1 or 2). Translated
    sentences end like their source; boilerplate and menus end with none; a cut target loses
    its end."""

    name: str = "punct"
    threshold: float | None = None
    clean_high: bool = True
    kind: str = "feature"

    def score(self, src, tgt):
        return np.fromiter((ends_sentence(a) + ends_sentence(b) for a, b in zip(src, tgt)), dtype=np.float64,
                           count=len(src))


@dataclass
class Separators(PairFilter):
    """Score: menu separators (``|``, ``•``, a spaced ``>`` or ``/``) on both sides together, at
    most 4: a menu bar or a breadcrumb trail, not a sentence."""

    name: str = "menu"
    threshold: float | None = None
    clean_high: bool = False
    kind: str = "feature"

    def score(self, src, tgt):
        return np.fromiter((min(4, len(_SEPARATORS_RE.findall(a)) + len(_SEPARATORS_RE.findall(b)))
                            for a, b in zip(src, tgt)), dtype=np.float64, count=len(src))


@dataclass
class SentenceCount(PairFilter):
    """Score: the difference between the two sides' sentence counts (:func:`split_sentences`):
    one side holding a sentence the other lacks is a partial translation."""

    name: str = "sentences"
    threshold: float | None = None
    clean_high: bool = False
    kind: str = "feature"

    def score(self, src, tgt):
        return np.fromiter((abs(len(split_sentences(a)) - len(split_sentences(b))) for a, b in zip(src, tgt)),
                           dtype=np.float64, count=len(src))


@dataclass
class LengthLog(PairFilter):
    """Score: ``log((target units + 1) / (source units + 1))`` (units: :func:`~bimine.filtering.rules.length_units`),
    signed: the combiner learns where translations sit (French runs longer than English) and
    how far a cut or padded side strays."""

    name: str = "length_log"
    threshold: float | None = None
    clean_high: bool = True
    kind: str = "feature"

    def score(self, src, tgt):
        return np.log((_units(tgt) + 1.0) / (_units(src) + 1.0))


_KEY_RE = re.compile(r"[\W_]+")


def side_key(s: str) -> int:
    """A stable 64-bit key of a side with case, punctuation, spacing and the digits' values
    ignored (``Page 3 of 10`` and ``page 4 of 12`` share it): the same across processes and
    runs (blake2b, not Python's salted ``hash``)."""
    k = re.sub(r"\d+", "0", _KEY_RE.sub(" ", s.casefold())).strip()
    return int.from_bytes(hashlib.blake2b(k.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


@dataclass
class RepeatedSide(PairFilter):
    """Score: how many pairs of the corpus have this pair's source side, or its target side,
    whichever is more (sides compared by :func:`side_key`). Boilerplate recurs on every page
    of a crawl; a side that recurs with other partners means that some of its pairs are
    misaligned. Corpus-level: every block is collected, the counts come at the end (8 bytes a
    side a pair in memory)."""

    name: str = "repeat"
    threshold: float | None = None
    clean_high: bool = False
    kind: str = "feature"
    needs_corpus: bool = True

    def __post_init__(self) -> None:
        self._keys: list[tuple[np.ndarray, np.ndarray]] = []

    def prepare(self, src, tgt):
        """The sides' keys (stateless: computed in the pipeline's workers)."""
        return (np.fromiter(map(side_key, src), dtype=np.int64, count=len(src)),
                np.fromiter(map(side_key, tgt), dtype=np.int64, count=len(tgt)))

    def collect_prepared(self, src, tgt, prepared):
        self._keys.append(prepared if prepared is not None else self.prepare(src, tgt))

    def collect(self, src, tgt):
        self.collect_prepared(src, tgt, None)

    def finalize(self):
        if not self._keys:
            return np.zeros(0)
        counts = []
        for side in (0, 1):
            keys = np.concatenate([k[side] for k in self._keys])
            _, inverse, n = np.unique(keys, return_inverse=True, return_counts=True)
            counts.append(n[inverse])
        self._keys = []
        return np.maximum(counts[0], counts[1]).astype(np.float64)


@dataclass
class LoneNumbers(PairFilter):
    """Score: numbers written on one side with no equal and nothing to have been changed into on
    the other (``|a - b|`` of :func:`bimine.filtering.rules.unmatched_numbers`): a date or a
    figure one side leaves out (a partial translation), or a number spelt out in words on the
    other side (``forty`` / ``40``, ``XIIe`` / ``12th``). Graded, not a rule: the ``numbers`` rule
    rejects numbers *changed* between the sides."""

    name: str = "lone_numbers"
    threshold: float | None = None
    clean_high: bool = False
    kind: str = "feature"

    def score(self, src, tgt):
        a, b = unmatched_numbers(src, tgt)
        return np.abs(a - b)
