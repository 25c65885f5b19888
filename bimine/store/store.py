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

A store is checked before it is trusted, by its manifest's counts and each file's ``.npy``
header and size (no checksums of the shards are recorded: checking them would read every
byte of the embeddings): reading a damaged one is a one-line error naming the file, and
building into one whose manifest still says what it holds repairs it, the whole shards kept.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bimine.cleanup import folder_lock
from bimine.cores import capped_workers
from bimine.embed import EmbedReport, batched, embed_lines
from bimine.encoders.base import Encoder
from bimine.errors import ConfigError, InputError
from bimine.executors import EXECUTORS, plugin
from bimine.langs import normalize_lang
from bimine.outputs import check_output_dir
from bimine.progress import bar as progress_bar
from bimine.streams import readable_path, reading_once
from bimine.text.io import ReadStats, read_lines, scan_text

log = logging.getLogger(__name__)
FORMAT = "bimine-store/1"


def file_checksum(path: str | os.PathLike) -> str:
    """sha256 of the file's bytes (of the compressed bytes for a compressed file); of a stream's
    one copy for a stream (``-``, a pipe: :mod:`bimine.streams`)."""
    real = readable_path(path)
    if not os.path.isfile(real):
        raise InputError(f"{path}: no such file")
    h = hashlib.sha256()
    with open(real, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def json_digest(obj) -> str:
    """16 hex digits of the SHA-256 of ``obj`` as sorted JSON: the name of a cache entry that
    depends on exactly what ``obj`` holds."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def store_name(checksum: str, model_id: str, lang: str, shard_size: int) -> str:
    """The name of the store a work dir keeps for one side of a run: a digest of everything the
    store depends on (the input's SHA-256, the model, the language, the shard size)."""
    return json_digest({"input_sha256": checksum, "model_id": model_id, "lang": normalize_lang(lang),
                        "shard_size": shard_size})


def _shard_name(i: int) -> str:
    return f"shard-{i:05d}.npy"


class _HashingWriter:
    """A binary file that also feeds every byte written to a SHA-256."""

    def __init__(self, f) -> None:
        self.f = f
        self.h = hashlib.sha256()

    def write(self, b) -> int:
        self.h.update(b)
        return self.f.write(b)


def write_shard(path: Path, emb: np.ndarray) -> str:
    """``emb`` as ``path`` (.npy), atomically: written to ``.tmp``, synced, renamed; a file
    under a shard's final name is always whole. Returns the SHA-256 of the file's bytes (the
    manifest records it: :meth:`EmbeddingStore.verify`), computed as they are written."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        out = _HashingWriter(fh)
        np.save(out, emb)  # not a real file to numpy: written through write(), so hashed
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return out.h.hexdigest()


def embed_to_shard(encoder: Encoder, lines: list[str], lang: str, path: Path, *, batch_size: int,
                   report: EmbedReport, progress=None, workers: int = 1) -> str:
    """Embed ``lines`` and write them as the float16 shard ``path`` (:func:`write_shard`); the
    local executor and a Ray task both write shards with it, so the bytes are the same.
    Returns the shard file's SHA-256."""
    parts = list(embed_lines(encoder, lines, lang, batch_size=batch_size, report=report, progress=progress,
                             workers=workers))
    return write_shard(path, np.concatenate(parts).astype(np.float16))


def _atomic_json(path: Path, obj: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


REBUILD = "delete the store and run 'bimine embed --store' again"
RESUME = "run the 'bimine embed --store' that built it again: it keeps the whole shards and embeds the rest anew"


def _read_json(path: Path, store: Path) -> dict:
    """``path`` (a store's manifest or progress file) as a dict, or a one-line
    :class:`InputError` naming the store when it cannot be read or is not a JSON object."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{store}: {path.name} is damaged ({e}); the store cannot be trusted: {REBUILD}") from None
    if not isinstance(obj, dict):
        raise InputError(f"{store}: {path.name} is damaged (not a JSON object); the store cannot be trusted: {REBUILD}")
    return obj


def _manifest_problem(m: dict) -> str | None:
    """What makes the manifest ``m`` inconsistent (rows, dim, shard list), or None: a
    manifest is only written whole, so this is a file edited or damaged by hand."""
    missing = [k for k in ("model_id", "lang", "input_sha256") if not isinstance(m.get(k), str)]
    if missing:
        return f"it lacks {', '.join(missing)}"
    rows, dim, shards = m.get("rows"), m.get("dim"), m.get("shards")
    if not (type(rows) is int and rows >= 0 and type(dim) is int and dim > 0 and isinstance(shards, list)):
        return "its rows, dim or shards are missing or not numbers"
    for i, sh in enumerate(shards):
        if not (isinstance(sh, dict) and sh.get("file") == _shard_name(i) and type(sh.get("rows")) is int
                and sh["rows"] >= 0 and (sh.get("sha256") is None or _is_sha256(sh["sha256"]))):
            return f"its shard entry {i} is not {{file: {_shard_name(i)}, rows: N, sha256: HEX}}"
    held = sum(sh["rows"] for sh in shards)
    if held != rows:
        return f"it says {rows} rows, but its shards hold {held}"
    if m.get("input_lines", rows) != rows:
        return f"it says {rows} rows for an input of {m['input_lines']} lines"
    return None


def _is_sha256(h) -> bool:
    return isinstance(h, str) and len(h) == 64 and all(c in "0123456789abcdef" for c in h)


def npy_problem(path: Path, shape: tuple[int, ...] | None, kind: str) -> str | None:
    """Why ``path`` is not a whole ``.npy`` array of ``shape`` (None: any 1-d) and dtype kind
    ``kind`` (``"f"``, ``"i"``), or None when it is. Reads the header and the file's size
    only (a few hundred bytes whatever the shard's size), so every shard of a store can be
    checked before it is trusted: a missing, cut short or padded file, or another array."""
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            got, fortran, dtype = read(f)
            size, start = os.fstat(f.fileno()).st_size, f.tell()
    except FileNotFoundError:
        return f"{path.name} is missing"
    except (OSError, ValueError, SyntaxError, TypeError) as e:
        return f"{path.name} is not a .npy array ({e})"
    if dtype.kind != kind or (shape is None and len(got) != 1) or (shape is not None and got != shape):
        return f"{path.name} holds a {dtype} array of shape {got}, expected {shape or '(N,)'}"
    want = start + int(np.prod(got, dtype=np.int64)) * dtype.itemsize
    if size != want:
        return f"{path.name} is {'cut short' if size < want else 'longer than its array'} ({size} bytes, expected {want})"
    return None


@dataclass
class StoreReport(EmbedReport):
    """An :class:`EmbedReport` of :func:`build_store`, which also says when it repaired a
    damaged store (a missing or cut short shard, blank-lines file or manifest)."""

    repaired: bool = False

    def summary(self) -> str:
        if self.repaired and self.reused == self.lines:
            return f"{self.path}: all {self.lines} lines were embedded by an earlier run; the store was repaired"
        return super().summary()


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
    def open(cls, path: str | os.PathLike, *, verify: bool = True) -> EmbeddingStore:
        """The store at ``path``, checked (:meth:`check`) before it is trusted: a missing,
        cut short or foreign shard or blank-lines file, or a manifest at odds with itself, is
        an :class:`InputError` naming the store, the file and the fix; with ``verify``, every
        shard's bytes against the checksum its manifest recorded (:meth:`verify`)."""
        p = Path(path)
        mf = p / "manifest.json"
        if not mf.exists():
            hint = " (an unfinished build: rerun 'bimine embed --store' to complete it)" if (
                p / "progress.json").exists() else ""
            raise InputError(f"{p}: not a complete embedding store, no manifest.json{hint}")
        m = _read_json(mf, p)
        if m.get("format") != FORMAT:
            raise InputError(f"{p}: unknown store format {m.get('format')!r}")
        st = cls(p, m)
        st.check()
        if verify:
            st.verify()
        return st

    def verify(self) -> None:
        """Raise a one-line :class:`InputError` if a shard's bytes are not those its manifest
        recorded when the shard was written (its SHA-256): a shard replaced by another store's
        shard of the same shape passes :meth:`check` (header and size), and mining it wrote
        360 pairs, none right (issue 72 §5). Reads every shard whole: about 0.5 s per million
        rows of 384 dimensions from the page cache (docs/distributed.md). A store written before
        checksums has none to compare with: its shards are trusted, said at debug level."""
        shards = self.manifest["shards"]
        if shards and all(sh.get("sha256") is None for sh in shards):
            log.debug(f"{self.path}: its manifest records no shard checksums (an older store): not verified")
        for sh in shards:
            if sh.get("sha256") is not None and file_checksum(self.path / sh["file"]) != sh["sha256"]:
                raise InputError(f"{self.path}: {sh['file']} is not the shard this store wrote (its SHA-256 differs "
                                 f"from the one in manifest.json: replaced or changed since); the store cannot be "
                                 f"trusted: {REBUILD}")

    def problems(self) -> list[str]:
        """What is wrong with the store, [] when nothing is: the manifest's own counts (a
        manifest at odds with itself ends the list, as its shards cannot be located), then
        each shard's and the blank-lines file's header and size against the manifest's rows
        and dim. Reads a few hundred bytes per file, never the embeddings: checking a store of
        a billion rows costs milliseconds."""
        bad = _manifest_problem(self.manifest)
        if bad:
            return [f"manifest.json is damaged: {bad}"]
        out = [why for sh in self.manifest["shards"]
               if (why := npy_problem(self.path / sh["file"], (sh["rows"], self.dim), "f"))]
        n_blank = self.manifest.get("blank_lines")
        why = npy_problem(self.path / "blank-lines.npy", (n_blank,) if type(n_blank) is int else None, "i")
        return out + ([why] if why else [])

    def check(self) -> None:
        """Raise a one-line :class:`InputError` if :meth:`problems` finds any."""
        found = self.problems()
        if found and found[0].startswith("manifest.json"):
            raise InputError(f"{self.path}: {found[0]}; the store cannot be trusted: {REBUILD}")
        if found:
            more = f" (and {len(found) - 1} more damaged file(s))" if len(found) > 1 else ""
            raise InputError(f"{self.path}: {found[0]}{more}; {RESUME}")

    def check_rows(self, lines: int) -> None:
        """Raise a one-line :class:`InputError` unless the store has a row for each of the
        ``lines`` of its input (whose checksum it matches)."""
        if lines != self.rows:
            raise InputError(f"{self.path}: manifest.json is damaged: it says {self.rows} rows, but its input has "
                             f"{lines} lines; the store cannot be trusted: {REBUILD}")

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


@dataclass(frozen=True)
class EmbedRun:
    """How a store's missing shards are embedded: ``batch_size`` sentences at a time, ``workers``
    processes on this machine, or with ``executor="ray"`` as Ray tasks on the cluster at
    ``ray_address``, at most ``in_flight`` shards of text sent at once (default: by the
    cluster's size)."""

    batch_size: int = 8192
    workers: int = 1
    executor: str = "local"
    ray_address: str | None = None
    in_flight: int | None = None
    wait: bool = True  # a store another run is building: wait for it (else refuse), bimine.cleanup.folder_lock

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ConfigError(f"unknown executor {self.executor!r}: local or ray")


@reading_once
def build_store(input_path: str, out_dir: str | os.PathLike, encoder: Encoder, lang: str, *,
                shard_size: int = 1_000_000, column: int | None = None, errors: str = "strict", progress: bool = True,
                run: EmbedRun = EmbedRun(), input_sha256: str | None = None,
                total_lines: int | None = None) -> tuple[EmbeddingStore, EmbedReport]:
    """Embed ``input_path`` into a store at ``out_dir``, reusing finished shards of an earlier run.

    ``input_sha256`` and ``total_lines`` may be passed when the caller already computed them
    (the checksum of the file's bytes; its line count, for the progress bar).
    Raises :class:`InputError` if ``out_dir`` holds a store of another input, model or shard size.
    ``run``: how the missing shards are embedded (:class:`EmbedRun`; on Ray, the same store,
    byte for byte). The steps: the inputs checked (:func:`_check_build`); a finished store of the
    same input, model and shard size returned as it is, a damaged or unfinished one resumed
    (:func:`_resume`); the missing shards embedded (:func:`_embed_missing`); the manifest written.
    """
    spec = _check_build(input_path, out_dir, encoder, run)
    if total_lines is None:  # one fast pass: bad input fails before any file is made; the count gives the ETA
        total_lines = scan_text(input_path, errors=errors, column=column).lines
    out = Path(out_dir)
    if run.executor == "ray" and not (out / "manifest.json").exists():
        plugin("ray").init(run.ray_address)  # join the cluster first: a bad --ray-address leaves no folder behind
    out.mkdir(parents=True, exist_ok=True)
    lang = normalize_lang(lang)
    ident = {"format": FORMAT, "model_id": encoder.model_id, "dim": encoder.dim, "lang": lang,
             "input": os.path.basename(input_path), "input_sha256": input_sha256 or file_checksum(input_path),
             "column": column, "shard_size": shard_size}
    if run.workers > 1 and run.executor == "local":
        run = dataclasses.replace(run, workers=capped_workers(run.workers, -(-total_lines // run.batch_size)))
    with folder_lock(out, "store", wait=run.wait):  # one run at a time builds a store (a second waits)
        return _build_locked(input_path, out, encoder, lang, ident, total_lines, column, errors, progress, run, spec)


def _build_locked(input_path: str, out: Path, encoder: Encoder, lang: str, ident: dict, total_lines: int,
                  column: int | None, errors: str, progress: bool, run: EmbedRun,
                  spec) -> tuple[EmbeddingStore, EmbedReport]:
    """:func:`build_store` in its locked folder."""
    shard_size = ident["shard_size"]
    done, warned = _resume(out, ident, total_lines, input_path)
    if done is not None:
        return done
    t0 = time.time()
    report = StoreReport(input_path)
    stats = ReadStats()
    bar = progress_bar(total=total_lines, unit=" lines", enabled=progress, desc=f"embed {os.path.basename(input_path)}")
    lines = read_lines(input_path, column=column, errors=errors, stats=stats)
    shards, blank, reused, warned = _embed_missing(lines, out, encoder, lang, shard_size, run, spec, report, bar,
                                                   warned)
    bar.close()
    # drop shards beyond the input's end (cannot happen for an unchanged input)
    for extra in sorted(out.glob("shard-*.npy"))[len(shards):]:
        extra.unlink()
    np.save(out / "blank-lines.npy", np.asarray(blank, dtype=np.int64))
    manifest = dict(ident, rows=sum(s["rows"] for s in shards), shards=shards,
                    input_lines=stats.lines, replaced_lines=stats.replaced, blank_lines=len(blank))
    _atomic_json(out / "manifest.json", manifest)
    (out / "progress.json").unlink()
    if reused:
        log.info(f"{out}: reused {reused} finished shard(s)")
    report.replaced = stats.replaced
    report.seconds = time.time() - t0
    report.repaired = warned
    return EmbeddingStore(out, manifest), report


def _check_build(input_path: str, out_dir: str | os.PathLike, encoder: Encoder, run: EmbedRun):
    """What can be refused before any file is made; returns the encoder's spec (for Ray)."""
    spec = getattr(encoder, "spec", None)
    if run.executor == "ray" and spec is None:
        raise ConfigError("--executor ray needs an encoder loaded by name or folder (it has no spec to send)")
    check_output_dir(out_dir, inputs=(input_path,))
    return spec


def _resume(out: Path, ident: dict, total_lines: int,
            input_path: str) -> tuple[tuple[EmbeddingStore, EmbedReport] | None, bool]:
    """A finished store of the same ``ident`` (input, model, shard size): it and its report;
    else None, the folder made ready for the missing shards (``progress.json`` written, a
    damaged store's manifest removed, temporaries of a killed run removed), and whether a line
    already said that a damaged store is being repaired. Another store's folder is refused."""
    prog, mf = out / "progress.json", out / "manifest.json"
    warned = False
    if mf.exists() and not prog.exists():
        done = _read_json(mf, out)
        if {k: done.get(k) for k in ident} != ident:
            raise InputError(f"{out}: holds a store of another input or model; use another output folder")
        st = EmbeddingStore(out, done)
        found = st.problems()
        if not found and done["rows"] != total_lines:
            found = [f"manifest.json says {done['rows']} rows for an input of {total_lines} lines"]
        if not found:
            st.verify()  # a shard changed since it was written: refused, not reused
            log.info(f"{out}: already complete, nothing to do")
            return (st, EmbedReport(input_path, lines=done["rows"], reused=done["rows"])), False
        # same input, model and shard size: resume, embedding again what is missing or damaged
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        log.warning(f"{out}: {found[0]}{more}; repairing the store: whole shards are kept, the others embedded again")
        warned = True
        _atomic_json(prog, ident)
        mf.unlink()  # the store is incomplete until the new manifest is written
    if prog.exists():
        old = _read_json(prog, out)
        if old != ident:
            diff = sorted(k for k in ident if old.get(k) != ident[k])
            raise InputError(f"{out}: holds a store built with different {', '.join(diff)}; "
                             "use another output folder or delete this one")
    elif any(out.glob("shard-*.npy")):
        raise InputError(f"{out}: holds files of another store; use another output folder")
    _atomic_json(prog, ident)
    for tmp in out.glob("*.tmp"):
        tmp.unlink()  # left by a killed run
    return None, warned


def _embed_missing(lines, out: Path, encoder: Encoder, lang: str, shard_size: int, run: EmbedRun, spec,
                   report: StoreReport, bar, warned: bool) -> tuple[list[dict], list[int], int, bool]:
    """Walk the input shard by shard: note blank lines, keep finished shards, embed the others
    (here or on Ray). Returns every shard's entry, the blank lines, the shards reused, and
    whether a line said the store is being repaired."""
    shards: list[dict] = []
    blank: list[int] = []
    reused = 0

    def missing() -> Iterator[tuple[list[str], Path]]:
        """The ``(lines, path)`` of each shard still to embed, in order."""
        nonlocal reused, warned
        for i, chunk in enumerate(batched(lines, shard_size)):
            base = i * shard_size
            blank.extend(base + j for j, s in enumerate(chunk) if not s.strip())
            f = out / _shard_name(i)
            shards.append({"file": f.name, "rows": len(chunk)})
            if f.exists():
                why = npy_problem(f, (len(chunk), encoder.dim), "f")
                if why is None:
                    shards[-1]["sha256"] = file_checksum(f)  # a whole shard of a killed run: its bytes as they are
                    report.lines += len(chunk)
                    report.reused += len(chunk)
                    bar.update(len(chunk))
                    reused += 1
                    continue
                # never left by a killed run (shards are renamed when whole): damaged since
                if not warned:
                    log.warning(f"{out}: {why}; embedding it again")
                    warned = True
                f.unlink()
            waiting.append(shards[-1])
            yield chunk, f

    waiting: deque[dict] = deque()  # the entries of the shards sent to be embedded, in order
    if run.executor == "ray":
        for res in plugin("ray").embed_shards(spec, ((c, str(f)) for c, f in missing()), lang, run.batch_size,
                                              address=run.ray_address, in_flight=run.in_flight):
            for k in ("lines", "empty", "truncated"):
                setattr(report, k, getattr(report, k) + res[k])
            waiting.popleft()["sha256"] = res["sha256"]
            bar.update(res["lines"])
    else:
        for chunk, f in missing():
            waiting.popleft()["sha256"] = embed_to_shard(encoder, chunk, lang, f, batch_size=run.batch_size,
                                                         report=report, progress=bar, workers=run.workers)
    return shards, blank, reused, warned
