"""BUCC 2018-style mining evaluation, and a BUCC-like dev set built from newstest.

BUCC files: ``<id><TAB><sentence>`` per line for each language, and a gold file
``<src_id><TAB><tgt_id>``. Mining runs with the chosen score and strategy and threshold 0
(every selected candidate); the threshold that maximises F1 on the *train* split is then
applied to the *test* split, as in the shared task and paper 001 §6.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from bimine.encoders import Encoder
from bimine.errors import InputError
from bimine.mining.pipeline import mine_sides, side_from_array
from bimine.mining.planted import BuccSplit, plant_pairs, take_gold  # noqa: F401  (plant_pairs, take_gold: the names eval.bucc had)
from bimine.mining.spec import MineConfig
from bimine.outputs import atomic_path
from bimine.text.io import read_lines


def read_bucc_sentences(path: str) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    for n, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        if "\t" not in line:
            raise InputError(f"{path}:{n}: expected '<id><TAB><sentence>'")
        i, t = line.split("\t", 1)
        ids.append(i)
        texts.append(t)
    if len(set(ids)) != len(ids):
        dup = next(i for i, c in Counter(ids).items() if c > 1)
        raise InputError(f"{path}: sentence ids are not unique ({dup!r} appears {Counter(ids)[dup]} times)")
    if not ids:
        raise InputError(f"{path}: no sentences (expected '<id><TAB><sentence>' lines)")
    return ids, texts


def read_bucc(src: str, tgt: str, gold: str) -> BuccSplit:
    """Read one split; refuses, naming the file: an empty side, an empty gold file, and gold
    lines whose ids are not in the sentence files (ids swapped between the columns, or the
    gold file of another split), which would otherwise give all-zero scores."""
    si, st = read_bucc_sentences(src)
    ti, tt = read_bucc_sentences(tgt)
    g = set()
    known_s, known_t = set(si), set(ti)
    for n, line in enumerate(read_lines(gold), start=1):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != 2:
            raise InputError(f"{gold}:{n}: expected '<src_id><TAB><tgt_id>', got {len(cells)} tab-separated field(s)")
        a, b = cells
        if a not in known_s or b not in known_t:
            if a in known_t and b in known_s:
                hint = "the two ids are swapped: the source id comes first"
            else:
                missing = [f"{x!r} is not an id of {f}" for x, known, f in ((a, known_s, src), (b, known_t, tgt))
                           if x not in known]
                hint = "; ".join(missing) + " (is this the gold file of this split?)"
            raise InputError(f"{gold}:{n}: expected '<src_id><TAB><tgt_id>' with ids present in {src} and {tgt}; {hint}")
        g.add((a, b))
    if not g:
        raise InputError(f"{gold}: no gold pairs (expected '<src_id><TAB><tgt_id>' lines); "
                         "precision and recall would be meaningless")
    return BuccSplit(si, st, ti, tt, g)


@dataclass
class EmbeddedSplit:
    split: BuccSplit
    x: np.ndarray
    y: np.ndarray


def embed_split(split: BuccSplit, encoder: Encoder, src_lang: str, tgt_lang: str) -> EmbeddedSplit:
    return EmbeddedSplit(split, encoder.encode(split.src, src_lang), encoder.encode(split.tgt, tgt_lang))


def mine_split(e: EmbeddedSplit, cfg: MineConfig) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Scores and id pairs of every candidate the strategy selects (threshold ignored)."""
    split, x, y = e.split, e.x, e.y
    s, i, j = mine_sides(side_from_array(x), side_from_array(y), replace(cfg, threshold=None))
    scored = ~np.isnan(s)  # as a threshold of -inf would keep them: every candidate with a score
    s, i, j = s[scored], i[scored], j[scored]
    return s, [(split.src_ids[a], split.tgt_ids[b]) for a, b in zip(i.tolist(), j.tolist())]


def pr_curve(scores: np.ndarray, pairs: list[tuple[str, str]], gold: set) -> dict[str, np.ndarray]:
    """Precision, recall, F1 when keeping the pairs scoring >= each candidate's score (sorted best first)."""
    order = np.argsort(-scores, kind="stable")
    correct = np.array([pairs[o] in gold for o in order], dtype=np.float64)
    tp = np.cumsum(correct)
    n = np.arange(1, len(order) + 1)
    p = tp / n
    r = tp / max(1, len(gold))
    f = np.where(p + r > 0, 2 * p * r / np.maximum(p + r, 1e-12), 0.0)
    return {"threshold": scores[order], "precision": p, "recall": r, "f1": f}


def evaluate_at(scores: np.ndarray, pairs: list[tuple[str, str]], gold: set, threshold: float) -> dict:
    kept = [p for s, p in zip(scores.tolist(), pairs) if s >= threshold]
    tp = sum(p in gold for p in kept)
    prec = tp / len(kept) if kept else 0.0
    rec = tp / len(gold) if gold else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"precision": prec, "recall": rec, "f1": f1, "kept": len(kept), "gold": len(gold)}


