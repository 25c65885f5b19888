"""The combined `score` orders pairs from clean to noisy (issue 42): hard rules inside it, a
trained combination of graded evidence on a fixed scale, the same column from score and filter."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bimine.cli import classifier, filter  # noqa: F401  (registers train-classifier, score and filter)
from bimine.cli.main import cli

EX = Path(__file__).resolve().parents[1] / "examples"
PAIR = ["--src-lang", "en", "--tgt-lang", "fr"]


def _tsv(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").rstrip("\n").split("\n")
    head = lines[0].split("\t")
    return [dict(zip(head, ln.split("\t"))) for ln in lines[1:]]


def _run(*args) -> tuple[int, str]:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r.exit_code, r.output


def test_logistic_combiner_equals_the_formula():
    from bimine.filtering.combine import LogisticCombiner, transform

    cols = {"confidence": np.array([0.9, 0.2, np.nan]), "cosine": np.array([0.8, 0.1, 0.5]),
            "punct": np.array([2.0, 1.0, 0.0])}
    c = LogisticCombiner(["conf_logit", "cosine", "punct_both"], mean=np.array([0.5, 0.3, 0.4]),
                         scale=np.array([2.0, 0.5, 1.0]), weights=np.array([1.5, -0.5, 2.0]), bias=-0.25)
    want = []
    for i in range(3):
        p = min(max(0.5 if math.isnan(cols["confidence"][i]) else cols["confidence"][i], 1e-4), 1 - 1e-4)
        x = [math.log(p / (1 - p)), cols["cosine"][i], float(cols["punct"][i] == 2)]
        z = -0.25 + sum(w * (xi - m) / s for w, xi, m, s in zip([1.5, -0.5, 2.0], x, [0.5, 0.3, 0.4], [2.0, 0.5, 1.0]))
        want.append(1 / (1 + math.exp(-z)))
    np.testing.assert_allclose(c.probability(cols), want, rtol=1e-12)
    np.testing.assert_allclose(transform("log_repeat", {"repeat": np.array([1.0, 4.0])}), [0.0, math.log(4)])
    back = LogisticCombiner.from_dict(c.to_dict())
    np.testing.assert_allclose(back.probability(cols), want, rtol=1e-12)


def test_fit_logistic_recovers_a_separable_direction_and_is_deterministic():
    from bimine.scoring.logistic import fit_logistic, sigmoid

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 3))
    y = (rng.random(2000) < sigmoid(2.0 * x[:, 0] - 1.0 * x[:, 2])).astype(float)
    mean, scale, w, b = fit_logistic(x, y)
    w_raw = w / scale
    assert w_raw[0] == pytest.approx(2.0, abs=0.3) and w_raw[2] == pytest.approx(-1.0, abs=0.3)
    assert abs(w_raw[1]) < 0.2
    again = fit_logistic(x, y)
    np.testing.assert_array_equal(w, again[2])


HARD = {  # a pair failing one hard rule, in a corpus of real translations
    "empty": ("The meeting starts at noon.", ""),
    "identical": ("The meeting starts at noon.", "The meeting starts at noon."),
    "copy": ("The committee approved the new budget after a long debate.",
             "the committee approved the budget after a long debate"),
    "numbers": ("The company hired 250 people in 2019.", "L'entreprise a embauché 380 personnes en 2019."),
    "length_ratio": ("Yes.", "Oui, c'est exactement ce que nous avons décidé hier soir après une très longue réunion."),
    "lang": ("The weather will be sunny tomorrow.", "Das Wetter wird morgen sonnig sein."),
    "urls": ("See https://example.org/a for details.", "Voir https://example.com/b pour les détails."),
}


def test_every_hard_rule_puts_a_failing_pair_below_every_clean_translation(tmp_path):
    clean = [line.split("\t") for line in (EX / "dev.en-fr.tsv").read_text().splitlines()[:60]]
    rows = clean + list(HARD.values())
    tsv = tmp_path / "in.tsv"
    tsv.write_text("".join(f"{a}\t{b}\n" for a, b in rows))
    code, out = _run("score", tsv, *PAIR, "-o", tmp_path / "s.tsv")
    assert code == 0, out
    got = _tsv(tmp_path / "s.tsv")
    score = np.array([float(r["score"]) for r in got])
    assert ((score >= 0) & (score <= 1)).all()
    bad = score[len(clean):]
    assert (bad == 0).all(), dict(zip(HARD, bad))
    # the clean translations that pass every rule (nearly all) score above every failing pair
    assert (score[: len(clean)] > 0).mean() >= 0.9
    assert np.median(score[: len(clean)]) > 0.5


def test_a_three_pair_input_gets_sensible_scores_and_a_note(tmp_path):
    tsv = tmp_path / "t.tsv"
    tsv.write_text("Price: 45 euros\tPrix : 99 euros\n"
                   "I like apples very much.\tJ'aime beaucoup les pommes.\n"
                   "The cat sits on the mat.\tThe cat sits on the mat.\n")
    code, out = _run("score", tsv, *PAIR, "-o", tmp_path / "s.tsv")
    assert code == 0, out
    assert "margin is left out of score" in out
    s = [float(r["score"]) for r in _tsv(tmp_path / "s.tsv")]
    assert s[0] == 0 and s[2] == 0 and s[1] > 0.5


def test_score_and_filter_write_the_same_score_column(tmp_path):
    a = tmp_path / "s.tsv"
    b = tmp_path / "f.tsv"
    assert _run("score", "--src", EX / "sample.en", "--tgt", EX / "sample.fr", *PAIR, "-o", a)[0] == 0
    assert _run("filter", "--src", EX / "sample.en", "--tgt", EX / "sample.fr", *PAIR, "-o", b)[0] == 0
    assert [r["score"] for r in _tsv(a)] == [r["score"] for r in _tsv(b)]


def test_the_readmes_shuffled_sample_is_dropped_and_warned_about(tmp_path):
    """examples/sample.en/.fr are shuffled: none of the 360 pairs is a translation."""
    code, out = _run("filter", "--src", EX / "sample.en", "--tgt", EX / "sample.fr", *PAIR, "-o", tmp_path / "o.tsv")
    assert code == 0, out
    rows = _tsv(tmp_path / "o.tsv")
    kept = sum(r["keep"] == "1" for r in rows)
    assert kept <= len(rows) * 0.05, kept
    assert "warning: " in out and "do not look like translations" in out


def test_real_translations_are_kept_by_the_default_cut(tmp_path):
    code, out = _run("filter", EX / "dev.en-fr.tsv", *PAIR, "-o", tmp_path / "o.tsv")
    assert code == 0, out
    rows = _tsv(tmp_path / "o.tsv")
    assert sum(r["keep"] == "1" for r in rows) >= 0.9 * len(rows)
    assert "do not look like translations" not in out


def test_sum_and_minmax_stay_available(tmp_path):
    for mode in ("sum", "minmax"):
        y = tmp_path / f"{mode}.yaml"
        y.write_text(f"combine: {mode}\nfilters:\n  - rule: empty\n  - score: cosine\n  - score: margin\n")
        code, out = _run("score", EX / "dev.en-fr.tsv", *PAIR, "-c", y, "-o", tmp_path / f"{mode}.tsv")
        assert code == 0, out
        rows = _tsv(tmp_path / f"{mode}.tsv")
        cos = np.array([float(r["cosine"]) for r in rows])
        mar = np.array([float(r["margin"]) for r in rows])
        total = np.array([float(r["score"]) for r in rows])
        if mode == "sum":
            np.testing.assert_allclose(total, cos + mar, atol=2e-5)
        else:
            def mm(v):
                return (v - v.min()) / (v.max() - v.min())
            np.testing.assert_allclose(total, mm(cos) + mm(mar), atol=2e-5)


def test_a_classifier_on_the_command_line_takes_part_in_the_decision(tmp_path):
    """Before issue 42, `--classifier conf.safetensors` changed nothing: pairs with confidence
    1.9e-08 were kept. Now its stored threshold decides too, and its log-odds enter `score`."""
    pytest.importorskip("torch")
    clf = tmp_path / "conf.safetensors"
    code, out = _run("train-classifier", "confidence", EX / "train.en-fr.tsv", *PAIR, "-o", clf, "--dev-size", "200")
    assert code == 0, out
    code, out = _run("filter", "--src", EX / "sample.en", "--tgt", EX / "sample.fr", *PAIR, "-o", tmp_path / "o.tsv",
                     "--classifier", clf)
    assert code == 0, out
    rows = _tsv(tmp_path / "o.tsv")
    assert "confidence_classifier" in rows[0]  # named apart from the pipeline's own confidence column
    low = [r for r in rows if float(r["confidence_classifier"]) < 0.01]
    assert low and all(r["keep"] == "0" for r in low)
    # its log-odds are part of score: the same pairs without it score higher where it is low
    code, _ = _run("score", "--src", EX / "sample.en", "--tgt", EX / "sample.fr", *PAIR, "-o", tmp_path / "p.tsv")
    plain = {i: float(r["score"]) for i, r in enumerate(_tsv(tmp_path / "p.tsv"))}
    both = [(plain[i], float(r["score"])) for i, r in enumerate(rows)
            if float(r["confidence_classifier"]) < 0.01 and plain[i] > 0]
    assert both and all(b < a for a, b in both)
