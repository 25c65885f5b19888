"""Does the test suite's process exit cleanly, run after run? (issue 41: the README's test
command once died with signal 11 after pytest had printed its summary.)

Usage (from the repository root)::

    python -m benchmarks.suite_exits --runs 5 [--out .bench/suite_exits] [--json FILE] [--nice 10]
                                     [--env KEY=VALUE ...] [--stretch-exit-us 2000] [-- PYTEST ARGS...]

Runs ``python -X faulthandler -m pytest -q -p no:cacheprovider [PYTEST ARGS]`` (the README's
command, with faulthandler on so that a crash prints every thread's Python stack, and no
``.pytest_cache`` written between runs) ``--runs`` times in a row, each in a fresh
subprocess, and prints one row per run: the exit status, the signal that ended it (if any),
pytest's own counts from its last line, the seconds, and whether the log holds a
``Fatal Python error`` (faulthandler's report of a crash).

A run *exits cleanly* when no signal ended it and its exit status is the one pytest's summary
stands for (0 when nothing failed, 1 when tests failed; without a summary line, any of pytest's
own statuses 0-5): a red run caused by failing tests is still a clean exit, a crash after a
green summary is not.

``--env KEY=VALUE`` sets a variable for the runs (e.g. ``RAY_enable_open_telemetry=1`` runs the
suite without issue 41's fix: bimine only sets Ray's variable where it is unset).

``--stretch-exit-us N`` widens the window in which a crash at exit can happen, to find one in a
few runs instead of dozens: every C++ static destructor the pytest process runs at exit is
delayed by N microseconds (a small ``LD_PRELOAD`` library wrapping ``__cxa_atexit``, compiled
here with ``cc`` into OUT, armed by a pytest plugin when pytest is done; the subprocesses the
tests start are not slowed). A thread that outlives the work and wakes up while the libraries'
globals are being destroyed then meets them half-destroyed, as it does by chance in a plain
run. Each run's full output is kept in
``OUT/run<N>.log``; the table (markdown) ends with the count of clean exits and is also
written to ``OUT/table.md``, the rows to ``--json`` if given. The exit status of this script is
0 when every run exited cleanly, else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import machine_line

ROOT = Path(__file__).resolve().parents[1]
COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)")


def parse_summary(log: str) -> dict[str, int]:
    """pytest's counts from the last summary line of ``log`` (``3 failed, 859 passed, 1 skipped in
    ...``); empty when no summary was printed."""
    for line in reversed(log.splitlines()):
        if re.search(r"\bin [\d.]+s\b", line) and COUNT.search(line):
            counts: dict[str, int] = {}
            for n, what in COUNT.findall(line):
                counts["errors" if what.startswith("error") else what] = int(n)
            return counts
    return {}


STRETCH_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>
/* every function registered through __cxa_atexit (C++ static destructors) runs after a pause
   of `pause_us` once stretch_exit_arm() was called in this process */
typedef int (*cxa_fn)(void (*)(void *), void *, void *);
struct item { void (*f)(void *); void *arg; };
static unsigned pause_us;
static volatile int armed;
static void trampoline(void *p) {
    struct item *it = p;
    if (armed) usleep(pause_us);
    it->f(it->arg);
}
int __cxa_atexit(void (*f)(void *), void *arg, void *dso) {
    static cxa_fn real;
    if (!real) real = (cxa_fn)dlsym(RTLD_NEXT, "__cxa_atexit");
    struct item *it = malloc(sizeof *it);
    if (!it) return real(f, arg, dso);
    it->f = f; it->arg = arg;
    return real(trampoline, it, dso);
}
void stretch_exit_arm(unsigned us) { pause_us = us; armed = 1; }
"""

STRETCH_PLUGIN = """import ctypes, os

def pytest_unconfigure(config):
    ctypes.CDLL(os.environ["STRETCH_EXIT_LIB"]).stretch_exit_arm(int(os.environ["STRETCH_EXIT_US"]))
"""