def bucc_eval(train: EmbeddedSplit, test: EmbeddedSplit, cfg: MineConfig, plot: str | None = None) -> dict:
    """Threshold with the best F1 on ``train``, then P/R/F1 on ``test`` at that threshold."""
    s_tr, p_tr = mine_split(train, cfg)
    curve = pr_curve(s_tr, p_tr, train.split.gold)
    best = int(np.argmax(curve["f1"])) if len(curve["f1"]) else 0
    thr = float(curve["threshold"][best]) if len(curve["f1"]) else 0.0
    s_te, p_te = mine_split(test, cfg)
    res = {"score": cfg.score, "strategy": cfg.strategy, "threshold": thr,
           "train": evaluate_at(s_tr, p_tr, train.split.gold, thr),
           "test": evaluate_at(s_te, p_te, test.split.gold, thr)}
    if plot:
        save_pr_plot(plot, {"train": curve, "test": pr_curve(s_te, p_te, test.split.gold)}, res)
    return res


def save_pr_plot(path: str, curves: dict, res: dict) -> None:
    """Precision-recall curves (paper 001 Fig. 5) as a PNG; needs matplotlib (extra 'plot')."""
    try:
        import matplotlib  # loaded on use: matplotlib is heavy or optional

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # loaded on use: matplotlib is heavy or optional
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'bimine[plot]'") from None
    fig, ax = plt.subplots(figsize=(5, 4), dpi=120)
    for name, c in curves.items():
        ax.plot(c["recall"], c["precision"], label=name)
    t = res["test"]
    ax.scatter([t["recall"]], [t["precision"]], color="k", zorder=3,
               label=f"test at threshold {res['threshold']:.3f} (F1 {t['f1']:.3f})")
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{res['score']} / {res['strategy']}")
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fmt = os.path.splitext(str(path))[1].lstrip(".").lower() or "png"  # the temporary's name has no such suffix
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=fmt)
    plt.close(fig)


# ----------------------------------------------------------------------------- dev set from newstest

NEWSTEST_SPLITS = {
    # split: (years whose xx side are source distractors, years whose en side are target distractors)
    "train": ((2009, 2010), (2011, 2013)),
    "test": ((2011, 2013), (2009, 2010)),
}


def make_newstest_bucc(newstest_dir: str, xx: str, out_dir: str, gold_per_split: int = 150, seed: int = 0) -> None:
    """Write a BUCC-style dev set for xx-en from newstest2009-2013 (see docs/benchmarks.md).

    Gold: ``gold_per_split`` newstest2012 pairs (first half of the file for train, second half
    for test). Distractors: the xx side of two other years as source, the en side of two
    *different* years as target, so no distractor has its translation on the other side.
    Lines equal to a gold sentence of the same side are dropped. Each side is shuffled and
    given ids ``<lang>-<split>-<n>``. Deterministic for a given seed.
    """
    def lines(year: int, lang: str) -> list[str]:
        return list(read_lines(os.path.join(newstest_dir, f"newstest{year}.en-{xx}.{lang}")))

    g_en, g_xx = lines(2012, "en"), lines(2012, xx)
    half = len(g_en) // 2
    os.makedirs(out_dir, exist_ok=True)
    for split, (src_years, tgt_years) in NEWSTEST_SPLITS.items():
        rng = random.Random(f"{seed}-{xx}-{split}")
        rows = range(0, half) if split == "train" else range(half, len(g_en))
        cand = [r for r in rows if g_en[r].strip() and g_xx[r].strip()]
        gold_rows = sorted(rng.sample(cand, gold_per_split))
        gold_src = {g_xx[r] for r in gold_rows}
        gold_tgt = {g_en[r] for r in gold_rows}
        src = [(g_xx[r], r) for r in gold_rows]
        src += [(t, None) for y in src_years for t in lines(y, xx) if t.strip() and t not in gold_src]
        tgt = [(g_en[r], r) for r in gold_rows]
        tgt += [(t, None) for y in tgt_years for t in lines(y, "en") if t.strip() and t not in gold_tgt]
        rng.shuffle(src)
        rng.shuffle(tgt)
        sid = _write_side(os.path.join(out_dir, f"{xx}-en.{split}.{xx}"), src, f"{xx}-{split}")
        tid = _write_side(os.path.join(out_dir, f"{xx}-en.{split}.en"), tgt, f"en-{split}")
        with open(os.path.join(out_dir, f"{xx}-en.{split}.gold"), "w", encoding="utf-8") as f:
            for r in gold_rows:
                f.write(f"{sid[r]}\t{tid[r]}\n")


def _write_side(path: str, rows: list[tuple[str, int | None]], prefix: str) -> dict[int, str]:
    """Write ``<id><TAB><text>`` lines; return the id given to each gold row."""
    ids = {}
    with open(path, "w", encoding="utf-8") as f:
        for n, (t, r) in enumerate(rows):
            i = f"{prefix}-{n:06d}"
            f.write(f"{i}\t{t}\n")
            if r is not None:
                ids[r] = i
    return ids
