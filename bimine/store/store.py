"""A folder of float16 ``.npy`` shards plus ``manifest.json``.

Layout::

    STORE/manifest.json        written last: its presence means the store is complete
    STORE/progress.json        model id, input checksum, shard size (while building)
    STORE/shard-00000.npy      rows [0, shard_size) as float16
    STORE/shard-00001.npy      ...
    STORE/blank-lines.npy      0-based indices of empty/whitespace-only lines (never mined)

Each shard is written to ``shard-NNNNN.npy.tmp`` and renamed when complete, so a file under
its final name is always whole: a run killed at any moment (SIGKILL included) leaves at most
a ``.tmp`` file, which the rerun discards. A rerun re-reads the input (cheap) and embeds only
the shards that are missing. Shards and manifest hold no timestamps, so the same input, model
and shard size give byte-identical stores.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bimine.embed import EmbedReport, batched, embed_lines
from bimine.encoders.base import Encoder
from bimine.errors import ConfigError, InputError
from bimine.executors import EXECUTORS, plugin
from bimine.langs import normalize_lang
from bimine.outputs import check_output_dir
from bimine.progress import bar as progress_bar
from bimine.text.io import ReadStats, read_lines, scan_text

log = logging.getLogger(__name__)
FORMAT = "bimine-store/1"


def file_checksum(path: str | os.PathLike) -> str:
    """sha256 of the file's bytes (of the compressed bytes for a compressed file)."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _shard_name(i: int) -> str:
    return f"shard-{i:05d}.npy"


def write_shard(path: Path, emb: np.ndarray) -> None:
    """``emb`` as ``path`` (.npy), atomically: written to ``.tmp``, synced, renamed; a file
    under a shard's final name is always whole."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, emb)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def embed_to_shard(encoder: Encoder, lines: list[str], lang: str, path: Path, *, batch_size: int,
                   report: EmbedReport, progress=None, workers: int = 1) -> None:
    """Embed ``lines`` and write them as the float16 shard ``path`` (:func:`write_shard`); the
    local executor and a Ray task both write shards with it, so the bytes are the same."""
    parts = list(embed_lines(encoder, lines, lang, batch_size=batch_size, report=report, progress=progress,
                             workers=workers))
    write_shard(path, np.concatenate(parts).astype(np.float16))


def _atomic_json(path: Path, obj: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


@dataclass(frozen=True)
class ShardFile:
    """One shard of a store: ``ShardFile(...)()`` reads it as float32 (``rows``: only those rows,
    0-based in the shard), after checking its shape against the manifest's."""

    file: str
    rows: int
    dim: int

    def __call__(self, rows: np.ndarray | None = None) -> np.ndarray:
        a = np.load(self.file, mmap_mode="r")
        if a.shape != (self.rows, self.dim):
            raise InputError(f"{self.file}: shape {a.shape}, manifest says ({self.rows}, {self.dim})")
        return np.asarray(a if rows is None else a[rows], dtype=np.float32)


class ArrayRows:
    """An in-memory stand-in for :class:`ShardFile`: ``ArrayRows(a)(rows)`` is ``a[rows]``."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def __call__(self, rows: np.ndarray | None = None) -> np.ndarray:
        return np.asarray(self.a if rows is None else self.a[rows], dtype=np.float32)


@dataclass
class EmbeddingStore:
    """A complete store, opened for reading."""

    path: Path
    manifest: dict

    @classmethod
    def open(cls, path: str | os.PathLike) -> EmbeddingStore:
        p = Path(path)
        mf = p / "manifest.json"
        if not mf.exists():
            hint = " (an unfinished build: rerun 'bimine embed --store' to complete it)" if (
                p / "progress.json").exists() else ""
            raise InputError(f"{p}: not a complete embedding store, no manifest.json{hint}")
        m = json.loads(mf.read_text())
        if m.get("format") != FORMAT:
            raise InputError(f"{p}: unknown store format {m.get('format')!r}")
        return cls(p, m)

    @property
    def rows(self) -> int:
        return int(self.manifest["rows"])

    @property
    def dim(self) -> int:
        return int(self.manifest["dim"])

    @property
    def model_id(self) -> str:
        return self.manifest["model_id"]

    @property
    def lang(self) -> str:
        return self.manifest["lang"]

    def check_model(self, model_id: str) -> None:
        if model_id != self.model_id:
            raise InputError(
                f"{self.path}: embedded with model {self.model_id}, but {model_id} was asked for; "
                "embed the input again with this model, or mine with --model matching the store"
            )

    def shard_files(self) -> list[ShardFile]:
        """One picklable reader per shard, in row order (a Ray task reads its shard itself)."""
        return [ShardFile(str(self.path / s["file"]), int(s["rows"]), self.dim) for s in self.manifest["shards"]]

    def iter_shards(self) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_row, float32 array)`` shard by shard (one shard in memory)."""
        start = 0
        for f in self.shard_files():
            yield start, f()
            start += f.rows

    def blank_lines(self) -> np.ndarray:
        """0-based indices of the input lines that are empty or whitespace only."""
        return np.load(self.path / "blank-lines.npy")

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The given rows (any order, repeats allowed) as float32, read from the memory-mapped
        shards: memory for those rows only."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        start = 0
        for s in self.manifest["shards"]:
            sel = np.flatnonzero((rows >= start) & (rows < start + s["rows"]))
            if len(sel):
                a = np.load(self.path / s["file"], mmap_mode="r")
                out[sel] = a[rows[sel] - start]
            start += s["rows"]
        return out

    def load(self) -> np.ndarray:
        """All rows as one float32 array."""
        out = np.empty((self.rows, self.dim), dtype=np.float32)
        for start, a in self.iter_shards():
            out[start : start + len(a)] = a
        return out


