"""Mining as explicit steps: check inputs -> embed -> kNN both ways -> scores -> selection -> drop
-> rescore -> write.

``mine_files`` runs the whole job (a :class:`~bimine.mining.spec.MineJob`) on text files (or on
stores made by ``bimine embed --store``), one named function per step. With a work folder every
step's output is kept (stores, kNN results, rescored pairs) and a rerun skips what is already
done, as in stopes' global mining.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import re
import resource
import time
import unicodedata
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bimine.cleanup import sweep_leftovers, work_folder
from bimine.encoders.base import Encoder
from bimine.errors import ConfigError, InputError
from bimine.executors import plugin
from bimine.index.faiss_index import (
    IndexConfig,
    KeyIndex,
    check_search_memory,
    nlist_of,
    resolve_factory,
)
from bimine.index.sides import (
    Side,
    knn_both_ways,
    side_from_array,
    side_from_stores,
)
from bimine.langs import normalize_lang
from bimine.mining.select import select_pairs
from bimine.mining.spec import MineConfig, MineJob
from bimine.outputs import atomic_path, check_apart_from_work_dir, check_output_dir, check_output_file
from bimine.progress import bar
from bimine.scoring.margin import score_candidates
from bimine.scoring.rescore import KNN_FEATURES, rescore_pairs
from bimine.scoring.rescore import knn_features as features
from bimine.store.store import EmbeddingStore, EmbedRun, build_store, json_digest, store_name
from bimine.streams import reading_once
from bimine.text.io import ScanResult, read_lines, scan_text

log = logging.getLogger(__name__)


def expand_inputs(arg: str | os.PathLike | list) -> list[str]:
    """One side's input files: a path, a glob pattern (``data/en/*.txt.gz``, ``**`` for
    subfolders; its matching files in sorted order), or a list of either. A pattern that
    matches no file, or a file listed twice, is an error."""
    items = [arg] if isinstance(arg, (str, os.PathLike)) else list(arg)
    out: list[str] = []
    for a in map(os.fspath, items):
        if a != "-" and not os.path.exists(a) and any(c in a for c in "*?["):
            files = [g for g in sorted(glob.glob(a, recursive=True)) if os.path.isfile(g)]
            if not files:
                raise InputError(f"{a}: no file matches this pattern")
            out += files
        else:
            out.append(a)
    seen: set[str] = set()
    for f in out:
        key = os.path.realpath(f) if f != "-" else f
        if key in seen:
            raise InputError(f"{f}: listed twice for one side (each line would be mined twice)")
        seen.add(key)
    if not out:
        raise InputError("no input file given")
    return out


@dataclass
class InputSide:
    """The files of one side and their stores: rows are numbered through the files in order."""

    files: list[str]
    stores: list[EmbeddingStore]

    @property
    def starts(self) -> np.ndarray:
        return np.cumsum([0] + [st.rows for st in self.stores])

    def _which(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows as int64, each row's file index, the files' first rows)``."""
        rows = np.asarray(rows, dtype=np.int64)
        starts = self.starts
        return rows, np.searchsorted(starts, rows, side="right") - 1, starts

    def _split(self, rows: np.ndarray):
        """``(file index, store, first row, local rows, positions in rows)`` per file holding some of ``rows``."""
        rows, which, starts = self._which(rows)
        for f in np.unique(which).tolist():
            pos = np.flatnonzero(which == f)
            yield f, self.stores[f], int(starts[f]), rows[pos] - starts[f], pos

    def texts(self, rows: np.ndarray, errors: str) -> dict[int, str]:
        """The lines of the (global) ``rows``, one streaming pass over each file holding some."""
        out: dict[int, str] = {}
        for f, _, first, local, _ in self._split(rows):
            out.update({first + r: t for r, t in fetch_lines(self.files[f], local, errors=errors).items()})
        return out

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The embeddings of the (global) ``rows``, in their order."""
        out = np.empty((len(rows), self.stores[0].dim), dtype=np.float32)
        for _, st, _, local, pos in self._split(rows):
            out[pos] = st.take(local)
        return out

    def locate(self, rows: np.ndarray) -> tuple[list[str] | None, np.ndarray]:
        """The file of each row (None when the side is one file) and its 1-based line in that file."""
        rows, which, starts = self._which(rows)
        if len(self.files) == 1:
            return None, rows + 1
        return [self.files[w] for w in which.tolist()], rows - starts[which] + 1


@dataclass
class MineReport:
    """Counts and timings of a mining run, printed as its summary."""

    src_sentences: int = 0
    tgt_sentences: int = 0
    src_blank: int = 0
    tgt_blank: int = 0
    candidates: int = 0
    selected: int = 0
    below_threshold: int = 0
    duplicates: int = 0
    copies: int = 0
    too_short: int = 0
    written: int = 0
    index: str = ""
    k: int = 0
    reused: list = field(default_factory=list)  # steps whose results came from the work dir
    ray: dict = field(default_factory=dict)  # kNN tasks on Ray and the bytes they moved (ray_executor.knn_parts)
    seconds: dict = field(default_factory=dict)
    peak_rss_mb: float = 0.0
    rescored: int = 0  # pairs the rescorer scored
    cross_pairs: int = -1  # pairs its cross-encoder stage scored (-1: no such stage, or reused from the work dir)

    def summary(self) -> str:
        steps = ", ".join(f"{k} {v:.1f}s" for k, v in self.seconds.items())
        index = self.index or "none built"
        lines = [
            f"sentences: {self.src_sentences} source ({self.src_blank} blank), "
            f"{self.tgt_sentences} target ({self.tgt_blank} blank)",
            f"index: {index}; k {self.k}; candidates scored: {self.candidates}",
            f"pairs: {self.selected} selected, {self.below_threshold} below threshold, "
            f"{self.duplicates} duplicates, {self.copies} copies, {self.too_short} too short -> {self.written} written",
            f"time: {steps}; peak memory {self.peak_rss_mb:.0f} MB",
        ]
        if self.reused:
            lines.insert(1, f"reused from the work dir: {', '.join(self.reused)}")
        if self.cross_pairs >= 0:
            lines.insert(-1, f"rescored: {self.rescored} pairs by the trees, {self.cross_pairs} of them also by the "
                             "cross-encoder")
        if self.ray:
            r = self.ray
            lines.insert(-1, f"ray kNN (both directions): {r['fill_tasks']} index and {r['search_tasks']} search tasks; "
                             f"key indexes {_size(r['index_bytes'])}, read {r['index_reads']} times "
                             f"({_size(r['index_bytes_read'])}); neighbour lists {_size(r['list_bytes'])}")
        return "\n".join(lines)


def _size(n: int) -> str:
    """Bytes for people: 950 B, 34.6 kB, 1.1 MB, 2.3 GB."""
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def mine_sides(x: Side, y: Side, cfg: MineConfig, *, progress: bool = False, cache: Path | None = None,
               report: MineReport | None = None, executor: str = "local",
               ray_address: str | None = None, knn_features: bool = False):
    """Scores and row indices (into the full sides) of the selected pairs, best first, >= threshold.
    With ``knn_features``, also each pair's :data:`bimine.scoring.rescore.KNN_FEATURES` (a 4th array)."""
    if len(x.valid) == 0 or len(y.valid) == 0:
        empty = (np.zeros(0, np.float32), np.zeros(0, np.int64), np.zeros(0, np.int64))
        if knn_features:
            return (*empty, np.zeros((0, len(KNN_FEATURES)), np.float32))
        return empty
    k = min(cfg.k, len(x.valid), len(y.valid))
    if k < cfg.k:
        log.warning(f"k = {cfg.k} is more than the {min(len(x.valid), len(y.valid))} non-blank sentences "
                    f"of the smaller side; using k = {k}")
    cfg = replace(cfg, k=k)
    if report is not None:
        report.k = k
    need_bwd = knn_features or not (cfg.strategy == "forward" and cfg.score in ("eq10", "absolute"))
    sxy, ixy, syx, iyx = knn_both_ways(x, y, cfg, progress=progress, cache=cache, need_backward=need_bwd,
                                       report=report, executor=executor, ray_address=ray_address)
    t = time.time()
    fwd, bwd = score_candidates(cfg.score, k, sxy, ixy, syx, iyx)
    s, i, j = select_pairs(fwd, ixy, bwd, iyx, cfg.strategy)
    if report is not None:
        report.candidates = int((ixy >= 0).sum() + ((iyx >= 0).sum() if iyx is not None else 0))
        report.selected = len(s)
        report.seconds["score+select"] = time.time() - t
    keep = s >= cfg.threshold if cfg.threshold is not None else np.ones(len(s), dtype=bool)
    if report is not None:
        report.below_threshold = int((~keep).sum())
    if knn_features:
        f = features(sxy, ixy, syx, iyx, k, i[keep], j[keep])
        return s[keep], x.valid[i[keep]], y.valid[j[keep]], f
    return s[keep], x.valid[i[keep]], y.valid[j[keep]]


