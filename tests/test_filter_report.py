"""bimine score / filter --report: the self-contained HTML report (summary, one histogram per
score, examples of the dropped pairs), escaped, bounded, and written only by a run that
succeeds."""

from __future__ import annotations

import csv
import re
from collections import Counter
from html.parser import HTMLParser

import numpy as np
import pytest
from click.testing import CliRunner

from bimine.cli import filter as _filter  # noqa: F401  (registers the commands)
from bimine.cli.main import cli
from bimine.filtering.pipeline import PairBlock, PipelineOptions, run_pipeline
from bimine.filtering.report import SHOW_CHARS, fmt_num
from bimine.filtering.rules import Duplicates, EmptySide, LengthRatio
from bimine.scoring.base import PairFilter

LONG = "This sentence goes on and on, " * 12 + "and then it stops."
PAIRS = [
    ("The cat sleeps on the mat.", "Le chat dort sur le tapis."),  # 1 kept
    ("", "Bonjour."),  # 2 empty
    ("Use <b>bold</b> & co.", "Use <b>bold</b> & co."),  # 3 identical (escaping)
    ("In 2019 we met.", "En 2018 on s'est vus."),  # 4 numbers
    ("The cat sleeps on the mat.", "Le chat dort sur le tapis."),  # 5 duplicate of 1
    (LONG, "Court."),  # 6 length_ratio (a long text, cut in the report)
    ("Save the file, please.", "Enregistrez le fichier."),  # 7 kept
    ("Hello world.", ""),  # 8 empty
]
RULES = "empty,identical,length_ratio,numbers,duplicate"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def read_tsv(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


class Page(HTMLParser):
    """The parts of a report the tests read: each table's rows (cell texts and the
    attributes of each cell), each histogram card's text and SVG count, each drop section."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []  # {"cls", "section", "rows": [[(text, attrs)]]}
        self.cards: dict[str, dict] = {}  # id -> {"text", "svgs", "bar_titles"}
        self._section: list[str] = []
        self._cell: list | None = None
        self._title = False
        self._bar_title: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self._section.append(a.get("id", ""))
            if "card" in a.get("class", ""):
                self.cards[a["id"]] = {"text": "", "svgs": 0, "bar_titles": []}
        card = self._card()
        if tag == "table":
            self.tables.append({"cls": a.get("class", ""), "section": self._section[-1] if self._section else "",
                                "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th") and self.tables:
            self._cell = ["", a]
        elif tag == "svg" and card is not None:
            card["svgs"] += 1
        elif tag == "title" and card is not None:
            self._bar_title = []

    def handle_endtag(self, tag):
        if tag == "section" and self._section:
            self._section.pop()
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[-1]["rows"][-1].append((self._cell[0].strip(), self._cell[1]))
            self._cell = None
        elif tag == "title" and self._bar_title is not None:
            self._card()["bar_titles"].append("".join(self._bar_title))
            self._bar_title = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[0] += data
        if self._bar_title is not None:
            self._bar_title.append(data)
        card = self._card()
        if card is not None:
            card["text"] += data

    def _card(self):
        for sid in reversed(self._section):
            if sid in self.cards:
                return self.cards[sid]
        return None

    def table(self, cls: str, section: str | None = None) -> list[list[tuple[str, dict]]]:
        for t in self.tables:
            if cls in t["cls"].split() and (section is None or t["section"] == section):
                return t["rows"]
        raise AssertionError(f"no table {cls!r} in section {section!r}")

    def filter_rows(self) -> dict[str, list[str]]:
        rows = self.table("filters")
        head = [c for c, _ in rows[0]]
        return {r[1][0]: dict(zip(head, (c for c, _ in r))) for r in rows[1:] if len(r) == len(head)}


def bar_total(card: dict) -> int:
    """The pairs the histogram's bars hold, read from their tooltips ("...: 1,234 pairs")."""
    return sum(int(re.search(r": ([\d,]+) pairs", t).group(1).replace(",", "")) for t in card["bar_titles"])


@pytest.fixture
def tsv(tmp_path):
    p = tmp_path / "in.tsv"
    p.write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS), encoding="utf-8")
    return p


