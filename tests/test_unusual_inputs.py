"""Wrong answers on unusual but legal input (issue 72 §6): duplicated corpora, untranslated
copies in divergence, CR-only line endings, UTF-16, a file of two long lines, short documents
in align, and the message of an output that is the work folder."""

from __future__ import annotations

import codecs
import csv
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bimine.cli.main import registered
from bimine.errors import InputError
from bimine.text.io import read_lines, scan_text
from bimine.text.langcheck import check_language, sample_lines

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
DEV = EX / "dev.en-fr.tsv"
PAIR = ("--src-lang", "en", "--tgt-lang", "fr")
cli = registered()


def _run(*args) -> str:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


def _rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def _repeated(tmp_path: Path, times: int, source: Path = DEV) -> Path:
    p = tmp_path / f"x{times}.tsv"
    p.write_bytes(source.read_bytes() * times)
    return p


# ============================================================ duplicated corpora: filter, score, select


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> dict:
    """filter / score / select of the dev sample once."""
    d = tmp_path_factory.mktemp("single")
    out = {"filter": _run("filter", DEV, *PAIR, "-o", d / "f.tsv", "--no-progress")}
    _run("score", DEV, *PAIR, "-o", d / "s.tsv", "--no-progress")
    _run("select", DEV, *PAIR, "-o", d / "sel.tsv", "--no-progress")
    return {"dir": d, **out}


@pytest.mark.parametrize("times", [2, 5])
def test_filtering_a_corpus_repeated_keeps_what_the_corpus_alone_keeps(tmp_path, single, times):
    """The issue: the dev sample kept 289 of 300, twice 241 of 600, five times 113 of 1,500 (each
    copy made every pair its own nearest neighbour, so the in-corpus margin and the repeated-side
    count fell for all). Now the first copies keep exactly what the corpus alone keeps, the
    others are dropped as duplicates, and the run says how many rows were repeats."""
    printed = _run("filter", _repeated(tmp_path, times), *PAIR, "-o", tmp_path / "f.tsv", "--no-progress")
    alone, rows = _rows(single["dir"] / "f.tsv"), _rows(tmp_path / "f.tsv")
    n = len(alone)
    assert "kept 289 of 300" in single["filter"]
    assert f"kept 289 of {times * n:,}" in printed and f"{(times - 1) * n:,} rows repeat an earlier pair" in printed
    assert rows[:n] == alone  # every score and decision of the first copies, to the printed digit
    for copy in range(1, times):
        for a, b in zip(alone, rows[copy * n:(copy + 1) * n]):
            # dropped: as a duplicate, or by the rule before it in the pipeline that drops its first copy too
            assert b["keep"] == "0" and b["reason"] in ("the same pair came earlier", a["reason"])
            assert {k: v for k, v in b.items() if k not in ("duplicate", "score", "keep", "reason")} == \
                   {k: v for k, v in a.items() if k not in ("duplicate", "score", "keep", "reason")}


def test_scores_of_a_repeated_corpus_equal_the_corpus_alone(tmp_path, single):
    printed = _run("score", _repeated(tmp_path, 3), *PAIR, "-o", tmp_path / "s.tsv", "--no-progress")
    alone, rows = _rows(single["dir"] / "s.tsv"), _rows(tmp_path / "s.tsv")
    assert rows[:len(alone)] == alone and "600 rows repeat an earlier pair" in printed


def test_select_decides_each_copy_as_its_first(tmp_path, single):
    """``select`` has no duplicate rule: every copy gets its first copy's decision, and the
    fraction is taken over the distinct pairs (the same pairs as the corpus alone)."""
    _run("select", _repeated(tmp_path, 2), *PAIR, "-o", tmp_path / "sel.tsv", "--no-progress")
    alone, rows = _rows(single["dir"] / "sel.tsv"), _rows(tmp_path / "sel.tsv")
    assert rows[:len(alone)] == alone and rows[len(alone):] == alone


