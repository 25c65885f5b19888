"""Score and filter a parallel corpus, block by block, in bounded memory.

Input: a TSV (two of its columns are the sides; every column is kept) or two line-aligned
files. Output (the stable contract): a TSV with a header line, the input columns (``src`` and
``tgt`` for the two sides, ``col<k>`` for other TSV columns, by position), one column per
filter score, the combined score in ``score`` (higher = cleaner) and, when filtering, ``keep``
(1/0) and ``reason`` (the first failing filter's reason, empty when kept); one output row per
input row, in input order.

``score``: the sum of the graded scores (filters of kind ``"score"``, e.g. an embedding
cosine; paper 002 Eq. 3, optionally min-max normalised, Eq. 4), each oriented so that higher
is cleaner; with no such score in the pipeline, the share of the rules the pair passes (1.0:
all of them). A :class:`Selection` then keeps, among the pairs every filter accepts, those
above a combined-score threshold, the best fraction, or the best up to a token budget.

Memory stays bounded: blocks of ``block_size`` pairs are read and scored (stateless filters
in ``workers`` forked processes, stateful ones such as duplicates in this process, in order);
rows and scores are spooled to temporary files beside the output, then written.

Repeated pairs change no one's score (issue 72 §6): a row whose pair (sides compared as the
``duplicate`` rule compares them) came earlier is a *repeat*. Whatever is taken over the corpus
(the in-corpus margin and the other corpus scores, the fraction or budget selected, the
combiner picked by corpus size, the warning that the sides look unaligned) is taken over the
distinct pairs, and a repeat gets its first copy's scores and decision, unless a rule drops it
(the ``duplicate`` rule does). The report counts the repeats.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np

from bimine.cleanup import sweep_leftovers, temp_prefix
from bimine.cores import usable_cores
from bimine.errors import ConfigError, InputError
from bimine.executors import check_executor, plugin
from bimine.filtering.combine import gated
from bimine.filtering.decisions import FilterReport, Selection
from bimine.filtering.pool import LocalBlockPool
from bimine.filtering.report import Example, Examples, render_report
from bimine.filtering.rules import _units, text_stats
from bimine.filtering.select import combine_scores, select_budget, select_fraction, select_threshold
from bimine.outputs import atomic_path, output_target
from bimine.scoring.base import PairFilter
from bimine.scoring.logistic import sigmoid
from bimine.text.io import read_line_chunks


@dataclass
class PairBlock:
    """Rows of the input (every cell), the two sides, and the line number of the first row.

    ``rows`` may be None when ``lines`` holds each row's cells joined by tabs (a TSV's input
    lines as read), or when the block has only the two sides (two-file input): the pipeline
    only needs each row's text, which :meth:`row_text` gives without splitting and joining."""

    rows: list[list[str]] | None
    src: list[str]
    tgt: list[str]
    first_line: int
    lines: list[str] | None = None

    def row_text(self) -> str:
        """The block's rows as TSV text: cells joined by tabs, each row ended by a newline."""
        if not self.src:
            return ""
        if self.lines is not None:
            return "\n".join(self.lines) + "\n"
        if self.rows is not None:
            return "\n".join(map("\t".join, self.rows)) + "\n"
        return "".join(chain.from_iterable(zip(self.src, repeat("\t"), self.tgt, repeat("\n"))))

    def width(self) -> int:
        """Columns of a row."""
        if self.lines is not None:
            return self.lines[0].count("\t") + 1
        return len(self.rows[0]) if self.rows is not None else 2


def checked_pair_input(input, src, tgt, columns) -> tuple[int, int]:
    """Refuse a job's parallel input unless it is a TSV ``input`` or both ``src`` and ``tgt``
    (not both kinds); returns ``columns`` as two ints, refused unless there are two."""
    if (input is None) == (src is None and tgt is None) or (input is None and (src is None or tgt is None)):
        raise ConfigError("give a TSV input, or both src and tgt")
    return two_columns(columns)


