from __future__ import annotations

import os
from pathlib import Path

import pytest

from bimine.distributed.ray_executor import prepare_driver

# The Ray tests start their own clusters (ray.init in fixtures), two sessions in this process:
# the same driver settings as bimine's own ray.init, set before any (issue 41: without them a
# thread of Ray's could crash this process at exit, after the summary).
prepare_driver()

SHARED = Path(os.environ.get("BIMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The project's shared data folder; tests that need it skip when it is absent."""
    if not (SHARED / "train").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set BIMINE_SHARED_DATA)")
    return SHARED


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass


def shipped_pairs() -> list[str]:
    """The shipped en-fr pairs (examples/train and dev), as TSV lines ``en<TAB>fr``."""
    root = Path(__file__).resolve().parents[1] / "examples"
    return [ln for f in ("train.en-fr.tsv", "dev.en-fr.tsv") for ln in (root / f).read_text(encoding="utf-8").splitlines()]


def unaligned_sides(seed: int) -> tuple[list[str], list[str]]:
    """The shipped pairs as two sides to mine: French shuffled (``seed``), a blank line
    inserted on each side (English line 401, French line 901)."""
    import numpy as np

    rows = [ln.split("\t") for ln in shipped_pairs()]
    en, fr = [r[0] for r in rows], [r[1] for r in rows]
    fr = [fr[i] for i in np.random.default_rng(seed).permutation(len(fr))]
    en.insert(400, "")
    fr.insert(900, "")
    return en, fr


def make_tiny_model(path: Path, dim: int = 16, buckets: int = 4096, seed: int = 0, by_script: bool = False) -> Path:
    """A random DAN model folder (no torch needed), for tests of the embedding plumbing."""
    import json

    import numpy as np
    from safetensors.numpy import save_file

    from bimine.encoders.dan import DANConfig
    from bimine.text.features import FeatureConfig

    cfg = DANConfig(features=FeatureConfig(buckets=buckets, by_script=by_script), embed_dim=dim, hidden=(dim,),
                    output_dim=dim)
    rng = np.random.default_rng(seed)
    w = {"shared.embedding.weight": rng.standard_normal((buckets, dim)).astype(np.float32)}
    for i, (a, b) in enumerate(cfg.layer_dims()):
        w[f"shared.layers.{i}.weight"] = (rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32)
        w[f"shared.layers.{i}.bias"] = np.zeros(b, np.float32)
    path.mkdir(parents=True, exist_ok=True)
    save_file(w, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps({"architecture": "dan", "model": cfg.to_dict()}))
    return path


@pytest.fixture
def tiny_model(tmp_path) -> Path:
    return make_tiny_model(tmp_path / "tiny-model")


def bucc_files(tmp_path: Path, gold: dict[str, str] | None = None, src: dict[str, str] | None = None) -> list:
    """Tiny BUCC-style train/test files in ``tmp_path`` (``gold``/``src`` override files by name);
    returns the ``eval bucc`` arguments that name them."""
    def write(name, rows):
        (tmp_path / name).write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")

    for split in ("train", "test"):
        write(f"{split}.src", [("s1", "alpha beta gamma"), ("s2", "delta epsilon"), ("s3", "zeta eta theta")])
        write(f"{split}.tgt", [("t1", "delta epsilon"), ("t2", "alpha beta gamma"), ("t3", "iota kappa")])
        write(f"{split}.gold", [("s1", "t2"), ("s2", "t1")])
    for name, text in {**(gold or {}), **(src or {})}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return ["eval", "bucc"] + [x for s in ("train", "test") for k in ("src", "tgt", "gold")
                               for x in (f"--{s}-{k}", tmp_path / f"{s}.{k}")] + ["--src-lang", "en", "--tgt-lang", "en"]
