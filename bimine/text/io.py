"""Corpus readers: one sentence per line, plain or compressed, a TSV column, or stdin.

Every reader yields exactly one string per input line, in order: an empty line is an empty
string, never a skipped row, so output row ``i`` always refers to input line ``i + 1``.
Lines are split on ``\\n`` only (not on U+0085 or U+2028 as ``str.splitlines`` would);
a ``\\r`` before the ``\\n`` is removed as part of the line ending, and a UTF-8 byte-order
mark (U+FEFF) at the start of the input is dropped (it is no part of line 1's text).
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import hashlib
import io
import lzma
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from bimine.errors import InputError
from bimine.streams import readable_path

_MAGIC = {
    b"\x1f\x8b": "gz",
    b"\xfd7zXZ\x00": "xz",
    b"BZh": "bz2",
    b"\x28\xb5\x2f\xfd": "zst",
}
_SUFFIX = {".gz": "gz", ".xz": "xz", ".bz2": "bz2", ".zst": "zst", ".zstd": "zst"}


def _sniff(path: str) -> str | None:
    with open(path, "rb") as f:
        head = f.read(6)
    for magic, kind in _MAGIC.items():
        if head.startswith(magic):
            return kind
    return None


def open_binary(path: str | os.PathLike) -> BinaryIO:
    """Open ``path`` for binary reading, decompressing .gz/.xz/.bz2/.zst; ``-`` is stdin.

    The compression is taken from the file's magic bytes, so a mis-named file still reads.
    A stream (``-``, ``/dev/stdin``, a pipe or FIFO) is read once into a copy at its first
    open and every open reads the copy (:func:`bimine.streams.readable_path`).
    """
    p = str(path)
    if p != "-" and not os.path.exists(p):
        raise InputError(f"{p}: no such file")
    if os.path.isdir(p):
        raise InputError(f"{p}: is a directory, expected a text file")
    real = readable_path(p)
    return _decoded(p, open(real, "rb"), real)


def _decoded(p: str, raw: BinaryIO, real: str | None = None) -> BinaryIO:
    """The decompressed bytes of the file ``p`` open as ``raw`` (``real``: the file read for
    ``p``, its copy when ``p`` is a stream, see :mod:`bimine.streams`)."""
    kind = _sniff(real or p) or _SUFFIX.get(Path(p).suffix.lower())
    if kind == "gz":
        inner: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb")
    elif kind == "xz":
        inner = lzma.LZMAFile(raw, "rb")
    elif kind == "bz2":
        inner = bz2.BZ2File(raw, "rb")
    elif kind == "zst":
        try:
            import zstandard  # loaded on use: zstandard is heavy or optional
        except ImportError as e:  # pragma: no cover - zstandard is a dependency
            raw.close()
            raise InputError(f"{p}: reading .zst files needs the 'zstandard' package") from e
        inner = _ZstdFrames(raw, zstandard)
    else:
        return raw if not isinstance(raw, _Hashing) else io.BufferedReader(raw, buffer_size=1 << 20)
    return io.BufferedReader(_Decompressed(inner, p, raw), buffer_size=1 << 20)


class _Hashing(io.RawIOBase):
    """A file's bytes, each one also fed to ``hasher`` as it is read; closing it closes the file."""

    def __init__(self, f: BinaryIO, hasher) -> None:
        self._f = f
        self._h = hasher

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self._f.readinto(b)
        if n:
            self._h.update(memoryview(b)[:n])
        return n

    def drain(self) -> None:
        """Feed the rest of the file to the hasher (bytes a decompressor left unread)."""
        while chunk := self._f.read(1 << 22):
            self._h.update(chunk)

    def hexdigest(self) -> str:
        return self._h.hexdigest()

    def close(self) -> None:
        if not self.closed:
            self._f.close()
        super().close()


_PIECE = 1 << 18


