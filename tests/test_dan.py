"""The NumPy DAN against its PyTorch twin, and the encoder contract."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_features import MULTI

from bimine.cores import usable_cores
from bimine.encoders.base import default_model_path
from bimine.encoders.dan import DANConfig, DANEncoder, EmbeddingTable, _map_safetensors
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
    from bimine.encoders.torch_tables import _product_quantize

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
    from bimine.encoders.torch_tables import _int4_quantize

    rng = np.random.default_rng(1)
    scale = rng.uniform(0.5, 2, size=(50, 1)).astype(np.float16).astype(np.float32)
    codes = rng.integers(-7, 8, size=(50, 12))
    codes[:, 0] = 7  # max |code| is 7 on every row, so the scale is recovered exactly
    w = (codes * scale).astype(np.float32)
    t = EmbeddingTable.from_weights(_int4_quantize(w, "e."), "e.")
    np.testing.assert_allclose(t.lookup(np.arange(50)), w, rtol=1e-3, atol=1e-3)


# --- compiled path (numba kernels, threads) against the NumPy reference ---

LANGS = ["en", "zh", "th"]


def _tables(rng, buckets: int, dim: int) -> dict[str, dict[str, np.ndarray]]:
    """The embedding table of one random model in every storage form the encoder reads."""
    w = rng.standard_normal((buckets, dim)).astype(np.float32)
    scale = (np.abs(w).max(axis=1) / 7).astype(np.float16)
    codes = np.clip(np.round(w / scale.astype(np.float32)[:, None]), -8, 7).astype(np.int64) + 8
    return {
        "float32": {"weight": w},
        "float16": {"weight": w.astype(np.float16)},
        "int8": {"weight": np.clip(np.round(w * 20), -127, 127).astype(np.int8),
                 "scale": np.full(buckets, 0.05, np.float16)},
        "int4": {"nibbles": (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8), "scale": scale},
        "pq": {"codes": rng.integers(0, 256, size=(buckets, 4)).astype(np.uint8),
               "codebook": rng.standard_normal((4, 256, dim // 4)).astype(np.float32)},
    }


def _model(form: str, seed: int = 0, **kw) -> tuple[DANConfig, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    cfg = DANConfig(features=FeatureConfig(buckets=4096, **kw), embed_dim=16, hidden=(16, 16), output_dim=12)
    weights = {f"shared.embedding.{k}": v for k, v in _tables(rng, 4096, 16)[form].items()}
    for i, (a, b) in enumerate(cfg.layer_dims()):
        weights[f"shared.layers.{i}.weight"] = (rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32)
        weights[f"shared.layers.{i}.bias"] = rng.standard_normal(b).astype(np.float32) * 0.1
    return cfg, weights


@pytest.mark.parametrize("form", ["float32", "float16", "int8", "int4", "pq"])
def test_compiled_encoder_equals_reference(form):
    cfg, weights = _model(form)
    fast = DANEncoder(cfg, weights, backend="numba", threads=2, batch_size=8)
    ref = DANEncoder(cfg, weights, backend="numpy", batch_size=8)
    for lang in LANGS:
        got, want = fast.encode(MULTI, lang), ref.encode(MULTI, lang)
        assert got.dtype == np.float32 and got.shape == want.shape == (len(MULTI), 12)
        assert np.abs(got - want).max() < 1e-5
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)
        # the pooled rows too (before the dense layers)
        assert np.abs(fast.pooled(MULTI, lang) - ref.pooled(MULTI, lang)).max() < 1e-6


@pytest.fixture(scope="module")
def shipped():
    return DANEncoder.load(default_model_path(), backend="numba"), DANEncoder.load(default_model_path(), backend="numpy")


def test_shipped_model_compiled_equals_reference(shipped):
    """The shipped int4 model on the multilingual sentences, in one thread and in slices over
    two (512 copies, so the batch is cut), against the NumPy reference."""
    fast, ref = shipped
    sents = MULTI * 24
    for lang in LANGS:
        want = ref.encode(sents, lang)
        for threads in (1, 2):
            fast.threads = threads
            got = fast.encode(sents, lang)
            assert np.abs(got - want).max() < 1e-5
    fast.threads = None


# Embeddings of the shipped model (issue 56's temperature-2 default, `dan-363ae2b016c0eff0`), computed
# by the NumPy reference (``DANEncoder.load(default_model_path(), backend="numpy")``): the first
# 8 values and the sum of value i times i over all 384. A change of the kernels, the features or
# the weights that moves them fails here.
BEFORE = [
    ('The cat sleeps on the mat.', 'en',
     [-0.008022791, 0.05485488, -0.04066814, 0.0004056055, -0.01237289, 0.04589922, 0.04916615, -0.01045385], 39.58453),
    ('Le chat dort sur le tapis.', 'fr',
     [0.01241336, 0.09190127, -0.02198924, 0.04090197, -0.01032487, 0.02386068, -0.00583125, -0.03527613], -77.232433),
    ('Die Katze schläft auf der Matte.', 'de',
     [0.05820458, 0.0614762, -0.0656848, 0.01644077, -0.06135394, 0.04710513, 0.01594133, -0.02176832], 110.273),
    ('猫在垫子上睡觉。', 'zh',
     [0.007445492, 0.03557996, -0.01017594, 0.00463013, 0.05593587, 0.02243986, 0.009127515, -0.02587921], -68.340175),
    ('Кошка спит на коврике.', 'ru',
     [0.0459247, 0.02459572, -0.02690504, -0.07636651, 0.08085163, 0.01292941, 0.02974468, -0.04599379], -126.41668),
    ('', 'en',
     [-0.04060805, 0.00192427, 0.01782045, 0.02122699, 0.08113047, -0.04685329, 0.06753515, 0.04624777], -92.823451),
]


@pytest.mark.parametrize("backend", [0, 1])
def test_shipped_model_embeddings_unchanged(shipped, backend):
    enc = shipped[backend]
    for s, lang, head, weighted in BEFORE:
        e = enc.encode([s], lang)[0].astype(np.float64)
        np.testing.assert_allclose(e[:8], head, atol=2e-7)
        assert abs(e @ np.arange(384) - weighted) < 1e-3


@pytest.mark.parametrize("backend", [0, 1])
def test_empty_line_same_embedding_in_every_script(shipped, backend):
    """Issue 8: an empty zh/ja/th line gets the empty embedding of other languages."""
    enc = shipped[backend]
    empty = enc.encode([""], "en")
    for lang in ("zh", "ja", "th"):
        np.testing.assert_array_equal(enc.encode([""], lang), empty)
    assert not np.allclose(enc.encode(["猫"], "zh"), empty)


def test_memory_mapped_weights_equal_safetensors(tmp_path):
    from safetensors.numpy import load_file, save_file

    path = default_model_path() / "model.safetensors"
    mapped, loaded = _map_safetensors(path), load_file(str(path))
    assert mapped.keys() == loaded.keys()
    for k, v in loaded.items():
        assert mapped[k].dtype == v.dtype and mapped[k].shape == v.shape
        np.testing.assert_array_equal(mapped[k], v)
        assert not mapped[k].flags.writeable
    odd = tmp_path / "odd.safetensors"
    save_file({"x": np.zeros(3, np.uint16)}, str(odd))  # a dtype the mapper leaves to safetensors
    assert _map_safetensors(odd) is None


def test_model_id_is_weights_digest():
    import hashlib

    enc = DANEncoder.load(default_model_path())
    digest = hashlib.sha256((default_model_path() / "model.safetensors").read_bytes()).hexdigest()
    assert enc.model_id == f"dan-{digest[:16]}"


def test_encoder_pickles_and_encodes_after():
    import pickle

    cfg, weights = _model("int4")
    enc = DANEncoder(cfg, weights, threads=2, batch_size=300)
    a = enc.encode(MULTI * 30, "en")  # starts the thread pool
    b = pickle.loads(pickle.dumps(enc)).encode(MULTI * 30, "en")
    np.testing.assert_array_equal(a, b)


def test_table_pool_matches_lookup_mean():
    """``EmbeddingTable.pool`` is the sum of decoded rows over sqrt(n), per sentence."""
    rng = np.random.default_rng(3)
    for form, parts in _tables(rng, 500, 16).items():
        table = EmbeddingTable.from_weights(parts, "")
        ids = rng.integers(0, 500, size=40)
        offsets = np.array([0, 0, 1, 17, 40])
        got = table.pool(ids, offsets)
        for i in range(4):
            rows = table.lookup(ids[offsets[i] : offsets[i + 1]])
            want = rows.sum(axis=0) / np.sqrt(max(len(rows), 1))
            np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-6, err_msg=form)


def test_forked_worker_encodes_alone_and_equal():
    """A daemonic multiprocessing child (a user's ``multiprocessing.Pool``) encodes in one thread, after
    its parent started its own thread pool, and gets the parent's embeddings."""
    import multiprocessing as mp

    cfg, weights = _model("int8")
    enc = DANEncoder(cfg, weights, batch_size=300)
    want = enc.encode(MULTI * 30, "en")
    global _CHILD_ENCODER
    _CHILD_ENCODER = enc
    with mp.get_context("fork").Pool(1) as pool:
        threads, got = pool.apply(_encode_in_child, (MULTI * 30,))
    assert threads == 1 and enc._thread_count() >= 1
    # equal up to float32 rounding: parent and child cut the batch into slices of different
    # sizes (the slice size follows the thread count), and OpenBLAS's matrix product may
    # round a row differently in a different-sized block (seen with numpy 2.4.6 / OpenBLAS 0.3.31)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_embed_workers_encode_alone_and_equal():
    """The workers of ``bimine embed --workers N`` (:func:`bimine.embed._encode_in_pool`) encode
    in one thread each, in order, and get the parent's embeddings."""
    from bimine.embed import _encode_in_pool

    cfg, weights = _model("int8")
    enc = DANEncoder(cfg, weights, batch_size=300)
    batches = [MULTI * 3] * 5
    want = np.concatenate([enc.encode(b, "en") for b in batches])
    got = np.concatenate(list(_encode_in_pool(_WithThreads(enc), iter(batches), "en", 2)))
    assert (got[:, 0] == 1).all() and enc._thread_count() == usable_cores()
    np.testing.assert_allclose(got[:, 1:], want, rtol=1e-6, atol=1e-6)  # float32 rounding: as above


class _WithThreads:
    """An encoder that puts the DAN's thread count in front of each embedding."""

    def __init__(self, enc):
        self.enc, self.dim = enc, enc.dim + 1

    def encode(self, batch, lang):
        out = self.enc.encode(batch, lang)
        return np.concatenate([np.full((len(batch), 1), self.enc._thread_count(), np.float32), out], axis=1)


_CHILD_ENCODER = None


def _encode_in_child(sents):
    return _CHILD_ENCODER._thread_count(), _CHILD_ENCODER.encode(sents, "en")


def _kernel_signatures() -> dict[str, int]:
    from bimine.encoders import _dan_kernels
    from bimine.text import _kernels, _piece_kernels

    return {f"{m.__name__}.{name}": len(d.signatures) for m in (_kernels, _piece_kernels, _dan_kernels)
            for name, d in vars(m).items() if hasattr(d, "signatures") and hasattr(d, "py_func")}


def test_warm_up_loads_the_kernels_a_real_batch_uses(shipped):
    """The background warm-up of a loaded encoder (``_warm_kernels``) runs each kernel of the
    encode path with the array types of a real batch: after it, encoding text of many scripts
    (romanised words and new words included) needs no further kernel signature. Its thread
    swallows errors (the real call raises them), so this runs it in the open."""
    from bimine.encoders.dan import _warm_kernels
    from bimine.jitcache import wait_for_background

    fast, _ = shipped
    wait_for_background()
    _warm_kernels(fast.featurizer, *fast._towers[fast.config.towers()[0]])
    before = _kernel_signatures()
    assert before["bimine.text._kernels.featurize"] >= 1 and before["bimine.text._piece_kernels.emit"] >= 1
    assert before["bimine.encoders._dan_kernels.pool_int4"] >= 1
    fast.encode(MULTI + ["Привет, мир", "こんにちは世界", "unseenwordzzq qqxyzzy"], "en")
    assert _kernel_signatures() == before


def test_loading_the_encoder_loads_its_kernels_in_the_background():
    """In a fresh process, loading the shipped model starts the warm-up thread, and once it
    is done the kernels have their signatures without any encode call."""
    import subprocess
    import sys

    code = (
        "from bimine.encoders.dan import DANEncoder\n"
        "from bimine.encoders.base import default_model_path\n"
        "from bimine.jitcache import wait_for_background\n"
        "enc = DANEncoder.load(default_model_path(), backend='numba')\n"
        "wait_for_background()\n"
        "from bimine.text import _kernels, _piece_kernels\n"
        "from bimine.encoders import _dan_kernels\n"
        "print(len(_kernels.featurize.signatures), len(_piece_kernels.emit.signatures),\n"
        "      len(_dan_kernels.pool_int4.signatures))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    a, b, c = r.stdout.split()
    assert int(a) >= 1 and int(b) >= 1 and int(c) >= 1, r.stdout
