"""A first look at semantic divergence (issue 10): bimine's scores on REFreSD (en-fr), before the
dedicated divergence work.

Usage (from the repository root)::

    python -m benchmarks.filter_divergence [--model default] [--pipeline P.yaml] [--scores ...]
                                           [--json .bench/filter_divergence.json]

REFreSD (``../shared/data/dev/refresd``, Briakou & Carpuat 2020): 1,039 English-French
Wikipedia sentence pairs, each labelled by three annotators ``equivalent`` (369) or
``divergent`` (670; of which ``some_meaning_difference`` 418 and ``unrelated`` 252). Every pair
goes through ``bimine score`` (the default pipeline, or ``--pipeline``) as one corpus; each
output column is a scorer, oriented clean-high by its filter's direction (higher = more
equivalent), as in :mod:`benchmarks.filter_dev`; "bimine rules (keep)" is the keep decision of
``bimine filter --no-model``. Per scorer:

* ROC-AUC, equivalent against divergent, and against each divergent class (NaN lowest);
* F1 of each class (equivalent / divergent) at the threshold that maximises their mean
  (macro-F1) on these very pairs: an **oracle** threshold, chosen on the test data, an upper
  bound for this score;
* the same F1s with the threshold chosen by 5-fold cross-validation (stratified, seeded): each
  fold is predicted with the best macro-F1 threshold of the other four, and the F1s are
  computed over the pooled predictions.

``margin`` is computed against these 1,039 pairs as its corpus. Without the data the script
says so and exits 0.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from benchmarks.filter_dev import REPO, bimine_scorers, pipeline_spec, roc_auc, write_pipeline
from benchmarks.harness import write_json

DEFAULT_DATA = os.environ.get("BIMINE_SHARED_DATA", os.path.join(REPO, "..", "shared", "data"))
OUT = os.path.join(REPO, ".bench", "filter_divergence")


def refresd_path(data: str) -> str:
    """REFreSD's sentence labels under the shared data folder ``data``."""
    return os.path.join(data, "dev", "refresd", "REFreSD", "REFreSD_sentence_labels")


def read_refresd(path: str) -> list[tuple[str, str, str, str]]:
    """``(binary label, 3-way label, English, French)`` rows of REFreSD_sentence_labels."""
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        for k, line in enumerate(f):
            if k == 0 and line.startswith("#"):
                continue
            cells = line.rstrip("\n").split("\t")
            if len(cells) != 4:
                raise SystemExit(f"{path}:{k + 1}: expected 4 tab-separated columns, got {len(cells)}")
            rows.append((cells[0], cells[1], cells[2], cells[3]))
    return rows


def f1s(pred_eq: np.ndarray, y_eq: np.ndarray) -> tuple[float, float]:
    """F1 of the equivalent class and of the divergent class."""
    tp = np.sum(pred_eq & y_eq)
    fp = np.sum(pred_eq & ~y_eq)
    fn = np.sum(~pred_eq & y_eq)
    tn = np.sum(~pred_eq & ~y_eq)
    f_eq = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
    f_div = 2 * tn / (2 * tn + fn + fp) if tn + fn + fp else 0.0
    return float(f_eq), float(f_div)


def best_macro_threshold(s: np.ndarray, y_eq: np.ndarray) -> tuple[float, float, float]:
    """The threshold ``t`` (equivalent when ``s >= t``; ``inf``: all divergent) with the best
    macro-F1 on ``s``/``y_eq``, and the F1 of each class there. NaN scores count as lowest.
    Ties: the lowest such threshold."""
    s = np.where(np.isnan(s), -np.inf, np.asarray(s, dtype=np.float64))
    cand = np.append(np.unique(s), np.inf)
    se, sd = np.sort(s[y_eq]), np.sort(s[~y_eq])
    n_eq, n_div = len(se), len(sd)
    eq_ge = n_eq - np.searchsorted(se, cand, "left")  # equivalent pairs predicted equivalent
    div_ge = n_div - np.searchsorted(sd, cand, "left")  # divergent pairs predicted equivalent
    with np.errstate(invalid="ignore", divide="ignore"):
        f_eq = np.nan_to_num(2 * eq_ge / (2 * eq_ge + div_ge + (n_eq - eq_ge)))
        tn = n_div - div_ge
        f_div = np.nan_to_num(2 * tn / (2 * tn + (n_eq - eq_ge) + div_ge))
    best = int(np.argmax(f_eq + f_div))
    return float(cand[best]), float(f_eq[best]), float(f_div[best])


