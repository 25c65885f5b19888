"""Synthetic non-parallel pairs for training pair classifiers.

Paper 002 §2.3 (after Zhang et al. 2020) pairs each sentence with a negative drawn at random
from: a sentence *adjacent* to its translation within a window of 2, its translation with
30-70% of the words *truncated*, its translation with 30-70% of the words *reordered*; the
issue adds *random* pairing (paper 003's only kind). The corrupted side is the target, or
either side at random with ``both_sides``.

Words are ``split()`` tokens; a sentence in a script written without spaces (one "word") is cut
and shuffled by characters instead, so that truncation and reordering still change it.
"""

from __future__ import annotations

import numpy as np

KINDS = ("adjacent", "truncate", "reorder", "random")


def _units(s: str) -> tuple[list[str], str]:
    words = s.split()
    if len(words) >= 2:
        return words, " "
    return list(s.strip()), ""


def truncate(s: str, rng: np.random.Generator, low: float = 0.3, high: float = 0.7) -> str:
    """Drop a random 30-70% of the words at the start or the end (at least one word goes,
    at least one stays); a one-word sentence comes back unchanged."""
    units, sep = _units(s)
    if len(units) < 2:
        return s
    drop = int(round(rng.uniform(low, high) * len(units)))
    drop = min(max(drop, 1), len(units) - 1)
    kept = units[drop:] if rng.random() < 0.5 else units[: len(units) - drop]
    return sep.join(kept)


def reorder(s: str, rng: np.random.Generator, low: float = 0.3, high: float = 0.7) -> str:
    """Shuffle the positions of a random 30-70% of the words (at least two, and the result
    differs from the input whenever the chosen words are not all equal)."""
    units, sep = _units(s)
    if len(units) < 2:
        return s
    m = min(max(int(round(rng.uniform(low, high) * len(units))), 2), len(units))
    pos = np.sort(rng.choice(len(units), size=m, replace=False))
    chosen = [units[p] for p in pos]
    if len(set(chosen)) < 2:
        return s
    for _ in range(10):
        perm = rng.permutation(m)
        if any(chosen[perm[j]] != chosen[j] for j in range(m)):
            break
    else:  # pragma: no cover - ten identity draws of >= 2 distinct words is ~impossible
        perm = np.roll(np.arange(m), 1)
    out = list(units)
    for j, p in enumerate(pos):
        out[p] = chosen[perm[j]]
    return sep.join(out)


def make_negatives(
    src: list[str],
    tgt: list[str],
    rng: np.random.Generator,
    *,
    kinds: tuple[str, ...] = KINDS,
    window: int = 2,
    both_sides: bool = False,
) -> tuple[list[str], list[str], list[str]]:
    """One negative pair per positive ``(src[i], tgt[i])``, of a kind drawn uniformly from
    ``kinds``; returns the negative sources, targets and kinds. ``adjacent`` and ``random``
    take another pair's target (``src``/``tgt`` in document order for ``adjacent``: a
    neighbour within ``window`` lines). A corruption that leaves the pair unchanged (a
    one-word target cannot be truncated; an identical neighbour) falls back to ``random``."""
    bad = set(kinds) - set(KINDS)
    if bad or not kinds:
        raise ValueError(f"negative kinds must be among {KINDS}, got {kinds}")
    n = len(src)
    if n < 2:
        raise ValueError("synthetic negatives need at least 2 pairs")
    out_s, out_t, out_k = [], [], []
    draws = rng.integers(0, len(kinds), size=n)
    for i in range(n):
        kind = kinds[draws[i]]
        flip = both_sides and rng.random() < 0.5
        a, b = (tgt[i], src[i]) if flip else (src[i], tgt[i])
        other = src if flip else tgt
        neg = None
        if kind == "adjacent":
            offs = [o for o in range(-window, window + 1) if o and 0 <= i + o < n]
            j = i + offs[rng.integers(len(offs))]
            neg = other[j]
        elif kind == "truncate":
            neg = truncate(b, rng)
        elif kind == "reorder":
            neg = reorder(b, rng)
        if kind == "random" or neg is None or neg.strip() == b.strip():
            kind = "random"
            for _ in range(20):
                j = int(rng.integers(n))
                if j != i and other[j].strip() != b.strip():
                    break
            neg = other[j]
        out_k.append(kind)
        if flip:
            out_s.append(neg)
            out_t.append(a)
        else:
            out_s.append(a)
            out_t.append(neg)
    return out_s, out_t, out_k
