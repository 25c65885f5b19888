"""The text path's shared first step: how a sentence is normalised and cut into words, and which
scripts are written without spaces. The featuriser, the subword pieces, the romaniser, the
tokens of the pair scorers and the rules all read text through these, so they agree on what a
word is.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


@dataclass(frozen=True)
class TextNorm:
    """How a model normalises its text before cutting it: the text settings of its
    ``FeatureConfig`` (``lowercase``, ``marks_in_words``, ``join_zero_width``, ``fold_variants``;
    :meth:`bimine.text.features.FeatureConfig.text_norm`), in one value for everything that must
    read text as the featuriser does (the subword sample, the teacher's pieces, the BiGRU's
    tokenizer, the training text ids). Calling it normalises a text (:func:`normalize_text`)."""

    lowercase: bool = True
    marks: bool = False
    join_zero_width: bool = False
    fold_variants: bool = False

    def __call__(self, s: str) -> str:
        return normalize_text(s, self.lowercase, self.marks, self.join_zero_width, self.fold_variants)

    def fold(self, s: str) -> str:
        """``s`` (after NFKC) with the folds alone (:func:`fold_text`)."""
        return fold_text(s, self.join_zero_width, self.fold_variants)


def normalize_text(s: str, lowercase: bool = True, marks: bool = False, join_zero_width: bool = False,
                   fold_variants: bool = False) -> str:
    """NFKC, optional lower-casing, punctuation split from words, single spaces. ``marks``
    (``FeatureConfig.marks_in_words``): combining marks and ZWNJ/ZWJ are word characters, the
    zero-width spaces U+200B/U+FEFF spaces. ``join_zero_width`` and ``fold_variants``: see
    :func:`fold_text`."""
    if not s.isascii():
        s = unicodedata.normalize("NFKC", s)
        if join_zero_width or fold_variants:  # off (every model so far): nothing to look up per text
            s = fold_text(s, join_zero_width, fold_variants)
        if marks:
            return " ".join(marks_token_re().findall((s.lower() if lowercase else s).translate(ZERO_WIDTH_SPACES)))
    if lowercase:
        s = s.lower()
    return " ".join(TOKEN_RE.findall(s))


ZERO_WIDTH_SPACES = {0x200B: " ", 0xFEFF: " "}
JOINERS = (0x200C, 0x200D)  # ZWNJ, ZWJ: parts of a word's spelling in Indic and Arabic scripts
ZERO_WIDTH_DROP = dict.fromkeys(ZERO_WIDTH_SPACES)

# Spellings of the same text that sources differ in (docs/decisions.md, issue 56's third round;
# ``python -m benchmarks.char_mismatch`` finds them), each folded to one:
# - apostrophes and quotes: Uzbek's oʻ is U+02BB (a letter: inside the word) in NTREX and U+2018
#   (punctuation: the word cut in two) in most of the recipe's text; curly against straight
#   quotes in Hebrew, Kazakh, Tajik, Bashkir, Irish, Oromo. The ASCII backtick is left alone:
#   pure-ASCII text is not folded;
# - Khmer ឲ (U+17B2, "a variant of U+17B1 used in a few words") as ឱ: the frequent ឱ្យ/ឲ្យ;
# - Lao ຣ (r; written ລ since the 1975 spelling reform, ຣ kept by many writers for foreign names)
#   as ລ: the recipe's Lao, mostly transliterated names, writes ຣ 28 times in a thousand
#   characters, NTREX 1.6 (the measured fold moved Lao's xsim by nothing);
# - Arabic kaf and yeh as the Persian/Urdu keheh and yeh (Urdu NTREX writes ک, much of its
#   training text ك);
# - the Hebrew maqaf as a hyphen;
# - Malayalam chillus written as consonant + virama + ZWJ (Unicode before 5.1) as the atomic
#   chillu letters NTREX uses.
# (The folds run after NFKC, which has already made the acute accent U+00B4 a space and a
# combining mark, and the double prime U+2033 two primes: neither is listed.)
SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u02bb\u02bc\u02bd\u2032\u2039\u203a"
DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u00ab\u00bb\u301d\u301e\u301f"
VARIANT_FOLD = {
    **{ord(c): "'" for c in SINGLE_QUOTES}, **{ord(c): '"' for c in DOUBLE_QUOTES},
    0x17B2: "\u17b1", 0x0EA3: "\u0ea5", 0x0643: "\u06a9", 0x064A: "\u06cc", 0x05BE: "-",
}
CHILLU = {"\u0d23": "\u0d7a", "\u0d28": "\u0d7b", "\u0d30": "\u0d7c", "\u0d32": "\u0d7d", "\u0d33": "\u0d7e",
          "\u0d15": "\u0d7f"}
_OLD_CHILLU = re.compile("([" + "".join(CHILLU) + "])\u0d4d\u200d")


@lru_cache(maxsize=4)
def _fold_table(join_zero_width: bool, fold_variants: bool) -> tuple[dict[str, str], re.Pattern | None]:
    """The folds as a character -> replacement map, and the pattern of the characters folded."""
    table = {**(ZERO_WIDTH_DROP if join_zero_width else {}), **(VARIANT_FOLD if fold_variants else {})}
    fold = {chr(c): r or "" for c, r in table.items()}
    return fold, (re.compile("[" + "".join(re.escape(c) for c in fold) + "]") if fold else None)


def fold_text(s: str, join_zero_width: bool = False, fold_variants: bool = False) -> str:
    """``s`` (after NFKC) with a featuriser's folds. ``join_zero_width``
    (``FeatureConfig.join_zero_width``): the zero-width spaces U+200B/U+FEFF are dropped, so the
    words they separate are one run, as in text of the same script written without them.
    ``fold_variants`` (``FeatureConfig.fold_variants``): the spelling variants above as one.
    Each folded character is one regular-expression match (``str.translate`` with a map costs
    ~40 ns a character, matched or not: a quarter of a second for 200,000 short lines)."""
    fold, pattern = _fold_table(join_zero_width, fold_variants)
    if pattern is not None:
        s = pattern.sub(lambda m: fold[m[0]], s)
        if fold_variants and "\u0d4d\u200d" in s:
            s = _OLD_CHILLU.sub(lambda m: CHILLU[m[1]], s)
    return s


def is_mark(c: int) -> bool:
    """A combining mark, or ZWNJ/ZWJ: part of a word with ``marks_in_words``."""
    return c in JOINERS or unicodedata.category(chr(c)) in ("Mn", "Mc", "Me")


#: The planes that can hold a combining mark: the Basic and Supplementary Multilingual Planes and
#: the Supplementary Special-purpose Plane (variation selectors). Unicode's roadmap keeps planes 2
#: and 3 for ideographs, 4 to 13 unassigned and 15 and 16 for private use, so a scan of these
#: finds every mark in a sixth of the time (tests/test_script_tokens.py checks it against all planes).
MARK_PLANES = (range(0x20000), range(0xE0000, 0xF0000))


def mark_code_points(planes=MARK_PLANES, joiners: bool = True) -> list[int]:
    """The code points of :func:`is_mark`, in order (without ZWNJ/ZWJ if not ``joiners``)."""
    return [c for r in planes for c in r if is_mark(c) and (joiners or c not in JOINERS)]


@lru_cache(maxsize=2)
def marks_class(joiners: bool = True) -> str:
    """The combining marks and ZWNJ/ZWJ (:func:`is_mark`; the marks alone if not ``joiners``)
    as the inside of a regular expression's character class, in ranges."""
    cps = mark_code_points(joiners=joiners)
    ranges, start, prev = [], cps[0], cps[0]
    for c in cps[1:] + [-1]:
        if c != prev + 1:
            ranges.append(re.escape(chr(start)) if start == prev else f"{re.escape(chr(start))}-{re.escape(chr(prev))}")
            start = c
        prev = c
    return "".join(ranges)


