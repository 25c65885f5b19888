"""Second-stage rescoring (issue 15): features against hand computations, the planted corpora,
and the rescorer's save/load round trip."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.errors import ConfigError, InputError
from bimine.mining.planted import plant_pairs
from bimine.scoring.rescore import (
    FEATURES,
    KNN_FEATURES,
    TEXT_FEATURES,
    WORD_FEATURES,
    Rescorer,
    knn_features,
    text_features,
    word_features,
)
from bimine.training.rescorer import train_rescorer


def _unit(rng, n, d):
    x = rng.normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_knn_features_equal_a_brute_force_computation():
    rng = np.random.default_rng(0)
    x, y, k = _unit(rng, 30, 8), _unit(rng, 25, 8), 4
    s = x @ y.T
    ixy = np.argsort(-s, axis=1)[:, :k]
    sxy = np.take_along_axis(s, ixy, axis=1)
    iyx = np.argsort(-s.T, axis=1)[:, :k]
    syx = np.take_along_axis(s.T, iyx, axis=1)
    pairs = [(i, int(ixy[i, 0])) for i in range(5)] + [(int(iyx[j, 2]), j) for j in range(5)] + [(3, int(ixy[3, 1]))]
    i = np.array([p[0] for p in pairs])
    j = np.array([p[1] for p in pairs])
    f = knn_features(sxy, ixy, syx, iyx, k, i, j)
    assert f.shape == (len(pairs), len(KNN_FEATURES))
    for n, (a, b) in enumerate(pairs):
        c = s[a, b]
        mx = np.sort(s[a])[::-1][:k].mean()
        my = np.sort(s[:, b])[::-1][:k].mean()
        row_a = list(ixy[a])
        row_b = list(iyx[b])
        rank_a = row_a.index(b) if b in row_a else k
        rank_b = row_b.index(a) if a in row_b else k
        other_a = max(s[a, t] for t in row_a if t != b)
        other_b = max(s[t, b] for t in row_b if t != a)
        want = [c, mx, my, c / ((mx + my) / 2) + c, c / mx + c, c / my + c, rank_a, rank_b, c - other_a, c - other_b]
        np.testing.assert_allclose(f[n], want, rtol=1e-5, atol=1e-6)


def test_knn_features_need_the_cosine_of_a_pair_in_neither_list():
    rng = np.random.default_rng(1)
    x, y = _unit(rng, 10, 4), _unit(rng, 10, 4)
    s = x @ y.T
    ixy = np.argsort(-s, axis=1)[:, :2]
    iyx = np.argsort(-s.T, axis=1)[:, :2]
    sxy, syx = np.take_along_axis(s, ixy, 1), np.take_along_axis(s.T, iyx, 1)
    worst = int(np.argmin(s[0]))
    if worst in iyx[:, :].ravel() and 0 in iyx[worst]:
        pytest.skip("the worst target lists source 0")
    with pytest.raises(ValueError, match="neither"):
        knn_features(sxy, ixy, syx, iyx, 2, np.array([0]), np.array([worst]))
    f = knn_features(sxy, ixy, syx, iyx, 2, np.array([0]), np.array([worst]), cos=np.array([s[0, worst]]))
    assert f[0, KNN_FEATURES.index("rank_src")] == 2 and f[0, 0] == pytest.approx(s[0, worst])


def test_text_features_by_hand():
    f = text_features(["Males earned $59,738 in 2019 (median) at Google in Paris.", "Hello"],
                      ["Les hommes gagnaient 59 738 $ en 2018 (médiane) chez Google à Londres.", "Bonjour !"])
    got = dict(zip(TEXT_FEATURES, f[0]))
    assert got["numbers_src"] == 2 and got["numbers_tgt"] == 2  # 59738 and the year: separators ignored
    assert got["numbers_agree"] == pytest.approx(1 / 3)  # {59738, 2019} vs {59738, 2018}
    assert got["numbers_missing"] == 2
    assert got["copies_src"] == 2 and got["copies_tgt"] == 2  # Google, Paris / Londres (first words left out)
    assert got["copies_agree"] == pytest.approx(1 / 3)  # Google shared
    assert got["end_agree"] == 1.0
    second = dict(zip(TEXT_FEATURES, f[1]))
    assert second["end_agree"] == 0.0 and second["numbers_agree"] == 1.0  # no numbers on either side
    # full-width forms count as ASCII (NFKC)
    g = dict(zip(TEXT_FEATURES, text_features(["Is it 42?"], ["４２ですか？"])[0]))
    assert g["numbers_agree"] == 1.0 and g["punct_diff"] == 0.0 and g["end_agree"] == 1.0


class _Words:
    """Word vectors by hand: one axis per meaning."""

    table = {"cat": 0, "chat": 0, "dog": 1, "chien": 1, "red": 2, "rouge": 2, "blue": 3}

    def matrix(self, words, lang):
        v = np.zeros((len(words), 4), np.float32)
        for n, w in enumerate(words):
            v[n, self.table[w]] = 1.0
        return v


def test_word_features_by_hand():
    f = word_features(["cat dog red", "cat"], ["chat chien", ""], _Words(), "en", "fr")
    got = dict(zip(WORD_FEATURES, f[0]))
    assert got["words_src"] == pytest.approx(2 / 3) and got["words_tgt"] == 1.0  # "red" has no match
    assert got["worst_src"] == 0.0 and got["worst_tgt"] == 1.0
    assert got["matched_src"] == pytest.approx(2 / 3) and got["matched_tgt"] == 1.0
    assert (f[1] == 0).all()  # a side without words


def test_planted_pairs_hold_no_distractor_translation():
    pairs = [(f"src {n}", f"tgt {n}") for n in range(40)]
    pairs[2] = ("src 0", "tgt 2")  # repeats a gold source: not a usable gold pair
    pairs[8] = ("src 1", "tgt 8")  # a source distractor equal to a gold source: left out
    split = plant_pairs(pairs, gold=5, distractors=10, prefix="x")
    assert len(split.gold) == 5 and len(split.src) == 14 and len(split.tgt) == 15
    assert "src 2" not in split.src and "tgt 2" not in split.tgt
    src = dict(zip(split.src_ids, split.src))
    tgt = dict(zip(split.tgt_ids, split.tgt))
    for a, b in split.gold:
        assert src[a].split()[1] == tgt[b].split()[1]
    gold_src = {src[a] for a, _ in split.gold}
    numbers_s = {t.split()[1] for t in split.src if t not in gold_src}
    numbers_t = {t.split()[1] for t in split.tgt if t not in {tgt[b] for _, b in split.gold}}
    assert not numbers_s & numbers_t  # no distractor's translation is on the other side
    with pytest.raises(InputError, match="gold"):
        plant_pairs(pairs[:3], gold=5, distractors=1)


def test_rescorer_round_trip_and_encoder_check(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, len(FEATURES)))
    y = (x[:, 0] + 0.5 * x[:, 3] > 0).astype(int)
    r = train_rescorer(x[:300], y[:300], dev=(x[300:], y[300:]), encoder="dan-abc", trees=20)
    p = r.predict(x)
    assert ((p > 0.5) == y).mean() > 0.9
    r.save(tmp_path / "r")
    back = Rescorer.load(tmp_path / "r")
    np.testing.assert_array_equal(back.predict(x), p)
    assert back.threshold == r.threshold and back.encoder == "dan-abc"

    class Enc:
        model_id = "dan-other"

    with pytest.raises(ConfigError, match="dan-abc"):
        back.check_encoder(Enc())
    with pytest.raises(InputError, match="not a rescorer folder"):
        Rescorer.load(tmp_path)
    with pytest.raises(ValueError, match="features per pair"):
        back.predict(x[:, :3])


def test_rescorer_reads_only_its_features(tmp_path):
    import json

    from bimine.scoring.rescore import DEFAULT_FEATURES, DOMAIN_FEATURES

    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, len(FEATURES)))
    y = (x[:, FEATURES.index("chars_src")] > 0).astype(int)  # a label only a left-out feature tells
    without = train_rescorer(x[:300], y[:300], trees=20)
    assert without.features == DEFAULT_FEATURES and not set(DOMAIN_FEATURES) & set(without.features)
    assert ((without.predict(x[300:]) > 0.5) == y[300:]).mean() < 0.7  # it cannot see that feature
    noisy = x.copy()
    noisy[:, [FEATURES.index(f) for f in DOMAIN_FEATURES]] = rng.normal(size=(400, len(DOMAIN_FEATURES)))
    np.testing.assert_array_equal(without.predict(noisy), without.predict(x))
    full = train_rescorer(x[:300], y[:300], features=FEATURES, trees=20)
    assert full.features == FEATURES and ((full.predict(x[300:]) > 0.5) == y[300:]).mean() > 0.9
    full.save(tmp_path / "r")
    np.testing.assert_array_equal(Rescorer.load(tmp_path / "r").predict(x), full.predict(x))
    meta = json.loads((tmp_path / "r" / "rescorer.json").read_text())
    meta["features"] = meta["features"][:3] + ["some_new_feature"]
    (tmp_path / "r" / "rescorer.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match="other features"):
        Rescorer.load(tmp_path / "r")


def test_word_vector_cache_stays_bounded_and_correct():
    from bimine.scoring.vdpwi import WordVectors

    class Enc:
        calls = []

        def encode(self, words, lang):
            self.calls.append(list(words))
            return np.array([[len(w), ord(w[0])] for w in words], np.float32)

    enc = Enc()
    v = WordVectors(enc, limit=3)
    got = v.matrix(["aa", "b", "ccc", "dddd", "e"], "en")  # more words than the limit in one call
    np.testing.assert_array_equal(got[:, 0], [2, 1, 3, 4, 1])
    assert len(v.cache) == 5
    got = v.lookup([["aa", "zz"]], "en")[0]  # a new word: the cache starts again
    np.testing.assert_array_equal(got, [[2, ord("a")], [2, ord("z")]])
    assert len(v.cache) == 2 and enc.calls[-1] == ["aa", "zz"]
    v.lookup([["aa"]], "en")
    assert len(enc.calls) == 2  # cached


def test_the_shipped_rescorer_is_the_models_own():
    """``--rescore default|trees`` takes the rescorer fitted on the job's model: e5-small's from the
    package's models/e5-small, the default's (and an adapted model's, its base's) otherwise; each is
    checked against the encoder whose cosines it reads."""
    from types import SimpleNamespace

    from bimine.encoders.base import E5_MODEL_ID, default_model_path, e5_heads_path
    from bimine.scoring.rescore import default_rescorer_path, load_rescorer

    e5 = SimpleNamespace(model_id=E5_MODEL_ID)
    assert default_rescorer_path(e5) == e5_heads_path() / "rescorer"
    assert load_rescorer("trees", e5).encoder == E5_MODEL_ID
    other = SimpleNamespace(model_id="dan-0000000000000000")
    assert default_rescorer_path(other) == default_model_path() / "rescorer"
    with pytest.raises(ConfigError, match="trained on the cosines of encoder"):
        load_rescorer("trees", other)
