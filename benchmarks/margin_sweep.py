"""Paper 001 Figure 4 for bimine's transformer: dev BUCC-style F1 and the mean cosine of
positive and negative pairs, for additive margins 0 to 0.5.

Usage:
    python -m benchmarks.margin_sweep [--config configs/transformer.yaml] [--minutes 20] [--steps 1200]
        [--margins 0 0.1 0.2 0.3 0.4 0.5] [--out .bench/margins] [--json OUT] [--plot docs/img/margin-sweep.png]

For each margin m, one run of ``bimine train -c CONFIG --set loss.margin=m`` bounded by
``--minutes`` (and ``--steps`` for the learning-rate schedule) into ``OUT/m<m>``; a finished
run (its ``model/`` exists) is reused, a killed one resumed with ``--resume``, so the sweep
goes on across sessions. Each model then gets:

- BUCC-style F1 on the newstest sets of ``benchmarks.bucc_newstest`` (fr/de/es-en, Eq. 9,
  strategy max, threshold with the best F1 on the train split, F1 on the test split), their mean;
- the mean cosine of the 3,003 translation pairs of newstest2012 en-fr/de/es (positives), of
  as many mismatched pairs (each English sentence with the translation of another: a fixed
  random permutation whose fixed points move on by one), and of 001 Figure 4's own
  negatives: for each English sentence whose translation is retrieved first (en->xx, exact
  search over the file), the target retrieved second. These depend on the model (only the
  sentences it retrieves right have one; their count is in the JSON).
- the steps each run trained (a run bounded by minutes trains as many as the machine allows).

``--plot`` draws both against the margin, as 001 Figure 4 does (needs matplotlib). Skips
(exit 0) when the data folder is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from bimine.encoders import load_encoder
from bimine.eval.bucc import bucc_eval, embed_split, make_newstest_bucc, read_bucc
from bimine.mining.spec import MineConfig
from bimine.text.io import read_lines

LANGS = ("fr", "de", "es")


def train(config: str, margin: float, minutes: float, steps: int, out: str) -> str:
    run = os.path.join(out, f"m{margin:g}")
    model = os.path.join(run, "model")
    if os.path.isfile(os.path.join(model, "config.json")):
        return model
    resume = os.path.isdir(os.path.join(run, "checkpoint")) or os.path.isdir(os.path.join(run, "checkpoint.old"))
    cmd = [sys.executable, "-m", "bimine", "train", "-c", config, "-o", run, "--set", f"loss.margin={margin}",
           "--set", f"train.max_minutes={minutes}", "--set", f"train.steps={steps}", "--no-progress"]
    subprocess.run(cmd + (["--resume"] if resume else []), check=True)
    return model


def cosines(enc, data: str) -> tuple[float, float, float, int]:
    """Mean cosine of translations, of mismatched pairs, of 001's second-retrieved targets
    (and how many English sentences have one)."""
    pos, neg, hard = [], [], []
    rng = np.random.default_rng(0)
    for xx in LANGS:
        stem = os.path.join(data, f"dev/newstest/newstest2012.en-{xx}")
        en, other = list(read_lines(stem + ".en")), list(read_lines(f"{stem}.{xx}"))
        u, v = enc.encode(en, "en"), enc.encode(other, xx)
        perm = rng.permutation(len(en))
        perm = np.where(perm == np.arange(len(en)), (perm + 1) % len(en), perm)  # never the translation (a fixed point moves on by one)
        pos.append(np.sum(u * v, axis=1))
        neg.append(np.sum(u * v[perm], axis=1))
        sims = u @ v.T
        top2 = np.argsort(-sims, axis=1, kind="stable")[:, :2]
        right = np.flatnonzero(top2[:, 0] == np.arange(len(en)))
        hard.append(sims[right, top2[right, 1]])
    h = np.concatenate(hard)
    return (float(np.mean(np.concatenate(pos))), float(np.mean(np.concatenate(neg))),
            float(np.mean(h)) if len(h) else float("nan"), len(h))


def bucc_f1(enc, data: str, out: str) -> dict[str, float]:
    f1 = {}
    for xx in LANGS:
        d = os.path.join(out, "sets")
        make_newstest_bucc(os.path.join(data, "dev/newstest"), xx, d)
        splits = {s: read_bucc(*(os.path.join(d, f"{xx}-en.{s}.{e}") for e in (xx, "en", "gold")))
                  for s in ("train", "test")}
        emb = {s: embed_split(sp, enc, xx, "en") for s, sp in splits.items()}
        r = bucc_eval(emb["train"], emb["test"], MineConfig(score="eq9", strategy="max"))
        f1[xx] = round(100 * r["test"]["f1"], 2)
    return f1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="configs/transformer.yaml")
    ap.add_argument("--margins", type=float, nargs="+", default=[0, 0.1, 0.2, 0.3, 0.4, 0.5])
    ap.add_argument("--minutes", type=float, default=20)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--out", default=".bench/margins")
    ap.add_argument("--json", default=None)
    ap.add_argument("--plot", default=None, help="a PNG of F1 and the mean cosines against the margin")
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        print(f"skipped: {args.data} not found")
        return
    rows = []
    for m in args.margins:
        model = train(args.config, m, args.minutes, args.steps, args.out)
        enc = load_encoder(model)
        f1 = bucc_f1(enc, args.data, args.out)
        p, n, h, nh = cosines(enc, args.data)
        with open(os.path.join(model, "config.json"), encoding="utf-8") as f:
            steps = json.load(f)["training"]["steps"]
        row = {"margin": m, "steps": steps, "bucc_f1": f1, "bucc_f1_mean": round(float(np.mean(list(f1.values()))), 2),
               "cos_positive": round(p, 4), "cos_negative": round(n, 4), "cos_second_retrieved": round(h, 4),
               "second_retrieved_pairs": nh}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    if args.plot:
        plot(rows, args.plot)
    print("| margin | steps | BUCC-style F1 fr / de / es (mean) | mean cos, translations | mismatched | "
          "second retrieved (pairs) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        f = r["bucc_f1"]
        print(f"| {r['margin']:g} | {r['steps']:,} | {f['fr']:.1f} / {f['de']:.1f} / {f['es']:.1f} "
              f"({r['bucc_f1_mean']:.1f}) | {r['cos_positive']:.3f} | {r['cos_negative']:.3f} | "
              f"{r['cos_second_retrieved']:.3f} ({r['second_retrieved_pairs']:,}) |")


def plot(rows: list[dict], path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no figure", file=sys.stderr)
        return
    m = [r["margin"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for xx in LANGS:
        left.plot(m, [r["bucc_f1"][xx] for r in rows], marker="o", label=f"{xx}-en")
    left.plot(m, [r["bucc_f1_mean"] for r in rows], marker="s", color="black", label="mean")
    left.set_title("BUCC-style F1 on newstest (test split)")
    left.set_ylabel("F1 (%)")
    right.plot(m, [r["cos_positive"] for r in rows], marker="o", label="translation pairs")
    right.plot(m, [r["cos_second_retrieved"] for r in rows], marker="o",
               label="second retrieved, first right (001's negatives)")
    right.plot(m, [r["cos_negative"] for r in rows], marker="o", label="mismatched pairs")
    right.set_title("Mean cosine, newstest2012 en-fr/de/es")
    right.set_ylabel("cosine")
    for ax in (left, right):
        ax.set_xlabel("additive margin m")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"figure: {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
