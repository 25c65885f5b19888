"""bimine as a library (issue 74): ``Encoder.encode`` takes what a user has, ``bimine.mine``,
``align``, ``filter_pairs``, ``match_documents`` give what their commands give on the same input,
a user's own encoder object is accepted wherever a model is, and a bad value is a BimineError."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import bimine
from bimine.cli.main import registered
from bimine.mining.job import run_mine
from bimine.mining.spec import MineJob

EX = Path(__file__).resolve().parents[1] / "examples"


def lines(name: str) -> list[str]:
    return (EX / name).read_text(encoding="utf-8").splitlines()


def run(*args) -> None:
    r = CliRunner().invoke(registered(), [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 0, r.output


@pytest.fixture(scope="module")
def enc():
    return bimine.load_encoder()


class Stand:
    """A user's encoder in the sentence-transformers shape: encode(list[str]) -> array (here the
    shipped model without a language, its rows scaled: bimine normalises them)."""

    def __init__(self, enc) -> None:
        self.enc = enc
        self.calls = 0

    def encode(self, sentences):
        self.calls += 1
        return 3.0 * self.enc.encode(sentences)


# --------------------------------------------------------------------------- encode
def test_encode_takes_a_string_an_iterable_or_an_array(enc):
    one = enc.encode("The cat sleeps.", "en")
    assert one.shape == (enc.dim,) and one.dtype == np.float32
    many = enc.encode(["The cat sleeps.", "Il pleut."], "en")
    assert many.shape == (2, enc.dim) and np.allclose(np.linalg.norm(many, axis=1), 1, atol=1e-5)
    assert np.allclose(many[0], one, atol=1e-6)  # a row's last bits depend on the rows beside it (BLAS)
    assert np.array_equal(enc.encode((s for s in ["The cat sleeps.", "Il pleut."]), "en"), many)
    assert np.array_equal(enc.encode(np.array(["The cat sleeps.", "Il pleut."]), "en"), many)
    assert enc.encode([], "en").shape == (0, enc.dim)
    # lang is optional where the model does not use it: "und", as the command line without --lang
    assert np.array_equal(enc.encode(["The cat sleeps."]), enc.encode(["The cat sleeps."], "und"))


def test_encode_batches_and_bar_give_the_rows_of_one_call(enc, capsys):
    texts = [f"sentence number {i} of the test" for i in range(1100)]
    whole = enc.encode(texts, "en")
    with_bar = enc.encode(texts, "en", show_progress_bar=True)  # the command's batches: the same bytes
    assert np.array_equal(whole, with_bar)
    assert "encode" in capsys.readouterr().err  # the bar was drawn although stderr is no terminal
    small = enc.encode(texts, "en", batch_size=100)
    assert small.shape == whole.shape and np.allclose(small, whole, atol=1e-6)


@pytest.mark.parametrize("bad, message", [
    (("The cat.", "xx"), "invalid language code 'xx'"),
    (([1, "a"], "en"), r"sentences\[0\]: int 1, not a string"),
    ((None, "en"), "a string or an iterable of strings"),
    ((b"bytes", "en"), "bytes, not text"),
    ((np.array([["a", "b"]]), "en"), "1-D array of strings"),
])
def test_encode_refuses_bad_input_with_a_bimine_error(enc, bad, message):
    with pytest.raises(bimine.BimineError, match=message):
        enc.encode(*bad)


def test_encode_checks_batch_size(enc):
    with pytest.raises(bimine.BimineError, match="batch_size must be a whole number >= 1"):
        enc.encode(["a"], "en", batch_size=0)


# --------------------------------------------------------------------------- load_encoder
def test_load_encoder_auto_needs_the_languages_and_says_why(caplog):
    with pytest.raises(bimine.BimineError, match="give langs"):
        bimine.load_encoder("auto")
    with caplog.at_level(logging.WARNING, logger="bimine"):
        e = bimine.load_encoder("auto", langs=["en", "fr"])
    assert e.model_id == bimine.load_encoder().model_id
    assert "model auto: default: it serves en and fr well" in caplog.text
    with pytest.raises(bimine.BimineError, match="a list of language codes.*not 'fr'"):
        bimine.load_encoder("default", langs="fr")
    with pytest.raises(bimine.BimineError, match="has no config.json"):
        bimine.load_encoder("no-such-model")


def test_user_encoder_objects_are_checked():
    class Wrong:
        def encode(self, sentences):
            return np.ones((len(sentences) + 1, 4))

    class NaN:
        def encode(self, sentences):
            return np.full((len(sentences), 4), np.nan)

    with pytest.raises(bimine.BimineError, match="gave shape"):
        bimine.load_encoder(Wrong())
    with pytest.raises(bimine.BimineError, match="not finite"):
        bimine.load_encoder(NaN())
    with pytest.raises(bimine.BimineError, match="has no encode method"):
        bimine.mine(["a"], ["b"], model=object())


# --------------------------------------------------------------------------- mine
@pytest.fixture(scope="module")
def mined_by_command(tmp_path_factory):
    out = tmp_path_factory.mktemp("cmd") / "pairs.tsv"
    run("mine", EX / "sample.en", EX / "sample.fr", "--src-lang", "en", "--tgt-lang", "fr", "--threshold", "1.85",
        "-o", out, "--no-progress")
    return [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]


def rows(pairs: list[dict]) -> list[list[str]]:
    return [[f"{p['score']:.6f}", p["src"], p["tgt"]] for p in pairs]


def same_pairs(got: list[dict], want: list[dict]) -> None:
    """The same pairs in the same order, scores equal to 1e-4 (vectors rescaled, then rounded to float16)."""
    assert [(p["src_index"], p["tgt_index"]) for p in got] == [(p["src_index"], p["tgt_index"]) for p in want]
    assert np.allclose([p["score"] for p in got], [p["score"] for p in want], atol=1e-4)


def test_mine_on_lists_gives_the_commands_pairs(mined_by_command):
    en, fr = lines("sample.en"), lines("sample.fr")
    pairs = bimine.mine(en, fr, src_lang="en", tgt_lang="fr", threshold=1.85)
    assert len(pairs) == len(mined_by_command) > 200
    assert rows(pairs) == mined_by_command
    p = pairs[0]
    assert en[p["src_index"]] == p["src"] and fr[p["tgt_index"]] == p["tgt"]


def test_mine_on_arrays_gives_the_commands_pairs(enc, mined_by_command):
    en, fr = lines("sample.en"), lines("sample.fr")
    x, y = enc.encode(en, "en"), enc.encode(fr, "fr")
    pairs = bimine.mine(x, y, model=None, threshold=1.85, src_text=en, tgt_text=fr)
    assert rows(pairs) == mined_by_command
    # vectors without their sentences: the same pairs by index, no texts
    bare = bimine.mine(x, y, model=None, threshold=1.85)
    assert [(p["src_index"], p["tgt_index"]) for p in bare] == [(p["src_index"], p["tgt_index"]) for p in pairs]
    assert bare[0]["src"] is None
    # rows that are not unit length are normalised: the same pairs (scores to the float16 rounding of the vectors)
    same_pairs(bimine.mine(5 * x, y, model=None, threshold=1.85, src_text=en, tgt_text=fr), pairs)


def test_mine_with_a_users_encoder_object(enc, tmp_path):
    en, fr = lines("sample.en"), lines("sample.fr")
    stand = Stand(enc)
    pairs = bimine.mine(en, fr, model=stand, threshold=1.85)
    assert stand.calls >= 2
    same_pairs(pairs, bimine.mine(en, fr, threshold=1.85))  # no languages: "und" both ways
    # a job object takes one too, and the command's pipeline runs on it
    job = MineJob(src=str(EX / "sample.en"), tgt=str(EX / "sample.fr"), output=str(tmp_path / "o.tsv"),
                  model=Stand(enc), mine={"threshold": 1.85}, progress=False)
    assert job.model.startswith("object:user-Stand-")
    assert run_mine(job).written == len(pairs)


@pytest.mark.parametrize("kwargs, message", [
    ({"k": 0}, "k: must be >= 1"),
    ({"score": "foo"}, "unknown score 'foo'"),
    ({"strategy": "best"}, "unknown strategy"),
    ({"threshold": float("nan")}, "threshold"),
    ({"index": "Bogus"}, "invalid FAISS factory string"),
    ({"src_lang": "xx"}, "invalid language code 'xx'"),
    ({"score": "absolute", "threshold": 3.0}, "lies between -1 and 1"),
    ({"model": "no-such-model"}, "has no config.json"),
    ({"model": None}, "takes vectors only"),
])
def test_mine_bad_values_are_bimine_errors(kwargs, message):
    with pytest.raises(bimine.BimineError, match=message):
        bimine.mine(["The cat sleeps.", "It rains."], ["Le chat dort.", "Il pleut."], **kwargs)


def test_mine_bad_vectors_are_bimine_errors(enc):
    with pytest.raises(bimine.BimineError, match="differ in width"):
        bimine.mine(np.ones((3, 4), np.float32), np.ones((3, 5), np.float32), model=None)
    with pytest.raises(bimine.BimineError, match="not finite"):
        bimine.mine(np.full((3, 4), np.nan, np.float32), np.ones((3, 4), np.float32), model=None)
    with pytest.raises(bimine.BimineError, match="give src_text beside"):
        bimine.mine(np.ones((3, 4), np.float32), np.ones((3, 4), np.float32), model=None, dedupe=True)
    with pytest.raises(bimine.BimineError, match="not for given vectors"):
        bimine.mine(enc.encode(["a b c"]), ["a b c"], confidence=True)
    said = []
    bimine.mine(enc.encode(lines("sample.en")[:20]), lines("sample.fr")[:20], warn=said.append)
    assert any("src is given as vectors and the other side is embedded by the model" in w for w in said)



def test_a_side_in_another_language_is_named_as_the_caller_gave_it(enc):
    said: list[str] = []
    bimine.mine(lines("sample.en"), lines("sample.fr"), src_lang="en", tgt_lang="de", model=enc, warn=said.append)
    assert any(w.startswith("warning: the tgt sentences: declared 'de' but") and "is tgt_lang right?" in w
               for w in said), said


# --------------------------------------------------------------------------- align, filter, documents
def test_align_gives_the_commands_beads(tmp_path):
    out = tmp_path / "a.align"
    run("align", EX / "doc.en", EX / "doc.fr", "--src-lang", "en", "--tgt-lang", "fr", "-o", out, "--no-progress")
    beads = bimine.align(lines("doc.en"), lines("doc.fr"), src_lang="en", tgt_lang="fr")
    mine = [f"[{','.join(map(str, b['src']))}]:[{','.join(map(str, b['tgt']))}]:{b['cost']:.6f}" for b in beads]
    assert mine == out.read_text().splitlines() and len(beads) > 30
    b = beads[0]
    assert b["src_text"] == " ".join(lines("doc.en")[i].strip() for i in b["src"])


def test_filter_pairs_gives_the_commands_decisions(tmp_path):
    out = tmp_path / "f.tsv"
    run("filter", EX / "dev.en-fr.tsv", "--src-lang", "en", "--tgt-lang", "fr", "-o", out, "--no-progress")
    cmd = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    head, body = cmd[0], cmd[1:]
    pairs = [tuple(line.split("\t")[:2]) for line in lines("dev.en-fr.tsv")]
    got = bimine.filter_pairs(pairs, src_lang="en", tgt_lang="fr")
    assert sum(r["keep"] for r in got) == 289 and len(got) == 300
    assert list(got[0]) == head
    for r, c in zip(got, body):
        assert [r["src"], r["tgt"], "1" if r["keep"] else "0", r["reason"]] == [c[0], c[1], c[-2], c[-1]]
        assert r["score"] == pytest.approx(float(c[head.index("score")]), abs=1e-6)
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(pairs, columns=["en", "fr"])
    assert [r["keep"] for r in bimine.filter_pairs(df, src_lang="en", tgt_lang="fr")] == [r["keep"] for r in got]
    with pytest.raises(bimine.BimineError, match="DataFrame of 3 columns"):
        bimine.filter_pairs(df.assign(x=1), src_lang="en", tgt_lang="fr")


@pytest.mark.parametrize("pairs, message", [
    ([("a\tb", "c")], r"pairs\[0\] \(src\): holds '\\t'"),
    ([("a", None)], r"pairs\[0\] \(tgt\): NoneType None"),
    ([("a", "b", "c")], "is not a .src, tgt. pair"),
    ("a string", "an iterable of"),
])
def test_filter_pairs_refuses_what_a_file_could_not_hold(pairs, message):
    with pytest.raises(bimine.BimineError, match=message):
        bimine.filter_pairs(pairs)


def test_match_documents_gives_the_commands_rows(tmp_path):
    out = tmp_path / "dp.tsv"
    run("docs", "match", EX / "docs.en.jsonl", EX / "docs.fr.jsonl", "--src-lang", "en", "--tgt-lang", "fr", "-o", out,
        "--no-progress")
    docs = [[json.loads(x) for x in lines(f"docs.{s}.jsonl")] for s in ("en", "fr")]
    src, tgt = ({d["id"]: d.get("sentences") or d.get("text") for d in c} for c in docs)
    got = bimine.match_documents(src, tgt, src_lang="en", tgt_lang="fr")
    want = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()[1:]]
    assert [[r["src_doc"], r["tgt_doc"], f"{r['score']:.6f}", str(r["rank"]), str(r["votes"])] for r in got] == want


def test_mine_embeddings_refuses_vectors_of_two_widths():
    """The undocumented in-memory helper failed with a bare AssertionError (issue 74)."""
    from bimine.mining.pipeline import mine_embeddings

    with pytest.raises(bimine.BimineError, match="differ in width"):
        mine_embeddings(np.ones((3, 4), np.float32), np.ones((3, 5), np.float32))


# --------------------------------------------------------------------------- found in review
def test_two_encoder_objects_of_one_model_id_stay_apart(tmp_path):
    """The registry named an object by its model id: a second job's encoder of the same model took the
    first job's place, and freeing it left the first job without its encoder."""
    import gc

    from bimine.encoders.registry import load_encoder as by_name

    e1, e2 = bimine.load_encoder("default", threads=1), bimine.load_encoder("default", threads=2)
    j1 = MineJob(src="a", tgt="b", output=str(tmp_path / "1.tsv"), model=e1)
    j2 = MineJob(src="a", tgt="b", output=str(tmp_path / "2.tsv"), model=e2)
    assert j1.model != j2.model
    assert by_name(j1.model) is e1 and by_name(j2.model) is e2
    del j2, e2
    gc.collect()
    assert by_name(j1.model) is e1


