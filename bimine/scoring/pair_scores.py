"""Graded pair scores from sentence embeddings (kind ``"score"``: summed into ``score``).

The cosine and the margin of the default pipeline read the same embeddings of each block:
:func:`embed` keeps the last few results, keyed by the encoder object, the language and the
texts themselves (a copy of the list, compared element by element: the same string objects
match at once, other lists only when every text is equal), so each side of a block is embedded
once, and a block can never get another block's embeddings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from bimine.errors import ConfigError
from bimine.index.faiss_index import IndexConfig, fastscan_pq_m
from bimine.index.sides import SearchConfig, knn_both_ways, side_from_array
from bimine.scoring.base import PairFilter
from bimine.scoring.calibration import Calibration
from bimine.scoring.classifiers import PairClassifier
from bimine.scoring.divergence import DivergenceModel, default_path
from bimine.scoring.margin import knn_mean, margin_score
from bimine.scoring.rescore import knn_features, load_rescorer, rescore_pairs
from bimine.text.sentences import split_sentences

_EMBED_CACHE: list[tuple[object, str, list[str], np.ndarray]] = []
EMBED_CACHE_SIZE = 2  # a block's two sides


def embed(encoder, texts: list[str], lang: str) -> np.ndarray:
    """``encoder.encode(texts, lang)``, reused when the same encoder was just asked for the same
    texts in the same language (the result is shared: callers must not modify it)."""
    for enc, held_lang, held, emb in _EMBED_CACHE:
        if enc is encoder and held_lang == lang and len(held) == len(texts) and held == texts:
            return emb
    emb = encoder.encode(texts, lang)
    _EMBED_CACHE.append((encoder, lang, list(texts), emb))
    del _EMBED_CACHE[:-EMBED_CACHE_SIZE]
    return emb


def clear_embed_cache() -> None:
    """Let go of the last blocks' encoder, texts and vectors (a library call's end: a user's model is
    not kept alive by bimine)."""
    _EMBED_CACHE.clear()


@dataclass
class CosineScore(PairFilter):
    """Score: cosine of the two sides' embeddings (``encoder``, unit-norm rows); no threshold
    by default (it only scores)."""

    encoder: object = None
    src_lang: str = "en"
    tgt_lang: str = "en"
    name: str = "cosine"
    threshold: float | None = None
    clean_high: bool = True
    reason: str = "embedding cosine below the threshold"
    kind: str = "score"
    batch_size: int = field(default=8192, repr=False)

    def score(self, src, tgt):
        u = embed(self.encoder, src, self.src_lang)
        v = embed(self.encoder, tgt, self.tgt_lang)
        return _blank_nan(np.einsum("ij,ij->i", u, v).astype(np.float64), src, tgt)


def _blank_nan(scores: np.ndarray, src: list[str], tgt: list[str]) -> np.ndarray:
    """NaN where a side is blank: two blank sides embed to the same vector (cosine 1), which
    says nothing about a translation; NaN counts as 0 in the combined score and fails a
    threshold, as the margin's blank rows do."""
    blank = np.fromiter((not a.strip() or not b.strip() for a, b in zip(src, tgt)), dtype=bool, count=len(src))
    if blank.any():
        scores = np.where(blank, np.nan, scores)
    return scores


@dataclass
class ConfidenceScore(PairFilter):
    """Score: the calibrated confidence of the cosine (paper 000 §2.4.2), the probability that
    the pair is a translation, from the head stored with the model (``bimine calibrate``) or
    the file at ``path``; NumPy only, so it runs in the worker processes like the cosine. No
    threshold by default (000 keeps pairs at 0.5 and above)."""

    encoder: object = None
    src_lang: str = "en"
    tgt_lang: str = "en"
    path: str | None = None
    name: str = "confidence"
    threshold: float | None = None
    clean_high: bool = True
    reason: str = "calibrated confidence below the threshold"
    kind: str = "score"

    def __post_init__(self) -> None:
        self.cal = Calibration.for_encoder(self.encoder, self.path)

    def score(self, src, tgt):
        conf = self.cal.confidence(embed(self.encoder, src, self.src_lang), embed(self.encoder, tgt, self.tgt_lang))
        return _blank_nan(np.asarray(conf, dtype=np.float64), src, tgt)