def test_filter_report_summary_histograms_and_escaped_examples(tsv, tmp_path):
    out, kept, rep = tmp_path / "out.tsv", tmp_path / "kept.tsv", tmp_path / "report.html"
    r = run("filter", tsv, "--src-lang", "en", "--tgt-lang", "fr", "--no-model", "--rules", RULES, "-o", out,
            "--kept", kept, "--report", rep, "--no-progress")
    assert r.exit_code == 0, r.output
    assert f"report: {rep}" in r.output
    text = rep.read_text(encoding="utf-8")
    # self-contained: no script, no external resource
    assert "<script" not in text and not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    page = Page(text)
    rows = read_tsv(out)
    names = RULES.split(",")

    # summary: the decisions of the output, per filter the pairs failing and dropped first
    dropped = Counter(x["reason"] for x in rows if x["keep"] == "0")
    assert sum(dropped.values()) == 6
    table = page.filter_rows()
    assert list(table) == names + ["all"] and table["all"]["dropped first"] == "6"
    reasons = {"empty": "a side is empty", "identical": "the sides are the same text (untranslated copy)",
               "length_ratio": "one side is much longer than the other",
               "numbers": "the sides hold different numbers", "duplicate": "the same pair came earlier"}
    for name in names:
        assert int(table[name]["dropped first"]) == dropped[reasons[name]], name
    assert [table[n]["dropped first"] for n in names] == ["2", "1", "1", "1", "1"]
    assert table["length_ratio"]["clean when"] == "≤ 3" and table["empty"]["clean when"] == "≥ 1"
    tiles = re.findall(r'<div class="k">(\w+)</div><div class="v">([\d,]+)', text)
    assert tiles[:3] == [("pairs", "8"), ("kept", "2"), ("dropped", "6")]

    # one histogram per score column and one of the combined score, each drawing every pair
    assert set(page.cards) == {f"score-{n}" for n in names + ["score"]}
    for name, card in page.cards.items():
        assert card["svgs"] == 1, name
        assert bar_total(card) == 8, name
        assert "0 NaN" in card["text"]
    assert text.count("<svg") == len(names) + 1
    assert 'class="threshold"' in text

    # examples: one table per reason, its rows the dropped input lines, texts escaped
    lines = {name: [i + 1 for i, x in enumerate(rows) if x["reason"] == reasons[name]] for name in names}
    for name in names:
        ex = page.table("ex", section=f"drop-{name}")
        assert [int(r[0][0]) for r in ex[1:]] == lines[name], name
    ident = page.table("ex", section="drop-identical")[1]
    assert ident[1][0] == ident[2][0] == "Use <b>bold</b> & co."
    assert "Use &lt;b&gt;bold&lt;/b&gt; &amp; co." in text and "<b>bold</b>" not in text
    # a long text is cut, the whole of it in the cell's tooltip
    long_cell = page.table("ex", section="drop-length_ratio")[1][1]
    assert long_cell[1]["title"] == LONG
    assert len(long_cell[0]) < len(LONG) and long_cell[0].startswith(LONG[: SHOW_CHARS // 2])
    # the failed score is shown with the example
    assert "length_ratio" in page.table("ex", section="drop-length_ratio")[1][3][0]


def test_score_report_has_histograms_and_no_examples(tsv, tmp_path):
    out, rep = tmp_path / "out.tsv", tmp_path / "score.html"
    r = run("score", tsv, "--src-lang", "en", "--tgt-lang", "fr", "--no-model", "--rules", RULES, "-o", out,
            "--report", rep, "--no-progress")
    assert r.exit_code == 0, r.output
    text = rep.read_text(encoding="utf-8")
    page = Page(text)
    assert text.count("<svg") == len(RULES.split(",")) + 1
    assert 'id="dropped"' not in text and not [t for t in page.tables if "ex" in t["cls"].split()]
    # the filters still say how many pairs fail them
    assert page.filter_rows()["empty"]["fail it"] == "2"
    assert "dropped first" not in page.filter_rows()["empty"]


def test_no_report_without_the_flag_and_none_from_a_failed_run(tsv, tmp_path):
    out, kept = tmp_path / "out.tsv", tmp_path / "kept.tsv"
    r = run("filter", tsv, "--src-lang", "en", "--tgt-lang", "fr", "--no-model", "--rules", RULES, "-o", out,
            "--kept", kept, "--no-progress")
    assert r.exit_code == 0 and "report:" not in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.tsv", "kept.tsv", "out.tsv"]

    # a malformed row after the first blocks: no output, no report, no temporary file left
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    bad = bad_dir / "bad.tsv"
    bad.write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS) + "only one column\n", encoding="utf-8")
    rep = bad_dir / "report.html"
    r = CliRunner().invoke(cli, ["filter", str(bad), "--src-lang", "en", "--tgt-lang", "fr", "--no-model",
                                 "--rules", RULES, "-o", str(bad_dir / "o.tsv"), "--report", str(rep),
                                 "--block-size", "2", "--no-progress"])
    assert r.exit_code == 2 and "bad.tsv:9" in r.output
    assert sorted(p.name for p in bad_dir.iterdir()) == ["bad.tsv"]

    # the report may not overwrite the output
    r = CliRunner().invoke(cli, ["filter", str(tsv), "--src-lang", "en", "--tgt-lang", "fr", "--no-model",
                                 "-o", str(out), "--report", str(out), "--no-progress"])
    assert r.exit_code == 2 and "--report" in r.output
    assert read_tsv(out)[0]["src"] == PAIRS[0][0]  # the earlier output is untouched


def test_a_run_failing_after_the_report_is_rendered_leaves_no_report(tmp_path):
    # the kept output cannot replace a folder: the run fails after every file was written
    # to its temporary name; neither the report nor its temporary file stays
    folder = tmp_path / "kept-is-a-folder"
    folder.mkdir()
    src, tgt = [s for s, _ in PAIRS], [t for _, t in PAIRS]
    with pytest.raises(OSError):
        run_pipeline(_blocks(src, tgt, 3), [EmptySide()], str(tmp_path / "o.tsv"),
                     PipelineOptions(kept_output=str(folder), report_path=str(tmp_path / "r.html")))
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("r.html")]


