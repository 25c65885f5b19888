"""Word tokens: lowercased words and single punctuation marks, each character of a script
written without spaces a token of its own. The BiGRU pair classifier, the IBM word aligner and
the divergence models read sentences through :func:`tokenize`.

Two versions, because models store tokens (the IBM aligner's vocabulary, the BiGRU's hashed
rows): a model file records the version it was trained with (a file without one was made
with version 1), and reads text with it.

* ``1`` (before issue 56): ``\\w+`` runs. Python's ``\\w`` leaves out the combining marks, so a
  Devanagari, Bengali, Tamil or Myanmar word was cut at each vowel sign and virama, and each
  mark was a "punctuation" token of its own: ``"हिंदी"`` gave ``ह ि ं द ी``, and the word
  tokens (:func:`bimine.scoring.ibm.words`) kept only the bare consonants ``ह द``.
* ``2`` (:data:`TOKENS_VERSION`, what new models record): a combining mark or ZWNJ/ZWJ
  (:func:`bimine.text.normalize.is_mark`) continues the token it follows, as in the DAN's
  features with ``marks_in_words`` and in the length rules: ``"हिंदी"`` is one token, and a
  character of a script without spaces is one token with the marks that follow it (Thai
  ``"กั"``, Myanmar ``"မြ"``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from bimine.text.normalize import NO_SPACE_CLASS, has_mark, marks_class, marks_token_re

TOKENS_VERSION = 2  #: the version new models record
VERSIONS = (1, 2)

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_NO_SPACE_RE = re.compile(f"([{NO_SPACE_CLASS}])")


@lru_cache(maxsize=1)
def _no_space_marked_re() -> re.Pattern:
    """Version 2: a character of a script without spaces with the marks that follow it."""
    return re.compile(f"([{NO_SPACE_CLASS}][{marks_class()}]*)")


def check_version(version, where: str = "tokens") -> int:
    """``version`` if bimine knows it; a ValueError naming ``where`` otherwise (a model made by a
    newer bimine)."""
    if type(version) is not int or version not in VERSIONS:
        raise ValueError(f"{where}: token version {version!r}, this bimine reads {', '.join(map(str, VERSIONS))} "
                         "(a model made by a newer bimine: upgrade bimine)")
    return version


def tokenize(s: str, version: int = TOKENS_VERSION) -> list[str]:
    """The lowercased tokens of ``s``: words and single punctuation marks, each character of a
    script written without spaces a token of its own (see the module's docstring for the
    two versions; another ``version`` is a ValueError)."""
    if version != TOKENS_VERSION:
        check_version(version)
    s = s.lower()
    if s.isascii():
        return _TOKEN_RE.findall(s)
    if version == 1 or not has_mark(s):  # without a mark both versions cut alike; version 1 is quicker
        return _TOKEN_RE.findall(_NO_SPACE_RE.sub(r" \1 ", s))
    return marks_token_re().findall(_no_space_marked_re().sub(r" \1 ", s))
