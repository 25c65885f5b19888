"""Embedding stores: contents, resume, kill -9 at any moment, and mismatches."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from bimine import load_encoder
from bimine.errors import InputError
from bimine.store import EmbeddingStore, build_store
from bimine.store.store import EmbedRun


def write_corpus(path, n, seed=0):
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", "chat", "Hund", "été", "naïve", "x", "42"]
    lines = [" ".join(rng.choice(words, size=rng.integers(0, 12))) for _ in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines


def test_store_rows_equal_direct_embedding(tmp_path, tiny_model):
    lines = write_corpus(tmp_path / "in.txt", 2500)
    enc = load_encoder(tiny_model)
    st, rep = build_store(str(tmp_path / "in.txt"), tmp_path / "st", enc, "en", shard_size=1000, progress=False)
    assert st.rows == 2500 and [s["rows"] for s in st.manifest["shards"]] == [1000, 1000, 500]
    got = EmbeddingStore.open(tmp_path / "st").load()
    want = enc.encode(lines, "en").astype(np.float16).astype(np.float32)
    # batches differ (shards vs one call), so float sums may round differently: 1 float16 ulp
    np.testing.assert_allclose(got, want, atol=2e-3, rtol=0)
    rows = np.array([2499, 0, 1000, 999, 1500, 0])  # across shards, any order, repeated
    np.testing.assert_array_equal(st.take(rows), got[rows])
    assert st.take(np.zeros(0, int)).shape == (0, st.dim)
    blank = [i for i, s in enumerate(lines) if not s.strip()]
    assert st.blank_lines().tolist() == blank and st.manifest["blank_lines"] == len(blank)
    assert rep.seconds > 0 and rep.reused == 0 and "embedded 2500 lines" in rep.summary()
    _, again = build_store(str(tmp_path / "in.txt"), tmp_path / "st", enc, "en", shard_size=1000, progress=False)
    assert again.reused == 2500 and "nothing to do" in again.summary()


def test_rerun_skips_finished_shards(tmp_path, tiny_model, monkeypatch):
    write_corpus(tmp_path / "in.txt", 3000)
    enc = load_encoder(tiny_model)
    build_store(str(tmp_path / "in.txt"), tmp_path / "st", enc, "en", shard_size=1000, progress=False)
    (tmp_path / "st" / "manifest.json").unlink()  # as if killed before the manifest
    os.remove(tmp_path / "st" / "shard-00001.npy")
    calls = []
    orig = enc.encode
    monkeypatch.setattr(enc, "encode", lambda s, lang: calls.append(len(s)) or orig(s, lang))
    # progress.json is gone after a complete build: recreate the state of an interrupted one
    import json

    from bimine.store.store import FORMAT, file_checksum

    ident = {"format": FORMAT, "model_id": enc.model_id, "dim": enc.dim, "lang": "en", "input": "in.txt",
             "input_sha256": file_checksum(tmp_path / "in.txt"), "column": None, "shard_size": 1000}
    (tmp_path / "st" / "progress.json").write_text(json.dumps(ident))
    st, rep = build_store(str(tmp_path / "in.txt"), tmp_path / "st", enc, "en", shard_size=1000, progress=False)
    assert sum(calls) == 1000 and st.rows == 3000
    assert rep.reused == 2000 and "embedded 1000 lines" in rep.summary()


def _embed_cmd(inp, out, model):
    return [sys.executable, "-m", "bimine", "embed", str(inp), "--lang", "en", "--model", str(model),
            "-o", str(out), "--store", "--shard-size", "5000", "--no-progress", "--batch-size", "1000"]


def test_sigkill_at_any_moment_then_rerun_is_byte_identical(tmp_path, tiny_model):
    write_corpus(tmp_path / "in.txt", 60000, seed=1)
    ref = tmp_path / "ref"
    subprocess.run(_embed_cmd(tmp_path / "in.txt", ref, tiny_model), check=True, capture_output=True)
    out = tmp_path / "killed"
    kills = 0
    for delay in (0.3, 0.6, 0.9, 1.2, 1.5, 1.8, 2.2):
        p = subprocess.Popen(_embed_cmd(tmp_path / "in.txt", out, tiny_model), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(delay)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        p.wait()
        # a shard under its final name is always complete
        for f in out.glob("shard-*.npy"):
            assert np.load(f).shape == (5000, 16)
    assert kills >= 2
    subprocess.run(_embed_cmd(tmp_path / "in.txt", out, tiny_model), check=True, capture_output=True)
    names = sorted(p.name for p in ref.iterdir())
    assert names == sorted(p.name for p in out.iterdir())
    for n in names:
        assert (ref / n).read_bytes() == (out / n).read_bytes(), n


def test_mismatches_are_errors(tmp_path, tiny_model):
    from conftest import make_tiny_model

    write_corpus(tmp_path / "in.txt", 100)
    enc = load_encoder(tiny_model)
    build_store(str(tmp_path / "in.txt"), tmp_path / "st", enc, "en", shard_size=50, progress=False)
    # same input, model and shard size: nothing to do
    st, _ = build_store(str(tmp_path / "in.txt"), tmp_path / "st", enc, "en", shard_size=50, progress=False)
    assert st.rows == 100
    other = load_encoder(make_tiny_model(tmp_path / "other", seed=1))
    with pytest.raises(InputError, match="another input or model"):
        build_store(str(tmp_path / "in.txt"), tmp_path / "st", other, "en", shard_size=50, progress=False)
    with pytest.raises(InputError, match="embedded with model"):
        EmbeddingStore.open(tmp_path / "st").check_model(other.model_id)
    with pytest.raises(InputError, match="not a complete embedding store"):
        EmbeddingStore.open(tmp_path)


def test_empty_file_and_only_blank_lines(tmp_path, tiny_model):
    enc = load_encoder(tiny_model)
    (tmp_path / "empty.txt").write_text("")
    st, _ = build_store(str(tmp_path / "empty.txt"), tmp_path / "e", enc, "en", progress=False)
    assert st.rows == 0 and st.load().shape == (0, 16)
    (tmp_path / "blank.txt").write_text("\n  \n\n")
    st, _ = build_store(str(tmp_path / "blank.txt"), tmp_path / "b", enc, "en", progress=False)
    assert st.rows == 3 and st.blank_lines().tolist() == [0, 1, 2]


def test_ray_executor_without_ray_is_a_clear_error(monkeypatch):
    import sys

    from bimine.distributed.ray_executor import require_ray
    from bimine.errors import ConfigError

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError, match=r"needs Ray: pip install 'bimine\[ray\]'"):
        require_ray()


def test_bad_executor_or_an_encoder_without_spec_fails_before_any_work(tmp_path, tiny_model):
    from bimine.errors import ConfigError

    p = tmp_path / "in.txt"
    p.write_text("a\nb\n")
    enc = load_encoder(str(tiny_model))
    with pytest.raises(ConfigError, match="unknown executor 'nope': local or ray"):
        build_store(str(p), tmp_path / "st1", enc, "en", run=EmbedRun(executor="nope"), progress=False)
    del enc.spec  # as if built in Python
    with pytest.raises(ConfigError, match="needs an encoder loaded by name or folder"):
        build_store(str(p), tmp_path / "st2", enc, "en", run=EmbedRun(executor="ray"), progress=False)
    assert not (tmp_path / "st1").exists() and not (tmp_path / "st2").exists()


def test_store_name_is_the_digest_of_what_the_store_depends_on():
    """A work dir of an earlier run is found again only if the name is computed as before: the
    first 16 hex digits of the SHA-256 of the sorted JSON (language code normalised)."""
    import hashlib
    import json

    from bimine.store.store import json_digest, store_name

    want = hashlib.sha256(json.dumps({"input_sha256": "ab", "model_id": "dan-1", "lang": "fr", "shard_size": 10},
                                     sort_keys=True).encode()).hexdigest()[:16]
    assert store_name("ab", "dan-1", "fra", 10) == store_name("ab", "dan-1", "fr", 10) == want
    assert json_digest({"b": 1, "a": [2]}) == hashlib.sha256(b'{"a": [2], "b": 1}').hexdigest()[:16]
    assert len({store_name("ab", "dan-1", "fr", 10), store_name("ab", "dan-2", "fr", 10),
                store_name("ac", "dan-1", "fr", 10), store_name("ab", "dan-1", "de", 10),
                store_name("ab", "dan-1", "fr", 11)}) == 5
