"""The encoder registry: specs that load an encoder again in another process (issue 13)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from bimine.embed import embed_lines
from bimine.encoders import EncoderSpec, encoder_spec, load_encoder, register_encoder
from bimine.encoders.base import default_model_path
from bimine.errors import ConfigError

LINES = ["The cat sleeps on the mat.", "Le chat dort.", "", "Der Hund bellt laut im Garten."] * 25


def test_spec_of_the_default_model_round_trips_through_pickle():
    enc = load_encoder("default", batch_size=7)
    spec = enc.spec
    assert spec == encoder_spec("default", batch_size=7)
    assert spec.kind == "dan" and spec.path == str(default_model_path().resolve())
    back = pickle.loads(pickle.dumps(spec))
    assert back == spec and hash(back) == hash(spec)
    again = back.load()
    assert again.model_id == enc.model_id and again.batch_size == 7
    assert np.array_equal(again.encode(LINES[:4], "en"), enc.encode(LINES[:4], "en"))


def test_load_cached_builds_once_per_process():
    spec = encoder_spec("default")
    assert spec.load_cached() is spec.load_cached()
    assert spec.load() is not spec.load_cached()


def test_unknown_names_and_kinds_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="has no config.json"):
        encoder_spec(tmp_path)
    with pytest.raises(ConfigError, match="no encoder kind 'nope'; registered: dan, e5-small"):
        EncoderSpec("nope").load()


def test_a_registered_kind_loads_through_the_spec():
    class Const:
        model_id, dim = "const", 2

        def __init__(self, value=1.0):
            self.value = value

        def encode(self, sentences, lang):
            return np.full((len(sentences), 2), self.value / np.sqrt(2), np.float32)

    register_encoder("const-test", lambda path, **o: Const(**o))
    enc = EncoderSpec("const-test", None, (("value", 1.0),)).load()
    assert isinstance(enc, Const) and enc.spec.kind == "const-test"


def _all(it):
    return np.concatenate(list(it))


def test_worker_pool_loads_from_the_spec_and_gives_the_same_rows():
    enc = load_encoder("default")
    one = _all(embed_lines(enc, iter(LINES), lang="en", batch_size=16))
    two = _all(embed_lines(enc, iter(LINES), lang="en", batch_size=16, workers=2))
    assert np.array_equal(one, two)
    # the workers encode with what the spec loads, not with the parent's object
    enc.encode = lambda sentences, lang: np.zeros((len(sentences), 384), np.float32)
    three = _all(embed_lines(enc, iter(LINES), lang="en", batch_size=16, workers=2))
    assert np.array_equal(three, one)


def test_worker_pool_inherits_an_encoder_without_a_spec():
    enc = load_encoder("default")
    ref = _all(embed_lines(enc, iter(LINES), lang="en", batch_size=16))
    del enc.spec  # as if built in Python, not by load_encoder
    assert getattr(enc, "spec", None) is None
    two = _all(embed_lines(enc, iter(LINES), lang="en", batch_size=16, workers=2))
    assert np.array_equal(ref, two)


def test_with_threads_sets_the_kinds_option():
    spec = encoder_spec("default", batch_size=9)
    one = spec.with_threads(1)
    assert dict(one.options) == {"batch_size": 9, "threads": 1} and one.load().threads == 1
    assert dict(encoder_spec("e5-small").with_threads(3).options)["num_threads"] == 3  # and its runtime
    assert EncoderSpec("const-test").with_threads(4) == EncoderSpec("const-test")
