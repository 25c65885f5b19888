"""Arrays derived from something slow to load or build (py3langid's model, Unicode tables),
kept on disk so that each ``bimine filter`` process does not pay for them again.

A cache file holds the arrays and the full description of what they were derived from
(``key``: versions, the source file's hash, the builder's version); it is used only when that
description is the same, so a stale file is rebuilt, never used for a different source. The
folder is ``$BIMINE_CACHE_DIR``, else ``$XDG_CACHE_HOME/bimine``, else ``~/.cache/bimine``;
``BIMINE_CACHE_DIR=off`` turns the cache off. A folder that cannot be written only costs the
rebuild. Files are written to a temporary name and renamed; NumPy ``.npz`` without pickle.
"""

from __future__ import annotations

import hashlib
import os
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
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def cached_arrays(name: str, key: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The arrays ``build()`` returns, from ``<cache>/<name>-<hash of key>.npz`` when that file
    was written for exactly ``key``; otherwise built and (best effort) written there."""
    folder = cache_dir()
    path = None
    if folder is not None:
        path = os.path.join(folder, f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:20]}.npz")
        try:
            with np.load(path, allow_pickle=False) as z:
                if "__key__" in z.files and z["__key__"].tobytes().decode("utf-8") == key:
                    return {k: z[k] for k in z.files if k != "__key__"}
        except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError):
            pass  # missing, unreadable or not ours: rebuild
    arrays = build()
    if path is not None:
        tmp = f"{path}.tmp-{os.getpid()}"
        try:
            os.makedirs(folder, exist_ok=True)
            with open(tmp, "wb") as f:
                np.savez(f, __key__=np.frombuffer(key.encode("utf-8"), dtype=np.uint8), **arrays)
            os.replace(tmp, path)
        except OSError:
            try:
                os.remove(tmp)
            except OSError:
                pass
    return arrays