def test_vectors_with_their_sentences_skip_blank_ones_as_sentences_do(enc):
    en, fr = lines("sample.en")[:60] + ["", " "], lines("sample.fr")[:60] + ["", ""]
    by_text = bimine.mine(en, fr, src_lang="en", tgt_lang="fr")
    by_vec = bimine.mine(enc.encode(en, "en"), enc.encode(fr, "fr"), model=None, src_text=en, tgt_text=fr)
    assert [(p["src_index"], p["tgt_index"]) for p in by_vec] == [(p["src_index"], p["tgt_index"]) for p in by_text]
    assert all(p["src"].strip() and p["tgt"].strip() for p in by_vec)


def test_a_side_is_searched_in_the_commands_shards(monkeypatch, tmp_path):
    """The command indexes and searches each store shard apart (with an approximate index, per-shard
    candidates differ from one index's): in memory a side is cut the same way (here shards of 100
    rows, the command's shard_size 100, a PQ index re-ranking one candidate each: the same pairs;
    one shard gives others)."""
    from bimine.mining import memory
    from bimine.mining.spec import MineConfig

    index = {"factory": "IVF8,PQ16x4fs,Refine(Flat)", "nprobe": 1, "k_factor": 1, "exact_below": 0}
    out = tmp_path / "p.tsv"
    run_mine(MineJob(src=str(EX / "sample.en"), tgt=str(EX / "sample.fr"), output=str(out), src_lang="en",
                     tgt_lang="fr", shard_size=100, mine={"index": index}, progress=False))
    cmd = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    job = memory.MemoryJob(MineConfig(index=index), src_lang="en", tgt_lang="fr")
    en, fr = lines("sample.en"), lines("sample.fr")
    monkeypatch.setattr(memory, "SHARD_ROWS", 100)
    assert rows(memory.mine_memory(en, fr, job).pairs) == cmd
    monkeypatch.setattr(memory, "SHARD_ROWS", 1000)
    assert rows(memory.mine_memory(en, fr, job).pairs) != cmd