@dataclass
class Coverage(PairFilter):
    """Score: how much closer the best single sentence of a side is to the other side than the
    whole side is: ``max(cos(part, other)) - cos(side, other)`` over the sentences of each side
    that holds two or more (:func:`~bimine.text.sentences.split_sentences`), else 0. A side
    with a sentence the other lacks is a partial translation: its matching sentence alone is
    closer to the other side (newstest2012 mixtures: 0.5-0.9 % of genuine pairs above 0.02, 40-46 %
    of partial ones, nearly all of those whose sides differ by a sentence). Only sides of two
    sentences or more are embedded again (the whole sides come from :func:`embed`'s cache)."""

    encoder: object = None
    src_lang: str = "en"
    tgt_lang: str = "en"
    name: str = "cover"
    threshold: float | None = None
    clean_high: bool = False
    reason: str = "one side holds a sentence the other lacks"
    kind: str = "feature"

    def score(self, src, tgt):
        u = embed(self.encoder, src, self.src_lang)
        v = embed(self.encoder, tgt, self.tgt_lang)
        whole = np.einsum("ij,ij->i", u, v).astype(np.float64)
        best = whole.copy()
        for texts, lang, other in ((src, self.src_lang, v), (tgt, self.tgt_lang, u)):
            parts, owner = [], []
            for i, t in enumerate(texts):
                p = split_sentences(t)
                if len(p) >= 2:
                    parts.extend(p)
                    owner.extend([i] * len(p))
            if parts:
                owner_a = np.asarray(owner)
                cos = np.einsum("ij,ij->i", self.encoder.encode(parts, lang), other[owner_a])
                np.maximum.at(best, owner_a, cos.astype(np.float64))
        return _blank_nan(best - whole, src, tgt)


MARGIN_EXACT_BELOW = 50_000
MARGIN_NPROBE = 32


def margin_index(n: int, d: int, exact_below: int = MARGIN_EXACT_BELOW, nprobe: int = MARGIN_NPROBE):
    """The index :class:`MarginScore` searches ``n`` sentences of dimension ``d`` with: exact
    below ``exact_below`` sentences; above, IVF with about 4 sqrt(n) lists, 4-bit fast-scan
    PQ codes and float16 re-scoring of 8 x k candidates, ``nprobe`` lists probed. The margin
    needs the mean similarity of the neighbours, not the neighbours: measured against exact
    search in docs/benchmarks.md (``python -m benchmarks.margin_index``)."""
    if n < exact_below:
        return IndexConfig(factory="Flat")
    nlist = 2 ** int(round(math.log2(max(64, 4 * math.sqrt(n)))))
    return IndexConfig(factory=f"IVF{nlist},PQ{fastscan_pq_m(d)}x4fs,Refine(SQfp16)", nprobe=nprobe, k_factor=8)


def corpus_margin(u: np.ndarray, v: np.ndarray, *, k: int = 4, kind: str = "ratio",
                  valid_src: np.ndarray | None = None, valid_tgt: np.ndarray | None = None,
                  index=None) -> np.ndarray:
    """Margin of each aligned pair ``(u[i], v[i])`` against the corpus itself (paper 002 Eq. 2):
    ``cos(u_i, v_i)`` over the mean cosine of ``u_i`` to its ``k`` nearest targets and of
    ``v_i`` to its ``k`` nearest sources, all targets/sources of the corpus being candidates
    (``kind`` "ratio" is Eq. 2; "distance", "eq9" as in mining). Rows not in ``valid_src`` /
    ``valid_tgt`` (blank sentences) are never neighbours and get NaN. ``index``: an
    :class:`~bimine.index.faiss_index.IndexConfig` (default: :func:`margin_index`).
    """
    n = len(u)
    vs = np.arange(n) if valid_src is None else np.asarray(valid_src, dtype=np.int64)
    vt = np.arange(n) if valid_tgt is None else np.asarray(valid_tgt, dtype=np.int64)
    out = np.full(n, np.nan)
    if len(vs) == 0 or len(vt) == 0:
        return out
    cfg = SearchConfig(k=min(k, len(vs), len(vt)),
                       index=index if index is not None else margin_index(max(len(vs), len(vt)), u.shape[1]))
    sxy, ixy, syx, iyx = knn_both_ways(side_from_array(u, vs), side_from_array(v, vt), cfg)
    mx = np.full(n, np.nan, dtype=np.float32)
    my = np.full(n, np.nan, dtype=np.float32)
    mx[vs] = knn_mean(sxy, cfg.k, ixy)
    my[vt] = knn_mean(syx, cfg.k, iyx)
    both = np.intersect1d(vs, vt)
    cos = np.einsum("ij,ij->i", u[both], v[both])
    out[both] = margin_score(cos, mx[both], my[both], kind)
    return out


