"""Embedding speed of two models side by side, interleaved: which one is faster, and by how much.

``benchmarks.embed_throughput`` measures one model per run (3 repeats of each setting), and two
runs minutes apart move by up to ~15 % here, more than a 10 % rule can tell apart. This script
loads both models in one process and alternates them on the same input, round after round
(A B, then B A, ...), so that both meet the same machine state; each round gives a paired
ratio, and the figures are the medians over rounds. In process, compiled path, file to .npy
(``bimine.embed.embed_file``, one worker), as ``embed_throughput``'s "compiled, 1 worker" column.

    python -m benchmarks.embed_ab --a default --b runs/ml-v9/model
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from functools import partial

from benchmarks.embed_throughput import CORPORA, REPEATED, Others, input_lang, load_input, write_lines
from benchmarks.harness import timed, write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", default="default", help="first model (default: the shipped one)")
    ap.add_argument("--b", required=True, help="second model (a folder)")
    ap.add_argument("--data", default=os.environ.get("BIMINE_SHARED_DATA", "../shared/data"))
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--threads", default="default,1", help="comma-separated: 'default' (one per core) and/or numbers")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    paths = {name: os.path.join(args.data, rel) for name, rel in CORPORA.items()}
    missing = [p for p in paths.values() if not os.path.exists(p)]
    if missing:
        print(f"skipped: data not found ({', '.join(missing)}); pass --data or set BIMINE_SHARED_DATA")
        return
    from bimine.embed import embed_file
    from bimine.encoders import load_encoder

    encs = {"a": load_encoder(args.a), "b": load_encoder(args.b)}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bimine-ab-") as tmp:
        out = os.path.join(tmp, "out.npy")
        for name, path in paths.items():
            lines, _ = load_input(path, args.lines, name in REPEATED)
            src = os.path.join(tmp, name)
            write_lines(src, lines)
            lang = input_lang(name)
            for th in args.threads.split(","):
                threads = None if th == "default" else int(th)
                secs: dict[str, list[float]] = {"a": [], "b": []}
                busy = []
                for key in ("a", "b"):
                    encs[key].threads = threads
                    encs[key].encode(lines[:2048], lang)  # warm: kernels, table pages, word cache
                for r in range(args.rounds):
                    for key in (("a", "b") if r % 2 == 0 else ("b", "a")):
                        with Others() as others:
                            _, t = timed(partial(embed_file, src, out, lang=lang, model=encs[key], progress=False,
                                                 workers=1))
                            secs[key].append(t["wall_s"])
                        busy.append(others.cores)
                ratios = [sa / sb for sa, sb in zip(secs["a"], secs["b"])]  # > 1: b is faster
                row = {"input": name, "threads": th, "lines": len(lines),
                       "a": args.a, "b": args.b,
                       "a_lines_per_s": round(len(lines) / statistics.median(secs["a"])),
                       "b_lines_per_s": round(len(lines) / statistics.median(secs["b"])),
                       "b_over_a_median_ratio": round(statistics.median(ratios), 4),
                       "ratios": [round(x, 4) for x in ratios],
                       "others_cores_max": max((x for x in busy if x is not None), default=None)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                for key in ("a", "b"):
                    encs[key].threads = None
    print()
    print(f"| input | threads | {args.a} lines/s | {args.b} lines/s | speed of b / a (median of {args.rounds} "
          "paired rounds) | range over rounds | others' CPU (max) |")
    print("|---|---|---:|---:|---:|---|---:|")
    for r in rows:
        print(f"| {r['input']} | {r['threads']} | {r['a_lines_per_s']:,} | {r['b_lines_per_s']:,} | "
              f"{r['b_over_a_median_ratio']:.3f} | {min(r['ratios']):.3f}-{max(r['ratios']):.3f} | "
              f"{r['others_cores_max']} |")
    if args.json:
        write_json(args.json, rows)


if __name__ == "__main__":
    main()
