"""The NumPy DAN against its PyTorch twin, and the encoder contract."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bimine.encoders.dan import DANConfig, DANEncoder
from bimine.errors import ConfigError
from bimine.text.features import FeatureConfig
from bimine.training.model import TorchDAN

SENTS = ["The cat sleeps.", "", "Le chat dort.", "x" * 3000, "Ein sehr langer Satz " * 20]


def small_cfg(**kw) -> DANConfig:
    return DANConfig(features=FeatureConfig(buckets=4096), embed_dim=16, hidden=(16, 16), output_dim=12, **kw)


def torch_embed(model, sents, lang):
    ids, off = model_featurizer(model).featurize(sents, lang)
    with torch.no_grad():
        out = model(ids, off, lang)
    return torch.nn.functional.normalize(out, dim=1).numpy()


def model_featurizer(model):
    from bimine.text.features import Featurizer

    return Featurizer(model.cfg.features)


@pytest.mark.parametrize("quantize,tol", [("none", 1e-5), ("float16", 2e-3), ("int8", 3e-2), ("int4", 0.1), ("pq8", 0.25)])
def test_numpy_matches_torch(quantize, tol):
    torch.manual_seed(0)
    cfg = small_cfg()
    model = TorchDAN(cfg).eval()
    enc = DANEncoder(cfg, model.export_weights(quantize), batch_size=2)
    got = enc.encode(SENTS, "en")
    want = torch_embed(model, SENTS, "en")
    assert got.dtype == np.float32 and got.shape == (len(SENTS), 12)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(got, want, atol=tol)


def test_training_path_equals_inference_path():
    """The unique-rows gather used in training gives the same output as the plain lookup."""
    torch.manual_seed(0)
    model = TorchDAN(small_cfg())
    ids, off = model_featurizer(model).featurize(SENTS, "en")
    with torch.no_grad():
        plain = model(ids, off, "en")
    train_path = model(ids, off, "en")
    torch.testing.assert_close(plain, train_path.detach())
    train_path.sum().backward()
    model.attach_sparse_grads()
    g = model.towers["shared"].embedding.weight.grad
    assert g.is_sparse and set(g.coalesce().indices()[0].tolist()) == set(ids.tolist())


def test_per_language_towers():
    torch.manual_seed(0)
    cfg = small_cfg(shared=False, languages=("en", "fr"))
    model = TorchDAN(cfg).eval()
    enc = DANEncoder(cfg, model.export_weights("none"))
    a = enc.encode(["chat"], "en")
    b = enc.encode(["chat"], "fra_Latn")
    assert not np.allclose(a, b)  # different towers
    np.testing.assert_allclose(b, torch_embed(model, ["chat"], "fr"), atol=1e-5)
    with pytest.raises(ConfigError, match="none for 'de'"):
        enc.encode(["Katze"], "de")


def test_export_roundtrip(tmp_path):
    from bimine.training.trainer import TrainConfig, export_model

    torch.manual_seed(0)
    cfg = TrainConfig(model=small_cfg())
    model = TorchDAN(cfg.model).eval()
    export_model(model, cfg, tmp_path / "m", {"note": "test"})
    from bimine import load_encoder

    enc = load_encoder(tmp_path / "m")
    np.testing.assert_allclose(enc.encode(SENTS, "en"), torch_embed(model, SENTS, "en"), atol=3e-2)
    assert enc.model_id.startswith("dan-")


def test_load_encoder_errors(tmp_path):
    from bimine import load_encoder

    with pytest.raises(ConfigError, match="no config.json"):
        load_encoder(tmp_path)


def test_pq_codes_are_nearest_centroids():
    """PQ export: every sub-vector is coded by its nearest centroid (brute force), and lookup decodes it."""
    from bimine.encoders.dan import EmbeddingTable
    from bimine.training.model import _product_quantize

    rng = np.random.default_rng(0)
    w = rng.standard_normal((3000, 16)).astype(np.float32)
    q = _product_quantize(w, 4, "e.")
    table = EmbeddingTable.from_weights(q, "e.")
    cb = q["e.codebook"]  # (4, 256, 4)
    ids = np.arange(0, 3000, 97)
    dec = table.lookup(ids)
    for r, i in enumerate(ids):
        for m in range(4):
            sub = w[i, 4 * m : 4 * m + 4]
            best = np.argmin(((cb[m] - sub) ** 2).sum(axis=1))
            np.testing.assert_allclose(dec[r, 4 * m : 4 * m + 4], cb[m, best], rtol=1e-5, atol=1e-6)


def test_int4_roundtrip_exact_on_grid():
    from bimine.encoders.dan import EmbeddingTable
    from bimine.training.model import _int4_quantize

    rng = np.random.default_rng(1)
    scale = rng.uniform(0.5, 2, size=(50, 1)).astype(np.float16).astype(np.float32)
    codes = rng.integers(-7, 8, size=(50, 12))
    codes[:, 0] = 7  # max |code| is 7 on every row, so the scale is recovered exactly
    w = (codes * scale).astype(np.float32)
    t = EmbeddingTable.from_weights(_int4_quantize(w, "e."), "e.")
    np.testing.assert_allclose(t.lookup(np.arange(50)), w, rtol=1e-3, atol=1e-3)