def test_review_refusals_and_conveniences(enc, monkeypatch, capsys):
    with pytest.raises(bimine.BimineError, match=r"sentences\[1\]: .* lone surrogate"):
        enc.encode(["fine", "bad \ud800 text"], "en")
    with pytest.raises(bimine.BimineError, match=r"pairs\[0\]: 'ab' is a string"):
        bimine.filter_pairs(["ab"], src_lang="en", tgt_lang="fr")
    with pytest.raises(bimine.BimineError, match="a list of language codes"):
        bimine.load_encoder("default", langs=5)
    assert bimine.load_encoder(None).model_id == enc.model_id
    k, t = np.int64(4), np.float32(1.85)
    assert len(bimine.mine(lines("sample.en")[:50], lines("sample.fr")[:50], k=k, threshold=t)) > 0
    monkeypatch.setenv("BIMINE_PROGRESS", "1")  # what a terminal gives: still no bar when none is asked for
    enc.encode(["a", "b", "c"], "en", batch_size=2)
    bimine.mine(lines("sample.en")[:20], lines("sample.fr")[:20])
    assert "it/s" not in capsys.readouterr().err and "sentences/s" not in capsys.readouterr().err


def test_an_object_in_bimines_encoder_shape_is_called_with_the_language(enc):
    class Shaped:
        model_id, dim = "shaped-1", enc.dim

        def __init__(self):
            self.langs = set()

        def encode(self, sentences, lang):
            self.langs.add(lang)
            return enc.encode(sentences, lang)

    s = Shaped()
    pairs = bimine.mine(lines("sample.en"), lines("sample.fr"), model=s, src_lang="en", tgt_lang="fr", threshold=1.85)
    assert s.langs == {"en", "fr"} and len(pairs) > 200


