"""Markdown tables from the JSON results of the benchmark scripts (for docs/benchmarks.md).

Usage: python -m benchmarks.report dev .bench/dev-default.json .bench/dev-e5.json
       python -m benchmarks.report ablations .bench/ablations
       python -m benchmarks.report bucc .bench/bucc/results.json [.bench/bucc-e5/results.json]
"""

from __future__ import annotations

import glob
import json
import os
import sys

SET_ORDER = ["tatoeba-test.en-fr", "tatoeba-test.en-de", "tatoeba-test.en-es",
             "newstest2012.en-fr", "newstest2012.en-de", "newstest2012.en-es"]


def dev_rows(name: str, res: dict) -> list[str]:
    rows = []
    for s in SET_ORDER:
        if s not in res:
            continue
        r = res[s]
        a, b = r["en2xx"], r["xx2en"]
        rows.append(f"| {name} | {s} | {a['1']:.2f} / {b['1']:.2f} | {a['3']:.2f} / {b['3']:.2f} | "
                    f"{a['10']:.2f} / {b['10']:.2f} | {r['n']} |")
    return rows


def dev(paths: list[str]) -> None:
    print("| model | set | P@1 en→xx / xx→en | P@3 | P@10 | pairs |")
    print("|---|---|---|---|---|---|")
    for p in paths:
        for model, res in json.load(open(p)).items():
            print("\n".join(dev_rows(model, res)))


def ablations(folder: str) -> None:
    print("| variant | steps | train min | " + " | ".join(s.replace("tatoeba-test", "tatoeba").replace(
        "newstest2012", "news12") for s in SET_ORDER) + " |")
    print("|---|---|---|" + "---|" * len(SET_ORDER))
    for f in sorted(glob.glob(os.path.join(folder, "*.json"))):
        r = json.load(open(f))
        cells = [f"{r['scores'][s]['en2xx']['1']:.1f} / {r['scores'][s]['xx2en']['1']:.1f}" for s in SET_ORDER]
        print(f"| {r['variant']} | {r['steps']} | {r['train_minutes']} | " + " | ".join(cells) + " |")


def bucc(paths: list[str]) -> None:
    print("| model | pair | score | strategy | threshold | P | R | F1 (test) | F1 (train) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in paths:
        for r in json.load(open(p)):
            t = r["test"]
            print(f"| {r['model']} | {r['pair']} | {r['score']} | {r['strategy']} | {r['threshold']:.4f} | "
                  f"{100 * t['precision']:.2f} | {100 * t['recall']:.2f} | {100 * t['f1']:.2f} | "
                  f"{100 * r['train']['f1']:.2f} |")


if __name__ == "__main__":
    {"dev": lambda a: dev(a), "ablations": lambda a: ablations(a[0]), "bucc": lambda a: bucc(a)}[sys.argv[1]](sys.argv[2:])