class _Decompressed(io.RawIOBase):
    """The bytes of a decompressing reader, whose every failure becomes one
    :class:`InputError` naming the file and the line where its data stops.

    Each codec fails in its own way on damaged data: gzip with ``zlib.error`` (not an
    ``OSError``) or ``BadGzipFile``, xz with ``LZMAError``, bz2 with ``OSError``, zstd with
    ``ZstdError``, and all of them with ``EOFError`` on a file cut short. Catching them here,
    where every reader's bytes come from, gives every command, and the worker processes and
    threads that read files, the same one-line error. The line is counted on the
    decompressed bytes handed out (``bytes.count``: a small cost next to decompression)."""

    def __init__(self, inner: BinaryIO, name: str, raw: BinaryIO | None = None) -> None:
        self._inner = inner
        self._raw = raw  # the file under a decompressor given a file object, closed with it
        self._name = name
        self._newlines = 0  # newlines in the bytes decompressed so far
        self._read = getattr(inner, "read1", inner.read)  # one step of the decompressor, not a loop

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        try:  # at most _PIECE at a time, so the output before damaged data is counted
            data = self._read(min(len(b), _PIECE))
        except EOFError as e:
            raise InputError(
                f"{self._name}: cannot be read (the compressed data stops{self._after()}: {e}); "
                "the file is truncated: download or compress it again"
            ) from None
        except (OSError, zlib.error, lzma.LZMAError) as e:  # damaged data (_ZstdFrames gives OSError)
            # gzip checks its CRC at the end of the data: the damage is somewhere before, where
            # the decompressor gave out wrong bytes instead of failing (no line to name)
            where = "" if isinstance(e, gzip.BadGzipFile) and "CRC" in str(e) else self._after()
            raise InputError(
                f"{self._name}: cannot be read (the compressed data is damaged{where}: {e}); "
                "the file is corrupt: download or compress it again"
            ) from None
        n = len(data)
        b[:n] = data
        self._newlines += data.count(b"\n")
        return n

    def _after(self) -> str:
        """Where the damage was found: after the lines given out so far (bz2 and zstd
        decompress large blocks, so it may lie well after that line)."""
        return f", found after line {self._newlines}" if self._newlines else ""

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
            if self._raw is not None:
                self._raw.close()
        super().close()


class _ZstdFrames(io.RawIOBase):
    """The decompressed bytes of a .zst file, every frame of it, that fails at the end of a
    truncated file instead of ending quietly.

    ``zstandard``'s ``stream_reader`` stops after the first frame (a file of concatenated
    frames would lose the rest) and ends a stream cut short as if it were complete (a
    truncated file reads as empty or short, exit 0). Here each frame is decompressed with a
    ``decompressobj`` until its end marker, the next frame starts from the bytes left over,
    and input that ends inside a frame raises :class:`EOFError`; data that is not zstd raises
    :class:`OSError` (both are turned into a one-line :class:`InputError` by the readers)."""

    def __init__(self, raw: BinaryIO, zstandard_module) -> None:
        self._raw = raw
        self._zstd = zstandard_module
        self._obj = None  # the decompressor of the frame being read, None between frames
        self._out = b""
        self._pos = 0  # bytes of _out already given
        self._eof = False

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        while self._pos == len(self._out) and not self._eof:
            self._out, self._pos = b"", 0
            data = self._raw.read(1 << 17)
            if not data:
                self._eof = True
                if self._obj is not None:
                    raise EOFError("the zstd stream ends inside a frame (the file is cut short)")
                return
            while data:
                if self._obj is None:
                    self._obj = self._zstd.ZstdDecompressor().decompressobj()
                try:
                    self._out += self._obj.decompress(data)
                except self._zstd.ZstdError as e:
                    raise OSError(f"not valid zstd data: {e}") from None
                if self._obj.eof:
                    data = self._obj.unused_data
                    self._obj = None
                else:
                    data = b""

    def readinto(self, b) -> int:
        self._fill()
        n = min(len(b), len(self._out) - self._pos)
        b[:n] = self._out[self._pos:self._pos + n]
        self._pos += n
        return n

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


@dataclass
class ReadStats:
    """Counters a reader fills while it runs (lines read, lines with replaced bytes)."""

    lines: int = 0
    replaced: int = 0
    replaced_lines: list[int] = field(default_factory=list)


