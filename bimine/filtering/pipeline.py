"""Score and filter a parallel corpus in one streaming pass over blocks of pairs.

Input: a TSV (two of its columns are the sides; every column is kept) or two line-aligned
files. Output (the stable contract): a TSV with a header line, the input columns (``src`` and
``tgt`` for the two sides, ``col<k>`` for other TSV columns, by position), one column per
filter score, the combined score in ``score`` (higher = cleaner) and, when filtering, ``keep``
(1/0) and ``reason`` (the first failing filter's reason, empty when kept); one output row per
input row, in input order.

``score``: the sum of the graded scores (filters of kind ``"score"``, e.g. an embedding
cosine), each oriented so that higher is cleaner; with no such score in the pipeline, the
share of the rules the pair passes (1.0: all of them). ``score_threshold`` also drops pairs
whose combined score is below it.

Memory stays bounded: blocks of ``block_size`` pairs are read, scored (stateless filters in
``workers`` forked processes, stateful ones such as duplicates in this process, in order) and
written before the next ones are read.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from bimine.errors import ConfigError, InputError
from bimine.filtering.base import PairFilter


@dataclass
class PairBlock:
    """Rows of the input (every cell), the two sides, and the line number of the first row."""

    rows: list[list[str]]
    src: list[str]
    tgt: list[str]
    first_line: int


def read_pair_blocks(
    inp: str | None = None,
    *,
    src: str | None = None,
    tgt: str | None = None,
    columns: tuple[int, int] = (1, 2),
    block_size: int = 10_000,
    errors: str = "strict",
) -> Iterator[PairBlock]:
    """Blocks of pairs from a TSV ``inp`` (``columns`` are the 1-based source and target
    columns; every row must have as many columns as the first) or from ``src`` and ``tgt``.

    Raises :class:`InputError` naming file and line: a TSV row with too few columns or a
    different column count, two files of different lengths, or (two files) a sentence that
    holds a tab, which the TSV output could not keep apart from the next column.
    """
    from bimine.text.io import read_lines, read_parallel

    rows: list[list[str]] = []
    first = 1
    if inp is not None:
        c_src, c_tgt = columns
        if c_src < 1 or c_tgt < 1 or c_src == c_tgt:
            raise ConfigError(f"--columns must be two different 1-based columns, got {c_src},{c_tgt}")
        width = None
        for lineno, line in enumerate(read_lines(inp, errors=errors), start=1):
            cells = line.split("\t")
            if width is None:
                width = len(cells)
                if width < max(c_src, c_tgt):
                    raise InputError(f"{inp}:{lineno}: has {width} tab-separated column(s); --columns "
                                     f"{c_src},{c_tgt} needs at least {max(c_src, c_tgt)}")
            elif len(cells) != width:
                raise InputError(f"{inp}:{lineno}: has {len(cells)} tab-separated column(s), the first line "
                                 f"has {width}; every row of a TSV needs the same columns")
            rows.append(cells)
            if len(rows) == block_size:
                yield PairBlock(rows, [r[c_src - 1] for r in rows], [r[c_tgt - 1] for r in rows], first)
                first += len(rows)
                rows = []
        if rows:
            yield PairBlock(rows, [r[c_src - 1] for r in rows], [r[c_tgt - 1] for r in rows], first)
        return
    if src is None or tgt is None:
        raise ConfigError("give a TSV file, or --src and --tgt")
    for lineno, (a, b) in enumerate(read_parallel(src, tgt, errors=errors), start=1):
        for side, text in ((src, a), (tgt, b)):
            if "\t" in text:
                raise InputError(f"{side}:{lineno}: holds a tab, which would break the TSV output; "
                                 "replace tabs or give a TSV with --columns")
        rows.append([a, b])
        if len(rows) == block_size:
            yield PairBlock(rows, [r[0] for r in rows], [r[1] for r in rows], first)
            first += len(rows)
            rows = []
    if rows:
        yield PairBlock(rows, [r[0] for r in rows], [r[1] for r in rows], first)


def input_header(width: int, columns: tuple[int, int] | None) -> list[str]:
    """Names of the input columns: ``src``/``tgt`` for the sides, ``col<k>`` for the others."""
    if columns is None:
        return ["src", "tgt"]
    names = {columns[0]: "src", columns[1]: "tgt"}
    return [names.get(k, f"col{k}") for k in range(1, width + 1)]


def _fmt(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"


@dataclass
class FilterReport:
    """What a run did: pairs read and kept, and per filter how many pairs failed it and how
    many were dropped with it as the first failing filter (the reason written)."""

    pairs: int = 0
    kept: int = 0
    failed: Counter = field(default_factory=Counter)
    dropped_by: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def summary(self, filtering: bool) -> str:
        if not filtering:
            return f"scored {self.pairs:,} pairs"
        parts = [f"kept {self.kept:,} of {self.pairs:,} pairs"]
        if self.pairs:
            parts[0] += f" ({100 * self.kept / self.pairs:.1f}%)"
        drops = ", ".join(f"{name} {n:,}" for name, n in self.dropped_by.most_common())
        if drops:
            parts.append(f"dropped by (first failing filter): {drops}")
        return "; ".join(parts + self.notes)


_WORKER_FILTERS: list[PairFilter] = []


def _score_stateless(args: tuple[list[int], list[str], list[str]]) -> dict[int, np.ndarray]:
    idx, src, tgt = args
    return {i: _WORKER_FILTERS[i].score(src, tgt) for i in idx}


def check_filters(filters: list[PairFilter]) -> None:
    names = Counter(f.name for f in filters)
    twice = [n for n, c in names.items() if c > 1]
    if twice:
        raise ConfigError(f"filter name(s) used twice: {', '.join(twice)} (give each a 'name')")
    reserved = {"src", "tgt", "score", "keep", "reason"} & set(names)
    if reserved:
        raise ConfigError(f"filter name(s) {sorted(reserved)} are output columns; give the filter another name")


def combine(filters: list[PairFilter], scores: dict[str, np.ndarray], soft: list[str]) -> np.ndarray:
    """The ``score`` column: sum of the graded scores oriented clean-high (NaN components left
    out), or the share of the other filters passed when there is no graded score."""
    n = len(next(iter(scores.values()))) if scores else 0
    by_name = {f.name: f for f in filters}
    if soft:
        total = np.zeros(n)
        for name in soft:
            total += np.nan_to_num(by_name[name].clean_score(scores[name]), nan=0.0)
        return total
    rules = [f for f in filters if f.threshold is not None]
    if not rules:
        return np.ones(n)
    passed = sum(f.accept(scores[f.name]).astype(np.float64) for f in rules)
    return passed / len(rules)


def run_pipeline(
    blocks: Iterator[PairBlock],
    filters: list[PairFilter],
    output: str,
    *,
    header: list[str] | None = None,
    columns: tuple[int, int] | None = None,
    filtering: bool = True,
    score_threshold: float | None = None,
    kept_output: str | None = None,
    workers: int = 1,
    progress=None,
) -> FilterReport:
    """Score every pair of ``blocks`` with ``filters`` and write the scored TSV to ``output``
    (and the kept rows, input columns only, to ``kept_output``), atomically."""
    global _WORKER_FILTERS
    check_filters(filters)
    soft = [f.name for f in filters if f.kind == "score"]
    report = FilterReport()
    stateless = [i for i, f in enumerate(filters) if not f.stateful]
    stateful = [i for i, f in enumerate(filters) if f.stateful]
    tmp = f"{output}.tmp-{os.getpid()}"
    tmp_kept = f"{kept_output}.tmp-{os.getpid()}" if kept_output else None
    pool = None
    try:
        if workers > 1 and stateless:
            import multiprocessing as mp

            _WORKER_FILTERS = filters
            pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("fork"))
        with open(tmp, "w", encoding="utf-8", newline="\n") as out, \
                (open(tmp_kept, "w", encoding="utf-8", newline="\n") if tmp_kept else _Null()) as kept_f:
            wrote_header = False
            pending: list = []

            def finish(block: PairBlock, computed: dict[int, np.ndarray]) -> None:
                nonlocal wrote_header
                for i in stateful:  # in input order, in this process
                    computed[i] = filters[i].score(block.src, block.tgt)
                scores = {filters[i].name: computed[i] for i in range(len(filters))}
                for name, s in scores.items():
                    if s.shape != (len(block.src),):
                        raise RuntimeError(f"filter {name} gave {s.shape} scores for {len(block.src)} pairs")
                total = combine(filters, scores, soft)
                if not wrote_header:
                    cols = (header or input_header(len(block.rows[0]), columns)) + [f.name for f in filters] + ["score"]
                    if filtering:
                        cols += ["keep", "reason"]
                    out.write("\t".join(cols) + "\n")
                    wrote_header = True
                keep = np.ones(len(block.src), dtype=bool)
                reason = [""] * len(block.src)
                if filtering:
                    for f in filters:
                        ok = f.accept(scores[f.name])
                        bad = np.flatnonzero(~ok)
                        report.failed[f.name] += len(bad)
                        for j in bad[keep[bad]]:
                            reason[j] = f.reason
                            report.dropped_by[f.name] += 1
                        keep &= ok
                    if score_threshold is not None:
                        ok = total >= score_threshold
                        report.failed["score"] += int((~ok).sum())
                        for j in np.flatnonzero(~ok & keep):
                            reason[j] = f"combined score below {score_threshold:g}"
                            report.dropped_by["score"] += 1
                        keep &= ok
                cols_s = [[_fmt(v) for v in scores[f.name].tolist()] for f in filters]
                for j, row in enumerate(block.rows):
                    cells = row + [c[j] for c in cols_s] + [f"{total[j]:.6g}"]
                    if filtering:
                        cells += ["1" if keep[j] else "0", reason[j]]
                    out.write("\t".join(cells) + "\n")
                    if keep[j] and tmp_kept:
                        kept_f.write("\t".join(row) + "\n")
                report.pairs += len(block.src)
                report.kept += int(keep.sum())
                if progress is not None:
                    progress.update(len(block.src))

            for block in blocks:
                if pool is None:
                    finish(block, {i: filters[i].score(block.src, block.tgt) for i in stateless})
                    continue
                pending.append((block, pool.submit(_score_stateless, (stateless, block.src, block.tgt))))
                while len(pending) > 2 * workers:
                    b, fut = pending.pop(0)
                    finish(b, fut.result())
            for b, fut in pending:
                finish(b, fut.result())
            if not wrote_header:  # empty input: the header alone
                cols = (header or ["src", "tgt"]) + [f.name for f in filters] + ["score"]
                out.write("\t".join(cols + (["keep", "reason"] if filtering else [])) + "\n")
        os.replace(tmp, output)
        if tmp_kept:
            os.replace(tmp_kept, kept_output)
    except BaseException:
        for t in (tmp, tmp_kept):
            if t and os.path.exists(t):
                os.remove(t)
        raise
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        _WORKER_FILTERS = []
    return report


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def write(self, s: str) -> None:
        pass
