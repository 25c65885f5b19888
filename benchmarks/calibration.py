"""Is the calibrated confidence calibrated? (issue 11 §1): expected calibration error and a
reliability plot on dev pairs, raw cosine against the confidence head of paper 000 §2.4.2.

Usage (from the repository root)::

    python -m benchmarks.calibration [--model default] [--train] [--plot docs/img/calibration.png]
                                     [--json .bench/calibration.json] [--sets news,tatoeba,ntrex]
                                     [--ntrex-langs khm,pus,...] [--no-global]

(e5-small's head, shipped in bimine/models/e5-small, on the sets where -m auto picks it:
``--model e5-small --sets news,ntrex --ntrex-langs khm,pus,mya,amh,lao,hau,som,kor,fra --no-global --plot ""``;
the narrower sets and no global fit keep e5-small's embedding to minutes.)

Held-out training pairs: the default model was trained on every pair of ``train/``, so the
head is trained on dev pairs no other benchmark uses: newstest2009 and newstest2010, en-de,
en-es and en-fr (15,042 pairs, both directions). ``--train`` writes those six TSVs to
``.bench/calibration/`` and runs, as a user would::

    bimine calibrate -m MODEL -o .bench/calibration/MODEL.safetensors .bench/calibration/newstest20{09,10}.en-*.tsv

(without ``--train`` the head stored in the model's folder is measured: for the shipped
model, the head made by that command with ``-o bimine/models/default/calibration.safetensors``).

Measured on dev pairs the head never saw, in two settings:

* **in-batch** (as trained): the pairs cut into blocks of 128, every source scored against
  every target of its block (1 right, 127 wrong);
* **retrieval** (as in mining and document matching): every source against its 4 nearest
  targets of the whole set (right when it is the translation).

Sets: newstest2012 and newstest2013 en-de/es/fr (both directions), tatoeba-test en-de/es/fr
(short everyday sentences), and NTREX-128 for every language against English (languages
the head never saw; both directions, pooled). Scores compared: the raw cosine (clipped to
[0, 1]), one global logistic fit ``sigmoid(a cos + b)`` on the head's training pairs (what a
single threshold amounts to), and the head. ECE uses 15 equal-width bins. Without
``../shared/data`` the script says so and exits 0.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks.harness import Bench
from bimine.encoders import load_encoder
from bimine.scoring.calibration import Calibration
from bimine.scoring.calibration_metrics import brier, expected_calibration_error, reliability
from bimine.scoring.logistic import fit_logistic_1d
from bimine.text.io import read_lines

DEV = Path(os.environ.get("BIMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")) / "dev"
WORK = Path(".bench/calibration")
LANGS = ("de", "es", "fr")
BLOCK = 128


def _pairs(a: Path, b: Path) -> tuple[list[str], list[str]]:
    s, t = list(read_lines(a)), list(read_lines(b))
    keep = [i for i in range(min(len(s), len(t))) if s[i].strip() and t[i].strip()]
    return [s[i] for i in keep], [t[i] for i in keep]


def train_files() -> list[Path]:
    WORK.mkdir(parents=True, exist_ok=True)
    out = []
    for year in (2009, 2010):
        for x in LANGS:
            base = DEV / "newstest" / f"newstest{year}.en-{x}"
            s, t = _pairs(Path(f"{base}.en"), Path(f"{base}.{x}"))
            p = WORK / f"newstest{year}.en-{x}.tsv"
            p.write_text("".join(f"{a}\t{b}\n" for a, b in zip(s, t)), encoding="utf-8")
            out.append(p)
    return out


def eval_sets(only: tuple[str, ...] = ("news", "tatoeba", "ntrex"),
              ntrex_langs: tuple[str, ...] | None = None) -> dict[str, list[tuple[list[str], list[str]]]]:
    """name -> list of (sources, targets), each one language pair and direction; ``only`` the
    kinds of sets named, NTREX-128 in ``ntrex_langs`` only (file codes: khm, fra) where given."""
    sets: dict[str, list] = {}
    for year in (2012, 2013) if "news" in only else ():
        for x in LANGS:
            base = DEV / "newstest" / f"newstest{year}.en-{x}"
            s, t = _pairs(Path(f"{base}.en"), Path(f"{base}.{x}"))
            sets.setdefault("newstest2012-13", []).extend([(s, t), (t, s)])
    for x in LANGS if "tatoeba" in only else ():
        base = DEV / "tatoeba-test" / f"tatoeba-test.en-{x}"
        s, t = _pairs(Path(f"{base}.en"), Path(f"{base}.{x}"))
        sets.setdefault("tatoeba-test", []).extend([(s, t), (t, s)])
    nt = DEV / "ntrex128" / "NTREX-128"
    eng = nt / "newstest2019-src.eng.txt.gz"
    if eng.exists() and "ntrex" in only:
        en = list(read_lines(eng))
        for f in sorted(glob.glob(str(nt / "newstest2019-ref.*.txt*"))):
            if os.path.basename(f).startswith("newstest2019-ref.eng"):
                continue
            if ntrex_langs and os.path.basename(f).split(".")[1] not in ntrex_langs:
                continue
            xx = list(read_lines(f))
            keep = [i for i in range(min(len(en), len(xx))) if en[i].strip() and xx[i].strip()]
            s, t = [en[i] for i in keep], [xx[i] for i in keep]
            name = "ntrex-128 (" + (", ".join(ntrex_langs) if ntrex_langs else "all languages") + ")"
            sets.setdefault(name, []).extend([(s, t), (t, s)])
    return sets


def scores_of(enc, cal: Calibration, s: list[str], t: list[str]) -> dict[str, tuple[np.ndarray, ...]]:
    """(cosine, confidence, label) arrays for the in-batch and retrieval settings."""
    u, v = enc.encode(s, "und"), enc.encode(t, "und")
    out = {}
    cs, ps, ys = [], [], []
    for a in range(0, len(u) - 1, BLOCK):
        uu, vv = u[a: a + BLOCK], v[a: a + BLOCK]
        if len(uu) < 2:
            continue
        cos = uu @ vv.T
        cs.append(cos.ravel())
        ps.append(cal.from_cosine(uu, cos).ravel())
        ys.append(np.eye(len(uu), dtype=bool).ravel())
    out["in-batch"] = (np.concatenate(cs), np.concatenate(ps), np.concatenate(ys))
    sim = u @ v.T
    k = min(4, sim.shape[1])
    top = np.argpartition(-sim, k - 1, axis=1)[:, :k]
    cos = np.take_along_axis(sim, top, axis=1)
    right = top == np.arange(len(u))[:, None]
    # a candidate whose text equals the translation's counts as right (repeated sentences)
    right |= np.array([[t[j] == t[i] for j in row] for i, row in enumerate(top)])
    out["retrieval top-4"] = (cos.ravel(), cal.from_cosine(u, cos).ravel(), right.ravel())
    return out


def main() -> int:
    bench = Bench("calibration", __doc__)
    bench.arg("--model", default="default")
    bench.arg("--train", action="store_true", help="train the head here first (bimine calibrate)")
    bench.arg("--retrieved", type=int, default=None, help="with --train: bimine calibrate --retrieved R")
    bench.arg("--plot", default="docs/img/calibration.png")
    bench.arg("--sets", default="news,tatoeba,ntrex", help="kinds of evaluation sets (news, tatoeba, ntrex)")
    bench.arg("--ntrex-langs", default=None, help="NTREX-128 languages only (file codes: khm,pus,...)")
    bench.arg("--no-global", action="store_true", help="skip the global logistic fit (it embeds the training "
              "pairs again: minutes with e5-small)")
    a = bench.parse()
    if not DEV.is_dir():
        print(f"no dev data at {DEV}: nothing to measure")
        return 0
    enc = load_encoder(a.model)
    files = train_files()
    head_path = None
    if a.train:
        head_path = WORK / f"{Path(a.model).name}.safetensors"
        cmd = [sys.executable, "-m", "bimine.cli.main", "calibrate", "-m", a.model, "-o", str(head_path),
               "--no-progress", *(["--retrieved", str(a.retrieved)] if a.retrieved is not None else []),
               *map(str, files)]
        print("$ " + " ".join(["bimine"] + cmd[3:]))
        r = subprocess.run(cmd, capture_output=True, text=True)
        print(r.stderr.strip())
        if r.returncode:
            return r.returncode
    cal = Calibration.for_encoder(enc, head_path)
    # the global fit is made on the head's own training pairs, in-batch, as the head was trained
    ga = gb = None  # --no-global: no global fit, its columns say "-"
    if not a.no_global:
        tr_cos, tr_y = [], []
        for f in files:
            rows = [line.split("\t") for line in read_lines(f)]
            s, t = [r[0] for r in rows], [r[1] for r in rows]
            c, _, y = scores_of(enc, cal, s, t)["in-batch"]
            tr_cos.append(c)
            tr_y.append(y)
        ga, gb = fit_logistic_1d(np.concatenate(tr_cos), np.concatenate(tr_y).astype(np.float64))
    bench.extra.update(model=enc.model_id, head=cal.config, global_fit=[ga, gb])
    print(f"# {bench.command} ({bench.result()['date']}); head: {head_path or 'stored with the model'}; "
          + (f"global fit sigmoid({ga:.2f} cos + {gb:.2f})" if ga is not None else "no global fit"))
    print("| set | setting | pairs scored | share right | ECE raw cosine | ECE global fit | ECE head | "
          "Brier raw / global / head |")
    print("|---|---|---|---|---|---|---|---|")
    plot_data = {}
    only = tuple(a.sets.split(","))
    for name, pairs in eval_sets(only, tuple(a.ntrex_langs.split(",")) if a.ntrex_langs else None).items():
        acc: dict[str, list] = {}
        for s, t in pairs:
            for setting, (c, p, y) in scores_of(enc, cal, s, t).items():
                acc.setdefault(setting, []).append((c, p, y))
        for setting, parts in acc.items():
            c = np.concatenate([x[0] for x in parts])
            p = np.concatenate([x[1] for x in parts])
            y = np.concatenate([x[2] for x in parts])
            raw = np.clip(c, 0.0, 1.0)
            glob_p = 1 / (1 + np.exp(-np.clip(ga * c + gb, -60, 60))) if ga is not None else None
            row = {"set": name, "setting": setting, "n": int(len(y)), "positive_rate": float(y.mean()),
                   "ece_raw": expected_calibration_error(raw, y),
                   "ece_global": expected_calibration_error(glob_p, y) if glob_p is not None else None,
                   "ece_head": expected_calibration_error(p, y), "brier_raw": brier(raw, y),
                   "brier_global": brier(glob_p, y) if glob_p is not None else None, "brier_head": brier(p, y)}
            bench.rows.append(row)

            def f4(v):
                return f"{v:.4f}" if v is not None else "-"

            print(f"| {name} | {setting} | {row['n']:,} | {row['positive_rate']:.3f} | {row['ece_raw']:.4f} | "
                  f"{f4(row['ece_global'])} | **{row['ece_head']:.4f}** | {row['brier_raw']:.4f} / "
                  f"{f4(row['brier_global'])} / {row['brier_head']:.4f} |")
            sys.stdout.flush()
            plot_data[(name, setting)] = (raw, glob_p if glob_p is not None else raw, p, y)
    if a.plot:
        _plot(plot_data, a.plot, enc.model_id)
        print(f"\nreliability plot: {a.plot}")
    bench.save()
    return 0


def _plot(data: dict, path: str, model_id: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(data)
    sets = list(dict.fromkeys(k[0] for k in keys))
    settings = list(dict.fromkeys(k[1] for k in keys))
    fig, axes = plt.subplots(len(settings), len(sets), figsize=(4.4 * len(sets), 4.2 * len(settings)),
                             squeeze=False)
    for key in keys:
        ax = axes[settings.index(key[1])][sets.index(key[0])]
        raw, glob_p, head, y = data[key]
        ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="perfect")
        for probs, label, color in ((raw, "raw cosine", "tab:red"), (glob_p, "global fit", "tab:orange"),
                                    (head, "calibrated (head)", "tab:blue")):
            r = reliability(probs, y, 15)
            used = r["count"] >= 20
            ax.plot(r["confidence"][used], r["accuracy"][used], marker="o", ms=3, color=color,
                    label=f"{label} (ECE {expected_calibration_error(probs, y):.3f})")
        ax.set_title(f"{key[0]}\n{key[1]}", fontsize=9)
        ax.set_xlabel("predicted probability (bin mean)")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    for row in axes:
        row[0].set_ylabel("share of right pairs in the bin")
    fig.suptitle(f"Reliability of the confidence of {model_id} (bins with 20+ pairs)", fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
