"""``bimine docs match``: find the translation of each source document among target documents.

Steps (each side streamed): read the collection into a sentence file and offsets
(:mod:`bimine.documents.collections`), embed the sentences into a store, then score document
pairs by one of the methods of :mod:`bimine.documents.match`:

* ``eq3`` (default): every source sentence's N nearest target sentences (FAISS, as in mining)
  vote for their documents by paper 000's Eq. 3 (rank, calibrated confidence, position);
* ``counts``: the number of mutually nearest sentence pairs (000's baseline);
* ``embedding``: the cosine of averaged sentence embeddings (001 §5.3), exact kNN over documents;
* ``two-stage``: document embeddings propose ``candidates`` target documents per source
  document, and Eq. 3 re-ranks them with each source sentence's N nearest sentences among the
  candidates' sentences only (for collections too big for a sentence kNN over everything;
  sentence embeddings are read from the memory-mapped stores document by document).

Output: TSV with a header ``src_doc  tgt_doc  score  rank  votes``: the ``top`` best target
documents of every source document that has a candidate (``rank`` 1 = best; ``votes``: the
sentence pairs behind an ``eq3``/``counts`` score, 0 for ``embedding``), or with
``one_to_one`` each document at most once (greedy by score).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bimine.cleanup import sweep_leftovers, work_folder
from bimine.documents.align import atomic_lines
from bimine.documents.collections import Collection, read_collection
from bimine.documents.match import (
    PairScores,
    document_embeddings,
    embedding_scores,
    eq3_scores,
    mutual_best_counts,
    nearest_documents,
    one_to_one,
    sorted_pairs,
)
from bimine.documents.spec import DocMatchConfig, DocsMatchJob
from bimine.errors import ConfigError
from bimine.index.faiss_index import IndexConfig
from bimine.index.sides import SearchConfig, knn_both_ways, side_from_store
from bimine.outputs import check_apart_from_work_dir, check_output_dir, check_output_file
from bimine.progress import bar
from bimine.store.store import build_store, file_checksum, store_name

log = logging.getLogger(__name__)
@dataclass
class DocMatchReport:
    src_docs: int = 0
    tgt_docs: int = 0
    src_sentences: int = 0
    tgt_sentences: int = 0
    unmatched: int = 0
    written: int = 0
    notes: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)

    def summary(self) -> str:
        steps = ", ".join(f"{k} {v:.1f}s" for k, v in self.seconds.items())
        lines = [f"documents: {self.src_docs} source ({self.src_sentences} sentences), {self.tgt_docs} target "
                 f"({self.tgt_sentences} sentences)",
                 f"pairs written: {self.written}; source documents without any candidate: {self.unmatched}",
                 f"time: {steps}"]
        return "\n".join(lines + self.notes)


def _doc_embeddings(store, col: Collection) -> np.ndarray:
    return document_embeddings(store.iter_shards(), col.offsets, store.dim)


def _two_stage(src_col: Collection, tgt_col: Collection, src_store, tgt_store, cal, cfg: DocMatchConfig,
               progress: bool) -> PairScores:
    _, cand = nearest_documents(_doc_embeddings(src_store, src_col), _doc_embeddings(tgt_store, tgt_col),
                                cfg.candidates)
    t_doc, t_pos, t_len = tgt_col.doc_of_sentence(), tgt_col.position_of_sentence(), np.diff(tgt_col.offsets)
    out = []
    with bar(total=src_col.n_docs, unit=" doc", desc="two-stage", enabled=progress) as b:
        for d in range(src_col.n_docs):
            b.update(1)
            a, z = int(src_col.offsets[d]), int(src_col.offsets[d + 1])
            docs = cand[d][cand[d] >= 0]
            if z == a or not len(docs):
                continue
            rows = np.concatenate([np.arange(tgt_col.offsets[t], tgt_col.offsets[t + 1]) for t in docs])
            if not len(rows):
                continue
            u = src_store.take(np.arange(a, z))
            sim = u @ tgt_store.take(rows).T
            k = min(cfg.eq3.n, len(rows))
            top = np.argsort(-sim, axis=1, kind="stable")[:, :k]
            cos = np.take_along_axis(sim, top, axis=1)
            conf = cal.from_cosine(u, cos)
            p = eq3_scores(rows[top], conf, np.zeros(z - a, np.int64), np.arange(z - a), np.array([z - a]),
                           t_doc, t_pos, t_len, cfg.eq3, n_tgt_docs=tgt_col.n_docs)
            out.append((np.full(len(p.src), d), p.tgt, p.score, p.votes))
    if not out:
        return sorted_pairs(*(np.zeros(0) for _ in range(4)))
    return sorted_pairs(*(np.concatenate([o[i] for o in out]) for i in range(4)))


def match_documents(job: DocsMatchJob, *, encoder, calibration=None, splitter=None) -> DocMatchReport:
    """Match the documents of ``job.src`` with those of ``job.tgt`` and write the pairs to
    ``job.output``; ``job.src_lang``/``tgt_lang`` are the languages ``encoder`` is told
    (:func:`bimine.documents.job.run_docs_match` resolves them).

    ``splitter(text, lang) -> list[str]`` splits raw text (JSONL ``text`` entries, folders);
    ``calibration`` (of ``encoder``) is needed by ``eq3`` and ``two-stage``. With
    ``job.work_dir`` the sentence files and embedding stores are kept there (named by the
    inputs' checksums and the model) and reused by a rerun. The steps: read both collections
    (each checked before either is embedded), embed their sentences, score the document pairs
    (:func:`_scores`), choose and write.
    """
    config = job.match
    check_apart_from_work_dir(job.output, job.work_dir)
    check_output_file(job.output, inputs=(job.src, job.tgt))
    sweep_leftovers(job.output)  # what runs killed by SIGKILL left
    if config.method in ("eq3", "two-stage") and calibration is None:
        raise ConfigError(f"method {config.method} needs the model's calibrated confidence (f1 of Eq. 3): train a "
                          "head with 'bimine calibrate', or use --method counts / embedding")
    report = DocMatchReport()
    if job.work_dir:
        check_output_dir(job.work_dir, inputs=(job.src, job.tgt), option="--work-dir")
    with work_folder(job.work_dir, "docs", wait=job.wait) as work:
        sides = (("src", job.src, job.src_lang, job.src_format), ("tgt", job.tgt, job.tgt_lang, job.tgt_format))
        cols = {name: _read_side(name, path, lang, fmt, splitter, work, job.encoding_errors, report)
                for name, path, lang, fmt in sides}  # both read (and so checked) before either is embedded
        stores = {}
        for name, _, lang, _ in sides:
            t = time.time()
            digest = file_checksum(cols[name].sentences_path)
            folder = work / f"{name}-{store_name(digest, encoder.model_id, lang, 1_000_000)}.store"
            stores[name], _ = build_store(cols[name].sentences_path, folder, encoder, lang, progress=job.progress,
                                          input_sha256=digest)
            report.seconds[f"embed {name}"] = time.time() - t
        sc, tc = cols["src"], cols["tgt"]
        report.src_docs, report.tgt_docs = sc.n_docs, tc.n_docs
        report.src_sentences, report.tgt_sentences = sc.n_sentences, tc.n_sentences
        t = time.time()
        scores = _scores(config, sc, tc, stores, calibration, job.progress)
        report.seconds["score"] = time.time() - t
        chosen = one_to_one(scores) if config.one_to_one else scores.top(config.top)
        report.unmatched = sc.n_docs - len(np.unique(scores.src))
        write_doc_pairs(job.output, chosen, sc.ids, tc.ids)
        report.written = len(chosen.src)
    return report


def _read_side(name: str, path: str, lang: str, fmt: str, splitter, work: Path, errors: str,
               report: DocMatchReport) -> Collection:
    t = time.time()
    split = (lambda text, _lang=lang: splitter(text, _lang)) if splitter is not None else None
    col = read_collection(path, str(work / f"{name}.sentences.txt"), fmt=fmt, split=split, errors=errors)
    report.seconds[f"read {name}"] = time.time() - t
    if col.stats["blank_sentences"] or col.stats["empty_documents"]:
        report.notes.append(f"{path}: {col.stats['blank_sentences']} blank sentence(s) dropped, "
                            f"{col.stats['empty_documents']} document(s) without any sentence")
    return col


def _scores(config: DocMatchConfig, sc: Collection, tc: Collection, stores: dict, calibration,
            progress: bool) -> PairScores:
    """The document pairs' scores by ``config.method`` (the module docstring)."""
    if config.method == "embedding":
        return embedding_scores(_doc_embeddings(stores["src"], sc), _doc_embeddings(stores["tgt"], tc),
                                max(config.top, config.candidates if config.one_to_one else config.top))
    if config.method == "two-stage":
        return _two_stage(sc, tc, stores["src"], stores["tgt"], calibration, config, progress)
    x, y = side_from_store(stores["src"]), side_from_store(stores["tgt"])
    if not len(x.valid) or not len(y.valid):
        return PairScores(*(np.zeros(0, np.int64) for _ in range(4)))
    k = config.eq3.n if config.method == "eq3" else 1
    k = min(k, len(y.valid), len(x.valid))
    mcfg = SearchConfig(k=k, index=IndexConfig(factory=config.index))
    sxy, ixy, _, iyx = knn_both_ways(x, y, mcfg, progress=progress, need_backward=config.method == "counts")
    s_doc, t_doc = sc.doc_of_sentence(), tc.doc_of_sentence()
    if config.method == "counts":
        return mutual_best_counts(ixy[:, 0], iyx[:, 0], s_doc, t_doc, n_tgt_docs=tc.n_docs)
    conf = np.empty(sxy.shape)
    for a in range(0, len(sxy), 65536):  # row r of the kNN lists is source row x.valid[r]
        u = stores["src"].take(x.valid[a: a + 65536])
        conf[a: a + len(u)] = calibration.from_cosine(u, sxy[a: a + len(u)])
    return eq3_scores(ixy, conf, s_doc, sc.position_of_sentence(), np.diff(sc.offsets), t_doc,
                      tc.position_of_sentence(), np.diff(tc.offsets), config.eq3, n_tgt_docs=tc.n_docs)


def write_doc_pairs(path: str, p: PairScores, src_ids: list[str], tgt_ids: list[str]) -> None:
    """TSV with a header ``src_doc, tgt_doc, score, rank, votes``, atomically; ids with tabs or
    line breaks are written with those as spaces (a TSV cell cannot hold them)."""
    def cell(s: str) -> str:
        return " ".join(s.split("\t")).replace("\n", " ").replace("\r", " ")

    rows = ["src_doc\ttgt_doc\tscore\trank\tvotes"]
    rows += [f"{cell(src_ids[s])}\t{cell(tgt_ids[t])}\t{sc:.6f}\t{rk}\t{v}" for s, t, sc, rk, v in
             zip(p.src.tolist(), p.tgt.tolist(), p.score.tolist(), p.ranks().tolist(), p.votes.tolist())]
    atomic_lines(path, rows)
