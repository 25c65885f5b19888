"""Document matching scores (paper 000 §2.4.1 Eq. 3; paper 001 §5.3), on arrays.

Sentence ``x`` of a source document has ``N`` nearest target sentences ``y`` (rank 1..N).
Each neighbour votes for its target document ``D``; paper 000's Eq. 3 scores the pair
(source document, ``D``) as

    sum over the votes (x, y) with y in D of   -r(x, y) + w1 * f1(x, y) + w2 * f2(x, y)

with ``r`` the rank, ``f1`` the calibrated confidence of the pair (:mod:`bimine.encoders.
calibration`) and ``f2`` the absolute difference of the two sentences' positions in their
documents (defaults ``N = 10``, ``w1 = 5``, ``w2 = -2``, 000 §4.2). ``positions="index"``
takes the positions as sentence numbers (the paper's wording); ``"relative"`` divides each by
its document's length, so that ``f2`` lies in [0, 1] whatever the documents' lengths.

Read literally, every vote adds ``-r`` (-1 to -N): a document that collects many votes (its
sentences are among the neighbours of many source sentences, as a translation's are) sums
many negative terms, and one with a single lucky vote wins. ``rank="inverted"`` adds
``N + 1 - r`` instead (N for a first neighbour down to 1), so that every vote counts for the
document; ``python -m benchmarks.docs_match`` measures both (docs/decisions.md).

Baselines: the number of mutually best sentence pairs linking the two documents (000 Table
4's "counting aligned sentences"), and the cosine of document embeddings, each the average
of its sentences' embeddings (001 §5.3).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from bimine.config import bounds, check_fields
from bimine.errors import ConfigError
from bimine.index.faiss_index import IndexConfig, KeyIndex

POSITIONS = ("index", "relative")
RANKS = ("negative", "inverted")


@dataclass(frozen=True)
class Eq3Config:
    """Eq. 3's settings; the defaults are the best measured on the dev benchmark, the paper's
    literal variant is ``rank="negative", positions="index"`` (docs/decisions.md)."""

    n: int = field(default=10, metadata=bounds(min=1))  #: neighbours per source sentence
    w1: float = 5.0  #: weight of the calibrated confidence
    w2: float = -2.0  #: weight of the position difference
    positions: str = "relative"  #: "index" (sentence numbers, as 000) or "relative" (number / length)
    rank: str = "inverted"  #: "negative" (-r, as 000) or "inverted" (N + 1 - r: every vote counts for)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.positions not in POSITIONS:
            raise ConfigError(f"positions must be one of {', '.join(POSITIONS)}, got {self.positions!r}")
        if self.rank not in RANKS:
            raise ConfigError(f"rank must be one of {', '.join(RANKS)}, got {self.rank!r}")


@dataclass
class PairScores:
    """Sparse scores: ``src[k]`` (source document) with ``tgt[k]`` (target document) scored
    ``score[k]``; ``votes[k]`` neighbour pairs contributed. Sorted by source, then score
    (best first)."""

    src: np.ndarray
    tgt: np.ndarray
    score: np.ndarray
    votes: np.ndarray

    def ranks(self) -> np.ndarray:
        """1-based rank of each pair among its source document's pairs."""
        if not len(self.src):
            return np.zeros(0, np.int64)
        starts = np.r_[0, np.flatnonzero(self.src[1:] != self.src[:-1]) + 1]
        return np.arange(len(self.src)) - np.repeat(starts, np.diff(np.r_[starts, len(self.src)])) + 1

    def best(self) -> PairScores:
        """The best target document of every source document that has one."""
        return self.top(1)

    def top(self, k: int) -> PairScores:
        """The ``k`` best target documents of every source document."""
        keep = self.ranks() <= k
        return PairScores(self.src[keep], self.tgt[keep], self.score[keep], self.votes[keep])


def sorted_pairs(src: np.ndarray, tgt: np.ndarray, score: np.ndarray, votes: np.ndarray) -> PairScores:
    order = np.lexsort((tgt, -score, src))  # by source, best score first, ties by target number
    return PairScores(src[order].astype(np.int64), tgt[order].astype(np.int64), score[order].astype(np.float64),
                      votes[order].astype(np.int64))


