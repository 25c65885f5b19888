"""Mining as explicit steps: embed -> index -> kNN both ways -> scores -> selection -> filters -> write.

``mine_files`` runs the whole job on two text files (or on stores made by
``bimine embed --store``). With a work folder every step's output is kept (stores, kNN
results) and a rerun skips what is already done, as in stopes' global mining.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import resource
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from bimine.encoders.base import Encoder
from bimine.errors import ConfigError, InputError
from bimine.index.faiss_index import IndexConfig, build_index, knn_search, train_shared
from bimine.mining.margin import score_candidates
from bimine.mining.select import select_pairs
from bimine.store.store import EmbeddingStore, build_store
from bimine.text.io import read_lines

log = logging.getLogger(__name__)
FORMATS = ("tsv", "jsonl", "parquet")


@dataclass(frozen=True)
class MineConfig:
    """k: neighbours for the margin (LASER/001: 4); score: see ``bimine.mining.margin``;
    strategy: see ``bimine.mining.select``; threshold: minimum score (0 keeps every candidate);
    dedupe: drop repeated (src, tgt) text pairs; drop_copies: drop pairs whose sides are equal
    up to case, punctuation, digits and spaces; min_chars: minimum length of both sides."""

    k: int = 4
    score: str = "ratio"
    strategy: str = "max"
    threshold: float = 0.0
    index: IndexConfig = field(default_factory=IndexConfig)
    dedupe: bool = False
    drop_copies: bool = False
    min_chars: int = 0


@dataclass
class Side:
    """One side of the mining job: shard iterator over its rows and the rows that may be mined."""

    n_rows: int
    dim: int
    shards: Callable[[], Iterator[tuple[int, np.ndarray]]]
    valid: np.ndarray  # sorted row indices that are not blank

    def valid_shards(self) -> Iterator[tuple[int, np.ndarray]]:
        """Yield (start in valid-row order, valid rows of the shard)."""
        pos = 0
        for start, a in self.shards():
            sel = self.valid[(self.valid >= start) & (self.valid < start + len(a))] - start
            if len(sel):
                yield pos, a[sel] if len(sel) < len(a) else a
                pos += len(sel)


def side_from_store(store: EmbeddingStore) -> Side:
    blank = store.blank_lines()
    valid = np.setdiff1d(np.arange(store.rows, dtype=np.int64), blank, assume_unique=True)
    return Side(store.rows, store.dim, store.iter_shards, valid)


def side_from_array(x: np.ndarray, valid: np.ndarray | None = None) -> Side:
    def gen():
        yield 0, x

    return Side(len(x), x.shape[1], gen, np.arange(len(x), dtype=np.int64) if valid is None else valid)


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
    seconds: dict = field(default_factory=dict)
    peak_rss_mb: float = 0.0

    def summary(self) -> str:
        steps = ", ".join(f"{k} {v:.1f}s" for k, v in self.seconds.items())
        lines = [
            f"sentences: {self.src_sentences} source ({self.src_blank} blank), "
            f"{self.tgt_sentences} target ({self.tgt_blank} blank)",
            f"index: {self.index}; candidates scored: {self.candidates}",
            f"pairs: {self.selected} selected, {self.below_threshold} below threshold, "
            f"{self.duplicates} duplicates, {self.copies} copies, {self.too_short} too short -> {self.written} written",
            f"time: {steps}; peak memory {self.peak_rss_mb:.0f} MB",
        ]
        return "\n".join(lines)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def knn_both_ways(x: Side, y: Side, cfg: MineConfig, *, progress: bool = False, cache: Path | None = None,
                  need_backward: bool = True, report: MineReport | None = None):
    """kNN of valid x rows among valid y rows and back; ids are positions in valid-row order."""
    from tqdm.auto import tqdm

    out = []
    dirs = [("fwd", x, y)] + ([("bwd", y, x)] if need_backward else [])
    key = hashlib.sha256(json.dumps([asdict(cfg.index), cfg.k, len(x.valid), len(y.valid)]).encode()).hexdigest()[:12]
    files = {name: cache / f"knn-{name}-{key}.npz" if cache else None for name, _, _ in dirs}
    shared = None
    if sum(1 for f in files.values() if f is None or not f.exists()) == 2:
        t = time.time()
        shared = train_shared([(x.valid_shards, len(x.valid)), (y.valid_shards, len(y.valid))], x.dim, cfg.index)
        if shared is not None and report is not None:
            report.seconds["train index"] = time.time() - t
    for name, q, keys in dirs:
        f = files[name]
        if f is not None and f.exists():
            z = np.load(f)
            out += [z["sims"], z["ids"]]
            continue
        t = time.time()
        with tqdm(total=len(keys.valid), unit=" vec", desc=f"index {name}", disable=not progress) as bar:
            index = build_index(keys.valid_shards, len(keys.valid), keys.dim, cfg.index, progress=bar,
                                trained=shared)
        t_index = time.time() - t
        t = time.time()
        with tqdm(total=len(q.valid), unit=" q", desc=f"kNN {name}", disable=not progress) as bar:
            sims, ids = knn_search(index, q.valid_shards(), len(q.valid), cfg.k, progress=bar)
        if report is not None:
            report.index = index.factory + (f" (nprobe {index.nprobe})" if index.nprobe else "")
            report.seconds[f"index {name}"] = t_index
            report.seconds[f"kNN {name}"] = time.time() - t
        del index
        if f is not None:
            tmp = f.with_name(f.name + ".tmp.npz")
            np.savez(tmp, sims=sims, ids=ids)
            os.replace(tmp, f)
        out += [sims, ids]
    return out if need_backward else out + [None, None]


def mine_sides(x: Side, y: Side, cfg: MineConfig, *, progress: bool = False, cache: Path | None = None,
               report: MineReport | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores and row indices (into the full sides) of the selected pairs, best first, >= threshold."""
    if len(x.valid) == 0 or len(y.valid) == 0:
        return np.zeros(0, np.float32), np.zeros(0, np.int64), np.zeros(0, np.int64)
    k = min(cfg.k, len(x.valid), len(y.valid))
    cfg = replace(cfg, k=k)
    need_bwd = not (cfg.strategy == "forward" and cfg.score in ("eq10", "absolute"))
    sxy, ixy, syx, iyx = knn_both_ways(x, y, cfg, progress=progress, cache=cache, need_backward=need_bwd,
                                       report=report)
    t = time.time()
    fwd, bwd = score_candidates(cfg.score, k, sxy, ixy, syx, iyx)
    s, i, j = select_pairs(fwd, ixy, bwd, iyx, cfg.strategy)
    if report is not None:
        report.candidates = fwd.size + (bwd.size if bwd is not None else 0)
        report.selected = len(s)
        report.seconds["score+select"] = time.time() - t
    keep = s >= cfg.threshold
    if report is not None:
        report.below_threshold = int((~keep).sum())
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


