"""Embedding a file into a ``.npy`` array in streamed batches with bounded memory."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from bimine.cleanup import ForkPool, sweep_leftovers
from bimine.cores import capped_workers
from bimine.encoders.base import Encoder
from bimine.encoders.registry import load_encoder
from bimine.errors import InputError
from bimine.jitcache import wait_for_background
from bimine.langs import normalize_lang
from bimine.outputs import atomic_path, check_output_file
from bimine.progress import bar as progress_bar
from bimine.streams import reading_once
from bimine.text.io import ReadStats, read_lines, scan_text

log = logging.getLogger(__name__)


@dataclass
class EmbedReport:
    """What an embedding run did: lines, truncated lines, replaced bytes, seconds."""

    path: str
    lines: int = 0
    empty: int = 0
    truncated: int = 0
    replaced: int = 0
    seconds: float = 0.0
    reused: int = 0  # lines whose embeddings an earlier run had stored

    def summary(self) -> str:
        if self.reused and self.reused == self.lines:
            return f"{self.path}: all {self.lines} lines were embedded by an earlier run; nothing to do"
        s = f"{self.path}: embedded {self.lines - self.reused} lines in {self.seconds:.1f}s"
        if self.seconds > 0:
            s += f" ({(self.lines - self.reused) / self.seconds:.0f} lines/s)"
        if self.reused:
            s += f" ({self.reused} more reused from an earlier run)"
        extra = []
        if self.empty:
            extra.append(f"{self.empty} empty")
        if self.truncated:
            extra.append(f"{self.truncated} truncated to the model's maximum length")
        if self.replaced:
            extra.append(f"{self.replaced} with invalid UTF-8 replaced")
        return s + (f"; {', '.join(extra)}" if extra else "")


def batched(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def resolve_workers(workers: int) -> int:
    """``workers`` as asked; 0 means 1: the DAN already encodes each batch with one thread per
    core (and e5 threads itself), and extra processes only add fork and transfer costs
    (measured in docs/benchmarks.md §3: one process beats two on every input)."""
    return workers if workers > 0 else 1


def max_chars_of(encoder: Encoder) -> int | None:
    cfg = getattr(encoder, "config", None)
    return getattr(getattr(cfg, "features", None), "max_chars", None)


def embed_lines(
    encoder: Encoder,
    lines: Iterable[str],
    lang: str,
    *,
    batch_size: int = 8192,
    report: EmbedReport | None = None,
    progress=None,
    workers: int = 1,
) -> Iterator[np.ndarray]:
    """Yield ``(batch, dim)`` float32 arrays for ``lines`` in order, counting overlong lines.

    ``workers`` > 1 encodes batches in that many forked processes (in order); the encoder
    is never copied through pipes: each child loads it from its spec (memory-mapped weights)
    or, for an encoder without one, inherits it at the fork.
    """
    lang = normalize_lang(lang)
    limit = max_chars_of(encoder)

    def counted() -> Iterator[list[str]]:
        for batch in batched(lines, batch_size):
            if report is not None:
                report.lines += len(batch)
                report.empty += sum(1 for s in batch if not s)
                if limit:
                    report.truncated += sum(1 for s in batch if len(s) > limit)
            yield batch

    embeddings = (
        (encoder.encode(b, lang) for b in counted()) if workers <= 1 else _encode_in_pool(encoder, counted(), lang, workers)
    )
    for emb in embeddings:
        yield emb
        if progress is not None:
            progress.update(len(emb))


def _encode_in_pool(encoder: Encoder, batches: Iterator[list[str]], lang: str, workers: int) -> Iterator[np.ndarray]:
    """Encode ``batches`` in worker processes, in order, with at most 2 per worker in flight.
    Each worker loads the encoder once from its :class:`~bimine.encoders.EncoderSpec` (the DAN
    memory-maps its weights: the pages are shared); an encoder built in Python without a spec
    is inherited through fork instead. Stopped early (Ctrl-C, an error, the consumer closing
    this generator), the workers are ended at once (:meth:`~bimine.cleanup.ForkPool.stop`)."""
    spec = getattr(encoder, "spec", None)
    wait_for_background()  # the kernels an encoder loads in the background: in the open, so Ctrl-C works
    pool = ForkPool((spec, None if spec is not None else encoder), workers, one_thread=True)
    pending: deque = deque()  # bounded: memory stays at a few batches
    done = False
    try:
        for b in batches:
            pending.append(pool.submit(_encode_in_worker, (b, lang)))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
        done = True
    finally:
        if done:
            pool.shutdown()
        else:
            pool.stop()


def _encode_in_worker(job: tuple[list[str], str], state) -> np.ndarray:
    batch, lang = job
    spec, inherited = state
    enc = spec.load_cached() if spec is not None else inherited
    return enc.encode(batch, lang)


@reading_once
def embed_file(
    path: str,
    output: str,
    *,
    lang: str,
    model: str | Encoder = "default",
    column: int | None = None,
    errors: str = "strict",
    batch_size: int = 8192,
    progress: bool = True,
    workers: int = 1,
) -> EmbedReport:
    """Embed every line of ``path`` into the ``.npy`` file ``output`` (written atomically).

    Rows are written to a temporary file as they are computed (memory stays at one batch),
    then the header is fixed and the file renamed to ``output``. The input is first checked in
    one fast pass (UTF-8, NUL bytes; it also gives the bar its total), so a bad line stops the
    run before any work; a stream (stdin, a pipe) is read once, into a copy that both passes read
    (:mod:`bimine.streams`). Temporaries left by killed runs are removed.
    """
    lang = normalize_lang(lang)  # a bad code fails before any work
    check_output_file(output, inputs=(path,))
    encoder = load_encoder(model) if isinstance(model, str) else model
    total = scan_text(path, errors=errors, column=column).lines
    if workers > 1:
        workers = capped_workers(workers, -(-total // batch_size))
    report = EmbedReport(path)
    stats = ReadStats()
    t0 = time.time()
    sweep_leftovers(output)  # what runs killed by SIGKILL left
    bar = progress_bar(total=total, unit=" lines", enabled=progress, desc="embed")
    try:
        with atomic_path(output) as tmp, open(tmp, "wb") as raw:  # a device or FIFO is written as a stream
            n = 0
            # header placeholder: rewritten once the row count is known
            header_len = _write_header(raw, 0, encoder.dim)
            for emb in embed_lines(
                encoder,
                read_lines(path, column=column, errors=errors, stats=stats),
                lang,
                batch_size=batch_size,
                report=report,
                progress=bar,
                workers=workers,
            ):
                raw.write(np.ascontiguousarray(emb, dtype="<f4"))  # the array's own buffer: no bytes copy of the batch
                n += len(emb)
            raw.seek(0)
            if _write_header(raw, n, encoder.dim) != header_len:
                raise RuntimeError("npy header changed size")  # cannot happen: fixed-width header
    finally:
        bar.close()
    if report.lines == 0:
        log.warning(f"{path}: the file is empty; wrote an array of shape (0, {encoder.dim})")
    report.replaced = stats.replaced
    report.seconds = time.time() - t0
    return report


def _write_header(f, rows: int, dim: int) -> int:
    """Write a .npy v1 header for a (rows, dim) little-endian float32 array, padded to 128 bytes
    with room for any row count, so it can be rewritten in place."""
    d = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {dim}), }}"
    total = 128 * 2
    pad = total - 10 - len(d) - 1
    if pad < 0:
        raise InputError("array too large for the .npy header")
    header = d + " " * pad + "\n"
    f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1"))
    return total
