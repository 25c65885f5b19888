"""Calibrating a divergence model on held-out pairs of its training corpus (issue 55).

``bimine train-divergence`` trains on ``--positives`` pairs drawn from the corpus
(:func:`bimine.divergence.synthetic.draw_positives`); :func:`calibrate_on_heldout` then draws
up to ``n`` *other* pairs of the same corpus (none sharing a side with a training pair:
:func:`~bimine.divergence.synthetic.heldout_pairs`), makes as many divergent pairs from them
(:func:`~bimine.divergence.synthetic.calibration_examples`), scores both with the new model
and stores the Platt map fitted on them, the two classes weighted equally
(:func:`bimine.scoring.divergence.fit_platt`). The model's ``score`` is then P(equivalent) for a
pair of this corpus's kind, half clean, half divergent; the shipped model is calibrated the same
way on held-out dev sets instead (``python -m benchmarks.divergence_calibration --write``).
"""

from __future__ import annotations

import numpy as np

from bimine.divergence.synthetic import calibration_examples, draw_positives, heldout_pairs
from bimine.errors import ConfigError
from bimine.scoring.divergence import DivergenceModel, fit_platt
from bimine.scoring.ibm import WordAligner

MIN_PAIRS = 50  # fewer held-out pairs than this: the model is left uncalibrated


def calibrate_on_heldout(model: DivergenceModel, src: list[str], tgt: list[str], aligner: WordAligner, *,
                         src_lang: str, tgt_lang: str, positives: int, min_words: int, seed: int = 0, n: int = 1000,
                         encoder=None, min_pairs: int = MIN_PAIRS) -> dict:
    """Fit and store ``model``'s calibration on up to ``n`` pairs of the corpus ``src``/``tgt``
    that its training (``positives``, ``min_words``, ``seed``: the options it was trained with)
    did not use. The stored thresholds are left as they are (the caller sets them on the new
    scale). Returns what happened: ``{"pairs": int, "calibrated": bool, ...}``; with fewer than
    ``min_pairs`` such pairs, or scores that do not rank them, the model is left uncalibrated
    (``reason`` says why)."""
    used = draw_positives(src, tgt, positives=positives, min_words=min_words, seed=seed)
    idx = heldout_pairs(src, tgt, used, n=n, min_words=min_words, seed=seed)
    if len(idx) < max(min_pairs, 2):
        return {"pairs": len(idx), "calibrated": False,
                "reason": f"only {len(idx):,} pairs of the corpus are left out of training ({min_words}+ words a side, "
                f"no side shared with a positive; {min_pairs} needed)"}
    ex, counts = calibration_examples([src[i] for i in idx], [tgt[i] for i in idx], aligner, seed=seed)
    raw = model.raw_score([e.src for e in ex], [e.tgt for e in ex], src_lang=src_lang, tgt_lang=tgt_lang,
                          encoder=encoder)
    y = np.array([e.label for e in ex])
    try:
        cal = fit_platt(raw, y)
    except ConfigError as e:  # the model does not rank these pairs: keep it, uncalibrated, and say why
        return {"pairs": len(idx), "calibrated": False, "reason": str(e)}
    score = cal(raw)
    pos = y > 0.5
    model.set_calibration(cal, map_thresholds=False,
                          fitted_on=f"{counts['positives']:,} held-out pairs of the training corpus (no side shared "
                          f"with a training pair) and {counts['negatives']:,} divergent pairs made from them "
                          "(bimine.divergence.synthetic.calibration_examples), classes weighted equally",
                          pairs={"clean": counts["positives"], **counts["by_kind"]},
                          command="bimine train-divergence")
    return {"pairs": len(idx), "calibrated": True, "a": cal.a, "b": cal.b, "counts": counts,
            "clean_median_raw": float(np.median(raw[pos])), "clean_median": float(np.median(score[pos])),
            "divergent_median_raw": float(np.median(raw[~pos])), "divergent_median": float(np.median(score[~pos]))}