def mine_embeddings(x: np.ndarray, y: np.ndarray, cfg: MineConfig = MineConfig()):
    """Mine unit-norm rows ``x`` against ``y`` in memory: ``(score, src_row, tgt_row)`` best first
    (:func:`bimine.mine` takes sentences or vectors, and gives records)."""
    for name, a in (("x", x), ("y", y)):
        if not isinstance(a, np.ndarray) or a.ndim != 2:
            raise InputError(f"{name}: a 2-D array of vectors is needed, got {type(a).__name__} "
                             f"{getattr(a, 'shape', '')}")
    if x.shape[1] != y.shape[1]:
        raise InputError(f"x and y differ in width ({x.shape[1]} and {y.shape[1]}): both sides must come from the "
                         "same model")
    return mine_sides(side_from_array(x), side_from_array(y), cfg)


_NOT_LETTER = re.compile(r"[\W\d_]+", re.UNICODE)


def copy_key(s: str) -> str:
    """Text with case, punctuation, digits and spaces removed: equal keys = a copy, not a translation."""
    return _NOT_LETTER.sub("", unicodedata.normalize("NFKC", s).casefold())


def fetch_lines(path: str, rows: np.ndarray, *, column: int | None = None, errors: str = "strict") -> dict[int, str]:
    """The texts of the 0-based ``rows`` of ``path``, read in one streaming pass."""
    want = np.unique(rows)
    out: dict[int, str] = {}
    if len(want) == 0:
        return out
    w = 0
    last = int(want[-1])
    for i, line in enumerate(read_lines(path, column=column, errors=errors)):
        if i == want[w]:
            out[i] = line
            w += 1
            if w == len(want):
                break
        if i >= last:
            break
    if len(out) != len(want):
        raise InputError(f"{path}: has fewer lines than its embeddings; was the file changed after embedding?")
    return out


