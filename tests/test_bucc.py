from __future__ import annotations

import numpy as np
import pytest

from bimine.errors import InputError
from bimine.eval.bucc import evaluate_at, make_newstest_bucc, pr_curve, read_bucc


def test_pr_curve_and_threshold_metrics():
    scores = np.array([0.9, 0.8, 0.7, 0.6])
    pairs = [("a", "1"), ("b", "9"), ("c", "3"), ("d", "4")]
    gold = {("a", "1"), ("c", "3"), ("e", "5")}
    c = pr_curve(scores, pairs, gold)
    np.testing.assert_allclose(c["precision"], [1, 0.5, 2 / 3, 0.5])
    np.testing.assert_allclose(c["recall"], [1 / 3, 1 / 3, 2 / 3, 2 / 3])
    r = evaluate_at(scores, pairs, gold, 0.7)
    assert (r["kept"], r["precision"], r["recall"]) == (3, 2 / 3, 2 / 3)


def test_read_bucc_errors(tmp_path):
    (tmp_path / "s").write_text("s1\tHallo\ns2\tWelt\n")
    (tmp_path / "t").write_text("t1\tHello\n")
    (tmp_path / "g").write_text("s1\tt1\ns2\tt9\n")
    with pytest.raises(InputError, match=r"g:2: expected"):
        read_bucc(tmp_path / "s", tmp_path / "t", tmp_path / "g")
    (tmp_path / "s").write_text("s1 Hallo\n")
    with pytest.raises(InputError, match=r"s:1: expected '<id><TAB><sentence>'"):
        read_bucc(tmp_path / "s", tmp_path / "t", tmp_path / "g")


def test_newstest_bucc_construction(shared_data, tmp_path):
    make_newstest_bucc(str(shared_data / "dev/newstest"), "fr", str(tmp_path / "a"))
    make_newstest_bucc(str(shared_data / "dev/newstest"), "fr", str(tmp_path / "b"))
    for split in ("train", "test"):
        files = [f"fr-en.{split}.{e}" for e in ("fr", "en", "gold")]
        for f in files:  # deterministic
            assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
        sp = read_bucc(*(tmp_path / "a" / f for f in files))
        assert len(sp.gold) == 150
        for n in (len(sp.src), len(sp.tgt)):
            assert 0.02 <= len(sp.gold) / n <= 0.03  # about 2-3 % gold per side
        src = dict(zip(sp.src_ids, sp.src))
        gold_src = {src[s] for s, _ in sp.gold}
        assert sum(t in gold_src for t in sp.src) == len(gold_src)  # no distractor repeats a gold sentence