def stretch_env(out: Path, us: int) -> dict[str, str]:
    """Build the exit-stretching library and plugin in ``out``; the variables that load them."""
    src, lib = out / "stretch_exit.c", out / "libstretch_exit.so"
    src.write_text(STRETCH_C, encoding="utf-8")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(src), "-ldl"], check=True)
    (out / "stretch_exit_plugin.py").write_text(STRETCH_PLUGIN, encoding="utf-8")
    path = os.pathsep.join(filter(None, [str(out), os.environ.get("PYTHONPATH")]))
    return {"LD_PRELOAD": str(lib), "STRETCH_EXIT_LIB": str(lib), "STRETCH_EXIT_US": str(us), "PYTHONPATH": path}


def run_once(i: int, out: Path, pytest_args: list[str], nice: int, env: dict[str, str] | None = None) -> dict:
    cmd = [sys.executable, "-X", "faulthandler", "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args]
    log_path = out / f"run{i}.log"
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                              preexec_fn=(lambda: os.nice(nice)) if nice else None)
    secs = time.monotonic() - t0
    text = log_path.read_text(encoding="utf-8", errors="replace")
    counts = parse_summary(text)
    rc = proc.returncode
    sig = -rc if rc < 0 else None
    if counts:  # the status pytest's summary stands for
        clean = sig is None and rc == (1 if counts.get("failed", 0) or counts.get("errors", 0) else 0)
    else:  # no summary (-qq, or pytest never got that far): pytest's own statuses 0-5 count as clean
        clean = sig is None and 0 <= rc <= 5
    return {"run": i, "exit_code": rc, "signal": signal.Signals(sig).name if sig else None,
            "counts": counts, "seconds": round(secs, 1), "fatal_error_in_log": "Fatal Python error" in text,
            "clean": clean, "log": str(log_path)}


def table(rows: list[dict]) -> str:
    lines = ["| run | exit status | signal | passed | failed | skipped | seconds | faulthandler report | clean exit |",
             "|---:|---:|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        c = r["counts"]
        lines.append(f"| {r['run']} | {r['exit_code']} | {r['signal'] or '-'} | {c.get('passed', '-')} | "
                     f"{c.get('failed', 0) + c.get('errors', 0)} | {c.get('skipped', 0)} | {r['seconds']:.0f} | "
                     f"{'yes' if r['fatal_error_in_log'] else 'no'} | {'yes' if r['clean'] else '**no**'} |")
    clean = sum(r["clean"] for r in rows)
    lines.append("")
    lines.append(f"Clean exits: {clean} of {len(rows)}")
    return "\n".join(lines)


def machine() -> str:
    return machine_line() + f", Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", type=Path, default=ROOT / ".bench" / "suite_exits", help="folder of the runs' logs")
    p.add_argument("--json", type=Path, help="also write the rows here")
    p.add_argument("--nice", type=int, default=0, help="run pytest at this niceness (a shared machine)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="a variable for the runs")
    p.add_argument("--stretch-exit-us", type=int, default=0, metavar="N",
                   help="delay each C++ static destructor of the pytest process by N us at exit (see above)")
    p.add_argument("pytest_args", nargs="*", help="after --: extra arguments for pytest (default: none, the whole suite)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    env = dict(kv.split("=", 1) for kv in args.env)
    pytest_args = list(args.pytest_args)
    if args.stretch_exit_us:
        env.update(stretch_env(args.out, args.stretch_exit_us))
        pytest_args = ["-p", "stretch_exit_plugin", *pytest_args]
    shown = {k: v for k, v in env.items() if k not in ("LD_PRELOAD", "STRETCH_EXIT_LIB", "PYTHONPATH")}
    cmd = " ".join([*(f"{k}={v}" for k, v in shown.items()),
                    "python -X faulthandler -m pytest -q -p no:cacheprovider", *pytest_args])
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; {machine()}", flush=True)
    print(f"# {args.runs} runs of: {cmd}", flush=True)
    rows = []
    for i in range(1, args.runs + 1):
        r = run_once(i, args.out, pytest_args, args.nice, env)
        rows.append(r)
        print(f"run {i}: exit {r['exit_code']}{' (' + r['signal'] + ')' if r['signal'] else ''}, {r['counts']}, "
              f"{r['seconds']:.0f} s{'' if r['clean'] else ', NOT clean'}", flush=True)
    md = table(rows)
    print()
    print(md)
    (args.out / "table.md").write_text(md + "\n", encoding="utf-8")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"command": cmd, "machine": machine(), "runs": rows}, indent=1) + "\n",
                             encoding="utf-8")
    return 0 if all(r["clean"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
