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
    assert "3 kept, 0 broken" in r.stdout


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



def test_a_cycle_inside_a_package_and_a_private_module_import_break_the_contracts(tmp_path):
    shutil.copytree(ROOT / "bimine", tmp_path / "bimine", ignore=shutil.ignore_patterns("models", "__pycache__", "*.so"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    margin = tmp_path / "bimine" / "scoring" / "margin.py"  # rescore imports margin: margin back is a cycle
    margin.write_text(margin.read_text() + "\n\ndef _back():\n    from bimine.scoring import rescore  # noqa: F401\n")
    langs = tmp_path / "bimine" / "langs.py"  # bimine.text._kernels is private to bimine.text
    langs.write_text(langs.read_text() + "\n\ndef _k():\n    from bimine.text import _kernels  # noqa: F401\n")
    r = _lint(tmp_path)
    assert r.returncode != 0
    assert "No cycles are allowed in bimine.scoring" in r.stdout, r.stdout
    assert "bimine.langs -> bimine.text._kernels" in r.stdout, r.stdout

def _private_imports_across_packages(root: Path) -> list[str]:
    """``from bimine.a... import _x`` (or of a private module ``bimine.a._m``) in a file of
    another top-level package than ``a``: what one package keeps to itself, used by another."""
    import ast

    found = []
    for path in sorted((root / "bimine").rglob("*.py")):
        rel = path.relative_to(root / "bimine").parts
        own = rel[0] if len(rel) > 1 else rel[0][:-3]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bimine.")):
                continue
            parts = node.module.split(".")
            if parts[1] == own:
                continue
            for alias in node.names:
                names = parts[2:] + [alias.name]
                if any(n.startswith("_") and not n.startswith("__") for n in names):
                    found.append(f"{'/'.join(rel)}: from {node.module} import {alias.name}")
    return found


def test_no_private_name_is_imported_across_packages():
    assert _private_imports_across_packages(ROOT) == []


def test_the_private_name_check_can_fail(tmp_path):
    (tmp_path / "bimine" / "a").mkdir(parents=True)
    (tmp_path / "bimine" / "b").mkdir()
    (tmp_path / "bimine" / "a" / "m.py").write_text("from bimine.b.n import _hidden\nfrom bimine.a.k import _own\n")
    (tmp_path / "bimine" / "a" / "p.py").write_text("from bimine.b._kernels import public\n")
    assert _private_imports_across_packages(tmp_path) == [
        "a/m.py: from bimine.b.n import _hidden", "a/p.py: from bimine.b._kernels import public"]
