"""k-nearest-neighbour search by inner product (cosine on unit-norm rows) with FAISS."""

from __future__ import annotations

import numpy as np


def knn_exact(
    queries: np.ndarray, keys: np.ndarray, k: int, *, batch_size: int = 16384
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` by inner product: ``(scores, indices)``, each ``(len(queries), k)``.

    Uses ``faiss.IndexFlatIP``; queries are searched in batches so the score buffer stays
    at ``batch_size * k`` entries. ``k`` is clipped to ``len(keys)``.
    """
    import faiss

    k = min(k, len(keys))
    q = np.ascontiguousarray(queries, dtype=np.float32)
    x = np.ascontiguousarray(keys, dtype=np.float32)
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x)
    scores = np.empty((len(q), k), dtype=np.float32)
    idx = np.empty((len(q), k), dtype=np.int64)
    for i in range(0, len(q), batch_size):
        scores[i : i + batch_size], idx[i : i + batch_size] = index.search(q[i : i + batch_size], k)
    return scores, idx
