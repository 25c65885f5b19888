"""Issue 56's ablation table: xsim runs of candidate models beside the shipped default and e5-small.

    python -m benchmarks.xsim_ablation base=.bench/xsim/abl56-base.json marks=.bench/xsim/abl56-marks.json

Each ``NAME=FILE`` is a ``python -m benchmarks.xsim --json`` file of one model, or
``NAME=FILE#MODEL`` one model of a file that holds several (its key in the file's results). The shipped
default's and e5-small's per-set figures are read from docs/results/xsim-full.md (the table
``python -m benchmarks.ship_default`` writes, 0.1 precision). Every column is grouped the same
way, by the training pairs of the first run given (its ``training_pairs``; the ablation runs
share one recipe): all NTREX sets, the 40 languages with most pairs, 10k+ pairs, under 10k.
(docs/results/xsim-full.md groups by the previous default's pairs; its means therefore differ a
little from the ones here.) Then the issue's targets: the 10k+ languages where e5-small is under
10 % and the run above 30 %, Khmer and Pashto, and the issue's list of failing scripts.

With ``--by-pairs``, last, each later run against the first, NTREX sets grouped by the first
run's training pairs (100k+, 30k-100k, 10k-30k, 1-10k, none): the mean change and how many sets
are worse or better by more than half a point, from the runs' own figures (not rounded).

    python -m benchmarks.xsim_ablation --by-pairs shipped=.bench/xsim/v6-30k.json#default \
        30k=.bench/xsim/v6-30k.json#runs/v6-30k/model
"""

from __future__ import annotations

import argparse
import json
import os
import re

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(REPO, "docs", "results", "xsim-full.md")
#: a per-set row: set, language, training pairs, one figure per model; the last two are the
#: shipped default's and e5-small's (the earlier models' columns before them vary in number)
ROW = re.compile(r"^\| (ntrex|pud) \| (\S+) \((\w+)\) \| ([\d,]+) \|(?: [\d.]+ \|)* ([\d.]+) \| ([\d.]+) \|$")
#: the sets of issue 56's first table, in its order
ISSUE_SETS = ["mya", "lao", "khm", "pus", "amh", "uig", "tel", "mar", "tam", "ben", "sin", "kan", "pan", "mal",
              "nep", "tha", "kor", "heb"]
TARGETS = {"all": 24.0, "top-40": 8.0, "<10k": 42.0}


def reference(path: str = TABLE) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """``{model: {set: error}}`` for ``default`` and ``e5-small`` (NTREX and PUD, PUD sets named
    ``pud:<name>``), and each set's language, from docs/results/xsim-full.md."""
    out: dict[str, dict[str, float]] = {"default": {}, "e5-small": {}}
    lang: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line.strip())
            if m:
                name = m.group(2) if m.group(1) == "ntrex" else f"pud:{m.group(2)}"
                out["default"][name], out["e5-small"][name] = float(m.group(5)), float(m.group(6))
                lang[name] = m.group(3)
    if not out["default"]:
        raise SystemExit(f"{path}: no per-set rows found")
    return out, lang