def cross_validated(s: np.ndarray, y_eq: np.ndarray, folds: int = 5, seed: int = 0) -> tuple[float, float]:
    """F1 of each class over pooled predictions, each fold thresholded by the other folds."""
    rng = np.random.default_rng(seed)
    fold = np.empty(len(s), dtype=np.int64)
    for cls in (True, False):
        idx = np.flatnonzero(y_eq == cls)
        fold[rng.permutation(idx)] = np.arange(len(idx)) % folds
    pred = np.zeros(len(s), dtype=bool)
    x = np.where(np.isnan(s), -np.inf, s)
    for k in range(folds):
        train = fold != k
        t, _, _ = best_macro_threshold(x[train], y_eq[train])
        pred[~train] = x[~train] >= t
    return f1s(pred, y_eq)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--model", default="default")
    ap.add_argument("--pipeline", default=None, help="bimine pipeline YAML (default: bimine score's default pipeline)")
    ap.add_argument("--scores", nargs="+", default=None, help="bimine output columns to evaluate (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=os.path.join(REPO, ".bench", "filter_divergence.json"))
    args = ap.parse_args()
    path = refresd_path(args.data)
    if not os.path.exists(path):
        print(f"filter_divergence: skipped, {path} not found (the shared data folder ../shared/data, "
              "or BIMINE_SHARED_DATA)")
        return
    rows = read_refresd(path)
    os.makedirs(OUT, exist_ok=True)
    tsv = os.path.join(OUT, "refresd.en-fr.tsv")
    with open(tsv, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(f"{en}\t{fr}\n" for _, _, en, fr in rows)
    spec = pipeline_spec(args.pipeline)
    pipeline_yaml = os.path.join(OUT, "pipeline.yaml")
    write_pipeline(spec, pipeline_yaml)
    res = bimine_scorers(tsv, "fr", spec, pipeline_yaml, args.model, args.scores)
    y_eq = np.array([b == "equivalent" for b, _, _, _ in rows])
    three = np.array([t for _, t, _, _ in rows])
    out = {"n": len(rows), "equivalent": int(y_eq.sum()), "divergent": int((~y_eq).sum()), "model": args.model,
           "pipeline": {"filters": spec.filters}, "timings": res.info, "scorers": []}
    base_eq, base_div = f1s(np.zeros(len(rows), dtype=bool), y_eq)
    lines = ["| scorer | ROC-AUC | AUC vs some diff. | AUC vs unrelated | NaN | oracle threshold | F1 equiv. | "
             "F1 div. | macro-F1 | 5-fold CV F1 equiv. | F1 div. | macro-F1 |", "|---|" + "---|" * 11]
    lines.append(f"| all divergent (baseline) | 0.500 | 0.500 | 0.500 | 0 | – | {base_eq:.3f} | {base_div:.3f} | "
                 f"{(base_eq + base_div) / 2:.3f} | {base_eq:.3f} | {base_div:.3f} | {(base_eq + base_div) / 2:.3f} |")
    for s in res.scorers:
        v = s.values
        auc = roc_auc(v[y_eq], v[~y_eq])
        auc_some = roc_auc(v[y_eq], v[three == "some_meaning_difference"])
        auc_unrel = roc_auc(v[y_eq], v[three == "unrelated"])
        t, fe, fd = best_macro_threshold(v, y_eq)
        ce, cd = cross_validated(v, y_eq, seed=args.seed)
        nan = int(np.isnan(v).sum())
        raw_t = t if s.clean_high else -t  # in the column's own units
        out["scorers"].append({"name": s.name, "auc": auc, "auc_some_meaning_difference": auc_some,
                               "auc_unrelated": auc_unrel, "nan": nan,
                               "oracle": {"threshold_oriented": t, "threshold": raw_t, "f1_equivalent": fe,
                                          "f1_divergent": fd, "macro_f1": (fe + fd) / 2},
                               "cv5": {"f1_equivalent": ce, "f1_divergent": cd, "macro_f1": (ce + cd) / 2}})
        thr = "–" if not np.isfinite(t) else f"{raw_t:.4g}"
        lines.append(f"| {s.name} | {auc:.3f} | {auc_some:.3f} | {auc_unrel:.3f} | {nan} | {thr} | {fe:.3f} | "
                     f"{fd:.3f} | {(fe + fd) / 2:.3f} | {ce:.3f} | {cd:.3f} | {(ce + cd) / 2:.3f} |")
    md = "\n".join(lines)
    print(md)
    out["markdown"] = md
    write_json(args.json, out)
    print(f"\nwrote {args.json}; the bimine outputs are in {OUT}")


if __name__ == "__main__":
    main()
