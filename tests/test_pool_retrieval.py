"""benchmarks.pool_retrieval: R@k by cosine and by margin against a plain loop, the halves, the
served side of ``--as-mined``."""

from __future__ import annotations

import numpy as np

from benchmarks import pool_retrieval as P


def _naive(q, pool, gold, k):
    s = q @ pool.T
    n_q, n_p = s.shape
    out = {}
    fwd = [sorted(s[i], reverse=True)[:k] for i in range(n_q)]
    bwd = [sorted(s[:, j], reverse=True)[:k] for j in range(n_p)]
    margin = np.array([[s[i, j] / ((sum(fwd[i]) / len(fwd[i]) + sum(bwd[j]) / len(bwd[j])) / 2)
                        for j in range(n_p)] for i in range(n_q)])
    for name, m in (("cos", s), ("margin", margin)):
        for r in P.RANKS:
            hits = 0
            for i in range(n_q):
                better = sum(1 for j in range(n_p) if m[i, j] > m[i, gold[i]])
                hits += better < r
            out[f"{name}_r{r}"] = round(100.0 * hits / n_q, 2)
    return out


def _unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float64)


def test_recalls_match_a_plain_loop():
    rng = np.random.default_rng(3)
    pool = _unit(rng.normal(size=(40, 8)))
    gold = rng.permutation(40)[:25]
    q = _unit(pool[gold] + rng.normal(scale=0.9, size=(25, 8)))  # noisy: some found first, some not
    got = P.recalls(q, pool, gold, k=4)
    assert got == _naive(q, pool, gold, 4)
    assert 0 < got["cos_r1"] < 100 and got["cos_r16"] > got["cos_r1"]


def test_recalls_by_hand():
    pool = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    q = np.array([[0.8, 0.6], [0.0, 1.0]])
    # query 0: cosines 0.8, 0.6, 0.96 -> its English (row 0) is second; query 1: 0, 1, 0.8 -> first
    got = P.recalls(q, pool, np.array([0, 1]), k=1)
    assert got["cos_r1"] == 50.0 and got["cos_r16"] == 100.0
    # k=1 margin: query 0's best is 0.96, row 0's best query is 0.8: 0.8 / 0.88 < 0.96 / 0.96 -> still second
    assert got["margin_r1"] == 50.0


def test_halves_leave_out_empty_pairs_of_the_test_half(tmp_path):
    en = tmp_path / "en.txt"
    xx = tmp_path / "xx.txt"
    n = P.SPLIT + 4
    en.write_text("".join(f"e{i}\n" if i != P.SPLIT + 1 else "\n" for i in range(n)), encoding="utf-8")
    xx.write_text("".join(f"x{i}\n" if i != P.SPLIT + 2 else " \n" for i in range(n)), encoding="utf-8")
    adapt, test, gold = P.ntrex_halves(str(en), str(xx))
    assert adapt == [f"x{i}" for i in range(P.SPLIT)]
    assert test == [f"x{P.SPLIT}", f"x{P.SPLIT + 3}"] and gold == [f"e{P.SPLIT}", f"e{P.SPLIT + 3}"]


def test_the_served_side_holds_no_test_english_and_keeps_the_order():
    pool = ["a", "b", "c", "d", "e"]
    assert P.served_side(pool, ["d", "b"]) == ["a", "c", "e"]


def test_an_adapted_row_is_kept_only_for_the_same_base_adaptation_and_pool():
    row = {"base_id": "dan-x", "adapt_version": P.FOLDER_VERSION, "pool": 25_000, "cos_r1": 60.0}
    assert P.adapted_earlier(row, "dan-x", 25_000)
    assert not P.adapted_earlier(row, "dan-y", 25_000)  # another base model
    assert not P.adapted_earlier({**row, "adapt_version": P.FOLDER_VERSION - 1}, "dan-x", 25_000)
    assert not P.adapted_earlier(row, "dan-x", 30_000)
    assert not P.adapted_earlier({k: v for k, v in row.items() if k != "base_id"}, "dan-x", 25_000)  # older file
    assert not P.adapted_earlier(None, "dan-x", 25_000)