def build_store(
    input_path: str, out_dir: str | os.PathLike, encoder: Encoder, lang: str, *, shard_size: int = 1_000_000,
    column: int | None = None, errors: str = "strict", batch_size: int = 8192, progress: bool = True,
    workers: int = 1, input_sha256: str | None = None, total_lines: int | None = None,
    executor: str = "local", ray_address: str | None = None, in_flight: int | None = None,
) -> tuple[EmbeddingStore, EmbedReport]:
    """Embed ``input_path`` into a store at ``out_dir``, reusing finished shards of an earlier run.

    ``input_sha256`` and ``total_lines`` may be passed when the caller already computed them
    (the checksum of the file's bytes; its line count, for the progress bar).
    Raises :class:`InputError` if ``out_dir`` holds a store of another input, model or shard size.
    ``executor="ray"`` embeds the missing shards as Ray tasks (:mod:`bimine.distributed.ray_executor`;
    ``ray_address`` picks the cluster; ``in_flight`` bounds the shards of text sent at once):
    the same store, byte for byte.
    """
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}: local or ray")
    spec = getattr(encoder, "spec", None)
    if executor == "ray" and spec is None:
        raise ConfigError("--executor ray needs an encoder loaded by name or folder (it has no spec to send)")
    if input_path == "-":
        raise InputError("a store needs a file to read twice (for the checksum and resume), not stdin")

    check_output_dir(out_dir, inputs=(input_path,))
    if total_lines is None:  # one fast pass: bad input fails before any file is made; the count gives the ETA
        total_lines = scan_text(input_path, errors=errors, column=column).lines
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lang = normalize_lang(lang)
    ident = {"format": FORMAT, "model_id": encoder.model_id, "dim": encoder.dim, "lang": lang,
             "input": os.path.basename(input_path), "input_sha256": input_sha256 or file_checksum(input_path),
             "column": column, "shard_size": shard_size}
    prog = out / "progress.json"
    mf = out / "manifest.json"
    if mf.exists() and not prog.exists():
        done = json.loads(mf.read_text())
        if {k: done.get(k) for k in ident} == ident:
            log.info(f"{out}: already complete, nothing to do")
            rep = EmbedReport(input_path, lines=done["rows"], reused=done["rows"])
            return EmbeddingStore(out, done), rep
        raise InputError(f"{out}: holds a store of another input or model; use another output folder")
    if prog.exists():
        old = json.loads(prog.read_text())
        if old != ident:
            diff = sorted(k for k in ident if old.get(k) != ident[k])
            raise InputError(f"{out}: holds a store built with different {', '.join(diff)}; "
                             "use another output folder or delete this one")
    elif any(out.glob("shard-*.npy")):
        raise InputError(f"{out}: holds files of another store; use another output folder")
    _atomic_json(prog, ident)
    for tmp in out.glob("*.tmp"):
        tmp.unlink()  # left by a killed run

    t0 = time.time()
    report = EmbedReport(input_path)
    stats = ReadStats()
    shards = []
    bar = progress_bar(total=total_lines, unit=" lines", enabled=progress, desc=f"embed {os.path.basename(input_path)}")
    lines = read_lines(input_path, column=column, errors=errors, stats=stats)
    reused = 0
    blank: list[int] = []

    def missing() -> Iterator[tuple[list[str], Path]]:
        """Walk the input shard by shard: note blank lines, keep finished shards, and yield
        the ``(lines, path)`` of each shard still to embed, in order."""
        nonlocal reused
        for i, chunk in enumerate(batched(lines, shard_size)):
            base = i * shard_size
            blank.extend(base + j for j, s in enumerate(chunk) if not s.strip())
            f = out / _shard_name(i)
            shards.append({"file": f.name, "rows": len(chunk)})
            if f.exists():
                a = np.load(f, mmap_mode="r")
                if a.shape == (len(chunk), encoder.dim):
                    report.lines += len(chunk)
                    report.reused += len(chunk)
                    bar.update(len(chunk))
                    reused += 1
                    continue
                f.unlink()  # a last shard of a different length: the input changed size? rebuild
            yield chunk, f

    if executor == "ray":
        for res in plugin("ray").embed_shards(spec, ((c, str(f)) for c, f in missing()), lang, batch_size, address=ray_address,
                                in_flight=in_flight):
            for k in ("lines", "empty", "truncated"):
                setattr(report, k, getattr(report, k) + res[k])
            bar.update(res["lines"])
    else:
        for chunk, f in missing():
            embed_to_shard(encoder, chunk, lang, f, batch_size=batch_size, report=report, progress=bar,
                           workers=workers)
    bar.close()
    # drop shards beyond the input's end (cannot happen for an unchanged input)
    for extra in sorted(out.glob("shard-*.npy"))[len(shards):]:
        extra.unlink()
    np.save(out / "blank-lines.npy", np.asarray(blank, dtype=np.int64))
    manifest = dict(ident, rows=sum(s["rows"] for s in shards), shards=shards,
                    input_lines=stats.lines, replaced_lines=stats.replaced, blank_lines=len(blank))
    _atomic_json(out / "manifest.json", manifest)
    prog.unlink()
    if reused:
        log.info(f"{out}: reused {reused} finished shard(s)")
    report.replaced = stats.replaced
    report.seconds = time.time() - t0
    return EmbeddingStore(out, manifest), report
