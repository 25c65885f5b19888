"""k-nearest-neighbour search by inner product (cosine on unit-norm rows) with FAISS."""

from __future__ import annotations

import numpy as np

from bimine.index.faiss_index import IndexConfig, KeyIndex, knn_search


def knn_exact(queries: np.ndarray, keys: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` by inner product: ``(scores, indices)``, each ``(len(queries), k)``.

    A "Flat" (exact inner product) :class:`KeyIndex`, searched in fixed chunks of queries
    (:func:`~bimine.index.faiss_index.search_stable`). ``k`` is clipped to ``len(keys)``.
    """
    k = min(k, len(keys))
    index = KeyIndex(keys.shape[1], len(keys), IndexConfig(factory="Flat"))
    index.add(keys)
    return knn_search(index, iter([(0, queries)]), len(queries), k)