@lru_cache(maxsize=1)
def marks_token_re() -> re.Pattern:
    """``TOKEN_RE`` with the combining marks and ZWNJ/ZWJ counted as word characters."""
    cls = marks_class()
    return re.compile(rf"[\w{cls}]+|[^\w\s{cls}]", re.UNICODE)


@lru_cache(maxsize=1)
def marked_word_re() -> re.Pattern:
    """A word of any script: a ``\\w`` character, then ``\\w`` characters and combining marks
    (with ZWNJ/ZWJ: :func:`is_mark`). A mark never starts a word."""
    return re.compile(rf"\w[\w{marks_class()}]*")


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


@lru_cache(maxsize=1)
def _mark_res() -> tuple[re.Pattern, re.Pattern]:
    """The combining marks and ZWNJ/ZWJ below U+10000 and above. Apart, because a character class
    of code points below U+10000 only is one table lookup a character, and one with higher code
    points a walk through its ranges (3x the time of a search on text without a mark)."""
    cps = mark_code_points()
    return tuple(re.compile("[" + "".join(re.escape(chr(c)) for c in part) + "]")
                 for part in ([c for c in cps if c < 0x10000], [c for c in cps if c >= 0x10000]))


def has_mark(s: str) -> bool:
    """Whether ``s`` holds a combining mark or ZWNJ/ZWJ (:func:`is_mark`)."""
    low, high = _mark_res()
    return low.search(s) is not None or (_ASTRAL.search(s) is not None and high.search(s) is not None)


