"""Which word aligner under the Munteanu & Marcu divergence baseline (issue 12 §1: "IBM Model
1 and Model 2 ... or a well-kept aligner from PyPI if one fits better: measure both").

Usage (from the repository root; eflomal is an optional extra, ``pip install eflomal``)::

    python -m benchmarks.divergence_aligners [--json .bench/divergence/aligners.json]

Both aligners see the same English-French text: the first 200,000 pairs of the training
corpora of :mod:`benchmarks.divergence_dev` (what ``bimine train-divergence`` aligns on),
tokenised by bimine (lowercased words, punctuation dropped, 200 tokens at most):

* ``ibm2``: bimine's IBM Models 1+2 (5 + 5 EM iterations a direction; the cached
  ``.bench/divergence/aligner.en-fr.safetensors`` when there, else trained and timed here);
  links are the Viterbi alignments of each direction, dictionary ``t >= 0.1``;
* ``eflomal``: eflomal 2.0 (Östling & Tiedemann 2016: Bayesian HMM with fertility, Gibbs
  sampling), which has no separate test mode, so the training pairs, the synthetic examples
  and REFreSD are aligned in one run, as its users do; its dictionary is the link-count
  estimate ``p(f | e) = c(e, f) / c(e)`` over the grow-diag-final-and links of the training
  pairs, kept at ``>= 0.1`` in each direction.

Both directions are combined by bimine's symmetrisation, and the same synthetic examples
(5,000 positives, 25,000 product negatives filtered by the IBM dictionary) train the same
linear classifier over the same 48 features. Reported: aligner training seconds, dictionary
size, REFreSD ROC-AUC and 5-fold CV overall / macro F (the protocol of divergence_dev).
Without the data (or without eflomal, for its row) the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter

import numpy as np

from benchmarks.divergence_dev import DEFAULT_DATA, OUT, class_prf, corpus_files, cv_predictions
from benchmarks.filter_dev import roc_auc
from benchmarks.filter_divergence import read_refresd, refresd_path
from benchmarks.harness import write_json

ALIGN_PAIRS = 200_000


def evaluate(x_train, y_train, x_test, y_eq) -> dict:
    from bimine.scoring.divergence_features import LinearClassifier

    s = LinearClassifier.fit(x_train, y_train).predict(x_test)
    m = class_prf(cv_predictions(s, y_eq), y_eq)
    return {"auc": roc_auc(s[y_eq], s[~y_eq]), "overall_f": m["overall_f"], "macro_f": m["macro_f"],
            "fixed_0.5_overall_f": class_prf(s >= 0.5, y_eq)["overall_f"]}


def read_pharaoh(path: str) -> list[list[tuple[int, int]]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            out.append([(int(a), int(b)) for a, b in (x.split("-") for x in line.split())])
    return out


def eflomal_links(src_tok, tgt_tok) -> tuple[list[list[tuple[int, int]]], list[list[tuple[int, int]]], float]:
    import eflomal

    # eflomal reads whitespace-separated tokens; an empty side would be skipped by its reader,
    # so every sentence gets at least one token (a marker no real word equals)
    def lines(toks):
        return [" ".join(t) if t else "<empty>" for t in toks]

    with tempfile.TemporaryDirectory() as tmp:
        fwd, rev = os.path.join(tmp, "fwd"), os.path.join(tmp, "rev")
        t = time.time()
        eflomal.Aligner().align(lines(src_tok), lines(tgt_tok), links_filename_fwd=fwd, links_filename_rev=rev)
        secs = time.time() - t
        a, b = read_pharaoh(fwd), read_pharaoh(rev)
    if len(a) != len(src_tok) or len(b) != len(src_tok):
        raise SystemExit(f"eflomal returned {len(a):,} / {len(b):,} alignments for {len(src_tok):,} pairs")
    for k, (e, f) in enumerate(zip(src_tok, tgt_tok)):
        if not e or not f:  # the marker's links are not links of words
            a[k], b[k] = [], []
    return a, b, secs


def count_dictionary(src_tok, tgt_tok, links, threshold: float = 0.1):
    c = Counter()
    for e, f, al in zip(src_tok, tgt_tok, links):
        for i, j in al:
            c[e[i], f[j]] += 1
    ce, cf = Counter(), Counter()
    for (a, b), n in c.items():
        ce[a] += n
        cf[b] += n
    fwd: dict[str, set[str]] = {}
    bwd: dict[str, set[str]] = {}
    for (a, b), n in c.items():
        if n / ce[a] >= threshold:
            fwd.setdefault(a, set()).add(b)
        if n / cf[b] >= threshold:
            bwd.setdefault(b, set()).add(a)
    return fwd, bwd


def dict_size(fwd, bwd) -> int:
    return len({(a, b) for a, bs in fwd.items() for b in bs} | {(a, b) for b, as_ in bwd.items() for a in as_})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--json", default=os.path.join(OUT, "aligners.json"))
    ap.add_argument("--retrain", action="store_true", help="Train (and time) the IBM aligner even when it is cached "
                    "(the cache is left as it is).")
    args = ap.parse_args()
    path = refresd_path(args.data)
    if not os.path.exists(path):
        print(f"divergence_aligners: skipped, {path} not found (../shared/data, or BIMINE_SHARED_DATA)")
        return
    from bimine.scoring.divergence_features import SYMS, feature_tokens, features_from_links, pair_features
    from bimine.scoring.ibm import WordAligner, symmetrize
    from bimine.text.io import read_parallel
    from bimine.training.aligner import train_aligner
    from bimine.training.divergence_data import corpus_examples

    os.makedirs(OUT, exist_ok=True)
    pairs = [p for en, fr in corpus_files(args.data) for p in read_parallel(en, fr)]  # as train-divergence reads
    src, tgt = [x for x, _ in pairs], [y for _, y in pairs]
    rows = read_refresd(path)
    en, fr = [r[2] for r in rows], [r[3] for r in rows]
    y_eq = np.array([r[0] == "equivalent" for r in rows])
    cached = os.path.join(OUT, "aligner.en-fr.safetensors")
    result: dict = {"align_pairs": min(ALIGN_PAIRS, len(src)), "refresd": len(rows), "aligners": {}}
    if os.path.exists(cached) and not args.retrain:
        al = WordAligner.load(cached)
        ibm_secs = None
    else:
        t = time.time()
        al = train_aligner(src[:ALIGN_PAIRS], tgt[:ALIGN_PAIRS], src_lang="en", tgt_lang="fr")
        ibm_secs = time.time() - t
        if not os.path.exists(cached):
            al.save(cached)
    ex, counts = corpus_examples(src, tgt, al, positives=5000, min_words=5)
    result["synthetic"] = counts
    y = np.array([e.label for e in ex])
    t = time.time()
    x_ex = pair_features([e.src for e in ex], [e.tgt for e in ex], al)
    x_te = pair_features(en, fr, al)
    result["aligners"]["ibm2"] = {"train_seconds": ibm_secs, "feature_seconds": time.time() - t,
                                  "dictionary_pairs": len(al.dictionary()), **evaluate(x_ex, y, x_te, y_eq)}
    print("ibm2:", json.dumps(result["aligners"]["ibm2"]))
    try:
        import eflomal  # noqa: F401
    except ImportError:
        print("eflomal is not installed (pip install eflomal): its row is skipped")
    else:
        n = result["align_pairs"]
        v = al.token_version  # the IBM row's tokens (a cached aligner keeps its own)
        s_tok = [feature_tokens(x, v) for x in [*src[:n], *(e.src for e in ex), *en]]
        t_tok = [feature_tokens(x, v) for x in [*tgt[:n], *(e.tgt for e in ex), *fr]]
        a, b, secs = eflomal_links(s_tok, t_tok)
        gdfa = [symmetrize(x, z, "grow-diag-final-and") for x, z in zip(a[:n], b[:n])]
        fwd, bwd = count_dictionary(s_tok[:n], t_tok[:n], gdfa)
        feats = {}
        for part, lo, hi in (("ex", n, n + len(ex)), ("te", n + len(ex), len(s_tok))):
            links = {sym: [symmetrize(x, z, sym) for x, z in zip(a[lo:hi], b[lo:hi])] for sym in SYMS}
            feats[part] = features_from_links(s_tok[lo:hi], t_tok[lo:hi], links, fwd, bwd)
        inter = sum(len(set(x) & set(z)) for x, z in zip(a[:n], b[:n]))
        result["aligners"]["eflomal"] = {"train_seconds": secs, "dictionary_pairs": dict_size(fwd, bwd),
                                         "intersection_share_of_fwd_links": inter / max(sum(map(len, a[:n])), 1),
                                         **evaluate(feats["ex"], y, feats["te"], y_eq)}
        print("eflomal:", json.dumps(result["aligners"]["eflomal"]))
    lines = ["| aligner | training (s) | dictionary pairs | ROC-AUC | overall F (CV) | macro F (CV) | overall F at 0.5 |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in result["aligners"].items():
        tr = "cached" if r["train_seconds"] is None else f"{r['train_seconds']:.0f}"
        lines.append(f"| {name} | {tr} | {r['dictionary_pairs']:,} | {r['auc']:.3f} | {100 * r['overall_f']:.1f} | "
                     f"{100 * r['macro_f']:.1f} | {100 * r['fixed_0.5_overall_f']:.1f} |")
    result["markdown"] = "\n".join(lines)
    print(result["markdown"])
    write_json(args.json, result)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
