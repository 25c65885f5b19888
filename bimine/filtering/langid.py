"""Wrong-language filter (paper 002 §2.1): keep a side whose language-identification score for
its declared language reaches a threshold.

The identifier is py3langid (a maintained port of langid.py; 140 languages in 0.4), with its
normalised probabilities. The score of a side is the probability of its declared language
plus that of the languages identifiers confuse it with (no/nb/da/sv, hr/sr/bs, ms/id, ...:
:func:`bimine.langs.related_languages`), so a Norwegian side called Danish is not dropped; the pair's
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
import os
import unicodedata
from dataclasses import dataclass, field
from importlib.metadata import version

import numpy as np

from bimine.diskcache import cached_arrays, file_digest
from bimine.errors import ConfigError
from bimine.langs import is_lang_code, normalize_lang, related_languages
from bimine.scoring.base import PairFilter

_IDENT = None


def identifier():
    """py3langid's identifier with normalised probabilities (loaded once, ~0.7 s). The
    filters need only :func:`_model`, which is cached on disk."""
    global _IDENT
    if _IDENT is None:
        try:
            from py3langid.langid import (  # loaded on use: py3langid is heavy or optional
                MODEL_FILE,
                LanguageIdentifier,
            )
        except ImportError:
            raise ConfigError("the wrong-language filter needs py3langid (pip install py3langid)") from None
        _IDENT = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return _IDENT


@dataclass(frozen=True)
class LangidModel:
    """py3langid's model as the compiled kernels read it.

    The automaton as py3langid has it: ``nextmove[rowbase[state] + byte]`` is the next state
    (int32), ``output[state]`` the feature the state emits or -1, state 0 the first; ``ptc``
    the per-feature class log-probabilities, class columns padded with zeros to ``width`` (a
    multiple of 16) and rows aligned to 64 bytes; ``pc`` the priors, padded alike; ``classes``
    the labels (``n_classes`` of them) and ``alias_pairs`` py3langid's (first, duplicate)
    columns of labels that appear twice."""

    nextmove: np.ndarray
    rowbase: np.ndarray
    output: np.ndarray
    ptc: np.ndarray
    pc: np.ndarray
    classes: list[str]
    alias_pairs: list[tuple[int, int]]

    @property
    def n_classes(self) -> int:
        return len(self.classes)


_VERSION = 2  # of the derived tables' layout: part of the cache key
_MODEL: LangidModel | None = None


def _model_file() -> str:
    try:
        from py3langid.langid import MODEL_DIR, MODEL_FILE  # loaded on use: py3langid is heavy or optional
    except ImportError:
        raise ConfigError("the wrong-language filter needs py3langid (pip install py3langid)") from None
    path = str(MODEL_FILE)
    return path if os.path.isabs(path) else os.path.join(str(MODEL_DIR), path)


def _build_model() -> dict[str, np.ndarray]:
    ident = identifier()
    nextmove = np.frombuffer(ident.tk_nextmove, dtype=np.dtype(ident.tk_nextmove.typecode))
    rowbase = np.asarray(ident._rowbase, dtype=np.int64)
    output = np.asarray(ident.tk_output, dtype=np.int64)
    if max(int(rowbase.max()) + 256, len(output), int(output.max()) + 1, len(nextmove)) >= 2**31:
        raise ConfigError("py3langid's model is too large for the compiled walk")  # pragma: no cover
    ptc = np.asarray(ident.nb_ptc, dtype=np.float32)
    width = -(-ptc.shape[1] // 16) * 16
    padded = np.zeros((ptc.shape[0], width), dtype=np.float32)
    padded[:, : ptc.shape[1]] = ptc
    pc = np.zeros(width, dtype=np.float32)
    pc[: ptc.shape[1]] = np.asarray(ident.nb_pc, dtype=np.float32)
    return {"nextmove": nextmove.astype(np.int32), "rowbase": rowbase.astype(np.int32),
            "output": output.astype(np.int32), "ptc": padded, "pc": pc,
            "classes": np.array(list(ident.nb_classes)),
            "alias_pairs": np.array(ident._alias_pairs, dtype=np.int64).reshape(-1, 2)}


def _aligned(a: np.ndarray, align: int = 64) -> np.ndarray:
    """``a`` in a buffer whose start is aligned to ``align`` bytes (rows of 64-byte multiples
    then start on cache lines)."""
    if a.ctypes.data % align == 0 and a.flags.c_contiguous:
        return a
    buf = np.empty(a.nbytes + align, dtype=np.uint8)
    skip = -buf.ctypes.data % align
    out = buf[skip : skip + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def _model() -> LangidModel:
    """The derived tables (:class:`LangidModel`), from the disk cache when they were built
    from this very model file (SHA-256) by this py3langid version and this code's layout
    (:mod:`bimine.diskcache`); else from py3langid's model (~0.7 s), then cached."""
    global _MODEL
    if _MODEL is None:
        path = _model_file()
        key = (f"py3langid tables v{_VERSION}; py3langid {version('py3langid')}; model {path} "
               f"sha256 {file_digest(path)}")
        t = cached_arrays("py3langid", key, _build_model)
        _MODEL = LangidModel(nextmove=t["nextmove"], rowbase=t["rowbase"], output=t["output"], ptc=_aligned(t["ptc"]),
                             pc=t["pc"], classes=[str(c) for c in t["classes"].tolist()],
                             alias_pairs=[(int(i), int(j)) for i, j in t["alias_pairs"].tolist()])
    return _MODEL


