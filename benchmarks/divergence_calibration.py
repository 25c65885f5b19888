"""Calibration of the shipped divergence model's score (issue 55 §3).

Usage (from the repository root)::

    python -m benchmarks.divergence_calibration [--write] [--json .bench/divergence_calibration.json]

``bimine divergence`` calls its ``score`` "the probability that the pair is equivalent", but the
model's raw output is no probability on real clean pairs: the 300 clean NTREX translations of
examples/dev.en-fr.tsv got a median of 0.39. This script fits a Platt map
(:func:`bimine.training.divergence.fit_platt`, ``sigmoid(a * logit(raw) + b)``, the two classes
weighted equally) on held-out pairs and measures it on others, all of them from
``../shared/data/dev`` (none was seen in training: the training corpora were decontaminated
against dev/), English-French only (the model's one language pair):

* **fit** (the map is fitted here): the 1,697 NTREX-128 en-fr pairs not in
  examples/dev.en-fr.tsv; the first 1,500 newstest2012 en-fr pairs; 1,500 pairs drawn from the
  first half of tatoeba-test en-fr; UD PUD en-fr lines 1-500;
* **evaluation** (never fitted on): the 300 pairs of examples/dev.en-fr.tsv (NTREX); the first
  1,500 newstest2013 en-fr pairs; 1,500 drawn from the second half of tatoeba-test en-fr; UD
  PUD lines 501-1,000; and REFreSD (1,039 labelled Wikipedia pairs, real divergences).

Each clean set gets as many divergent pairs, made from its own pairs by
:func:`bimine.training.divergence_data.calibration_examples` (equal shares of random mismatches,
mismatches that pass 004's length and dictionary filters, a phrase deleted, a word replaced, a
sentence appended); the dictionary comes from a word aligner trained on newstest2009-2011 and
2012 en-fr (fit side only). Printed: the map; per evaluation set the median score and the share
at least 0.5 of its clean and of its divergent pairs, and the expected calibration error (ECE,
10 equal-width bins) of the balanced set, before (raw) and after; the divergent pairs by kind;
a reliability table of all evaluation pairs; REFreSD by label; the stored thresholds carried
through the map. ``--write`` stores the map (and the thresholds carried through it) in the
shipped model. ``--corpus-map`` also fits the map that ``bimine train-divergence`` would fit for
the shipped recipe (held-out pairs of its training corpora, ``../shared/data/train``) and
measures it on the same evaluation sets. Without the shared data the script says so and exits 0.
"""

from __future__ import annotations

import gzip
import os
import time

import numpy as np

from benchmarks.filter_dev import REPO, read_lines
from benchmarks.filter_divergence import read_refresd, refresd_path
from benchmarks.harness import Bench

DEFAULT_DATA = os.environ.get("BIMINE_SHARED_DATA", os.path.join(REPO, "..", "shared", "data"))
BINS = 10


def _tsv(path: str) -> tuple[list[str], list[str]]:
    rows = [line.split("\t") for line in open(path, encoding="utf-8").read().splitlines()]
    return [a for a, _ in rows], [b for _, b in rows]


def _nonblank(src: list[str], tgt: list[str]) -> tuple[list[str], list[str]]:
    keep = [k for k in range(len(src)) if src[k].strip() and tgt[k].strip()]
    return [src[k] for k in keep], [tgt[k] for k in keep]


def _sample(src: list[str], tgt: list[str], n: int, seed: int) -> tuple[list[str], list[str]]:
    if len(src) <= n:
        return src, tgt
    pick = np.sort(np.random.default_rng(seed).choice(len(src), size=n, replace=False)).tolist()
    return [src[i] for i in pick], [tgt[i] for i in pick]


