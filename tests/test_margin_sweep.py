"""benchmarks.margin_sweep's cosines: translations, mismatched pairs and 001 Figure 4's own
negatives (the target retrieved second when the first is right), on hand-made vectors."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.margin_sweep import LANGS, cosines

EN = {"e0": [1, 0, 0], "e1": [0, 1, 0], "e2": [0.6, 0.8, 0]}
XX = {"x0": [0.8, 0.6, 0], "x1": [0.6, 0.8, 0], "x2": [0, 0.6, 0.8]}


class Fixed:
    def encode(self, sentences, lang):
        table = EN if lang == "en" else XX
        return np.array([table[s] for s in sentences], dtype=np.float32)


def test_cosines_by_hand(tmp_path):
    d = tmp_path / "dev" / "newstest"
    d.mkdir(parents=True)
    for xx in LANGS:
        (d / f"newstest2012.en-{xx}.en").write_text("e0\ne1\ne2\n")
        (d / f"newstest2012.en-{xx}.{xx}").write_text("x0\nx1\nx2\n")
    pos, neg, hard, n_hard = cosines(Fixed(), str(tmp_path))
    assert pos == pytest.approx((0.8 + 0.8 + 0.48) / 3, abs=1e-6)
    # e0: x0 first (right), x1 second (0.6); e1: x1 first (right), x0 and x2 tie second (0.6);
    # e2: x1 first (1.0, wrong): no negative of 001's kind
    assert n_hard == 2 * len(LANGS)
    assert hard == pytest.approx(0.6, abs=1e-6)
    off = [np.dot(EN[f"e{i}"], XX[f"x{j}"]) for i in range(3) for j in range(3) if i != j]
    assert min(off) - 1e-6 <= neg <= max(off) + 1e-6
