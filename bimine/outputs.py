"""Checks of output paths, run before any work so a bad ``-o`` fails in a second, not after hours.

The checks raise :class:`ConfigError` with one line that names the option and the path:
a missing or unwritable folder, a folder where a file is wanted (or the reverse), or an
output that would overwrite one of the command's inputs. They create nothing and leave no
file behind (the writability probe is a temporary file, removed at once). :func:`atomic_path`
is how outputs are then written: under a temporary name, renamed when complete.
"""

from __future__ import annotations

import glob
import os
import tempfile
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

from bimine.cleanup import sweep_stale_temporaries
from bimine.errors import ConfigError

PathLike = str | os.PathLike


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


def check_output_file(path: PathLike, *, inputs: Iterable[PathLike | None] = (), option: str = "-o/--output") -> None:
    """Fail unless a command can write the file ``path`` without harm.

    Refused: ``path`` is a folder; its folder does not exist, is not a folder or is not
    writable; ``path`` is one of ``inputs`` (the same file, also through a link, or the same
    resolved path) or lies inside an input folder (an embedding store). ``inputs`` may hold
    files, folders, ``None`` and ``-`` (stdin; skipped). An existing regular file at
    ``path`` is fine: outputs are replaced atomically.

    Example: ``check_output_file("pairs.tsv", inputs=(src, tgt, src_store), option="-o/--output")``.
    """
    out = Path(path)
    for inp in _inputs(inputs):
        if _same(out, inp):
            raise ConfigError(f"{option} {path}: is the input {inp}; writing there would destroy it; "
                              "choose another output name")
        if inp.is_dir() and out.resolve().is_relative_to(inp.resolve()):
            raise ConfigError(f"{option} {path}: is inside the input folder {inp}; choose an output outside it")
    if out.is_dir():
        raise ConfigError(f"{option} {path}: is a folder; give a file name (e.g. {out / 'out'})")
    parent = out.resolve().parent
    if not parent.exists():
        raise ConfigError(f"{option} {path}: folder {parent} does not exist; create it first")
    if not parent.is_dir():
        raise ConfigError(f"{option} {path}: {parent} is not a folder")
    if not _writable(parent):
        raise ConfigError(f"{option} {path}: cannot write in folder {parent} (permission denied or read-only)")


def check_output_dir(path: PathLike, *, inputs: Iterable[PathLike | None] = (), option: str = "-o/--output") -> None:
    """Fail unless a command can create or fill the folder ``path``.

    An existing folder is fine (a run or store is resumed there; whether its contents fit
    is for the command to judge); a missing one is fine when it can be created (its parent
    folders are created too, like ``mkdir -p``). Refused: ``path`` is an existing file (not
    a folder); an ancestor is a file; the nearest existing ancestor, or the folder itself,
    is not writable; ``path`` is one of ``inputs``.

    Example: ``check_output_dir(store_dir, inputs=(text_file,), option="-o/--output")``.
    """
    out = Path(path)
    for inp in _inputs(inputs):
        if _same(out, inp):
            raise ConfigError(f"{option} {path}: is the input {inp}; choose another output folder")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{option} {path}: is an existing file, not a folder; choose a folder name")
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
    """Yield a temporary name beside ``path`` to write to; on success it is renamed to
    ``path``, on any failure (an exception, Ctrl-C) it is removed, so ``path`` never holds a
    half-written file. The ``PATH.tmp-PID`` files of killed runs are removed first."""
    p = Path(path).absolute()
    sweep_stale_temporaries(p.parent, f"{glob.escape(p.name)}.tmp-*")
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
