"""Filtering scores across languages and backends (issue 10: every language of the default
model, and e5-small; paper 002 is about Nepali and Sinhala), on dev NTREX-128.

For each language: 1,000 genuine pairs (English source, NTREX lines 1-1,000) against four kinds
of noise made from the same N-way parallel set: a *misaligned* neighbour (the target of the
line 1-2 after), an *unrelated* target (a line after 1,000), the *wrong language* (the same
line in another NTREX language: a perfect translation, wrong language) and an *untranslated*
copy (the English source). Every pair is scored in one corpus (so the margin's neighbours come
from the whole mixture) with the embedding cosine and the in-corpus margin of each model, and
with the language rule; the table gives the ROC-AUC of genuine against each noise kind.

    python -m benchmarks.filter_languages                       # default model and e5-small
    python -m benchmarks.filter_languages --models default --langs ne si

Embeddings are cached per model under ``.bench/cache`` (e5-small embeds ~90 sentences/s).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from benchmarks.xsim import ntrex_sets

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
LANGS = ("ne", "si", "hi", "bn", "zh", "ar", "ru", "sw", "am", "fr")
KINDS = ("misaligned", "unrelated", "wrong language", "untranslated")


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    from bimine.scoring.classifiers import roc_auc

    return roc_auc(np.r_[pos, neg], np.r_[np.ones(len(pos), bool), np.zeros(len(neg), bool)])


def build(sets: dict, lang: str, other: str, n: int, seed: int) -> tuple[list[str], list[str], np.ndarray]:
    from bimine.text.io import read_lines

    _, _, en_file, xx_file = sets[lang]
    en, xx = list(read_lines(en_file)), list(read_lines(xx_file))
    oth = list(read_lines(sets[other][3]))
    rng = np.random.default_rng(seed)
    src, tgt, kind = [], [], []
    for i in range(n):
        src.append(en[i]), tgt.append(xx[i]), kind.append("genuine")
    m = n // 4
    for name in KINDS:
        rows = rng.choice(n, size=m, replace=False)
        for i in rows:
            if name == "misaligned":
                t = xx[min(i + 1 + int(rng.integers(2)), len(xx) - 1)]
            elif name == "unrelated":
                t = xx[n + int(rng.integers(len(xx) - n))]
            elif name == "wrong language":
                t = oth[i]
            else:
                t = en[i]
            src.append(en[i]), tgt.append(t), kind.append(name)
    return src, tgt, np.array(kind)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["default", "e5-small"])
    ap.add_argument("--langs", nargs="+", default=list(LANGS))
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=".bench/filter_languages.json")
    args = ap.parse_args(argv)
    if not os.path.isdir(DATA):
        print(f"skipped: {DATA} not found (the shared dev data)")
        return 0
    from benchmarks.common import CachedEncoder
    from bimine.filtering.langid import LanguageId
    from bimine.scoring.pair_scores import corpus_margin

    sets = {}
    for code, lang, en_file, xx_file in ntrex_sets(DATA):
        sets.setdefault(lang, (code, lang, en_file, xx_file))
    results: dict = {}
    t0 = time.time()
    encs = {m: CachedEncoder(m) for m in args.models}
    for lang in args.langs:
        if lang not in sets:
            print(f"skipping {lang}: not in NTREX", file=sys.stderr)
            continue
        other = "hi" if lang == "ne" else ("ta" if lang == "si" else "fr" if lang != "fr" else "de")
        src, tgt, kind = build(sets, lang, other, args.n, args.seed)
        genuine = kind == "genuine"
        row = {"ntrex": sets[lang][0], "wrong language from": other}
        lid = LanguageId(src_lang="en", tgt_lang=lang)
        s = lid.score(src, tgt)
        row["lang"] = {k: auc(np.nan_to_num(s[genuine], nan=1.0), np.nan_to_num(s[kind == k], nan=1.0))
                       for k in KINDS}
        row["lang_checked"] = not lid.unchecked
        for m, enc in encs.items():
            u, v = enc.encode(src, "en"), enc.encode(tgt, lang)
            cos = np.einsum("ij,ij->i", u, v)
            mar = corpus_margin(u, v)
            for name, sc in (("cosine", cos), ("margin", mar)):
                row[f"{m} {name}"] = {k: auc(sc[genuine], sc[kind == k]) for k in KINDS}
        results[lang] = row
        print(f"{lang}: " + ", ".join(f"{k} {v['misaligned']:.3f}/{v['unrelated']:.3f}" for k, v in row.items()
                                       if isinstance(v, dict)), file=sys.stderr, flush=True)
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"models": {m: e.model_id for m, e in encs.items()}, "n": args.n, "results": results,
                   "seconds": round(time.time() - t0, 1)}, f, indent=1)
    scorers = ["lang"] + [f"{m} {s}" for m in args.models for s in ("cosine", "margin")]
    print("ROC-AUC of genuine pairs against each noise kind (misaligned / unrelated / wrong language / "
          "untranslated); NTREX-128, English source\n")
    print("| language | " + " | ".join(scorers) + " |")
    print("|---|" + "---|" * len(scorers))
    for lang, row in results.items():
        cells = [" / ".join(f"{row[s][k]:.2f}" for k in KINDS) for s in scorers]
        if not row["lang_checked"]:
            cells[0] = "not checked (py3langid lacks it)"
        print(f"| {lang} | " + " | ".join(cells) + " |")
    print(f"\n{time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
