"""What every benchmark script repeats, in one place: its arguments, the machine it ran on,
timing a whole process (wall, CPU, peak memory) or a call in this process, the peer run beside
ours, Markdown tables, and the JSON it leaves behind.

A script keeps only its experiment::

    from benchmarks.harness import Bench

    def main():
        b = Bench("align_speed", __doc__)
        b.arg("--repeat", type=int, default=3)
        args = b.parse()                      # adds --json (default .bench/<name>.json)
        row = b.process(["bimine", "align", ...], repeat=args.repeat)
        b.rows.append({"tool": "bimine", **row})
        print(b.table(["tool", "wall_s", "cpu_s", "peak_rss_mb"]))
        b.save()                              # machine, command, date and rows, atomically

``process`` times a command as a user sees it (start-up included) in a fresh child, so its
peak memory is its own; ``timed`` times a call in this process. Keep the two apart in the
docs (whole-process against in-process figures).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# a child that runs the command and reports its own resource use (a fresh process each time,
# so RUSAGE_CHILDREN holds that command alone)
_CHILD = (
    "import json, resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[2:], cwd=sys.argv[1] or None, capture_output=True, text=True)\n"
    "wall = time.perf_counter() - t\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(json.dumps({'rc': p.returncode, 'wall_s': wall, 'cpu_s': r.ru_utime + r.ru_stime,\n"
    "                  'peak_rss_mb': r.ru_maxrss / 1024, 'stdout': p.stdout, 'stderr': p.stderr}))\n"
)


def machine(busy: bool = True) -> dict:
    """The CPU model, cores, memory, Python, load and (``busy``) how busy the CPUs were in the
    second before."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        mem = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        mem = None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info = {"cpu": cpu, "cores": cores, "memory_gb": mem, "python": platform.python_version(),
            "platform": platform.platform(), "load_1min": round(os.getloadavg()[0], 2)}
    if busy:
        info["busy_before"] = cpu_busy(1.0)
    return info


def machine_line(info: dict | None = None) -> str:
    """The machine in one line: ``CPU, 2 CPUs, 24 GiB, load 0.31``."""
    m = info or machine(busy=False)
    mem = f", {m['memory_gb']:.0f} GiB" if m.get("memory_gb") else ""
    return f"{m['cpu']}, {m['cores']} CPUs{mem}, load {m['load_1min']:.2f}"


def cpu_busy(seconds: float = 5.0) -> float | None:
    """Share of all CPUs busy (any process) over ``seconds``, from /proc/stat (None elsewhere)."""

    def snap():
        with open("/proc/stat") as f:
            v = list(map(int, f.readline().split()[1:]))
        return sum(v), v[3] + v[4]

    try:
        t0, i0 = snap()
        time.sleep(seconds)
        t1, i1 = snap()
    except OSError:
        return None
    return round(1 - (i1 - i0) / max(t1 - t0, 1), 3)


