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

import atexit
import importlib
import logging
import os
import sys
import tempfile
import threading

log = logging.getLogger(__name__)


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


# Kernels loaded in the background (an encoder starts them as it loads: bimine.encoders.dan).
_WARMING: set = set()
_WARMING_LOCK = threading.Lock()


# Modules of the standard library that are imported child first in one thread while another
# thread imports their package: ``importlib.abc`` imports
# ``importlib.resources.abc`` (taking its lock, then the package's), while
# ``importlib.resources``'s own __init__ (taking the package's lock) imports ``.abc``. The
# import system then raises _DeadlockError in one of the threads (CPython gh-83065; Pythons
# before its fix, 3.11 here, lock a module before its package). A CI run of
# ``bimine embed`` failed so: sentencepiece imported importlib.readers in the main thread while
# the language check's thread imported importlib.metadata (to read py3langid's version).
_CHILD_FIRST_IMPORTS = ("importlib.abc", "importlib.resources", "importlib.readers", "importlib.metadata")


def import_before_thread(*modules: str) -> None:
    """Import ``modules``, and the standard library's modules of :data:`_CHILD_FIRST_IMPORTS`, in
    the calling thread: called before starting a thread that would import them while the caller
    goes on importing (see above). A module that fails to import is left to the thread's own
    import, which reports it where its work is reported."""
    for name in (*_CHILD_FIRST_IMPORTS, *modules):
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # e.g. an optional module missing or broken: the thread's own import reports it
                log.debug(f"{name} not imported before the thread", exc_info=True)


def import_blas_first() -> None:
    """Import ``scipy.linalg`` (package first) holding numba's compiler lock. numba sets up its CPU
    target on first use, under that lock, and ``numba.np.arraymath`` then imports
    ``scipy.linalg.cython_blas`` before its package (``_check_blas``): the same child-first order
    as above. A thread that does that while another imports ``scipy.optimize`` or ``scipy.stats``
    (whose packages import ``scipy.linalg``) can deadlock. Called at the start of the threads
    that may be the first to use numba (the kernels' warm-up, the trainer's feature thread); in
    the calling thread it would add ``scipy.linalg``'s import (~0.15 s) to every start-up."""
    if "scipy.linalg" in sys.modules:
        return
    try:
        from numba.core.compiler_lock import global_compiler_lock
    except ImportError:  # no numba: the NumPy path, nothing of numba's runs
        return
    with global_compiler_lock:
        try:
            importlib.import_module("scipy.linalg")
        except ImportError:  # no scipy: numba's own import says so where it matters
            pass


def in_background(fn, name: str, imports: tuple[str, ...] = ()) -> None:
    """Run ``fn()`` (loading or compiling kernels: nothing the caller waits for) in a thread. A
    failure is left to the first real call to raise (logged at debug level here). Every fork
    waits for these threads (a child must not inherit numba's compiler lock held by a thread it
    lacks), and so does the interpreter's exit (LLVM must not run while Python tears down). The
    standard library's modules that deadlock when imported from two threads, and ``imports`` (what
    the caller imports next, while the thread imports), are imported first
    (:func:`import_before_thread`)."""

    def run() -> None:
        try:
            import_blas_first()
            fn()
        except Exception:  # the same call in the real work raises it where the user sees it
            log.debug(f"{name} failed", exc_info=True)
        finally:
            with _WARMING_LOCK:
                _WARMING.discard(threading.current_thread())

    import_before_thread(*imports)
    t = threading.Thread(target=run, name=name, daemon=True)
    with _WARMING_LOCK:  # added once started, and before it can remove itself
        t.start()
        _WARMING.add(t)


def wait_for_background() -> None:
    """Wait for the threads of :func:`in_background`. Called before bimine forks its workers (so
    that Ctrl-C while waiting stops the command as usual), and by the fork and exit hooks."""
    with _WARMING_LOCK:
        threads = list(_WARMING)
    for t in threads:
        t.join()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=wait_for_background)
atexit.register(wait_for_background)
