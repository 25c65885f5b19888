"""Issue 55 §3: the divergence model's 'score' is a calibrated probability, not a raw output under
which most clean translations read as divergent (median 0.39 over the 300 clean NTREX pairs of
examples/dev.en-fr.tsv, 60 of 300 at least 0.5)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from bimine.errors import ConfigError
from bimine.scoring.divergence import DivergenceModel, PlattCalibration, default_path
from bimine.training.divergence import fit_platt

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EN = ["the house", "the book", "a book", "a house", "the small house", "a small book", "the red book",
      "a red house", "the small red house", "a small red book"]
DE = ["das haus", "das buch", "ein buch", "ein haus", "das kleine haus", "ein kleines buch", "das rote buch",
      "ein rotes haus", "das kleine rote haus", "ein kleines rotes buch"]


def _sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


# ---------------------------------------------------------------------- the map
def test_platt_map_against_a_hand_computation():
    cal = PlattCalibration(a=2.0, b=-1.0)
    # raw 0.2: logit = ln(0.2 / 0.8) = -1.386294; 2 * -1.386294 - 1 = -3.772589;
    # exp(3.772589) = 43.4925; 1 / 44.4925 = 0.0224757
    assert cal(np.array([0.2]))[0] == pytest.approx(0.0224757, abs=1e-6)
    assert cal(np.array([0.2]))[0] == pytest.approx(_sigmoid(2 * math.log(0.25) - 1), rel=1e-12)
    # raw 0.5: logit 0, so sigmoid(b)
    assert cal(np.array([0.5]))[0] == pytest.approx(_sigmoid(-1.0), rel=1e-12)
    # 0 and 1 are clipped to 1e-6 and 1 - 1e-6 (finite, inside (0, 1))
    lo, hi = cal(np.array([0.0, 1.0]))
    assert lo == pytest.approx(_sigmoid(2 * math.log(1e-6 / (1 - 1e-6)) - 1), rel=1e-9) and 0 < lo < hi < 1
    assert np.all(np.diff(cal(np.linspace(0, 1, 101))) >= 0)  # a > 0: the order is kept
    x = np.array([0.01, 0.3, 0.7, 0.99])
    np.testing.assert_allclose(cal.inverse(cal(x)), x, rtol=1e-9)


def test_fitted_map_against_the_closed_form():
    """Two raw values, each with its share of equivalent pairs: the maximum-likelihood map sends
    each value to its share. Raw 0.5 (logit 0): 1 of 4 equivalent; raw sigmoid(1) (logit 1): 3 of
    4. So b = logit(1/4) = -ln 3 and a + b = logit(3/4) = ln 3: a = 2 ln 3."""
    r1, r2 = 0.5, _sigmoid(1.0)
    raw = np.array([r1] * 4 + [r2] * 4)
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    cal = fit_platt(raw, y, balance=False)
    assert cal.a == pytest.approx(2 * math.log(3), abs=1e-7)
    assert cal.b == pytest.approx(-math.log(3), abs=1e-7)
    assert cal(np.array([r1, r2])) == pytest.approx([0.25, 0.75], abs=1e-7)
    # balance: the classes weigh the same whatever their counts (each divergent pair thrice: same map)
    raw3 = np.concatenate([raw, np.repeat(raw[y == 0], 2)])
    y3 = np.concatenate([y, np.zeros(2 * int((y == 0).sum()), int)])
    same = fit_platt(raw3, y3)
    assert (same.a, same.b) == pytest.approx((cal.a, cal.b), abs=1e-7)
    assert fit_platt(raw3, y3, balance=False).b < cal.b - 0.5  # unbalanced: the prior moves down


def test_a_map_that_would_reverse_the_order_is_refused():
    raw = np.array([0.9, 0.8, 0.2, 0.1])
    with pytest.raises(ConfigError, match="do not rank"):
        fit_platt(raw, np.array([0, 0, 1, 1]))
    with pytest.raises(ConfigError, match="one class"):
        fit_platt(raw, np.ones(4))
    with pytest.raises(ConfigError, match="above 0"):
        PlattCalibration.from_meta({"method": "platt", "a": -1.0, "b": 0.0})
    with pytest.raises(ConfigError, match="unknown divergence calibration"):
        PlattCalibration.from_meta({"method": "isotonic"})


# ---------------------------------------------------------------------- model files
@pytest.fixture(scope="module")
def mm_file(tmp_path_factory) -> Path:
    """A tiny M&M model (NumPy only) as train_mm writes it: no calibration."""
    from bimine.training.aligner import train_aligner
    from bimine.training.divergence import train_mm
    from bimine.training.divergence_data import build_examples

    al = train_aligner(EN * 3, DE * 3, model=2, iterations=10, src_lang="en", tgt_lang="de")
    ex, _ = build_examples(EN * 2, DE * 2, al, ratio=2, seed=0)
    path = tmp_path_factory.mktemp("cal") / "mm.safetensors"
    m = train_mm(ex, al, src_lang="en", tgt_lang="de")
    m.meta["threshold"] = 0.2
    m.save(path)
    return path


def test_a_model_file_without_calibration_loads_and_scores_raw(mm_file, tmp_path):
    m = DivergenceModel.load(mm_file)
    assert not m.calibrated and m.calibration is None
    raw = m.raw_score(EN, DE, src_lang="en", tgt_lang="de")
    np.testing.assert_array_equal(m.score(EN, DE, src_lang="en", tgt_lang="de"), raw)
    assert "carries no calibration" in m.calibration_note()
    # calibrated: score = the map of the raw score; the stored threshold is carried through the map
    cal = PlattCalibration(0.5, 1.0)
    m.set_calibration(cal, fitted_on="test")
    assert m.threshold == pytest.approx(float(cal(0.2)), abs=1e-4)
    m.save(tmp_path / "c.safetensors")
    back = DivergenceModel.load(tmp_path / "c.safetensors")
    assert back.calibrated and back.calibration_note() is None
    assert back.meta["calibration"]["fitted_on"] == "test"
    np.testing.assert_allclose(back.score(EN, DE, src_lang="en", tgt_lang="de"), cal(raw), rtol=1e-12)
    np.testing.assert_allclose(back.raw_score(EN, DE, src_lang="en", tgt_lang="de"), raw, rtol=1e-12)
    # re-calibrated: the threshold goes back through the old map first (the same raw threshold, 0.2)
    new = PlattCalibration(2.0, -0.5)
    back.set_calibration(new)
    assert back.threshold == pytest.approx(float(new(0.2)), abs=2e-4)


def test_the_shipped_model_carries_its_calibration_in_json_metadata():
    from bimine.weights import read_safetensors

    meta, _ = read_safetensors(default_path(), "numpy", "divergence model", "")
    cal = json.loads(meta["bimine_divergence"])["calibration"]
    assert cal["method"] == "platt" and cal["a"] > 0 and "benchmarks.divergence_calibration" in cal["command"]
    m = DivergenceModel.load(default_path())
    # the stored threshold was chosen on raw scores (keeps 90 % of held-out NTREX at 0.08 with the encoder
    # of issue 56's third round; 0.04 after issue 58's retraining, 0.01 before): carried through the map
    assert m.threshold == pytest.approx(float(m.calibration(0.08)), abs=1e-4)


def test_shipped_score_of_clean_news_is_above_one_half():
    """The user-visible check: over the 300 clean NTREX translations of examples/dev.en-fr.tsv the
    raw output's median is below 0.45 (0.39 and 60 of 300 at 0.5 or more with issue 55's model;
    0.44 and 131 with issue 58's, trained on short lines too), so clean data read as divergent. The
    calibrated score (fitted on other, held-out pairs: benchmarks/divergence_calibration.py) puts
    their median above 0.5, and still puts unrelated pairs (every target moved 7 lines) below it."""
    pytest.importorskip("torch")
    from bimine import load_encoder

    rows = [line.split("\t") for line in (EXAMPLES / "dev.en-fr.tsv").read_text(encoding="utf-8").splitlines()]
    src, tgt = [a for a, _ in rows], [b for _, b in rows]
    m = DivergenceModel.load(default_path())
    enc = load_encoder("default")
    score = m.score(src, tgt, src_lang="en", tgt_lang="fr", encoder=enc)
    raw = m.raw_score(src, tgt, src_lang="en", tgt_lang="fr", encoder=enc)
    assert np.median(raw) < 0.45 and (raw >= 0.5).mean() < 0.5  # what the issue saw: the check is not vacuous
    assert np.median(score) > 0.7, np.median(score)
    assert (score >= 0.5).mean() > 0.8
    np.testing.assert_allclose(score, m.calibration(raw), rtol=1e-12)
    shuffled = m.score(src, tgt[7:] + tgt[:7], src_lang="en", tgt_lang="fr", encoder=enc)
    assert np.median(shuffled) < 0.2 and (shuffled >= 0.5).mean() < 0.05


# ---------------------------------------------------------------------- held-out pairs and the command
def test_heldout_pairs_share_no_side_with_the_training_pairs():
    from bimine.training.divergence_data import draw_positives, heldout_pairs

    src = [f"s{k} a b c d e" for k in range(60)] + ["s0 a b c d e", "dup x y z w v"] * 2
    tgt = [f"t{k} a b c d e" for k in range(60)] + ["fresh q r s t u", "dup2 x y z w v"] * 2
    used = draw_positives(src, tgt, positives=20, min_words=5, seed=3)
    held = heldout_pairs(src, tgt, used, n=1000, min_words=5, seed=3)
    assert not set(held) & set(used)
    assert not {src[i] for i in held} & {src[i] for i in used}
    assert not {tgt[i] for i in held} & {tgt[i] for i in used}
    assert len({(src[i], tgt[i]) for i in held}) == len(held)  # each pair once
    assert len(heldout_pairs(src, tgt, used, n=5, min_words=5, seed=3)) == 5


def test_calibration_examples_half_clean_half_divergent():
    from bimine.training.aligner import train_aligner
    from bimine.training.divergence_data import CALIBRATION_KINDS, calibration_examples

    al = train_aligner(EN * 3, DE * 3, model=2, iterations=5, src_lang="en", tgt_lang="de")
    ex, counts = calibration_examples(EN, DE, al, seed=0)
    pos = [e for e in ex if e.label == 1.0]
    neg = [e for e in ex if e.label == 0.0]
    assert [(e.src, e.tgt) for e in pos] == list(zip(EN, DE))
    assert len(neg) == len(pos) == counts["negatives"] == 10
    assert set(counts["by_kind"]) == set(CALIBRATION_KINDS) and sum(counts["by_kind"].values()) == 10
    clean = set(zip(EN, DE))
    assert all((e.src, e.tgt) not in clean for e in neg)


def _cli(*args):
    from click.testing import CliRunner

    from bimine.cli import divergence as _div  # noqa: F401  (registers the commands)
    from bimine.cli.main import cli

    return CliRunner().invoke(cli, [str(a) for a in args])


def test_train_divergence_stores_a_calibration_fitted_on_held_out_pairs(tmp_path):
    rows = [line.split("\t") for line in (EXAMPLES / "train.en-fr.tsv").read_text(encoding="utf-8").splitlines()[:300]]
    (tmp_path / "t.en").write_text("".join(a + "\n" for a, _ in rows), encoding="utf-8")
    (tmp_path / "t.fr").write_text("".join(b + "\n" for _, b in rows), encoding="utf-8")
    common = ["train-divergence", "--src", tmp_path / "t.en", "--tgt", tmp_path / "t.fr", "--src-lang", "en",
              "--tgt-lang", "fr", "--kind", "mm", "--positives", "60", "--aligner", tmp_path / "al.safetensors"]
    r = _cli(*common, "--calibration-pairs", "150", "--threshold", "0.4", "-o", tmp_path / "m.safetensors")
    assert r.exit_code == 0, r.output
    assert "calibrated on 150 held-out pairs and 150 divergent ones" in r.output
    m = DivergenceModel.load(tmp_path / "m.safetensors")
    assert m.calibrated and m.calibration.a > 0
    assert m.meta["calibration"]["pairs"]["clean"] == 150
    assert m.threshold == 0.4  # --threshold is on the calibrated score, stored as given
    # 0: the model is left uncalibrated, and 'bimine divergence' says once that its score is no probability
    r = _cli(*common, "--calibration-pairs", "0", "-o", tmp_path / "raw.safetensors")
    assert r.exit_code == 0, r.output
    assert not DivergenceModel.load(tmp_path / "raw.safetensors").calibrated
    (tmp_path / "p.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in rows[:30]), encoding="utf-8")
    for name, warned in (("raw", True), ("m", False)):
        r = _cli("divergence", tmp_path / "p.tsv", "--src-lang", "en", "--tgt-lang", "fr", "-d",
                 tmp_path / f"{name}.safetensors", "-o", tmp_path / f"{name}.tsv", "--no-progress")
        assert r.exit_code == 0, r.output
        assert r.output.count("carries no calibration") == (1 if warned else 0), r.output


def test_run_job_trains_the_divergence_model_the_command_trains(tmp_path):
    """`bimine run` with 'job: train-divergence' builds the DivergenceJob the command builds."""
    from bimine.cli import run as _run_cmd  # noqa: F401  (registers the command)

    rows = [line.split("\t") for line in (EXAMPLES / "train.en-fr.tsv").read_text(encoding="utf-8").splitlines()[:300]]
    (tmp_path / "t.en").write_text("".join(a + "\n" for a, _ in rows), encoding="utf-8")
    (tmp_path / "t.fr").write_text("".join(b + "\n" for _, b in rows), encoding="utf-8")
    r = _cli("train-divergence", "--src", tmp_path / "t.en", "--tgt", tmp_path / "t.fr", "--src-lang", "en",
             "--tgt-lang", "fr", "--kind", "mm", "--positives", "60", "--calibration-pairs", "100",
             "-o", tmp_path / "a.safetensors")
    assert r.exit_code == 0, r.output
    (tmp_path / "job.yaml").write_text(
        f"job: train-divergence\nsrcs: [{tmp_path / 't.en'}]\ntgts: [{tmp_path / 't.fr'}]\nsrc_lang: en\n"
        f"tgt_lang: fr\nkind: mm\npositives: 60\ncalibration_pairs: 100\noutput: {tmp_path / 'b.safetensors'}\n",
        encoding="utf-8")
    r2 = _cli("run", tmp_path / "job.yaml")
    assert r2.exit_code == 0, r2.output
    a, b = DivergenceModel.load(tmp_path / "a.safetensors"), DivergenceModel.load(tmp_path / "b.safetensors")
    assert a.weights.keys() == b.weights.keys() and all(np.array_equal(a.weights[k], b.weights[k]) for k in a.weights)
    assert (a.calibration.a, a.calibration.b) == (b.calibration.a, b.calibration.b)
    strip = [line for line in r.output.splitlines() if "wrote" not in line and "minutes" not in line]
    assert strip == [line for line in r2.output.splitlines() if "wrote" not in line and "minutes" not in line]