def run_sets(path: str, model: str | None = None) -> tuple[dict[str, float], dict[str, str], dict[str, int]]:
    """One model's per-set errors (PUD as ``pud:<name>``), languages and training pairs; ``model``
    picks one of a file of several."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if model is not None:
        if model not in doc["results"]:
            raise SystemExit(f"{path}: no model {model!r} (it has {', '.join(doc['results'])})")
        res = doc["results"][model]
    elif len(doc["results"]) != 1:
        raise SystemExit(f"{path}: {len(doc['results'])} models ({', '.join(doc['results'])}): pick one, FILE#MODEL")
    else:
        (res,) = doc["results"].values()
    errs, lang = {}, {}
    for kind in ("ntrex", "pud"):
        for name, r in res.get(kind, {}).items():
            key = name if kind == "ntrex" else f"pud:{name}"
            errs[key], lang[key] = float(r["mean"]), r["lang"]
    return errs, lang, {k: int(v) for k, v in doc.get("training_pairs", {}).items()}


def groups(sets: list[str], lang: dict[str, str], pairs: dict[str, int]) -> dict[str, list[str]]:
    ntrex = [s for s in sets if not s.startswith("pud:")]
    top = set(sorted(pairs, key=lambda k: -pairs[k])[:40])
    return {"all": ntrex, "top-40": [s for s in ntrex if lang[s] in top],
            "10k+": [s for s in ntrex if pairs.get(lang[s], 0) >= 10_000],
            "<10k": [s for s in ntrex if pairs.get(lang[s], 0) < 10_000],
            "pud": [s for s in sets if s.startswith("pud:")]}


#: the groups of ``--by-pairs``: (label, fewest pairs, most pairs + 1)
PAIR_BUCKETS = [("100k+", 100_000, None), ("30k-100k", 30_000, 100_000), ("10k-30k", 10_000, 30_000),
                ("1-10k", 1, 10_000), ("none", 0, 1)]


def by_pairs(base: dict[str, float], other: dict[str, float], lang: dict[str, str],
             pairs: dict[str, int]) -> list[tuple[str, int, float, int, int]]:
    """(group, sets, mean change, sets worse by > 0.5, sets better by > 0.5) of ``other`` against
    ``base`` on the NTREX sets, grouped by ``pairs`` of each set's language."""
    out = []
    for label, lo, hi in PAIR_BUCKETS:
        sets = [s for s in base if not s.startswith("pud:")
                and pairs.get(lang[s], 0) >= lo and (hi is None or pairs.get(lang[s], 0) < hi)]
        if sets:
            d = np.array([other[s] - base[s] for s in sets])
            out.append((label, len(sets), float(d.mean()), int((d > 0.5).sum()), int((d < -0.5).sum())))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="NAME=FILE (a benchmarks.xsim --json file of one model) or NAME=FILE#MODEL")
    ap.add_argument("--by-pairs", action="store_true",
                    help="last, each later run against the first, by the training pairs of the sets' languages")
    args = ap.parse_args()
    ref, lang = reference()
    cols: dict[str, dict[str, float]] = {}
    pairs: dict[str, int] = {}
    for spec in args.runs:
        name, sep, path = spec.partition("=")
        if not sep:
            raise SystemExit(f"{spec!r}: give NAME=FILE")
        path, _, model = path.partition("#")
        errs, lg, tp = run_sets(path, model or None)
        missing = sorted(set(ref["default"]) - set(errs))
        if missing:
            raise SystemExit(f"{path}: {len(missing)} sets not measured ({', '.join(missing[:5])} ...)")
        cols[name] = errs
        lang.update(lg)
        pairs = pairs or tp
    if not pairs:
        raise SystemExit("the first run's JSON has no training_pairs: group by which counts?")
    cols = {"default": ref["default"], **cols, "e5-small": ref["e5-small"]}
    g = groups(sorted(ref["default"]), lang, pairs)
    names = list(cols)
    print("| mean xsim error (%) | sets | " + " | ".join(names) + " | target |")
    print("|---|---:|" + "---:|" * len(names) + "---:|")
    for grp, sets in g.items():
        if not sets:
            continue
        vals = [f"{np.mean([c[s] for s in sets]):.2f}" for c in cols.values()]
        print(f"| NTREX {grp} | {len(sets)} | " + " | ".join(vals) + f" | {TARGETS.get(grp, '')} |"
              if grp != "pud" else f"| UD PUD | {len(sets)} | " + " | ".join(vals) + " | |")
    served = [s for s in g["10k+"] if ref["e5-small"][s] < 10.0]
    print()
    print(f"10k+ sets where e5-small is under 10 % ({len(served)}): how many are above 30 % (target: none)")
    print("| | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    print("| sets above 30 % | " + " | ".join(str(sum(c[s] > 30.0 for s in served)) for c in cols.values()) + " |")
    print()
    print("| set | train pairs | " + " | ".join(names) + " |")
    print("|---|---:|" + "---:|" * len(names))
    for s in ISSUE_SETS + ["fra", "deu", "spa"]:
        if s in ref["default"]:
            print(f"| {s} ({lang[s]}) | {pairs.get(lang[s], 0):,} | " + " | ".join(f"{c[s]:.1f}" for c in cols.values()) + " |")
    if args.by_pairs:
        runs = [n for n in names if n not in ("default", "e5-small")]
        if len(runs) < 2:
            raise SystemExit("--by-pairs compares the later runs with the first: give two or more")
        for other in runs[1:]:
            print()
            print(f"{other} against {runs[0]}, NTREX sets by training pairs (change in points; sets worse / better by > 0.5)")
            print("| training pairs | sets | mean change | worse | better |")
            print("|---|---:|---:|---:|---:|")
            for label, n, mean, worse, better in by_pairs(cols[runs[0]], cols[other], lang, pairs):
                print(f"| {label} | {n} | {mean:+.2f} | {worse} | {better} |")


if __name__ == "__main__":
    main()
