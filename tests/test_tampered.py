"""Files changed behind the project's back (issue 72 §5): a store's shard replaced by another
store's shard of the same shape, a model folder whose config.json or weights were edited."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import make_tiny_model

from bimine.cli.main import registered
from bimine.encoders.base import default_model_path, model_digest
from bimine.errors import ConfigError, InputError
from bimine.store.store import EmbeddingStore

ROOT = Path(__file__).resolve().parents[1]
EN, FR = ROOT / "examples" / "sample.en", ROOT / "examples" / "sample.fr"
PAIR = ("--src-lang", "en", "--tgt-lang", "fr")
cli = registered()


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _one_line_error(r, *words: str) -> None:
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.output
    for w in words:
        assert w in lines[0], (w, lines[0])


# ==================================================================== stores


@pytest.fixture
def two_stores(tmp_path) -> tuple[Path, Path]:
    """Stores of sample.en and sample.fr (360 lines each) in shards of 100 rows: shards of the
    same shapes, different vectors."""
    out = []
    for name, path in (("en", EN), ("fr", FR)):
        st = tmp_path / f"{name}.store"
        r = _run("embed", path, "--lang", name, "--store", "-o", st, "--shard-size", "100", "--no-progress")
        assert r.exit_code == 0, r.output
        out.append(st)
    return out[0], out[1]


def test_the_manifest_records_each_shards_checksum(two_stores):
    import hashlib

    en, _ = two_stores
    m = json.loads((en / "manifest.json").read_text())
    assert [s["sha256"] for s in m["shards"]] == [hashlib.sha256((en / s["file"]).read_bytes()).hexdigest()
                                                   for s in m["shards"]]
    EmbeddingStore.open(en)  # verified: nothing to say


def test_a_shard_replaced_by_another_stores_shard_is_refused(tmp_path, two_stores):
    """The issue: mine --src-store wrote 360 pairs, 0 of them right, exit 0."""
    en, fr = two_stores
    shutil.copy(fr / "shard-00001.npy", en / "shard-00001.npy")
    EmbeddingStore.open(en, verify=False).check()  # the header and size are a shard's: only the bytes tell
    with pytest.raises(InputError, match="shard-00001.npy is not the shard this store wrote"):
        EmbeddingStore.open(en)
    r = _run("mine", EN, FR, *PAIR, "--src-store", en, "-o", tmp_path / "p.tsv", "--no-progress")
    _one_line_error(r, "shard-00001.npy is not the shard this store wrote", "delete the store")
    assert not (tmp_path / "p.tsv").exists()
    r = _run("embed", EN, "--lang", "en", "--store", "-o", en, "--shard-size", "100", "--no-progress")
    _one_line_error(r, "shard-00001.npy is not the shard this store wrote")


def test_a_store_without_checksums_still_opens(two_stores):
    """A store written before checksums: nothing to verify, its shards are trusted as before."""
    en, _ = two_stores
    m = json.loads((en / "manifest.json").read_text())
    for s in m["shards"]:
        del s["sha256"]
    (en / "manifest.json").write_text(json.dumps(m))
    assert EmbeddingStore.open(en).rows == 360


# ==================================================================== model folders


@pytest.fixture(scope="module")
def default_copy(tmp_path_factory) -> Path:
    """The shipped model's folder, its weights linked (91 MB are not copied)."""
    d = tmp_path_factory.mktemp("model") / "default"
    d.mkdir()
    for f in default_model_path().iterdir():
        if f.is_file():
            (d / f.name).symlink_to(f) if f.name == "model.safetensors" else shutil.copy(f, d / f.name)
    return d


def _edited(folder: Path, tmp_path: Path, edit, *, unseal: bool = False) -> Path:
    out = tmp_path / "edited"
    shutil.copytree(folder, out, symlinks=True)
    meta = json.loads((out / "config.json").read_text())
    edit(meta["model"])
    if unseal:
        del meta["digest"]
    (out / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
    return out


@pytest.mark.parametrize("edit", [
    lambda m: m.update(output_dim=512),
    lambda m: m["features"].update(char_ngrams=[3, 4]),
    lambda m: m["features"].update(lowercase=False),
], ids=["output_dim", "char_ngrams", "lowercase"])
def test_an_edited_config_is_refused_in_one_line(tmp_path, default_copy, edit):
    """The issue: output_dim 384 -> 512 gave a broadcast traceback; char_ngrams or lowercase
    changed gave 15-30 fewer right pairs with no word."""
    model = _edited(default_copy, tmp_path, edit)
    for args in (["embed", EN, "--lang", "en", "-o", tmp_path / "x.npy"],
                 ["divergence", ROOT / "examples" / "dev.en-fr.tsv", *PAIR, "-o", tmp_path / "d.tsv"]):
        _one_line_error(_run(*args, "-m", model), "config.json was changed after the model was written",
                        'delete the "digest" entry')


def test_the_shipped_model_and_its_copy_load(default_copy, tmp_path):
    r = _run("embed", EN, "--lang", "en", "-m", default_copy, "-o", tmp_path / "x.npy", "--no-progress")
    assert r.exit_code == 0, r.output


def test_an_unsealed_edit_loads_and_a_shape_mismatch_is_one_line(tmp_path, default_copy):
    """Deleting the digest is the user's way to say 'I changed it on purpose'; a config whose
    sizes no longer fit its weights is then still one line, not numpy's traceback."""
    model = _edited(default_copy, tmp_path, lambda m: m.update(output_dim=512), unseal=True)
    _one_line_error(_run("embed", EN, "--lang", "en", "-m", model, "-o", tmp_path / "x.npy"),
                    "config and weights are not of one model")
    shutil.rmtree(model)
    model = _edited(default_copy, tmp_path, lambda m: m["features"].update(lowercase=False), unseal=True)
    assert _run("embed", EN, "--lang", "en", "-m", model, "-o", tmp_path / "x.npy", "--no-progress").exit_code == 0


def test_weights_swapped_for_another_models_are_refused_before_any_vector(tmp_path):
    """Two models of one config: the same tensors' names, shapes and sizes, other values."""
    from bimine.encoders.dan import DANEncoder

    a, b = make_tiny_model(tmp_path / "a", seed=1), make_tiny_model(tmp_path / "b", seed=2)
    for m in (a, b):
        meta = json.loads((m / "config.json").read_text())
        meta["digest"] = model_digest(meta, m / "model.safetensors")
        (m / "config.json").write_text(json.dumps(meta))
    DANEncoder.load(a).encode(["a sentence"], "en")  # sealed and whole: fine
    shutil.copy(b / "model.safetensors", a / "model.safetensors")
    enc = DANEncoder.load(a)  # its size and header are those recorded
    with pytest.raises(ConfigError, match="model.safetensors was changed after the model was written"):
        enc.encode(["a sentence"], "en")
    r = _run("embed", EN, "--lang", "en", "-m", a, "-o", tmp_path / "x.npy")
    _one_line_error(r, "model.safetensors was changed")
    assert not (tmp_path / "x.npy").exists()
    with pytest.raises(ConfigError, match="model.safetensors was changed"):
        DANEncoder.load(a).model_id  # noqa: B018


def test_a_damaged_digest_entry_is_one_line(tmp_path):
    from bimine.encoders.dan import DANEncoder

    m = make_tiny_model(tmp_path / "m")
    meta = json.loads((m / "config.json").read_text())
    meta["digest"] = "oops"
    (m / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match='"digest" entry is damaged'):
        DANEncoder.load(m)
    assert np.isfinite(DANEncoder.load(make_tiny_model(tmp_path / "n")).encode(["x"], "en")).all()  # unsealed: loads
