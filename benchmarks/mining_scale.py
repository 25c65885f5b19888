"""Time and peak memory of mining N x N sentences, and recall@k of the approximate index.

Usage: python -m benchmarks.mining_scale --n 10000 100000 1000000 [--data ../shared/data] [--out .bench/scale]

Sentences: side A = distinct English and French lines of the training pairs, then the Bible
matrix's files a-k; side B = distinct German and Spanish lines, then the matrix's files l-z
(verse references excluded); in file order, first N of each (so the sides contain real
translations and much unrelated text; the training data gives about 1.08M per side). For each N:

1. end-to-end from text: ``bimine mine A B --work-dir W`` in a fresh process (embedding included);
2. from embeddings: ``bimine mine A B --src-store W/src-*.store --tgt-store W/tgt-*.store`` again
   (the stores run 1 kept in its work dir);
3. recall@4 of the kNN lists that run 1 kept in its work dir (both directions, 2,000 random
   queries each) against exact search.

Each run's wall time and peak RSS come from the mine command's own summary.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import re
import subprocess
import sys

import numpy as np

from benchmarks.harness import process, write_json


def collect(data: str, patterns: list[str], n: int) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for pat in patterns:
        for path in sorted(glob.glob(os.path.join(data, pat))):
            if os.path.basename(path).startswith("vref"):
                continue
            with gzip.open(path, "rt", encoding="utf-8") as f:
                for line in f:
                    s = line.rstrip("\n")
                    if s.strip() and s not in seen:
                        seen.add(s)
                        out.append(s)
                        if len(out) == n:
                            return out
    raise SystemExit(f"only {len(out)} distinct lines for {patterns}; lower --n")


def scale_inputs(data: str, out: str, sizes: list[int]):
    """For each N of ``sizes`` (ascending): the two sides written to ``out`` (N distinct lines
    each of the training data: English and French against German and Spanish, then Bible
    files) and an empty work folder; yields ``(n, side_a, side_b, work)``."""
    os.makedirs(out, exist_ok=True)
    side_a = ["train/*/*.en-*.en.gz", "train/*/*.en-fr.fr.gz", "train/bible-sword/pairs/*.en.gz",
              "train/bible-sword/matrix/[a-k]*.txt.gz"]
    side_b = ["train/*/*.en-de.de.gz", "train/*/*.en-es.es.gz", "train/bible-sword/pairs/*.de.gz",
              "train/bible-sword/pairs/*.es.gz", "train/bible-sword/matrix/[l-z]*.txt.gz"]
    nmax = max(sizes)
    a, b = collect(data, side_a, nmax), collect(data, side_b, nmax)
    for n in sorted(sizes):
        fa, fb = os.path.join(out, f"a.{n}.txt"), os.path.join(out, f"b.{n}.txt")
        for path, lines in ((fa, a[:n]), (fb, b[:n])):
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
        work = os.path.join(out, f"work.{n}")
        subprocess.run(["rm", "-rf", work])
        yield n, fa, fb, work


def run_mine(args: list[str]) -> dict:
    p = process([sys.executable, "-m", "bimine", "mine", *args, "--no-progress"])
    err = p["stderr"]
    peak = float(re.search(r"peak memory (\d+) MB", err).group(1))
    steps = re.search(r"time: (.*); peak", err).group(1)
    index = re.search(r"index: ([^;]*);", err).group(1)
    out = {"wall_s": round(p["wall_s"], 1), "peak_rss_mb": peak, "steps": steps, "index": index,
           "pairs": int(re.search(r"(\d+) pairs written", err).group(1))}
    cross = re.search(r"rescored: (\d+) pairs by the trees, (\d+) of them also by the cross-encoder", err)
    if cross:
        out["rescored"], out["cross_pairs"] = int(cross.group(1)), int(cross.group(2))
    return out


def work_store(work: str, side: str) -> str:
    """The store a mining run kept in its work dir for one side (named by a hash of its input)."""
    (path,) = glob.glob(os.path.join(work, f"{side}-*.store"))
    return path


def recall(work: str, k: int, n_queries: int) -> dict:
    """recall@k of the kNN lists the end-to-end run kept in its work dir, for random queries of
    each direction, against exact search over the same stores."""
    from benchmarks.common import recall_at_k
    from bimine.mining.knn import knn_exact
    from bimine.store import EmbeddingStore

    a = EmbeddingStore.open(work_store(work, "src"))
    b = EmbeddingStore.open(work_store(work, "tgt"))
    assert not len(a.blank_lines()) and not len(b.blank_lines())  # so kNN ids are row numbers
    a, b = a.load().astype(np.float32), b.load().astype(np.float32)
    out = {"queries": n_queries}
    for name, q, keys in (("fwd", a, b), ("bwd", b, a)):
        (path,) = glob.glob(os.path.join(work, f"knn-{name}-*.npz"))
        ids = np.load(path)["ids"]
        qi = np.sort(np.random.default_rng(0).choice(len(q), size=min(n_queries, len(q)), replace=False))
        _, exact = knn_exact(q[qi], keys, k)
        out[f"recall@{k} {name}"] = round(recall_at_k(ids[qi], exact, k), 4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[10000, 100000, 1000000])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--out", default=".bench/scale")
    ap.add_argument("--nprobe", type=int, default=0, help="0 = the index default (3/32 of the lists)")
    args = ap.parse_args()
    results = []
    for n, fa, fb, work in scale_inputs(args.data, args.out, args.n):
        common = [fa, fb, "--src-lang", "en", "--tgt-lang", "de", "--nprobe", str(args.nprobe)]
        e2e = run_mine([*common, "-o", os.path.join(args.out, f"pairs.{n}.tsv"), "--work-dir", work])
        emb = run_mine([*common, "-o", os.path.join(args.out, f"pairs2.{n}.tsv"),
                        "--src-store", work_store(work, "src"), "--tgt-store", work_store(work, "tgt")])
        rec = recall(work, 4, 2000)
        res = {"n": n, "end_to_end": e2e, "from_embeddings": emb, "recall": rec}
        results.append(res)
        print(json.dumps(res), flush=True)
        subprocess.run(["rm", "-rf", work])
    write_json(os.path.join(args.out, "results.json"), results)


if __name__ == "__main__":
    main()
