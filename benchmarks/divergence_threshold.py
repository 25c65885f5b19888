"""The shipped divergence model's threshold against clean news (issue 42).

    python -m benchmarks.divergence_threshold [--write]

For thresholds on P(equivalent): the share of clean translations kept (the NTREX-128 en-fr pairs
*not* in examples/dev.en-fr.tsv, 1,697: where the stored threshold is chosen; the 300 NTREX pairs
of examples/dev.en-fr.tsv; the first 1,000 newstest2012 en-fr pairs, English and French both
translated from a third language) beside REFreSD's macro-F, accuracy, recall of its equivalent
pairs, and the share of its unrelated and some-difference pairs dropped.

The stored threshold (what ``threshold: trained`` in a filter pipeline uses) is the one that keeps
``--keep`` (0.9) of the 1,697 NTREX pairs, rounded to two decimals; ``--write`` stores it in the
shipped model's metadata, with REFreSD's best macro-F threshold as ``refresd_threshold``
(``bimine train-divergence --threshold`` writes the same field at training time). Skips when the
shared data folder is absent.
"""

from __future__ import annotations

import argparse
import gzip
import os

import numpy as np

from benchmarks.filter_dev import DEFAULT_DATA, read_lines
from benchmarks.filter_divergence import f1s, read_refresd, refresd_path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scores(d, src: list[str], tgt: list[str]) -> np.ndarray:
    return np.concatenate([d.score(src[i:i + 500], tgt[i:i + 500]) for i in range(0, len(src), 500)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--thresholds", type=float, nargs="+", default=[0.5, 0.31, 0.2, 0.1, 0.05, 0.02])
    ap.add_argument("--keep", type=float, default=0.9, help="share of the held-out NTREX pairs the stored threshold keeps")
    ap.add_argument("--write", action="store_true", help="store the chosen threshold in the shipped model")
    args = ap.parse_args()
    if not os.path.exists(refresd_path(args.data)):
        print(f"divergence_threshold: skipped, {refresd_path(args.data)} not found")
        return
    from bimine import load_encoder
    from bimine.scoring.pair_scores import DivergenceScore

    d = DivergenceScore(encoder=load_encoder("default"), src_lang="en", tgt_lang="fr")
    rows = read_refresd(refresd_path(args.data))
    y = np.array([r[0] == "equivalent" for r in rows])
    three = np.array([r[1] for r in rows])
    pr = scores(d, [r[2] for r in rows], [r[3] for r in rows])
    dev = [line.split("\t") for line in open(os.path.join(REPO, "examples", "dev.en-fr.tsv"), encoding="utf-8")
           .read().splitlines()]
    pn = scores(d, [a for a, _ in dev], [b for _, b in dev])
    news = os.path.join(args.data, "dev", "newstest", "newstest2012.en-fr")
    pw = scores(d, read_lines(news + ".en")[:1000], read_lines(news + ".fr")[:1000])
    ntrex = os.path.join(args.data, "dev", "ntrex128", "NTREX-128")
    in_examples = {a for a, _ in dev}
    en, fr = (gzip.open(os.path.join(ntrex, f"newstest2019-{n}.txt.gz"), "rt", encoding="utf-8").read().split("\n")[:-1]
              for n in ("src.eng", "ref.fra"))
    held = [i for i in range(len(en)) if en[i] not in in_examples]
    ph = scores(d, [en[i] for i in held], [fr[i] for i in held])
    chosen = round(float(np.quantile(ph, 1 - args.keep)), 2)
    best_refresd = max(np.unique(np.round(pr, 2)), key=lambda t: sum(f1s(pr >= t, y)))
    print(f"median P(equivalent): REFreSD {np.median(pr):.3f}, NTREX held out ({len(held)}) {np.median(ph):.3f}, "
          f"NTREX dev.en-fr {np.median(pn):.3f}, newstest2012 {np.median(pw):.3f}")
    print(f"threshold keeping {args.keep:g} of the held-out NTREX pairs: {chosen:g}; REFreSD's best macro-F "
          f"threshold (two decimals, in-sample): {best_refresd:g}; stored now: {d.model.threshold:g}\n")
    print("| threshold | NTREX held out kept | NTREX dev.en-fr kept | newstest2012 kept | REFreSD macro-F | accuracy | "
          "equivalent kept | unrelated dropped | some-difference dropped |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t in sorted({*args.thresholds, chosen, float(best_refresd)}, reverse=True):
        fe, fd = f1s(pr >= t, y)
        print(f"| {t:g} | {(ph >= t).mean():.3f} | {(pn >= t).mean():.3f} | {(pw >= t).mean():.3f} | {(fe + fd) / 2:.3f} | "
              f"{((pr >= t) == y).mean():.3f} | {(pr[y] >= t).mean():.3f} | {(pr[three == 'unrelated'] < t).mean():.3f} | "
              f"{(pr[three == 'some_meaning_difference'] < t).mean():.3f} |")

    if args.write:
        from bimine.encoders.base import model_folder
        from bimine.scoring.divergence import DivergenceModel

        path = os.path.join(model_folder(load_encoder("default")), "divergence.safetensors")
        m = DivergenceModel.load(path)
        m.meta["threshold"] = chosen
        m.meta["threshold_chosen"] = (f"keeps {args.keep:g} of {len(held)} NTREX-128 en-fr pairs (not those of "
                                      "examples/dev.en-fr.tsv): python -m benchmarks.divergence_threshold --write")
        m.meta["refresd_threshold"] = float(best_refresd)
        m.save(path)
        print(f"\nwrote threshold {chosen:g} (refresd_threshold {best_refresd:g}) into {path}")


if __name__ == "__main__":
    main()
