"""The fast paths of ``bimine filter`` against the straightforward reference they replace:
vectorised output formatting, block reading, compiled rule kernels, shared embeddings."""

from __future__ import annotations

import numpy as np

from bimine.filtering.pipeline import PairBlock, _fmt, format_g, format_scores


def _values() -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate([
        rng.standard_normal(5000) * 10.0 ** rng.integers(-30, 30, 5000),
        rng.integers(-10**16, 10**16, 500).astype(np.float64),
        rng.integers(-5000, 5000, 500).astype(np.float64),
        rng.integers(0, 300, 500) / rng.integers(1, 300, 500),
        [np.nan, -0.0, 0.0, 1e15, 1e15 - 1, -1e15, 999999.5, 9999995.0, 0.5, 1.5, 2.5, np.inf, -np.inf, 5e-324,
         1.7976931348623157e308, 4095, 4096, -1, 1e-5, 1e-4, 123456.5, 0.00704225, 1 / 3],
    ])


def test_format_scores_equals_fmt():
    v = _values()
    assert format_scores(v) == [_fmt(x) for x in v.tolist()]
    assert format_scores(np.arange(10.0)) == [str(i) for i in range(10)]
    assert format_scores(np.zeros(0)) == []


def test_format_g_equals_format_spec():
    v = _values()
    assert format_g(v) == [f"{x:.6g}" for x in v.tolist()]
    assert format_g(np.zeros(0)) == []


def test_block_row_text():
    src, tgt = ["a", "b c", ""], ["x", "", "z\u2028"]
    two = PairBlock(None, src, tgt, 1)
    rows = PairBlock([[a, b] for a, b in zip(src, tgt)], src, tgt, 1)
    lines = PairBlock(None, src, tgt, 1, lines=[f"{a}\t{b}" for a, b in zip(src, tgt)])
    assert two.row_text() == rows.row_text() == lines.row_text() == "a\tx\nb c\t\n\tz\u2028\n"
    assert two.width() == rows.width() == lines.width() == 2
    assert PairBlock(None, [], [], 1).row_text() == ""
