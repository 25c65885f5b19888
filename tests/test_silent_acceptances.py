"""Issue 55 §3, "accepted silently where the user needs to hear it": a threshold outside its score's
range, the same input on both sides, unrelated texts to align or filter with a classifier, the
text's language in divergence/select, an empty filter pipeline, dev pairs that are training pairs,
a training run into a data folder, and options the chosen index or output ignores. Each was
accepted without a word; each is now a one-line error (exit 2, before any work) or a warning."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bimine.cli import align, classifier, divergence, docs, embed, filter, mine, train  # noqa: F401  (register)
from bimine.cli.main import cli

EX = Path(__file__).resolve().parents[1] / "examples"
PAIR = ["--src-lang", "en", "--tgt-lang", "fr"]


def _run(*args, input=None):
    return CliRunner().invoke(cli, [str(a) for a in args], input=input)


def _error(r, *words: str) -> str:
    """A clean refusal: exit 2, no traceback, one line 'error: ...' holding every word."""
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), (r.exit_code, r.output)
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def _warnings(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.startswith("warning: ")]


# ===================================================================== 1. thresholds outside the score's range


@pytest.mark.parametrize("args,words", [
    (["--rescore", "trees", "--threshold", "1.85"], ["with --rescore", "between 0 and 1", "keep no pair"]),
    (["--rescore", "trees", "--threshold", "-0.5"], ["between 0 and 1", "keep every pair"]),
    (["--score", "absolute", "--threshold", "1.5"], ["absolute score lies between -1 and 1", "keep no pair"]),
    (["--score", "distance", "--threshold", "2.5"], ["distance score lies between -2 and 2"]),
    (["--score", "distance", "--threshold", "-3"], ["keep every pair"]),
], ids=["rescore-1.85", "rescore-negative", "absolute", "distance-high", "distance-low"])
def test_mine_refuses_a_threshold_outside_the_scores_range(tmp_path, args, words):
    """`mine --rescore trees --threshold 1.85` (the README's eq9 cut) wrote 0 pairs without a word."""
    out = tmp_path / "p.tsv"
    _error(_run("mine", EX / "sample.en", EX / "sample.fr", *PAIR, "-o", out, *args), "--threshold", *words)
    assert not out.exists()


def test_unbounded_scores_and_in_range_thresholds_are_accepted():
    from bimine.mining.job import check_threshold

    for score in ("eq9", "eq10", "ratio"):  # a ratio to a neighbourhood mean near 0 has no bound
        check_threshold(score, 100.0, None)
    check_threshold("absolute", 0.8, None)
    check_threshold("distance", -0.1, None)
    check_threshold("eq9", 0.3, "trees")
    check_threshold("eq9", None, "trees")


def test_filter_refuses_a_threshold_outside_the_trained_combinations_probability(tmp_path):
    """The default pipeline's combined score is a probability: `filter --threshold 1.85` dropped every pair."""
    out = tmp_path / "o.tsv"
    _error(_run("filter", EX / "dev.en-fr.tsv", *PAIR, "-o", out, "--threshold", "1.85", "--no-progress"),
           "--threshold 1.85", "probability, between 0 and 1")
    assert not out.exists()


# ===================================================================== 2. the same input on both sides


def test_mine_the_same_file_on_both_sides_warns(tmp_path):
    r = _run("mine", EX / "doc.en", EX / "doc.en", "-o", tmp_path / "p.tsv", "--no-progress")
    assert r.exit_code == 0, r.output
    w = _warnings(r.output)
    assert len(w) == 1 and "doc.en" in w[0] and "are the same file" in w[0] and "pair with itself" in w[0], r.output


def test_align_the_same_file_or_a_copy_warns(tmp_path):
    r = _run("align", EX / "doc.en", EX / "doc.en", "-o", tmp_path / "a.align", "--no-progress")
    assert r.exit_code == 0, r.output
    assert any("are the same file" in w and "align with itself" in w for w in _warnings(r.output)), r.output
    copy = tmp_path / "copy.en"
    shutil.copy(EX / "doc.en", copy)
    r = _run("align", EX / "doc.en", copy, "-o", tmp_path / "b.align", "--no-progress")
    assert r.exit_code == 0 and any("hold the same bytes" in w for w in _warnings(r.output)), r.output


def test_docs_match_the_same_collection_warns(tmp_path):
    r = _run("docs", "match", EX / "docs.en.jsonl", EX / "docs.en.jsonl", "-o", tmp_path / "d.tsv", "--no-progress")
    assert r.exit_code == 0, r.output
    assert any("are the same file" in w and "match itself" in w for w in _warnings(r.output)), r.output


def test_translations_and_sides_of_many_files_are_told_apart(tmp_path):
    from bimine.text.sameness import same_input_warning

    assert same_input_warning(EX / "sample.en", EX / "sample.fr", "x") is None
    assert same_input_warning("-", "-", "x") is None  # stdin: nothing to compare
    (tmp_path / "b.fr").write_text("Bonjour.\n")
    shutil.copy(EX / "doc.fr", tmp_path / "c.fr")
    w = same_input_warning([EX / "doc.en", EX / "doc.fr"], [tmp_path / "b.fr", tmp_path / "c.fr"], "x")
    assert w is not None and "doc.fr" in w and "c.fr" in w and "hold the same bytes" in w


# ===================================================================== 3. unrelated texts


@pytest.fixture(scope="module")
def unrelated(tmp_path_factory) -> Path:
    """French sentences unrelated to examples/doc.en: 120 lines of examples/sample.fr, shuffled."""
    lines = (EX / "sample.fr").read_text(encoding="utf-8").splitlines()
    random.Random(0).shuffle(lines)
    path = tmp_path_factory.mktemp("unrelated") / "other.fr"
    path.write_text("\n".join(lines[:120]) + "\n", encoding="utf-8")
    return path


def test_align_of_unrelated_texts_warns(tmp_path, unrelated):
    """Most lines are insertions/deletions or beads no better than unrelated sentences: said in one line."""
    r = _run("align", EX / "doc.en", unrelated, *PAIR, "-o", tmp_path / "a.align", "--no-progress")
    assert r.exit_code == 0, r.output
    w = _warnings(r.output)
    assert len(w) == 1 and "do not look like translations" in w[0], r.output


def test_align_of_translations_does_not_warn(tmp_path):
    r = _run("align", EX / "doc.en", EX / "doc.fr", *PAIR, "-o", tmp_path / "a.align", "--no-progress")
    assert r.exit_code == 0 and not _warnings(r.output), r.output


@pytest.fixture(scope="module")
def confidence_classifier(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("clf") / "conf.safetensors"
    r = _run("train-classifier", "confidence", EX / "train.en-fr.tsv", *PAIR, "-o", out, "--dev-size", "200",
             "--epochs", "2", "--no-progress")
    assert r.exit_code == 0, r.output
    return out


def test_filter_with_a_classifier_says_unrelated_sides_do_not_look_parallel(tmp_path, confidence_classifier):
    """sample.en and sample.fr are shuffled apart: plain filter said so, --classifier did not."""
    r = _run("filter", "--src", EX / "sample.en", "--tgt", EX / "sample.fr", *PAIR, "-o", tmp_path / "o.tsv",
             "--classifier", confidence_classifier, "--no-progress")
    assert r.exit_code == 0, r.output
    w = _warnings(r.output)
    assert len(w) == 1 and "conf.safetensors" in w[0] and "do not look like translations" in w[0], r.output
    r = _run("filter", EX / "dev.en-fr.tsv", *PAIR, "-o", tmp_path / "d.tsv", "--classifier", confidence_classifier,
             "--no-progress")
    assert r.exit_code == 0 and not _warnings(r.output), r.output


# ===================================================================== 4. the text's language in divergence/select


@pytest.mark.parametrize("command", ["divergence", "select"])
def test_divergence_and_select_check_the_texts_language(tmp_path, command):
    rows = (EX / "dev.en-fr.tsv").read_text(encoding="utf-8").splitlines()[:60]
    tsv = tmp_path / "in.tsv"
    tsv.write_text("\n".join(rows) + "\n", encoding="utf-8")
    r = _run(command, tsv, "--src-lang", "fr", "--tgt-lang", "en", "-o", tmp_path / "o.tsv", "--no-progress")
    w = _warnings(r.output)
    assert any("declared 'fr'" in x and "--src-lang" in x for x in w), r.output
    assert any("declared 'en'" in x and "--tgt-lang" in x for x in w), r.output


# ===================================================================== 5. an empty filter pipeline


@pytest.mark.parametrize("body", ["", "filters: []\n", "threshold: 0.5\n"], ids=["empty-file", "no-filters", "no-list"])
def test_an_empty_pipeline_is_refused(tmp_path, body):
    y = tmp_path / "empty.yaml"
    y.write_text(body)
    for command in ("filter", "score"):
        out = tmp_path / f"{command}.tsv"
        _error(_run(command, EX / "dev.en-fr.tsv", *PAIR, "-o", out, "-c", y, "--no-progress"),
               "empty.yaml", "no filters", "- rule: NAME")
        assert not out.exists()


def test_no_rules_and_no_model_is_refused(tmp_path):
    _error(_run("filter", EX / "dev.en-fr.tsv", *PAIR, "-o", tmp_path / "o.tsv", "--rules", "none", "--no-model"),
           "--rules none with --no-model", "no filter")


# ===================================================================== 6. dev pairs that are training pairs


def test_train_classifier_refuses_the_training_files_as_dev(tmp_path):
    rows = (EX / "train.en-fr.tsv").read_text(encoding="utf-8").splitlines()
    (tmp_path / "t.en").write_text("\n".join(r.split("\t")[0] for r in rows) + "\n", encoding="utf-8")
    (tmp_path / "t.fr").write_text("\n".join(r.split("\t")[1] for r in rows) + "\n", encoding="utf-8")
    out = tmp_path / "c.safetensors"
    _error(_run("train-classifier", "bigru", "--src", tmp_path / "t.en", "--tgt", tmp_path / "t.fr", *PAIR,
                "--dev-src", tmp_path / "t.en", "--dev-tgt", tmp_path / "t.fr", "-o", out),
           "--dev-src/--dev-tgt", "977 of the 977 dev pairs (100%) are also training pairs", "are the training files")
    # the same pairs in other files (the TSV as training input): found by hashing the pairs
    _error(_run("train-classifier", "bigru", EX / "train.en-fr.tsv", *PAIR, "--dev-src", tmp_path / "t.en",
                "--dev-tgt", tmp_path / "t.fr", "-o", out), "977 of the 977 dev pairs")
    assert not out.exists()


def test_a_small_overlap_is_a_warning_and_none_is_silent():
    from bimine.training.classifier import check_dev_apart

    said: list[str] = []
    src, tgt = [f"s{i}" for i in range(100)], [f"t{i}" for i in range(100)]
    check_dev_apart(src, tgt, [f"s{i}" for i in range(100, 120)], [f"t{i}" for i in range(100, 120)], same=False,
                    warn=said.append)
    assert said == []
    check_dev_apart(src, tgt, src[:5] + ["x"] * 15, tgt[:5] + ["y"] * 15, same=False, warn=said.append)
    assert len(said) == 1 and said[0].startswith("warning: --dev-src/--dev-tgt: 5 of the 20 dev pairs (25%)")


# ===================================================================== 7. a training run into a data folder


def test_train_refuses_a_folder_of_other_files(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "corpus.en").write_text("hello\n")
    _error(_run("train", "-c", EX.parent / "configs" / "example.yaml", "-o", data),
           f"-o/--output {data}", "corpus.en", "no earlier 'bimine train' run")
    assert sorted(p.name for p in data.iterdir()) == ["corpus.en"]


def test_a_run_folder_is_still_accepted(tmp_path):
    """An empty folder, a run killed before its first checkpoint (config.yaml alone) and a run to
    resume (a checkpoint) are run folders; the trainer itself says whether to add --resume."""
    from bimine.cli.train import check_run_folder

    run = tmp_path / "run"
    check_run_folder(str(run))  # missing: created by the run
    run.mkdir()
    check_run_folder(str(run))  # empty
    (run / "config.yaml").write_text("data: {train: []}\ntrain: {steps: 5}\n")
    (run / "teacher-cache").mkdir()
    check_run_folder(str(run))
    (run / "config.yaml").unlink()
    (run / "checkpoint").mkdir()
    check_run_folder(str(run))


# ===================================================================== 8. options the index or output ignores


def test_embed_shard_size_without_store_is_refused(tmp_path):
    out = tmp_path / "e.npy"
    _error(_run("embed", EX / "doc.en", "-o", out, "--shard-size", "100"), "--shard-size", "--store")
    assert not out.exists()


@pytest.mark.parametrize("args,words", [
    (["--index", "Flat", "--nprobe", "8"], ["--nprobe", "'Flat' has no IVF lists"]),
    (["--index", "HNSW32", "--nprobe", "8"], ["--nprobe", "'HNSW32' has no IVF lists"]),
    (["--index", "Flat", "--k-factor", "8"], ["--k-factor", "no Refine(...) stage"]),
    (["--index", "IVF16,Flat", "--k-factor", "32"], ["--k-factor", "no Refine(...) stage"]),  # even at the default
], ids=["flat-nprobe", "hnsw-nprobe", "flat-k-factor", "ivf-k-factor"])
def test_mine_index_options_the_index_ignores_are_refused(tmp_path, args, words):
    out = tmp_path / "p.tsv"
    _error(_run("mine", EX / "sample.en", EX / "sample.fr", "-o", out, *args), *words)
    assert not out.exists()


def test_index_options_that_apply_are_accepted():
    from bimine.mining.job import check_index_options

    check_index_options("IVF16,PQ128x4fs,Refine(SQfp16)", nprobe=True, k_factor=True)  # the README's command
    check_index_options("auto", nprobe=True, k_factor=True)  # auto may choose IVF with Refine
    check_index_options("Flat", nprobe=False, k_factor=False)
