"""Are the two sides of a job the same input? ``bimine mine X X``, ``align X X`` and
``docs match X X`` run to the end and write pairs of each line (or document) with itself,
which say nothing; ``eval retrieval`` said so first. Here, in ``text/``, because it looks at
files; each command prints the warning and carries on (copying a file to both sides can be a
deliberate smoke test)."""

from __future__ import annotations

import filecmp
import os
from collections.abc import Iterable

PathLike = str | os.PathLike


def same_file(a: PathLike, b: PathLike) -> bool:
    """True when ``a`` and ``b`` name the same file or folder (also through a link); False when
    either is missing, unreadable or ``-`` (stdin, which cannot be both sides' file anyway)."""
    if str(a) == "-" or str(b) == "-":
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def same_bytes(a: PathLike, b: PathLike) -> bool:
    """True when ``a`` and ``b`` are two regular files with the same bytes (a copy). Files of
    different sizes are told apart by one ``stat`` each; equal sizes are compared byte by byte,
    stopping at the first difference, so a translation is never read far."""
    try:
        if not (os.path.isfile(a) and os.path.isfile(b)) or os.path.getsize(a) != os.path.getsize(b):
            return False
        return filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def _stat(path: PathLike) -> os.stat_result | None:
    if str(path) == "-":
        return None
    try:
        return os.stat(path)
    except OSError:
        return None


def same_input_warning(src: PathLike | Iterable[PathLike], tgt: PathLike | Iterable[PathLike],
                       what: str) -> str | None:
    """A one-line warning when the source and target sides are the same input, or None.

    ``src`` / ``tgt``: a path or a list of paths (a side of many files: the first file that is
    also on the other side is named). ``what``: what the job then does, e.g. ``"every line pairs
    with itself"``. Reads as ``warning: a.txt and a.txt are the same file: every line pairs with
    itself; give the translation as the second input``. Each file is looked at once (one
    ``stat``); only files of equal sizes are compared byte by byte."""
    srcs = [src] if isinstance(src, (str, os.PathLike)) else list(src)
    tgts = [tgt] if isinstance(tgt, (str, os.PathLike)) else list(tgt)
    by_inode: dict[tuple[int, int], PathLike] = {}
    by_size: dict[int, list[PathLike]] = {}
    for b in tgts:
        st = _stat(b)
        if st is None:
            continue
        by_inode.setdefault((st.st_dev, st.st_ino), b)
        if os.path.isfile(b):
            by_size.setdefault(st.st_size, []).append(b)
    for a in srcs:
        st = _stat(a)
        if st is None:
            continue
        how, other = None, by_inode.get((st.st_dev, st.st_ino))
        if other is not None:
            how = "are the same file"
        elif os.path.isfile(a):
            other = next((b for b in by_size.get(st.st_size, []) if same_bytes(a, b)), None)
            how = "hold the same bytes" if other is not None else None
        if how:
            return f"warning: {a} and {other} {how}: {what}; give the translation as the second input"
    return None