def write_pairs(path: str, fmt: str, scores, src_rows, tgt_rows, src_text, tgt_text, line_numbers: bool,
                confidence=None, src_where=None, tgt_where=None, margin=None) -> None:
    """Write pairs atomically as TSV (score, src, tgt[, src_line, tgt_line][, confidence][, margin]),
    JSONL or Parquet (``confidence``: one calibrated confidence per pair, or None; ``margin``:
    with a rescorer, the mining score the rescorer's probability replaced, or None).

    ``src_where`` / ``tgt_where``: :meth:`InputSide.locate` of each pair's row (default: one
    file, line = row + 1). A side of several files names each line's file: ``FILE:LINE`` in
    the TSV line columns, a ``src_file`` / ``tgt_file`` field in JSONL and Parquet."""
    src_files, src_lines = src_where or (None, np.asarray(src_rows, np.int64) + 1)
    tgt_files, tgt_lines = tgt_where or (None, np.asarray(tgt_rows, np.int64) + 1)
    src_lines, tgt_lines = np.asarray(src_lines).tolist(), np.asarray(tgt_lines).tolist()
    with atomic_path(path) as tmp:
        if fmt == "parquet":
            try:
                import pyarrow as pa  # loaded on use: pyarrow is heavy or optional
                import pyarrow.parquet as pq  # loaded on use: pyarrow is heavy or optional
            except ImportError:
                raise ConfigError("--format parquet needs pyarrow: pip install 'bimine[parquet]'") from None
            cols = {"score": np.asarray(scores, np.float32), "src": [src_text[a] for a in src_rows],
                    "tgt": [tgt_text[b] for b in tgt_rows], "src_line": np.asarray(src_lines, np.int64),
                    "tgt_line": np.asarray(tgt_lines, np.int64)}
            if src_files is not None:
                cols["src_file"] = src_files
            if tgt_files is not None:
                cols["tgt_file"] = tgt_files
            if confidence is not None:
                cols["confidence"] = np.asarray(confidence, np.float32)
            if margin is not None:
                cols["margin"] = np.asarray(margin, np.float32)
            pq.write_table(pa.table(cols), tmp)
        else:
            with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                conf = confidence if confidence is not None else [None] * len(scores)
                marg = margin if margin is not None else [None] * len(scores)
                for n, (sc, a, b, c, mg) in enumerate(zip(scores, src_rows, tgt_rows, conf, marg)):
                    if fmt == "jsonl":
                        rec = {"score": round(float(sc), 6), "src": src_text[a], "tgt": tgt_text[b],
                               "src_line": src_lines[n], "tgt_line": tgt_lines[n]}
                        if src_files is not None:
                            rec["src_file"] = src_files[n]
                        if tgt_files is not None:
                            rec["tgt_file"] = tgt_files[n]
                        if c is not None:
                            rec["confidence"] = round(float(c), 6)
                        if mg is not None:
                            rec["margin"] = round(float(mg), 6)
                        f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    else:
                        row = f"{sc:.6f}\t{src_text[a]}\t{tgt_text[b]}"
                        if line_numbers:
                            sl = src_lines[n] if src_files is None else f"{src_files[n]}:{src_lines[n]}"
                            tl = tgt_lines[n] if tgt_files is None else f"{tgt_files[n]}:{tgt_lines[n]}"
                            row += f"\t{sl}\t{tl}"
                        if c is not None:
                            row += f"\t{c:.6f}"
                        if mg is not None:
                            row += f"\t{mg:.6f}"
                        f.write(row + "\n")


