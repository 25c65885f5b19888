"""The subword vocabulary of ``features.subwords`` (issue 9): pieces appended as rows after the
hash buckets, the vocabulary trained on a balanced sample, stored with the model, fingerprinted."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("sentencepiece")

from bimine.errors import ConfigError  # noqa: E402
from bimine.text import subwords  # noqa: E402
from bimine.text.features import FeatureConfig, Featurizer, normalize_text  # noqa: E402

CFG = FeatureConfig(buckets=4096, subwords=300, by_script=True, cross_word_chars=False, translit=True)


def _texts(seed=0, n=600):
    rng = np.random.default_rng(seed)

    def vocab(alphabet, k):
        return ["".join(rng.choice(list(alphabet), size=rng.integers(2, 9))) for _ in range(k)]

    en, fr = vocab("abcdefghijklmnop", 400), vocab("abcdéèfghijklmnopq", 400)
    return {"en": [[" ".join(rng.choice(en, 8)) for _ in range(n)]],
            "fr": [[" ".join(rng.choice(fr, 8)).capitalize() + "." for _ in range(n)]]}


@pytest.fixture(scope="module")
def model():
    return subwords.train_model(subwords.sample_sentences(_texts(), 400, 0), 300)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_pieces_follow_the_hashed_features(model, backend):
    sents = ["Le Chat dort.", "", "an unseen ZZZ word", "abc\ndef", "ÉCOLE ｆｕｌｌ", "Москва abc"]
    f = Featurizer(CFG, backend=backend, subword_model=model)
    plain = Featurizer(replace(CFG, subwords=0), backend=backend)
    ids, off = f.featurize(sents, "fr")
    ids0, off0 = plain.featurize(sents, "fr")
    proc = f.pieces.processor
    for i, s in enumerate(sents):
        got = ids[off[i]:off[i + 1]]
        n0 = off0[i + 1] - off0[i]
        np.testing.assert_array_equal(got[:n0], ids0[off0[i]:off0[i + 1]])  # hashed n-grams first, unchanged
        want = np.array(proc.encode(normalize_text(s), out_type=int), dtype=np.int64) + CFG.buckets
        np.testing.assert_array_equal(got[n0:], want)  # then the pieces, as rows after the buckets
        assert np.all(got < CFG.rows)
    assert off[2] == off[1]  # an empty sentence has no features and no pieces


def test_vocabulary_is_deterministic_and_balanced():
    texts = _texts()
    texts["en"].append(texts["en"][0] * 5)  # a large language gets no larger share
    a = subwords.sample_sentences(texts, 100, 0)
    assert a == subwords.sample_sentences(texts, 100, 0)
    assert a != subwords.sample_sentences(texts, 100, 1)
    assert len(a) == 200 and sum(s.endswith(".") for s in a) == 100  # 100 French (with a full stop), 100 English
    assert len(set(a)) == len(a)  # distinct sentences
    assert not any(ch.isupper() for t in a for ch in t)  # normalised as the featuriser does
    cased = subwords.sample_sentences(texts, 100, 0, lowercase=False)  # features.lowercase: false
    assert [t.lower() for t in cased] == a and any(ch.isupper() for t in cased for ch in t)
    assert subwords.train_model(a, 200) == subwords.train_model(a, 200)


def test_errors_are_clear(model):
    with pytest.raises(ConfigError, match="no subword model"):
        Featurizer(CFG).featurize(["x"], "en")
    with pytest.raises(ConfigError, match="features.subwords is 0"):
        Featurizer(replace(CFG, subwords=0), subword_model=model)
    with pytest.raises(ConfigError, match="has 300 pieces, features.subwords says 400"):
        Featurizer(replace(CFG, subwords=400), subword_model=model)
    with pytest.raises(ConfigError, match="could not train a 5000-piece vocabulary"):
        subwords.train_model(["a b c", "d e f"], 5000)
    with pytest.raises(ConfigError, match="at least 100 pieces"):
        FeatureConfig(subwords=10)


def test_config_without_subwords_reads_as_before():
    d = FeatureConfig().to_dict()
    assert "subwords" not in d and FeatureConfig.from_dict(d).rows == d["buckets"]
    assert FeatureConfig.from_dict(CFG.to_dict()) == CFG and CFG.rows == 4096 + 300


def test_tensors_round_trip(model):
    assert subwords.from_tensors(subwords.to_tensors(model)) == model
    assert subwords.from_tensors({}) is None


def test_training_run_builds_stores_and_fingerprints_the_vocabulary(shared_data, tmp_path):
    from bimine import load_encoder
    from bimine.encoders.dan import DANEncoder
    from bimine.training.trainer import Trainer
    from tests.test_train import tiny_config

    cfg = tiny_config(shared_data, steps=40, **{"model.features.subwords": 500,
                                                "model.features.subword_sample": 3000})
    # a vocabulary left by a run killed before its first checkpoint is not reused
    other = subwords.train_model(subwords.sample_sentences({"en": [enc_texts(shared_data)]}, 3000, 1), 500)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "subwords.model").write_bytes(other)
    out = Trainer(cfg, tmp_path / "run").fit(progress=False)
    vocab = (tmp_path / "run" / "subwords.model").read_bytes()
    assert vocab != other
    enc = load_encoder(out)
    assert enc.featurizer.pieces.model == vocab  # the run's vocabulary travels in the weights
    meta = json.loads((out / "config.json").read_text())
    assert meta["model"]["features"]["subwords"] == 500
    ids, off = enc.featurizer.featurize(["The cat sleeps."], "en")
    assert ids.max() >= cfg.model.features.buckets  # pieces are used
    assert np.abs(enc.encode(["The cat sleeps.", ""], "en")).sum() > 0

    # a resumed run with another vocabulary beside its checkpoint is refused, not mixed
    (tmp_path / "run" / "subwords.model").write_bytes(other)
    with pytest.raises(ConfigError, match="subword_model"):
        Trainer(tiny_config(shared_data, steps=60, **{"model.features.subwords": 500,
                                                      "model.features.subword_sample": 3000}),
                tmp_path / "run").fit(resume=True, progress=False)

    from safetensors.numpy import load_file

    weights = load_file(str(out / "model.safetensors"))
    del weights[subwords.TENSOR]
    with pytest.raises(ConfigError, match="no subwords.model"):
        DANEncoder(enc.config, weights)


def enc_texts(root):
    from bimine.text.io import read_lines

    return list(read_lines(str(root / "dev/tatoeba-test/tatoeba-test.en-fr.en")))
