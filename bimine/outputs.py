"""Checks of output paths, run before any work so a bad ``-o`` fails in a second, not after hours,
and the one way every command writes an output (:func:`atomic_path`).

The checks raise :class:`ConfigError` with one line that names the option and the path:
a missing or unwritable folder, a folder where a file is wanted (or the reverse), a block
device or socket, or an output that would overwrite one of the command's inputs. They create
nothing and leave no file behind (the writability probe is a temporary file, removed at once).

What an output path may be (:func:`output_target`):

- a regular file, or a new name: written under ``NAME.tmp-PID`` and renamed when complete,
  so a crash never leaves half a file under the final name;
- a symbolic link (to a file, or a name not yet made): written through to its target, the
  link kept; the temporary lies beside the target;
- a character device (``/dev/null``), a FIFO, ``-`` (standard output) or an open descriptor
  (``/dev/stdout``, ``/dev/fd/N``): never replaced; the output is composed in a temporary
  file (in TMPDIR; some formats need to seek) and copied into the stream once complete.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bimine.cleanup import sweep_stale_temporaries, temp_prefix
from bimine.errors import ConfigError

PathLike = str | os.PathLike

_FD_PATH = re.compile(r"^/(?:proc/[^/]+|dev)/fd/(\d+)$")
_STD_FD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


@dataclass(frozen=True)
class OutputTarget:
    """Where an output path leads. ``kind``: ``"file"`` (a regular file or a new name, at
    ``path``, symbolic links resolved), ``"stream"`` (a character device or FIFO at ``path``)
    or ``"fd"`` (an open descriptor ``fd`` of this process: ``-``, ``/dev/stdout``, ``/dev/fd/N``)."""

    kind: str
    path: str
    fd: int | None = None

    @property
    def is_stream(self) -> bool:
        return self.kind != "file"


def output_target(path: PathLike) -> OutputTarget:
    """Follow ``path``'s symbolic links and say what it leads to (:class:`OutputTarget`).

    ``-`` is standard output. A chain of links that passes through ``/dev/fd/N`` or
    ``/proc/*/fd/N`` is descriptor N (resolving it further would name the file or pipe
    behind the descriptor, and replacing that file would cut off what the shell opened).
    Raises :class:`ConfigError` for a link loop."""
    p = str(path)
    if p == "-":
        return OutputTarget("fd", "-", 1)
    p = os.path.abspath(p)
    for _ in range(64):
        if p in _STD_FD:
            return OutputTarget("fd", p, _STD_FD[p])
        m = _FD_PATH.match(p)
        if m:
            return OutputTarget("fd", p, int(m.group(1)))
        if not os.path.islink(p):
            break
        p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
    else:
        raise ConfigError(f"{path}: too many levels of symbolic links")
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return OutputTarget("file", os.path.realpath(p))
    except OSError as e:
        raise ConfigError(f"{path}: cannot be examined ({e.strerror})") from None
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return OutputTarget("stream", p)
    return OutputTarget("file", os.path.realpath(p))


def writes_stdout(path: PathLike | None) -> bool:
    """Whether output ``path`` is this process's standard output (a command then prints its
    summary to standard error, so the two do not mix)."""
    if path is None:
        return False
    try:
        t = output_target(path)
    except ConfigError:
        return False
    return t.kind == "fd" and t.fd == 1


def shown(path: PathLike) -> str:
    """How a message names output ``path``: ``standard output`` for ``-`` (and ``/dev/stdout``),
    else the path as given."""
    return "standard output" if writes_stdout(path) else str(path)


def _same(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name the same file or folder (hard/symbolic links included)."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _writable(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (tried, not guessed from permission bits:
    root, ACLs and read-only mounts all answer correctly)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".bimine-write-test-", dir=folder)
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True


def _inputs(inputs: Iterable[PathLike | None]) -> list[Path]:
    return [Path(p) for p in inputs if p is not None and str(p) != "-"]


def _kind_of(path: PathLike) -> str | None:
    """``"block device"``, ``"socket"``, ... for what no output may be; None for the rest."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


TEMP_SUFFIX_BYTES = 12  # what a temporary name adds to an output's name (".tmp-" and a process id)


def check_name_lengths(path: PathLike, option: str, *, reserve: int = 0) -> None:
    """Refuse a path the file system cannot hold, in one line, before any work: a part of it
    longer than the folder's NAME_MAX (255 bytes on most), the last part longer than that less
    ``reserve`` (the temporary name it is first written under), or the whole longer than
    PATH_MAX. A 300-character store name gave ``OSError: [Errno 36] File name too long`` (issue
    72 §7)."""
    p = Path(path)
    probe = p.absolute().parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        name_max = os.pathconf(probe, "PC_NAME_MAX")
        path_max = os.pathconf(probe, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    parts = p.parts
    for i, part in enumerate(parts):
        limit = name_max - (reserve if i == len(parts) - 1 else 0)
        if len(os.fsencode(part)) > limit:
            raise ConfigError(f"{option} {str(path)[:60]}...: the name {part[:40]}... is {len(os.fsencode(part))} bytes, "
                              f"longer than the {limit} this file system allows; choose a shorter name")
    if len(os.fsencode(str(p.absolute()))) + reserve > path_max:
        raise ConfigError(f"{option} {str(path)[:60]}...: the path is longer than the {path_max} bytes this system "
                          "allows; choose a shorter one")


def check_output_file(path: PathLike, *, inputs: Iterable[PathLike | None] = (), option: str = "-o/--output") -> None:
    """Fail unless a command can write the file ``path`` without harm.

    Refused: ``path`` is a folder, a block device or a socket; its folder does not exist, is
    not a folder or is not writable; a device or FIFO that cannot be opened for writing;
    ``path`` is one of ``inputs`` (the same file, also through a link, or the same resolved
    path) or lies inside an input folder (an embedding store). ``inputs`` may hold files,
    folders, ``None`` and ``-`` (stdin; skipped). An existing regular file at ``path`` is
    fine: outputs are replaced atomically (through a symbolic link, its target is). A
    character device, a FIFO, ``-`` and ``/dev/stdout`` are fine: they are written as streams.

    Example: ``check_output_file("pairs.tsv", inputs=(src, tgt, src_store), option="-o/--output")``.
    """
    target = output_target(path)
    if target.kind == "file":
        check_name_lengths(path, option, reserve=TEMP_SUFFIX_BYTES)
    if target.kind == "fd":
        try:
            os.fstat(target.fd)
        except OSError:
            raise ConfigError(f"{option} {path}: descriptor {target.fd} is not open") from None
        return
    if target.kind == "stream":
        if not os.access(target.path, os.W_OK):
            raise ConfigError(f"{option} {path}: cannot write to {target.path} (permission denied)")
        return
    out = Path(target.path)
    for inp in _inputs(inputs):
        if _same(Path(path), inp) or _same(out, inp):
            raise ConfigError(f"{option} {path}: is the input {inp}; writing there would destroy it; "
                              "choose another output name")
        if inp.is_dir() and out.resolve().is_relative_to(inp.resolve()):
            raise ConfigError(f"{option} {path}: is inside the input folder {inp}; choose an output outside it")
    if out.is_dir():
        raise ConfigError(f"{option} {path}: is a folder; give a file name (e.g. {Path(path) / 'out'})")
    what = _kind_of(out)
    if what:
        raise ConfigError(f"{option} {path}: is {what}; give a regular file, a character device, a FIFO or -")
    parent = out.parent
    if not parent.exists():
        raise ConfigError(f"{option} {path}: folder {parent} does not exist; create it first")
    if not parent.is_dir():
        raise ConfigError(f"{option} {path}: {parent} is not a folder")
    if not _writable(parent):
        raise ConfigError(f"{option} {path}: cannot write in folder {parent} (permission denied or read-only)")


def check_apart_from_work_dir(path: PathLike, work_dir: PathLike | None, option: str = "-o/--output") -> None:
    """Refuse an output file that is the ``--work-dir`` folder or lies inside it, saying so (the
    work folder is no input: the message used to call it one). A stream output is fine."""
    if not work_dir or output_target(path).kind != "file":
        return
    out, work = Path(path), Path(work_dir)
    if _same(out, work):
        raise ConfigError(f"{option} {path}: is also the --work-dir folder; the output is a file: give it another name "
                          "(or the work folder another)")
    if work.is_dir() and out.absolute().resolve().is_relative_to(work.resolve()):
        raise ConfigError(f"{option} {path}: lies inside the --work-dir folder {work_dir}, which holds the run's "
                          "intermediate files; write the output outside it")


def check_output_dir(path: PathLike, *, inputs: Iterable[PathLike | None] = (), option: str = "-o/--output") -> None:
    """Fail unless a command can create or fill the folder ``path``.

    An existing folder is fine (a run or store is resumed there; whether its contents fit
    is for the command to judge), also through a symbolic link (the folder it points to is
    filled); a missing one is fine when it can be created (its parent
    folders are created too, like ``mkdir -p``). Refused: ``-``; ``path`` is an existing file,
    device or FIFO (not a folder); an ancestor is a file; the nearest existing ancestor, or the
    folder itself, is not writable; ``path`` is one of ``inputs``.

    Example: ``check_output_dir(store_dir, inputs=(text_file,), option="-o/--output")``.
    """
    if str(path) == "-":
        raise ConfigError(f"{option} -: this output is a folder, not a stream; give a folder name")
    check_name_lengths(path, option)
    out = Path(path)
    for inp in _inputs(inputs):
        if _same(out, inp):
            raise ConfigError(f"{option} {path}: is the input {inp}; choose another output folder")
    if out.exists() and not out.is_dir():
        mode = os.stat(out).st_mode
        what = ("a character device" if stat.S_ISCHR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else _kind_of(out) or "an existing file")
        raise ConfigError(f"{option} {path}: is {what}, not a folder; choose a folder name")
    here = out.resolve()
    while not here.exists():
        here = here.parent
    if not here.is_dir():
        raise ConfigError(f"{option} {path}: {here} is a file, so the folder cannot be created")
    if not _writable(here):
        what = "folder" if here == out.resolve() else "parent folder"
        raise ConfigError(f"{option} {path}: cannot write in {what} {here} (permission denied or read-only)")


@contextmanager
def atomic_path(path: PathLike):
    """Yield a temporary file name to write the output ``path`` to, and put it in place when
    the block ends without error; on any failure (an exception, Ctrl-C) the temporary is
    removed and ``path`` is left as it was.

    Where ``path`` leads (:func:`output_target`) decides how it is put in place:

    - a regular file or a new name: the temporary is ``TARGET.tmp-PID`` beside it, renamed
      over it (``TARGET``: ``path`` with symbolic links resolved, so a link is written through
      and kept). The ``TARGET.tmp-PID`` files of killed runs are removed first;
    - a character device, a FIFO, ``-`` or ``/dev/stdout``: the temporary is a file in TMPDIR,
      copied into the stream once complete, then removed. A reader that closes a pipe early
      (``| head``) ends the copy quietly; a stream that refuses the bytes (``/dev/full``) is a
      :class:`ConfigError` naming it.

    Example: ``with atomic_path(out) as tmp: np.save(open(tmp, "wb"), a)``.
    """
    target = output_target(path)
    if target.kind == "file":
        real = Path(target.path)
        sweep_stale_temporaries(real.parent, f"{glob.escape(real.name)}.tmp-*")
        tmp = f"{real}.tmp-{os.getpid()}"
        try:
            yield tmp
            os.replace(tmp, real)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
        return
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix("out"))
    os.close(fd)
    try:
        yield tmp
        _copy_to_stream(tmp, target, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _copy_to_stream(src: str, target: OutputTarget, shown: PathLike) -> None:
    """Copy file ``src`` into the stream ``target`` (see :func:`atomic_path`)."""
    try:
        if target.kind == "fd":
            if target.fd == 1:
                sys.stdout.flush()
            elif target.fd == 2:
                sys.stderr.flush()
            with open(src, "rb") as f, os.fdopen(os.dup(target.fd), "wb") as out:
                shutil.copyfileobj(f, out, 1 << 20)
        else:
            with open(src, "rb") as f, open(target.path, "wb") as out:
                shutil.copyfileobj(f, out, 1 << 20)
    except BrokenPipeError:
        # the reader went away (`-o - | head`): what it wanted it has; Python would print an
        # error at exit when it flushes stdout, so point stdout at /dev/null
        if target.kind == "fd" and target.fd == 1:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
    except OSError as e:
        raise ConfigError(f"cannot write the output {shown}: {e.strerror or e}") from None
