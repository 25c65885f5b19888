"""Issue 56's ablation table: xsim runs of candidate models beside the shipped default and e5-small.

    python -m benchmarks.xsim_ablation base=.bench/xsim/abl56-base.json marks=.bench/xsim/abl56-marks.json

Each ``NAME=FILE`` is a ``python -m benchmarks.xsim --json`` file of one model. The shipped
default's and e5-small's per-set figures are read from docs/results/xsim-full.md (the table
``python -m benchmarks.ship_default`` writes, 0.1 precision). Every column is grouped the same
way, by the training pairs of the first run given (its ``training_pairs``; the ablation runs
share one recipe): all NTREX sets, the 40 languages with most pairs, 10k+ pairs, under 10k.
(docs/results/xsim-full.md groups by the previous default's pairs; its means therefore differ a
little from the ones here.) Then the issue's targets: the 10k+ languages where e5-small is under
10 % and the run above 30 %, Khmer and Pashto, and the issue's list of failing scripts.
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


def run_sets(path: str) -> tuple[dict[str, float], dict[str, str], dict[str, int]]:
    """One model's per-set errors (PUD as ``pud:<name>``), languages and training pairs."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if len(doc["results"]) != 1:
        raise SystemExit(f"{path}: expected one model, found {', '.join(doc['results'])}")
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="NAME=FILE, a benchmarks.xsim --json file of one model")
    args = ap.parse_args()
    ref, lang = reference()
    cols: dict[str, dict[str, float]] = {}
    pairs: dict[str, int] = {}
    for spec in args.runs:
        name, sep, path = spec.partition("=")
        if not sep:
            raise SystemExit(f"{spec!r}: give NAME=FILE")
        errs, lg, tp = run_sets(path)
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


if __name__ == "__main__":
    main()