def read_lines(
    path: str | os.PathLike,
    *,
    column: int | None = None,
    errors: str = "strict",
    stats: ReadStats | None = None,
) -> Iterator[str]:
    """Yield the lines of ``path`` as strings without their line ending.

    Args:
        path: a file (plain or compressed) or ``-`` for stdin.
        column: 1-based TSV column to take; ``None`` takes the whole line.
        errors: ``"strict"`` raises :class:`InputError` on invalid UTF-8 (naming file, line
            and byte offset); ``"replace"`` substitutes U+FFFD and counts the line in ``stats``.
        stats: optional counters, updated as lines are read.

    Raises:
        InputError: missing file, binary file (a NUL byte), invalid UTF-8, or a line with
            fewer TSV columns than ``column``.

    The file is read and decoded a chunk of lines at a time (:func:`read_line_chunks`); the
    lines before a bad one are yielded before the error is raised, as line by line.
    """
    if column is not None and column < 1:
        raise InputError(f"--column is 1-based, got {column}")
    name = "<stdin>" if str(path) == "-" else str(path)
    st = stats if stats is not None else ReadStats()
    for chunk in read_line_chunks(path, errors=errors, stats=st, count=False):
        lineno = chunk.first_line
        for line in chunk.lines:
            if column is not None:
                cells = line.split("\t")
                if len(cells) < column:
                    raise InputError(
                        f"{name}:{lineno}: has {len(cells)} tab-separated column(s), "
                        f"column {column} was asked for"
                    )
                line = cells[column - 1]
            st.lines = lineno
            lineno += 1
            yield line


@dataclass
class LineChunk:
    """Consecutive lines of a file: ``lines[0]`` is line ``first_line`` (1-based); ``text`` is
    the lines joined by ``\\n`` (for checks done on the whole chunk at once)."""

    first_line: int
    lines: list[str]
    text: str


CHUNK_BYTES = 1 << 20
_BOM = "\ufeff".encode()  # UTF-8 byte-order mark, as some Windows editors start a file with


def read_line_chunks(
    path: str | os.PathLike,
    *,
    errors: str = "strict",
    stats: ReadStats | None = None,
    chunk_bytes: int | None = None,
    count: bool = True,
) -> Iterator[LineChunk]:
    """The lines of ``path`` exactly as :func:`read_lines` gives them, a chunk of about
    ``chunk_bytes`` at a time: the bytes of whole lines are decoded at once and split on
    ``\\n`` (UTF-8 never holds a ``\\n`` byte inside a character, and a ``\\r\\n`` only ends
    a line), which is what decoding each line gives. A chunk with a NUL byte or invalid UTF-8
    is read again line by line, so errors name the same line and byte, the lines before the
    bad one come first, and ``--encoding-errors replace`` counts the same lines.
    ``count``: update ``stats.lines`` after each chunk (``read_lines`` counts per line).
    ``chunk_bytes``: default :data:`CHUNK_BYTES`."""
    if errors not in ("strict", "replace"):
        raise ValueError("errors must be 'strict' or 'replace'")
    name = "<stdin>" if str(path) == "-" else str(path)
    st = stats if stats is not None else ReadStats()
    f = open_binary(path)
    first = 1
    pending: list[bytes] = []  # the start of a line whose end is not read yet
    read = f.read
    try:
        while True:
            data = read(chunk_bytes or CHUNK_BYTES)
            if data:
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    pending.append(data)
                    continue
                head, tail = data[:cut], data[cut:]
                if pending:
                    pending.append(head)
                    head = b"".join(pending)
                pending = [tail] if tail else []
                data = head
            else:
                data = b"".join(pending)
                pending = []
                if not data:
                    return
            if first == 1:
                _check_start(data, name)
                if data.startswith(_BOM):
                    data = data[len(_BOM):]  # a byte-order mark is no part of line 1's text
            lines = _decode_chunk(data)
            if lines is None:
                good: list[str] = []
                try:
                    for line in _lines_one_by_one(data, first, name, errors, st):
                        good.append(line)
                except InputError:
                    if good:
                        if count:
                            st.lines = first + len(good) - 1
                        yield LineChunk(first, good, "\n".join(good))
                    raise
                lines = good
                text = "\n".join(lines)
            else:
                lines, text = lines
            if count:
                st.lines = first + len(lines) - 1
            yield LineChunk(first, lines, text)
            first += len(lines)
    except (EOFError, OSError, lzma.LZMAError) as e:
        raise InputError(f"{name}: cannot be read ({e}); is the compressed file truncated or damaged?") from e
    finally:
        f.close()


