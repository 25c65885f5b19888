"""The public surface is typed (issue 74): ``py.typed`` ships, and mypy finds no error in the files
``[tool.mypy]`` names (bimine/__init__.py, api.py, the Encoder class, the user's encoder, in-memory
mining). mypy is in the ``test`` extra, so CI runs this check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_py_typed_ships():
    assert (ROOT / "bimine" / "py.typed").is_file()
    assert '"bimine" = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One mypy cache for both checks: the second reads bimine's modules from it."""
    return tmp_path_factory.mktemp("mypy-cache")


def test_mypy_finds_no_error_in_the_public_surface(cache):
    pytest.importorskip("mypy", reason="mypy is in the test extra")
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), "--no-color-output"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "Success: no issues found" in r.stdout


def test_a_typing_error_in_a_checked_file_is_found(tmp_path, cache):
    """The check can fail: the same configuration finds a wrong call to a public function."""
    pytest.importorskip("mypy", reason="mypy is in the test extra")
    bad = tmp_path / "bad_use.py"
    bad.write_text("import bimine\n\nbimine.mine(['a'], ['b'], k='four')\n", encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), "--no-color-output",
                        "--follow-imports", "silent", str(bad)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and 'Argument "k" to "mine" has incompatible type "str"' in r.stdout, r.stdout
