"""Calibrated confidence (issue 11 §1): the NumPy head against the torch one, rankings kept,
ECE against a hand computation, refusal of another model's head, and the commands."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from bimine.errors import ConfigError
from bimine.scoring.calibration import CALIBRATION_FILE, Calibration
from bimine.scoring.calibration_metrics import brier, expected_calibration_error, reliability

torch = pytest.importorskip("torch")


def test_ece_on_a_hand_computed_example():
    p = np.array([0.1, 0.1, 0.9, 0.9, 1.0])
    y = np.array([0, 1, 1, 1, 1])
    # 10 bins: [0.1, 0.2) holds 0.1, 0.1 (right 1 of 2: |0.5 - 0.1| = 0.4);
    # [0.9, 1.0] holds 0.9, 0.9, 1.0 (right 3 of 3, mean 0.9333: 0.0667)
    assert expected_calibration_error(p, y, bins=10) == pytest.approx((2 * 0.4 + 3 * (1 - 2.8 / 3)) / 5)
    r = reliability(p, y, bins=10)
    assert r["count"].tolist() == [0, 2, 0, 0, 0, 0, 0, 0, 0, 3]
    assert brier(p, y) == pytest.approx((0.01 + 0.81 + 0.01 + 0.01 + 0) / 5)
    with pytest.raises(ValueError, match="must lie in"):
        reliability(np.array([1.5]), np.array([1]))


def _head(dim: int, positive: bool, seed: int = 0):
    from bimine.scoring.classifiers import PairClassifier, build_module

    torch.manual_seed(seed)
    cfg = {"kind": "confidence", "dim": dim, "encoder": "dan-test", "positive_scale": positive}
    head = build_module(cfg).eval()
    with torch.no_grad():  # large random weights: the linear scale is negative for many sources
        head.scale.weight.normal_(0, 20.0)
        head.scale.bias.fill_(0.0)
        head.bias.weight.normal_(0, 1.0)
    return PairClassifier(cfg, head)


def test_numpy_head_equals_torch_head_and_keeps_rankings(tmp_path):
    rng = np.random.default_rng(1)
    u = rng.normal(size=(50, 8)).astype(np.float32)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v = rng.normal(size=(60, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    for positive in (True, False):
        clf = _head(8, positive)
        path = tmp_path / f"h{positive}.safetensors"
        clf.save(path)
        cal = Calibration.load(path)
        np.testing.assert_allclose(cal.confidence(u, v[:50]), clf.score_embeddings(u, v[:50]), rtol=1e-5, atol=1e-7)
        with torch.no_grad():
            m = torch.sigmoid(clf.module.logits_matrix(torch.from_numpy(u), torch.from_numpy(v))).numpy()
        np.testing.assert_allclose(cal.from_cosine(u, u @ v.T), m, rtol=1e-4, atol=1e-6)
        same = (np.argmax(cal.from_cosine(u, u @ v.T), axis=1) == np.argmax(u @ v.T, axis=1)).all()
        # the softplus scale keeps every source's ranking; the paper's unconstrained linear
        # scale reverses it for sources whose scale comes out negative
        assert same if positive else not same


def test_head_is_refused_for_another_model(tmp_path, tiny_model):
    from bimine.encoders import load_encoder

    clf = _head(16, True)
    clf.save(tiny_model / CALIBRATION_FILE)
    enc = load_encoder(tiny_model)
    with pytest.raises(ConfigError, match="trained on embeddings of dan-test"):
        Calibration.for_encoder(enc)
    clf.config["encoder"] = enc.model_id
    clf.save(tiny_model / CALIBRATION_FILE)
    assert Calibration.for_encoder(enc).dim == 16
    (tiny_model / CALIBRATION_FILE).unlink()
    with pytest.raises(ConfigError, match="has no calibration head"):
        Calibration.for_encoder(enc)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "bimine.cli.main", *args], capture_output=True, text=True)


def test_calibrate_then_mine_and_score_with_confidence(tmp_path):
    from tests.conftest import make_tiny_model

    tiny_model = make_tiny_model(tmp_path / "by-script-model", by_script=True)  # needs no language code
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(300)]
    rows = [" ".join(rng.choice(words, 6)) for _ in range(700)]
    # 'translations': the same words in another order plus one word changed
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{s}\t{' '.join(reversed(s.split()[1:]))} x{i % 7}\n" for i, s in enumerate(rows)),
                   encoding="utf-8")
    r = run_cli("calibrate", str(tsv), "-m", str(tiny_model), "--dev-size", "100", "--epochs", "2",
                "--batch-pairs", "64", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert (tiny_model / CALIBRATION_FILE).exists() and "expected calibration error" in r.stderr
    src = tmp_path / "m.src"
    tgt = tmp_path / "m.tgt"
    src.write_text("\n".join(rows[:50]) + "\n", encoding="utf-8")
    tgt.write_text("\n".join(" ".join(reversed(s.split()[1:])) for s in rows[:50]) + "\n", encoding="utf-8")
    out = tmp_path / "mined.tsv"
    r = run_cli("mine", str(src), str(tgt), "-m", str(tiny_model), "-o", str(out), "--confidence", "--no-progress")
    assert r.returncode == 0, r.stderr
    cols = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    assert cols and all(len(c) == 4 and 0.0 <= float(c[3]) <= 1.0 for c in cols)
    cfg = tmp_path / "p.yaml"
    cfg.write_text("filters:\n  - score: confidence\n    threshold: 0.5\n", encoding="utf-8")
    r = run_cli("score", "--src", str(src), "--tgt", str(tgt), "--src-lang", "en", "--tgt-lang", "en",
                "-m", str(tiny_model), "-c", str(cfg), "-o", str(tmp_path / "s.tsv"), "--no-progress")
    assert r.returncode == 0, r.stderr
    header = (tmp_path / "s.tsv").read_text(encoding="utf-8").splitlines()[0].split("\t")
    assert "confidence" in header
    # a model folder without a head: a clear error, nothing written (e5-small ships one since issue 73)
    import shutil

    bare = tmp_path / "bare-model"
    shutil.copytree(tiny_model, bare, ignore=shutil.ignore_patterns(CALIBRATION_FILE))
    r = run_cli("mine", str(src), str(tgt), "-o", str(tmp_path / "x.tsv"), "--confidence", "-m", str(bare))
    assert r.returncode == 2 and "calibration head" in r.stderr and not (tmp_path / "x.tsv").exists()


def test_calibrate_refuses_what_it_cannot_do(tmp_path, tiny_model):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"a{i} b\tc{i} d\n" for i in range(50)), encoding="utf-8")
    # the tiny model's n-grams depend on the language code: one head per language pair instead
    r = run_cli("calibrate", str(tsv), "-m", str(tiny_model), "--no-progress")
    assert r.returncode == 2 and "features depend on the language" in r.stderr
    assert not (tiny_model / CALIBRATION_FILE).exists()
    # e5-small has no model folder to keep the head in
    r = run_cli("calibrate", str(tsv), "-m", "e5-small", "--no-progress")
    assert r.returncode == 2 and "give -o FILE" in r.stderr