@dataclass
class MarginScore(PairFilter):
    """Score: the margin of each pair against the corpus itself (paper 002 Eq. 2,
    :func:`corpus_margin`): both sides of every pair are embedded as the blocks go by, then
    each pair's cosine is set against its sides' ``k`` nearest neighbours among all targets and
    all sources. Holds both sides' embeddings in memory (2 x 384 float32 per pair: 3 GB per
    million pairs with the default model). No threshold by default.

    Search (:func:`margin_index`): exact below ``exact_below`` sentences a side (paper 002's
    exact margin: set it above the corpus size), else an IVF index probing ``nprobe`` lists."""

    encoder: object = None
    src_lang: str = "en"
    tgt_lang: str = "en"
    k: int = 4
    margin: str = "ratio"
    exact_below: int = MARGIN_EXACT_BELOW
    nprobe: int = MARGIN_NPROBE
    name: str = "margin"
    threshold: float | None = None
    clean_high: bool = True
    reason: str = "margin score below the threshold"
    kind: str = "score"
    needs_corpus: bool = True

    def __post_init__(self) -> None:
        if self.margin not in ("ratio", "distance", "eq9"):
            raise ConfigError(f"margin must be ratio, distance or eq9, got {self.margin!r}")
        if self.k < 1:
            raise ConfigError(f"k must be >= 1, got {self.k}")
        if self.exact_below < 0 or self.nprobe < 1:
            raise ConfigError(f"margin needs exact_below >= 0 and nprobe >= 1, got {self.exact_below}, {self.nprobe}")
        self._u: list[np.ndarray] = []
        self._v: list[np.ndarray] = []
        self._blank_s: list[np.ndarray] = []
        self._blank_t: list[np.ndarray] = []

    def prepare(self, src, tgt):
        """Both sides' embeddings (stateless: computed in the pipeline's workers, where the
        cosine of the same block has just embedded them: :func:`embed`)."""
        return embed(self.encoder, src, self.src_lang), embed(self.encoder, tgt, self.tgt_lang)

    def collect_prepared(self, src, tgt, prepared):
        u, v = prepared if prepared is not None else self.prepare(src, tgt)
        self._u.append(u)
        self._v.append(v)
        self._blank_s.append(np.array([not s.strip() for s in src], dtype=bool))
        self._blank_t.append(np.array([not t.strip() for t in tgt], dtype=bool))

    def collect(self, src, tgt):
        self.collect_prepared(src, tgt, None)

    def _gathered(self):
        """The embeddings collected so far (emptied) and the rows of each side that are not blank."""
        u, v = np.concatenate(self._u), np.concatenate(self._v)
        vs = np.flatnonzero(~np.concatenate(self._blank_s))
        vt = np.flatnonzero(~np.concatenate(self._blank_t))
        self._u, self._v = [], []
        return u, v, vs, vt

    def finalize(self):
        if not self._u:
            return np.zeros(0)
        u, v, vs, vt = self._gathered()
        index = margin_index(max(len(vs), len(vt)), u.shape[1], self.exact_below, self.nprobe)
        return corpus_margin(u, v, k=self.k, kind=self.margin, valid_src=vs, valid_tgt=vt, index=index)

    def score(self, src, tgt):
        """The margin of ``src``/``tgt`` taken as a whole corpus."""
        self.collect(src, tgt)
        return self.finalize()


def trained_threshold(value, stored: float):
    """``value`` as a pipeline gives it, with ``'trained'`` replaced by the threshold ``stored``
    with the model; any other string is an error."""
    if value == "trained":
        return stored
    if isinstance(value, str):
        raise ConfigError(f"threshold must be a number, null or 'trained', got {value!r}")
    return value


@dataclass
class ClassifierScore(PairFilter):
    """Score: a trained pair classifier (:mod:`bimine.scoring.classifiers`, from ``bimine
    train-classifier``) at ``path``: calibrated confidence, the classifier on embeddings (the
    cosine of its transformed embeddings, or its softmax with ``output: probability``), or
    the siamese BiGRU's probability. Its column is named after its kind unless ``name`` is
    given; ``threshold: trained`` uses the decision threshold stored with it (best dev F1).
    Runs in the main process (torch in forked workers can hang)."""

    path: str = ""
    encoder: object = None
    src_lang: str = "en"
    tgt_lang: str = "en"
    output: str = "default"
    name: str = ""
    threshold: float | str | None = None
    stores_threshold: ClassVar[bool] = True  # 'threshold: trained' takes the one stored with the model
    clean_high: bool = True
    reason: str = ""
    kind: str = "score"
    fork_unsafe: ClassVar[bool] = True  # scored in this process with a local executor, see above

    def __post_init__(self) -> None:
        if not self.path:
            raise ConfigError("a classifier score needs 'path' (a file from 'bimine train-classifier')")
        if self.output not in ("default", "probability"):
            raise ConfigError(f"output must be default or probability, got {self.output!r}")
        self.clf = PairClassifier.load(self.path)
        self.clf.check_encoder(self.encoder)
        self._swap = self.clf.orientation(self.src_lang, self.tgt_lang)
        if self.output == "probability" and self.clf.kind != "fc":
            raise ConfigError("output: probability is for fc classifiers (the others give a probability already)")
        if not self.name:
            self.name = self.clf.kind
        self.threshold = trained_threshold(self.threshold, self.clf.threshold)
        if not self.reason:
            self.reason = f"{self.name} classifier score below the threshold"

    @property
    def probability(self) -> bool:
        """Whether the score is a probability (the combined score then adds its log-odds): every
        kind but ``fc``'s cosine."""
        return self.clf.kind != "fc" or self.output == "probability"

    def score(self, src, tgt):
        if self._swap:
            src, tgt = tgt, src
        a, b = (self.tgt_lang, self.src_lang) if self._swap else (self.src_lang, self.tgt_lang)
        return self.clf.score(src, tgt, self.encoder, src_lang=a, tgt_lang=b, output=self.output)


