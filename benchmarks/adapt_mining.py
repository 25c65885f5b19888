"""Mining a weak language as large as dev allows: ``mine --adapt`` against ``-m e5-small`` (issue 73).

Usage (from the repository root)::

    python -m benchmarks.adapt_mining [--lang khm] [--runs default,adapt,e5-small] [--json .bench/adapt_mining.json]
    python -m benchmarks.adapt_mining --lang khm --recipe ../data/recipe [--english 100000]

The source side: every line of NTREX-128 in ``--lang`` (1,997; dev holds no other text in Khmer or
Pashto). The target side: the English pool of ``benchmarks.pool_retrieval`` (25,000 sentences:
every distinct English line of dev/newstest, UD PUD, NTREX's English, then Tatoeba-test lines of 8
words or more; dev holds no more English news than that, short of the issue's 100,000), NTREX's
English among them. Gold: NTREX's line pairs. Each run is the command a user types, timed whole
process (``bimine mine SRC TGT --src-lang xx --tgt-lang en --line-numbers``), then scored: each
mined pair is right when it is a gold pair; precision, recall (of the gold pairs) and F1 at the
threshold that maximises F1 on the run's own scores (BUCC's way of comparing miners), and F1 with
every selected pair kept. ``adapt`` runs ``--adapt`` with a fresh work folder (the adaptation is
timed with the run: it is what the user waits for).

``--recipe DIR`` (a folder of ``bimine data build``) makes both sides as large as the project's text
allows: the source side gets every other line of the language the recipe holds (the translation
side of ``pairs/en-LANG.tsv.gz``, software and documentation strings), the target side the English
Bible (train/bible-sword, ASV) and then English strings of the recipe's ``en-fr`` pairs, until it
holds ``--english`` lines; an English line that is the English of an ``en-LANG`` pair (its letters
alone compared, case aside) is left out, so that no added source line has its translation on the other side.
Gold stays NTREX's pairs (NTREX's lines come first on both sides, as without ``--recipe``).
"""

from __future__ import annotations

import gzip
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np

from benchmarks.harness import Bench
from benchmarks.pool_retrieval import NTREX, english_pool
from bimine.langs import normalize_lang
from bimine.scoring.logistic import best_f1_threshold
from bimine.text.io import read_lines

WORK = ".bench/adapt_mining"


def best_f1(scores: np.ndarray, right: np.ndarray, n_gold: int) -> dict:
    """P, R, F1 at the score threshold with the best F1 (pairs at or above it kept; recall of the
    ``n_gold`` gold pairs): :func:`bimine.scoring.logistic.best_f1_threshold`, as a record."""
    t, p, r, f = best_f1_threshold(scores, right, n_gold)
    return {"P": p, "R": r, "F1": f, "threshold": t if math.isfinite(t) else None}


def _key(t: str) -> str:
    """An English line's letters alone, lower-cased: the same catalog string with another
    accelerator, ellipsis, placeholder or spacing has the same key."""
    return "".join(ch for ch in t.lower() if ch.isalpha())


def _recipe_pairs(recipe: str, lang: str):
    with gzip.open(os.path.join(recipe, "pairs", f"en-{lang}.tsv.gz"), "rt", encoding="utf-8") as f:
        for line in f:
            en, sep, xx = line.rstrip("\n").partition("\t")
            if sep:
                yield en.strip(), xx.strip()


def recipe_sides(recipe: str, data: str, lang: str, have_src: set, have_tgt: set, english: int):
    """The lines ``--recipe`` adds (module docstring): the recipe's ``lang`` lines not on the source
    side yet, and up to ``english`` English lines (the Bible's, then the recipe's en-fr strings of
    3+ words) that are not the English of an en-``lang`` pair nor on the target side yet."""
    src: dict[str, None] = {}
    banned = set()
    for en, xx in _recipe_pairs(recipe, lang):
        banned.add(_key(en))
        if xx and xx not in have_src:
            src.setdefault(xx, None)
    tgt: dict[str, None] = {}

    def add(lines) -> None:
        for t in lines:
            t = t.strip()
            if len(tgt) >= english:
                return
            if t and t not in have_tgt and _key(t) not in banned:
                tgt.setdefault(t, None)

    add(read_lines(os.path.join(data, "train/bible-sword/matrix/en-ASV.txt.gz")))
    add(en for en, _ in _recipe_pairs(recipe, "fr") if len(en.split()) >= 3)
    return list(src), list(tgt)


