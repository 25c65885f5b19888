"""Translation retrieval precision P@N (paper 000 Table 2; paper 001 Table 1).

Line i of the source file and line i of the target file are translations. For each source
sentence all target sentences of the file are ranked by cosine similarity; P@N is the share
of sources whose translation is among the N best. Because test sets repeat sentences
(tatoeba-test), a retrieved target counts as correct when its *text* equals the gold
target's text, so a duplicate of the answer is not counted as an error.
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


def precision_at(
    queries: np.ndarray,
    keys: np.ndarray,
    key_texts: list[str],
    ks: tuple[int, ...] = (1, 3, 10),
) -> RetrievalResult:
    """P@k of retrieving ``keys[i]`` (or an identical text) for ``queries[i]``.

    ``queries`` and ``keys`` are unit-norm float32 rows of equal count.
    """
    if len(queries) != len(keys):
        raise ValueError("queries and keys must have the same number of rows")
    n = len(queries)
    if n == 0:
        return RetrievalResult(0, {k: 0.0 for k in ks})
    kmax = min(max(ks), n)
    _, idx = knn_exact(queries, keys, kmax)
    # map texts to ids so equality tests are integer comparisons
    ids: dict[str, int] = {}
    tid = np.fromiter((ids.setdefault(t, len(ids)) for t in key_texts), dtype=np.int64, count=n)
    hit = tid[idx] == tid[:, None]
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
        "src2tgt": precision_at(src_emb, tgt_emb, tgt_texts, ks),
        "tgt2src": precision_at(tgt_emb, src_emb, src_texts, ks),
    }
