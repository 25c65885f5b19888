"""Why the shipped example's deleted line is merged (issue 44): its "member gain" against the
members of the dev sets' gold beads.

Usage (from the repository root)::

    python -m benchmarks.align_member_gain [--model default] [--sets bleualign,1984.hu,...]

``examples/doc.en`` line 20 (0-based) has no counterpart in ``examples/doc.fr``; the two-pass
search puts it into the bead ``[19,20]:[19]``. A sentence at the edge of a bead is worth keeping
in the bead when the bead's score with it is above the bead's score without it by more than
what skipping it costs (a gap: ``gap_open + skip_score``). This script computes that *member
gain* (the two-pass search's own bead score, :func:`bimine.documents._twopass_kernel.bead_score`,
with the command's options, shared tokens included) for

* the example's deleted line: ``[19,20]:[19]`` against ``[19]:[19]``, and
* every first and last sentence of the many-sided side of each gold bead of the dev sets
  (beads of at most 6 sentences, at most 5 a side: the ones the search can produce),

and reports the share of those genuine members whose gain is no higher than the deleted line's.
Any rule that skips the deleted line on its gain alone also cuts that share of genuine members
out of their beads. It also counts the genuine members that a rule gated by length would cut: a
member of at least ``U`` length units (about a word in every script:
:func:`bimine.filtering.rules.length_units`; the deleted line has 20) that lowers its bead's score
(a gain below 0, the price per extra sentence not counted). Dev sets as in :mod:`benchmarks.align_dev` (``../shared/data/dev``); without
them only the example's figures are printed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from benchmarks.align_dev import DEV, sets
from benchmarks.common import CachedEncoder
from benchmarks.harness import Bench, machine_line
from bimine.documents.align import embed_overlaps
from bimine.documents.beads import AlignConfig
from bimine.documents.tokens import attach_shared_tokens
from bimine.documents.twopass import score_terms
from bimine.filtering.rules import length_units
from bimine.text.io import read_lines

EXAMPLE = Path(__file__).resolve().parents[1] / "examples"
#: the options of ``bimine align`` (its --max-side and bead total) for the two-pass search
OPTIONS = dict(max_side=5, pass2_total=6)
UNITS = (15, 20, 25)  #: the length gates counted


class Scorer:
    """The two-pass search's score of any bead of one document pair."""

    def __init__(self, enc, src: list[str], tgt: list[str], src_lang: str, tgt_lang: str,
                 config: AlignConfig) -> None:
        self.c = config
        self.X = embed_overlaps(src, enc, src_lang, config.max_side)
        self.Y = embed_overlaps(tgt, enc, tgt_lang, config.max_side)
        attach_shared_tokens(src, tgt, self.X, self.Y, config)
        self.t = score_terms(self.X, self.Y, config)  # the length ratio, baselines and tokens the search uses

    def __call__(self, i: int, a: int, j: int, b: int) -> float:
        from bimine.documents._twopass_kernel import bead_score

        X, Y, c, t = self.X, self.Y, self.c, self.t
        return float(bead_score(a, b, i, j, X.n, Y.n, X.vectors, X.start, X.lengths, Y.vectors, Y.start,
                                Y.lengths, t.ratio, c.margin, c.length_penalty, t.bx, t.by, c.extra_sentence_score,
                                t.xt, t.yt, t.token_weight, c.token_unmatched))


def member_gains(score: Scorer, gold, src: list[str], tgt: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Member gains of the edge sentences of the gold beads' many-sided sides, and the members'
    length units."""
    k, total = score.c.max_side, score.c.pass2_total
    out, units = [], []
    for xs, ys in gold:
        a, b = len(xs), len(ys)
        if not a or not b or a + b > total or a > k or b > k or a + b == 2:
            continue
        i, j = xs[0], ys[0]
        full = score(i, a, j, b)
        if a >= 2:
            out += [full - score(i + 1, a - 1, j, b), full - score(i, a - 1, j, b)]
            units += [length_units(src[i]), length_units(src[i + a - 1])]
        if b >= 2:
            out += [full - score(i, a, j + 1, b - 1), full - score(i, a, j, b - 1)]
            units += [length_units(tgt[j]), length_units(tgt[j + b - 1])]
    return np.array(out, np.float64), np.array(units, np.int64)


def main() -> int:
    bench = Bench("align_member_gain", __doc__)
    bench.arg("--model", default="default", help="default, e5-small or a model folder")
    bench.arg("--sets", default="bleualign,1984.hu,1984.ro,steinbeck,dtm,bible")
    a = bench.parse()
    config = AlignConfig(method="two-pass", **OPTIONS)
    enc = CachedEncoder(a.model)
    gap = -(config.gap_open + config.skip_score)
    print(f"# {bench.command}  ({bench.result()['date']}, {machine_line(bench.machine)})")
    en = list(read_lines(EXAMPLE / "doc.en"))
    fr = list(read_lines(EXAMPLE / "doc.fr"))
    ex = Scorer(enc, en, fr, "en", "fr", config)
    merged, single = ex(19, 2, 19, 1), ex(19, 1, 19, 1)
    g0 = merged - single
    verdict = "skipped" if g0 < -gap else "merged"
    print(f"model {a.model}: example [19,20]:[19] scores {merged:.3f}, [19]:[19] {single:.3f}: the deleted line's "
          f"gain {g0:+.3f} against a gap of -{gap:.2f}, so the search keeps it {verdict}; the line has "
          f"{length_units(en[20])} length units, its gain without the price per extra sentence is "
          f"{g0 - config.extra_sentence_score:+.3f}")
    bench.extra.update(model=a.model, example={"merged": merged, "single": single, "gain": g0, "gap": gap,
                                               "units": length_units(en[20])})
    if not DEV.is_dir():
        print(f"no dev data at {DEV}: only the example measured")
        bench.save()
        return 0
    all_sets = sets()
    print("\n| set | genuine members | gain percentiles 1 / 5 / 10 / 50 | share at or below the deleted line's "
          "gain | share below the gap (the search skips them) | "
          + " | ".join(f"members of >= {u} units lowering the score" for u in UNITS) + " |")
    print("|---|---:|---|---:|---:|" + "---:|" * len(UNITS))
    for name in a.sets.split(","):
        d = all_sets[name]
        g, units = member_gains(Scorer(enc, d["src"], d["tgt"], d["src_lang"], d["tgt_lang"], config), d["gold"],
                                d["src"], d["tgt"])
        p = np.percentile(g, [1, 5, 10, 50])
        lowering = g - config.extra_sentence_score < 0
        row = {"set": name, "members": len(g), "percentiles": [round(float(v), 4) for v in p],
               "at_or_below_example": round(float((g <= g0).mean()), 4),
               "below_gap": round(float((g < -gap).mean()), 4),
               "long_lowering": {u: int((lowering & (units >= u)).sum()) for u in UNITS}}
        bench.rows.append(row)
        print(f"| {name} | {len(g)} | {' / '.join(f'{v:+.3f}' for v in p)} | {100 * row['at_or_below_example']:.1f} % "
              f"| {100 * row['below_gap']:.1f} % | " + " | ".join(str(row["long_lowering"][u]) for u in UNITS) + " |")
        sys.stdout.flush()
    bench.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