def test_a_users_model_is_let_go_after_filtering(enc):
    import gc
    import weakref

    stand = Stand(enc)
    ref = weakref.ref(stand)
    bimine.filter_pairs([("The cat sleeps.", "Le chat dort.")] * 3, src_lang="en", tgt_lang="fr", model=stand)
    del stand
    gc.collect()
    assert ref() is None


def test_score_divergence_and_select_give_the_commands_columns(tmp_path):
    src = tmp_path / "d.tsv"
    src.write_text("\n".join(lines("dev.en-fr.tsv")[:21]) + "\n", encoding="utf-8")
    pairs = [tuple(line.split("\t")[:2]) for line in lines("dev.en-fr.tsv")[:21]]
    for command, call in (("score", lambda: bimine.score_pairs(pairs, src_lang="en", tgt_lang="fr")),
                          ("divergence", lambda: bimine.divergence(pairs, src_lang="en", tgt_lang="fr")),
                          ("select", lambda: bimine.select(pairs, 0.5, src_lang="en", tgt_lang="fr"))):
        out = tmp_path / f"{command}.tsv"
        run(command, src, "--src-lang", "en", "--tgt-lang", "fr", "-o", out, "--no-progress",
            *(["--keep", "0.5"] if command == "select" else []))
        cmd = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
        got = call()
        assert list(got[0]) == cmd[0] and len(got) == len(cmd) - 1 == 21
        for r, c in zip(got, cmd[1:]):
            assert r["score"] == pytest.approx(float(c[cmd[0].index("score")]), abs=1e-6)
            if command == "select":
                assert r["keep"] == (c[cmd[0].index("keep")] == "1")


def test_an_unknown_option_is_a_bimine_error_naming_the_options():
    with pytest.raises(bimine.BimineError, match=r"mine: unknown option\(s\) thresold; its options: k, score"):
        bimine.mine(["a"], ["b"], thresold=1.2)
    with pytest.raises(bimine.BimineError, match=r"align: unknown option\(s\) metod"):
        bimine.align(["a"], ["b"], metod="vecalign")
    with pytest.raises(bimine.BimineError, match=r"filter_pairs: unknown option\(s\) rule;"):
        bimine.filter_pairs([("a", "b")], src_lang="en", tgt_lang="fr", rule="none")
