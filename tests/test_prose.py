"""Prose per language for sentence-level teacher distillation (issue 43 §1): the recipe step and
the ``prose:`` training section."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import make_tiny_model

from bimine.cli import data as _data  # noqa: F401  (registers the command)
from bimine.cli.main import cli
from bimine.data.prose import ProseConfig, build_prose, eligible_rows, prose_texts, sample
from bimine.errors import ConfigError


def _recipe(root, langs: dict[str, list[tuple[str, str]]]):
    """A built recipe in miniature: pairs/en-<lang>.tsv.gz and a manifest with the counts."""
    (root / "pairs").mkdir(parents=True)
    for lang, pairs in langs.items():
        with gzip.open(root / "pairs" / f"en-{lang}.tsv.gz", "wt", encoding="utf-8") as f:
            f.write("".join(f"{e}\t{x}\n" for e, x in pairs))
    manifest = {"format": "bimine-recipe/1", "languages": {k: {"pairs": len(v)} for k, v in langs.items()}}
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def _lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


LONG = "The file could not be opened because it is in use"  # 11 words


def test_eligible_rows_keep_prose_after_the_held_out_pairs(tmp_path):
    pairs = [("Open", "Ouvrir"), (LONG, "Le fichier est utilisé"), ("Save the file", "Enregistrer"),
             (LONG + " now", "Le fichier est utilisé"),  # the same translation: once
             ("In the beginning God created the heaven", "Au commencement Dieu créa le ciel"), ("x y z a b c", "\t")]
    r = _recipe(tmp_path / "r", {"fr": pairs})
    en, xx = eligible_rows(str(r / "pairs" / "en-fr.tsv.gz"), 0, 6)
    assert xx == ["Le fichier est utilisé", "Au commencement Dieu créa le ciel"]
    assert en == [LONG, "In the beginning God created the heaven"]
    _, xx = eligible_rows(str(r / "pairs" / "en-fr.tsv.gz"), 2, 6)  # the first two held out
    assert xx == ["Le fichier est utilisé", "Au commencement Dieu créa le ciel"]
    _, xx = eligible_rows(str(r / "pairs" / "en-fr.tsv.gz"), 4, 6)
    assert xx == ["Au commencement Dieu créa le ciel"]


def test_sample_is_fixed_sorted_and_capped():
    assert sample(5, 10, 0, "fr").tolist() == [0, 1, 2, 3, 4]
    a = sample(1000, 30, 0, "fr")
    assert len(a) == 30 and np.all(np.diff(a) > 0) and a.tolist() == sample(1000, 30, 0, "fr").tolist()
    assert a.tolist() != sample(1000, 30, 0, "de").tolist() and a.tolist() != sample(1000, 30, 1, "fr").tolist()


def test_build_prose_writes_lists_english_and_a_manifest(tmp_path):
    fr = [(f"{LONG} number {i}", f"Le fichier numéro {i} est utilisé") for i in range(40)] + [("OK", "D'accord")] * 5
    de = [(f"{LONG} number {i}", f"Die Datei Nummer {i} ist belegt") for i in range(12)]
    km = [("Cancel", "បោះបង់")] * 20  # interface strings only: nothing to keep
    r = _recipe(tmp_path / "r", {"fr": fr, "de": de, "km": km})
    cfg = ProseConfig(recipe=str(r), per_lang=10, min_words=6, min_pairs=10, holdout=4)
    m = build_prose(str(tmp_path / "out"), cfg, progress=False)
    folder = tmp_path / "out" / "prose"
    got_fr = _lines(folder / "fr.tsv.gz")
    assert len(got_fr) == 10 and len(set(got_fr)) == 10
    # fr has 45 >= 10 x 4 pairs: its first 4 are held out and never drawn; de (12) keeps them
    assert not {f"Le fichier numéro {i} est utilisé" for i in range(4)} & set(got_fr)
    got_de = _lines(folder / "de.tsv.gz")
    assert len(got_de) == 10 and set(got_de) <= {f"Die Datei Nummer {i} ist belegt" for i in range(12)}
    assert m["languages"]["fr"] == {"eligible": 36, "chosen": 10}
    assert m["languages"]["de"] == {"eligible": 12, "chosen": 10}
    assert m["empty"] == ["km"] and not (folder / "km.tsv.gz").exists()
    en = _lines(folder / "en.tsv.gz")
    assert len(en) == 10 and all(e.startswith(LONG) for e in en)
    assert m["sentences"] == 30
    texts = prose_texts(str(tmp_path / "out"))
    assert set(texts) == set(got_fr) | set(got_de) | set(en) and len(texts) == 30
    # interleaved by rank over the languages (de, en, fr sorted): an interrupted teacher run has
    # every language's first sentences
    assert texts[:6] == [got_de[0], en[0], got_fr[0], got_de[1], en[1], got_fr[1]]
    # a rerun with the same settings is a no-op; other settings rebuild
    stamp = (folder / "fr.tsv.gz").stat().st_mtime_ns
    assert build_prose(str(tmp_path / "out"), cfg, progress=False) == m
    assert (folder / "fr.tsv.gz").stat().st_mtime_ns == stamp
    m2 = build_prose(str(tmp_path / "out"), ProseConfig(recipe=str(r), per_lang=5, min_pairs=10, holdout=4),
                     progress=False)
    assert m2["languages"]["fr"]["chosen"] == 5 and len(_lines(folder / "fr.tsv.gz")) == 5
    with pytest.raises(ConfigError):
        ProseConfig(recipe=str(r), per_lang=0)


def test_cli_prose(tmp_path):
    r = _recipe(tmp_path / "r", {"fr": [(f"{LONG} {i}", f"Phrase numéro {i}") for i in range(8)]})
    res = CliRunner().invoke(cli, ["data", "prose", str(tmp_path / "out"), "--recipe", str(r), "--min-pairs", "5",
                                   "--per-lang", "3", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "6 sentences in 2 languages" in res.output
    assert len(_lines(tmp_path / "out" / "prose" / "fr.tsv.gz")) == 3
    res = CliRunner().invoke(cli, ["data", "prose", str(tmp_path / "out2"), "--no-progress"])
    assert res.exit_code != 0 and "--recipe" in res.output
    (tmp_path / "not-a-recipe").mkdir()
    res = CliRunner().invoke(cli, ["data", "prose", str(tmp_path / "out3"), "--recipe", str(tmp_path / "not-a-recipe"),
                                   "--no-progress"])
    assert res.exit_code != 0 and "no manifest.json" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_training_with_prose_pulls_sentences_to_the_teacher(shared_data, tmp_path):
    from test_train import tiny_config

    from bimine.encoders import load_encoder
    from bimine.training.trainer import Trainer

    teacher = make_tiny_model(tmp_path / "teacher", dim=32, buckets=4096, seed=5)
    prose = {"fr": [f"Le train numéro {i} part de la gare à {i + 5} heures" for i in range(16)],
             "de": [f"Der Zug Nummer {i} fährt um {i + 5} Uhr vom Bahnhof ab" for i in range(16)]}
    folder = tmp_path / "prose"
    folder.mkdir()
    for lang, texts in prose.items():
        with gzip.open(folder / f"{lang}.tsv.gz", "wt", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in texts))
    over = {"prose.lists": [str(folder)], "prose.teacher": str(teacher), "prose.weight": 20.0,
            "prose.rank_weight": 1.0, "prose.batch": 16}
    out = Trainer(tiny_config(shared_data, steps=60, **over), tmp_path / "with").fit(progress=False)
    base = Trainer(tiny_config(shared_data, steps=60), tmp_path / "without").fit(progress=False)
    every = [t for texts in prose.values() for t in texts]
    t = load_encoder(str(teacher)).encode(every, "fr")

    def closeness(model):
        e = load_encoder(str(model)).encode(every, "fr")
        return float(np.mean(np.sum(e * t, axis=1)))

    assert closeness(out) > closeness(base) + 0.2
    with pytest.raises(ConfigError, match="prose.batch"):
        tiny_config(shared_data, steps=5, **{"prose.lists": [str(folder)], "prose.batch": 1})


def test_a_rebuild_removes_lists_it_has_no_sentences_for_and_holdout_is_checked(tmp_path):
    from bimine.data.prose import check_prose_holdout

    fr = [(f"{LONG} number {i}", f"Le fichier numéro {i} est utilisé") for i in range(40)]
    de = [(f"{LONG} number {i}", f"Die Datei Nummer {i} ist belegt") for i in range(12)]
    r = _recipe(tmp_path / "r", {"fr": fr, "de": de})
    out = tmp_path / "out"
    build_prose(str(out), ProseConfig(recipe=str(r), per_lang=5, min_pairs=10, holdout=0), progress=False)
    assert (out / "prose" / "de.tsv.gz").exists()
    m = build_prose(str(out), ProseConfig(recipe=str(r), per_lang=5, min_pairs=20, holdout=2), progress=False)
    assert "de" not in m["languages"] and not (out / "prose" / "de.tsv.gz").exists()  # no stale list left
    check_prose_holdout(str(out / "prose"), [(str(r), 2)])
    check_prose_holdout(str(out / "prose"), [(str(tmp_path / "other"), 3000)])  # another recipe: not ours
    with pytest.raises(ConfigError, match="holdout 2"):
        check_prose_holdout(str(out / "prose"), [(str(r), 3)])


def test_training_checks_the_holdout_of_prose_lists_however_they_are_given(tmp_path, monkeypatch):
    """The check reads the lists as training does (list_files): a folder given through an
    environment variable, or one list file of a prose folder, is checked like a plain folder."""
    from bimine.training.trainer import check_prose_lists, load_train_config

    fr = [(f"{LONG} number {i}", f"Le fichier numéro {i} est utilisé") for i in range(40)]
    r = _recipe(tmp_path / "r", {"fr": fr})
    build_prose(str(tmp_path / "out"), ProseConfig(recipe=str(r), per_lang=5, min_pairs=10, holdout=2), progress=False)
    monkeypatch.setenv("PROSE_TEST_DIR", str(tmp_path / "out" / "prose"))
    for lists in (["$PROSE_TEST_DIR"], [str(tmp_path / "out" / "prose" / "fr.tsv.gz")]):
        for holdout, refused in ((2, False), (3, True)):
            cfg = load_train_config({"data": {"root": str(tmp_path), "recipes": [
                {"path": "r", "min_pairs": 10, "holdout": holdout}]}, "prose": {"lists": lists}})
            if refused:
                with pytest.raises(ConfigError, match="holdout 2"):
                    check_prose_lists(cfg)
            else:
                check_prose_lists(cfg)
