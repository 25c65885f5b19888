"""Paper 003's siamese BiGRU trained as 003 trains it (issue 58): hundreds of thousands of en-fr
pairs, a resumable run, and the learning curve on dev.

Data: the en-fr pairs of one or more built recipes (``bimine data build ... --local
../shared/data/train``: software and documentation catalogs plus every en-fr corpus of
``shared/data/train``; a second ``--recipe`` for a folder of the sources built on request,
``--sources desktop-extra,pypi-extra``), or of ``shared/data/train`` alone when no recipe is
given; pairs with an empty side and repeated pairs (across recipes too) dropped, and any pair with
a side equal (stripped, case-folded) to a line of the dev sets it is measured on (newstest
2009-2013 en-fr, tatoeba-test en-fr) dropped and counted; a seeded random ``--pairs`` of the rest
(003: 500k random Europarl pairs). The pairs are written once to ``.bench/bigru/data/<recipes>-
<pairs>-s<seed>-<hash of the input pairs>/`` and reused by a resumed run. Dev: newstest2012 en-fr,
whose first ``--curve-pairs`` pairs give the learning curve (F1 on their Cartesian product after
each epoch).

    python -m benchmarks.bigru_train --recipe ../data/recipe                 # 003's settings
    python -m benchmarks.bigru_train --recipe ../data/recipe --recipe ../data/recipe-extra \\
        --name pieces -- --tokens pieces --lr 2e-3

Everything after ``--`` goes to ``bimine train-classifier bigru``. The run lives in
``.bench/bigru/<name>/`` (``bigru.safetensors``, its log, ``curve.json``); rerun the same command
after a stop and it resumes from the checkpoint. Then the noise-ratio test:

    python -m benchmarks.filter_noise_ratio --kinds bigru --bigru .bench/bigru/<name>/bigru.safetensors \\
        --out .bench/bigru/<name>
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import subprocess
import sys
import time

import numpy as np

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
TRAIN_SOURCES = ("tatoeba-manythings/tatoeba", "python-docs/python-docs", "django-docs/django-docs",
                 "multi30k/multi30k", "gnome-help/gnome-help", "bible-sword/pairs/bible")


def _lines(path: str) -> list[str]:
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def _key(s: str) -> str:
    return " ".join(s.split()).casefold()


def dev_lines() -> set[str]:
    """The stripped, case-folded lines of the en-fr dev sets the BiGRU is measured on."""
    out = set()
    nt = os.path.join(SHARED, "dev", "newstest")
    for y in range(2009, 2014):
        for side in ("en", "fr"):
            out.update(_key(x) for x in _lines(os.path.join(nt, f"newstest{y}.en-fr.{side}")))
    for side in ("en", "fr"):
        out.update(_key(x) for x in _lines(os.path.join(SHARED, "dev", "tatoeba-test", f"tatoeba-test.en-fr.{side}")))
    out.discard("")
    return out


def source_pairs(recipes: list[str]):
    """(name, en lines, fr lines) of each source."""
    for recipe in recipes:
        path = os.path.join(recipe, "pairs", "en-fr.tsv.gz")
        if not os.path.exists(path):
            raise SystemExit(f"{path} not found: build the recipe first (docs/model-card.md, 'How it was trained')")
        en, fr = [], []
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                a, _, b = line.rstrip("\n").partition("\t")
                en.append(a)
                fr.append(b)
        yield f"{os.path.basename(os.path.normpath(recipe))} en-fr", en, fr
    if recipes:
        return
    for name in TRAIN_SOURCES:
        base = os.path.join(SHARED, "train", f"{name}.en-fr")
        if os.path.exists(f"{base}.en.gz"):
            yield name.split("/")[-1], _lines(f"{base}.en.gz"), _lines(f"{base}.fr.gz")


def inputs_key(recipes: list[str]) -> str:
    """A short hash of the input files' contents: the data folder is rebuilt for other inputs
    instead of being reused for them (and reused when a rebuilt recipe holds the same pairs)."""
    paths = [os.path.join(r, "pairs", "en-fr.tsv.gz") for r in recipes] or [
        os.path.join(SHARED, "train", f"{n}.en-fr.{side}.gz") for n in TRAIN_SOURCES for side in ("en", "fr")]
    h = hashlib.sha256()
    for p in paths:
        h.update(f"{os.path.basename(p)}\n".encode())
        if os.path.exists(p):
            with gzip.open(p, "rb") as f:  # the text, not the archive (gzip headers hold a time)
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()[:8]


def build(recipes: list[str], pairs: int, seed: int, folder: str) -> dict:
    """Write ``folder/train.en-fr.{en,fr}`` (once; kept for resumed runs) and return its counts."""
    info_path = os.path.join(folder, "train.json")
    if os.path.exists(info_path):
        with open(info_path) as f:
            return json.load(f)
    held = dev_lines()
    seen, en, fr = set(), [], []
    counts = {"empty": 0, "repeated": 0, "dev_overlap": 0, "sources": {}}
    for name, a, b in source_pairs(recipes):
        n = 0
        for x, y in zip(a, b):
            x, y = x.strip(), y.strip()
            if not x or not y:
                counts["empty"] += 1
                continue
            if (x, y) in seen:
                counts["repeated"] += 1
                continue
            seen.add((x, y))
            if _key(x) in held or _key(y) in held:
                counts["dev_overlap"] += 1
                continue
            en.append(x)
            fr.append(y)
            n += 1
        counts["sources"][name] = n
    rng = np.random.default_rng(seed)
    pick = rng.permutation(len(en))[:pairs]
    counts.update(available=len(en), chosen=len(pick), seed=seed, recipes=recipes)
    os.makedirs(folder, exist_ok=True)
    for side, lines in (("en", en), ("fr", fr)):
        tmp = os.path.join(folder, f"train.en-fr.{side}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(lines[i] + "\n" for i in pick)
        os.replace(tmp, os.path.join(folder, f"train.en-fr.{side}"))
    with open(info_path, "w") as f:
        json.dump(counts, f, indent=1)
    return counts


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recipe", action="append", default=[],
                    help="a built recipe folder; again for another (their pairs are pooled, repeats dropped); "
                         "none: shared/data/train alone")
    ap.add_argument("--pairs", type=int, default=500_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default="paper", help="the run's folder under .bench/bigru/")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--out", default=".bench/bigru")
    args = ap.parse_args(argv)
    if not os.path.isdir(SHARED):
        print(f"skipped: {SHARED} not found (the shared data)")
        return 0
    names = "+".join(os.path.basename(os.path.normpath(r)) for r in args.recipe) or "shared"
    data = os.path.join(args.out, "data", f"{names}-{args.pairs}-s{args.seed}-{inputs_key(args.recipe)}")
    t = time.time()
    counts = build(args.recipe, args.pairs, args.seed, data)
    print(f"training pairs: {counts['chosen']:,} of {counts['available']:,} ({data}; {time.time() - t:.0f} s): "
          f"{json.dumps(counts)}", file=sys.stderr, flush=True)
    run = os.path.join(args.out, args.name)
    os.makedirs(run, exist_ok=True)
    out = os.path.join(run, "bigru.safetensors")
    if os.path.exists(out):
        print(f"{out} exists: nothing to train (delete it to train again)", file=sys.stderr)
        return 0
    dev = os.path.join(SHARED, "dev", "newstest", "newstest2012.en-fr")
    tr = os.path.join(data, "train.en-fr")
    cmd = [sys.executable, "-m", "bimine", "train-classifier", "bigru", "--src", f"{tr}.en", "--tgt", f"{tr}.fr",
           "--src-lang", "en", "--tgt-lang", "fr", "--dev-src", f"{dev}.en", "--dev-tgt", f"{dev}.fr", "-o", out,
           "--epochs", str(args.epochs), "--threads", str(args.threads), "--seed", str(args.seed), *extra]
    if os.path.exists(out + ".checkpoint"):
        cmd.append("--resume")
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    rc = subprocess.run(cmd).returncode
    if rc == 0:
        from bimine.scoring.classifiers import PairClassifier

        c = PairClassifier.load(out).config
        with open(os.path.join(run, "curve.json"), "w") as f:
            json.dump({"command": cmd[1:], "data": counts, "curve": c.get("curve"),
                       "train_seconds_total": c.get("train_seconds_total")}, f, indent=1)
        for p in c.get("curve") or []:
            print(f"epoch {p['epoch']}: {p['pairs_seen']:,} pairs seen, {p['seconds']:.0f} s, dev Cartesian F1 "
                  f"{100 * p['cartesian_F1']:.1f} (P {100 * p['cartesian_P']:.1f}, R {100 * p['cartesian_R']:.1f}), "
                  f"top-1 {100 * p['cartesian_top1']:.1f}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
