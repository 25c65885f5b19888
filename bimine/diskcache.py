"""Arrays derived from something slow to load or build (py3langid's model for the filter's
compiled walk and, uncompressed, for the file language check; Unicode tables), kept on disk so
that each ``bimine`` process does not pay for them again.

An entry is a folder ``<name>-<hash of key>`` holding one ``.npy`` file per array and
``key.txt``, the full description of what the arrays were derived from (versions, the source
file's SHA-256, the builder's layout version). It is used only when ``key.txt`` holds exactly
that description, so a stale entry is rebuilt, never used for a different source. Arrays are
memory-mapped read-only: a process reads only the pages it touches, and processes share them.

The folder is ``$BIMINE_CACHE_DIR``, else ``$XDG_CACHE_HOME/bimine``, else
``~/.cache/bimine``; ``BIMINE_CACHE_DIR=off`` turns the cache off. A folder that cannot be
written only costs the rebuild. An entry is written under a temporary name and renamed when
complete (a temporary left by a writer that was killed is removed by the next writer of that
entry once it is an hour old); plain ``.npy`` files, never pickle.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import time
from collections.abc import Callable

import numpy as np


def cache_dir() -> str | None:
    d = os.environ.get("BIMINE_CACHE_DIR")
    if d == "off":
        return None
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "bimine")


def file_digest(path: str) -> str:
    """SHA-256 of a file's bytes (the identity of a model file in a cache key)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _load(entry: str, key: str) -> dict[str, np.ndarray] | None:
    try:
        with open(os.path.join(entry, "key.txt"), encoding="utf-8") as f:
            if f.read() != key:
                return None
        names = sorted(n[:-4] for n in os.listdir(entry) if n.endswith(".npy"))
        return {n: np.load(os.path.join(entry, f"{n}.npy"), mmap_mode="r", allow_pickle=False) for n in names}
    except (OSError, ValueError, UnicodeDecodeError):
        return None  # missing, unreadable or cut short: rebuilt


def cached_arrays(name: str, key: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The arrays ``build()`` returns (read-only memory maps when they come from the cache):
    from the entry written for exactly ``key`` when there is one, otherwise built and (best
    effort) written."""
    folder = cache_dir()
    if folder is None:
        return build()
    entry = os.path.join(folder, f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:20]}")
    found = _load(entry, key)
    if found is not None:
        return found
    arrays = build()
    for old in glob.glob(glob.escape(entry) + ".tmp-*"):  # what killed writers left
        try:
            if time.time() - os.path.getmtime(old) > 3600:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:  # another process swept it first
            pass
    tmp = f"{entry}.tmp-{os.getpid()}"
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        for k, a in arrays.items():
            np.save(os.path.join(tmp, f"{k}.npy"), np.ascontiguousarray(a), allow_pickle=False)
        with open(os.path.join(tmp, "key.txt"), "w", encoding="utf-8") as f:
            f.write(key)  # last: an entry without its key is never used
        if os.path.isdir(entry):  # stale or broken (a matching one was loaded above)
            shutil.rmtree(entry, ignore_errors=True)
        os.rename(tmp, entry)
    except OSError:
        pass  # read-only or full: the arrays are used uncached; another process may have won the race
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return arrays
