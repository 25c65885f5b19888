"""Mining sides of several files (a glob or a list): mined as one corpus, line columns name the file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import unaligned_sides

from bimine.encoders import load_encoder
from bimine.errors import ConfigError, InputError
from bimine.mining.pipeline import expand_inputs, mine_files
from bimine.mining.spec import MineJob

PART = 600  # lines per part file: a multiple of the shard size, so the shards are the concatenation's


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The shipped en-fr pairs, French shuffled, a blank line on each side; English also cut in 3 files."""
    en, fr = unaligned_sides(1)
    d = tmp_path_factory.mktemp("many")
    (d / "all.en").write_text("\n".join(en) + "\n", encoding="utf-8")
    (d / "all.fr").write_text("\n".join(fr) + "\n", encoding="utf-8")
    (d / "en").mkdir()
    for n, a in enumerate(range(0, len(en), PART)):
        (d / "en" / f"part-{n}.en").write_text("\n".join(en[a : a + PART]) + "\n", encoding="utf-8")
    return d, en


def _mine(src, tgt, out, **kw):
    return mine_files(MineJob(src, str(tgt), str(out), src_lang="en", tgt_lang="fr", shard_size=300, progress=False,
                              workers=1, **kw), encoder=load_encoder("default"))


def test_a_side_in_several_files_mines_as_their_concatenation(corpus, tmp_path):
    d, en = corpus
    one = _mine(str(d / "all.en"), d / "all.fr", tmp_path / "one.tsv", line_numbers=True)
    many = _mine(str(d / "en" / "part-*.en"), d / "all.fr", tmp_path / "many.tsv", line_numbers=True)
    assert (many.src_sentences, many.src_blank) == (one.src_sentences, one.src_blank) == (len(en), 1)
    rows1 = [ln.split("\t") for ln in (tmp_path / "one.tsv").read_text(encoding="utf-8").splitlines()]
    rows2 = [ln.split("\t") for ln in (tmp_path / "many.tsv").read_text(encoding="utf-8").splitlines()]
    assert len(rows1) > 500 and len(rows1) == len(rows2)
    parts = {}
    for r1, r2 in zip(rows1, rows2):
        assert r1[:3] == r2[:3] and r1[4] == r2[4]  # score, texts and target line: the same
        n = int(r1[3]) - 1  # 0-based line of the concatenation
        file, line = r2[3].rsplit(":", 1)
        assert file == str(d / "en" / f"part-{n // PART}.en") and int(line) == n % PART + 1
        if file not in parts:
            parts[file] = Path(file).read_text(encoding="utf-8").split("\n")
        assert parts[file][int(line) - 1] == r2[1]  # FILE:LINE holds the mined text
    assert len(parts) == 3  # pairs from every file


def test_jsonl_names_the_file_of_a_side_of_several_files(corpus, tmp_path):
    d, _ = corpus
    files = sorted(str(p) for p in (d / "en").glob("part-*.en"))
    _mine(files, d / "all.fr", tmp_path / "p.jsonl", fmt="jsonl")
    recs = [json.loads(ln) for ln in (tmp_path / "p.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(recs) > 500
    assert {r["src_file"] for r in recs} == set(files)
    assert all("tgt_file" not in r for r in recs)  # one target file: as before
    r = recs[0]
    assert Path(r["src_file"]).read_text(encoding="utf-8").split("\n")[r["src_line"] - 1] == r["src"]


def test_work_dir_keeps_a_store_per_file_and_a_rerun_reuses_them(corpus, tmp_path):
    d, _ = corpus
    pattern = str(d / "en" / "part-*.en")
    _mine(pattern, d / "all.fr", tmp_path / "a.tsv", work_dir=str(tmp_path / "w"))
    assert len(list((tmp_path / "w").glob("src-*.store"))) == 3
    rep = _mine(pattern, d / "all.fr", tmp_path / "b.tsv", work_dir=str(tmp_path / "w"))
    assert any(r.startswith("src embeddings (") for r in rep.reused) and "embed src" not in rep.seconds
    assert (tmp_path / "a.tsv").read_bytes() == (tmp_path / "b.tsv").read_bytes()


def test_bad_input_lists_are_clear_errors(corpus, tmp_path):
    d, _ = corpus
    with pytest.raises(InputError, match="no file matches"):
        expand_inputs(str(d / "en" / "nothing-*.en"))
    with pytest.raises(InputError, match="listed twice"):
        expand_inputs([str(d / "all.en"), str(d / "en" / ".." / "all.en")])
    assert expand_inputs(str(d / "all.en")) == [str(d / "all.en")]
    with pytest.raises(ConfigError, match="--src-store holds the embeddings of one file"):
        _mine(str(d / "en" / "part-*.en"), d / "all.fr", tmp_path / "x.tsv", src_store=str(d))
    assert not (tmp_path / "x.tsv").exists()


def test_mine_command_takes_a_quoted_glob(corpus, tmp_path):
    d, _ = corpus
    out = tmp_path / "cli.tsv"
    r = subprocess.run([sys.executable, "-m", "bimine", "mine", str(d / "en" / "part-*.en"), str(d / "all.fr"),
                        "-o", str(out), "--line-numbers", "--shard-size", "300", "--no-progress"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = [ln.split("\t") for ln in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) > 500 and all(Path(row[3].rsplit(":", 1)[0]).parent == d / "en" for row in rows)
    bad = subprocess.run([sys.executable, "-m", "bimine", "mine", str(d / "en" / "none-*.en"), str(d / "all.fr"),
                          "-o", str(tmp_path / "bad.tsv"), "--no-progress"], capture_output=True, text=True)
    assert bad.returncode != 0 and "no file matches this pattern" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "bad.tsv").exists()