def git_revision(path: str = ".") -> str | None:
    r = subprocess.run(["git", "-C", path, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or None


def shown(cmd: Sequence[str]) -> str:
    """A command as a user would type it."""
    return shlex.join([os.path.basename(c) if i == 0 and c == sys.executable else c for i, c in enumerate(cmd)])


def process(cmd: Sequence[str], *, repeat: int = 1, cwd: str | None = None, env: dict | None = None,
            check: bool = True) -> dict:
    """Run ``cmd`` ``repeat`` times, each in a fresh child: wall seconds (median and min), CPU
    seconds and peak resident memory (of the median run), and the last run's output. ``check``:
    a failing run stops the benchmark with its stderr."""
    runs = []
    for _ in range(repeat):
        p = subprocess.run([sys.executable, "-c", _CHILD, cwd or "", *cmd], capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise SystemExit(f"benchmark harness failed to run {shown(cmd)}:\n{p.stderr[-2000:]}")
        r = json.loads(p.stdout)
        if check and r["rc"] != 0:
            raise SystemExit(f"failed (exit {r['rc']}): {shown(cmd)}\n{r['stderr'][-2000:]}")
        runs.append(r)
    walls = [r["wall_s"] for r in runs]
    mid = runs[walls.index(sorted(walls)[(len(walls) - 1) // 2])]
    return {"command": shown(cmd), "runs": repeat, "wall_s": round(statistics.median(walls), 3),
            "wall_min_s": round(min(walls), 3), "cpu_s": round(mid["cpu_s"], 3),
            "peak_rss_mb": round(mid["peak_rss_mb"], 1), "rc": mid["rc"], "stdout": mid["stdout"], "stderr": mid["stderr"]}


def timed(fn: Callable[[], Any], *, repeat: int = 1) -> tuple[Any, dict]:
    """Call ``fn`` ``repeat`` times in this process: its last result, and wall seconds (median,
    min) with the process's CPU seconds of the median call."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    i = walls.index(sorted(walls)[(len(walls) - 1) // 2])
    return out, {"runs": repeat, "wall_s": round(walls[i], 4), "wall_min_s": round(min(walls), 4),
                 "cpu_s": round(cpus[i], 4)}


def table(rows: list[dict], columns: Sequence[str], headers: Sequence[str] | None = None,
          formats: dict[str, str] | None = None) -> str:
    """A Markdown table of ``rows`` (dicts) with ``columns``; ``formats`` maps a column to a
    format spec (``",.0f"``); a missing value prints as ``-``."""
    formats = formats or {}

    def cell(row, c):
        v = row.get(c)
        if v is None:
            return "-"
        if c in formats and isinstance(v, (int, float)):
            return format(v, formats[c])
        return str(v)

    head = list(headers or columns)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(r, c) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def write_json(path: str, obj: Any) -> None:
    """``obj`` as indented JSON at ``path``, written to a temporary name and renamed."""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


class Bench:
    """One benchmark run: its arguments (``--json`` added), the machine, the command line,
    the date, and its result rows, saved together by :meth:`save`."""

    def __init__(self, name: str, doc: str | None = None, *, json_default: str | None = None) -> None:
        self.name = name
        self.parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{name}", description=doc or None,
                                              formatter_class=argparse.RawDescriptionHelpFormatter)
        self.parser.add_argument("--json", default=json_default or f".bench/{name}.json",
                                 help="where the results go (default: %(default)s)")
        self.rows: list[dict] = []
        self.extra: dict[str, Any] = {}
        self.args: argparse.Namespace | None = None
        self.started = time.time()

    def arg(self, *names: str, **kw) -> None:
        self.parser.add_argument(*names, **kw)

    def parse(self, argv: list[str] | None = None) -> argparse.Namespace:
        self.args = self.parser.parse_args(argv)
        self.machine = machine()
        self.command = "python -m benchmarks." + self.name + "".join(" " + shlex.quote(a) for a in
                                                                       (sys.argv[1:] if argv is None else argv))
        return self.args

    process = staticmethod(process)
    timed = staticmethod(timed)
    table = staticmethod(table)

    def result(self) -> dict:
        return {"benchmark": self.name, "command": self.command,
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.started)),
                "seconds": round(time.time() - self.started, 1), "revision": git_revision(),
                "machine": self.machine, **self.extra, "rows": self.rows}

    def save(self) -> dict:
        res = self.result()
        write_json(self.args.json, res)
        print(f"[{self.name}] results in {self.args.json}", file=sys.stderr)
        return res


# --------------------------------------------------------------- a process tree, sampled


def _tree(root: int) -> list[int]:
    """``root`` and its descendants (from /proc/*/stat)."""
    parent: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    stat = f.read()
                parent[int(d)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError):
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += [c for c, pp in parent.items() if pp == p]
    return out


def _pss_mb(pids: list[int]) -> float:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total / 1024


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs so far (/proc/stat)."""
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:]))
    return sum(v) - v[3] - v[4], sum(v)


def measure_tree(cmd: list[str], *, env: dict | None = None, cwd: str | None = None, log: str) -> dict:
    """One run of ``cmd``: wall and CPU seconds (the process and every descendant it waited
    for), peak summed PSS of the process tree, exit status, and the CPU seconds the rest of
    the machine used meanwhile (``others_cpu``: busy time of all CPUs less this run's and
    this script's); stderr goes to ``log``."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s0 = resource.getrusage(resource.RUSAGE_SELF)
    b0, _ = _cpu_ticks()
    t0 = time.perf_counter()
    peak = 0.0
    with open(log, "w") as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd)
        while p.poll() is None:  # sampling costs CPU (a /proc scan): every 0.1 s, then every 0.5 s
            peak = max(peak, _pss_mb(_tree(p.pid)))
            time.sleep(0.1 if time.perf_counter() - t0 < 3 else 0.5)
    wall = time.perf_counter() - t0
    b1, _ = _cpu_ticks()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    mine = (s1.ru_utime - s0.ru_utime) + (s1.ru_stime - s0.ru_stime)
    others = max(0.0, (b1 - b0) / os.sysconf("SC_CLK_TCK") - cpu - mine)
    with open(log, encoding="utf-8", errors="replace") as f:
        text = f.read()
    timings = {}
    for line in text.splitlines():
        if line.startswith("timings (s): "):
            for part in line[len("timings (s): "):].split(", "):
                k, _, v = part.rpartition(" ")
                timings[k] = float(v)
    return {"wall": wall, "cpu": cpu, "others_cpu": others, "peak_mb": peak, "rc": p.returncode, "timings": timings,
            "stderr_tail": text[-1500:] if p.returncode else ""}


def repeat_tree(cmd: list[str], times: int, **kw) -> dict:
    runs = [measure_tree(cmd, **kw) for _ in range(times)]
    ok = [r for r in runs if r["rc"] == 0]
    if not ok:
        return {"error": runs[-1]["stderr_tail"] or f"exit status {runs[-1]['rc']}", "runs": len(runs)}
    walls = [r["wall"] for r in ok]
    return {"runs": len(ok), "wall_median": statistics.median(walls), "wall_min": min(walls),
            "walls": [round(w, 2) for w in walls], "cpu_median": statistics.median(r["cpu"] for r in ok),
            "others_share": statistics.median(r["others_cpu"] / (r["wall"] * (os.cpu_count() or 1)) for r in ok),
            "peak_mb": max(r["peak_mb"] for r in ok), "timings": ok[len(ok) // 2]["timings"]}


def machine_versions() -> dict:
    """The machine (:func:`machine`) and the versions of the libraries a speed depends on, the
    commit measured and whether bimine's tree had uncommitted changes."""
    import importlib.metadata as md

    info = machine(busy=False)

    info["versions"] = {d: md.version(d) for d in ("numpy", "numba", "py3langid", "faiss-cpu") if _has(d)}
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO_ROOT)
    info["commit"] = r.stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "bimine"], capture_output=True, text=True, cwd=REPO_ROOT)
    info["bimine_tree_clean"] = not dirty.stdout.strip()
    return info


def _has(dist: str) -> bool:
    import importlib.metadata as md

    try:
        md.version(dist)
        return True
    except md.PackageNotFoundError:
        return False
