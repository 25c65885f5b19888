"""What bimine's background threads import while the main thread goes on importing.

Python (3.11 here) can raise ``_DeadlockError`` when two threads import at once and one of them
imports a module before its package (CPython gh-83065): a CI run of ``bimine embed`` on a gzip
file failed so, the language check's thread importing ``importlib.metadata`` (and with it
``importlib.abc`` -> ``importlib.resources.abc``) while the main thread's sentencepiece imported
``importlib.readers`` -> ``importlib.resources.readers``. The import order is a race, so instead
of hoping to hit it these tests record, under a meta-path hook, which thread imports each module,
and check that the threads leave such imports to the main thread. numba's first use imports
``scipy.linalg.cython_blas`` before ``scipy.linalg`` (under its compiler lock): the tests also
check that ``scipy.linalg`` is first imported package first, by ``jitcache.import_blas_first``.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EN, FR = ROOT / "examples" / "sample.en", ROOT / "examples" / "sample.fr"

# runs bimine's CLI with a finder first on sys.meta_path that records (thread, module) for every
# module imported, and (thread, None) for every thread started; writes them to $TRACE at exit
TRACER = """
import atexit, json, os, runpy, sys, threading
events = []
start = threading.Thread.start
def recorded_start(self):
    events.append((self.name, None))
    start(self)
threading.Thread.start = recorded_start
blas = []
class Recorder:
    def find_spec(self, name, path=None, target=None):
        events.append((threading.current_thread().name, name))
        if name == "scipy.linalg":  # who imports it first: numba's child-first ensure_blas or a package import
            blas.append([f.name for f in __import__("traceback").extract_stack()])
        return None
sys.meta_path.insert(0, Recorder())
atexit.register(lambda: json.dump({"events": events, "blas": blas}, open(os.environ["TRACE"], "w")))
sys.argv = ["bimine", *sys.argv[1:]]
runpy.run_module("bimine", run_name="__main__", alter_sys=True)
"""


def _imports_by_thread(tmp_path: Path, *args) -> tuple[dict[str, list[str]], list[list[str]]]:
    (tmp_path / "tracer.py").write_text(TRACER)
    trace = tmp_path / "trace.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BIMINE_PROGRESS": "0", "TRACE": str(trace)}
    r = subprocess.run([sys.executable, str(tmp_path / "tracer.py"), *map(str, args)], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    found: dict[str, list[str]] = {}
    trace = json.loads(trace.read_text())
    for thread, module in trace["events"]:
        found.setdefault(thread, [])
        if module is not None:
            found[thread].append(module)
    return found, trace["blas"]


@pytest.mark.parametrize("command", ["embed", "mine"])
def test_background_threads_leave_the_deadlocking_imports_to_the_main_thread(tmp_path, command):
    if command == "embed":  # the failed CI run's command
        (tmp_path / "s.en.gz").write_bytes(gzip.compress(EN.read_bytes()))
        args = ["embed", tmp_path / "s.en.gz", "--lang", "en", "-o", tmp_path / "s.npy"]
    else:
        args = ["mine", EN, FR, "-o", tmp_path / "pairs.tsv"]
    found, blas = _imports_by_thread(tmp_path, *args)
    background = {t: m for t, m in found.items() if t != "MainThread"}
    # the language check ran and the encoder warmed its kernels in threads, and the test saw them
    assert "bimine-language-check" in background and "bimine-warm-up" in background, sorted(background)
    for thread, modules in background.items():
        assert not [m for m in modules if m.split(".")[0] == "importlib"], (thread, modules)
    # what the check needs is imported before its thread starts: the thread only reads data
    assert background["bimine-language-check"] == [], background["bimine-language-check"]
    # numba's first use imports scipy.linalg.cython_blas before its package (numba.np.arraymath's
    # _check_blas): scipy.linalg is imported first by the warm-up, package first (import_blas_first)
    assert blas and "ensure_blas" not in blas[0] and "import_blas_first" in blas[0], blas[:1]
