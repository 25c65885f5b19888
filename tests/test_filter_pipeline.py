"""bimine score / filter: the output contract (one row per input row, in order, header, the
combined score), decisions and reasons, malformed input, pipeline YAML, parallel blocks."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from click.testing import CliRunner

from bimine.cli import filter as _filter  # noqa: F401  (registers the commands)
from bimine.cli.main import cli
from bimine.errors import ConfigError, InputError
from bimine.filtering.config import build_filters, default_spec, parse_pipeline
from bimine.filtering.pipeline import PipelineOptions, read_pair_blocks, run_pipeline
from bimine.filtering.rules import Duplicates, EmptySide, LengthRatio

SRC = ["The cat sleeps on the mat.", "", "Hello world.", "In 2019 we met.", "The cat sleeps on the mat.",
       "Save the file.", "A very long sentence with many words in it indeed.", "See https://a.org now."]
TGT = ["Le chat dort sur le tapis.", "Bonjour.", "Bonjour le monde.", "En 2018 on s'est vus.",
       "Le chat dort sur le tapis.", "Save the file.", "Court.", "Voir https://a.org maintenant."]


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def read_tsv(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


@pytest.fixture
def files(tmp_path):
    a, b = tmp_path / "a.en", tmp_path / "b.fr"
    a.write_text("\n".join(SRC) + "\n")
    b.write_text("\n".join(TGT) + "\n")
    return a, b


def test_filter_rules_only_decisions_and_reasons(files, tmp_path):
    a, b = files
    out, kept = tmp_path / "out.tsv", tmp_path / "kept.tsv"
    r = run("filter", "--src", a, "--tgt", b, "--src-lang", "en", "--tgt-lang", "fr", "--no-model",
            "--rules", "empty,identical,length_ratio,numbers,urls,duplicate", "-o", out, "--kept", kept, "--no-progress")
    assert r.exit_code == 0, r.output
    rows = read_tsv(out)
    assert [x["src"] for x in rows] == SRC and [x["tgt"] for x in rows] == TGT
    assert list(rows[0]) == ["src", "tgt", "empty", "identical", "length_ratio", "numbers", "urls", "duplicate",
                             "score", "keep", "reason"]
    assert [x["keep"] for x in rows] == ["1", "0", "1", "0", "0", "0", "0", "1"]
    assert rows[1]["reason"] == "a side is empty"
    assert rows[3]["reason"] == "the sides hold different numbers"
    assert rows[4]["reason"] == "the same pair came earlier" and rows[4]["duplicate"] == "1"
    assert rows[5]["reason"] == "the sides are the same text (untranslated copy)"
    assert rows[6]["reason"] == "one side is much longer than the other" and rows[6]["length_ratio"] == "10"
    # no graded score in the pipeline: 'score' is the share of rules passed
    assert float(rows[0]["score"]) == 1.0 and float(rows[3]["score"]) == pytest.approx(5 / 6)
    assert kept.read_text().splitlines() == [f"{s}\t{t}" for s, t, k in zip(SRC, TGT, [x["keep"] for x in rows])
                                             if k == "1"]
    assert "kept 3 of 8 pairs" in r.output


def test_score_with_a_model_and_a_tsv_with_extra_columns(tmp_path, tiny_model):
    inp = tmp_path / "in.tsv"
    inp.write_text("".join(f"{i}\t{t}\t{s}\n" for i, (s, t) in enumerate(zip(SRC, TGT))))
    out = tmp_path / "s.tsv"
    r = run("score", inp, "--columns", "3,2", "--src-lang", "en", "--tgt-lang", "fr", "-m", tiny_model,
            "--rules", "empty", "-o", out, "--no-progress")
    assert r.exit_code == 0, r.output
    rows = read_tsv(out)
    assert list(rows[0]) == ["col1", "tgt", "src", "empty", "cosine", "margin", "score"]
    assert [x["src"] for x in rows] == SRC and [x["col1"] for x in rows] == [str(i) for i in range(8)]
    from bimine import load_encoder

    enc = load_encoder(tiny_model)
    want = np.einsum("ij,ij->i", enc.encode(SRC, "en"), enc.encode(TGT, "fr"))
    blank = np.array([not s.strip() or not t.strip() for s, t in zip(SRC, TGT)])
    assert blank.any()  # a blank side has no cosine (NaN), not the cosine of two empty vectors
    np.testing.assert_allclose([float(x["cosine"]) for x in rows], np.where(blank, np.nan, want), atol=1e-5)
    from bimine.scoring.pair_scores import corpus_margin

    # over the distinct pairs (issue 72 §6): row 4 repeats row 0 and gets its margin
    distinct = [0, 1, 2, 3, 5, 6, 7]
    margin = corpus_margin(enc.encode([SRC[i] for i in distinct], "en"), enc.encode([TGT[i] for i in distinct], "fr"),
                           k=4, valid_src=np.array([0, 2, 3, 4, 5, 6]))[[0, 1, 2, 3, 0, 4, 5, 6]]
    got = np.array([float(x["margin"]) for x in rows])
    np.testing.assert_allclose(got[[0, 2, 3]], margin[[0, 2, 3]], rtol=1e-5)
    assert got[4] == got[0]
    # the combined score: the sum of the two graded scores (002 Eq. 3), a NaN margin counting 0
    np.testing.assert_allclose([float(x["score"]) for x in rows], np.where(blank, 0, want) + np.nan_to_num(margin),
                               atol=1e-5)


def test_malformed_tsv_rows_name_the_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tb\nc\td\ne\n")
    with pytest.raises(InputError, match=r"bad.tsv:3: has 1 tab-separated column\(s\), the first line has 2"):
        list(read_pair_blocks(str(bad)))
    bad.write_text("a\n")
    with pytest.raises(InputError, match=r"bad.tsv:1: has 1 .*needs at least 2"):
        list(read_pair_blocks(str(bad)))
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("x\ny\tz\n")
    b.write_text("1\n2\n")
    with pytest.raises(InputError, match=r"a:2: holds a tab"):
        list(read_pair_blocks(src=str(a), tgt=str(b)))
    b.write_text("1\n")
    with pytest.raises(InputError, match="same number of lines"):
        list(read_pair_blocks(src=str(a), tgt=str(b)))
    r = CliRunner().invoke(cli, ["filter", str(tmp_path / "bad.tsv"), "--src-lang", "en", "--tgt-lang", "fr",
                                 "--no-model", "-o", str(tmp_path / "o.tsv")])
    assert r.exit_code == 2 and "bad.tsv:1" in r.output and not (tmp_path / "o.tsv").exists()


@pytest.mark.parametrize("block_size,workers", [(1, 1), (3, 1), (3, 2), (100, 2)])
def test_row_count_and_order_for_any_blocks_and_workers(tmp_path, block_size, workers):
    src, tgt = SRC * 5, TGT * 5
    filters = [EmptySide(), LengthRatio(), Duplicates()]
    out = tmp_path / f"o-{block_size}-{workers}.tsv"
    rep = run_pipeline(_blocks(src, tgt, block_size), filters, str(out), PipelineOptions(workers=workers))
    rows = read_tsv(out)
    assert len(rows) == len(src) == rep.pairs
    assert [x["src"] for x in rows] == src
    # duplicates: every repeat after the first is counted, across blocks and workers
    pairs = list(zip(src, tgt))
    assert [int(x["duplicate"]) for x in rows] == [pairs[:i].count(p) for i, p in enumerate(pairs)]
    assert [int(x["duplicate"]) for x in rows][:9] == [0, 0, 0, 0, 1, 0, 0, 0, 2]


def _blocks(src, tgt, size):
    from bimine.filtering.pipeline import PairBlock

    for i in range(0, len(src), size):
        s, t = src[i : i + size], tgt[i : i + size]
        yield PairBlock([[x, y] for x, y in zip(s, t)], s, t, i + 1)


def test_empty_input_writes_the_header(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("")
    b.write_text("")
    out = tmp_path / "o.tsv"
    r = run("score", "--src", a, "--tgt", b, "--src-lang", "en", "--tgt-lang", "fr", "--no-model", "--rules", "empty",
            "-o", out, "--no-progress")
    assert r.exit_code == 0 and out.read_text() == "src\ttgt\tempty\tscore\n"


def test_pipeline_yaml_is_checked():
    spec = parse_pipeline({"filters": [{"rule": "length_ratio", "threshold": 2.5}, {"rule": "duplicate",
                                                                                    "lowercase": True}]})
    f = build_filters(spec, src_lang="en", tgt_lang="fr")
    assert f[0].threshold == 2.5 and f[1].lowercase
    spec = parse_pipeline({"filters": [{"score": "margin", "exact_below": 10**9, "nprobe": 64}]})
    (m,) = build_filters(spec, src_lang="en", tgt_lang="fr", encoder=object())
    assert (m.exact_below, m.nprobe) == (10**9, 64)
    for bad, msg in (({"filters": [{"rule": "nope"}]}, "unknown rule 'nope'"),
                     ({"filters": [{"rule": "empty", "thresh": 1}]}, r"unknown option\(s\) \['thresh'\]"),
                     ({"filters": [{"rule": "empty", "score": "cosine"}]}, "one 'rule' or one 'score'"),
                     ({"filter": []}, r"unknown key\(s\) \['filter'\]"),
                     ({"filters": [{"score": "cosine"}]}, "needs a model"),
                     ({"filters": [{"rule": "empty", "threshold": "x"}]}, "threshold must be a number")):
        with pytest.raises(ConfigError, match=msg):
            build_filters(parse_pipeline(bad), src_lang="en", tgt_lang="fr")
    with pytest.raises(ConfigError, match="unknown rule"):
        default_spec("empty,nope")


def test_filter_yaml_and_score_threshold(files, tmp_path, tiny_model):
    a, b = files
    cfg = tmp_path / "p.yaml"
    cfg.write_text("filters:\n  - rule: empty\n  - score: cosine\nthreshold: 2.0\n")
    out = tmp_path / "o.tsv"
    r = run("filter", "--src", a, "--tgt", b, "--src-lang", "en", "--tgt-lang", "fr", "-m", tiny_model, "-c", cfg,
            "-o", out, "--no-progress")
    assert r.exit_code == 0, r.output
    rows = read_tsv(out)
    # a cosine never reaches 2: every non-empty pair is dropped by the combined-score threshold
    assert [x["keep"] for x in rows] == ["0"] * 8
    assert rows[1]["reason"] == "a side is empty" and rows[0]["reason"] == "combined score below 2"


class _Fixed:
    """A graded score with given values (kind 'score'), for selection tests."""

    def __new__(cls, values, name="g"):
        from bimine.scoring.base import PairFilter

        f = PairFilter(name=name, threshold=None, kind="score")
        it = iter(values)
        f.score = lambda src, tgt: np.array([next(it) for _ in src], dtype=np.float64)
        return f


def test_selection_top_fraction_and_budget(tmp_path):
    from bimine.filtering.decisions import Selection

    src = ["a b", "c d e", "f", "", "g h"]
    tgt = ["A B", "C D E", "F", "X", "G H"]
    vals = [0.5, 0.9, 0.7, 0.95, 0.2]
    out = tmp_path / "o.tsv"
    run_pipeline(_blocks(src, tgt, 2), [EmptySide(), _Fixed(vals)], str(out),
                 PipelineOptions(selection=Selection(top_fraction=0.5)))
    rows = read_tsv(out)
    # row 3 (empty) fails the rule; of the 4 eligible, the best 2: 0.9 and 0.7
    assert [x["keep"] for x in rows] == ["0", "1", "1", "0", "0"]
    assert rows[3]["reason"] == "a side is empty" and rows[0]["reason"] == "not in the best 50% by combined score"
    run_pipeline(_blocks(src, tgt, 2), [EmptySide(), _Fixed(vals)], str(out),
                 PipelineOptions(selection=Selection(token_budget=4)))
    # ranked 0.9 (3 target words), 0.7 (1), 0.5 (2): 3 + 1 = 4, the next would pass 4
    assert [x["keep"] for x in read_tsv(out)] == ["0", "1", "1", "0", "0"]
    run_pipeline(_blocks(src, tgt, 2), [_Fixed([1.0, 3.0, 2.0, 1.0, 5.0], "a"), _Fixed([10.0, 10.0, 30.0, 20.0, 10.0], "b")],
                 str(out), PipelineOptions(selection=Selection(normalize=True)))
    # min-max: a -> [0, .5, .25, 0, 1], b -> [0, 0, 1, .5, 0]
    np.testing.assert_allclose([float(x["score"]) for x in read_tsv(out)], [0.0, 0.5, 1.25, 0.5, 1.0])
    with pytest.raises(ConfigError, match="not both"):
        Selection(top_fraction=0.5, token_budget=10)


@pytest.mark.parametrize("item", [{"score": "cosine", "threshold": "trained"}, {"rule": "length_ratio",
                                                                                   "threshold": "trained"}])
def test_trained_threshold_only_for_scores_that_store_one(item):
    from bimine.errors import ConfigError
    from bimine.filtering.config import PipelineSpec, build_filters

    with pytest.raises(ConfigError, match="threshold must be a number or null, got 'trained'"):
        build_filters(PipelineSpec(filters=[item]), src_lang="en", tgt_lang="fr", encoder=object())
