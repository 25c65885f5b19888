"""Issue 56, third round: characters that the test text and the training text of a language
write differently (no model is run).

Usage: python -m benchmarks.char_mismatch [--data ../shared/data] [--recipe ../data/recipe]
           [--train-lines 60000] [--min-pairs 10000] [--sets uzb,khm,...] [--top 6]

For each NTREX-128 set whose language had ``--min-pairs``+ training pairs (by
``docs/results/xsim-full.md``; or the ``--sets`` given), it compares the NTREX text (1,997 lines)
with up to ``--train-lines`` lines of the language's side of the recipe's
``pairs/en-<lang>.tsv.gz`` (from line 3,001 on for languages with 30,000+ pairs, whose first
3,000 training holds out). It prints, per set, the zero-width spaces (U+200B/U+FEFF) per line on each side
, how many of the language's recipe pairs are names or dictionary entries (the
``iso-codes``, ``cldr-names`` and ``freedict`` sources of its ``manifest.json``), and the
characters whose rate (per mille of all characters) differs by a factor of 8 or more
between the two sides, where the larger rate is at least 1 per mille (at most ``--top`` a set,
largest difference first). A character that is a word character on one side and punctuation
on the other (an apostrophe written as U+02BB in one source and U+2018 in another) cuts the
same words differently; one found in one side only is a font, spelling, script or domain
difference. Skips (exit 0) when the data or the recipe is absent. About 1 minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import unicodedata
from collections import Counter

from benchmarks.script_analysis import gz_lines, ntrex_path, read_xsim_table

ZW = ("\u200b", "\ufeff")
NAMES = ("iso-codes", "cldr-names", "freedict")  # names and dictionary entries, not sentences
HOLDOUT = 3000  # configs/default.yaml's data.recipes[].holdout: the first 3,000 of a language with 10x that


def flagged(test: Counter, train: Counter, ratio: float = 8.0, floor: float = 1.0) -> list[tuple[str, float, float]]:
    """``(char, test per mille, train per mille)`` for the characters whose rates differ by
    ``ratio`` or more (rates smoothed by 0.02 per mille) and whose larger rate is ``floor``+,
    largest absolute difference first."""
    nt, nr = max(1, sum(test.values())), max(1, sum(train.values()))
    out = []
    for c in set(test) | set(train):
        a, b = 1000 * test[c] / nt, 1000 * train[c] / nr
        if max(a, b) >= floor and max((a + 0.02) / (b + 0.02), (b + 0.02) / (a + 0.02)) >= ratio:
            out.append((c, a, b))
    return sorted(out, key=lambda r: (-abs(r[1] - r[2]), r[0]))


def per_line(lines: list[str], chars=ZW) -> float:
    return sum(sum(ln.count(c) for c in chars) for ln in lines) / max(1, len(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--recipe", default="../data/recipe")
    ap.add_argument("--train-lines", type=int, default=60_000)
    ap.add_argument("--min-pairs", type=int, default=10_000)
    ap.add_argument("--sets", default="", help="comma-separated NTREX set names (default: all with --min-pairs)")
    ap.add_argument("--top", type=int, default=6)
    ap.add_argument("--table", default="docs/results/xsim-full.md")
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.data, "dev", "ntrex128")) or not os.path.isdir(args.recipe):
        print(f"skipped: {args.data}/dev/ntrex128 or {args.recipe} is absent")
        return
    rows = read_xsim_table(args.table)
    want = [s for s in args.sets.split(",") if s]
    rows = [r for r in rows if (r["set"] in want if want else r["pairs"] >= args.min_pairs)]
    if want and len(rows) != len(want):
        sys.exit(f"unknown set(s): {sorted(set(want) - {r['set'] for r in rows})}")
    with open(os.path.join(args.recipe, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)["languages"]
    print("| set | lang | default | e5-small | recipe pairs | names | ZWSP/line NTREX | train | character | NTREX ‰ "
          "| train ‰ | category |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|")
    for r in sorted(rows, key=lambda r: -r["default"]):
        path = os.path.join(args.recipe, "pairs", f"en-{r['lang']}.tsv.gz")
        if not os.path.exists(path):
            continue
        test = gz_lines(ntrex_path(args.data, r["set"]))
        skip = HOLDOUT if manifest.get(r["lang"], {}).get("pairs", 0) >= 10 * HOLDOUT else 0
        train = [ln.split("\t", 1)[1] for ln in gz_lines(path, skip + args.train_lines)[skip:] if "\t" in ln]
        chars = flagged(Counter("".join(test)), Counter("".join(train)))[: args.top] or [(None, 0.0, 0.0)]
        for i, (c, a, b) in enumerate(chars):
            m = manifest.get(r["lang"], {})
            names = sum(m.get("sources", {}).get(k, 0) for k in NAMES)
            head = (f"| {r['set']} | {r['lang']} | {r['default']:.1f} | {r['e5']:.1f} | {m.get('pairs', 0):,} | "
                    f"{names / max(1, m.get('pairs', 0)):.0%} | {per_line(test):.2f} | {per_line(train):.2f} |"
                    ) if i == 0 else "| | | | | | | | |"
            if c is None:
                print(head + " (none) | | | |")
            else:
                name = unicodedata.name(c, "?").lower()
                print(f"{head} U+{ord(c):04X} {name} | {a:.2f} | {b:.2f} | {unicodedata.category(c)} |")


if __name__ == "__main__":
    main()
