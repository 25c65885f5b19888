"""The pivot of ``--adapt`` chosen by the fast model (bimine.training.pivot_sample): exact nearest
lines across chunks against brute force, the rank-by-rank choice by hand, the whole side where it is
small, and on real text the translations found where a hashed sample misses them."""

from __future__ import annotations

import gzip
import hashlib
import itertools

import numpy as np
import pytest
from test_adapt import fake_teacher

from bimine.training import pivot_sample as P
from bimine.training.samples import sample_lines

NTREX = "dev/ntrex128/NTREX-128"


class HashEncoder:
    """Unit vectors of 8 dimensions from each text's SHA-256 (deterministic, no model)."""

    def encode(self, texts, lang):
        v = np.array([np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], np.uint8) for t in texts],
                     np.float32) - 127.5
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_nearest_lines_are_the_brute_force_nearest_across_chunks():
    enc = HashEncoder()
    lines = [f"line {i}" for i in range(53)]
    queries = enc.encode([f"query {i}" for i in range(6)], "xx")
    ids = P.nearest_lines(enc, queries, iter(lines), "en", 5, chunk=7)
    sims = queries @ enc.encode(lines, "en").T
    expect = np.argsort(-sims, axis=1, kind="stable")[:, :5]
    assert ids.tolist() == expect.tolist()
    # fewer lines than k: -1 fills the ranks left
    few = P.nearest_lines(enc, queries, iter(lines[:3]), "en", 5, chunk=2)
    assert (few[:, 3:] == -1).all() and sorted(few[0, :3].tolist()) == [0, 1, 2]


def test_chosen_by_rank_takes_every_first_then_every_second():
    ids = np.array([[4, 1, 9],
                    [4, 2, 7],
                    [5, -1, 8]])
    assert P.chosen_by_rank(ids, 10) == [4, 5, 1, 2, 9, 7, 8]
    assert P.chosen_by_rank(ids, 3) == [4, 5, 1]


def test_a_side_no_larger_than_the_sample_is_taken_whole():
    enc = HashEncoder()
    side = ["b", "", "a", "b ", "c"]
    lines, info = P.guided_pivot(enc, ["q"], "xx", lambda: iter(side), "en", 3)
    assert lines == ["b", "a", "c"] and info == {"lines": 3, "k": 0, "guided": False}


def test_a_larger_side_gives_the_sample_lines_nearest_first():
    enc = HashEncoder()
    side = [f"line {i}" for i in range(200)] + ["line 3", ""]
    sample = [f"query {i}" for i in range(10)]
    lines, info = P.guided_pivot(enc, sample, "xx", lambda: iter(side), "en", 25, chunk=16)
    assert info["lines"] == 200 and info["k"] == 4 and info["guided"]
    assert len(lines) == 25 and len(set(lines)) == 25 and info["nearest"] == 25
    nearest = np.argmax(enc.encode(sample, "xx") @ enc.encode(side[:200], "en").T, axis=1)
    firsts = list(dict.fromkeys(side[i] for i in nearest))
    assert lines[:len(firsts)] == firsts


def test_too_few_nearest_lines_are_filled_by_the_hashed_sample_of_the_rest():
    enc = HashEncoder()
    side = [f"line {i}" for i in range(100)]
    lines, info = P.guided_pivot(enc, ["q", "q", "q"], "xx", lambda: iter(side), "en", 25, chunk=30)
    assert info["k"] == 10 and info["nearest"] == 10 and len(lines) == 25 and len(set(lines)) == 25
    nearest = np.argsort(-(enc.encode(["q"], "xx") @ enc.encode(side, "en").T)[0], kind="stable")[:10]
    assert lines[:10] == [side[i] for i in nearest]
    assert lines[10:] == sample_lines([t for t in side if t not in lines[:10]], 15)[0]


def _ntrex(shared_data, name, start, n):
    with gzip.open(shared_data / NTREX / f"newstest2019-{name}.txt.gz", "rt", encoding="utf-8") as fh:
        return [line.rstrip("\n") for line in itertools.islice(fh, start, start + n)]


def test_the_pivot_holds_the_translations_a_hashed_sample_misses(shared_data):
    """40 French lines; the English side holds their 40 translations among 600 other NTREX lines.
    A pivot of 40: the hashed sample holds a few of the translations, the fast model's nearest
    hold most (34; the French lines 0-39 of NTREX include free translations)."""
    from bimine.encoders import load_encoder

    fr = _ntrex(shared_data, "ref.fra", 0, 40)
    en_gold = _ntrex(shared_data, "src.eng", 0, 40)
    side = _ntrex(shared_data, "src.eng", 40, 600) + en_gold
    hashed, _ = sample_lines(side, 40)
    lines, info = P.guided_pivot(load_encoder("default"), fr, "fr", lambda: iter(side), "en", 40)
    assert info["guided"] and len(lines) == 40
    found = len(set(lines) & set(en_gold))
    assert found >= 32, found  # 34: six free translations are not the nearest
    assert len(set(hashed) & set(en_gold)) <= 12