def _open_given_store(store: str, path: str, checksum: str, encoder: Encoder, lang: str,
                      option: str, lines: int | None = None) -> EmbeddingStore:
    """A store passed with --src-store/--tgt-store, refused unless it holds ``path`` embedded
    with ``encoder`` in ``lang``, is whole and has a row for each of its ``lines``."""
    st = EmbeddingStore.open(store)  # damaged files: a one-line error naming the file and the fix
    st.check_model(encoder.model_id)
    if st.manifest["input_sha256"] != checksum:
        raise InputError(f"{option} {store}: was built from another file than {path} (checksums differ)")
    if st.manifest.get("column") is not None:
        raise InputError(f"{option} {store}: holds column {st.manifest['column']} of a TSV file; "
                         "mining reads whole lines: embed the text file itself")
    want = normalize_lang(lang)
    if st.lang != want:
        raise InputError(f"{option} {store}: was embedded as language {st.lang!r}, but {lang!r} was asked for; "
                         "embed the input again with the right --lang")
    if lines is not None:
        st.check_rows(lines)
    return st


def _check_index(cfg: IndexConfig, src_lines: int, tgt_lines: int, dim: int) -> None:
    """Fail now rather than after embedding: a factory string FAISS cannot parse, or an IVF
    index with more lists than a side has lines to train them (blank lines can only lower
    the count)."""
    if cfg.factory != "auto":
        KeyIndex(dim, 0, cfg)  # raises ConfigError for an invalid factory string
    for n in (src_lines, tgt_lines):
        factory = resolve_factory(cfg, n, dim)
        lists = nlist_of(factory)
        if lists and n < lists:
            raise ConfigError(f"--index {factory}: needs at least {lists} sentences per side to train its "
                              f"{lists} lists, but a side has {n} lines; use fewer lists (e.g. IVF{max(1, n // 40)}) "
                              "or 'Flat'")


