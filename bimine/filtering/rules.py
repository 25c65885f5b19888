"""Rule-based pair filters: the cheap checks every crawled corpus needs first (paper 002 §2.1
and the hard rules of Bicleaner and OpusFilter).

Each rule is a :class:`~bimine.scoring.base.PairFilter`: a score per pair, the direction
that means clean, a default threshold and a drop reason. Lengths are counted in *units*:
words (runs of letters/digits, with the combining marks that follow a letter) in scripts written
with spaces, characters in scripts written without them (Han, kana, Thai, Lao, Khmer, Myanmar,
Tibetan), so that ratios between, say, Chinese and English stay near 1-2.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from bimine.langs import related_languages
from bimine.scoring.base import PairFilter
from bimine.text.normalize import KANA_RANGES, NO_SPACE_CLASS, SYLLABLE_RANGES, marked_word_re, marks_class

_NO_SPACE_RE = re.compile(f"[{NO_SPACE_CLASS}]")
_WORD_RE = re.compile(r"\w+")
# How many characters of a script written without spaces make one length unit (about one English
# word, measured on NTREX-128 against the English source: python -m benchmarks.length_units):
# Han 1.5 characters, kana 3, and the scripts that write syllables with several code points
# (Thai, Lao, Tibetan, Myanmar, Khmer: vowel signs, subscripts and tone marks are code points of
# their own) 6. Counted in sixths of a unit.
SIXTHS = {"syllable": 1, "kana": 2, "han": 4}  # per character; every other no-space range counts as Han
_SYLLABLE_RE = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in SYLLABLE_RANGES) + "]")
_KANA_RE = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in KANA_RANGES) + "]")


def length_units(s: str) -> int:
    """Words outside scripts written without spaces (``\\w`` runs, the combining marks after a
    letter inside its word: Devanagari's vowel signs and virama, Arabic's vowel marks), plus,
    for those scripts, their characters in units of about one word (Han 1.5 characters, kana 3,
    Thai, Lao, Tibetan, Myanmar and Khmer 6; rounded up over the text): ``"The cat sleeps."`` 3,
    ``"猫在睡觉。"`` 3, ``"iPhone手机"`` 3, ``"नमस्ते दुनिया"`` 2. One unit per character, as before
    issue 42, made every genuine English-Khmer pair fail a length ratio of 3; a word cut at each
    mark, as before issue 56, made a Hindi sentence two to three times its length in words."""
    if s.isascii():
        return len(_WORD_RE.findall(s))
    rest, n = _NO_SPACE_RE.subn(" ", s)
    if not n:
        return len(marked_word_re().findall(rest))
    syllable = len(_SYLLABLE_RE.findall(s))
    kana = len(_KANA_RE.findall(s))
    sixths = syllable * SIXTHS["syllable"] + kana * SIXTHS["kana"] + (n - syllable - kana) * SIXTHS["han"]
    return -(-sixths // 6) + len(marked_word_re().findall(rest))


class TextStats(NamedTuple):
    """Per-text arrays of :func:`bimine.filtering._text_kernel.text_stats` (see there)."""

    units: np.ndarray
    nonspace: np.ndarray
    bad: np.ndarray
    key_len: np.ndarray
    key_hash: np.ndarray
    dup1: np.ndarray
    dup2: np.ndarray
    digit: np.ndarray
    url: np.ndarray


_STATS_CACHE: list[tuple[list[str], TextStats]] = []


def text_stats(texts: list[str]) -> TextStats:
    """What the rules need of each text (units, white space, bad characters, keys, digits,
    URL marks), in one compiled pass. The rules of a block ask for the same sides in turn: the
    last two results are kept, keyed by the list object itself (held here, so its identity
    cannot pass to another list while cached; blocks are never mutated)."""
    for held, stats in _STATS_CACHE:
        if held is texts:
            return stats
    from bimine.filtering._text_kernel import (  # numba kernels: compiled on first use, not at import
        code_points,
        tables,
    )

    # numba kernels: compiled on first use, not at import
    from bimine.filtering._text_kernel import text_stats as kernel

    cps, offsets = code_points(texts)
    stats = TextStats(*kernel(cps, offsets, *tables()))
    _STATS_CACHE.append((texts, stats))
    del _STATS_CACHE[:-2]
    return stats


def _units(texts: list[str]) -> np.ndarray:
    """:func:`length_units` of each text (compiled: :func:`text_stats`)."""
    return text_stats(texts).units.astype(np.float64)


@dataclass
class EmptySide(PairFilter):
    """Score: characters of the shorter side, spaces excluded; clean when at least 1."""

    name: str = "empty"
    threshold: float = 1
    clean_high: bool = True
    reason: str = "a side is empty"

    def score(self, src, tgt):
        # characters that are not white space: len("".join(s.split())), compiled
        return np.minimum(text_stats(src).nonspace, text_stats(tgt).nonspace).astype(np.float64)


@lru_cache(maxsize=1)
def _not_key_re() -> re.Pattern:
    # \w is str.isalnum() plus "_"; the combining marks stay (not ZWNJ/ZWJ, which change no letter)
    return re.compile(rf"[^\w{marks_class(joiners=False)}]+|_+")


def _letters_digits(s: str) -> str:
    """The identical rule's key: the letters, digits and combining marks of ``s.casefold()``.
    Without the marks, two Devanagari words that differ only in their vowel signs (कम, काम)
    had one key."""
    return _not_key_re().sub("", s.casefold())


@dataclass
class IdenticalSides(PairFilter):
    """Score 1 when both sides hold the same letters, digits and combining marks (case, spaces
    and punctuation ignored: an untranslated copy), else 0; clean when 0. Sides without any letter or digit
    are left to the other rules (score 0)."""

    name: str = "identical"
    threshold: float = 0
    clean_high: bool = False
    reason: str = "the sides are the same text (untranslated copy)"

    def score(self, src, tgt):
        # the keys' lengths and hashes first (compiled); equal hashes are confirmed on the keys
        a, b = text_stats(src), text_stats(tgt)
        out = np.zeros(len(src))
        maybe = np.flatnonzero((a.key_len > 0) & (a.key_len == b.key_len) & (a.key_hash == b.key_hash))
        for i in maybe.tolist():
            ka = _letters_digits(src[i])
            out[i] = float(bool(ka) and ka == _letters_digits(tgt[i]))
        return out


def copy_tokens(s: str) -> list[str]:
    """The words of ``s`` that a translation would change (casefolded): words with a letter
    (``\\w`` runs, the combining marks after a letter inside its word, as :func:`length_units`
    counts them), leaving out numbers, names (capitalised after the first word) and code-like
    tokens (an underscore, or capitals after the first letter: ``getValue``, ``UNESCO``), which a
    translation keeps as they are. Cut at each mark, a Hindi and a Marathi sentence shared their
    bare consonants: a genuine translation looked 60 % copied."""
    out = []
    for k, m in enumerate((_WORD_RE if s.isascii() else marked_word_re()).finditer(s)):
        t = m.group()
        if "_" in t or any(c.isdigit() for c in t) or not any(c.isalpha() for c in t):
            continue
        if (k > 0 and t[0].isupper()) or any(c.isupper() for c in t[1:]):
            continue
        out.append(t.casefold())
    return out


def copy_share(src: str, tgt: str, min_words: int = 2) -> float:
    """The share of the shorter side's words (:func:`copy_tokens`, counted with repeats) that
    the other side holds too: 1.0 for a copy with words dropped, changed case or punctuation;
    0.0 to 0.5 for translations between unrelated languages (newstest2012 en-fr/de/es: none of
    9,000 pairs at 0.7 or above). 0 when the shorter side has fewer than ``min_words`` such
    words (a single word is left to :class:`IdenticalSides`)."""
    a, b = Counter(copy_tokens(src)), Counter(copy_tokens(tgt))
    n = min(a.total(), b.total())
    if n < min_words:
        return 0.0
    return (a & b).total() / n


@dataclass
class NearCopy(PairFilter):
    """Score: :func:`copy_share`, the share of the shorter side's words found in the other side
    (numbers, names and code aside); clean when below ``threshold``. Catches untranslated
    copies that :class:`IdenticalSides` misses: words dropped or added, case changed, a few
    words edited. Between close relatives (hr/sr/bs, no/da/sv, cs/sk, ...: the groups of
    :mod:`bimine.langs`), whose genuine translations share many words, it scores 0 (NTREX
    hr-sr: 5 % of genuine pairs at 0.8)."""

    name: str = "copy"
    threshold: float = 0.8
    clean_high: bool = False
    reason: str = "the target copies the source's words (untranslated near-copy)"
    src_lang: str = ""
    tgt_lang: str = ""

    def __post_init__(self) -> None:
        self._relatives = bool(self.src_lang and self.tgt_lang) and self.tgt_lang in related_languages(self.src_lang) \
            and self.src_lang != self.tgt_lang

    def score(self, src, tgt):
        if self._relatives:
            return np.zeros(len(src))
        return np.fromiter((copy_share(a, b) for a, b in zip(src, tgt)), dtype=np.float64, count=len(src))


@dataclass
class LengthRatio(PairFilter):
    """Score: length of the longer side over the shorter, in units (:func:`length_units`; a
    side of 0 units counts as 1); clean when at most ``threshold`` (OpusFilter's default 3)."""

    name: str = "length_ratio"
    threshold: float = 3.0
    clean_high: bool = False
    reason: str = "one side is much longer than the other"

    def score(self, src, tgt):
        a, b = _units(src), _units(tgt)
        return np.maximum(a, b) / np.maximum(np.minimum(a, b), 1.0)


@dataclass
class MinLength(PairFilter):
    """Score: units of the shorter side; clean when at least ``threshold`` (1: a side of only
    punctuation or symbols is dropped)."""

    name: str = "min_length"
    threshold: float = 1
    clean_high: bool = True
    reason: str = "a side is too short"

    def score(self, src, tgt):
        return np.minimum(_units(src), _units(tgt))


@dataclass
class MaxLength(PairFilter):
    """Score: units of the longer side; clean when at most ``threshold`` (default 200)."""

    name: str = "max_length"
    threshold: float = 200
    clean_high: bool = False
    reason: str = "a side is too long"

    def score(self, src, tgt):
        return np.maximum(_units(src), _units(tgt))


# a run of digits (any script) and inner separators, split into numbers by _parse_number
_NUMBER_RE = re.compile(r"\d+(?:[.,'\u066b\u066c\u00a0\u202f\u2009 ]\d+)*")
_GROUP_SEPS = frozenset(",.'\u066c\u00a0\u202f\u2009 ")  # thousands: 1,000 1.000 1'000 ١٬٠٠٠ 1 000
_DECIMAL_SEPS = frozenset(".,\u066b")  # 2.5 2,5 ٢٫٥
class _DigitMap(dict):
    """``str.translate`` table from any script's decimal digits to ASCII, filled as met."""

    def __missing__(self, c: int) -> str:
        ch = chr(c)
        self[c] = str(unicodedata.decimal(ch)) if ch.isdecimal() else ch
        return self[c]


_ASCII_DIGITS = _DigitMap()


def _ascii_digits(s: str) -> str:
    return s if s.isascii() else s.translate(_ASCII_DIGITS)


def _grouped(groups: list[str], seps: list[str], i: int) -> tuple[int, str | None]:
    """The last group of the thousands-grouped integer that starts at group ``i`` (``i`` itself
    when none does) and its separator: a first group of 1-3 digits not starting with 0, then
    groups of exactly three digits behind one same separator (1,000,000; 1 000; 1.000), or
    Indian grouping with commas (1,00,000: groups of two, then one of three)."""
    n = len(groups) - 1
    if not 1 <= len(groups[i]) <= 3 or groups[i][0] == "0":
        return i, None
    j, sep = i, None
    while j < n and len(groups[j + 1]) == 3 and seps[j] in _GROUP_SEPS and seps[j] == (sep or seps[j]):
        sep, j = seps[j], j + 1
    if j > i:
        return j, sep
    if len(groups[i]) <= 2:  # Indian: 1,00,000 and 12,34,56,789
        k = i
        while k < n and len(groups[k + 1]) == 2 and seps[k] == ",":
            k += 1
        if k > i and k < n and len(groups[k + 1]) == 3 and seps[k] == ",":
            return k + 1, ","
    return i, None


def _parse_number(token: str) -> list[str]:
    """The numbers of one run of digits and separators (:data:`_NUMBER_RE`), in ASCII: a
    grouped or plain integer part (separators dropped), then a decimal part behind ``.``, ``,``
    or ``٫`` other than the grouping separator, trailing zeros dropped (``2,50`` is ``2.5``,
    ``2.0`` is ``2``). A separator that does not fit (``2012 15``, ``1'5``) ends the number and
    the next one starts behind it."""
    parts = re.split(r"(\D)", _ascii_digits(token))
    groups, seps = parts[0::2], parts[1::2]
    out = []
    i, n = 0, len(groups) - 1
    while i <= n:
        j, sep = _grouped(groups, seps, i)
        whole = "".join(groups[i : j + 1])
        if j < n and seps[j] in _DECIMAL_SEPS and seps[j] != sep:
            frac = groups[j + 1].rstrip("0")
            out.append(f"{whole}.{frac}" if frac else whole)
            i = j + 2
        else:
            out.append(whole)
            i = j + 1
    return out


def numbers(s: str) -> Counter:
    """The numbers of ``s`` in ASCII digits (any script's digits), so that one number written
    in another convention compares equal: ``1,000.5``, ``1.000,5``, ``1 000,50`` and
    ``١٬٠٠٠٫٥`` are ``1000.5``; ``2.5`` and ``2,50`` are ``2.5``; ``1,000``, ``1.000`` and
    ``1 000`` are ``1000``. A separator only joins groups of three digits (Indian
    ``1,00,000`` too), so ``in 2012 15 people`` holds 2012 and 15 (:func:`_parse_number`)."""
    out: Counter = Counter()
    for m in _NUMBER_RE.findall(s):
        out.update(_parse_number(m))
    return out


_NUMBERS_CACHE: list[tuple[list[str], list[str], tuple[np.ndarray, np.ndarray]]] = []


def unmatched_numbers(src: list[str], tgt: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, how many numbers of the source have no equal on the target side, and how many
    of the target none on the source (multiset differences of :func:`numbers`). The ``numbers``
    rule and the ``lone_numbers`` feature ask for the same block in turn: the last result is
    kept, keyed by the two list objects (as :func:`text_stats` keeps its own)."""
    for held_src, held_tgt, result in _NUMBERS_CACHE:
        if held_src is src and held_tgt is tgt:
            return result
    a_out, b_out = np.zeros(len(src)), np.zeros(len(src))
    find = _NUMBER_RE.findall
    maybe = np.flatnonzero(text_stats(src).digit | text_stats(tgt).digit)  # no digit: no number
    for i in maybe.tolist():
        a, b = src[i], tgt[i]
        if find(a) == find(b):  # same numbers spelt the same (or none): nothing differs
            continue
        na, nb = numbers(a), numbers(b)
        a_out[i], b_out[i] = sum((na - nb).values()), sum((nb - na).values())
    _NUMBERS_CACHE[:] = [(src, tgt, (a_out, b_out))]
    return a_out, b_out


@dataclass
class NumbersDiffer(PairFilter):
    """Score: numbers changed between the sides, that is numbers of each side that have no
    equal on the other *while the other side has a number left over too* (``in 2019`` /
    ``en 2018``: 1); clean when at most ``threshold`` (0). A number written on one side only
    (``forty`` / ``40``, a date one side leaves out) is not a change: the ``lone_numbers``
    feature grades it. ``one_sided: true`` counts those too (every number without an equal on
    the other side, the rule before issue 42)."""

    name: str = "numbers"
    threshold: float = 0
    clean_high: bool = False
    reason: str = "the sides hold different numbers"
    one_sided: bool = False

    def score(self, src, tgt):
        a, b = unmatched_numbers(src, tgt)
        return a + b if self.one_sided else np.minimum(a, b)


_URL_RE = re.compile(r"(?:https?://|www\.)[^\s<>\"]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE)


_WWW_RE = re.compile(r"www\.", re.IGNORECASE)


def _may_hold_url(s: str) -> bool:
    """Cheap test before the regular expression: a match needs "://", "www." or "@"."""
    return "@" in s or "://" in s or (("w." in s or "W." in s) and _WWW_RE.search(s) is not None)


def urls(s: str) -> Counter:
    """URLs and e-mail addresses of ``s`` (trailing punctuation dropped, lower-cased)."""
    return Counter(m.rstrip(".,;:!?)]}'\"").lower() for m in _URL_RE.findall(s))


@dataclass
class UrlsDiffer(PairFilter):
    """Score: URLs and e-mail addresses found on one side but not on the other; clean when at
    most ``threshold`` (0)."""

    name: str = "urls"
    threshold: float = 0
    clean_high: bool = False
    reason: str = "the sides hold different URLs or e-mail addresses"

    def score(self, src, tgt):
        out = np.zeros(len(src))
        # no "@", "://" or "www." on either side (compiled test): no URL
        maybe = np.flatnonzero(text_stats(src).url | text_stats(tgt).url)
        for i in maybe.tolist():
            a, b = src[i], tgt[i]
            ua, ub = urls(a), urls(b)
            out[i] = sum(((ua - ub) + (ub - ua)).values())
        return out


# UTF-8 read as Latin-1/cp1252: "Ã©" for "é", "â€™" for "’", "Â " for a no-break space
_MOJIBAKE_RE = re.compile("[\u00c2\u00c3][\u0080-\u00bf]|\u00e2\u20ac")


def bad_chars(s: str) -> int:
    """Control characters (category Cc, tab included), lone surrogates, U+FFFD (bytes that
    were not UTF-8) and mojibake sequences of UTF-8 decoded as Latin-1/cp1252."""
    if s.isascii():  # no mojibake, no U+FFFD: only control characters can be bad
        return 0 if s.isprintable() else sum(1 for ch in s if ch < " " or ch == "\x7f")
    n = len(_MOJIBAKE_RE.findall(s))
    if not s.isprintable() or "\ufffd" in s:
        n += sum(1 for ch in s if ch == "\ufffd" or unicodedata.category(ch) in ("Cc", "Cs"))
    return n


@dataclass
class BadCharacters(PairFilter):
    """Score: :func:`bad_chars` of both sides; clean when at most ``threshold`` (0)."""

    name: str = "bad_chars"
    threshold: float = 0
    clean_high: bool = False
    reason: str = "control characters or broken encoding"

    def score(self, src, tgt):
        return (text_stats(src).bad + text_stats(tgt).bad).astype(np.float64)  # bad_chars, compiled


@dataclass
class Duplicates(PairFilter):
    """Score: how many times the same pair (sides compared after collapsing white space;
    ``lowercase`` also ignores case) came before in the input; clean when 0, so the first
    occurrence is kept. Stateful: blocks must come in input order. Each pair is known by a
    128-bit hash of its two compared sides (compiled, :mod:`bimine.filtering._text_kernel`), in
    a table kept under half full: 48 to 96 bytes per distinct pair (0.5-1 GB for 10M)."""

    name: str = "duplicate"
    threshold: float = 0
    clean_high: bool = False
    reason: str = "the same pair came earlier"
    stateful: bool = True
    lowercase: bool = False

    def __post_init__(self) -> None:
        # an open-addressing table of 128-bit pair keys (bimine.filtering._text_kernel.count_seen)
        self._keys1 = np.zeros(1 << 16, dtype=np.uint64)
        self._keys2 = np.zeros(1 << 16, dtype=np.uint64)
        self._counts = np.zeros(1 << 16, dtype=np.int64)
        self._used = 0

    def prepare(self, src, tgt):
        """The pairs' 128-bit keys (stateless: computed in the pipeline's workers)."""
        from bimine.filtering._text_kernel import (
            pair_keys,  # numba kernels: compiled on first use, not at import
        )

        if self.lowercase:  # lower(" ".join(s.split())) == " ".join(s.lower().split())
            src, tgt = [s.lower() for s in src], [t.lower() for t in tgt]
        a, b = text_stats(src), text_stats(tgt)
        return pair_keys(a.dup1, a.dup2, b.dup1, b.dup2)

    def score_prepared(self, src, tgt, prepared):
        from bimine.filtering._text_kernel import (
            count_seen,  # numba kernels: compiled on first use, not at import
        )

        k1, k2 = prepared if prepared is not None else self.prepare(src, tgt)
        out, self._used, self._keys1, self._keys2, self._counts = count_seen(
            k1, k2, self._keys1, self._keys2, self._counts, self._used)
        return out

    def score(self, src, tgt):
        return self.score_prepared(src, tgt, None)


RULES = {cls.name: cls for cls in (EmptySide, IdenticalSides, NearCopy, LengthRatio, MinLength, MaxLength, NumbersDiffer,
                                   UrlsDiffer, BadCharacters, Duplicates)}
