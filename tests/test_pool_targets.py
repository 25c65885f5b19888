"""benchmarks.pool_targets: which model's figure counts for each language, and the counts, by hand."""

from __future__ import annotations

from benchmarks import pool_targets as T


def test_each_language_counts_the_model_adapt_would_run(monkeypatch):
    monkeypatch.setattr(T, "e5_xsim", lambda: {"fra": 1.0, "khm": 5.0, "lao": 6.0, "bod": 40.0})
    r = lambda lang, x: {"lang": lang, "cos_r1": x}  # noqa: E731
    results = {"default": {"fra": r("fr", 97.0), "khm": r("km", 40.0), "lao": r("lo", 30.0), "bod": r("bo", 5.0)},
               "e5-small": {"fra": r("fr", 99.0), "khm": r("km", 90.0), "lao": r("lo", 88.0), "bod": r("bo", 20.0)}}
    figures = {"fr": {"ntrex_xsim": 1.2}, "km": {"ntrex_xsim": 27.5}, "lo": {"ntrex_xsim": 43.0}}
    table = T.rows(results, {"khm": r("km", 86.5)}, figures)
    assert [t["name"] for t in table] == ["fra", "khm", "lao"]  # Tibetan: e5-small's error too high
    fra, khm, lao = table
    assert fra["served"] and fra["used"] == 97.0  # served: --adapt leaves it to the shipped model
    assert not khm["served"] and khm["used"] == 86.5  # poorly served: the adapted model's figure
    assert lao["used"] is None  # poorly served and not adapted here: not guessed
    text = T.report(table)
    assert "within 5 points of e5-small: 2 of 2" in text and "mean gap 2.75 points" in text
    assert "| lao | 43.0 xsim | 30.0 | - | 88.0 | not measured |" in text


def test_a_stored_large_pool_figure_decides_before_the_xsim_error(monkeypatch):
    monkeypatch.setattr(T, "e5_xsim", lambda: {"mar": 1.0})
    r = lambda lang, x: {"lang": lang, "cos_r1": x}  # noqa: E731
    results = {"default": {"mar": r("mr", 59.7)}, "e5-small": {"mar": r("mr", 96.7)}}
    (row,) = T.rows(results, {}, {"mr": {"ntrex_xsim": 13.9, "ntrex_pool_r1": 59.7}})
    assert not row["served"] and row["used"] is None  # served by xsim (13.9 <= 15), not by R@1 (59.7 < 80)
    assert row["stored"] == "59.7 R@1"
    (row,) = T.rows(results, {}, {"mr": {"ntrex_xsim": 13.9}})  # no large-pool figure: xsim decides
    assert row["served"] and row["used"] == 59.7


def test_writing_the_xsim_figures_again_keeps_the_same_models_large_pool_figures(tmp_path):
    import json

    from benchmarks.model_languages import keep_pool_figures

    path = tmp_path / "languages.json"
    path.write_text(json.dumps({"model_id": "m1", "pool_source": "run", "languages": {
        "mr": {"ntrex_xsim": 13.9, "ntrex_pool_r1": 59.7}, "fr": {"ntrex_xsim": 1.2}}}), encoding="utf-8")
    doc = {"model_id": "m1", "languages": {"mr": {"ntrex_xsim": 14.0}, "fr": {"ntrex_xsim": 1.1}}}
    assert keep_pool_figures(str(path), doc) == 1
    assert doc["languages"]["mr"] == {"ntrex_xsim": 14.0, "ntrex_pool_r1": 59.7} and doc["pool_source"] == "run"
    assert "ntrex_pool_r1" not in doc["languages"]["fr"]
    other = {"model_id": "m2", "languages": {"mr": {"ntrex_xsim": 14.0}}}  # another model: not carried over
    assert keep_pool_figures(str(path), other) == 0 and "ntrex_pool_r1" not in other["languages"]["mr"]
