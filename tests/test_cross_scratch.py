"""The from-scratch cross-encoder (issue 15 (b)): it learns translation pairs from nothing but
hashed tokens, and its save/load round trip gives the same probabilities."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import rankdata

from bimine.errors import BimineError, InputError
from bimine.scoring.cross_encoder import CrossRescorer
from bimine.scoring.cross_scratch import ScratchCrossRescorer
from bimine.scoring.rescore import load_cross_stage
from bimine.text.io import read_parallel
from bimine.training.cross_encoder import train_scratch_cross

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SMALL = {"features": {"buckets": 1 << 16, "by_script": True, "translit": True}, "embed_dim": 32, "d_model": 64,
         "layers": 1, "heads": 2, "ffn": 128, "max_tokens": 48, "output_dim": 1}


def translations_and_mismatches(path: Path, seed: int):
    pairs = list(read_parallel(str(path), None))
    n = len(pairs)
    other = (np.arange(n) + np.random.default_rng(seed).integers(1, n, size=n)) % n  # never the pair itself
    src = [p[0] for p in pairs] * 2
    tgt = [p[1] for p in pairs] + [pairs[j][1] for j in other]
    return src, tgt, np.r_[np.ones(n), np.zeros(n)]


def auc(y: np.ndarray, p: np.ndarray) -> float:
    r = rankdata(p)
    n1 = y.sum()
    return float((r[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * (len(y) - n1)))


@pytest.fixture(scope="module")
def trained():
    torch.set_num_threads(1)
    src, tgt, y = translations_and_mismatches(EXAMPLES / "train.en-fr.tsv", 0)
    return train_scratch_cross(src, tgt, y, epochs=4, model=SMALL)


def test_learns_translations_from_random_weights(trained):
    src, tgt, y = translations_and_mismatches(EXAMPLES / "dev.en-fr.tsv", 1)  # 300 news pairs it never saw
    p = trained.predict(src, tgt)
    assert p.shape == (600,) and np.all((p >= 0) & (p <= 1))
    # chance is 0.5; 4 epochs on 977 news pairs reach ~0.82 here
    assert auc(y, p) > 0.7


def test_save_load_round_trip(trained, tmp_path):
    src, tgt, _ = translations_and_mismatches(EXAMPLES / "dev.en-fr.tsv", 2)
    trained.save(tmp_path / "cross")
    back = load_cross_stage(tmp_path / "cross")  # the kind decides the class: no e5 needed
    assert isinstance(back, ScratchCrossRescorer)
    assert back.fingerprint == trained.fingerprint
    np.testing.assert_array_equal(back.predict(src[:100], tgt[:100]), trained.predict(src[:100], tgt[:100]))
    (tmp_path / "cross" / "cross.safetensors").write_bytes(b"")  # a damaged file: a clear error
    with pytest.raises(BimineError, match="damaged or not a safetensors file"):
        load_cross_stage(tmp_path / "cross")
    with pytest.raises(BimineError, match="trained from scratch"):
        CrossRescorer.load(tmp_path / "cross")  # the e5 loader refuses the other kind by name


def test_needs_both_labels():
    with pytest.raises(InputError, match="both positive and negative"):
        train_scratch_cross(["a", "b"], ["c", "d"], np.ones(2), epochs=1, model=SMALL)
