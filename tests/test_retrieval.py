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


def _run_cli(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "bimine.cli.main", *map(str, args)], capture_output=True, text=True)


def test_eval_retrieval_refuses_files_without_a_pair(tmp_path):
    """Issue 41: on empty inputs 'eval retrieval' printed P@N 0.00 with n = 0 and exited 0 (eval
    bucc refuses the same); now a one-line error."""
    (tmp_path / "a").write_text("")
    (tmp_path / "b").write_text("")
    (tmp_path / "c").write_text("\n  \n")
    (tmp_path / "d").write_text("x\n\n")
    for src, tgt, says in (("a", "b", "both are empty"), ("c", "d", "2 line pair(s), each with an empty side")):
        r = _run_cli("eval", "retrieval", tmp_path / src, tmp_path / tgt, "--src-lang", "en", "--tgt-lang", "fr")
        assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
        assert r.stderr.startswith("error: ") and len(r.stderr.splitlines()) == 1, r.stderr
        assert "no line pair with text on both sides" in r.stderr and says in r.stderr


def test_eval_retrieval_warns_when_both_sides_are_the_same_text(tmp_path):
    """Issue 41: one file given twice reported P@1 100 % without a word; now a one-line warning
    (the same file, or a copy), and none for real translations."""
    from pathlib import Path

    ex = Path(__file__).resolve().parents[1] / "examples"
    en = ex / "sample.en"
    (tmp_path / "copy.en").write_bytes(en.read_bytes())
    base = ("--src-lang", "en", "--tgt-lang", "fr", "--max-lines", "40")
    for tgt, says in ((en, "are the same file"), (tmp_path / "copy.en", "hold the same text on every line")):
        r = _run_cli("eval", "retrieval", en, tgt, *base)
        assert r.returncode == 0, r.stderr
        warnings = [x for x in r.stderr.splitlines() if x.startswith("warning:")]
        assert len(warnings) == 1 and says in warnings[0] and "100 %" in warnings[0], r.stderr
    r = _run_cli("eval", "retrieval", en, ex / "sample.fr", *base, "--json")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert '"same_text": 0' in r.stdout
