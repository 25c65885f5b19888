"""Wrong-language filter (paper 002 §2.1): keep a side whose language-identification score for
its declared language reaches a threshold.

The identifier is py3langid (a maintained port of langid.py, 97 languages), with its
normalised probabilities. The score of a side is the probability of its declared language
plus that of the languages identifiers confuse it with (no/nb/da/sv, hr/sr/bs, ms/id, ...:
:func:`bimine.langs._related`), so a Norwegian side called Danish is not dropped; the pair's
score is the lower of its two sides.

Paper 002 keeps a source side scored 80 % or more by Microsoft's BLING. py3langid's
probabilities are tempered by text length (short sentences get flatter distributions), so
its 0.8 is a different bar: on dev tatoeba-test en-fr (short sentences) 15.1 % of the genuine
French lines score below 0.8 and 6.9 % below 0.5, while 0.05 % of the English lines reach 0.5
as French; the default threshold here is 0.5 (docs/decisions.md).

A side whose declared language the identifier does not know is not checked: its score is
NaN and the pair is judged by its other side (accepted when neither side is checked);
:attr:`LanguageId.unchecked` names such sides so the caller can say so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from bimine.errors import ConfigError
from bimine.filtering.base import PairFilter
from bimine.langs import _related, is_lang_code, normalize_lang

_IDENT = None


def identifier():
    """py3langid's identifier with normalised probabilities (loaded once, ~0.5 s)."""
    global _IDENT
    if _IDENT is None:
        try:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier
        except ImportError:
            raise ConfigError("the wrong-language filter needs py3langid (pip install py3langid)") from None
        _IDENT = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return _IDENT


def language_columns(lang: str) -> np.ndarray:
    """Columns of the identifier's output that count as ``lang`` (itself and its relatives);
    empty when the identifier knows none of them."""
    ident = identifier()
    accepted = _related(normalize_lang(lang))
    cols = [i for i, c in enumerate(ident.nb_classes) if is_lang_code(c) and normalize_lang(c) in accepted]
    return np.array(cols, dtype=np.int64)


def language_scores(texts: list[str], lang: str) -> np.ndarray:
    """Probability that each text is in ``lang`` or a close relative (NaN for every text when
    the identifier does not know the language)."""
    cols = language_columns(lang)
    if len(cols) == 0:
        return np.full(len(texts), math.nan)
    ident = identifier()
    return np.array([float(ident._decide(t)[cols].sum()) for t in texts], dtype=np.float64)


@dataclass
class LanguageId(PairFilter):
    """Score: the lower of the two sides' probabilities of their declared languages; clean
    when at least ``threshold`` (0.5)."""

    src_lang: str = "en"
    tgt_lang: str = "en"
    name: str = "lang"
    threshold: float = 0.5
    clean_high: bool = True
    reason: str = "a side is not in its declared language"
    unchecked: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not 0 <= self.threshold <= 1:
            raise ConfigError(f"lang threshold must be in [0, 1], got {self.threshold}")
        self.src_lang, self.tgt_lang = normalize_lang(self.src_lang), normalize_lang(self.tgt_lang)
        self.unchecked = [side for side, lang in (("src", self.src_lang), ("tgt", self.tgt_lang))
                          if len(language_columns(lang)) == 0]

    def score(self, src, tgt):
        a = language_scores(src, self.src_lang)
        b = language_scores(tgt, self.tgt_lang)
        with np.errstate(invalid="ignore"):
            return np.fmin(a, b)  # NaN only where both sides are unchecked

    def accept(self, scores):
        s = np.asarray(scores, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            return np.isnan(s) | (s >= self.threshold)
