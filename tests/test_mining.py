"""kNN, margin scores and selection strategies against brute-force references."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.mining.knn import knn_exact
from bimine.mining.margin import knn_mean, margin_score
from bimine.mining.pipeline import MineConfig, mine_embeddings
from bimine.mining.select import select_pairs


def unit(rng, n, d=8):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_knn_exact_matches_brute_force():
    rng = np.random.default_rng(0)
    q, x = unit(rng, 50), unit(rng, 70)
    s, i = knn_exact(q, x, 5, batch_size=7)
    full = q @ x.T
    want = np.argsort(-full, axis=1)[:, :5]
    np.testing.assert_array_equal(i, want)
    np.testing.assert_allclose(s, np.take_along_axis(full, want, 1), rtol=1e-5)


@pytest.mark.parametrize("kind", ["ratio", "distance", "absolute"])
def test_margin_matches_brute_force(kind):
    rng = np.random.default_rng(1)
    x, y, k = unit(rng, 20), unit(rng, 25), 4
    sxy, ixy = knn_exact(x, y, k)
    syx, _ = knn_exact(y, x, k)
    got = margin_score(sxy, knn_mean(sxy, k)[:, None], knn_mean(syx, k)[ixy], kind)
    full = x @ y.T
    for a in range(20):
        for c in range(k):
            b = ixy[a, c]
            mx = np.sort(full[a])[::-1][:k].mean()
            my = np.sort(full[:, b])[::-1][:k].mean()
            cos = full[a, b]
            want = {"ratio": cos / ((mx + my) / 2), "distance": cos - (mx + my) / 2, "absolute": cos}[kind]
            assert got[a, c] == pytest.approx(want, rel=1e-4, abs=1e-6)


# hand-made candidate lists: 3 sources, 3 targets, 2 candidates each
FWD_S = np.array([[0.9, 0.5], [0.8, 0.7], [0.4, 0.3]])
FWD_C = np.array([[0, 1], [0, 1], [2, 1]])
BWD_S = np.array([[0.9, 0.8], [0.7, 0.5], [0.6, 0.4]])
BWD_C = np.array([[0, 1], [1, 0], [1, 2]])


def pairs(strategy):
    s, i, j = select_pairs(FWD_S, FWD_C, BWD_S, BWD_C, strategy)
    return list(zip([round(v, 3) for v in s.tolist()], i.tolist(), j.tolist()))


def test_forward_and_backward():
    assert pairs("forward") == [(0.9, 0, 0), (0.8, 1, 0), (0.4, 2, 2)]
    assert pairs("backward") == [(0.9, 0, 0), (0.7, 1, 1), (0.6, 1, 2)]


def test_intersection_keeps_mutual_best():
    # source 0 <-> target 0 is mutual; source 1's best is target 0, whose best is source 0
    assert pairs("intersection") == [(0.9, 0, 0)]


def test_max_uses_each_sentence_once_by_score():
    # all candidates by score: (0.9,0,0) (0.9,0,0) (0.8,1,0)x (0.7,1,1) (0.6,1,2)x (0.4,2,2)
    assert pairs("max") == [(0.9, 0, 0), (0.7, 1, 1), (0.4, 2, 2)]


def test_mine_recovers_noisy_copies_and_threshold():
    rng = np.random.default_rng(2)
    x = unit(rng, 200, 32)
    noise = 0.1 * rng.standard_normal(x.shape).astype(np.float32)
    y = x + noise
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    perm = rng.permutation(200)
    y = y[perm]  # y[j] is the copy of x[perm[j]]
    s, i, j = mine_embeddings(x, y, MineConfig(strategy="intersection"))
    assert len(s) >= 195 and np.all(perm[j] == i)
    s2, _, _ = mine_embeddings(x, y, MineConfig(strategy="intersection", threshold=float(np.median(s))))
    assert 0 < len(s2) < len(s) and s2.min() >= np.median(s)


def test_mine_empty_input():
    s, i, j = mine_embeddings(np.zeros((0, 4), np.float32), np.ones((3, 4), np.float32), MineConfig())
    assert len(s) == len(i) == len(j) == 0