def two_columns(columns) -> tuple[int, int]:
    """``columns`` (a TSV's two sides, 1-based) as a tuple, refused unless there are two."""
    cols = tuple(columns)
    if len(cols) != 2:
        raise ConfigError(f"columns: two column numbers, got {cols!r}")
    return cols


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

    The files are read a chunk of lines at a time (:func:`~bimine.text.io.read_line_chunks`)
    and the checks run on whole chunks (tabs counted per line in C, cells split at once).
    """
    if inp is not None:
        c_src, c_tgt = columns
        if c_src < 1 or c_tgt < 1 or c_src == c_tgt:
            raise ConfigError(f"--columns must be two different 1-based columns, got {c_src},{c_tgt}")
        yield from _tsv_blocks(read_line_chunks(inp, errors=errors), inp, c_src, c_tgt, block_size)
        return
    if src is None or tgt is None:
        raise ConfigError("give a TSV file, or --src and --tgt")
    yield from _two_file_blocks(read_line_chunks(src, errors=errors), read_line_chunks(tgt, errors=errors), src, tgt,
                                block_size)


def _tsv_blocks(chunks, inp: str, c_src: int, c_tgt: int, block_size: int) -> Iterator[PairBlock]:
    width = None
    lines: list[str] = []
    src: list[str] = []
    tgt: list[str] = []
    first = 1
    for chunk in chunks:
        tabs = np.fromiter(map(str.count, chunk.lines, repeat("\t")), dtype=np.int64, count=len(chunk.lines))
        if width is None and len(tabs):
            width = int(tabs[0]) + 1
            if width < max(c_src, c_tgt):
                raise InputError(f"{inp}:{chunk.first_line}: has {width} tab-separated column(s); --columns "
                                 f"{c_src},{c_tgt} needs at least {max(c_src, c_tgt)}")
        bad = np.flatnonzero(tabs != width - 1)
        error = None
        chunk_lines, text = chunk.lines, chunk.text
        if len(bad):  # the rows before the bad one are given first, as row by row
            j = int(bad[0])
            error = InputError(f"{inp}:{chunk.first_line + j}: has {int(tabs[j]) + 1} tab-separated column(s), "
                               f"the first line has {width}; every row of a TSV needs the same columns")
            chunk_lines = chunk_lines[:j]
            text = "\n".join(chunk_lines)
        cells = text.replace("\n", "\t").split("\t") if chunk_lines else []
        lines += chunk_lines
        src += cells[c_src - 1::width]
        tgt += cells[c_tgt - 1::width]
        while len(lines) >= block_size:
            yield PairBlock(None, src[:block_size], tgt[:block_size], first, lines=lines[:block_size])
            del lines[:block_size], src[:block_size], tgt[:block_size]
            first += block_size
        if error is not None:
            raise error
    if lines:
        yield PairBlock(None, src, tgt, first, lines=lines)


def _first_tab(lines: list[str]) -> int | None:
    """Index of the first line holding a tab (one C-level search over the joined lines)."""
    joined = "\n".join(lines)
    at = joined.find("\t")
    return None if at < 0 else joined.count("\n", 0, at)


def _two_file_blocks(a_chunks, b_chunks, src: str, tgt: str, block_size: int) -> Iterator[PairBlock]:
    a: list[str] = []
    b: list[str] = []
    done_a = done_b = False
    first = 1  # input line of a[0] and b[0]

    def cut(n: int) -> PairBlock:
        nonlocal first
        sa, sb = a[:n], b[:n]
        ta, tb = _first_tab(sa), _first_tab(sb)
        if ta is not None or tb is not None:  # the first line with a tab; the source side first
            side, j = (src, ta) if tb is None or (ta is not None and ta <= tb) else (tgt, tb)
            raise InputError(f"{side}:{first + j}: holds a tab, which would break the TSV output; "
                             "replace tabs or give a TSV with --columns")
        del a[:n], b[:n]
        block = PairBlock(None, sa, sb, first)
        first += n
        return block

    while True:
        while not done_a and len(a) < block_size:
            chunk = next(a_chunks, None)
            done_a = chunk is None
            if chunk is not None:
                a += chunk.lines
        while not done_b and len(b) < block_size:
            chunk = next(b_chunks, None)
            done_b = chunk is None
            if chunk is not None:
                b += chunk.lines
        n = min(len(a), len(b), block_size)
        if n == block_size:
            yield cut(n)
            continue
        # here the side with fewer lines has ended (the other too, or it holds a whole block)
        if done_a and done_b and len(a) == len(b):
            if n:
                yield cut(n)
            return
        # one side ended before the other: the common lines are checked, then the lengths
        if n:
            cut(n)
        shorter, longer, rest = (src, tgt, b_chunks) if not a else (tgt, src, a_chunks)
        common = first - 1
        extra = len(a or b) + sum(len(c.lines) for c in rest)
        raise InputError(f"{shorter} has {common} lines but {longer} has {common + extra}: the two sides of a "
                         "parallel corpus must have the same number of lines")


def input_header(width: int, columns: tuple[int, int] | None) -> list[str]:
    """Names of the input columns: ``src``/``tgt`` for the sides, ``col<k>`` for the others."""
    if columns is None:
        return ["src", "tgt"]
    names = {columns[0]: "src", columns[1]: "tgt"}
    return [names.get(k, f"col{k}") for k in range(1, width + 1)]


def _fmt(v: float) -> str:
    """How a filter score is written (the reference of :func:`format_scores`): ``nan``, an
    integer value without ``.0``, anything else with 6 significant digits."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return f"{v:.6g}"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"


_SMALL_INTS = np.array([str(i) for i in range(4096)], dtype=object)


def format_g(v: np.ndarray) -> list[str]:
    """``f"{x:.6g}"`` of every value, in one ``%`` formatting call (the same conversion:
    CPython's ``%g`` and ``format(x, ".6g")`` both round with ``PyOS_double_to_string``;
    tested)."""
    if len(v) == 0:
        return []
    return (("%.6g\n") * len(v) % tuple(v.tolist())).split("\n")[:-1]


