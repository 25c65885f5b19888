"""Do the base model's heads transfer to a model adapted by ``bimine adapt``? (issue 73, item 3)

Usage (from the repository root, after ``python -m benchmarks.pool_retrieval --adapt default``,
which writes the adapted folders ``.bench/adapted/default-LANG``)::

    python -m benchmarks.adapted_heads [--adapted .bench/adapted] [--json .bench/adapted_heads.json]

For each adapted language (adapted on NTREX-128 lines 1-1,000 of that language) and for French
(not adapted: the reference), on NTREX-128 lines 1,001-1,997 against their English:

* **calibration** (paper 000 §2.4.2, the head shipped with the base model): every sentence against
  its 4 nearest English sentences of the 997 (right when it is the translation), the head's
  confidence; expected calibration error (15 bins) and Brier score, with the base model's vectors
  and with the adapted model's (the same head);
* **the filter's trained combination** (``combiner.json``): ``bimine score`` on the 997 true pairs
  and on as many wrong ones (each sentence with the English of the sentence 7 lines further),
  the area under the ROC curve of the combined ``score``, base model and adapted model;

(The rescorer is not measured: its trees read the mining kNN's features; it stays refused for a
side in an adapted language.)

The adapted model is given the base model's heads here (the heads stored with the base name the
base model's id; the adapted model accepts them: ``bimine.encoders.base.head_ids``).
"""

from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path

import numpy as np

from benchmarks.harness import Bench
from bimine.encoders import load_encoder
from bimine.scoring.calibration import Calibration
from bimine.scoring.calibration_metrics import brier, expected_calibration_error

DATA = Path(os.environ.get("BIMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
NTREX = DATA / "dev/ntrex128/NTREX-128"
CODES = {"km": "khm", "ps": "pus", "my": "mya", "am": "amh", "lo": "lao", "ha": "hau", "so": "som", "ko": "kor",
         "fr": "fra"}
SHIFT = 7


def _lines(name: str) -> list[str]:
    with gzip.open(NTREX / f"newstest2019-{name}.txt.gz", "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """ROC AUC: the chance that a right pair scores above a wrong one (ties count half)."""
    s = np.concatenate([pos, neg])
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    ranks[order] = np.arange(1, len(s) + 1)
    for v in np.unique(s):  # ties: mean rank
        m = s == v
        if m.sum() > 1:
            ranks[m] = ranks[m].mean()
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def retrieval(enc, cal: Calibration, xs: list[str], en: list[str], lang: str):
    u, v = enc.encode(xs, lang), enc.encode(en, "en")
    sim = u @ v.T
    top = np.argsort(-sim, axis=1)[:, :4]
    cos = np.take_along_axis(sim, top, axis=1)
    right = top == np.arange(len(u))[:, None]
    return cal.from_cosine(u, cos), right


def combined_scores(model: str, xs: list[str], en: list[str], lang: str, tmp: Path):
    from bimine.filtering.job import FilterJob, run_filter

    n = len(xs)
    rows = [(xs[i], en[i]) for i in range(n)] + [(xs[i], en[(i + SHIFT) % n]) for i in range(n)]
    inp = tmp / f"pairs-{lang}.tsv"
    inp.write_text("".join(f"{a}\t{b}\n" for a, b in rows), encoding="utf-8")
    out = tmp / f"scored-{lang}-{Path(model).name}.tsv"
    res = run_filter(FilterJob(input=str(inp), output=str(out), src_lang=lang, tgt_lang="en", model=model,
                               progress=False))
    lines = out.read_text(encoding="utf-8").splitlines()
    col = lines[0].split("\t").index("score")
    s = np.array([float(line.split("\t")[col]) for line in lines[1:]])
    notes = [w for w in res.result.warnings if "combin" in w]
    return s[:n], s[n:], notes


def main() -> int:
    bench = Bench("adapted_heads", __doc__)
    bench.arg("--adapted", default=".bench/adapted")
    bench.arg("--langs", default="km,ps,my,am,lo,ha,so,ko")
    a = bench.parse()
    if not NTREX.is_dir():
        print(f"no dev data at {NTREX}: nothing to measure")
        return 0
    tmp = Path(".bench/adapted_heads")
    tmp.mkdir(parents=True, exist_ok=True)
    en = _lines("src.eng")[1000:]
    base = load_encoder("default")
    cal = Calibration.for_encoder(base)
    print(f"# {bench.command} ({bench.result()['date']}); base {base.model_id}")
    print("| language | model | ECE head | Brier head | share right (top-4) | filter score AUC |")
    print("|---|---|---:|---:|---:|---:|")
    for lang in ["fr"] + a.langs.split(","):
        xs_all = _lines(f"ref.{CODES[lang]}")
        xs = xs_all[1000:]
        models = [("default", "default")]
        folder = Path(a.adapted) / f"default-{lang}"
        if lang != "fr":
            if not (folder / "config.json").is_file():
                print(f"| {lang} | (no adapted folder {folder}) |")
                continue
            models.append(("adapted", str(folder)))
        for name, model in models:
            enc = load_encoder(model)
            cal_m = Calibration.for_encoder(enc) if name == "adapted" else cal
            p, right = retrieval(enc, cal_m, xs, en, lang)
            y = right.ravel()
            pos, neg, notes = combined_scores(model, xs, en, lang, tmp)
            row = {"lang": lang, "model": name, "ece_head": expected_calibration_error(p.ravel(), y),
                   "brier_head": brier(p.ravel(), y), "right": float(y.mean()), "filter_auc": auc(pos, neg),
                   "notes": notes}
            bench.rows.append(row)
            print(f"| {lang} | {name} | {row['ece_head']:.4f} | {row['brier_head']:.4f} | {row['right']:.3f} | "
                  f"{row['filter_auc']:.4f} |"
                  + (f" {'; '.join(notes)}" if notes else ""))
            sys.stdout.flush()
    bench.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
