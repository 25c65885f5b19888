"""Sentence pairs from software translation catalogs (gettext ``.mo``), cleaned for training.

UI catalogs hold more than sentences: placeholders (``%s``, ``%1$S``, ``%(name)s``, ``{name}``,
``$(VAR)``), accelerator marks (``_File``, ``~Save``, ``&Open``), markup (``<b>``, ``&amp;``),
plural forms, the catalog header, and "translations" that copy the English. :func:`clean_pair`
turns one entry into a training pair or says why it is dropped; every drop is counted by reason.
"""

from __future__ import annotations

import gettext
import html
import io
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from bimine.errors import InputError

# printf-style (%s %d %1$S %(name)s %.2f %ld), but not a literal "%%" or "50 %" in prose
_PRINTF = re.compile(r"%(?:\d+\$)?(?:\([A-Za-z_][\w.]*\))?[-+#0]*(?:\d+|\*)?(?:\.\d+)?(?:hh|h|ll|l|L|z|j|t)?"
                     r"[diouxXeEfFgGcsSpn@]")
_BRACES = re.compile(r"\{\{?\s*[\w.$:-]*\s*\}?\}|\$\([\w.]+\)|\$\{[\w.]+\}|\$[A-Z_][A-Z0-9_]*\$?"
                     r"|%[A-Z][A-Z0-9_]{2,}")  # the last: LibreOffice's %PRODUCTNAME
_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>")
_ACCEL_TILDE = re.compile(r"~(?=\w)")
_ACCEL_UNDERSCORE = re.compile(r"(?<!_)_(?=[^\W\d_])")
_SPACE_BEFORE_STOP = re.compile(r"\s+([.,])(?=\s|$)")
_ACCEL_AMP = re.compile(r"&(?=[^\W\d_])(?![A-Za-z]+;|#\d+;)")
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[^\W\d_]{2,}")


def placeholders(s: str) -> list[str]:
    """The placeholders of a catalog string: printf ones first, then braces, shell-style and
    LibreOffice ones (``%%`` is a literal percent sign, not a placeholder)."""
    t = s.replace("%%", " ")
    return _PRINTF.findall(t) + _BRACES.findall(_PRINTF.sub(" ", t))


def strip_markup(s: str) -> str:
    """Tags removed, entities decoded (``&amp;`` -> ``&``), spaces collapsed."""
    return _SPACES.sub(" ", html.unescape(_TAG.sub(" ", s))).strip()


def strip_accelerators(s: str) -> str:
    """Accelerator marks removed: ``~Save`` (LibreOffice), ``_File``, ``Pre_vious``,
    ``É_changer`` (GTK mnemonics, anywhere in a word), ``&Open`` (Qt/KDE); ``&&`` (a literal
    ampersand in Qt) becomes ``&``. A string has one mnemonic at most: one with several
    underscores before letters holds identifiers (``file_name``, ``dir_name``) and keeps them."""
    s = _ACCEL_TILDE.sub("", s)
    if len(_ACCEL_UNDERSCORE.findall(s)) == 1:  # one mnemonic per string; several: identifiers
        s = _ACCEL_UNDERSCORE.sub("", s)
    s = s.replace("&&", "\x00")
    s = _ACCEL_AMP.sub("", s)
    return s.replace("\x00", "&")


def clean_text(s: str) -> str:
    """A catalog string as a plain sentence: accelerators, markup and placeholders removed."""
    s = strip_accelerators(s)
    s = strip_markup(s).replace("%%", "\x00")
    s = _BRACES.sub(" ", _PRINTF.sub(" ", s)).replace("\x00", "%")
    s = _SPACE_BEFORE_STOP.sub(r"\1", _SPACES.sub(" ", s))  # "the file ." once its placeholder is gone
    return s.strip(" :")


@dataclass
class CleanReport:
    """Entries seen, pairs kept, and drops by reason."""

    entries: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)


def clean_pair(src: str, tgt: str, *, min_src_words: int = 3) -> tuple[str, str] | str:
    """The cleaned ``(src, tgt)`` pair, or the reason it is dropped: ``"empty"``,
    ``"placeholders differ"`` (the translation does not carry the same placeholders: a sign of
    a reordered or broken entry), ``"untranslated"`` (the target copies the source),
    ``"too short"`` (fewer than ``min_src_words`` words of two or more letters in the source)."""
    if not src.strip() or not tgt.strip():
        return "empty"
    if Counter(p.lower() for p in placeholders(src)) != Counter(p.lower() for p in placeholders(tgt)):
        return "placeholders differ"
    a, b = clean_text(src), clean_text(tgt)
    if not a or not b:
        return "empty"
    if a.casefold() == b.casefold():
        return "untranslated"
    if len(_WORD.findall(a)) < min_src_words:
        return "too short"
    return a, b


def mo_entries(data: bytes) -> dict:
    """The entries of ``.mo`` bytes (a file, a zip member): ``{msgid: msgstr}``, plural entries
    keyed ``(msgid, n)``; raises on corrupt data."""
    return dict(gettext.GNUTranslations(io.BytesIO(data))._catalog)


def read_mo(path: str) -> dict:
    """The entries of a gettext ``.mo`` file: ``{msgid: msgstr}``, plural entries keyed
    ``(msgid, n)`` as gettext stores them. (``.mo`` files never hold fuzzy entries: msgfmt leaves them out.)"""
    try:
        with open(path, "rb") as f:
            return mo_entries(f.read())
    except Exception as e:  # missing, unreadable or corrupt (struct errors, a bad header)
        raise InputError(f"{path}: not a readable .mo catalog ({type(e).__name__}: {e})") from None


def pairs_from_mo(path: str, report: CleanReport | None = None, **kw) -> Iterator[tuple[str, str]]:
    """Cleaned (English, translation) pairs of a ``.mo`` catalog. The header entry and plural
    entries are dropped (counted as ``"header"`` and ``"plural"``); msgctxt prefixes
    (``context\\x04msgid``) are removed."""
    rep = report if report is not None else CleanReport()
    for key, value in read_mo(path).items():
        rep.entries += 1
        if isinstance(key, tuple):
            rep.dropped["plural"] += 1
            continue
        if key == "":
            rep.dropped["header"] += 1
            continue
        src = key.split("\x04", 1)[-1]
        got = clean_pair(src, value, **kw)
        if isinstance(got, str):
            rep.dropped[got] += 1
            continue
        rep.kept += 1
        yield got
