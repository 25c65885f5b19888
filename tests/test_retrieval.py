from __future__ import annotations

import numpy as np

from bimine.eval.retrieval import evaluate_retrieval, precision_at


def test_precision_matches_brute_force_with_duplicates():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((40, 6)).astype(np.float32)
    k = q + 0.8 * rng.standard_normal(q.shape).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    k /= np.linalg.norm(k, axis=1, keepdims=True)
    qt = [f"q{i % 35}" for i in range(40)]  # queries 35..39 repeat queries 0..4 (other translations)
    kt = [f"t{i % 30}" for i in range(40)]  # targets 30..39 repeat targets 0..9
    gold = set(zip(qt, kt))
    got = precision_at(q, k, qt, kt, (1, 3, 10)).precision
    full = q @ k.T
    for n in (1, 3, 10):
        hits = 0
        for i in range(40):
            top = np.argsort(-full[i])[:n]
            hits += any((qt[i], kt[t]) in gold for t in top)
        assert got[n] == hits / 40


def test_another_translation_of_the_same_query_counts():
    # "I'm tired" has two French translations; retrieving either is right, a third sentence is not
    e = np.array([[1, 0], [1, 0], [0, 1]], np.float32)
    f = np.array([[0.6, 0.8], [1, 0], [0, 1]], np.float32)
    r = precision_at(e, f, ["tired", "tired", "cat"], ["fatigué", "fatiguée", "chat"], (1,))
    assert r.precision[1] == 1.0
    r = precision_at(e, f, ["tired", "sleepy", "cat"], ["fatigué", "fatiguée", "chat"], (1,))
    assert r.precision[1] == 2 / 3


def test_both_directions():
    e = np.eye(5, dtype=np.float32)
    r = evaluate_retrieval(e, e, list("abcde"), list("vwxyz"))
    assert r["src2tgt"].precision[1] == 1.0 and r["tgt2src"].precision[1] == 1.0
