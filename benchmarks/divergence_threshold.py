"""The shipped divergence model's threshold against clean news (issue 42).

    python -m benchmarks.divergence_threshold

For thresholds on P(equivalent): the share of clean translations kept (the 300 NTREX pairs of
examples/dev.en-fr.tsv, the first 1,000 newstest2012 en-fr pairs) beside REFreSD's macro-F,
accuracy, recall of its equivalent pairs, and the share of its unrelated and some-difference pairs
dropped. Skips when the shared data folder is absent.
"""

from __future__ import annotations

import argparse
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
    args = ap.parse_args()
    if not os.path.exists(refresd_path(args.data)):
        print(f"divergence_threshold: skipped, {refresd_path(args.data)} not found")
        return
    from bimine import load_encoder
    from bimine.filtering.scores import DivergenceScore

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
    print(f"median P(equivalent): REFreSD {np.median(pr):.3f}, NTREX dev.en-fr {np.median(pn):.3f}, "
          f"newstest2012 {np.median(pw):.3f}\n")
    print("| threshold | NTREX kept | newstest2012 kept | REFreSD macro-F | accuracy | equivalent kept | "
          "unrelated dropped | some-difference dropped |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for t in args.thresholds:
        fe, fd = f1s(pr >= t, y)
        print(f"| {t:g} | {(pn >= t).mean():.3f} | {(pw >= t).mean():.3f} | {(fe + fd) / 2:.3f} | "
              f"{((pr >= t) == y).mean():.3f} | {(pr[y] >= t).mean():.3f} | {(pr[three == 'unrelated'] < t).mean():.3f} | "
              f"{(pr[three == 'some_meaning_difference'] < t).mean():.3f} |")


if __name__ == "__main__":
    main()