def write_pairs(path: str, fmt: str, scores, src_rows, tgt_rows, src_text, tgt_text, line_numbers: bool) -> None:
    """Write pairs atomically as TSV (score, src, tgt[, src_line, tgt_line]), JSONL or Parquet."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        if fmt == "parquet":
            try:
                import pyarrow as pa
                import pyarrow.parquet as pq
            except ImportError:
                raise ConfigError("--format parquet needs pyarrow: pip install 'bimine[parquet]'") from None
            table = pa.table({"score": np.asarray(scores, np.float32), "src": [src_text[a] for a in src_rows],
                              "tgt": [tgt_text[b] for b in tgt_rows], "src_line": np.asarray(src_rows) + 1,
                              "tgt_line": np.asarray(tgt_rows) + 1})
            pq.write_table(table, tmp)
        else:
            with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                for sc, a, b in zip(scores, src_rows, tgt_rows):
                    if fmt == "jsonl":
                        f.write(json.dumps({"score": round(float(sc), 6), "src": src_text[a], "tgt": tgt_text[b],
                                            "src_line": a + 1, "tgt_line": b + 1}, ensure_ascii=False) + "\n")
                    else:
                        row = f"{sc:.6f}\t{src_text[a]}\t{tgt_text[b]}"
                        if line_numbers:
                            row += f"\t{a + 1}\t{b + 1}"
                        f.write(row + "\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _side_store(path: str, store: str | None, encoder: Encoder, lang: str, work: Path, name: str,
                errors: str, progress: bool, report: MineReport, workers: int = 1) -> EmbeddingStore:
    if store:
        st = EmbeddingStore.open(store)
        st.check_model(encoder.model_id)
        from bimine.store.store import file_checksum

        if st.manifest["input_sha256"] != file_checksum(path):
            raise InputError(f"{store}: was built from another file than {path} (checksums differ)")
        return st
    t = time.time()
    st, _ = build_store(path, work / f"{name}.store", encoder, lang, errors=errors, progress=progress,
                        workers=workers)
    report.seconds[f"embed {name}"] = time.time() - t
    return st


def mine_files(src: str, tgt: str, output: str, *, encoder: Encoder, src_lang: str, tgt_lang: str,
               cfg: MineConfig = MineConfig(), src_store: str | None = None, tgt_store: str | None = None,
               work_dir: str | None = None, fmt: str = "tsv", line_numbers: bool = False,
               errors: str = "strict", progress: bool = True, workers: int = 1) -> MineReport:
    """Mine ``src`` against ``tgt`` and write the pairs to ``output``; return the run's report."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    for p in (src, tgt):
        if p == "-":
            raise InputError("mining reads each input twice (embedding, then texts of the pairs): give files, not stdin")
    report = MineReport()
    tmpdir = None
    if work_dir:
        work = Path(work_dir)
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmpdir = tempfile.TemporaryDirectory(prefix="bimine-mine-")
        work = Path(tmpdir.name)
    try:
        sx = _side_store(src, src_store, encoder, src_lang, work, "src", errors, progress, report, workers)
        sy = _side_store(tgt, tgt_store, encoder, tgt_lang, work, "tgt", errors, progress, report, workers)
        x, y = side_from_store(sx), side_from_store(sy)
        report.src_sentences, report.tgt_sentences = x.n_rows, y.n_rows
        report.src_blank, report.tgt_blank = x.n_rows - len(x.valid), y.n_rows - len(y.valid)
        s, i, j = mine_sides(x, y, cfg, progress=progress, cache=work if work_dir else None, report=report)
        t = time.time()
        src_text = fetch_lines(src, i, errors=errors)
        tgt_text = fetch_lines(tgt, j, errors=errors)
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
        write_pairs(output, fmt, s.tolist(), i.tolist(), j.tolist(), src_text, tgt_text, line_numbers)
        report.written = len(s)
        report.seconds["write"] = time.time() - t
    finally:
        if tmpdir is not None:
            tmpdir.cleanup()
    report.peak_rss_mb = _peak_mb()
    return report