def clean_sets(data: str) -> tuple[dict, dict, tuple[list[str], list[str]]]:
    """``(fit, evaluation, aligner pairs)``: name -> (English, French) of clean translations."""
    dev = os.path.join(data, "dev")
    ex_src, ex_tgt = _tsv(os.path.join(REPO, "examples", "dev.en-fr.tsv"))
    nt = os.path.join(dev, "ntrex128", "NTREX-128")
    en, fr = (gzip.open(os.path.join(nt, f"newstest2019-{n}.txt.gz"), "rt", encoding="utf-8").read().split("\n")[:-1]
              for n in ("src.eng", "ref.fra"))
    in_examples = set(ex_src)
    held = [i for i in range(len(en)) if en[i] not in in_examples]
    news = os.path.join(dev, "newstest")

    def newstest(year: int) -> tuple[list[str], list[str]]:
        base = os.path.join(news, f"newstest{year}.en-fr")
        return read_lines(base + ".en"), read_lines(base + ".fr")

    tat = os.path.join(dev, "tatoeba-test", "tatoeba-test.en-fr")
    t_en, t_fr = read_lines(tat + ".en"), read_lines(tat + ".fr")
    half = len(t_en) // 2
    pud = os.path.join(dev, "ud-pud")
    p_en, p_fr = read_lines(os.path.join(pud, "pud.en")), read_lines(os.path.join(pud, "pud.fr"))
    n12, n13 = newstest(2012), newstest(2013)
    fit = {
        f"NTREX-128 not in examples ({len(held):,})": ([en[i] for i in held], [fr[i] for i in held]),
        "newstest2012 (first 1,500)": (n12[0][:1500], n12[1][:1500]),
        "tatoeba-test (1,500 of the first half)": _sample(t_en[:half], t_fr[:half], 1500, 1),
        "UD PUD (lines 1-500)": (p_en[:500], p_fr[:500]),
    }
    evaluation = {
        "examples/dev.en-fr.tsv (300 NTREX)": (ex_src, ex_tgt),
        "newstest2013 (first 1,500)": (n13[0][:1500], n13[1][:1500]),
        "tatoeba-test (1,500 of the second half)": _sample(t_en[half:], t_fr[half:], 1500, 2),
        "UD PUD (lines 501-1,000)": (p_en[500:], p_fr[500:]),
    }
    al_src, al_tgt = [], []
    for year in (2009, 2010, 2011, 2012):
        a, b = newstest(year)
        al_src += a
        al_tgt += b
    return ({k: _nonblank(*v) for k, v in fit.items()}, {k: _nonblank(*v) for k, v in evaluation.items()},
            _nonblank(al_src, al_tgt))


def ece(p: np.ndarray, y: np.ndarray) -> float:
    from bimine.scoring.calibration_metrics import expected_calibration_error

    return expected_calibration_error(p, y, bins=BINS)