def format_scores(v: np.ndarray) -> list[str]:
    """:func:`_fmt` of every value of a score column, vectorised: integer values (most rule
    scores) from a table or by NumPy's integer-to-text, the others by :func:`format_g`."""
    v = np.asarray(v, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        whole = (np.abs(v) < 1e15) & (v == np.trunc(v))
    iv = v[whole].astype(np.int64)
    ints = np.empty(len(iv), dtype=object)
    small = (iv >= 0) & (iv < len(_SMALL_INTS))
    ints[small] = _SMALL_INTS[iv[small]]
    if not small.all():
        ints[~small] = iv[~small].astype(str).astype(object)
    if len(iv) == len(v):
        return ints.tolist()
    out = np.empty(len(v), dtype=object)
    out[whole] = ints
    nan = np.isnan(v)
    out[nan] = "nan"
    other = ~whole & ~nan
    out[other] = format_g(v[other])
    return out.tolist()


def _format_block(rows: np.ndarray, ends: np.ndarray, scores: np.ndarray, total: np.ndarray, keep: np.ndarray,
                  reason_of: np.ndarray, reasons: list[bytes], filtering: bool) -> np.ndarray:
    """The output lines of a block as UTF-8 bytes: each input row (``rows``, lines ending at
    ``ends``), its scores as :func:`_fmt` writes them, the combined score as ``%.6g``, and
    when ``filtering`` keep and reason (compiled: :mod:`bimine.filtering._write_kernel`; the
    few values it leaves, near a rounding tie or extreme, are formatted here)."""
    # numba kernels: compiled on first use, not at import
    from bimine.filtering._write_kernel import _POW10, WIDTH, format_cells

    n, nf = scores.shape
    cells = np.empty((n, nf + 1, WIDTH), dtype=np.uint8)
    lens = np.empty((n, nf + 1), dtype=np.int64)
    for c in range(nf + 1):
        values = np.ascontiguousarray(scores[:, c] if c < nf else total, dtype=np.float64)
        mode = 0 if c < nf else 1
        format_cells(values, mode, _POW10, cells[:, c], lens[:, c])
        for i in np.flatnonzero(lens[:, c] < 0).tolist():
            text = (_fmt(float(values[i])) if mode == 0 else f"{float(values[i]):.6g}").encode("ascii")
            cells[i, c, : len(text)] = np.frombuffer(text, dtype=np.uint8)
            lens[i, c] = len(text)
    return _assemble(rows, ends, cells, lens, keep, reason_of, reasons, filtering, False)


def _assemble(rows, ends, cells, lens, keep, reason_of, reasons: list[bytes], filtering: bool,
              kept_only: bool) -> np.ndarray:
    from bimine.filtering._write_kernel import (  # numba kernels: compiled on first use, not at import
        WIDTH,
        assemble,
    )

    if cells is None:
        cells, lens = np.zeros((len(ends), 0, WIDTH), dtype=np.uint8), np.zeros((len(ends), 0), dtype=np.int64)
    reason_ends = np.cumsum([len(r) for r in reasons], dtype=np.int64) if reasons else np.zeros(0, dtype=np.int64)
    joined = np.frombuffer(b"".join(reasons) or b"\0", dtype=np.uint8)
    return assemble(rows, ends, cells, lens, np.ascontiguousarray(keep, dtype=np.bool_),
                    np.ascontiguousarray(reason_of, dtype=np.int64), joined, reason_ends, filtering, kept_only)


def score_block(args: tuple[list[int], list[int], list[str], list[str]],
                filters: list[PairFilter]) -> tuple[dict, dict]:
    """In a worker (forked, or a Ray task): the stateless filters' scores and the stateful
    filters' prepared parts of one block, with the worker's copy of the filters."""
    idx, prep, src, tgt = args
    return {i: filters[i].score(src, tgt) for i in idx}, {i: filters[i].prepare(src, tgt) for i in prep}


def _prepares(f: PairFilter) -> bool:
    return type(f).prepare is not PairFilter.prepare


def auto_workers(cap: int = 4) -> int:
    """``--workers auto``: the cores this process may use, at most ``cap``. On 2 cores, 2
    workers took the default rules of 1M pairs from 23.0 to 16.1 s (docs/benchmarks.md,
    "Filtering: speed")."""
    return max(1, min(usable_cores(), cap))


def check_filters(filters: list[PairFilter]) -> None:
    names = Counter(f.name for f in filters)
    twice = [n for n, c in names.items() if c > 1]
    if twice:
        raise ConfigError(f"filter name(s) used twice: {', '.join(twice)} (give each a 'name')")
    reserved = {"src", "tgt", "score", "keep", "reason"} & set(names)
    if reserved:
        raise ConfigError(f"filter name(s) {sorted(reserved)} are output columns; give the filter another name")


def combine(filters: list[PairFilter], scores: dict[str, np.ndarray], normalize: bool = False,
            selection: Selection | None = None, notes: list[str] | None = None,
            n_pairs: int | None = None) -> np.ndarray:
    """The ``score`` column (:mod:`bimine.filtering.combine`). With ``selection.combine ==
    "model"``: 0 for a pair that some filter with a threshold rejects, else the combiner's
    probability that the pair is clean, each other probability score (a classifier, the
    divergence model) adding its log-odds. Else the sum of the graded scores oriented
    clean-high (002 Eq. 3; each min-max normalised first with ``normalize``, Eq. 4; NaN
    components count 0), or the share of the other filters passed when there is no graded
    score. ``notes`` receives what the user should hear (a score left out, and why).
    ``n_pairs``: the corpus's distinct pairs (default: the rows), which pick the combiner."""
    if selection is not None and selection.combine == "model":
        return _combine_model(filters, scores, selection.combiners, notes if notes is not None else [], n_pairs)
    if selection is not None and selection.combine == "gate":
        return _combine_gate(filters, scores, notes if notes is not None else [])

    n = len(next(iter(scores.values()))) if scores else 0
    graded = [f for f in filters if f.kind == "score"]
    if graded:
        return combine_scores([f.clean_score(scores[f.name]) for f in graded], normalize=normalize)
    rules = [f for f in filters if f.threshold is not None]
    if not rules:
        return np.ones(n)
    passed = sum(f.accept(scores[f.name]).astype(np.float64) for f in rules)
    return passed / len(rules)


UNRELATED_MIN_PAIRS = 20  # the warning that a corpus looks non-parallel needs at least this many pairs
NOT_PARALLEL = "most pairs do not look like translations of each other; are the two sides aligned line by line?"


def _combine_model(filters: list[PairFilter], scores: dict[str, np.ndarray], combiners, notes: list[str],
                   n_pairs: int | None = None) -> np.ndarray:
    n = len(next(iter(scores.values()))) if scores else 0
    combiner, note = combiners.pick(n if n_pairs is None else n_pairs)
    if note:
        notes.append(note)
    missing = [c for c in combiner.columns if c not in scores]
    if missing:
        raise ConfigError(f"combine: model reads the score column(s) {', '.join(missing)}, which this pipeline lacks; "
                          "add them, or use combine: sum")
    logit = combiner.logit(scores)
    read = set(combiner.columns)
    for f in filters:
        if f.name in read or f.kind != "score":
            continue
        if getattr(f, "probability", False):  # a classifier's P(clean): its log-odds join the combiner's
            p = np.clip(np.nan_to_num(np.asarray(scores[f.name], dtype=np.float64), nan=0.5), 1e-6, 1 - 1e-6)
            p = p if f.clean_high else 1 - p
            logit = logit + np.log(p / (1 - p))
        else:
            notes.append(f"score {f.name!r} is not part of the combined score (combine: model reads probabilities "
                         "and its own columns; use combine: sum to add it)")
    passed = np.ones(n, dtype=bool)
    for f in filters:
        if f.threshold is not None:
            passed &= f.accept(scores[f.name])
    return gated(sigmoid(logit), passed)


def _combine_gate(filters: list[PairFilter], scores: dict[str, np.ndarray], notes: list[str]) -> np.ndarray:
    """``combine: gate``: the one probability score, 0 where a filter with a threshold rejects
    the pair (:func:`bimine.filtering.combine.gated`); ``notes`` gets how many each rule set to 0."""
    graded = [f for f in filters if f.kind == "score"]
    if len(graded) != 1 or not getattr(graded[0], "probability", False):
        raise ConfigError("combine: gate takes exactly one probability score (divergence, rescore, a classifier's "
                          f"probability), got {', '.join(f.name for f in graded) or 'none'}")
    p = np.nan_to_num(graded[0].clean_score(scores[graded[0].name]), nan=0.0)
    passed = np.ones(len(p), dtype=bool)
    found = []
    for f in filters:
        if f.threshold is not None:
            ok = f.accept(scores[f.name])
            if not ok.all():
                found.append(f"{f.name} {int((~ok).sum()):,}")
            passed &= ok
    if found:
        n = int((~passed).sum())
        notes.append(f"{n:,} {'pair scores' if n == 1 else 'pairs score'} 0: {'it fails' if n == 1 else 'they fail'} "
                     f"a rule (an untranslated copy, a side in another language: {', '.join(found)})")
    return gated(p, passed)


@dataclass
class PipelineOptions:
    """How :func:`run_pipeline` runs and what it writes besides its output.

    ``header``: the input's column names (default ``src``/``tgt``, ``col<k>``); ``columns``: the
    TSV input's two sides (1-based), for the report's examples; ``filtering``: decide (the
    ``keep`` and ``reason`` columns) or only score; ``selection``: how the combined score
    decides; ``kept_output``: also write the kept rows, input columns only; ``workers``: forked
    processes for the stateless filters; ``report_path``: also write the HTML report
    (:mod:`bimine.filtering.report`), titled ``report_title``, with the lines of
    ``report_info`` under the title; ``executor``/``ray_address``: ``ray`` scores the blocks
    as Ray tasks; ``command``: the name of the command that runs it, which its temporary
    folder carries (``bimine-COMMAND-tmp-PID-...``)."""

    header: list[str] | None = None
    columns: tuple[int, int] | None = None
    filtering: bool = True
    selection: Selection | None = None
    kept_output: str | None = None
    workers: int = 1
    report_path: str | None = None
    report_title: str | None = None
    report_info: dict[str, str] | None = None
    executor: str = "local"
    ray_address: str | None = None
    command: str = "filter"

    def __post_init__(self) -> None:
        check_executor(self.executor)


class _Plan:
    """Where each filter (by index) is scored: ``stateless`` ones in the workers; ``stateful``
    ones (and those that cannot be forked) here, block by block in input order; ``corpus``
    ones once every block is seen; ``prepared``: those of the last two with a part the workers
    can compute ahead."""

    def __init__(self, filters: list[PairFilter], executor: str) -> None:
        here = [f.stateful or (f.fork_unsafe and executor != "ray") for f in filters]
        self.corpus = [i for i, f in enumerate(filters) if f.needs_corpus]
        self.stateless = [i for i, f in enumerate(filters) if not here[i] and not f.needs_corpus]
        self.stateful = [i for i, f in enumerate(filters) if here[i] and not f.needs_corpus]
        self.prepared = [i for i in self.stateful + self.corpus if _prepares(filters[i])]

    @property
    def offloaded(self) -> bool:
        """Whether the workers have anything to do."""
        return bool(self.stateless or self.prepared)


def run_pipeline(blocks: Iterator[PairBlock], filters: list[PairFilter], output: str,
                 opts: PipelineOptions | None = None, *, progress=None) -> FilterReport:
    """Score every pair of ``blocks`` with ``filters`` and write the scored TSV to ``output``
    (and what :class:`PipelineOptions` asks besides), atomically; ``progress`` (a bar) is told
    the pairs scored.

    Two passes over bounded memory: the first scores block by block (stateless filters in
    ``workers`` forked processes, stateful ones here, in order) and spools the input rows and
    every score to temporary files (:class:`_BlockScorer`); the combined score and the
    decisions need every score (min-max normalisation, top fraction, token budget:
    :func:`_combined_scores`, :func:`_decide`); the second writes the rows
    (:func:`_write_rows`), then the report (:func:`_write_report`). The outputs, the report
    among them, are put in place only when the whole run succeeds.

    ``executor="ray"``: the blocks' stateless scores and prepared parts are computed by Ray
    tasks (:class:`bimine.distributed.ray_executor.BlockPool`, cluster at ``ray_address``;
    ``workers`` is then the cluster's CPUs) instead of forked processes; the rest runs here, in
    order, as locally, so the output is the same.
    """
    t_start = time.perf_counter()
    opts = opts or PipelineOptions()
    check_filters(filters)
    sel = opts.selection or Selection()
    report = FilterReport()
    plan = _Plan(filters, opts.executor)
    target = output_target(output)  # the spool lies beside a file output (same disk), in TMPDIR for a stream
    folder = tempfile.gettempdir() if target.is_stream else os.path.dirname(target.path)
    ray_pool = None
    if opts.executor == "ray" and plan.offloaded:
        # before any file: a pipeline Ray cannot take fails here
        ray_pool = plugin("ray").BlockPool(filters, opts.ray_address)
    sweep_leftovers(output, opts.kept_output, opts.report_path)  # what runs killed by SIGKILL left
    spool = tempfile.TemporaryDirectory(prefix=temp_prefix(opts.command), dir=folder)
    outputs = ExitStack()  # each output under a temporary name, put in place at the end (outputs.atomic_path)
    scorer = _BlockScorer(filters, plan, ray_pool, opts.workers, sel, report, progress, spool.name)
    try:
        # put in place in the reverse order: the output, then the kept rows, then the report (a
        # failure to put one in place removes those after it: no report of a failed run)
        tmp_report = outputs.enter_context(atomic_path(opts.report_path)) if opts.report_path else None
        tmp_kept = outputs.enter_context(atomic_path(opts.kept_output)) if opts.kept_output else None
        tmp = outputs.enter_context(atomic_path(output))
        scorer.run(blocks, t_start)
        report.seconds["score+spool"] = time.perf_counter() - t_start - report.seconds["read"]
        if ray_pool is not None:
            report.notes.append(f"scored on Ray: {ray_pool.tasks:,} block tasks on {ray_pool.workers} CPUs")
        clock = time.perf_counter()
        report.repeats = report.pairs - scorer.repeats.distinct
        table, total = _combined_scores(filters, plan, sel, report, scorer.score_path, scorer.repeats)
        keep, reason_of, reasons = _decide(filters, table, total, sel, opts.filtering, scorer.tokens, report,
                                           scorer.repeats)
        report.kept = int(keep.sum())
        report.seconds["decide"] = time.perf_counter() - clock - report.seconds["corpus scores"]
        clock = time.perf_counter()
        want = bool(tmp_report) and opts.filtering
        cols = (opts.header or input_header(scorer.width or 2, opts.columns)) + [f.name for f in filters] + ["score"]
        if opts.filtering:
            cols += ["keep", "reason"]
        examples = _write_rows(scorer, tmp, tmp_kept, cols, table, total, keep, reason_of, reasons, opts, want)
        report.seconds["write"] = time.perf_counter() - clock
        if tmp_report:
            clock = time.perf_counter()
            _write_report(tmp_report, output, opts, filters, table, total, keep, reasons, report, sel, examples)
            report.seconds["report"] = time.perf_counter() - clock
        outputs.close()  # renamed into place (a device or FIFO: copied into it)
    except BaseException:
        outputs.__exit__(*sys.exc_info())  # the temporaries removed, the outputs left as they were
        scorer.stop()
        raise
    finally:
        scorer.shutdown()
        spool.cleanup()
    return report


class _Repeats:
    """Which rows repeat an earlier pair of the input: each pair is known by the 128-bit key of
    the ``duplicate`` rule (its sides with white space collapsed), in a compiled table of 24-48
    bytes a distinct pair, and numbered among the distinct pairs in the order they first came."""

    def __init__(self) -> None:
        self._keys1 = np.zeros(1 << 16, dtype=np.uint64)
        self._keys2 = np.zeros(1 << 16, dtype=np.uint64)
        self._ords = np.zeros(1 << 16, dtype=np.int64)
        self.distinct = 0
        self._ordinals: list[np.ndarray] = []
        self._firsts: list[np.ndarray] = []

    def add(self, src: list[str], tgt: list[str]) -> np.ndarray:
        """The next rows' pairs counted; which of them come for the first time."""
        from bimine.filtering._text_kernel import (  # numba kernels: compiled on first use, not at import
            first_seen,
            pair_keys,
        )

        a, b = text_stats(src), text_stats(tgt)
        k1, k2 = pair_keys(a.dup1, a.dup2, b.dup1, b.dup2)
        ords, first, self.distinct, self._keys1, self._keys2, self._ords = first_seen(
            k1, k2, self._keys1, self._keys2, self._ords, self.distinct)
        self._ordinals.append(ords)
        self._firsts.append(first)
        return first

    def ordinals(self) -> np.ndarray:
        """Each row's pair's number among the distinct pairs (a repeat has its first copy's)."""
        return np.concatenate(self._ordinals) if self._ordinals else np.zeros(0, dtype=np.int64)

    def firsts(self) -> np.ndarray:
        """Whether each row is its pair's first appearance."""
        return np.concatenate(self._firsts) if self._firsts else np.zeros(0, dtype=bool)


def _rows_of(prepared, keep: np.ndarray):
    """The rows ``keep`` (a mask) of what a filter prepared for a block: an array of one item
    per row, or a tuple or list of such (the corpus scores prepare embeddings and keys)."""
    if prepared is None:
        return None
    if isinstance(prepared, np.ndarray):
        return prepared[keep]
    if isinstance(prepared, (tuple, list)):
        return type(prepared)(_rows_of(p, keep) for p in prepared)
    raise TypeError(f"cannot take rows of a prepared {type(prepared).__name__}")


class _BlockScorer:
    """The first pass of :func:`run_pipeline`: every block scored (stateless filters in the
    workers, the rest here, in input order) and spooled: the input rows as UTF-8 to
    ``rows.tsv``, every score as float64 to ``scores.f64``; what the second pass needs is kept
    (the rows' width, the target tokens for a budget, each block's first row and line, each
    block's rows and bytes in the spool). Workers are forked only for an input of more than
    one block."""

    def __init__(self, filters: list[PairFilter], plan: _Plan, ray_pool, workers: int, sel: Selection,
                 report: FilterReport, progress, folder: str) -> None:
        self.filters, self.plan, self.sel, self.report, self.progress = filters, plan, sel, report, progress
        self.pool = ray_pool  # the Ray pool, or the local one once forked
        self.on_ray = ray_pool is not None
        self.workers = ray_pool.workers if self.on_ray else workers
        self.rows_path = os.path.join(folder, "rows.tsv")
        self.score_path = os.path.join(folder, "scores.f64")
        self.width: int | None = None
        self.tokens: list[np.ndarray] = []
        self.starts: list[tuple[int, int]] = []  # (first row, its input line) of each block, for the report
        self.spooled: list[tuple[int, int]] = []  # (rows, UTF-8 bytes) of each block in the rows spool
        self.repeats = _Repeats()

    def run(self, blocks: Iterator[PairBlock], clock: float) -> None:
        plan, report = self.plan, self.report
        with open(self.rows_path, "wb") as self._rows_f, open(self.score_path, "wb") as self._score_f:
            pending: list = []
            blocks = iter(blocks)
            ahead = self._ahead(blocks)
            for block in chain(ahead, blocks):
                report.seconds["read"] += time.perf_counter() - clock
                if self.pool is None and self.workers > 1:
                    self._fork(block)
                if self.pool is None:
                    self._finish(block, {i: self.filters[i].score(block.src, block.tgt) for i in plan.stateless}, {})
                else:
                    pending.append((block, self.pool.submit(score_block, (plan.stateless, plan.prepared, block.src,
                                                                           block.tgt))))
                    while len(pending) > 2 * self.workers:
                        b, fut = pending.pop(0)
                        self._finish(b, *fut.result())
                clock = time.perf_counter()
            for b, fut in pending:
                self._finish(b, *fut.result())

    def _ahead(self, blocks: Iterator[PairBlock]) -> list[PairBlock]:
        """The first blocks, read before scoring starts: two when workers would be forked
        (a single block is scored here, and the workers not forked)."""
        first = next(blocks, None)
        if first is None:
            ahead = []
        elif self.on_ray:
            ahead = [first]
        elif self.workers > 1 and self.plan.offloaded:
            second = next(blocks, None)
            ahead = [first] if second is None else [first, second]
        else:
            ahead = [first]
            self.workers = 1
        if len(ahead) == 1 and not self.on_ray:
            self.workers = 1
        return ahead

    def _fork(self, block: PairBlock) -> None:
        """Warm up here (compiled kernels, tables) before forking: the workers inherit it."""
        for i in self.plan.stateless + self.plan.prepared:
            f = self.filters[i]
            if i in self.plan.prepared:
                f.prepare(block.src[:2], block.tgt[:2])
            else:
                f.score(block.src[:2], block.tgt[:2])
        self.pool = LocalBlockPool(self.filters, self.workers)

    def _finish(self, block: PairBlock, computed: dict[int, np.ndarray], prep: dict[int, object]) -> None:
        filters, report = self.filters, self.report
        for i in self.plan.stateful:  # in input order, in this process
            computed[i] = filters[i].score_prepared(block.src, block.tgt, prep.get(i))
        first = self.repeats.add(block.src, block.tgt)
        every = bool(first.all())
        if self.plan.corpus and not every:
            rows = np.flatnonzero(first).tolist()
            src, tgt = [block.src[j] for j in rows], [block.tgt[j] for j in rows]
        for i in self.plan.corpus:  # scored once the whole corpus is seen, over its distinct pairs
            if every:
                filters[i].collect_prepared(block.src, block.tgt, prep.get(i))
            else:
                filters[i].collect_prepared(src, tgt, _rows_of(prep.get(i), first))
            computed[i] = np.full(len(block.src), np.nan)
        m = np.zeros((len(block.src), len(filters)))
        for i, f in enumerate(filters):
            s = np.asarray(computed[i], dtype=np.float64)
            if s.shape != (len(block.src),):
                raise RuntimeError(f"filter {f.name} gave {s.shape} scores for {len(block.src)} pairs")
            m[:, i] = s
        self._score_f.write(m.tobytes())
        if self.width is None:
            self.width = block.width()
        text = block.row_text().encode("utf-8")
        self._rows_f.write(text)
        self.spooled.append((len(block.src), len(text)))
        if self.sel.token_budget is not None:
            self.tokens.append(_units(block.tgt).astype(np.int64))
        self.starts.append((report.pairs, block.first_line))
        report.pairs += len(block.src)
        if self.progress is not None:
            self.progress.update(len(block.src))

    def stop(self) -> None:
        """Ctrl-C or an error: the local workers stopped now, without waiting for their queue."""
        if self.pool is not None and not self.on_ray:
            self.pool.stop()
            self.pool = None

    def shutdown(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)


def _combined_scores(filters: list[PairFilter], plan: _Plan, sel: Selection, report: FilterReport,
                     score_path: str, repeats: _Repeats) -> tuple[np.ndarray, np.ndarray]:
    """The score table (on disk, mapped: a column at a time in memory) with the corpus scores
    filled in (taken over the distinct pairs, a repeat given its first copy's), and the combined
    score; the warning that most (distinct) pairs look unrelated."""
    n = report.pairs
    table = (np.memmap(score_path, dtype=np.float64, mode="r+", shape=(n, len(filters))) if n and filters
             else np.zeros((n, len(filters))))
    t_corpus = time.perf_counter()
    distinct = repeats.distinct
    ordinals = repeats.ordinals() if plan.corpus and distinct < n else None
    for i in plan.corpus:
        col = np.asarray(filters[i].finalize(), dtype=np.float64)
        if col.shape != (distinct,):
            raise RuntimeError(f"filter {filters[i].name} gave {col.shape} scores for {distinct} distinct pairs")
        table[:, i] = col if ordinals is None else col[ordinals]  # a repeat: its first copy's score
    if plan.corpus:
        report.seconds["corpus scores"] = time.perf_counter() - t_corpus
    if distinct < n:  # every other score of a repeat is its first copy's too, to the bit (a model's
        # float sums differ a little with the batch a pair falls in); a stateful rule (duplicate) keeps its own
        once = repeats.firsts()
        again = np.flatnonzero(~once)
        first_row = np.flatnonzero(once)[repeats.ordinals()[again]]
        for i, f in enumerate(filters):
            if i not in plan.corpus and not getattr(f, "stateful", False):
                table[again, i] = table[first_row, i]
    scores = {f.name: table[:, i] for i, f in enumerate(filters)}
    total = combine(filters, scores, sel.normalize, selection=sel, notes=report.notes,
                    n_pairs=distinct) if filters else np.ones(n)
    if sel.combine == "model" and sel.warn_unrelated:
        cut = sel.combiners.full.cut
        once = repeats.firsts() if distinct < n else np.ones(n, dtype=bool)
        passing = int(((total > 0) & once).sum())
        low = int(((total > 0) & (total < cut) & once).sum())
        if passing >= UNRELATED_MIN_PAIRS and low > passing / 2:
            report.warnings.append(
                f"{low:,} of the {passing:,} pairs that pass the rules score below {cut:g}: {NOT_PARALLEL}")
    return table, total


def _decide(filters: list[PairFilter], table: np.ndarray, total: np.ndarray, sel: Selection, filtering: bool,
            tokens: list[np.ndarray], report: FilterReport,
            repeats: _Repeats | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Which pairs are kept and, for each dropped one, the index of its reason: the first
    filter it fails, else the selection that left it out (counted in ``report``). A fraction or
    a budget is chosen among the distinct pairs (``repeats``); a repeat is chosen with its first
    copy."""
    n = len(total)
    keep = np.ones(n, dtype=bool)
    reason_of = np.full(n, -1, dtype=np.int64)  # index into reasons
    reasons = [f.reason for f in filters]
    if not filtering:
        return keep, reason_of, reasons
    for i, f in enumerate(filters):
        ok = f.accept(table[:, i])
        report.failed[f.name] += int((~ok).sum())
        first = ~ok & keep
        reason_of[first] = i
        report.dropped_by[f.name] += int(first.sum())
        keep &= ok
    chosen = np.ones(n, dtype=bool)
    repeated = repeats is not None and repeats.distinct < n
    once = repeats.firsts() if repeated else np.ones(n, dtype=bool)
    what = None
    if sel.threshold is not None:
        chosen &= select_threshold(total, sel.threshold)
        what = f"combined score below {sel.threshold:g}"
    if sel.top_fraction is not None or sel.token_budget is not None:
        # over the distinct pairs: the repeats' copies (their first copy's rules and scores) follow it
        first_row = np.flatnonzero(once)[repeats.ordinals()] if repeated else None
        if sel.top_fraction is not None:
            picked = select_fraction(total, sel.top_fraction, eligible=keep & chosen & once)
            chosen &= picked if first_row is None else picked[first_row]
            what = f"not in the best {100 * sel.top_fraction:g}% by combined score"
        if sel.token_budget is not None:
            t = np.concatenate(tokens) if tokens else np.zeros(0, dtype=np.int64)
            picked = select_budget(total, t, sel.token_budget, eligible=keep & chosen & once)
            chosen &= picked if first_row is None else picked[first_row]
            what = f"beyond the budget of {sel.token_budget:,} target tokens"
    if what is not None:
        reasons.append(what)
        dropped = keep & ~chosen
        reason_of[dropped] = len(reasons) - 1
        report.failed["score"] += int((~chosen).sum())
        report.dropped_by["score"] += int(dropped.sum())
        keep &= chosen
    return keep, reason_of, reasons


def _write_rows(scorer: _BlockScorer, tmp: str, tmp_kept: str | None, cols: list[str], table: np.ndarray,
                total: np.ndarray, keep: np.ndarray, reason_of: np.ndarray, reasons: list[str],
                opts: PipelineOptions, want_examples: bool) -> Examples | None:
    """The second pass: the output rows (and the kept rows), a block at a time, put together in
    compiled loops from the rows spool and the decisions; with ``want_examples``, the first
    dropped pairs of each reason, for the report."""
    examples = Examples() if want_examples else None
    c_src, c_tgt = opts.columns or (1, 2)
    block_rows = np.array([s for s, _ in scorer.starts], dtype=np.int64)
    block_lines = np.array([line for _, line in scorer.starts], dtype=np.int64)
    reason_bytes = [r.encode("utf-8") for r in reasons]
    with open(tmp, "wb") as out, (open(tmp_kept, "wb") if tmp_kept else _Null()) as kept_f, \
            open(scorer.rows_path, "rb") as rows_in:
        out.write(("\t".join(cols) + "\n").encode("utf-8"))
        a = 0
        for size, nbytes in scorer.spooled:
            b = a + size
            raw = rows_in.read(nbytes)
            rows = np.frombuffer(raw, dtype=np.uint8)
            ends = np.flatnonzero(rows == 10)
            if len(ends) != size:
                raise RuntimeError(f"the rows spool holds {len(ends)} rows where {size} were written")
            blk_keep, blk_reason = keep[a:b], reason_of[a:b]
            out.write(_format_block(rows, ends, table[a:b], total[a:b], blk_keep, blk_reason, reason_bytes,
                                    opts.filtering))
            if tmp_kept and blk_keep.any():
                kept_f.write(_assemble(rows, ends, None, None, blk_keep, blk_reason, reason_bytes, False, True))
            if examples is not None:
                wanted = [r for r in range(len(reasons)) if examples.wants(r)]
                for j in (a + np.flatnonzero(~blk_keep & np.isin(blk_reason, wanted))).tolist():
                    if examples.wants(int(reason_of[j])):
                        k = int(np.searchsorted(block_rows, j, side="right")) - 1
                        begin = int(ends[j - a - 1]) + 1 if j > a else 0
                        parts = raw[begin:int(ends[j - a])].decode("utf-8").split("\t")
                        examples.add(int(reason_of[j]), Example(
                            line=int(block_lines[k] + j - block_rows[k]), src=parts[c_src - 1],
                            tgt=parts[c_tgt - 1], scores=np.asarray(table[j], dtype=np.float64).tolist(),
                            total=float(total[j])))
            a = b
    return examples


def _write_report(tmp_report: str, output: str, opts: PipelineOptions, filters: list[PairFilter], table: np.ndarray,
                  total: np.ndarray, keep: np.ndarray, reasons: list[str], report: FilterReport, sel: Selection,
                  examples: Examples | None) -> None:
    info = dict(opts.report_info or {})
    info["output"] = output
    if opts.kept_output:
        info["kept rows"] = opts.kept_output
    page = render_report(filters=filters, table=table, total=total, keep=keep, reasons=reasons, report=report,
                         selection=sel, examples=examples, title=opts.report_title, info=info,
                         filtering=opts.filtering)
    with open(tmp_report, "w", encoding="utf-8", newline="\n") as report_f:
        report_f.write(page)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def write(self, s) -> None:
        pass