def _check_start(data: bytes, name: str) -> None:
    """The first chunk of a file: UTF-16 text, or lines ended by CR alone (old Mac files), are
    errors that say so (as :func:`scan_text`'s), not a binary file or one long line."""
    head = data[:4096]
    if b"\x00" in head and (utf16 := _utf16(head)):
        raise InputError(f"{name}: is {utf16} text, not UTF-8; convert it first: "
                         f"iconv -f {utf16.lower()} -t utf-8 {name} > {name}.utf8")
    crs = data.count(b"\r") - data.count(b"\r\n")
    if crs and crs > data.count(b"\n"):
        raise InputError(f"{name}: ends its lines with CR alone (old Mac line endings); bimine splits lines on "
                         f"LF only; convert it first: tr '\\r' '\\n' < {name} > {name}.lf")


def _decode_chunk(data: bytes) -> tuple[list[str], str] | None:
    """Lines and text of whole lines of ``data`` (the last may lack its ``\\n``: end of
    file), or None when a line needs the line-by-line path (a NUL byte, invalid UTF-8)."""
    if b"\x00" in data:
        return None
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n"), text


def _lines_one_by_one(data: bytes, first: int, name: str, errors: str, st: ReadStats) -> Iterator[str]:
    for lineno, raw in enumerate(io.BytesIO(data), start=first):
        if b"\x00" in raw:
            raise InputError(
                f"{name}:{lineno}: contains a NUL byte; this looks like a binary file, "
                "not one sentence per line of UTF-8 text"
            )
        if raw.endswith(b"\n"):
            raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            if errors == "strict":
                raise InputError(
                    f"{name}:{lineno}: invalid UTF-8 at byte {e.start} of the line; fix the "
                    "file or pass --encoding-errors replace to substitute U+FFFD"
                ) from None
            line = raw.decode("utf-8", errors="replace")
            st.replaced += 1
            if len(st.replaced_lines) < 10:
                st.replaced_lines.append(lineno)
        yield line


def read_parallel(
    src: str | os.PathLike,
    tgt: str | os.PathLike | None = None,
    *,
    errors: str = "strict",
) -> Iterator[tuple[str, str]]:
    """Yield ``(source, target)`` pairs from two aligned files, or from a 2-column TSV.

    With ``tgt=None``, ``src`` is a TSV whose columns 1 and 2 are the two sides.
    Raises :class:`InputError` when the two files have different line counts.
    """
    if tgt is None:
        name = str(src)
        for lineno, line in enumerate(read_lines(src, errors=errors), start=1):
            cells = line.split("\t")
            if len(cells) < 2:
                raise InputError(f"{name}:{lineno}: expected 2 tab-separated columns, got 1")
            yield cells[0], cells[1]
        return
    a = read_lines(src, errors=errors)
    b = read_lines(tgt, errors=errors)
    n = 0
    sentinel = None
    while True:
        x = next(a, sentinel)
        y = next(b, sentinel)
        if x is None and y is None:
            return
        if x is None or y is None:
            longer, shorter = (tgt, src) if x is None else (src, tgt)
            rest = 1 + sum(1 for _ in (b if x is None else a))
            raise InputError(
                f"{shorter} has {n} lines but {longer} has {n + rest}: the two sides of a "
                "parallel corpus must have the same number of lines"
            )
        n += 1
        yield x, y