def _aggregate(src_doc: np.ndarray, tgt_doc: np.ndarray, values: np.ndarray, n_tgt_docs: int) -> PairScores:
    key = src_doc.astype(np.int64) * n_tgt_docs + tgt_doc.astype(np.int64)
    uniq, inv = np.unique(key, return_inverse=True)
    total = np.bincount(inv, weights=values, minlength=len(uniq))
    votes = np.bincount(inv, minlength=len(uniq))
    return sorted_pairs(uniq // n_tgt_docs, uniq % n_tgt_docs, total, votes)


def eq3_scores(nbr: np.ndarray, conf: np.ndarray, src_doc: np.ndarray, src_pos: np.ndarray, src_len: np.ndarray,
               tgt_doc: np.ndarray, tgt_pos: np.ndarray, tgt_len: np.ndarray, config: Eq3Config = Eq3Config(),
               *, n_tgt_docs: int | None = None) -> PairScores:
    """Eq. 3 for every (source document, target document) that gets a vote.

    ``nbr[i, r]``: the target sentence at rank ``r + 1`` for source sentence ``i`` (-1: none);
    ``conf[i, r]``: its calibrated confidence. ``*_doc`` / ``*_pos``: each sentence's document
    number and position in it; ``*_len``: each document's number of sentences.
    """
    nbr = np.asarray(nbr, np.int64)
    n, k = nbr.shape
    k = min(k, config.n)
    nbr, conf = nbr[:, :k], np.asarray(conf, np.float64)[:, :k]
    ok = nbr >= 0
    rows = np.repeat(np.arange(n), k).reshape(n, k)[ok]
    ranks = np.tile(np.arange(1, k + 1), (n, 1))[ok]
    ys = nbr[ok]
    sp, tp = src_pos[rows].astype(np.float64), tgt_pos[ys].astype(np.float64)
    if config.positions == "relative":
        sp = sp / np.maximum(src_len[src_doc[rows]], 1)
        tp = tp / np.maximum(tgt_len[tgt_doc[ys]], 1)
    rank_term = -ranks if config.rank == "negative" else (k + 1 - ranks)
    values = rank_term + config.w1 * conf[ok] + config.w2 * np.abs(sp - tp)
    nt = int(n_tgt_docs if n_tgt_docs is not None else (tgt_doc.max() + 1 if len(tgt_doc) else 1))
    return _aggregate(src_doc[rows], tgt_doc[ys], values, nt)


def mutual_best_counts(fwd: np.ndarray, bwd: np.ndarray, src_doc: np.ndarray, tgt_doc: np.ndarray,
                       *, n_tgt_docs: int | None = None) -> PairScores:
    """The baseline: for each document pair, how many sentence pairs are each other's
    nearest neighbour (``fwd[i]``: the nearest target of source sentence ``i``; ``bwd[j]``:
    the nearest source of target sentence ``j``; -1 for none)."""
    fwd, bwd = np.asarray(fwd, np.int64), np.asarray(bwd, np.int64)
    i = np.flatnonzero(fwd >= 0)
    j = fwd[i]
    mutual = bwd[j] == i
    i, j = i[mutual], j[mutual]
    nt = int(n_tgt_docs if n_tgt_docs is not None else (tgt_doc.max() + 1 if len(tgt_doc) else 1))
    return _aggregate(src_doc[i], tgt_doc[j], np.ones(len(i)), nt)


def document_embeddings(shards: Iterable[tuple[int, np.ndarray]], offsets: np.ndarray, dim: int) -> np.ndarray:
    """Average of each document's sentence embeddings, L2-normalised (001 §5.3), from the
    sentence embeddings given as ``(first row, rows)`` shards (an embedding store's
    ``iter_shards()``, or ``[(0, array)]``); a document without sentences gets a zero row
    (it matches nothing)."""
    n_docs = len(offsets) - 1
    doc = np.repeat(np.arange(n_docs), np.diff(offsets))
    sums = np.zeros((n_docs, dim), np.float64)
    for start, a in shards:
        np.add.at(sums, doc[start: start + len(a)], np.asarray(a, np.float64))
    mean = sums / np.maximum(np.diff(offsets), 1)[:, None]
    return (mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def nearest_documents(src_docs: np.ndarray, tgt_docs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Cosines and numbers of the ``k`` nearest target documents of each source document
    (exact inner-product search with FAISS; -1 where there are fewer targets)."""
    idx = KeyIndex(tgt_docs.shape[1], len(tgt_docs), IndexConfig(factory="Flat"))
    idx.add(tgt_docs)
    return idx.search(src_docs, min(k, len(tgt_docs)))


def embedding_scores(src_docs: np.ndarray, tgt_docs: np.ndarray, k: int) -> PairScores:
    """The ``k`` target documents of highest cosine for each source document (votes 0)."""
    sims, ids = nearest_documents(src_docs, tgt_docs, k)
    ok = ids >= 0
    src = np.repeat(np.arange(len(src_docs)), ids.shape[1]).reshape(ids.shape)[ok]
    return sorted_pairs(src, ids[ok], sims[ok].astype(np.float64), np.zeros(int(ok.sum())))


def one_to_one(p: PairScores) -> PairScores:
    """Greedy one-to-one selection: pairs by decreasing score, each document used once."""
    order = np.lexsort((p.tgt, p.src, -p.score))
    used_s, used_t, keep = set(), set(), []
    for k in order:
        s, t = int(p.src[k]), int(p.tgt[k])
        if s in used_s or t in used_t:
            continue
        used_s.add(s)
        used_t.add(t)
        keep.append(k)
    keep = np.array(sorted(keep), dtype=np.int64)
    return PairScores(p.src[keep], p.tgt[keep], p.score[keep], p.votes[keep])
