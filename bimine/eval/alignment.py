"""Sentence-alignment metrics: strict and lax precision, recall and F1 as Vecalign defines them.

Beads are pairs of index tuples ``(src, tgt)``; an empty side is an insertion or a deletion.

* **Precision** goes over the predicted beads (nulls included): a bead is a strict hit when
  the gold holds exactly that bead, a lax hit when one of its target sentences is linked in
  the gold to one of its source sentences (so a predicted null bead counts only when the gold
  has the same null bead).
* **Recall** drops every bead with an empty side from both alignments and asks the same of
  the gold beads against the predicted links.
* Counts are summed over documents before dividing (micro-average); F1 is the harmonic mean
  of those P and R.

Readers for the gold formats of the dev sets: Vecalign's ``[0,1]:[2]`` lines (with or
without a third ``:cost`` field) and hunalign's ladder (``n m`` rungs).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from bimine.errors import InputError

BeadPair = tuple[tuple[int, ...], tuple[int, ...]]

_BEAD = re.compile(r"^\s*\[([\d,\s]*)\]\s*:\s*\[([\d,\s]*)\](?::\s*(\S+))?\s*$")


def parse_bead(line: str) -> BeadPair | None:
    """``[0, 1]:[2]`` (optionally ``:cost``) as ``((0, 1), (2,))``; ``None`` if it is not a bead."""
    m = _BEAD.match(line)
    if not m:
        return None
    src = tuple(int(x) for x in m.group(1).split(",") if x.strip())
    tgt = tuple(int(x) for x in m.group(2).split(",") if x.strip())
    return src, tgt


def read_beads(path: str | os.PathLike) -> list[BeadPair]:
    """Read a Vecalign-format alignment file; a line that is not a bead is an error naming it."""
    out = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            bead = parse_bead(line)
            if bead is None:
                raise InputError(f"{path}:{no}: {line.strip()[:60]!r} is not a bead like [0,1]:[2]")
            out.append(bead)
    return out


def read_ladder(path: str | os.PathLike) -> list[BeadPair]:
    """Read a hunalign ladder (rungs ``n m``: the first n source sentences match the first m
    target sentences) as beads between consecutive rungs. A rung step on one side only
    becomes one null bead per sentence (as in Vecalign's gold files)."""
    rungs = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            cells = line.split()
            if not cells:
                continue
            try:
                rungs.append((int(cells[0]), int(cells[1])))
            except (ValueError, IndexError):
                raise InputError(f"{path}:{no}: {line.strip()[:60]!r} is not a rung 'n m'") from None
    out: list[BeadPair] = []
    for (i0, j0), (i1, j1) in zip(rungs, rungs[1:]):
        if i1 < i0 or j1 < j0:
            raise InputError(f"{path}: rungs go backwards at ({i1} {j1})")
        if i1 > i0 and j1 > j0:
            out.append((tuple(range(i0, i1)), tuple(range(j0, j1))))
        else:
            out.extend(((i,), ()) for i in range(i0, i1))
            out.extend(((), (j,)) for j in range(j0, j1))
    return out


@dataclass
class Counts:
    """Hits and misses of one or more documents (summed for the micro-average)."""

    p_strict: int = 0
    p_lax: int = 0
    p_total: int = 0
    r_strict: int = 0
    r_lax: int = 0
    r_total: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(a + b for a, b in zip(self.astuple(), other.astuple())))

    def astuple(self) -> tuple[int, ...]:
        return (self.p_strict, self.p_lax, self.p_total, self.r_strict, self.r_lax, self.r_total)

    def scores(self) -> dict[str, float]:
        """Precision, recall and F1, strict and lax (0 where a denominator is 0)."""
        out = {}
        for kind in ("strict", "lax"):
            p = getattr(self, f"p_{kind}") / self.p_total if self.p_total else 0.0
            r = getattr(self, f"r_{kind}") / self.r_total if self.r_total else 0.0
            out[f"precision_{kind}"] = p
            out[f"recall_{kind}"] = r
            out[f"f1_{kind}"] = 2 * p * r / (p + r) if p + r else 0.0
        return out


def _links(beads) -> dict[int, set[int]]:
    """Each source sentence of ``beads`` -> the target sentences it is linked to."""
    links: dict[int, set[int]] = {}
    for s, t in beads:
        for i in s:
            links.setdefault(i, set()).update(t)
    return links


def _hits(reference: list[BeadPair], predicted: list[BeadPair]) -> tuple[int, int, int]:
    """(strict hits, lax hits, beads) of ``predicted`` against ``reference``."""
    ref = set(reference)
    links = _links(ref)
    strict = lax = 0
    pred = {b for b in predicted if b[0] or b[1]}
    for s, t in pred:
        if (s, t) in ref:
            strict += 1
            lax += 1
        elif any(j in links.get(i, ()) for i in s for j in t):
            lax += 1
    return strict, lax, len(pred)


def score_alignment(gold: list[BeadPair], predicted: list[BeadPair]) -> Counts:
    """Counts of one document (see the module docstring)."""
    ps, pl, pt = _hits(gold, predicted)
    gold_nn = [b for b in gold if b[0] and b[1]]
    pred_nn = [b for b in predicted if b[0] and b[1]]
    rs, rl, rt = _hits(pred_nn, gold_nn)
    return Counts(ps, pl, pt, rs, rl, rt)


def stray_beads(gold: list[BeadPair], predicted: list[BeadPair]) -> dict[str, int]:
    """The predicted beads that overlap no gold bead (the lax misses of precision), by kind:
    ``skipped``, a null bead where the gold aligns the sentence; ``stray``, a bead with both
    sides whose source and target sentences are linked nowhere in the gold; and on the recall
    side ``lost``, gold beads with both sides that share no link with any predicted bead."""
    links = _links(gold)
    gold_set = set(gold)
    skipped = stray = 0
    for s, t in {b for b in predicted if b[0] or b[1]}:
        if (s, t) in gold_set:
            continue
        if not s or not t:
            skipped += 1
        elif not any(j in links.get(i, ()) for i in s for j in t):
            stray += 1
    pred_links = _links(predicted)
    lost = sum(1 for s, t in gold if s and t and not any(j in pred_links.get(i, ()) for i in s for j in t))
    return {"skipped": skipped, "stray": stray, "lost": lost}


def merge_by_verse(beads: list[BeadPair], src_verse: list[str], tgt_verse: list[str]) -> list[BeadPair]:
    """Bertalign's Bible evaluation: consecutive predicted beads that lie within one verse
    (both sides that verse, or one side empty and the other that verse) are merged into one
    bead before scoring against the verse-level gold."""

    def label(bead: BeadPair) -> str | None:
        sv = {src_verse[i] for i in bead[0]}
        tv = {tgt_verse[j] for j in bead[1]}
        if len(sv) == 1 and len(tv) == 1 and sv == tv:
            return next(iter(sv))
        if not sv and len(tv) == 1:
            return next(iter(tv))
        if not tv and len(sv) == 1:
            return next(iter(sv))
        return None

    out: list[BeadPair] = []
    last: str | None = None
    for bead in beads:
        lab = label(bead)
        if out and lab is not None and lab == last:
            s, t = out[-1]
            out[-1] = (s + bead[0], t + bead[1])
        else:
            out.append(bead)
        last = lab
    return out