class _Values(PairFilter):
    """A filter with given scores (NaN included)."""

    def __init__(self, values, name, threshold=None, clean_high=True, kind="rule"):
        super().__init__(name=name, threshold=threshold, clean_high=clean_high, reason=f"{name} failed", kind=kind)
        self._it = iter(values)

    def score(self, src, tgt):
        return np.array([next(self._it) for _ in src], dtype=np.float64)


def _blocks(src, tgt, size, first=1):
    for i in range(0, len(src), size):
        s, t = src[i : i + size], tgt[i : i + size]
        yield PairBlock([[x, y] for x, y in zip(s, t)], s, t, first + i)


def test_run_pipeline_report_nan_constant_threshold_and_bounded_examples(tmp_path):
    n = 60
    src = [f"sentence {i % 25}" for i in range(n)]  # pairs 25.. repeat the first 25: duplicates
    tgt = [f"phrase {i % 25}" for i in range(n)]
    # a score is a function of its pair, as every real one is (a repeat gets its first copy's, issue 72 §6)
    graded = [np.nan if i % 25 % 10 == 3 else i % 25 / n for i in range(n)]  # 7 NaN (rows 3, 13, 23 and repeats)
    filters = [Duplicates(), _Values(graded, "quality", threshold=0.1), _Values([0.37] * n, "flat"),
               _Values([float(i) for i in range(n)], "rank", kind="score")]
    out, rep = tmp_path / "o.tsv", tmp_path / "r.html"
    result = run_pipeline(_blocks(src, tgt, 7, first=11), filters, str(out),
                          PipelineOptions(report_path=str(rep), report_title="Run <7> & co",
                                          report_info={"input": "a <b> file"}))
    rows = read_tsv(out)
    text = rep.read_text(encoding="utf-8")
    page = Page(text)
    assert "<title>Run &lt;7&gt; &amp; co</title>" in text and "a &lt;b&gt; file" in text
    # the NaN count under the chart of the score that has NaN, and no bar for them
    assert "7 NaN" in page.cards["score-quality"]["text"]
    assert bar_total(page.cards["score-quality"]) == n - 7
    # a constant column still gets its histogram; a threshold only where the filter has one
    assert bar_total(page.cards["score-flat"]) == n
    quality = text[text.index('id="score-quality"'):text.index('id="score-flat"')]
    flat = text[text.index('id="score-flat"'):text.index('id="score-rank"')]
    assert 'class="threshold"' in quality and 'class="threshold"' not in flat
    # bounded examples: the first 20 duplicates, with their input lines (blocks start at line 11)
    dup_lines = [i + 11 for i, x in enumerate(rows) if x["reason"] == "the same pair came earlier"]
    assert len(dup_lines) == result.dropped_by["duplicate"] == 35
    ex = page.table("ex", section="drop-duplicate")
    assert [int(r[0][0]) for r in ex[1:]] == dup_lines[:20]
    assert "35 pairs dropped" in text and "the first 20 in input order shown" in text
    # quality: the failing pairs not already dropped as duplicates
    q_lines = [i + 11 for i, x in enumerate(rows) if x["reason"] == "quality failed"]
    assert [int(r[0][0]) for r in page.table("ex", section="drop-quality")[1:]] == q_lines
    assert page.filter_rows()["quality"]["dropped first"] == str(len(q_lines))
    # the combined score ('rank', the only graded score) has its own chart
    assert bar_total(page.cards["score-score"]) == n


def test_run_pipeline_report_on_empty_input_and_nothing_without_a_path(tmp_path):
    out, rep = tmp_path / "o.tsv", tmp_path / "r.html"
    run_pipeline(iter([]), [EmptySide(), LengthRatio()], str(out), PipelineOptions(report_path=str(rep)))
    text = rep.read_text(encoding="utf-8")
    assert text.count("<svg") == 3 and text.count(">no pairs</text>") == 3
    assert re.search(r'<div class="k">pairs</div><div class="v">0<', text)
    run_pipeline(iter([]), [EmptySide()], str(tmp_path / "p.tsv"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.tsv", "p.tsv", "r.html"]


def test_report_marks_control_characters_and_formats_numbers(tmp_path):
    src, tgt = ["Bell\x07 here", "ok"], ["Cloche\x07 ici", "ok"]
    out, rep = tmp_path / "o.tsv", tmp_path / "r.html"
    from bimine.filtering.rules import BadCharacters

    run_pipeline(_blocks(src, tgt, 5), [BadCharacters()], str(out), PipelineOptions(report_path=str(rep)))
    text = rep.read_text(encoding="utf-8")
    assert "\x07" not in text and '<span class="ctl" title="U+0007">^G</span>' in text
    assert fmt_num(1234567) == "1,234,567" and fmt_num(-0.5) == "−0.5" and fmt_num(float("nan")) == "NaN"
    assert fmt_num(12345.6) == "12,346" and fmt_num(0.12345) == "0.123"
