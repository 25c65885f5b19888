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
from bimine.text.features import FeatureConfig, Featurizer  # noqa: E402
from bimine.text.normalize import TextNorm, normalize_text

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
        # each word cut on its own, in order
        want = np.array([p for w in normalize_text(s).split() for p in proc.encode(w, out_type=int)],
                        dtype=np.int64) + CFG.buckets
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
    cased = subwords.sample_sentences(texts, 100, 0, TextNorm(lowercase=False))  # features.lowercase: false
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


MIXED = ["Le Chat dort.", "", "an unseen ZZZ word", "Москва и Санкт-Петербург", "東京は日本の首都です。",
         "abc def abc def", "ÉCOLE ｆｕｌｌ", "word\twith\ttabs", "a " * 40 + "b"]


def _batches(seed, n=30):
    rng = np.random.default_rng(seed)
    words = "le chat dort bien an unseen zzz word москва дом 東京 日本 école abcdé fghij klmno".split()
    return [[" ".join(rng.choice(words, rng.integers(0, 12))) for _ in range(rng.integers(1, 9))] + MIXED[: rng.integers(0, 9)]
            for _ in range(n)]


def test_word_cache_gives_the_reference_pieces(model, monkeypatch):
    """The compiled path (pieces kept per word, the cache emptied when full) gives the NumPy
    reference's ids batch after batch, and the pieces of a sentence are its words' pieces."""
    monkeypatch.setattr(subwords, "MAX_CACHED_WORDS", 12)  # resets every few batches
    fast = Featurizer(CFG, backend="numba", subword_model=model)
    ref = Featurizer(CFG, backend="numpy", subword_model=model)
    for batch in _batches(0):
        a, b = fast.featurize(batch, "fr"), ref.featurize(batch, "fr")
        np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_array_equal(a[0], b[0])
    cache = fast.pieces.cache(CFG.buckets)
    assert 0 < len(cache) <= 12 and cache.resets > 0
    # a batch with more distinct new words than a cache holds is still right
    big = [" ".join(f"w{i}x{j}" for j in range(5)) for i in range(10)]
    np.testing.assert_array_equal(fast.featurize(big, "en")[0], ref.featurize(big, "en")[0])


def test_word_cache_is_exact_whatever_the_hash(monkeypatch):
    """Every word hashing alike (all in one probe chain): the code points decide, never the hash."""
    from bimine.text import _piece_kernels as K

    monkeypatch.setattr(K, "_hash", lambda c, a, b: np.uint64(7))  # seen by the kernels' Python versions
    c = np.frombuffer(" ab ba abc \n".encode("utf-32-le"), dtype=np.uint32)
    starts = np.array([0, 12], dtype=np.int64)
    table = np.full(8, -1, dtype=np.int64)
    slot_hash = np.zeros(4, dtype=np.uint64)
    slot_word = np.zeros((4, 2), dtype=np.int64)
    slot_piece = np.zeros((4, 2), dtype=np.int64)
    word_cp = np.zeros(32, dtype=np.uint32)
    piece_ids = np.zeros(16, dtype=np.int64)
    counts = np.zeros(3, dtype=np.int64)
    spans = np.array([[1, 3], [4, 6], [7, 10], [1, 3]], dtype=np.int64)  # "ab" twice: stored once
    pieces = np.array([10, 20, 21, 30, 99], dtype=np.int64)
    piece_off = np.array([0, 1, 3, 4, 5], dtype=np.int64)
    tables = (table, slot_hash, slot_word, slot_piece, word_cp, piece_ids)
    K.insert.py_func(c, spans, pieces, piece_off, *tables, counts)
    assert counts.tolist() == [3, 7, 4] and (table >= 0).sum() == 3
    none, zero = np.zeros(0, np.int64), np.zeros(2, np.int64)
    ids, off, miss = K.emit.py_func(c, starts, none, zero, *tables)
    assert ids.tolist() == [10, 20, 21, 30] and off.tolist() == [0, 4] and not len(miss)
    c2 = np.frombuffer(" ba zz ab ab \n".encode("utf-32-le"), dtype=np.uint32)
    ids, off, miss = K.emit.py_func(c2, np.array([0, 14], dtype=np.int64), none, zero, *tables)
    assert miss.tolist() == [[4, 6]]  # "zz" is none of the words stored, though all hash alike


def test_word_cache_per_thread_and_pickled(model):
    """Two threads featurising at once (as DANEncoder's slices do) each get the serial ids; a
    pickled featuriser (a worker process) carries the vocabulary, not the caches."""
    import pickle
    from concurrent.futures import ThreadPoolExecutor

    f = Featurizer(CFG, backend="numba", subword_model=model)
    batches = _batches(2, 60)
    want = [Featurizer(CFG, backend="numpy", subword_model=model).featurize(b, "fr") for b in batches]
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda b: f.featurize(b, "fr"), batches))
    for (a, ao), (b, bo) in zip(got, want):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ao, bo)
    g = pickle.loads(pickle.dumps(f))
    assert g.pieces.model == model and not hasattr(g.pieces._local, "cache")
    np.testing.assert_array_equal(g.featurize(batches[0], "fr")[0], want[0][0])
