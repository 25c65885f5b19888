"""Document matching (``bimine docs match``): readers, Eq. 3 against a hand computation, the
baselines, selection, and the command on a newstest slice."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from bimine.documents.collections import read_collection
from bimine.documents.match import (
    Eq3Config,
    document_embeddings,
    embedding_scores,
    eq3_scores,
    mutual_best_counts,
    one_to_one,
)
from bimine.errors import InputError


def test_eq3_on_a_hand_computed_example():
    # source document 0: x0 (position 0), x1 (position 1)
    # target documents: A = 0 (t0 at 0, t1 at 1), B = 1 (t2 at 0)
    nbr = np.array([[0, 2], [2, 1]])
    conf = np.array([[0.9, 0.2], [0.6, 0.8]])
    args = dict(src_doc=np.array([0, 0]), src_pos=np.array([0, 1]), src_len=np.array([2]),
                tgt_doc=np.array([0, 0, 1]), tgt_pos=np.array([0, 1, 0]), tgt_len=np.array([2, 1]))
    paper = dict(rank="negative", positions="index")  # Eq. 3 as 000 writes it
    p = eq3_scores(nbr, conf, **args, config=Eq3Config(n=2, **paper))
    # A: x0-t0 -1 + 5*.9 - 2*0 = 3.5 ; x1-t1: -2 + 5*.8 - 2*0 = 2.0 -> 5.5
    # B: x0-t2 -2 + 5*.2 - 2*0 = -1.0 ; x1-t2: -1 + 5*.6 - 2*1 = 0.0 -> -1.0
    assert p.src.tolist() == [0, 0] and p.tgt.tolist() == [0, 1]
    assert p.score.tolist() == pytest.approx([5.5, -1.0]) and p.votes.tolist() == [2, 2]
    rel = eq3_scores(nbr, conf, **args, config=Eq3Config(n=2, rank="negative", positions="relative"))
    # x1-t2 relative positions: |1/2 - 0/1| = 0.5 -> -1 + 3 - 1 = 1.0, B = 0.0
    assert rel.score.tolist() == pytest.approx([5.5, 0.0])
    one = eq3_scores(nbr, conf, **args, config=Eq3Config(n=1, **paper))  # only rank-1 neighbours vote
    assert dict(zip(one.tgt.tolist(), one.score.tolist())) == pytest.approx({0: 3.5, 1: 0.0})
    # the default: N + 1 - r (2 for a first neighbour, 1 for a second) and relative positions
    # A: 2 + 4.5 - 0 + 1 + 4.0 - 0 = 11.5 ; B: 1 + 1.0 - 0 + 2 + 3.0 - 2 * 0.5 = 6.0
    inv = eq3_scores(nbr, conf, **args, config=Eq3Config(n=2))
    assert inv.score.tolist() == pytest.approx([11.5, 6.0])
    none = eq3_scores(np.array([[-1, -1], [2, -1]]), conf, **args, config=Eq3Config(n=2))
    assert none.tgt.tolist() == [1] and none.votes.tolist() == [1]


def test_mutual_best_counts_and_best_selection():
    # source sentences 0,1 in doc 0; 2 in doc 1. target sentences 0,1 in doc 0; 2 in doc 1
    fwd = np.array([0, 1, 1])
    bwd = np.array([0, 1, 2])  # target 1's nearest source is 1 (so source 2 -> target 1 is not mutual)
    p = mutual_best_counts(fwd, bwd, np.array([0, 0, 1]), np.array([0, 0, 1]))
    assert list(zip(p.src.tolist(), p.tgt.tolist(), p.score.tolist())) == [(0, 0, 2.0)]


def test_document_embeddings_average_then_normalise():
    emb = np.array([[1, 0], [0, 1], [1, 0], [0, 0]], np.float32)
    d = document_embeddings([(0, emb[:1]), (1, emb[1:3])], np.array([0, 2, 2, 3]), 2)  # two shards
    np.testing.assert_allclose(d[0], [2 ** -0.5, 2 ** -0.5], rtol=1e-6)
    assert not d[1].any()  # no sentences
    np.testing.assert_allclose(d[2], [1, 0])
    s = embedding_scores(d, np.array([[1, 0], [0, 1]], np.float32), k=2)
    assert s.best().tgt.tolist()[-1] == 0


def test_one_to_one_is_greedy_by_score():
    from bimine.documents.match import PairScores

    p = PairScores(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.array([3.0, 1.0, 5.0, 0.5]), np.ones(4, int))
    o = one_to_one(p)
    assert sorted(zip(o.src.tolist(), o.tgt.tolist())) == [(0, 1), (1, 0)]


def test_readers_and_errors_name_the_line(tmp_path):
    j = tmp_path / "a.jsonl"
    j.write_text('{"id": "d1", "sentences": ["One.", "  ", "Two\\tthree."]}\n\n{"id": 7, "sentences": []}\n'
                 '{"id": "d3", "sentences": ["Ça été\\u2028là.", "Fin."]}\n', encoding="utf-8")
    c = read_collection(str(j), str(tmp_path / "a.txt"))
    assert c.ids == ["d1", "7", "d3"] and c.offsets.tolist() == [0, 2, 2, 4]
    assert c.sentences(2) == ["Ça été là.", "Fin."] and c.sentences(1) == []  # seeks by byte offset
    assert c.stats == {"format": "jsonl", "blank_sentences": 1, "empty_documents": 1}
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "One.\nTwo three.\nÇa été là.\nFin.\n"
    assert c.doc_of_sentence().tolist() == [0, 0, 2, 2] and c.sentences(0) == ["One.", "Two three."]
    bad = {
        '{"id": "x", "sentences": ["a"]}\n{"id": "y", "sentences": ["b"]\n': "a.jsonl:2: not valid JSON",
        '{"id": "x"}\n': "a.jsonl:1: give either 'text' or 'sentences', not neither",
        '{"sentences": ["a"]}\n': "a.jsonl:1: needs an 'id'",
        '{"id": "x", "sentences": ["a"]}\n{"id": "x", "sentences": ["b"]}\n': "a.jsonl:2: document id 'x' appears again",
        '{"id": "x", "sentences": "a b"}\n': "a.jsonl:1: 'sentences' must be a list",
    }
    for text, msg in bad.items():
        j.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=msg):
            read_collection(str(j), str(tmp_path / "b.txt"))
        assert not (tmp_path / "b.txt").exists()
    t = tmp_path / "a.tsv"
    t.write_text("d1\tOne.\nd1\tTwo.\nd2\tThree.\n", encoding="utf-8")
    c = read_collection(str(t), str(tmp_path / "t.txt"))
    assert c.ids == ["d1", "d2"] and c.offsets.tolist() == [0, 2, 3]
    t.write_text("d1\tOne.\nd2\tTwo.\nd1\tThree.\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"a.tsv:3: document id 'd1' appears again \(a document's TSV lines"):
        read_collection(str(t), str(tmp_path / "t.txt"))
    t.write_text("d1\tOne.\nno tab here\n", encoding="utf-8")
    with pytest.raises(InputError, match="a.tsv:2: expected 'doc_id<TAB>sentence'"):
        read_collection(str(t), str(tmp_path / "t.txt"))


def test_raw_text_is_split_with_the_splitter(tmp_path):
    calls = []

    def split(text):
        calls.append(text)
        return [s.strip() + "." for s in text.split(".") if s.strip()]

    d = tmp_path / "docs"
    d.mkdir()
    (d / "b.txt").write_text("Third one. Fourth.\n", encoding="utf-8")
    (d / "a.txt").write_text("First. Second.\nNew paragraph.\n", encoding="utf-8")
    (d / ".hidden").write_text("skip", encoding="utf-8")
    c = read_collection(str(d), str(tmp_path / "s.txt"), split=split)
    assert c.ids == ["a.txt", "b.txt"] and c.offsets.tolist() == [0, 3, 5]
    j = tmp_path / "t.jsonl"
    j.write_text('{"id": "x", "text": "A b. C d."}\n', encoding="utf-8")
    assert read_collection(str(j), str(tmp_path / "u.txt"), split=split).n_sentences == 2
    with pytest.raises(InputError, match="needs a sentence splitter"):
        read_collection(str(j), str(tmp_path / "v.txt"))


def test_sentence_splitters_split_real_text():
    from bimine.text.sentences import get_splitter

    text = "Dr. Smith arrived at 5 p.m. yesterday. He left today!\nA new line starts here"
    for name in ("sentencex", "pysbd"):
        pytest.importorskip(name)
        out = get_splitter(name)(text, "en")
        assert out[-1] == "A new line starts here"
        assert "He left today!" in out and len(out) == 3, (name, out)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "bimine.cli.main", *args], capture_output=True, text=True)


@pytest.mark.parametrize("method", ["eq3", "counts", "embedding", "two-stage"])
def test_cli_docs_match_on_newstest(shared_data, tmp_path, method):
    from bimine.encoders import load_encoder
    from bimine.encoders.base import model_folder
    from bimine.scoring.calibration import CALIBRATION_FILE

    if method in ("eq3", "two-stage") and not (model_folder(load_encoder("default")) / CALIBRATION_FILE).exists():
        pytest.skip("the default model has no calibration head")
    base = shared_data / "dev" / "newstest" / "newstest2011.en-de"
    en = (base.parent / (base.name + ".en")).read_text(encoding="utf-8").splitlines()[:240]
    de = (base.parent / (base.name + ".de")).read_text(encoding="utf-8").splitlines()[:240]
    src = [{"id": f"d{i}", "sentences": en[i * 20:(i + 1) * 20]} for i in range(12)]
    tgt = [{"id": f"d{i}", "sentences": de[i * 20:(i + 1) * 20][1:]} for i in reversed(range(12))]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(d) + "\n" for d in src), encoding="utf-8")
    (tmp_path / "t.tsv").write_text("".join(f"{d['id']}\t{s}\n" for d in tgt for s in d["sentences"]),
                                    encoding="utf-8")
    r = run_cli("docs", "match", str(tmp_path / "s.jsonl"), str(tmp_path / "t.tsv"), "--src-lang", "en",
                "--tgt-lang", "de", "-o", str(tmp_path / "out.tsv"), "--method", method, "--no-progress",
                "--candidates", "5")
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "out.tsv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    assert list(rows[0]) == ["src_doc", "tgt_doc", "score", "rank", "votes"]
    assert len(rows) == 12 and all(r["rank"] == "1" for r in rows)
    assert sum(r["src_doc"] == r["tgt_doc"] for r in rows) >= 11


def test_cli_docs_match_folders_of_raw_text(tmp_path):
    """Folders of text files: each file a document, split into sentences by sentencex."""
    pytest.importorskip("sentencex")
    from pathlib import Path

    ex = Path(__file__).resolve().parents[1] / "examples"
    src_docs = [json.loads(line) for line in (ex / "docs.en.jsonl").read_text(encoding="utf-8").splitlines()]
    tgt_docs = [json.loads(line) for line in (ex / "docs.fr.jsonl").read_text(encoding="utf-8").splitlines()]
    for name, docs in (("src", src_docs), ("tgt", tgt_docs)):
        (tmp_path / name).mkdir()
        for d in docs:  # running text: the sentences of a document joined, two per line
            s = d["sentences"]
            text = "\n".join(" ".join(s[i:i + 2]) for i in range(0, len(s), 2))
            (tmp_path / name / f"{d['id']}.txt").write_text(text + "\n", encoding="utf-8")
    out = tmp_path / "pairs.tsv"
    r = run_cli("docs", "match", str(tmp_path / "src"), str(tmp_path / "tgt"), "--src-lang", "en", "--tgt-lang",
                "fr", "-o", str(out), "--method", "counts", "--one-to-one", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "documents: 6 source" in r.stderr
    with open(out, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    # the example's French documents are en-1..en-6 under the ids fr-a..fr-f
    assert {(r["src_doc"], r["tgt_doc"]) for r in rows} == {(f"en-{i}.txt", f"fr-{chr(96 + i)}.txt") for i in range(1, 7)}
