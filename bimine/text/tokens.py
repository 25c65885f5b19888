"""Word tokens: lowercased ``\\w+`` runs and single punctuation marks, each character of a
script written without spaces a token of its own. The BiGRU pair classifier, the IBM word
aligner and the divergence models read sentences through :func:`tokenize`."""

from __future__ import annotations

import re

from bimine.text.normalize import NO_SPACE_RANGES


def _no_space_re():
    return re.compile("([" + "".join(f"{chr(a)}-{chr(b)}" for a, b in NO_SPACE_RANGES) + "])")


_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_NO_SPACE = None


def tokenize(s: str) -> list[str]:
    """Lowercased ``\\w+`` runs and single punctuation marks; each character of a script
    written without spaces is a token of its own."""
    global _NO_SPACE
    s = s.lower()
    if not s.isascii():
        if _NO_SPACE is None:
            _NO_SPACE = _no_space_re()
        s = _NO_SPACE.sub(r" \1 ", s)
    return _TOKEN_RE.findall(s)
