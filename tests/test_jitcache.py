"""numba's compiled kernels are cached outside the package (issue 55 §1): a cache inside an
installed package is left behind by ``pip uninstall`` and shadows a later editable install.
CI runs the README's two commands one after the other and then ``bimine --help`` (.ci/run)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import bimine

PACKAGE = Path(bimine.__file__).resolve().parent

# compiles and caches one small kernel (cache=True), as any command's first use does
SNIPPET = """
import numpy as np, bimine, os
from bimine.documents._align_kernel import _dot
_dot(np.ones((2, 4), np.float32), 0, np.ones((2, 4), np.float32), 1)
print(os.environ["NUMBA_CACHE_DIR"])
"""


def _cache_files(folder: Path, since: float) -> list[Path]:
    return [p for p in folder.rglob("*") if p.suffix in (".nbi", ".nbc") and p.stat().st_mtime >= since]


def test_kernels_are_cached_in_the_user_cache_not_the_package(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    start = time.time() - 1
    r = subprocess.run([sys.executable, "-c", SNIPPET], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    folder = tmp_path / "cache" / "bimine" / "numba"
    assert r.stdout.strip() == str(folder)
    assert _cache_files(folder, start), "the kernel was not cached in the user cache folder"
    assert not _cache_files(PACKAGE, start), "numba wrote its cache inside the package"


def test_a_cache_folder_the_user_set_is_kept(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "mine"))
    r = subprocess.run([sys.executable, "-c", SNIPPET], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "mine")
    assert _cache_files(tmp_path / "mine", 0)


def test_an_unwritable_home_falls_back_to_tmpdir(tmp_path, monkeypatch):
    from bimine import jitcache

    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setenv("HOME", str(blocked))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(jitcache.tempfile, "tempdir", None)  # re-read TMPDIR
    folder = jitcache.user_cache_dir()
    assert folder.startswith(str(tmp_path / "tmp")) and os.path.isdir(folder)
