"""Semantic divergence on short, informal lines (issue 58 §2): a dev set made from
tatoeba-test en-fr, kept out of every training corpus, scored like REFreSD.

Usage (from the repository root)::

    python -m benchmarks.divergence_short [--model default --model FILE ...] [--write-set FILE]
                                          [--json .bench/divergence_short.json]

The set (made here, deterministic, seed 0): 1,500 pairs drawn from the second half of the
12,681 pairs of ``../shared/data/dev/tatoeba-test/tatoeba-test.en-fr`` (the shipped model's
calibration map is fitted on pairs of the first half) (short conversational lines: a median of
6 English words), 500 kept as they are (*equivalent*) and the rest made divergent on the
French side, 200 of each kind:

* ``unrelated``: the French of another drawn pair whose length is within a factor of 1.5;
* ``near``: the French of the pair whose English shares the most words with this English (a
  sentence on the same topic that says something else: "I like cats." / "J'aime les chiens.");
* ``deleted``: a run of words, a third to a half of the French line, removed (at least 2 words
  are left);
* ``replaced``: one French word of 4+ letters replaced by a word of 4+ letters of another drawn
  French line (a meaning changed in place, the length kept);
* ``added``: another drawn French line of at most 6 words appended.

None of them is made the way ``bimine train-divergence`` makes its negatives (its phrase
deletion is closest: 20-50 % of one side, either side), and none of the lines is in the
training corpora (``../shared/data/train`` is cleaned of overlap with ``dev/``).

Each model is run as ``bimine divergence`` on the set; as in ``benchmarks.divergence_dev``,
"overall F" is the F1 of the two classes weighted by their support, with the threshold
chosen by stratified 5-fold cross-validation (pooled predictions) and, in its own column, at
the threshold stored in the model; ROC-AUC overall and per kind (equivalent pairs against the
pairs of that kind). Without the data the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import Counter

import numpy as np

from benchmarks.divergence_dev import DEFAULT_DATA, OUT, class_prf, cv_predictions
from benchmarks.filter_dev import REPO, roc_auc
from benchmarks.harness import write_json

KINDS = ("unrelated", "near", "deleted", "replaced", "added")
N_EQUIVALENT, N_KIND = 500, 200


def _words(s: str) -> list[str]:
    return s.split()


def _content(s: str) -> set[str]:
    return {w.strip(".,!?;:\"'").lower() for w in s.split() if len(w.strip(".,!?;:\"'")) > 2}


def make_set(en: list[str], fr: list[str], seed: int = 0) -> list[tuple[str, str, str, str]]:
    """(label, kind, English, French) rows: the equivalent pairs, then each kind's."""
    rng = np.random.default_rng(seed)
    need = N_EQUIVALENT + N_KIND * len(KINDS)
    # the second half of the file: the shipped model's calibration map is fitted on pairs of the
    # first (benchmarks.divergence_calibration)
    ok = [i for i in range(len(en) // 2, len(en)) if len(_words(fr[i])) >= 3 and len(_words(en[i])) >= 2]
    drawn = [ok[i] for i in rng.permutation(len(ok))[:need]]
    rows = [("equivalent", "equivalent", en[i], fr[i]) for i in drawn[:N_EQUIVALENT]]
    rest = drawn[N_EQUIVALENT:]
    groups = {k: rest[j * N_KIND:(j + 1) * N_KIND] for j, k in enumerate(KINDS)}
    pool = [i for i in drawn]  # the other lines the divergent ones borrow from
    content = {i: _content(en[i]) for i in range(len(en))}
    for i in groups["unrelated"]:
        n = len(_words(fr[i]))
        cands = [j for j in pool if j != i and fr[j] != fr[i] and max(n, len(_words(fr[j]))) <= 1.5 * min(n, len(_words(fr[j])))]
        rows.append(("divergent", "unrelated", en[i], fr[cands[int(rng.integers(len(cands)))]]))
    for i in groups["near"]:
        best, best_j = -1.0, None
        for j in range(len(en)):  # the whole test file: the nearest English on words shared
            if j == i or fr[j] == fr[i] or en[j] == en[i] or not content[j]:
                continue
            inter = len(content[i] & content[j])
            if inter:
                score = inter / len(content[i] | content[j])
                if score > best:
                    best, best_j = score, j
        if best_j is None:
            best_j = pool[int(rng.integers(len(pool)))]
        rows.append(("divergent", "near", en[i], fr[best_j]))
    for i in groups["deleted"]:
        w = _words(fr[i])
        k = max(1, min(len(w) - 2, int(round(len(w) * rng.uniform(1 / 3, 1 / 2)))))
        start = int(rng.integers(0, len(w) - k + 1))
        rows.append(("divergent", "deleted", en[i], " ".join(w[:start] + w[start + k:])))
    vocab = sorted({w for j in pool for w in _words(fr[j]) if len(w) >= 4 and w.isalpha()})
    for i in groups["replaced"]:
        w = _words(fr[i])
        slots = [k for k, x in enumerate(w) if len(x) >= 4 and x.isalpha()] or list(range(len(w)))
        k = slots[int(rng.integers(len(slots)))]
        new = w[k]
        while new.lower() == w[k].lower():
            new = vocab[int(rng.integers(len(vocab)))]
        rows.append(("divergent", "replaced", en[i], " ".join(w[:k] + [new] + w[k + 1:])))
    short = [j for j in pool if len(_words(fr[j])) <= 6]
    for i in groups["added"]:
        j = short[int(rng.integers(len(short)))]
        while fr[j] == fr[i]:
            j = short[int(rng.integers(len(short)))]
        rows.append(("divergent", "added", en[i], f"{fr[i]} {fr[j]}"))
    return rows


def read_pairs(data: str) -> tuple[list[str], list[str]]:
    base = os.path.join(data, "dev", "tatoeba-test", "tatoeba-test.en-fr")
    with open(base + ".en", encoding="utf-8") as f:
        en = [x.rstrip("\n") for x in f]
    with open(base + ".fr", encoding="utf-8") as f:
        fr = [x.rstrip("\n") for x in f]
    return en, fr


def score(model: str, tsv: str, out: str) -> np.ndarray:
    subprocess.run([sys.executable, "-m", "bimine", "divergence", tsv, "--src-lang", "en", "--tgt-lang", "fr",
                    "-d", model, "-o", out, "--no-progress"], check=True)
    with open(out, encoding="utf-8") as f:
        col = f.readline().rstrip("\n").split("\t").index("divergence")
        return np.array([float(line.rstrip("\n").split("\t")[col]) for line in f])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--model", action="append", help="'default' (the shipped model) or a model file (repeatable)")
    ap.add_argument("--write-set", help="also write the set as a TSV (label, kind, English, French)")
    ap.add_argument("--json", default=os.path.join(REPO, ".bench", "divergence_short.json"))
    args = ap.parse_args()
    base = os.path.join(args.data, "dev", "tatoeba-test")
    if not os.path.isdir(base):
        print(f"divergence_short: skipped, {base} not found (../shared/data, or BIMINE_SHARED_DATA)")
        return
    os.makedirs(OUT, exist_ok=True)
    rows = make_set(*read_pairs(args.data))
    print(f"set: {len(rows)} pairs, {dict(Counter(r[1] for r in rows))}")
    tsv = os.path.join(OUT, "short-dev.tsv")
    with open(tsv, "w", encoding="utf-8") as f:  # the two text columns, no header: what 'divergence' reads
        f.writelines(f"{r[2]}\t{r[3]}\n" for r in rows)
    if args.write_set:
        with open(args.write_set, "w", encoding="utf-8") as f:
            f.writelines("\t".join(r) + "\n" for r in rows)
    y_eq = np.array([r[0] == "equivalent" for r in rows])
    kind = np.array([r[1] for r in rows])
    from bimine.scoring.divergence import DivergenceModel, default_path

    result = {"n": len(rows), "kinds": dict(Counter(kind.tolist())), "models": {}}
    lines = ["| model | +F | −F | overall F (5-fold threshold) | overall F at the stored threshold | ROC-AUC | "
             + " | ".join(f"AUC {k}" for k in KINDS) + " |", "|---|" + "---:|" * (5 + len(KINDS))]
    for m in args.model or ["default"]:
        path = str(default_path()) if m == "default" else m
        s = score(path, tsv, os.path.join(OUT, f"short-dev.{os.path.basename(path)}.tsv"))
        cv = class_prf(cv_predictions(s, y_eq), y_eq)
        stored = DivergenceModel.load(path).threshold
        fixed = class_prf(s >= stored, y_eq)
        aucs = {k: roc_auc(s[y_eq], s[kind == k]) for k in KINDS}
        auc = roc_auc(s[y_eq], s[~y_eq])
        result["models"][m] = {"cv5": cv, "stored_threshold": stored, "at_stored_threshold": fixed, "auc": auc,
                               "auc_by_kind": aucs}
        lines.append(f"| {m} | {100 * cv['equivalent']['f']:.1f} | {100 * cv['divergent']['f']:.1f} | "
                     f"**{100 * cv['overall_f']:.1f}** | {100 * fixed['overall_f']:.1f} (t = {stored:g}) | "
                     f"{auc:.3f} | " + " | ".join(f"{aucs[k]:.3f}" for k in KINDS) + " |")
    md = "\n".join(lines)
    print(md)
    result["markdown"] = md
    write_json(args.json, result)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