def language_columns(lang: str) -> np.ndarray:
    """Columns of the identifier's output that count as ``lang`` (itself and its relatives);
    empty when the identifier knows none of them."""
    accepted = related_languages(normalize_lang(lang))
    cols = [i for i, c in enumerate(_model().classes) if is_lang_code(c) and normalize_lang(c) in accepted]
    return np.array(cols, dtype=np.int64)


def _encode(text: str) -> bytes:
    """The bytes py3langid reads: upper-case text lower-cased, NFC, UTF-8."""
    if text.isupper():
        text = text.lower()
    return unicodedata.normalize("NFC", text).encode("utf-8", errors="surrogatepass")


def language_probs(texts: list[str]) -> np.ndarray:
    """py3langid's normalised class probabilities of each text, ``(len(texts), classes)``
    float32 (columns of aliased labels folded into the first), computed for the whole batch:
    the byte automaton in one compiled loop, the naive Bayes scores as one sparse product (the
    reference that :func:`language_scores`' fused kernel is tested against)."""
    from scipy.sparse import csr_matrix  # loaded on use: SciPy is heavy or optional

    from bimine.filtering._langid_kernel import (
        visit_counts,  # numba kernels: compiled on first use, not at import
    )

    model = _model()
    nc = model.n_classes
    enc = [_encode(t) for t in texts]
    lengths = np.array([len(b) for b in enc], dtype=np.int64)
    offsets = np.zeros(len(enc) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(enc), dtype=np.uint8)
    r, f, c = visit_counts(data, offsets, model.nextmove, model.rowbase, model.output)
    m = csr_matrix((np.log1p(c), (r, f)), shape=(len(texts), model.ptc.shape[0]), dtype=np.float32)
    scores = np.asarray(m @ model.ptc, dtype=np.float32)[:, :nc] + model.pc[:nc]
    empty = np.bincount(r, minlength=len(texts)) == 0
    scores[empty] = 0.0  # no feature: a uniform distribution, as py3langid gives
    scores *= (1.0 / np.sqrt(np.maximum(lengths, 1))).astype(np.float32)[:, None]
    scores = np.exp(scores - scores.max(axis=1, keepdims=True))
    scores /= scores.sum(axis=1, keepdims=True)
    for i, j in model.alias_pairs:
        scores[:, i] += scores[:, j]
        scores[:, j] = 0.0
    return scores


