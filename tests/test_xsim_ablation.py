"""benchmarks.xsim_ablation: a run picked from a file of several, and the change by training pairs."""

from __future__ import annotations

import json

import pytest

from benchmarks.xsim_ablation import by_pairs, run_sets


def test_change_by_training_pairs_by_hand():
    lang = {"deu": "de", "khm": "km", "pus": "ps", "smo": "sm", "fao": "fo", "pud:de": "de"}
    pairs = {"de": 1_000_000, "km": 39_000, "ps": 4_000, "sm": 9_999}
    base = {"deu": 1.0, "khm": 25.0, "pus": 44.0, "smo": 60.0, "fao": 30.0, "pud:de": 0.2}
    other = {"deu": 0.9, "khm": 27.0, "pus": 45.0, "smo": 59.0, "fao": 30.4, "pud:de": 9.0}
    assert by_pairs(base, other, lang, pairs) == [
        ("100k+", 1, pytest.approx(-0.1), 0, 0),
        ("30k-100k", 1, pytest.approx(2.0), 1, 0),
        ("1-10k", 2, pytest.approx(0.0), 1, 1),  # +1.0 and -1.0; 9,999 pairs is under 10k
        ("none", 1, pytest.approx(0.4), 0, 0),  # PUD sets are left out
    ]


def test_a_run_picked_from_a_file_of_several(tmp_path):
    doc = {"results": {m: {"ntrex": {"khm": {"lang": "km", "mean": e}}, "pud": {"ko": {"lang": "ko", "mean": e / 2}}}
                       for m, e in (("default", 25.0), ("runs/x/model", 27.0))},
           "training_pairs": {"km": 39_000}}
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    errs, lang, pairs = run_sets(str(path), "runs/x/model")
    assert errs == {"khm": 27.0, "pud:ko": 13.5} and lang == {"khm": "km", "pud:ko": "ko"} and pairs == {"km": 39_000}
    with pytest.raises(SystemExit, match="pick one"):
        run_sets(str(path))
    with pytest.raises(SystemExit, match="no model 'nope'"):
        run_sets(str(path), "nope")