def test_a_few_pairs_repeated_many_times_keep_their_decisions(tmp_path):
    """The issue's 1,637 distinct pairs repeated to 200k lines kept 0; here the 1,277 shipped
    pairs 8 times: the first copies keep what the corpus alone keeps (the margin is over
    1,277 pairs either way)."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_bytes((EX / "train.en-fr.tsv").read_bytes() + DEV.read_bytes())
    _run("filter", pairs, *PAIR, "-o", tmp_path / "one.tsv", "--no-progress")
    printed = _run("filter", _repeated(tmp_path, 8, pairs), *PAIR, "-o", tmp_path / "many.tsv", "--no-progress")
    one = [r["keep"] for r in _rows(tmp_path / "one.tsv")]
    many = [r["keep"] for r in _rows(tmp_path / "many.tsv")]
    assert many[:len(one)] == one and sum(k == "1" for k in many) == sum(k == "1" for k in one) > 1000
    assert "8,939 rows repeat an earlier pair" in printed


def test_repeats_are_counted_over_blocks_and_within_one(tmp_path):
    from bimine.filtering.pipeline import _Repeats

    r = _Repeats()
    assert r.add(["a", "b", "a"], ["x", "y", "x"]).tolist() == [True, True, False]
    assert r.add(["b ", "c", "a"], ["y", "x", "y"]).tolist() == [False, True, True]  # white space collapsed
    assert r.distinct == 4 and r.ordinals().tolist() == [0, 1, 0, 1, 2, 3]


# ============================================================ untranslated copies in divergence / select


@pytest.fixture(scope="module")
def with_copies(tmp_path_factory) -> Path:
    """The 300 dev pairs, then 20 untranslated copies (English both sides) and 5 pairs whose
    French side is English (another pair's source: a side in the wrong language)."""
    rows = DEV.read_text(encoding="utf-8").splitlines()
    en = [r.split("\t")[0] for r in rows]
    extra = [f"{e}\t{e}" for e in en[:20]] + [f"{en[100 + i]}\t{en[200 + i]}" for i in range(5)]
    p = tmp_path_factory.mktemp("copies") / "with-copies.tsv"
    p.write_text("\n".join(rows + extra) + "\n", encoding="utf-8")
    return p


def test_divergence_ranks_copies_and_wrong_languages_at_the_bottom(tmp_path, with_copies):
    """The issue: copies had median 0.959, above the translations' 0.763."""
    printed = _run("divergence", with_copies, *PAIR, "-o", tmp_path / "d.tsv", "--no-progress")
    rows = _rows(tmp_path / "d.tsv")
    clean, bad = [float(r["score"]) for r in rows[:300]], [float(r["score"]) for r in rows[300:]]
    assert bad == [0.0] * 25 and np.median(clean) > 0.5 and sum(s > 0 for s in clean) >= 295
    assert "pairs score 0: they fail a rule" in printed and "identical 20" in printed


def test_select_keeps_no_copy(tmp_path, with_copies):
    """The issue: select --keep 0.5 kept 20 of 20 copies and dropped 93 clean pairs."""
    _run("select", with_copies, *PAIR, "--keep", "0.5", "-o", tmp_path / "s.tsv", "--no-progress")
    rows = _rows(tmp_path / "s.tsv")
    assert all(r["keep"] == "0" for r in rows[300:])
    assert {r["reason"] for r in rows[300:320]} == {"the sides are the same text (untranslated copy)"}
    kept = sum(r["keep"] == "1" for r in rows[:300])
    assert 145 <= kept <= 150  # half of the clean pairs that pass the rules


# ============================================================ line endings and encodings


def test_cr_only_line_endings_are_an_error_not_one_row(tmp_path):
    p = tmp_path / "mac.txt"
    p.write_bytes(b"\r".join(f"Sentence number {i}.".encode() for i in range(20)) + b"\r")
    for read in (lambda: scan_text(p), lambda: list(read_lines(p))):
        with pytest.raises(InputError, match=r"CR alone \(old Mac line endings\).*tr '\\r' '\\n'"):
            read()
    r = CliRunner().invoke(cli, ["embed", str(p), "-o", str(tmp_path / "x.npy")])
    assert r.exit_code == 2 and "20 lone CRs and 0 LF line breaks" in r.output and not (tmp_path / "x.npy").exists()
    ok = tmp_path / "ok.txt"  # CRLF, and a stray CR inside a line, stay as they were
    ok.write_bytes(b"one\r\ntwo\r\nthree has a \r inside\n")
    assert list(read_lines(ok)) == ["one", "two", "three has a \r inside"] and scan_text(ok).lines == 3


@pytest.mark.parametrize("encoding,named", [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16LE"), ("utf-16-be", "UTF-16BE")])
def test_utf16_is_named_with_its_fix(tmp_path, encoding, named):
    p = tmp_path / "u16.txt"
    p.write_bytes("Hello world, a sentence.\nAnother sentence here.\n".encode(encoding))
    fix = f"iconv -f {named.lower()} -t utf-8"
    for read in (lambda: scan_text(p), lambda: list(read_lines(p))):
        with pytest.raises(InputError, match=f"is {named} text, not UTF-8.*{fix}"):
            read()
    assert sample_lines(p) == []  # no language judged from it (it "looked like Afrikaans")
    r = CliRunner().invoke(cli, ["mine", str(p), str(EX / "sample.fr"), *PAIR, "-o", str(tmp_path / "p.tsv")])
    assert r.exit_code == 2 and fix in r.output and "warning" not in r.output, r.output


def test_a_binary_file_is_still_called_binary(tmp_path):
    p = tmp_path / "b.bin"
    p.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InputError, match="NUL byte; this looks like a binary file"):
        scan_text(p)
    assert codecs.BOM_UTF16_LE not in p.read_bytes()[:2]


def test_two_long_lines_are_two_sampled_lines_and_no_language_is_judged(tmp_path):
    """The issue: a 2-line file gave '100% of 200 sampled lines look like af' (each seek of the
    sample landed in one of its two long lines)."""
    p = tmp_path / "two.txt"
    p.write_text("The quick brown fox jumps over the lazy dog again. " * 30000 + "\n"
                 + "Le renard brun saute par-dessus le chien paresseux. " * 30000 + "\n", encoding="utf-8")
    assert p.stat().st_size > 2 << 20  # sampled by seeking, not read whole
    assert len(sample_lines(p)) == 2
    assert check_language(p, "af") is None
    many = tmp_path / "many.txt"
    many.write_text("".join(f"line {i} of a long plain file with words\n" for i in range(120_000)), encoding="utf-8")
    got = sample_lines(many, 200)
    assert len(got) == 200 and len(set(got)) == 200


# ============================================================ align of short documents


def test_the_unrelated_documents_warning_needs_twenty_lines_a_side():
    from bimine.documents.beads import Alignment, Bead
    from bimine.documents.job import unrelated_warning

    def at_chance(n: int) -> Alignment:
        beads = [Bead((i,), (i,), 0.9) for i in range(n)]
        return Alignment(beads=beads, n_src=n, n_tgt=n, skip_cost=1.0, levels=0, cells=0, chance_lines=2 * n)

    assert unrelated_warning(at_chance(12), "a.ko", "a.en") is None  # the 12-line ko-en pair
    assert "do not look like translations" in unrelated_warning(at_chance(20), "a.ko", "a.en")


# ============================================================ the work folder is no input


@pytest.mark.parametrize("output", ["wdq", "wdq/pairs.tsv"])
def test_an_output_that_is_the_work_folder_is_named_so(tmp_path, output, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wdq").mkdir()
    r = CliRunner().invoke(cli, ["mine", str(EX / "sample.en"), str(EX / "sample.fr"), *PAIR, "--work-dir", "wdq",
                                 "-o", output])
    assert r.exit_code == 2 and "--work-dir" in r.output and "is the input" not in r.output, r.output
