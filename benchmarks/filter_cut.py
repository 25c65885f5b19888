"""The default cut on the combined ``score`` across languages (issue 42).

    python -m benchmarks.filter_cut [--langs fr de ...] [--pairs 300] [--cuts 0.5 0.2] [--json FILE]

For each language, ``--pairs`` NTREX-128 English-xx translations (dev data: the first lines of
``newstest2019-src.eng`` and its reference in xx) and the same pairs with the target moved by half
the set (no pair a translation) are scored by ``bimine score`` with the default pipeline and the
shipped model, in a subprocess as a user runs it. Printed per language: the model's dev xsim
error stored with it (``languages.json``) and whether ``bimine filter`` applies its default cut
there (only where the language is served: xsim error at most 15 %), then for each cut the share of
genuine pairs kept and the share of shuffled pairs kept. Skips when the shared data is absent.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from benchmarks.filter_dev import DEFAULT_DATA
from benchmarks.harness import write_json

NTREX = {"fr": "fra", "de": "deu", "es": "spa", "ru": "rus", "ar": "arb", "zh": "zho_Hans", "hi": "hin",
         "ko": "kor", "fa": "fas", "ja": "jpn", "km": "khm", "ps": "pus"}
MORE = {"ta": "tam", "ml": "mal", "bn": "ben", "mr": "mar", "te": "tel", "kn": "kan", "si": "sin", "ne": "nep",
        "gu": "guj", "pa": "pan", "ur": "urd", "he": "heb", "am": "amh", "th": "tha", "lo": "lao", "my": "mya"}


def read_gz(path: str) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        return f.read().rstrip("\n").split("\n")


def score(src: list[str], tgt: list[str], xx: str, work: str) -> np.ndarray:
    tsv, out = os.path.join(work, f"in.{xx}.tsv"), os.path.join(work, f"out.{xx}.tsv")
    with open(tsv, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(f"{a}\t{b}\n" for a, b in zip(src, tgt))
    subprocess.run([sys.executable, "-m", "bimine", "score", tsv, "--src-lang", "en", "--tgt-lang", xx, "-o", out,
                    "--no-progress"], check=True, capture_output=True, text=True)
    with open(out, encoding="utf-8", newline="") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    i = rows[0].index("score")
    return np.array([float(r[i]) for r in rows[1:]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--langs", nargs="+", default=list(NTREX),
                    help=f"languages (default: {' '.join(NTREX)}; also {' '.join(MORE)})")
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--cuts", type=float, nargs="+", default=[0.5, 0.2])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    codes = {**NTREX, **MORE}
    unknown = [x for x in args.langs if x not in codes]
    if unknown:
        raise SystemExit(f"filter_cut: no NTREX-128 set for {', '.join(unknown)}; known: {' '.join(codes)}")
    d = os.path.join(args.data, "dev", "ntrex128", "NTREX-128")
    if not os.path.isdir(d):
        print(f"filter_cut: skipped, {d} not found")
        return
    from bimine import load_encoder
    from bimine.encoders.base import model_folder

    with open(os.path.join(model_folder(load_encoder("default")), "languages.json"), encoding="utf-8") as f:
        langs = json.load(f)["languages"]
    en = read_gz(os.path.join(d, "newstest2019-src.eng.txt.gz"))[:args.pairs]
    half = args.pairs // 2
    cuts = " | ".join(f"genuine kept at {c:g} | shuffled kept at {c:g}" for c in args.cuts)
    print(f"| language | dev xsim error % | filter's default cut | {cuts} |")
    print("|---|---:|---|" + "---:|" * (2 * len(args.cuts)))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bimine-filter-cut-") as work:
        for xx in args.langs:
            tgt = read_gz(os.path.join(d, f"newstest2019-ref.{codes[xx]}.txt.gz"))[:args.pairs]
            genuine = score(en, tgt, xx, work)
            shuffled = score(en, tgt[half:] + tgt[:half], xx, work)
            err = (langs.get(xx) or {}).get("ntrex_xsim")
            served = err is not None and err <= 15
            row = {"lang": xx, "xsim": err, "default_cut": served,
                   "kept": {str(c): [float((genuine >= c).mean()), float((shuffled >= c).mean())] for c in args.cuts}}
            rows.append(row)
            cells = " | ".join(f"{100 * g:.1f} | {100 * s:.1f}" for g, s in row["kept"].values())
            print(f"| {xx} | {err} | {'0.5' if served else 'none (a note says why)'} | {cells} |", flush=True)
    if args.json:
        write_json(args.json, rows)


if __name__ == "__main__":
    main()
