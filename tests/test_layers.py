"""The package's layers (pyproject.toml, [tool.importlinter]): checked with import-linter, on
the package as it is and on a copy given one upward import (the check must be able to fail)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("importlinter")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _layers() -> list[str]:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in cfg["contracts"] if c["type"] == "layers"]
    return [m.strip() for layer in contract["layers"] for m in layer.split("|")]


def test_the_layers_contract_is_kept():
    r = _lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 kept, 0 broken" in r.stdout


def test_every_module_of_the_package_is_in_a_layer():
    """A new subpackage or top-level module outside the contract would escape the check."""
    named = set(_layers())
    found = {f"bimine.{p.stem}" for p in (ROOT / "bimine").glob("*.py") if p.stem not in ("__init__", "__main__")}
    found |= {f"bimine.{p.parent.name}" for p in (ROOT / "bimine").glob("*/__init__.py")}
    found.discard("bimine.models")  # the shipped model's files: no code
    assert found - named == set()
    assert named - found == set()


def test_an_upward_import_breaks_the_contract(tmp_path):
    shutil.copytree(ROOT / "bimine", tmp_path / "bimine", ignore=shutil.ignore_patterns("models", "__pycache__", "*.so"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    scoring = tmp_path / "bimine" / "scoring" / "margin.py"
    scoring.write_text(scoring.read_text() + "\n\ndef _up():\n    from bimine.mining import select  # noqa: F401\n")
    r = _lint(tmp_path)
    assert r.returncode != 0
    assert "bimine.scoring is not allowed to import bimine.mining" in r.stdout
    assert "bimine.scoring.margin -> bimine.mining.select" in r.stdout