def _embed_side(files: list[str], name: str, work: Path, encoder: Encoder, lang: str, inputs: MineInputs,
                job: MineJob) -> tuple[list[EmbeddingStore], int]:
    """A store per file of one side, in ``work`` under a name derived from what it depends on
    (files of equal bytes share one); returns the stores in file order and how many were
    complete already. On Ray several files are embedded at once (their shards' tasks
    interleave), the shards of text held by the driver bounded as for one file."""
    sums, scans = inputs.sums, inputs.scans
    folders = [work / f"{name}-{store_name(sums[p], encoder.model_id, lang, job.shard_size)}.store" for p in files]
    todo = dict(zip(folders, files))  # one build per distinct folder
    reused = sum((f / "manifest.json").exists() for f in folders)
    at_once = cpus = 1
    if job.executor == "ray" and len(todo) > 1:
        cpus = plugin("ray").cluster_cpus(job.ray_address)
        at_once = min(len(todo), cpus)

    def one(item: tuple[Path, str]) -> EmbeddingStore:
        folder, path = item
        run = EmbedRun(workers=job.workers, executor=job.executor, ray_address=job.ray_address,
                       in_flight=None if at_once == 1 else max(1, (cpus + 2) // at_once), wait=job.wait)
        st, _ = build_store(path, folder, encoder, lang, errors=job.encoding_errors,
                            progress=job.progress and at_once == 1, shard_size=job.shard_size, run=run,
                            input_sha256=sums[path], total_lines=scans[path].lines)
        return st

    if at_once == 1:
        built = dict(zip(todo, map(one, todo.items())))
    else:
        built = {}
        total = sum(scans[p].lines for p in todo.values())
        with bar(total=total, unit=" lines", desc=f"embed {name} ({len(todo)} files, ray)",
                 enabled=job.progress) as b, ThreadPoolExecutor(at_once, thread_name_prefix="bimine-embed") as pool:
            for folder, st in zip(todo, pool.map(one, todo.items())):
                built[folder] = st
                b.update(st.rows)
    return [built[f] for f in folders], reused


@dataclass
class MineInputs:
    """The checked inputs of a run: each side's files, every file once, what one pass over each
    found (lines, first tab, SHA-256), and the stores given with --src-store/--tgt-store."""

    files: dict[str, list[str]]
    every: list[str]
    scans: dict[str, ScanResult]
    given: dict[str, EmbeddingStore | None]

    @property
    def sums(self) -> dict[str, str]:
        return {p: self.scans[p].sha256 for p in self.every}

    def lines(self, name: str) -> int:
        return sum(self.scans[p].lines for p in self.files[name])


@dataclass
class Mined:
    """The selected pairs of a run, step by step: scores, source and target rows, their kNN
    features (for the rescorer), the texts of the rows, and the mining score of each pair once
    a rescorer's probability has become the score."""

    s: np.ndarray
    i: np.ndarray
    j: np.ndarray
    knn: np.ndarray | None
    src_text: dict[int, str] = field(default_factory=dict)
    tgt_text: dict[int, str] = field(default_factory=dict)
    margin: list | None = None

    def keep(self, ok: np.ndarray) -> None:
        self.s, self.i, self.j = self.s[ok], self.i[ok], self.j[ok]
        if self.knn is not None:
            self.knn = self.knn[ok]


@reading_once
def mine_files(job: MineJob, *, encoder: Encoder, calibration=None, rescorer=None) -> MineReport:
    """Mine ``job.src`` against ``job.tgt`` and write the pairs to ``job.output``; return the
    run's report. ``job.src_lang``/``tgt_lang`` are the languages ``encoder`` is told
    (:func:`bimine.mining.job.run_mine` resolves them) and ``job.workers`` the encoding
    processes (at least 1).

    A side is a file, a glob pattern or a list of them (:func:`expand_inputs`): its files are
    embedded into one store each and mined as one corpus; the line columns then name the file
    (``FILE:LINE``). The steps, each a function below:

    1. :func:`check_inputs`: everything that can be checked, before any embedding or search,
       in one read of each input: readable, UTF-8, no NUL; for TSV output no tab inside a line,
       which would break the 3-column rows; the output path, and given stores (input
       checksum, model, language);
    2. :func:`embed_sides`: a store per input file (reused from ``job.work_dir`` when it
       holds one for the same bytes, model, language and shard size);
    3. :func:`search`: the kNN both ways, the scores and the selection (:func:`mine_sides`);
    4. :func:`drop_pairs`: ``min_chars``, ``drop_copies`` and ``dedupe`` of ``job.mine``;
    5. :func:`rescore_mined`: with ``rescorer`` (a :class:`bimine.scoring.rescore.Rescorer` of
       ``encoder``, paper 001 §6.2), its probability becomes the score (and what
       ``job.mine.threshold`` applies to), the mining score an extra column (margin);
    6. :func:`write_mined`: the pairs, with ``calibration`` (a
       :class:`bimine.scoring.calibration.Calibration` of ``encoder``) each pair's calibrated
       confidence as the last column.

    With ``job.work_dir`` every step's result is kept there under a name derived from what it
    was computed from (input checksums, model, language, index settings), so a rerun reuses
    exactly what still applies and a work dir reused for other inputs recomputes.
    ``job.executor == "ray"`` embeds the shards and runs the kNN searches as Ray tasks
    (cluster at ``job.ray_address``): the same output bytes as the local executor.
    """
    inputs = check_inputs(job, encoder)
    report = MineReport()
    sweep_leftovers(job.output)  # what runs killed by SIGKILL left (beside the output and in TMPDIR)
    with work_folder(job.work_dir, "mine", sweep="*.tmp-*", wait=job.wait) as work:
        sides = embed_sides(job, inputs, encoder, work, report)
        mined = search(job, sides, work, report, knn_features=rescorer is not None)
        t = time.time()
        drop_pairs(job.mine, mined, sides, job.encoding_errors, report)
        if rescorer is not None:
            rescore_mined(job, mined, inputs, encoder, rescorer, work, report)
        write_mined(job, mined, sides, calibration)
        report.written = len(mined.s)
        report.seconds["write"] = time.time() - t - report.seconds.get("rescore", 0.0)  # rescore is its own step
    report.peak_rss_mb = _peak_mb()
    return report


def check_inputs(job: MineJob, encoder: Encoder) -> MineInputs:
    """Step 1 of :func:`mine_files`: every check that needs no embedding, one read of each input."""
    if job.executor == "ray":
        plugin("ray").require_ray()
    if job.fmt == "parquet":
        try:
            import pyarrow  # noqa: F401  (loaded on use: pyarrow is heavy or optional)
        except ImportError:
            raise ConfigError("--format parquet needs pyarrow: pip install 'bimine[parquet]'") from None
    normalize_lang(job.src_lang), normalize_lang(job.tgt_lang)  # a bad code fails before any work
    files = {"src": expand_inputs(job.src), "tgt": expand_inputs(job.tgt)}
    every = list(dict.fromkeys(files["src"] + files["tgt"]))
    for name, store in (("src", job.src_store), ("tgt", job.tgt_store)):
        if store and len(files[name]) > 1:
            raise ConfigError(f"--{name}-store holds the embeddings of one file, but {name.upper()} names "
                              f"{len(files[name])} files; drop --{name}-store (use --work-dir to keep the embeddings)")
    check_apart_from_work_dir(job.output, job.work_dir)
    check_output_file(job.output, inputs=(*every, job.src_store, job.tgt_store))
    if job.work_dir:
        check_output_dir(job.work_dir, inputs=every, option="--work-dir")
    scans = {}
    for p in every:
        scans[p] = scan_text(p, errors=job.encoding_errors, find_tab=job.fmt == "tsv", checksum=True)
        if scans[p].first_tab_line is not None:
            raise InputError(
                f"{p}:{scans[p].first_tab_line}: contains a tab, which would break the score<TAB>src<TAB>tgt "
                "columns of the TSV output; use --format jsonl (keeps tabs), or remove the tabs "
                "(for a TSV corpus, first cut out the column to mine)")
    inputs = MineInputs(files, every, scans, {"src": None, "tgt": None})
    for name in ("src", "tgt"):
        if inputs.lines(name) == 0:
            raise InputError(f"{' '.join(files[name])}: {'is' if len(files[name]) == 1 else 'are'} empty, "
                             f"so there is nothing to mine ({name.upper()} side)")
    _check_index(job.mine.index, inputs.lines("src"), inputs.lines("tgt"), encoder.dim)
    for n in (inputs.lines("src"), inputs.lines("tgt")):  # each side is the other's keys once
        check_search_memory(job.mine.index, job.mine.k, n, encoder.dim)
    for name, store, lang in (("src", job.src_store, job.src_lang), ("tgt", job.tgt_store, job.tgt_lang)):
        if store:
            first = files[name][0]
            inputs.given[name] = _open_given_store(store, first, scans[first].sha256, encoder, lang,
                                                   f"--{name}-store", scans[first].lines)
    return inputs


def embed_sides(job: MineJob, inputs: MineInputs, encoder: Encoder, work: Path,
                report: MineReport) -> dict[str, InputSide]:
    """Step 2 of :func:`mine_files`: each side's stores (given, reused or built)."""
    sides = {}
    for name, lang in (("src", job.src_lang), ("tgt", job.tgt_lang)):
        if inputs.given[name] is not None:
            sides[name] = InputSide(inputs.files[name], [inputs.given[name]])
            continue
        t = time.time()
        stores, reused = _embed_side(inputs.files[name], name, work, encoder, lang, inputs, job)
        sides[name] = InputSide(inputs.files[name], stores)
        if reused == len(stores):
            report.reused.append(f"{name} embeddings ({', '.join(st.path.name for st in stores)})"
                                 if len(stores) <= 3 else f"{name} embeddings ({len(stores)} stores)")
        else:
            report.seconds[f"embed {name}"] = time.time() - t
    return sides


def search(job: MineJob, sides: dict[str, InputSide], work: Path, report: MineReport, *,
           knn_features: bool) -> Mined:
    """Step 3 of :func:`mine_files`: the kNN both ways, scores and selection (no threshold yet
    when a rescorer will score the pairs: ``knn_features``)."""
    x, y = side_from_stores(sides["src"].stores), side_from_stores(sides["tgt"].stores)
    report.src_sentences, report.tgt_sentences = x.n_rows, y.n_rows
    report.src_blank, report.tgt_blank = x.n_rows - len(x.valid), y.n_rows - len(y.valid)
    for path, side in ((job.src, x), (job.tgt, y)):
        if len(side.valid) == 0:
            what = "is empty" if side.n_rows == 0 else f"has only blank lines ({side.n_rows})"
            log.warning(f"{path} {what}: nothing to mine, no pairs will be written")
    cfg = replace(job.mine, threshold=None) if knn_features else job.mine
    mined = mine_sides(x, y, cfg, progress=job.progress, cache=work if job.work_dir else None, report=report,
                       executor=job.executor, ray_address=job.ray_address, knn_features=knn_features)
    return Mined(*mined[:3], knn=mined[3] if knn_features else None)


def drop_pairs(cfg: MineConfig, mined: Mined, sides: Mapping[str, InputSide | Any], errors: str,
               report: MineReport) -> None:
    """Step 4 of :func:`mine_files`: read the texts of the selected pairs, then drop those too
    short (``min_chars``), copies (``drop_copies``) and repeated text pairs (``dedupe``), each
    counted in ``report``."""
    s, i, j = mined.s, mined.i, mined.j
    src_text = mined.src_text = sides["src"].texts(i, errors)
    tgt_text = mined.tgt_text = sides["tgt"].texts(j, errors)
    keep = np.ones(len(s), dtype=bool)
    if cfg.min_chars:
        short = np.array([len(src_text[a].strip()) < cfg.min_chars or len(tgt_text[b].strip()) < cfg.min_chars
                          for a, b in zip(i.tolist(), j.tolist())], dtype=bool)
        report.too_short = int(short.sum())
        keep &= ~short
    if cfg.drop_copies:
        cp = np.array([copy_key(src_text[a]) == copy_key(tgt_text[b]) for a, b in zip(i.tolist(), j.tolist())],
                      dtype=bool) if len(s) else np.zeros(0, bool)
        report.copies = int((cp & keep).sum())
        keep &= ~cp
    if cfg.dedupe:
        seen: set[tuple[str, str]] = set()
        dup = np.zeros(len(s), dtype=bool)
        for n, (a, b) in enumerate(zip(i.tolist(), j.tolist())):
            if keep[n]:
                p = (src_text[a], tgt_text[b])
                dup[n] = p in seen
                seen.add(p)
        report.duplicates = int(dup.sum())
        keep &= ~dup
    mined.keep(keep)


def rescore_mined(job: MineJob, mined: Mined, inputs: MineInputs, encoder: Encoder, rescorer, work: Path,
                  report: MineReport) -> None:
    """Step 5 of :func:`mine_files`: :func:`apply_rescorer`, its result kept in the work dir under a
    name derived from all it depends on."""
    cfg, i, j = job.mine, mined.i, mined.j
    key = {"inputs": [inputs.sums[p] for p in inputs.files["src"]] + ["|"]
           + [inputs.sums[p] for p in inputs.files["tgt"]],
           "model": encoder.model_id, "langs": [job.src_lang, job.tgt_lang], "rescorer": rescorer.fingerprint,
           "pairs": hashlib.sha256(i.astype(np.int64).tobytes() + j.astype(np.int64).tobytes()).hexdigest(),
           "cfg": [cfg.k, cfg.score, cfg.strategy, cfg.index.factory, cfg.index.nprobe, cfg.index.k_factor]}
    cache_file = work / f"rescore-{json_digest(key)}.npy" if job.work_dir else None
    if cache_file is not None and cache_file.exists():
        report.reused.append(f"rescored pairs ({cache_file.name})")
    apply_rescorer(mined, rescorer, encoder, cfg.threshold, (job.src_lang, job.tgt_lang), report,
                   progress=job.progress, cache=cache_file)


def apply_rescorer(mined: Mined, rescorer, encoder: Encoder, threshold: float | None, langs: tuple[str, str],
                   report: MineReport, *, progress: bool = False, cache: Path | None = None) -> None:
    """The rescorer's probability of each pair of ``mined`` (its texts read) becomes its score:
    pairs sorted by it, ``threshold`` applied to it, the mining score the margin column (paper
    001 §6.2's second stage)."""
    t_r = time.time()
    i, j = mined.i, mined.j
    stats: dict = {}
    prob = rescore_pairs(rescorer, encoder, [mined.src_text[a] for a in i.tolist()],
                         [mined.tgt_text[b] for b in j.tolist()], mined.knn, langs[0], langs[1],
                         progress=progress, cache=cache, stats=stats)
    report.rescored, report.cross_pairs = len(i), stats.get("cross_pairs", -1)
    order = np.argsort(-prob, kind="stable")
    margin, mined.s, mined.i, mined.j = mined.s[order], prob[order], i[order], j[order]
    if threshold is not None:
        ok = mined.s >= threshold
        report.below_threshold = int((~ok).sum())
        margin, mined.s, mined.i, mined.j = margin[ok], mined.s[ok], mined.i[ok], mined.j[ok]
    mined.margin = margin.tolist()
    report.seconds["rescore"] = time.time() - t_r


def write_mined(job: MineJob, mined: Mined, sides: dict[str, InputSide], calibration) -> None:
    """Step 6 of :func:`mine_files`: the output file, with the calibrated confidence when asked."""
    conf = None
    if calibration is not None:
        conf = calibration.confidence(sides["src"].take(mined.i), sides["tgt"].take(mined.j)).tolist()
    write_pairs(job.output, job.fmt, mined.s.tolist(), mined.i.tolist(), mined.j.tolist(), mined.src_text,
                mined.tgt_text, job.line_numbers, conf, src_where=sides["src"].locate(mined.i),
                tgt_where=sides["tgt"].locate(mined.j), margin=mined.margin)
