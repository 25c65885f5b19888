"""kNN, margin scores and selection strategies against brute-force references."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.mining.knn import knn_exact
from bimine.mining.pipeline import mine_embeddings
from bimine.mining.select import select_pairs
from bimine.mining.spec import MineConfig
from bimine.scoring.margin import knn_mean, margin_score


def unit(rng, n, d=8):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_knn_exact_matches_brute_force(monkeypatch):
    import bimine.index.faiss_index as fi

    monkeypatch.setattr(fi, "SEARCH_CHUNK", 7)  # several chunks and a partial one
    rng = np.random.default_rng(0)
    q, x = unit(rng, 50), unit(rng, 70)
    s, i = knn_exact(q, x, 5)
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


@pytest.mark.parametrize("kind", ["eq9", "eq10"])
def test_paper001_scores_against_brute_force(kind):
    from bimine.scoring.margin import score_candidates

    rng = np.random.default_rng(3)
    x, y, k = unit(rng, 15, 6), unit(rng, 18, 6), 4
    sxy, ixy = knn_exact(x, y, k)
    syx, iyx = knn_exact(y, x, k)
    fwd, bwd = score_candidates(kind, k, sxy, ixy, syx, iyx)
    full = x @ y.T

    def nn_mean_x(a):
        return np.sort(full[a])[::-1][:k].mean()

    def nn_mean_y(b):
        return np.sort(full[:, b])[::-1][:k].mean()

    for a in range(15):
        for c in range(k):
            b, cos = ixy[a, c], full[a, ixy[a, c]]
            if kind == "eq9":  # 001 Eq. 9: sum_{NN(x)} phi/2k + sum_{NN(y)} phi/2k, cosine added
                m = sum(np.sort(full[a])[::-1][:k]) / (2 * k) + sum(np.sort(full[:, b])[::-1][:k]) / (2 * k)
            else:  # Eq. 10: the query's own k neighbours only
                m = nn_mean_x(a)
            assert fwd[a, c] == pytest.approx(cos / m + cos, rel=1e-4)
    for b in range(18):
        for c in range(k):
            a, cos = iyx[b, c], full[iyx[b, c], b]
            m = (nn_mean_x(a) + nn_mean_y(b)) / 2 if kind == "eq9" else nn_mean_y(b)
            assert bwd[b, c] == pytest.approx(cos / m + cos, rel=1e-4)


def test_greedy_uses_all_candidates_one_to_one():
    # every candidate of both directions, by score: (.9,0,0) taken, (.8,1,0) blocked by target 0,
    # (.7,1,1) taken, (.6,1,2) blocked by source 1, (.5,0,1) blocked, (.4,2,2) taken
    s, i, j = select_pairs(FWD_S, FWD_C, BWD_S, BWD_C, "greedy")
    got = list(zip([round(v, 3) for v in s.tolist()], i.tolist(), j.tolist()))
    assert got == [(0.9, 0, 0), (0.7, 1, 1), (0.4, 2, 2)]
    assert len(set(i.tolist())) == len(i) and len(set(j.tolist())) == len(j)


def test_greedy_matches_naive_one_to_one():
    rng = np.random.default_rng(5)
    fs, bs = rng.random((30, 4)), rng.random((25, 4))
    fc, bc = rng.integers(0, 25, (30, 4)), rng.integers(0, 30, (25, 4))
    s, i, j = select_pairs(fs, fc, bs, bc, "greedy")
    cands = [(fs[a, c], a, fc[a, c]) for a in range(30) for c in range(4)]
    cands += [(bs[b, c], bc[b, c], b) for b in range(25) for c in range(4)]
    cands.sort(key=lambda t: -t[0])
    used_a, used_b, want = set(), set(), []
    for _sc, a, b in cands:
        if a not in used_a and b not in used_b:
            used_a.add(a)
            used_b.add(b)
            want.append((a, b))
    assert list(zip(i.tolist(), j.tolist())) == [(int(a), int(b)) for a, b in want]


def test_blank_rows_are_never_mined():
    from bimine.mining.pipeline import mine_sides, side_from_array

    rng = np.random.default_rng(4)
    x = unit(rng, 10)
    valid = np.array([0, 2, 3, 5, 6, 7, 8, 9])
    s, i, j = mine_sides(side_from_array(x, valid), side_from_array(x.copy(), valid), MineConfig())
    assert set(i.tolist()) <= set(valid.tolist()) and set(j.tolist()) <= set(valid.tolist())
    assert np.all(i == j) and len(i) == len(valid)


def test_copy_key():
    from bimine.mining.pipeline import copy_key

    assert copy_key("Hello, World 2024!") == copy_key("hello world.")
    assert copy_key("Bonjour") != copy_key("Hello")