def test_adapt_takes_the_nearest_lines_of_a_larger_pivot_file(shared_data, tmp_path):
    """``bimine adapt --pivot FILE`` (AdaptJob.pivot) takes its pivot the same way as --adapt."""
    from bimine.encoders import load_encoder
    from bimine.training.adapt import AdaptJob, _pivot_lines

    fr = _ntrex(shared_data, "ref.fra", 0, 40)
    en_gold = _ntrex(shared_data, "src.eng", 0, 40)
    side = tmp_path / "en.txt"
    side.write_text("\n".join(_ntrex(shared_data, "src.eng", 40, 600) + en_gold) + "\n", encoding="utf-8")
    job = AdaptJob(text=str(side), lang="fr", output=str(tmp_path / "out"), pivot=str(side), pivot_sample=40)
    lines = _pivot_lines(job, load_encoder("default"), fr)
    assert len(lines) == 40 and len(set(lines) & set(en_gold)) >= 32


def test_a_rerun_with_a_pivot_file_finds_its_job_done_without_searching_again(shared_data, tmp_path, monkeypatch):
    """The job is keyed by the pivot file's digest: the rerun is recognised before any pivot line is chosen
    (the search embeds the whole file), and a pivot file with other content is another job."""
    from bimine.errors import ConfigError
    from bimine.training import adapt as A

    monkeypatch.setattr(A._LazyTeacher, "encode", lambda self, texts, lang: fake_teacher(texts, lang))
    km = tmp_path / "km.txt"
    km.write_text("\n".join(_ntrex(shared_data, "ref.khm", 0, 40)) + "\n", encoding="utf-8")
    en = tmp_path / "en.txt"
    en.write_text("\n".join(_ntrex(shared_data, "src.eng", 0, 120)) + "\n", encoding="utf-8")

    def job(pivot):
        return A.AdaptJob(text=str(km), lang="km", output=str(tmp_path / "out"), sample=40, steps=5,
                          fragments_per_line=1, batch_size=8, pivot=str(pivot), progress=False)

    first = A.adapt_model(job(en))
    assert not first.reused and first.record["pivot"]["sample"] == 40  # 40 of 120: chosen by the search

    def no_search(*args, **kw):
        raise AssertionError("the pivot was chosen again")

    monkeypatch.setattr(A, "_pivot_lines", no_search)
    again = A.adapt_model(job(en))
    assert again.reused and again.record == first.record
    other = tmp_path / "en2.txt"
    other.write_text(en.read_text(encoding="utf-8") + "One more line of English.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="holds a model already"):  # another job: not taken for this one
        A.adapt_model(job(other))



def test_a_pivot_read_from_a_pipe_trains_the_model_a_file_does(shared_data, tmp_path, monkeypatch):
    """The pivot's digest reads the stream through the job's copy: the lines chosen afterwards are the
    stream's (not an empty second read), the same as from a regular file; a missing pivot is an
    input error naming it."""
    import os
    import threading

    from bimine.errors import InputError
    from bimine.training import adapt as A

    monkeypatch.setattr(A._LazyTeacher, "encode", lambda self, texts, lang: fake_teacher(texts, lang))
    km = tmp_path / "km.txt"
    km.write_text("\n".join(_ntrex(shared_data, "ref.khm", 0, 40)) + "\n", encoding="utf-8")
    content = "\n".join(_ntrex(shared_data, "src.eng", 0, 120)) + "\n"
    en = tmp_path / "en.txt"
    en.write_text(content, encoding="utf-8")

    def job(pivot, out):
        return A.AdaptJob(text=str(km), lang="km", output=str(tmp_path / out), sample=40, steps=5,
                          fragments_per_line=1, batch_size=8, pivot=str(pivot), progress=False)

    from_file = A.adapt_model(job(en, "file"))
    fifo = tmp_path / "en.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(content, encoding="utf-8"), daemon=True)
    writer.start()
    from_pipe = A.adapt_model(job(fifo, "pipe"))
    writer.join(timeout=60)
    assert from_pipe.record["pivot"]["sample"] == 40 and from_pipe.record["key"] == from_file.record["key"]
    assert (tmp_path / "pipe/adapters.safetensors").read_bytes() == (tmp_path / "file/adapters.safetensors").read_bytes()
    with pytest.raises(InputError, match="no such file"):
        A.adapt_model(job(tmp_path / "missing.txt", "missing"))
    assert not (tmp_path / "missing").exists()  # refused before the output folder is made
