"""Sentence splitting of raw text (documents given as text), with libraries made for it.

Two multilingual splitters from PyPI are wrapped: ``sentencex`` (Wikimedia; rules for about
300 languages, with fallbacks between related languages) and ``pysbd`` (rule-based, 22
languages; other languages get its English rules). ``python -m benchmarks.sentence_split``
compares them on the dev data; the default is the better one there (docs/decisions.md).

Text is cut into paragraphs at line breaks first (a line break always ends a sentence), then
each paragraph is split; sentences come back stripped, empty ones dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bimine.errors import ConfigError
from bimine.langs import normalize_lang

SPLITTERS = ("sentencex", "pysbd")
DEFAULT_SPLITTER = "sentencex"
_PYSBD_LANGS = frozenset("en hi mr zh es am ar hy bg ur ru pl fa nl da fr my el it ja de kk sk".split())


def _sentencex() -> Callable[[str, str], list[str]]:
    try:
        import sentencex  # loaded on use: sentencex is heavy or optional
    except ImportError:
        raise ConfigError("splitting raw text into sentences needs sentencex: pip install sentencex "
                          "(or pip install 'bimine[docs]')") from None

    def split(paragraph: str, lang: str) -> list[str]:
        return list(sentencex.segment(lang, paragraph))

    return split


def _pysbd() -> Callable[[str, str], list[str]]:
    try:
        import pysbd  # loaded on use: pysbd is heavy or optional
    except ImportError:
        raise ConfigError("the pysbd splitter needs pysbd: pip install pysbd") from None
    cache: dict[str, object] = {}

    def split(paragraph: str, lang: str) -> list[str]:
        code = lang if lang in _PYSBD_LANGS else "en"
        seg = cache.get(code)
        if seg is None:
            seg = cache[code] = pysbd.Segmenter(language=code, clean=False)
        return [str(s) for s in seg.segment(paragraph)]

    return split


def get_splitter(name: str = DEFAULT_SPLITTER) -> Callable[[str, str], list[str]]:
    """A function ``split(text, lang) -> sentences`` using the named library (imported, and a
    missing library reported, when the first text is split)."""
    if name not in SPLITTERS:
        raise ConfigError(f"unknown sentence splitter {name!r}; splitters: {', '.join(SPLITTERS)}")
    inner: list = []  # the library is imported on first use: text given as sentences never needs it

    def split(text: str, lang: str) -> list[str]:
        if not inner:
            inner.append(_sentencex() if name == "sentencex" else _pysbd())
        code = normalize_lang(lang) if lang and lang != "und" else "en"
        out: list[str] = []
        for para in text.splitlines():
            if para.strip():
                out.extend(s.strip() for s in inner[0](para.strip(), code) if s.strip())
        return out

    return split


_SENT_BREAK_RE = re.compile(r"([.!?…][\"'»”’)]*)\s+(?=[\"'«“‘(¿¡]?[^\W\d_a-zß-ÿ])")


def split_sentences(s: str) -> list[str]:
    """``s`` cut at sentence ends followed by a capital (a cheap splitter for the features:
    abbreviations such as "Dr. Smith" split too, which only adds a part that matches)."""
    return [p for p in _SENT_BREAK_RE.sub("\\1\0", s).split("\0") if p.strip()]
