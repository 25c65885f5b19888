"""Wrong-language filter (paper 002 §2.1): keep a side whose language-identification score for
its declared language reaches a threshold.

The identifier is py3langid (a maintained port of langid.py; 140 languages in 0.4), with its
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
import unicodedata
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


_TABLES = None


def _tables():
    """py3langid's automaton as NumPy arrays, for the compiled walk (built once)."""
    global _TABLES
    if _TABLES is None:
        ident = identifier()
        _TABLES = (np.frombuffer(ident.tk_nextmove, dtype=np.dtype(ident.tk_nextmove.typecode)).astype(np.int64),
                   np.asarray(ident._rowbase, dtype=np.int64), np.asarray(ident.tk_output, dtype=np.int64),
                   np.asarray(ident.nb_ptc, dtype=np.float32))
    return _TABLES


def _encode(text: str) -> bytes:
    """The bytes py3langid reads: upper-case text lower-cased, NFC, UTF-8."""
    if text.isupper():
        text = text.lower()
    return unicodedata.normalize("NFC", text).encode("utf-8", errors="surrogatepass")


def language_probs(texts: list[str]) -> np.ndarray:
    """py3langid's normalised class probabilities of each text, ``(len(texts), classes)``
    float32 (columns of aliased labels folded into the first), computed for the whole batch:
    the byte automaton in one compiled loop, the naive Bayes scores as one sparse product."""
    from scipy.sparse import csr_matrix

    from bimine.filtering._langid_kernel import visit_counts

    ident = identifier()
    nextmove, rowbase, output, ptc = _tables()
    enc = [_encode(t) for t in texts]
    lengths = np.array([len(b) for b in enc], dtype=np.int64)
    offsets = np.zeros(len(enc) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(enc), dtype=np.uint8)
    r, f, c = visit_counts(data, offsets, nextmove, rowbase, output)
    m = csr_matrix((np.log1p(c), (r, f)), shape=(len(texts), ptc.shape[0]), dtype=np.float32)
    scores = np.asarray(m @ ptc, dtype=np.float32) + ident.nb_pc.astype(np.float32)
    empty = np.bincount(r, minlength=len(texts)) == 0
    scores[empty] = 0.0  # no feature: a uniform distribution, as py3langid gives
    scores *= (1.0 / np.sqrt(np.maximum(lengths, 1))).astype(np.float32)[:, None]
    scores = np.exp(scores - scores.max(axis=1, keepdims=True))
    scores /= scores.sum(axis=1, keepdims=True)
    for i, j in ident._alias_pairs:
        scores[:, i] += scores[:, j]
        scores[:, j] = 0.0
    return scores


def language_scores(texts: list[str], lang: str) -> np.ndarray:
    """Probability that each text is in ``lang`` or a close relative (NaN for every text when
    the identifier does not know the language)."""
    cols = language_columns(lang)
    if len(cols) == 0:
        return np.full(len(texts), math.nan)
    if not texts:
        return np.zeros(0)
    from bimine.filtering._langid_kernel import class_probability

    nextmove, rowbase, output, ptc = _tables()
    data, offsets = _encode_batch(texts)
    return class_probability(data, offsets, nextmove, rowbase, output, ptc, _priors(), _source_columns(cols))


_PRIORS = None


def _priors() -> np.ndarray:
    global _PRIORS
    if _PRIORS is None:
        _PRIORS = np.ascontiguousarray(identifier().nb_pc, dtype=np.float32)
    return _PRIORS


def _source_columns(cols: np.ndarray) -> np.ndarray:
    """The raw columns whose probabilities make up ``cols`` once aliased labels are folded
    into their first label (as :func:`language_probs` folds them)."""
    wanted = set(int(c) for c in cols)
    src = set(wanted)
    for i, j in identifier()._alias_pairs:
        if i in wanted:
            src.add(j)
        elif j in wanted:
            src.discard(j)  # folded into a column not asked for
    return np.array(sorted(src), dtype=np.int64)


def _encode_batch(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The bytes py3langid reads of every text (:func:`_encode`), concatenated, and the
    offsets of each text. Texts without a line break are joined with one and encoded at
    once (NFC stops at a line break, so this equals encoding each alone)."""
    texts = [t.lower() if t.isupper() else t for t in texts]
    if any("\n" in t for t in texts):
        enc = [unicodedata.normalize("NFC", t).encode("utf-8", errors="surrogatepass") for t in texts]
        lengths = np.array([len(b) for b in enc], dtype=np.int64)
        offsets = np.zeros(len(enc) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return np.frombuffer(b"".join(enc), dtype=np.uint8), offsets
    joined = "\n".join(texts)
    if not joined.isascii():
        joined = unicodedata.normalize("NFC", joined)
    data = np.frombuffer(joined.encode("utf-8", errors="surrogatepass"), dtype=np.uint8)
    breaks = np.flatnonzero(data == 10)
    starts = np.r_[0, breaks + 1]
    ends = np.r_[breaks, len(data)]
    # the automaton must not see the separators: copy out the text bytes
    keep = np.ones(len(data), dtype=bool)
    keep[breaks] = False
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(ends - starts, out=offsets[1:])
    return data[keep], offsets


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