def _utf16(head: bytes) -> str | None:
    """``UTF-16`` (with a byte-order mark), ``UTF-16LE`` / ``UTF-16BE`` (without one: a NUL in
    every other byte of mostly ASCII text) when the start of a file is UTF-16 text, else None:
    iconv's names for it."""
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) and head[:4] not in (codecs.BOM_UTF32_LE,
                                                                                  codecs.BOM_UTF32_BE):
        return "UTF-16"  # its byte-order mark says which end first, iconv reads it (and drops it)
    h = head[:4096]
    h = h[: len(h) // 2 * 2]
    if len(h) < 8:
        return None
    even, odd = h[0::2], h[1::2]
    if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
        return "UTF-16LE"
    if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
        return "UTF-16BE"
    return None


@dataclass
class ScanResult:
    """What one pass over a file found: its line count and the first line holding a tab."""

    lines: int = 0
    first_tab_line: int | None = None
    sha256: str | None = None  # with checksum=True: the file's SHA-256


def scan_text(path: str | os.PathLike, *, errors: str = "strict", find_tab: bool = False,
              column: int | None = None, checksum: bool = False) -> ScanResult:
    """Check a whole file before any work is done on it, in one fast pass over its bytes.

    Raises :class:`InputError` (naming file and line) for what :func:`read_lines` would stop
    at later: a NUL byte (a binary file; UTF-16 text is named as such, with the command that
    converts it), invalid UTF-8 when ``errors == "strict"``, or a truncated compressed file; so
    a long job fails at once instead of after its first hours. Also for a file whose lines end
    in CR alone (old Mac files: more lone CRs than lines), which would read as one line.
    Counts lines (for progress bars) and, with ``find_tab``, finds the first line with a tab.
    With ``column`` (1-based), a line with fewer tab-separated columns is an error too. With
    ``checksum``, the same pass gives ``sha256``, the SHA-256 of the file's own bytes (the
    compressed ones of a compressed file), equal to :func:`bimine.store.store.file_checksum`.
    """
    name = "<stdin>" if str(path) == "-" else str(path)
    res = ScanResult()
    dec = codecs.getincrementaldecoder("utf-8")("strict") if errors == "strict" else None
    last = b"\n"
    lone_cr = 0
    real = readable_path(name) if name == "-" or os.path.exists(name) else name
    hashed = _Hashing(open(real, "rb"), hashlib.sha256()) if checksum and os.path.isfile(real) else None
    try:
        with (open_binary(path) if hashed is None else _decoded(name, hashed, real)) as f:
            while chunk := f.read(1 << 22):
                nul = chunk.find(b"\x00")
                if nul >= 0:
                    if utf16 := _utf16(chunk if res.lines == 0 and last == b"\n" and lone_cr == 0 else b""):
                        raise InputError(f"{name}: is {utf16} text, not UTF-8; convert it first: "
                                         f"iconv -f {utf16.lower()} -t utf-8 {name} > {name}.utf8")
                    lineno = res.lines + chunk.count(b"\n", 0, nul) + 1
                    raise InputError(f"{name}:{lineno}: contains a NUL byte; "
                                     "this looks like a binary file, not one sentence per line of UTF-8 text")
                # a CR not followed by LF (one cut from its LF by the chunk's end is not counted)
                lone_cr += chunk.count(b"\r") - chunk.count(b"\r\n") - (chunk[-1:] == b"\r")
                lone_cr += last == b"\r" and chunk[:1] != b"\n"
                if dec is not None:
                    try:
                        dec.decode(chunk)
                    except UnicodeDecodeError as e:
                        lineno = res.lines + chunk.count(b"\n", 0, max(e.start, 0)) + 1
                        raise InputError(f"{name}:{lineno}: invalid UTF-8; fix the file or pass "
                                         "--encoding-errors replace to substitute U+FFFD") from None
                if find_tab and res.first_tab_line is None:
                    tab = chunk.find(b"\t")
                    if tab >= 0:
                        res.first_tab_line = res.lines + chunk.count(b"\n", 0, tab) + 1
                res.lines += chunk.count(b"\n")
                last = chunk[-1:]
            if dec is not None:
                try:
                    dec.decode(b"", final=True)
                except UnicodeDecodeError:
                    raise InputError(f"{name}:{res.lines + 1}: invalid UTF-8 (a character cut off at the end "
                                     "of the file); fix the file or pass --encoding-errors replace") from None
            if hashed is not None:
                hashed.drain()
                res.sha256 = hashed.hexdigest()
    except (EOFError, OSError, lzma.LZMAError) as e:
        raise InputError(f"{name}: cannot be read ({e}); is the compressed file truncated or damaged?") from e
    lone_cr += last == b"\r"
    breaks = res.lines
    res.lines += last != b"\n"
    if lone_cr and lone_cr > breaks:  # more lone CRs than LFs: the file's line breaks are CRs
        raise InputError(f"{name}: ends its lines with CR alone (old Mac line endings): {lone_cr:,} lone CRs and "
                         f"{breaks:,} LF line breaks; bimine splits lines on LF only, so it would read as "
                         f"{res.lines:,} line(s); convert it first: tr '\\r' '\\n' < {name} > {name}.lf")
    if column is not None and column > 1:
        with open_binary(path) as f:
            for lineno, raw in enumerate(f, start=1):
                cols = raw.count(b"\t") + 1
                if cols < column:
                    raise InputError(f"{name}:{lineno}: has {cols} tab-separated column(s), "
                                     f"column {column} was asked for")
    return res