def main() -> None:
    b = Bench("divergence_calibration", __doc__)
    b.arg("--data", default=DEFAULT_DATA)
    b.arg("--write", action="store_true", help="store the fitted map in the shipped divergence model")
    b.arg("--seed", type=int, default=0)
    b.arg("--corpus-map", action="store_true",
          help="also fit the map train-divergence would (held-out pairs of the six training corpora) and measure it")
    b.arg("--align-pairs", type=int, default=60000, help="--corpus-map: pairs its word aligner is trained on")
    args = b.parse()
    if not os.path.exists(refresd_path(args.data)) or not os.path.isdir(os.path.join(args.data, "dev", "ntrex128")):
        print(f"divergence_calibration: skipped, the dev sets are not under {args.data}")
        return
    from bimine.encoders import load_encoder
    from bimine.scoring.divergence import DivergenceModel, PlattCalibration, default_path
    from bimine.training.aligner import train_aligner
    from bimine.training.divergence import fit_platt
    from bimine.training.divergence_data import CALIBRATION_KINDS, calibration_examples

    t0 = time.time()
    fit_sets, eval_sets, (al_src, al_tgt) = clean_sets(args.data)
    aligner = train_aligner(al_src, al_tgt, src_lang="en", tgt_lang="fr")
    print(f"word aligner for the negatives' dictionary: {len(al_src):,} newstest2009-2012 pairs, "
          f"{time.time() - t0:.0f} s")
    enc = load_encoder("default")
    model = DivergenceModel.load(default_path())

    def raw(src, tgt):
        parts = [model.raw_score(src[i:i + 500], tgt[i:i + 500], src_lang="en", tgt_lang="fr", encoder=enc)
                 for i in range(0, len(src), 500)]
        return np.concatenate(parts) if parts else np.zeros(0)

    def examples(sets):
        out = {}
        for k, (name, (s, t)) in enumerate(sets.items()):
            ex, counts = calibration_examples(s, t, aligner, seed=args.seed + k)
            out[name] = (raw([e.src for e in ex], [e.tgt for e in ex]), np.array([e.label for e in ex]),
                         np.array([e.kind for e in ex]), counts)
        return out

    t1 = time.time()
    fit = examples(fit_sets)
    ev = examples(eval_sets)
    print(f"scored {sum(len(v[0]) for v in (*fit.values(), *ev.values())):,} pairs in {time.time() - t1:.0f} s")
    r_fit = np.concatenate([v[0] for v in fit.values()])
    y_fit = np.concatenate([v[1] for v in fit.values()])
    cal = fit_platt(r_fit, y_fit)
    prior = float(np.log(5.0))  # the 1:5 training mix alone: a = 1, b = log 5
    print(f"\nPlatt map fitted on {len(r_fit):,} held-out pairs ({int(y_fit.sum()):,} clean, "
          f"{int((1 - y_fit).sum()):,} divergent, the classes weighted equally): score = sigmoid({cal.a:.4f} * "
          f"logit(raw) + {cal.b:.4f}) (the 1:5 training prior alone would be a = 1, b = {prior:.4f})")
    if model.calibrated:
        st = model.calibration
        print(f"stored in the shipped model now: a = {st.a:.4f}, b = {st.b:.4f}")

    def med(x):
        return f"{np.median(x):.3f}" if len(x) else "–"

    def ge(x):
        return f"{(x >= 0.5).mean():.3f}" if len(x) else "–"

    rows = []
    print("\n| set | clean pairs | clean median raw → calibrated | clean ≥ 0.5 raw → calibrated | divergent "
          "median raw → calibrated | divergent ≥ 0.5 raw → calibrated | ECE raw → calibrated |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for part, sets in (("fit", fit), ("evaluation", ev)):
        for name, (r, y, _, _) in sets.items():
            c = cal(r)
            pos = y > 0.5
            row = {"split": part, "set": name, "clean": int(pos.sum()), "divergent": int((~pos).sum()),
                   "clean_median_raw": float(np.median(r[pos])), "clean_median_cal": float(np.median(c[pos])),
                   "clean_ge05_raw": float((r[pos] >= 0.5).mean()), "clean_ge05_cal": float((c[pos] >= 0.5).mean()),
                   "div_median_raw": float(np.median(r[~pos])), "div_median_cal": float(np.median(c[~pos])),
                   "div_ge05_raw": float((r[~pos] >= 0.5).mean()), "div_ge05_cal": float((c[~pos] >= 0.5).mean()),
                   "ece_raw": ece(r, pos), "ece_cal": ece(c, pos)}
            rows.append(row)
            tag = " (fit: in-sample)" if part == "fit" else ""
            print(f"| {name}{tag} | {row['clean']:,} | {med(r[pos])} → {med(c[pos])} | "
                  f"{ge(r[pos])} → {ge(c[pos])} | "
                  f"{med(r[~pos])} → {med(c[~pos])} | {ge(r[~pos])} → {ge(c[~pos])} | "
                  f"{row['ece_raw']:.3f} → {row['ece_cal']:.3f} |")
    r_ev = np.concatenate([v[0] for v in ev.values()])
    y_ev = np.concatenate([v[1] for v in ev.values()]) > 0.5
    k_ev = np.concatenate([v[2] for v in ev.values()])
    c_ev = cal(r_ev)
    print(f"| all evaluation sets | {int(y_ev.sum()):,} | {med(r_ev[y_ev])} → {med(c_ev[y_ev])} | "
          f"{ge(r_ev[y_ev])} → "
          f"{ge(c_ev[y_ev])} | {med(r_ev[~y_ev])} → {med(c_ev[~y_ev])} | {ge(r_ev[~y_ev])} → {ge(c_ev[~y_ev])} | "
          f"{ece(r_ev, y_ev):.3f} → {ece(c_ev, y_ev):.3f} |")
    b.rows = rows

    print("\nDivergent evaluation pairs by kind:\n\n"
          "| kind | pairs | median raw → calibrated | ≥ 0.5 raw → calibrated |")
    print("|---|---:|---:|---:|")
    for kind in CALIBRATION_KINDS:
        m = k_ev == kind
        print(f"| {kind} | {int(m.sum()):,} | {med(r_ev[m])} → {med(c_ev[m])} | {ge(r_ev[m])} → {ge(c_ev[m])} |")

    print("\nReliability, all evaluation pairs (half clean, half divergent): per bin of the score, the pairs in it, "
          "their mean score and the share that are clean\n")
    print("| bin | raw: pairs | raw: mean score | raw: share clean | calibrated: pairs | calibrated: mean score | "
          "calibrated: share clean |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    from bimine.scoring.calibration_metrics import reliability

    rr, rc = reliability(r_ev, y_ev, BINS), reliability(c_ev, y_ev, BINS)

    def cell(t, i, key):
        return "–" if not t["count"][i] else f"{t[key][i]:.3f}"

    for i in range(BINS):
        print(f"| {rr['edges'][i]:.1f}-{rr['edges'][i + 1]:.1f} | {int(rr['count'][i]):,} | "
              f"{cell(rr, i, 'confidence')} | {cell(rr, i, 'accuracy')} | {int(rc['count'][i]):,} | "
              f"{cell(rc, i, 'confidence')} | {cell(rc, i, 'accuracy')} |")

    rows_r = read_refresd(refresd_path(args.data))
    r_r = raw([x[2] for x in rows_r], [x[3] for x in rows_r])
    c_r = cal(r_r)
    lab = np.array([x[1] for x in rows_r])
    eq = np.array([x[0] == "equivalent" for x in rows_r])
    print("\nREFreSD (real labels; any meaning difference counts as divergent):\n\n"
          "| label | pairs | median raw → calibrated | ≥ 0.5 raw → calibrated |\n|---|---:|---:|---:|")
    for name in ("no_meaning_difference", "some_meaning_difference", "unrelated"):
        m = lab == name
        print(f"| {name} | {int(m.sum()):,} | {med(r_r[m])} → {med(c_r[m])} | {ge(r_r[m])} → {ge(c_r[m])} |")
    share = float(eq.mean())
    moved = PlattCalibration(cal.a, cal.b + float(np.log(share / (1 - share))))  # the map's 1:1 prior -> REFreSD's
    print(f"\nREFreSD ECE (equivalent vs divergent, its own {100 * share:.0f} % / {100 * (1 - share):.0f} % mix): "
          f"raw {ece(r_r, eq):.3f}, calibrated {ece(c_r, eq):.3f}, calibrated with the prior moved to "
          f"{100 * share:.0f} % equivalent (b + logit({share:.3f})) {ece(moved(r_r), eq):.3f}")
    only_prior = PlattCalibration(1.0, prior)
    print(f"All evaluation pairs, ECE: raw {ece(r_ev, y_ev):.3f}; the 1:5 training prior undone alone (a = 1, "
          f"b = log 5) {ece(only_prior(r_ev), y_ev):.3f}; the fitted map {ece(c_ev, y_ev):.3f}")

    stored = model.calibration  # thresholds on the raw scale: back through a stored map first
    old = {k: float(stored.inverse(model.meta[k])) if stored else float(model.meta[k])
           for k in ("threshold", "refresd_threshold") if k in model.meta}
    print("\nStored thresholds carried through the map (the same pairs pass): "
          + ", ".join(f"{k} {v:.4g} → {float(cal(v)):.4f}" for k, v in old.items()))
    if args.corpus_map:
        b.extra["corpus_map"] = corpus_map(args, model, enc, ev, med, ge)
    b.extra.update({"a": cal.a, "b": cal.b, "thresholds_raw": old,
               "thresholds_calibrated": {k: float(cal(v)) for k, v in old.items()},
               "refresd": {"ece_raw": ece(r_r, eq), "ece_cal": ece(c_r, eq)},
               "evaluation_ece": {"raw": ece(r_ev, y_ev), "calibrated": ece(c_ev, y_ev)}})
    if args.write:
        counts = {name: {"clean": v[3]["positives"], **v[3]["by_kind"]} for name, v in fit.items()}
        model.set_calibration(cal, fitted_on="held-out en-fr dev pairs (NTREX-128 not in examples/dev.en-fr.tsv, "
                              "newstest2012, tatoeba-test first half, UD PUD 1-500) and as many synthetic divergences "
                              "made from them (bimine.training.divergence_data.calibration_examples), classes weighted "
                              "equally", pairs=counts, command="python -m benchmarks.divergence_calibration --write",
                              date=time.strftime("%Y-%m-%d"))
        model.save(default_path())
        print(f"\nwrote the calibration into {default_path()}: threshold {model.meta['threshold']:g}, "
              f"refresd_threshold {model.meta.get('refresd_threshold', float('nan')):g}")
    b.save()


TRAIN = ("tatoeba-manythings/tatoeba", "python-docs/python-docs", "django-docs/django-docs", "multi30k/multi30k",
         "gnome-help/gnome-help", "bible-sword/pairs/bible")  # the shipped model's corpora, in its command's order


def corpus_map(args, model, enc, ev: dict, med, ge) -> dict:
    """The map ``bimine train-divergence`` fits for the shipped recipe (1,000 held-out pairs of its
    training corpora that share no side with its 5,000 positives of 5+ words, seed 0; the
    dictionary of its negatives from an aligner on the first ``--align-pairs`` pairs, not 200,000),
    measured on the same evaluation sets."""
    import copy

    from bimine.text.io import read_parallel
    from bimine.training.aligner import train_aligner
    from bimine.training.divergence import calibrate_on_heldout

    src, tgt = [], []
    for stem in TRAIN:
        base = os.path.join(args.data, "train", f"{stem}.en-fr")
        for x, y in read_parallel(base + ".en.gz", base + ".fr.gz"):
            src.append(x)
            tgt.append(y)
    al = train_aligner(src[:args.align_pairs], tgt[:args.align_pairs], src_lang="en", tgt_lang="fr")
    m = copy.copy(model)
    m.meta = {k: v for k, v in model.meta.items() if k != "calibration"}
    c = calibrate_on_heldout(m, src, tgt, al, src_lang="en", tgt_lang="fr", positives=5000, min_words=5, seed=0,
                             n=1000, encoder=enc)
    cal = m.calibration
    print(f"\nThe map train-divergence fits for the shipped recipe (--corpus-map: {c['pairs']:,} held-out pairs of "
          f"its {len(src):,} training pairs and as many divergent ones; aligner on {args.align_pairs:,} pairs): "
          f"a = {cal.a:.4f}, b = {cal.b:.4f}; on those pairs the clean median {c['clean_median_raw']:.3f} -> "
          f"{c['clean_median']:.3f}, the divergent {c['divergent_median_raw']:.3f} -> {c['divergent_median']:.3f}\n")
    print("| evaluation set | clean median | clean ≥ 0.5 | divergent median | divergent ≥ 0.5 | ECE |\n"
          "|---|---:|---:|---:|---:|---:|")
    for name, (r, y, _, _) in ev.items():
        p, pos = cal(r), y > 0.5
        print(f"| {name} | {med(p[pos])} | {ge(p[pos])} | {med(p[~pos])} | {ge(p[~pos])} | {ece(p, pos):.3f} |")
    return {"a": cal.a, "b": cal.b, "pairs": c["pairs"], "align_pairs": args.align_pairs}


if __name__ == "__main__":
    main()
