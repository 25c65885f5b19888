"""``--device`` values are checked before any work (issue 55 §2): a device this PyTorch or
this machine lacks is a one-line error saying what to use, not an ``AssertionError`` from
deep in PyTorch after the aligner's training."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bimine.devices import check_device
from bimine.errors import ConfigError

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(torch.version.cuda is not None, reason="needs a CPU-only PyTorch")
def test_train_divergence_on_a_cuda_device_of_a_cpu_only_torch_is_one_line(tmp_path):
    t = time.time()
    r = subprocess.run([sys.executable, "-m", "bimine", "train-divergence", "--src", ROOT / "examples" / "sample.en",
                        "--tgt", ROOT / "examples" / "sample.fr", "--src-lang", "en", "--tgt-lang", "fr",
                        "-o", tmp_path / "d.safetensors", "--device", "cuda:7"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "BIMINE_PROGRESS": "0"})
    assert r.returncode == 2, r.stderr
    assert r.stderr == "error: --device cuda:7: this PyTorch has no CUDA (a CPU-only build); use cpu\n", r.stderr
    assert time.time() - t < 30  # before the word aligner's training
    assert not (tmp_path / "d.safetensors").exists()


def test_check_device_with_the_torch_of_this_machine():
    assert check_device(None) is None and check_device("cpu") == "cpu"
    with pytest.raises(ConfigError, match="--device foo: not a device PyTorch knows; use cpu, cuda or cuda:N"):
        check_device("foo")
    with pytest.raises(ConfigError, match="--device meta: a 'meta' device cannot train or score"):
        check_device("meta")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="--device cuda:7: .*use cpu"):
            check_device("cuda:7")


def test_check_device_counts_the_gpus(monkeypatch):
    """On a machine with two GPUs (faked): cuda and cuda:1 pass, cuda:7 names the two."""
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert check_device("cuda") == "cuda" and check_device("cuda:1") == "cuda:1"
    with pytest.raises(ConfigError, match=r"--device cuda:7: PyTorch sees 2 CUDA GPU\(s\) \(cuda:0 to cuda:1\)"):
        check_device("cuda:7")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match="--device cuda: PyTorch sees no CUDA GPU on this machine; use cpu"):
        check_device("cuda")


def test_the_library_checks_too():
    from bimine.scoring.vdpwi import torch_device

    assert torch_device("cpu") == torch.device("cpu")
    with pytest.raises(ConfigError, match="--device nonsense"):
        torch_device("nonsense")
