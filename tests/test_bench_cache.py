"""The benchmarks' embedding cache never serves one model's vectors for another."""

from __future__ import annotations

import numpy as np

from benchmarks.common import CachedEncoder
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
