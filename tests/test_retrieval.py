from __future__ import annotations

import numpy as np

from bimine.eval.retrieval import evaluate_retrieval, precision_at


def test_precision_matches_brute_force_with_duplicates():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((40, 6)).astype(np.float32)
    k = q + 0.8 * rng.standard_normal(q.shape).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    k /= np.linalg.norm(k, axis=1, keepdims=True)
    texts = [f"t{i % 30}" for i in range(40)]  # rows 30..39 repeat texts of rows 0..9
    got = precision_at(q, k, texts, (1, 3, 10)).precision
    full = q @ k.T
    for n in (1, 3, 10):
        hits = 0
        for i in range(40):
            top = np.argsort(-full[i])[:n]
            hits += any(texts[t] == texts[i] for t in top)
        assert got[n] == hits / 40


def test_both_directions():
    e = np.eye(5, dtype=np.float32)
    r = evaluate_retrieval(e, e, list("abcde"), list("vwxyz"))
    assert r["src2tgt"].precision[1] == 1.0 and r["tgt2src"].precision[1] == 1.0