# Scripts written without spaces between words (Unicode blocks): Thai, Lao, Tibetan, Myanmar,
# Khmer (+ symbols), CJK radicals/punctuation-free letters, kana, CJK ideographs (+ extensions
# and compatibility), Myanmar extensions, half-width katakana.
NO_SPACE_RANGES = (
    (0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x0F00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x17FF),
    (0x19E0, 0x19FF), (0x2E80, 0x2FDF), (0x3040, 0x30FF), (0x31F0, 0x31FF), (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF), (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F), (0xF900, 0xFAFF), (0xFF66, 0xFF9F),
    (0x20000, 0x3134F),
)


#: ``NO_SPACE_RANGES`` as the inside of a regular expression's character class
NO_SPACE_CLASS = "".join(f"{chr(a)}-{chr(b)}" for a, b in NO_SPACE_RANGES)


# Among them, the syllabic scripts (Thai, Lao, Tibetan, Myanmar, Khmer and its symbols, Myanmar
# extensions) and kana: the length rules count their characters as fractions of a word.
SYLLABLE_RANGES = ((0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x0F00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x17FF),
                   (0x19E0, 0x19FF), (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F))
KANA_RANGES = ((0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F))


@lru_cache(maxsize=1)
def no_space_table() -> np.ndarray:
    """``table[cp] == 1`` for code points of scripts written without spaces (0x110000 bytes)."""
    t = np.zeros(0x110000, dtype=np.uint8)
    for a, b in NO_SPACE_RANGES:
        t[a : b + 1] = 1
    return t


def append_rows(ids: np.ndarray, offsets: np.ndarray, rows: np.ndarray, ids2: np.ndarray, off2: np.ndarray):
    """``(ids, offsets)`` with the features ``ids2[off2[j]:off2[j + 1]]`` appended to those of
    sentence ``rows[j]`` (``rows`` increasing)."""
    n = len(offsets) - 1
    cnt = np.diff(offsets)
    cnt2 = np.zeros(n, dtype=np.int64)
    cnt2[rows] = np.diff(off2)
    new_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(cnt + cnt2, out=new_off[1:])
    out = np.empty(new_off[-1], dtype=ids.dtype)
    out[np.repeat(new_off[:-1] - offsets[:-1], cnt) + np.arange(len(ids))] = ids
    start2 = (new_off[:-1] + cnt)[rows]
    out[np.repeat(start2 - off2[:-1], np.diff(off2)) + np.arange(len(ids2))] = ids2
    return out, new_off
