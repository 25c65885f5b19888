"""Mining N x N lines with the local and the Ray executor on this machine: same output? Ray's
overhead? And the per-stage constants the cost model of docs/distributed.md is built from.

Usage: python -m benchmarks.ray_mine --n 2000000 [--shard-size 1000000] [--data ../shared/data] [--out .bench/ray]

Sentences: the same sides as ``benchmarks.mining_scale`` (A: English and French lines of the
training pairs then Bible matrix files a-k; B: German and Spanish, then files l-z; first N
distinct lines of each). The training data has 2.45M distinct lines in all, so a side of
more lines than its own files hold continues with the other side's files: at N = 2M the
sides share lines (printed and recorded; the search does the same work per query, but the
shared lines are mined as exact copies). Each executor runs ``bimine mine A B`` in a fresh process without a
work dir (the Ray run starts its own local cluster, as a user without one gets), timed from
outside: whole-process wall time, start-up included. Every 0.5 s the benchmark sums the
resident memory of the command's process tree (driver, Ray's services and workers) and notes
the largest single Ray worker. Each finished run is kept in ``OUT/results.json`` with the
commit it measured, so a session that ends between the two runs resumes with the second.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time


def commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "bimine"], capture_output=True, text=True).stdout
        return out.stdout.strip() + ("+dirty" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


class TreeMemory:
    """Peak of the summed RSS of a process and its descendants, and of the largest Ray worker."""

    def __init__(self, pid: int, every: float = 0.5) -> None:
        self.pid, self.every = pid, every
        self.peak_total = self.peak_worker = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        try:
            root = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return
        while not self._stop.is_set():
            total = 0
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                break
            for p in procs:
                try:
                    rss = p.memory_info().rss
                    total += rss
                    if p.name().startswith("ray::"):
                        self.peak_worker = max(self.peak_worker, rss)
                except psutil.Error:
                    pass
            self.peak_total = max(self.peak_total, total)
            self._stop.wait(self.every)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return {"tree_peak_rss_mb": round(self.peak_total / 2**20), "ray_worker_peak_rss_mb": round(self.peak_worker / 2**20)}


def run(executor: str, fa: str, fb: str, out: str, shard_size: int) -> dict:
    cmd = [sys.executable, "-m", "bimine", "mine", fa, fb, "--src-lang", "en", "--tgt-lang", "de", "-o", out,
           "--shard-size", str(shard_size), "--no-progress"]
    if executor == "ray":
        cmd += ["--executor", "ray"]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # a cluster started for the run
    t = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    mem = TreeMemory(p.pid)
    _, err = p.communicate()
    wall = time.time() - t
    memory = mem.stop()
    if p.returncode:
        raise SystemExit(err)
    with open(out, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    res = {"executor": executor, "wall_s": round(wall, 1), **memory,
           "driver_peak_rss_mb": float(re.search(r"peak memory (\d+) MB", err).group(1)),
           "steps": re.search(r"time: (.*); peak", err).group(1),
           "index": re.search(r"index: ([^;]*);", err).group(1),
           "pairs": int(re.search(r"(\d+) pairs written", err).group(1)), "sha256": digest}
    m = re.search(r"ray kNN \(both directions\): (.*)", err)
    if m:
        res["ray_knn"] = m.group(1)
    return res


def main() -> None:
    from benchmarks.mining_scale import collect

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--shard-size", type=int, default=1_000_000)
    ap.add_argument("--executors", nargs="+", default=["local", "ray"], choices=["local", "ray"])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--out", default=".bench/ray")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    fa, fb = (os.path.join(args.out, f"{s}.{args.n}.txt") for s in "ab")
    side_a = ["train/*/*.en-*.en.gz", "train/*/*.en-fr.fr.gz", "train/bible-sword/pairs/*.en.gz",
              "train/bible-sword/matrix/[a-k]*.txt.gz"]
    side_b = ["train/*/*.en-de.de.gz", "train/*/*.en-es.es.gz", "train/bible-sword/pairs/*.de.gz",
              "train/bible-sword/pairs/*.es.gz", "train/bible-sword/matrix/[l-z]*.txt.gz"]
    # the training data holds 2.45M distinct lines in all: a side larger than its own part
    # continues with the other side's files, so the sides then share lines (counted below)
    for path, pats in ((fa, side_a + side_b), (fb, side_b + side_a)):
        if not os.path.exists(path):
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write("\n".join(collect(args.data, pats, args.n)) + "\n")
            os.replace(path + ".tmp", path)
    with open(fa, encoding="utf-8") as f:
        shared = set(f.read().splitlines())
    with open(fb, encoding="utf-8") as f:
        shared = len(shared.intersection(f.read().splitlines()))
    print(f"{args.n:,} distinct lines a side; {shared:,} lines are on both sides", flush=True)
    res_file = os.path.join(args.out, "results.json")
    results = json.load(open(res_file)) if os.path.exists(res_file) else []
    code = commit()
    for ex in args.executors:
        key = {"n": args.n, "shard_size": args.shard_size, "executor": ex, "commit": code}
        if any(all(r.get(k) == v for k, v in key.items()) for r in results):
            print(f"{ex}: measured already at {code}", flush=True)
            continue
        r = {**key, "date": time.strftime("%Y-%m-%d %H:%M"), "lines_on_both_sides": shared,
             **run(ex, fa, fb, os.path.join(args.out, f"pairs.{args.n}.{ex}.tsv"), args.shard_size)}
        results.append(r)
        with open(res_file + ".tmp", "w") as f:
            json.dump(results, f, indent=1)
        os.replace(res_file + ".tmp", res_file)
        print(json.dumps(r), flush=True)
    done = {r["executor"]: r for r in results if r["n"] == args.n and r["shard_size"] == args.shard_size
            and r["commit"] == code}
    if {"local", "ray"} <= done.keys():
        loc, ray = done["local"], done["ray"]
        print(f"same output: {loc['sha256'] == ray['sha256']}; Ray's overhead "
              f"{100 * (ray['wall_s'] - loc['wall_s']) / loc['wall_s']:+.1f}% ({loc['wall_s']} s local, "
              f"{ray['wall_s']} s ray)", flush=True)


if __name__ == "__main__":
    main()