@dataclass
class DivergenceScore(PairFilter):
    """Score: a semantic divergence model (paper 004; :mod:`bimine.scoring.divergence`): the
    probability that the pair is equivalent in meaning, in [0, 1]. ``path``: a file from
    ``bimine train-divergence`` or ``default`` (the one shipped with the default model).
    ``threshold: trained`` uses the threshold stored with it. Runs in the main process
    (torch in forked workers can hang)."""

    path: str = "default"
    encoder: object = None
    src_lang: str = "en"
    tgt_lang: str = "en"
    name: str = "divergence"
    threshold: float | str | None = None
    probability: ClassVar[bool] = True  # P(equivalent): its log-odds join the combined score
    stores_threshold: ClassVar[bool] = True  # 'threshold: trained' takes the one stored with the model
    clean_high: bool = True
    reason: str = "divergence model: the two sides differ in meaning"
    kind: str = "score"
    fork_unsafe: ClassVar[bool] = True  # scored in this process with a local executor, see above

    def __post_init__(self) -> None:
        self.model = DivergenceModel.load(default_path() if self.path == "default" else self.path)
        self.model.check_runtime()
        if self.model.kind == "vdpwi" and self.encoder is None:
            raise ConfigError("the divergence model reads word vectors from its encoder (remove --no-model)")
        self.model.check_encoder(self.encoder)
        self.model.reversed_languages(self.src_lang, self.tgt_lang)  # refuses another language pair now
        self.threshold = trained_threshold(self.threshold, self.model.threshold)

    def score(self, src, tgt):
        return self.model.score(list(src), list(tgt), src_lang=self.src_lang, tgt_lang=self.tgt_lang,
                                encoder=self.encoder)


@dataclass
class RescoreScore(MarginScore):
    """Score: the rescorer of mined pairs (issue 15, paper 001 §6.2; :mod:`bimine.scoring.rescore`)
    applied to each aligned pair as a candidate of the corpus itself: its kNN features come
    from the same in-corpus search as :class:`MarginScore` (each side against all sentences of
    the other side), its text and word features from the pair. The probability that the pair
    is a translation, in [0, 1]; ``path``: ``default`` (shipped with the default model:
    trees, then an e5-small cross-encoder), ``trees`` (those trees alone) or a folder from
    ``bimine train-rescorer``; ``threshold: trained`` uses the one stored with it."""

    path: str = "default"
    name: str = "rescore"
    threshold: float | str | None = None
    probability: ClassVar[bool] = True
    stores_threshold: ClassVar[bool] = True
    reason: str = "rescorer: not a translation"

    def __post_init__(self) -> None:
        self.margin = "eq9"
        super().__post_init__()
        self.rescorer = load_rescorer(self.path, self.encoder)
        self.threshold = trained_threshold(self.threshold, self.rescorer.threshold)
        self._src: list[str] = []
        self._tgt: list[str] = []

    def collect_prepared(self, src, tgt, prepared):
        super().collect_prepared(src, tgt, prepared)
        self._src += list(src)
        self._tgt += list(tgt)

    def finalize(self):
        if not self._u:
            return np.zeros(0)
        u, v, vs, vt = self._gathered()
        src, tgt = self._src, self._tgt
        self._src, self._tgt = [], []
        out = np.full(len(u), np.nan)
        both = np.intersect1d(vs, vt)
        if len(both) == 0:
            return out
        k = min(self.k, len(vs), len(vt))
        cfg = SearchConfig(k=k, index=margin_index(max(len(vs), len(vt)), u.shape[1], self.exact_below, self.nprobe))
        sxy, ixy, syx, iyx = knn_both_ways(side_from_array(u, vs), side_from_array(v, vt), cfg)
        cos = np.einsum("ij,ij->i", u[both], v[both])
        knn = knn_features(sxy, ixy, syx, iyx, k, np.searchsorted(vs, both), np.searchsorted(vt, both), cos=cos)
        out[both] = rescore_pairs(self.rescorer, self.encoder, [src[i] for i in both.tolist()],
                                  [tgt[i] for i in both.tolist()], knn, self.src_lang, self.tgt_lang)
        return out
