"""Mining as explicit steps: embed -> index -> kNN both ways -> scores -> selection -> filters -> write.

``mine_files`` runs the whole job on two text files (or on stores made by
``bimine embed --store``). With a work folder every step's output is kept (stores, kNN
results) and a rerun skips what is already done, as in stopes' global mining.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import re
import resource
import tempfile
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from bimine.cleanup import sweep_leftovers, sweep_stale_temporaries, temp_prefix
from bimine.encoders.base import Encoder
from bimine.errors import ConfigError, InputError
from bimine.executors import check_executor, plugin
from bimine.index.faiss_index import (
    IndexConfig,
    KeyIndex,
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
from bimine.mining.select import STRATEGIES, select_pairs
from bimine.outputs import atomic_path, check_output_dir, check_output_file
from bimine.progress import bar
from bimine.scoring.margin import SCORES, score_candidates
from bimine.scoring.rescore import KNN_FEATURES, rescore_pairs
from bimine.scoring.rescore import knn_features as features
from bimine.store.store import EmbeddingStore, build_store, file_checksum, json_digest, store_name
from bimine.text.io import read_lines, scan_text

log = logging.getLogger(__name__)
FORMATS = ("tsv", "jsonl", "parquet")


@dataclass(frozen=True)
class MineConfig:
    """k: neighbours for the margin (LASER/001: 4); score: see ``bimine.scoring.margin``;
    strategy: see ``bimine.mining.select``; threshold: minimum score of a kept pair, in the
    units of ``score`` and the same test (score >= threshold) for every score; None keeps
    every selected candidate, whatever its sign (``distance`` and ``absolute`` scores can be
    negative); dedupe: drop repeated (src, tgt) text pairs; drop_copies: drop pairs whose
    sides are equal up to case, punctuation, digits and spaces; min_chars: minimum length of
    both sides.

    The defaults (``eq9``, ``max``) are the best score and strategy on the BUCC-style newstest
    dev sets (docs/benchmarks.md §5, docs/decisions.md "Default score and strategy")."""

    k: int = 4
    score: str = "eq9"
    strategy: str = "max"
    threshold: float | None = None
    index: IndexConfig = field(default_factory=IndexConfig)
    dedupe: bool = False
    drop_copies: bool = False
    min_chars: int = 0

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"k must be >= 1, got {self.k}")
        if self.score not in SCORES:
            raise ConfigError(f"unknown score {self.score!r}: choose one of {', '.join(SCORES)}")
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"unknown strategy {self.strategy!r}: choose one of {', '.join(STRATEGIES)}")
        if self.min_chars < 0:
            raise ConfigError(f"min_chars must be >= 0, got {self.min_chars}")
        if self.threshold is not None and np.isnan(self.threshold):
            raise ConfigError("threshold must be a number (or None to keep every candidate), not NaN")


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
    """Mine unit-norm rows ``x`` against ``y`` in memory: ``(score, src_row, tgt_row)`` best first."""
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


def _embed_side(files: list[str], name: str, work: Path, encoder: Encoder, lang: str, sums: dict, scans: dict, *,
                errors: str, progress: bool, workers: int, shard_size: int, executor: str,
                ray_address: str | None) -> tuple[list[EmbeddingStore], int]:
    """A store per file of one side, in ``work`` under a name derived from what it depends on
    (files of equal bytes share one); returns the stores in file order and how many were
    complete already. On Ray several files are embedded at once (their shards' tasks
    interleave), the shards of text held by the driver bounded as for one file."""
    folders = [work / f"{name}-{store_name(sums[p], encoder.model_id, lang, shard_size)}.store" for p in files]
    todo = dict(zip(folders, files))  # one build per distinct folder
    reused = sum((f / "manifest.json").exists() for f in folders)
    at_once = cpus = 1
    if executor == "ray" and len(todo) > 1:
        cpus = plugin("ray").cluster_cpus(ray_address)
        at_once = min(len(todo), cpus)

    def one(item: tuple[Path, str]) -> EmbeddingStore:
        folder, path = item
        st, _ = build_store(path, folder, encoder, lang, errors=errors, progress=progress and at_once == 1,
                            workers=workers, shard_size=shard_size, input_sha256=sums[path],
                            total_lines=scans[path].lines, executor=executor, ray_address=ray_address,
                            in_flight=None if at_once == 1 else max(1, (cpus + 2) // at_once))
        return st

    if at_once == 1:
        built = dict(zip(todo, map(one, todo.items())))
    else:
        built = {}
        total = sum(scans[p].lines for p in todo.values())
        with bar(total=total, unit=" lines", desc=f"embed {name} ({len(todo)} files, ray)", enabled=progress) as b, \
                ThreadPoolExecutor(at_once, thread_name_prefix="bimine-embed") as pool:
            for folder, st in zip(todo, pool.map(one, todo.items())):
                built[folder] = st
                b.update(st.rows)
    return [built[f] for f in folders], reused


def mine_files(src: str | list[str], tgt: str | list[str], output: str, *, encoder: Encoder, src_lang: str, tgt_lang: str,
               cfg: MineConfig = MineConfig(), src_store: str | None = None, tgt_store: str | None = None,
               work_dir: str | None = None, fmt: str = "tsv", line_numbers: bool = False,
               errors: str = "strict", progress: bool = True, workers: int = 1,
               shard_size: int = 1_000_000, calibration=None, executor: str = "local",
               ray_address: str | None = None, rescorer=None) -> MineReport:
    """Mine ``src`` against ``tgt`` and write the pairs to ``output``; return the run's report.

    A side is a file, a glob pattern or a list of them (:func:`expand_inputs`): its files are
    embedded into one store each and mined as one corpus; the line columns then name the file
    (``FILE:LINE``).

    Everything that can be checked is checked before any embedding or search: the inputs
    (readable, UTF-8, no NUL; for TSV output no tab inside a line, which would break the
    3-column rows), the output path, and given stores (input checksum, model, language).
    With ``work_dir`` every step's result is kept there under a name derived from what it
    was computed from (input checksums, model, language, index settings), so a rerun reuses
    exactly what still applies and a work dir reused for other inputs recomputes.
    ``calibration`` (a :class:`bimine.scoring.calibration.Calibration` of ``encoder``) adds
    each pair's calibrated confidence as the last column. ``executor="ray"`` embeds the
    shards and runs the kNN searches as Ray tasks (cluster at ``ray_address``): the same
    output bytes as the local executor. ``rescorer`` (a :class:`bimine.scoring.rescore.Rescorer`
    of ``encoder``) re-scores the selected pairs (paper 001 §6.2): its probability becomes the
    score (and what ``cfg.threshold`` applies to), the mining score an extra column (margin);
    with ``work_dir`` the probabilities are kept like the other steps.
    """
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    check_executor(executor)
    if executor == "ray":
        plugin("ray").require_ray()
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ConfigError("--format parquet needs pyarrow: pip install 'bimine[parquet]'") from None
    normalize_lang(src_lang), normalize_lang(tgt_lang)  # a bad code fails before any work
    files = {"src": expand_inputs(src), "tgt": expand_inputs(tgt)}
    every = list(dict.fromkeys(files["src"] + files["tgt"]))
    for p in every:
        if p == "-":
            raise InputError("mining reads each input twice (embedding, then texts of the pairs): give files, not stdin")
    for name, store in (("src", src_store), ("tgt", tgt_store)):
        if store and len(files[name]) > 1:
            raise ConfigError(f"--{name}-store holds the embeddings of one file, but {name.upper()} names "
                              f"{len(files[name])} files; drop --{name}-store (use --work-dir to keep the embeddings)")
    check_output_file(output, inputs=(*every, src_store, tgt_store, work_dir))
    if work_dir:
        check_output_dir(work_dir, inputs=every, option="--work-dir")
    scans = {}
    for p in every:
        scans[p] = scan_text(p, errors=errors, find_tab=fmt == "tsv")
        if scans[p].first_tab_line is not None:
            raise InputError(
                f"{p}:{scans[p].first_tab_line}: contains a tab, which would break the score<TAB>src<TAB>tgt "
                "columns of the TSV output; use --format jsonl (keeps tabs), or remove the tabs "
                "(for a TSV corpus, first cut out the column to mine)")
    for name in ("src", "tgt"):
        if sum(scans[p].lines for p in files[name]) == 0:
            raise InputError(f"{' '.join(files[name])}: {'is' if len(files[name]) == 1 else 'are'} empty, "
                             f"so there is nothing to mine ({name.upper()} side)")
    _check_index(cfg.index, *(sum(scans[p].lines for p in files[n]) for n in ("src", "tgt")), encoder.dim)
    sums = {p: file_checksum(p) for p in every}
    given = {
        "src": _open_given_store(src_store, files["src"][0], sums[files["src"][0]], encoder, src_lang, "--src-store",
                                 scans[files["src"][0]].lines)
        if src_store else None,
        "tgt": _open_given_store(tgt_store, files["tgt"][0], sums[files["tgt"][0]], encoder, tgt_lang, "--tgt-store",
                                 scans[files["tgt"][0]].lines)
        if tgt_store else None,
    }
    report = MineReport()
    tmpdir = None
    sweep_leftovers(output)  # what runs killed by SIGKILL left (beside the output and in TMPDIR)
    if work_dir:
        work = Path(work_dir)
        work.mkdir(parents=True, exist_ok=True)
        sweep_stale_temporaries(work, "*.tmp-*")
    else:
        tmpdir = tempfile.TemporaryDirectory(prefix=temp_prefix("mine"))
        work = Path(tmpdir.name)
    try:
        sides = {}
        for name, lang in (("src", src_lang), ("tgt", tgt_lang)):
            if given[name] is not None:
                sides[name] = InputSide(files[name], [given[name]])
                continue
            t = time.time()
            stores, reused = _embed_side(files[name], name, work, encoder, lang, sums, scans, errors=errors,
                                         progress=progress, workers=workers, shard_size=shard_size,
                                         executor=executor, ray_address=ray_address)
            sides[name] = InputSide(files[name], stores)
            if reused == len(stores):
                report.reused.append(f"{name} embeddings ({', '.join(st.path.name for st in stores)})"
                                     if len(stores) <= 3 else f"{name} embeddings ({len(stores)} stores)")
            else:
                report.seconds[f"embed {name}"] = time.time() - t
        x, y = side_from_stores(sides["src"].stores), side_from_stores(sides["tgt"].stores)
        report.src_sentences, report.tgt_sentences = x.n_rows, y.n_rows
        report.src_blank, report.tgt_blank = x.n_rows - len(x.valid), y.n_rows - len(y.valid)
        for path, side in ((src, x), (tgt, y)):
            if len(side.valid) == 0:
                what = "is empty" if side.n_rows == 0 else f"has only blank lines ({side.n_rows})"
                log.warning(f"{path} {what}: nothing to mine, no pairs will be written")
        mined = mine_sides(x, y, replace(cfg, threshold=None) if rescorer is not None else cfg, progress=progress,
                           cache=work if work_dir else None, report=report, executor=executor,
                           ray_address=ray_address, knn_features=rescorer is not None)
        s, i, j = mined[:3]
        t = time.time()
        src_text = sides["src"].texts(i, errors)
        tgt_text = sides["tgt"].texts(j, errors)
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
        s, i, j = s[keep], i[keep], j[keep]
        margin = None
        if rescorer is not None:
            t_r = time.time()
            key = {"inputs": [sums[p] for p in files["src"]] + ["|"] + [sums[p] for p in files["tgt"]],
                   "model": encoder.model_id, "langs": [src_lang, tgt_lang], "rescorer": rescorer.fingerprint,
                   "pairs": hashlib.sha256(i.astype(np.int64).tobytes() + j.astype(np.int64).tobytes()).hexdigest(),
                   "cfg": [cfg.k, cfg.score, cfg.strategy, cfg.index.factory, cfg.index.nprobe, cfg.index.k_factor]}
            cache_file = work / f"rescore-{json_digest(key)}.npy" if work_dir else None
            if cache_file is not None and cache_file.exists():
                report.reused.append(f"rescored pairs ({cache_file.name})")
            stats: dict = {}
            prob = rescore_pairs(rescorer, encoder, [src_text[a] for a in i.tolist()], [tgt_text[b] for b in j.tolist()],
                                 mined[3][keep], src_lang, tgt_lang, progress=progress, cache=cache_file, stats=stats)
            report.rescored, report.cross_pairs = len(i), stats.get("cross_pairs", -1)
            order = np.argsort(-prob, kind="stable")
            margin, s, i, j = s[order], prob[order], i[order], j[order]
            if cfg.threshold is not None:
                ok = s >= cfg.threshold
                report.below_threshold = int((~ok).sum())
                margin, s, i, j = margin[ok], s[ok], i[ok], j[ok]
            report.seconds["rescore"] = time.time() - t_r
            margin = margin.tolist()
        conf = None
        if calibration is not None:
            conf = calibration.confidence(sides["src"].take(i), sides["tgt"].take(j)).tolist()
        write_pairs(output, fmt, s.tolist(), i.tolist(), j.tolist(), src_text, tgt_text, line_numbers, conf,
                    src_where=sides["src"].locate(i), tgt_where=sides["tgt"].locate(j), margin=margin)
        report.written = len(s)
        report.seconds["write"] = time.time() - t - report.seconds.get("rescore", 0.0)  # rescore is its own step
    finally:
        if tmpdir is not None:
            tmpdir.cleanup()
    report.peak_rss_mb = _peak_mb()
    return report
