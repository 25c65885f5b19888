"""The benchmarks' embedding cache never serves one model's vectors for another."""

from __future__ import annotations

import json

import numpy as np

from benchmarks.common import CachedEncoder
from benchmarks.xsim import evaluate
from bimine.encoders import load_encoder
from tests.conftest import make_tiny_model


def test_cache_is_keyed_by_the_weights_not_the_name(tmp_path):
    model = tmp_path / "model"
    cache = str(tmp_path / "cache")
    texts = ["The cat sleeps.", "Le chat dort."]
    make_tiny_model(model, seed=0)
    a = CachedEncoder(str(model), cache_dir=cache).encode(texts, "en")
    np.testing.assert_array_equal(a, load_encoder(str(model)).encode(texts, "en"))
    make_tiny_model(model, seed=1)  # same folder, retrained: other weights
    b = CachedEncoder(str(model), cache_dir=cache).encode(texts, "en")
    np.testing.assert_array_equal(b, load_encoder(str(model)).encode(texts, "en"))
    assert not np.allclose(a, b)
    again = CachedEncoder(str(model), cache_dir=cache)
    np.testing.assert_array_equal(again.encode(texts[::-1], "en"), b[::-1])  # from the cache file


def _fra_set(tmp_path):
    """A four-sentence en-fr set, a resume file and a tiny model folder (seed 0)."""
    model = tmp_path / "model"
    en = tmp_path / "en.txt"
    fr = tmp_path / "fr.txt"
    en.write_text("The cat sleeps.\nThe dog runs.\nI like tea.\nWe are here.\n")
    fr.write_text("Le chat dort.\nLe chien court.\nJ'aime le thé.\nNous sommes ici.\n")
    make_tiny_model(model, seed=0)
    return model, fr, [("fra", "fr", str(en), str(fr))], str(tmp_path / "xsim.json")


def _forge_mean(resume, model_id, value):
    """Overwrite the resume file's figure for the set, as if it had been measured so."""
    with open(resume) as f:
        saved = json.load(f)
    saved[model_id]["ntrex"]["fra"]["mean"] = value
    with open(resume, "w") as f:
        json.dump(saved, f)


def test_xsim_resume_file_is_keyed_by_the_weights(tmp_path):
    """A set measured for one model is skipped on resume for that model only."""
    model, _, sets, resume = _fra_set(tmp_path)
    enc0 = CachedEncoder(str(model), cache_dir=str(tmp_path / "c"))
    first = evaluate(enc0, sets, "m", resume)
    with open(resume) as f:
        assert json.load(f)[enc0.model_id]["ntrex"] == first
    # a forged entry for this model's id is what a resumed run returns, unmeasured
    _forge_mean(resume, enc0.model_id, 99.0)
    assert evaluate(enc0, sets, "m", resume)["fra"]["mean"] == 99.0
    # another model (retrained in the same folder) measures the set again
    make_tiny_model(model, seed=1)
    enc1 = CachedEncoder(str(model), cache_dir=str(tmp_path / "c"))
    assert enc1.model_id != enc0.model_id
    again = evaluate(enc1, sets, "m", resume)
    assert again["fra"]["mean"] != 99.0
    assert again["fra"]["n"] == 4


def test_xsim_resume_is_keyed_by_the_texts(tmp_path):
    """A set whose sentences changed since it was measured is measured again, not read back."""
    model, fr, sets, resume = _fra_set(tmp_path)
    enc = CachedEncoder(str(model), cache_dir=str(tmp_path / "c"))
    evaluate(enc, sets, "m", resume)
    _forge_mean(resume, enc.model_id, 99.0)
    assert evaluate(enc, sets, "m", resume)["fra"]["mean"] == 99.0  # same texts: read back
    fr.write_text("Le chat dort.\nLe chien court.\nJ'aime le café.\n\n")  # other texts, one pair dropped
    again = evaluate(enc, sets, "m", resume)["fra"]
    assert again["mean"] != 99.0
    assert again["n"] == 3
    with open(resume) as f:
        assert json.load(f)[enc.model_id]["ntrex"]["fra"]["texts"] == again["texts"]
