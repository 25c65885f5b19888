"""Key shards searched separately and merged exactly (issue 13: search as stopes does it)."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.index.faiss_index import IndexConfig, KeyIndex, array_shards, merge_topk, sample_rows

pytest.importorskip("faiss")


def _unit(n, d, seed):
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_merge_topk_against_brute_force_with_ties():
    rng = np.random.default_rng(0)
    keys = np.round(rng.standard_normal((300, 8)), 1).astype(np.float32)  # rounded: many tied scores
    q = np.round(rng.standard_normal((40, 8)), 1).astype(np.float32)
    full = q @ keys.T
    k = 7
    bounds = [0, 50, 51, 180, 300]
    parts = []
    for a, b in zip(bounds, bounds[1:]):
        s = full[:, a:b]
        o = np.lexsort((np.arange(b - a)[None, :].repeat(len(q), 0), -s), axis=1)[:, :k]
        parts.append((np.take_along_axis(s, o, 1), o, a))
    sims, ids = merge_topk(parts, k)
    ref = np.lexsort((np.arange(300)[None, :].repeat(len(q), 0), -full), axis=1)[:, :k]
    assert np.array_equal(ids, ref)
    assert np.array_equal(sims, np.take_along_axis(full, ref, 1))


def test_merge_topk_puts_missing_neighbours_last():
    parts = [(np.array([[0.9, -np.inf]], np.float32), np.array([[3, -1]]), 0),
             (np.array([[0.5, 0.4]], np.float32), np.array([[0, 1]]), 10)]
    sims, ids = merge_topk(parts, 4)
    assert ids.tolist() == [[3, 10, 11, -1]]
    assert sims[0, :3].tolist() == pytest.approx([0.9, 0.5, 0.4])


@pytest.mark.parametrize("factory,nprobe", [("Flat", 0), ("IVF16,Flat", 4),
                                            pytest.param("IVF16,PQ8", 4, marks=pytest.mark.slow),  # 12 s: -m slow
                                            ("IVF16,PQ16x4fs", 4)])
def test_sharded_search_equals_one_index_with_the_same_quantiser(factory, nprobe):
    d, n, k = 32, 3000, 5
    keys, queries = _unit(n, d, 1), _unit(200, d, 2)
    cfg = IndexConfig(factory=factory, nprobe=nprobe)
    trained = KeyIndex(d, n, cfg)
    trained.train(sample_rows(array_shards(keys), n, 1000, 0))
    whole = trained.copy()
    whole.add(keys)
    s1, i1 = whole.search(queries, k)
    parts = []
    for a, b in ((0, 700), (700, 2100), (2100, n)):  # uneven shards, each filled from the same training
        shard = trained.copy()
        shard.add(keys[a:b])
        s, i = shard.search(queries, k)
        parts.append((s, i, a))
    s2, i2 = merge_topk(parts, k)
    assert np.array_equal(s1, s2)  # the same codes give the same scores, bit for bit
    # the same neighbours, up to the order of equal scores (fast-scan PQ quantises scores: ties)
    for a, b, s in zip(i1, i2, s1):
        above = s > s[-1]
        assert set(a[above]) == set(b[above])
        assert np.array_equal(a[~above] >= 0, b[~above] >= 0)
    assert (i1 == i2).mean() > 0.9


@pytest.mark.parametrize("factory", ["Flat", pytest.param("IVF16,PQ8", marks=pytest.mark.slow)])  # 12 s: -m slow
def test_sharded_knn_equals_one_index(factory):
    from bimine.index.faiss_index import sharded_knn

    d, n, k = 32, 2000, 4
    keys, queries = _unit(n, d, 3), _unit(300, d, 4)
    trained = KeyIndex(d, n, IndexConfig(factory=factory, nprobe=4))
    trained.train(sample_rows(array_shards(keys), n, 1000, 0))
    whole = trained.copy()
    whole.add(keys)
    s1, i1 = merge_topk([(*whole.search(queries, k), 0)], k)  # one index, ties ordered by id
    s2, i2 = sharded_knn(trained, [keys[:500], keys[500:1700], keys[1700:]], [queries[:120], queries[120:]], k)
    assert np.array_equal(s1, s2) and np.array_equal(i1, i2)


@pytest.mark.parametrize("factory", ["Flat", "IVF16,PQ16x4fs,Refine(SQfp16)"])
def test_mining_search_gives_the_same_bytes_with_any_number_of_threads(monkeypatch, factory):
    """FAISS's scores depend at the last bit on its threads and BLAS shapes; the mining search
    (one index per key shard, fixed query chunks on one thread each) must not."""
    import bimine.index.faiss_index as fi

    monkeypatch.setattr(fi, "SEARCH_CHUNK", 1500)  # chunks of 1500 and 500 rows
    d = 64
    keys, queries = _unit(6000, d, 3), _unit(4000, d, 4)  # big enough for BLAS to use 2 threads
    cfg = IndexConfig(factory=factory, nprobe=4)
    got = {}
    for t in (1, 2, 3):
        index = fi.build_sharded_index(fi.array_shards(keys, 2500), len(keys), d, cfg, threads=t)
        assert len(index.parts) == 3
        got[t] = fi.knn_search(index, fi.array_shards(queries, 2000)(), len(queries), 4, threads=t)
    for t in (2, 3):
        assert got[t][0].tobytes() == got[1][0].tobytes() and np.array_equal(got[t][1], got[1][1])


def test_valid_parts_in_pieces_cover_the_valid_rows_in_order():
    """Pieces of the shards' valid rows (search tasks finer than a shard): every valid row once,
    in order, no piece across a shard boundary, each piece at most ``piece_rows``."""
    from bimine.mining.pipeline import Side
    from bimine.store.store import ArrayRows

    x = np.arange(50, dtype=np.float32)[:, None] * np.ones((1, 3), np.float32)
    valid = np.setdiff1d(np.arange(50), [0, 7, 8, 31, 49])
    side = Side(50, 3, [(0, 20, ArrayRows(x[:20])), (20, 30, ArrayRows(x[20:]))], valid)
    whole = np.concatenate([a for _, a in side.valid_shards()])
    for piece_rows in (1, 4, 7, 25, 100):
        parts = side.valid_parts(piece_rows)
        got = [(pos, read()) for pos, read in parts]
        assert all(len(a) <= piece_rows for _, a in got)
        assert [pos for pos, _ in got] == np.cumsum([0] + [len(a) for _, a in got])[:-1].tolist()
        assert np.array_equal(np.concatenate([a for _, a in got]), whole)
        assert np.array_equal(whole[:, 0], valid.astype(np.float32))
        # no piece holds rows of both shards
        assert all((a[:, 0] < 20).all() or (a[:, 0] >= 20).all() for _, a in got)
    with pytest.raises(ValueError):
        side.valid_parts(0)
