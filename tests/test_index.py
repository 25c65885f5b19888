"""Every approximate index path against exact search on the same data."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.errors import ConfigError
from bimine.index.faiss_index import IndexConfig, array_shards, auto_factory, build_index, knn_search
from bimine.mining.knn import knn_exact


def clustered(n, d=32, centers=64, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centers, d)).astype(np.float32)
    x = c[rng.integers(0, centers, n)] + 0.5 * rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def recall_at(k, approx_ids, exact_ids):
    return np.mean([len(set(a) & set(e)) / k for a, e in zip(approx_ids[:, :k], exact_ids[:, :k])])


@pytest.mark.parametrize("factory,nprobe,min_recall", [
    ("Flat", 1, 1.0),
    ("IVF64,Flat", 16, 0.97),
    ("IVF64,SQ8", 16, 0.93),
    ("HNSW32", 1, 0.9),
    ("OPQ8,IVF64,PQ8", 16, 0.3),
])
def test_approximate_against_exact(factory, nprobe, min_recall):
    keys, queries = clustered(8000), clustered(500, seed=1)
    cfg = IndexConfig(factory=factory, nprobe=nprobe, train_size=4000)
    idx = build_index(array_shards(keys, 3000), len(keys), keys.shape[1], cfg)  # added shard by shard
    assert idx.ntotal == len(keys)
    sims, ids = knn_search(idx, array_shards(queries, 200)(), len(queries), 4, batch_size=128)
    es, ei = knn_exact(queries, keys, 4)
    r = recall_at(4, ids, ei)
    assert r >= min_recall, (factory, r)
    if factory == "Flat":
        np.testing.assert_array_equal(ids, ei)
        np.testing.assert_allclose(sims, es, rtol=1e-5)


def test_auto_factory_by_size():
    assert auto_factory(10_000, 384) == "Flat"
    assert auto_factory(1_000_000, 384).startswith("IVF4096")
    assert auto_factory(100_000_000, 384).startswith("OPQ64,IVF")


def test_bad_factory_and_too_small_training():
    with pytest.raises(ConfigError, match="invalid FAISS factory"):
        build_index(array_shards(clustered(100)), 100, 32, IndexConfig(factory="Nonsense42"))
    with pytest.raises(ConfigError, match="at least 64 training vectors"):
        build_index(array_shards(clustered(50)), 50, 32, IndexConfig(factory="IVF64,Flat"))
