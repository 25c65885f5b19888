"""Damaged embedding stores (issue 55 §2, §3): a store is checked before it is trusted.

Reading one (``mine --src-store``), a missing or cut short shard or ``blank-lines.npy``, a
manifest that is not JSON or at odds with itself or with the input, is a one-line error
naming the store, the file and the fix. Resuming into one (``embed --store``, and the stores
of ``mine --work-dir``) re-embeds what is missing or damaged, and says so in one line; a
manifest that cannot be read is a one-line error there too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bimine import load_encoder
from bimine.errors import InputError
from bimine.store import EmbeddingStore, build_store

ROOT = Path(__file__).resolve().parents[1]
EN, FR = ROOT / "examples" / "sample.en", ROOT / "examples" / "sample.fr"


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """Stores of sample.en (4 shards of up to 100 rows) and sample.fr, built as the CLI does."""
    d = tmp_path_factory.mktemp("stores")
    enc = load_encoder("default")
    build_store(str(EN), d / "en", enc, "en", shard_size=100, progress=False)
    build_store(str(FR), d / "fr", enc, "fr", progress=False)
    return d


def _manifest(store: Path, **changes) -> None:
    m = json.loads((store / "manifest.json").read_text())
    m.update(changes)
    (store / "manifest.json").write_text(json.dumps(m))


DAMAGE = {  # name: (what is done to the store, words the error names)
    "shard missing": (lambda s: (s / "shard-00001.npy").unlink(), ["shard-00001.npy is missing", "again"]),
    "blank-lines missing": (lambda s: (s / "blank-lines.npy").unlink(), ["blank-lines.npy is missing"]),
    "shard cut short": (lambda s: os.truncate(s / "shard-00002.npy", 5000), ["shard-00002.npy is cut short"]),
    "shard of another shape": (lambda s: np.save(s / "shard-00003.npy", np.zeros((60, 3), np.float16)),
                               ["shard-00003.npy holds", "(60, 3)"]),
    "manifest not JSON": (lambda s: (s / "manifest.json").write_text("{bad"), ["manifest.json is damaged", "delete"]),
    "manifest says 0 rows": (lambda s: _manifest(s, rows=0), ["manifest.json is damaged", "0 rows", "delete"]),
    "manifest without shards": (lambda s: _manifest(s, rows=0, shards=[], input_lines=0),
                                ["manifest.json is damaged", "0 rows", "360 lines"]),
}


def _damaged(stores: Path, tmp_path: Path, how: str) -> Path:
    st = tmp_path / "en.store"
    shutil.copytree(stores / "en", st)
    DAMAGE[how][0](st)
    return st


def _bimine(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bimine", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "BIMINE_PROGRESS": "0"})


def _one_line_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.count("error:") == 1 and r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def _mine(st: Path, out: Path, stores: Path) -> subprocess.CompletedProcess:
    return _bimine("mine", EN, FR, "--src-lang", "en", "--tgt-lang", "fr", "--src-store", st,
                   "--tgt-store", stores / "fr", "-o", out)


@pytest.mark.parametrize("how", ["shard missing", "blank-lines missing", "shard cut short", "manifest not JSON",
                                 "manifest says 0 rows", "manifest without shards"])
def test_mine_refuses_a_damaged_store_in_one_line(stores, tmp_path, how):
    st = _damaged(stores, tmp_path, how)
    _one_line_error(_mine(st, tmp_path / "out.tsv", stores), str(st), *DAMAGE[how][1])
    assert not (tmp_path / "out.tsv").exists()


@pytest.mark.parametrize("how", list(DAMAGE))
def test_every_damage_is_found_on_open(stores, tmp_path, how):
    st = _damaged(stores, tmp_path, how)
    with pytest.raises(InputError) as e:
        EmbeddingStore.open(st).check_rows(360)
    assert str(e.value).startswith(f"{st}: ") and all(w in str(e.value) for w in DAMAGE[how][1]), str(e.value)


def test_embed_store_repairs_a_missing_shard_and_says_so(stores, tmp_path):
    st = _damaged(stores, tmp_path, "shard missing")
    r = _bimine("embed", EN, "--lang", "en", "--store", "--shard-size", "100", "-o", st)
    assert r.returncode == 0, r.stderr
    assert "shard-00001.npy is missing; repairing the store" in r.stderr, r.stderr
    assert "nothing to do" not in r.stderr and "embedded 100 lines" in r.stderr, r.stderr
    for f in sorted(p.name for p in (stores / "en").iterdir()):  # the same bytes as the undamaged store
        assert (st / f).read_bytes() == (stores / "en" / f).read_bytes(), f
    assert not (st / "progress.json").exists()


def test_embed_store_into_an_unreadable_manifest_is_one_line(stores, tmp_path):
    st = _damaged(stores, tmp_path, "manifest not JSON")
    r = _bimine("embed", EN, "--lang", "en", "--store", "--shard-size", "100", "-o", st)
    _one_line_error(r, str(st), "manifest.json is damaged", "delete the store")


@pytest.mark.parametrize("how", ["shard missing", "blank-lines missing", "shard cut short", "shard of another shape",
                                 "manifest says 0 rows", "manifest without shards"])
def test_build_store_repairs_what_its_manifest_allows(stores, tmp_path, how, caplog):
    """The damaged files are embedded again (the whole ones kept), one warning says so, and
    the store is then the same bytes as the undamaged one."""
    st = _damaged(stores, tmp_path, how)
    with caplog.at_level("WARNING", logger="bimine.store.store"):
        built, rep = build_store(str(EN), st, load_encoder("default"), "en", shard_size=100, progress=False)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "repairing the store" in warnings[0], warnings
    assert "nothing to do" not in rep.summary()
    assert built.rows == 360 and EmbeddingStore.open(st).problems() == []
    for f in sorted(p.name for p in (stores / "en").iterdir()):
        assert (st / f).read_bytes() == (stores / "en" / f).read_bytes(), f


def test_progress_file_not_json_is_one_error(stores, tmp_path):
    st = _damaged(stores, tmp_path, "shard missing")
    (st / "manifest.json").unlink()
    (st / "progress.json").write_text("{")
    with pytest.raises(InputError, match=r"progress.json is damaged .*delete the store"):
        build_store(str(EN), st, load_encoder("default"), "en", shard_size=100, progress=False)


def test_a_damaged_work_dir_store_of_mine_is_repaired(stores, tmp_path):
    work = tmp_path / "work"
    args = ["mine", EN, FR, "--src-lang", "en", "--tgt-lang", "fr", "--work-dir", work]
    first = _bimine(*args, "-o", tmp_path / "a.tsv")
    assert first.returncode == 0, first.stderr
    (shard,) = work.glob("src-*.store/shard-00000.npy")
    os.truncate(shard, 1000)
    again = _bimine(*args, "-o", tmp_path / "b.tsv")
    assert again.returncode == 0, again.stderr
    assert "shard-00000.npy is cut short" in again.stderr and "Traceback" not in again.stderr, again.stderr
    assert (tmp_path / "a.tsv").read_bytes() == (tmp_path / "b.tsv").read_bytes()


def test_the_check_reads_headers_not_embeddings(tmp_path):
    """Checking a store costs a header read per file, whatever the size of its shards."""
    st = tmp_path / "big"
    st.mkdir()
    shards = []
    for i in range(200):
        np.lib.format.open_memmap(st / f"shard-{i:05d}.npy", mode="w+", dtype=np.float16, shape=(50_000, 512))
        shards.append({"file": f"shard-{i:05d}.npy", "rows": 50_000})  # 200 x 51 MB, sparse on disk
    np.save(st / "blank-lines.npy", np.zeros(0, np.int64))
    (st / "manifest.json").write_text(json.dumps({
        "format": "bimine-store/1", "model_id": "m", "lang": "en", "input_sha256": "0", "dim": 512,
        "rows": 10_000_000, "shards": shards, "blank_lines": 0}))
    t = time.perf_counter()
    EmbeddingStore.open(st)
    assert time.perf_counter() - t < 1.0