def main() -> int:
    bench = Bench("adapt_mining", __doc__)
    bench.arg("--data", default="../shared/data")
    bench.arg("--lang", default="khm")
    bench.arg("--runs", default="default,adapt,e5-small")
    bench.arg("--recipe", default=None, help="a 'bimine data build' folder: both sides as large as it allows")
    bench.arg("--english", type=int, default=100_000, help="with --recipe: English lines on the target side")
    a = bench.parse()
    nt = os.path.join(a.data, NTREX)
    if not os.path.isdir(nt):
        print(f"no dev data at {nt}: nothing to measure")
        return 0
    lang = normalize_lang(a.lang)
    en = [t.strip() for t in read_lines(os.path.join(nt, "newstest2019-src.eng.txt.gz"))]
    xx = [t.strip() for t in read_lines(os.path.join(nt, f"newstest2019-ref.{a.lang}.txt.gz"))]
    pool = english_pool(a.data)
    if a.recipe:
        more_src, more_tgt = recipe_sides(a.recipe, a.data, lang, set(xx), set(pool), a.english - len(pool))
        xx, pool = xx + more_src, pool + more_tgt
    index = {t: i for i, t in enumerate(pool)}
    os.makedirs(WORK, exist_ok=True)
    src, tgt = os.path.join(WORK, f"src.{lang}.txt"), os.path.join(WORK, "tgt.en.txt")
    with open(src, "w", encoding="utf-8") as f:
        f.writelines(t + "\n" for t in xx)
    with open(tgt, "w", encoding="utf-8") as f:
        f.writelines(t + "\n" for t in pool)
    gold = {(i + 1, index[e] + 1) for i, (x, e) in enumerate(zip(xx, en)) if x and e}
    print(f"# {bench.command} ({bench.result()['date']}): {len(xx):,} {a.lang} lines, {len(pool):,} English; "
          f"{len(gold):,} gold pairs")
    print("| run | whole process s | pairs | best-F1 P / R / F1 | F1, every pair kept |")
    print("|---|---:|---:|---:|---:|")
    for run in a.runs.split(","):
        out = os.path.join(WORK, f"pairs.{lang}.{run}.tsv")
        cmd = ["bimine", "mine", src, tgt, "--src-lang", lang, "--tgt-lang", "en", "-o", out, "--line-numbers",
               "--no-progress"]
        if run == "adapt":
            work = os.path.join(WORK, f"work-{lang}")
            shutil.rmtree(work, ignore_errors=True)
            cmd += ["--adapt", "--work-dir", work]
        else:
            cmd += ["-m", run]
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        secs = time.time() - t0
        if r.returncode:
            print(f"| {run} | failed: {r.stderr.strip()[-300:]} |")
            continue
        rows = [line.rstrip("\n").split("\t") for line in open(out, encoding="utf-8")]
        scores = np.array([float(c[0]) for c in rows])
        right = np.array([(int(c[3]), int(c[4])) in gold for c in rows])
        b = best_f1(scores, right, len(gold))
        p_all, r_all = (right.mean() if len(right) else 0.0), right.sum() / len(gold)
        f_all = 2 * p_all * r_all / max(p_all + r_all, 1e-12)
        row = {"run": run, "seconds": round(secs, 1), "pairs": len(rows), **b, "F1_all": float(f_all),
               "stderr": [line for line in r.stderr.splitlines() if line.startswith("--adapt")]}
        bench.rows.append(row)
        print(f"| {run} | {secs:.0f} | {len(rows):,} | {b['P']:.3f} / {b['R']:.3f} / **{b['F1']:.3f}** | "
              f"{f_all:.3f} |", flush=True)
        for line in row["stderr"]:
            print(f"  {line}", file=sys.stderr)
    bench.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
