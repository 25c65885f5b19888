"""Where numba keeps the machine code of bimine's compiled kernels: a per-user cache folder,
never inside the installed package.

numba's default (``cache=True`` with no ``NUMBA_CACHE_DIR``) writes ``*.nbi``/``*.nbc`` files
into ``__pycache__`` beside each kernel's source, when that folder is writable. In an installed
package those files are not in the wheel's RECORD, so ``pip uninstall`` leaves
``site-packages/bimine/.../__pycache__`` behind; the leftover ``bimine`` folder is then a
namespace package that shadows a later editable install (``ImportError: cannot import name
'__version__' from 'bimine' (unknown location)``, issue 55).

:func:`use_user_cache` points numba at ``$XDG_CACHE_HOME/bimine/numba`` (``~/.cache/...``), or
a folder in TMPDIR where the home folder is not writable; a ``NUMBA_CACHE_DIR`` the user set is
kept. numba names each cache file after the kernel's full source path, so two installs of
bimine do not share entries. ``bimine/__init__.py`` calls it, before any kernel is compiled.
"""

from __future__ import annotations

import os
import sys
import tempfile


def user_cache_dir(name: str = "numba") -> str:
    """A per-user cache folder of bimine (created if missing): the first of
    ``$XDG_CACHE_HOME/bimine/NAME``, ``~/.cache/bimine/NAME`` and ``TMPDIR/bimine-NAME-cache-UID``
    that can be written. ``numba``: numba's cache of bimine's kernels; ``e5``: e5-small's ONNX
    graphs (:mod:`bimine.encoders.e5_onnx`)."""
    bases = []
    if os.environ.get("XDG_CACHE_HOME"):
        bases.append(os.path.join(os.environ["XDG_CACHE_HOME"], "bimine", name))
    bases.append(os.path.join(os.path.expanduser("~"), ".cache", "bimine", name))
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    bases.append(os.path.join(tempfile.gettempdir(), f"bimine-{name}-cache-{uid}"))
    for folder in bases:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK | os.X_OK):
            return folder
    return bases[-1]  # nothing writable: numba falls back to its own locations


def use_user_cache() -> str:
    """Set ``NUMBA_CACHE_DIR`` (unless the user did) to :func:`user_cache_dir`, also in an
    already imported numba, and return the folder in use."""
    folder = os.environ.get("NUMBA_CACHE_DIR") or user_cache_dir()
    os.environ["NUMBA_CACHE_DIR"] = folder  # read by numba on import and on each config reload; inherited by workers
    config = sys.modules.get("numba.core.config")
    if config is not None and not getattr(config, "CACHE_DIR", ""):
        config.CACHE_DIR = folder
    return folder
