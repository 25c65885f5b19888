"""Translation retrieval precision P@N (paper 000 Table 2; paper 001 Table 1).

Line i of the source file and line i of the target file are translations. For each source
sentence all target sentences of the file are ranked by cosine similarity; P@N is the share
of sources with a correct target among the N best. Test sets repeat sentences (tatoeba-test
has one English sentence with several translations, and repeated translations), so the
match is made on text: a retrieved target is correct when (query text, retrieved text) is
one of the file's gold pairs. This counts a duplicate of the gold target, and another gold
translation of the same query text, as correct; it is symmetric in the two directions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bimine.mining.knn import knn_exact


@dataclass
class RetrievalResult:
    """P@N for one direction, as fractions in [0, 1]."""

    n: int
    precision: dict[int, float]


def _ids(texts: list[str]) -> np.ndarray:
    table: dict[str, int] = {}
    return np.fromiter((table.setdefault(t, len(table)) for t in texts), dtype=np.int64, count=len(texts))


def precision_at(
    queries: np.ndarray,
    keys: np.ndarray,
    query_texts: list[str],
    key_texts: list[str],
    ks: tuple[int, ...] = (1, 3, 10),
) -> RetrievalResult:
    """P@k of retrieving a gold translation of ``query_texts[i]`` for ``queries[i]``.

    ``queries[i]`` and ``keys[i]`` are unit-norm float32 rows of a gold pair.
    """
    if len(queries) != len(keys):
        raise ValueError("queries and keys must have the same number of rows")
    n = len(queries)
    if n == 0:
        return RetrievalResult(0, {k: 0.0 for k in ks})
    kmax = min(max(ks), n)
    _, idx = knn_exact(queries, keys, kmax)
    qid, kid = _ids(query_texts), _ids(key_texts)
    width = int(kid.max()) + 1
    gold = np.unique(qid * width + kid)
    hit = np.isin(qid[:, None] * width + kid[idx], gold)
    first = np.where(hit.any(axis=1), hit.argmax(axis=1), kmax)
    return RetrievalResult(n, {k: float(np.mean(first < k)) for k in ks})


def evaluate_retrieval(
    src_emb: np.ndarray,
    tgt_emb: np.ndarray,
    src_texts: list[str],
    tgt_texts: list[str],
    ks: tuple[int, ...] = (1, 3, 10),
) -> dict[str, RetrievalResult]:
    """Both directions: ``{"src2tgt": ..., "tgt2src": ...}``."""
    return {
        "src2tgt": precision_at(src_emb, tgt_emb, src_texts, tgt_texts, ks),
        "tgt2src": precision_at(tgt_emb, src_emb, tgt_texts, src_texts, ks),
    }