def language_scores(texts: list[str], lang: str, pairwise: bool = False) -> np.ndarray:
    """Probability that each text is in ``lang`` or a close relative (NaN for every text when
    the identifier does not know the language); with ``pairwise``, that probability over
    itself plus the probability of the most likely other language (0.5 and above: ``lang``
    ranks first)."""
    cols = language_columns(lang)
    if len(cols) == 0:
        return np.full(len(texts), math.nan)
    if not texts:
        return np.zeros(0)
    from bimine.filtering._langid_kernel import (
        class_probability,  # numba kernels: compiled on first use, not at import
    )

    distinct = dict.fromkeys(texts)
    if len(distinct) <= 0.95 * len(texts):  # repeated texts (a crawl's boilerplate): each scored once
        keys = list(distinct)
        at = {t: i for i, t in enumerate(keys)}
        return language_scores(keys, lang, pairwise)[[at[t] for t in texts]]
    model = _model()
    data, offsets = _encode_batch(texts)
    fold_to = np.arange(model.n_classes, dtype=np.int64)
    for i, j in model.alias_pairs:
        fold_to[j] = i
    is_wanted = np.zeros(model.n_classes, dtype=np.bool_)
    is_wanted[cols] = True
    return class_probability(data, offsets, model.nextmove, model.rowbase, model.output, model.ptc, model.pc,
                             model.n_classes, _source_columns(cols), fold_to, is_wanted, pairwise)


def _source_columns(cols: np.ndarray) -> np.ndarray:
    """The raw columns whose probabilities make up ``cols`` once aliased labels are folded
    into their first label (as :func:`language_probs` folds them)."""
    wanted = set(int(c) for c in cols)
    src = set(wanted)
    for i, j in _model().alias_pairs:
        if i in wanted:
            src.add(j)
        elif j in wanted:
            src.discard(j)  # folded into a column not asked for
    return np.array(sorted(src), dtype=np.int64)


def _encode_batch(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The bytes py3langid reads of every text (:func:`_encode`), concatenated, and the
    offsets of each text. Texts without a line break are joined with one and encoded at
    once (NFC stops at a line break, so this equals encoding each alone)."""
    upper = np.flatnonzero(np.fromiter(map(str.isupper, texts), dtype=bool, count=len(texts)))
    if len(upper):
        texts = list(texts)
        for i in upper.tolist():
            texts[i] = texts[i].lower()
    joined = "\n".join(texts)
    if joined.count("\n") != len(texts) - 1:  # a text holds a line break: each alone
        enc = [unicodedata.normalize("NFC", t).encode("utf-8", errors="surrogatepass") for t in texts]
        lengths = np.array([len(b) for b in enc], dtype=np.int64)
        offsets = np.zeros(len(enc) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return np.frombuffer(b"".join(enc), dtype=np.uint8), offsets
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
    """Score: the lower of the two sides' scores for their declared languages; clean when at
    least ``threshold`` (0.5). ``mode`` "pairwise" (default): a side's score is the probability
    of its declared language over itself plus that of the most likely other language, so 0.5
    means the declared language ranks first; "probability": the probability itself (paper
    002's score, which py3langid flattens on short texts; docs/decisions.md)."""

    src_lang: str = "en"
    tgt_lang: str = "en"
    mode: str = "pairwise"
    name: str = "lang"
    threshold: float = 0.5
    clean_high: bool = True
    reason: str = "a side is not in its declared language"
    unchecked: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not 0 <= self.threshold <= 1:
            raise ConfigError(f"lang threshold must be in [0, 1], got {self.threshold}")
        if self.mode not in ("pairwise", "probability"):
            raise ConfigError(f"lang mode must be pairwise or probability, got {self.mode!r}")
        self.src_lang, self.tgt_lang = normalize_lang(self.src_lang), normalize_lang(self.tgt_lang)
        self.unchecked = [side for side, lang in (("src", self.src_lang), ("tgt", self.tgt_lang))
                          if len(language_columns(lang)) == 0]

    def score(self, src, tgt):
        pw = self.mode == "pairwise"
        a = language_scores(src, self.src_lang, pw)
        b = language_scores(tgt, self.tgt_lang, pw)
        with np.errstate(invalid="ignore"):
            return np.fmin(a, b)  # NaN only where both sides are unchecked

    def accept(self, scores):
        s = np.asarray(scores, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            return np.isnan(s) | (s >= self.threshold)
