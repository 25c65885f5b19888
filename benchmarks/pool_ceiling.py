"""What adaptation can reach at most on issue 73's protocol: its own targets as the queries.

Usage:
    python -m benchmarks.pool_ceiling [--langs khm,pus,mya,amh,lao,hau,som,kor] [--json .bench/pool_ceiling.json]

``bimine adapt`` trains the fast model so that a sentence lands on its target: the teacher's
(e5-small's) vector, centred on the sample's mean, blended with a share of the fast model's own
vector (:func:`bimine.training.adapt.own_weight_for`). Mining then compares the adapted side with
the other side's *fast-model* vectors. A student that reproduced its targets exactly, on unseen
lines too, would find its English as often as the targets themselves do: that is the ceiling
measured here, for each language, on the protocol's test half (NTREX lines 1,001-1,997, each
among the 25,000 English sentences of ``benchmarks.pool_retrieval``; R@1, raw cosine, %). The
centring mean is that of the protocol's adaptation half (lines 1-1,000), as adaptation computes
it. Beside it: both sides by the fast model, both by e5-small, and the targets without the fast
model's share (the centred teacher alone). Vectors cached per model id (``.bench/cache``).
"""

from __future__ import annotations

import os

import numpy as np

from benchmarks.common import CachedEncoder
from benchmarks.harness import Bench, table
from benchmarks.pool_retrieval import english_pool, ntrex_halves, recalls
from benchmarks.xsim import NTREX, ntrex_sets

WEAK = "khm,pus,mya,amh,lao,hau,som,kor"


def ceiling_row(fast, e5, pool_fast, pool_e5, pool_index: dict[str, int], lang: str, adapt: list[str],
                test: list[str], gold_en: list[str]) -> dict:
    """R@1 of the test half: fast/fast, e5/e5, and the adaptation's targets (share 0 and the
    default share) against the fast model's English."""
    from bimine.encoders import load_encoder
    from bimine.training.adapt import own_weight_for
    from bimine.training.adapt_targets import blended, centred

    gold = np.array([pool_index[t] for t in gold_en])
    teacher = e5.encode(test, lang)
    mean = e5.encode(adapt, lang).mean(axis=0)
    share = own_weight_for(load_encoder("default"), lang)
    own = fast.encode(test, lang)
    targets0 = centred(teacher, mean)
    targets = blended(targets0, own, share)
    r1 = lambda q, pool: recalls(q, pool, gold)["cos_r1"]  # noqa: E731
    return {"lang": lang, "n": len(test), "fast": r1(own, pool_fast), "e5": r1(teacher, pool_e5),
            "targets_share0": r1(targets0, pool_fast), "share": share, "targets": r1(targets, pool_fast)}


def main() -> None:
    b = Bench("pool_ceiling", __doc__)
    b.arg("--data", default="../shared/data")
    b.arg("--langs", default=WEAK, help="comma-separated NTREX codes")
    args = b.parse()
    if not os.path.isdir(os.path.join(args.data, NTREX)):
        raise SystemExit(f"{args.data}: no {NTREX} (pass --data)")
    want = args.langs.split(",")
    sets = {s[0]: s for s in ntrex_sets(args.data)}
    missing = [w for w in want if w not in sets]
    if missing:
        raise SystemExit(f"no NTREX set {', '.join(missing)}")
    pool = english_pool(args.data)
    pool_index = {t: i for i, t in enumerate(pool)}
    fast, e5 = CachedEncoder("default"), CachedEncoder("e5-small")
    pool_fast, pool_e5 = fast.encode(pool, "en"), e5.encode(pool, "en")
    for name in want:
        _, lang, en_file, xx_file = sets[name]
        adapt, test, gold_en = ntrex_halves(en_file, xx_file)
        b.rows.append({"name": name, **ceiling_row(fast, e5, pool_fast, pool_e5, pool_index, lang, adapt, test,
                                                   gold_en)})
        b.save()
    mean = {c: round(float(np.mean([r[c] for r in b.rows])), 1) for c in ("fast", "e5", "targets_share0", "targets")}
    b.rows.append({"name": "mean", **mean})
    print(table(b.rows, ["name", "fast", "targets_share0", "share", "targets", "e5"],
                  ["language", "fast model both sides", "centred teacher vs fast English",
                   "fast model's share", "adaptation targets vs fast English (the ceiling)", "e5-small both sides"]))
    b.save()


if __name__ == "__main__":
    main()
