"""Synthetic supervision for divergence models (paper 004 §3 and §5.1).

Positives are the pairs of a parallel corpus. Negatives (004 §3, after Munteanu & Marcu 2005)
come from the Cartesian product of its two sides, ``(e_i, f_j)`` with ``i != j``, kept only
when the two sentences are close in length (ratio of word counts at most 2) and at least half
of the words of *each* side have a translation in the other sentence according to the
bilingual dictionary (:class:`bimine.scoring.ibm.WordAligner`); from those, negatives are
drawn uniformly to a 1:5 positive:negative ratio (004 §5.1; seeded).

``hard`` negatives, an option measured against the paper's recipe (later work on divergences,
Briakou & Carpuat 2020, found finer-grained synthetic divergences useful): a phrase of 20-50 %
of one side's words deleted, one side's word replaced by a dictionary neighbour (another word
of the same language that translates a word of a *different* sentence, so the pair still looks
aligned word by word), or another sentence of the corpus appended to one side.

The coverage test of every candidate pair is a product of sparse matrices, in blocks of
source sentences: (source words x target vocabulary: the translations of each word) times
(target vocabulary x target sentences: bag of words) > 0 says which words of ``e_i`` have a
translation in ``f_j``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bimine.errors import ConfigError
from bimine.scoring.ibm import WordAligner, words
from bimine.text.normalize import is_mark

HARD_KINDS = ("delete", "replace", "append")


@dataclass
class Example:
    src: str
    tgt: str
    label: float  # 1 = equivalent, 0 = divergent
    kind: str  # "positive", "product", or one of HARD_KINDS


def _coverage_matrix(sent_words: list[list[str]], other_words: list[list[str]], trans: dict[str, set[str]],
                     block: int = 256):
    """Yield ``(start, cov)`` with ``cov[r, j]`` = share of the words of sentence ``start + r``
    that have a translation (in ``trans``) among the words of ``other_words[j]``."""
    import scipy.sparse as sp  # loaded on use: SciPy is heavy or optional

    vocab: dict[str, int] = {}
    for ws in other_words:
        for w in ws:
            vocab.setdefault(w, len(vocab))
    rows, cols = [], []
    for j, ws in enumerate(other_words):
        for w in set(ws):
            rows.append(vocab[w])
            cols.append(j)
    bag = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(len(vocab), len(other_words)))
    for start in range(0, len(sent_words), block):
        part = sent_words[start:start + block]
        r_idx, c_idx, owner = [], [], []
        row = 0
        for k, ws in enumerate(part):
            for w in ws:
                for t in trans.get(w, ()):
                    c = vocab.get(t)
                    if c is not None:
                        r_idx.append(row)
                        c_idx.append(c)
                row += 1
                owner.append(k)
        tr = sp.csr_matrix((np.ones(len(r_idx), np.float32), (r_idx, c_idx)), shape=(row, len(vocab)))
        hit = (tr @ bag).toarray() > 0  # (word rows, other sentences)
        counts = np.zeros((len(part), len(other_words)), np.float32)
        if row:
            np.add.at(counts, np.asarray(owner), hit.astype(np.float32))
        n = np.array([max(len(ws), 1) for ws in part], np.float32)
        yield start, counts / n[:, None]


def candidate_mask(src: list[str], tgt: list[str], aligner: WordAligner, *, max_ratio: float = 2.0,
                   min_coverage: float = 0.5) -> np.ndarray:
    """Boolean ``(n, n)`` matrix: ``[i, j]`` is True when ``(src[i], tgt[j])``, ``i != j``,
    passes the length-ratio and the two-sided dictionary-coverage filters (004 §3)."""
    sw = [aligner.words(s) for s in src]  # cut as the aligner's dictionary was
    tw = [aligner.words(t) for t in tgt]
    ls = np.array([len(w) for w in sw], np.float64)
    lt = np.array([len(w) for w in tw], np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.maximum(ls[:, None], lt[None, :]) / np.minimum(ls[:, None], lt[None, :])
    ok = (ratio <= max_ratio) & (ls[:, None] > 0) & (lt[None, :] > 0)
    np.fill_diagonal(ok, False)
    for start, cov in _coverage_matrix(sw, tw, aligner.translations("src")):
        ok[start:start + len(cov)] &= cov >= min_coverage
    for start, cov in _coverage_matrix(tw, sw, aligner.translations("tgt")):
        ok[:, start:start + len(cov)] &= (cov >= min_coverage).T
    return ok


def product_negatives(src: list[str], tgt: list[str], aligner: WordAligner, *, ratio: int = 5, seed: int = 0,
                      max_ratio: float = 2.0, min_coverage: float = 0.5) -> tuple[list[Example], int]:
    """Up to ``ratio * len(src)`` negatives drawn uniformly (seeded) from the filtered
    Cartesian product; also returns how many candidates passed the filters."""
    ok = candidate_mask(src, tgt, aligner, max_ratio=max_ratio, min_coverage=min_coverage)
    cand = np.flatnonzero(ok)
    rng = np.random.default_rng(seed)
    n = min(len(cand), ratio * len(src))
    pick = np.sort(rng.choice(cand, size=n, replace=False)) if n else cand[:0]
    out = [Example(src[k // len(tgt)], tgt[k % len(tgt)], 0.0, "product") for k in pick.tolist()]
    return out, int(len(cand))


# ---------------------------------------------------------------------- hard divergences
def _delete(s: str, rng: np.random.Generator) -> str | None:
    toks = s.split()
    if len(toks) < 5:
        return None
    k = max(1, int(round(len(toks) * rng.uniform(0.2, 0.5))))
    a = int(rng.integers(0, len(toks) - k + 1))
    return " ".join(toks[:a] + toks[a + k:])


def _replaceable(t: str) -> bool:
    """A word of letters, with the combining marks inside it (a Hindi word's vowel signs are no
    letters to ``str.isalpha``), of more than 3 characters."""
    return len(t) > 3 and t[0].isalpha() and all(c.isalpha() or is_mark(ord(c)) for c in t)


def _replace(s: str, rng: np.random.Generator, pool: list[str]) -> str | None:
    toks = s.split()
    cands = [i for i, t in enumerate(toks) if _replaceable(t)]
    if not cands or not pool:
        return None
    i = cands[int(rng.integers(len(cands)))]
    new = pool[int(rng.integers(len(pool)))]
    if new.lower() == toks[i].lower():
        return None
    toks[i] = new
    return " ".join(toks)


def hard_negatives(src: list[str], tgt: list[str], aligner: WordAligner, *, n: int, seed: int = 0,
                   kinds: tuple[str, ...] = HARD_KINDS) -> list[Example]:
    """``n`` finer-grained divergences made from the positives (see the module docstring),
    kinds taken in turn, the side changed chosen at random (seeded)."""
    rng = np.random.default_rng(seed + 1)
    pools = {"src": sorted(w for w in aligner.translations("src") if _replaceable(w)),
             "tgt": sorted(w for w in aligner.translations("tgt") if _replaceable(w))}
    out: list[Example] = []
    tries = 0
    while len(out) < n and tries < 20 * n + 100:
        tries += 1
        kind = kinds[len(out) % len(kinds)]
        k = int(rng.integers(len(src)))
        side = "src" if rng.random() < 0.5 else "tgt"
        text = src[k] if side == "src" else tgt[k]
        if kind == "delete":
            new = _delete(text, rng)
        elif kind == "replace":
            new = _replace(text, rng, pools[side])
        else:
            other = (src if side == "src" else tgt)[int(rng.integers(len(src)))]
            new = None if other == text else f"{text} {other}"
        if new is None or new == text:
            continue
        a, b = (new, tgt[k]) if side == "src" else (src[k], new)
        out.append(Example(a, b, 0.0, kind))
    return out


def build_examples(src: list[str], tgt: list[str], aligner: WordAligner, *, ratio: int = 5, seed: int = 0,
                   hard: float = 0.0) -> tuple[list[Example], dict]:
    """Positives + product negatives (1:``ratio``); with ``hard`` > 0 that share of the
    negatives is replaced by hard ones. Shuffled (seeded). Returns the examples and counts."""
    pos = [Example(s, t, 1.0, "positive") for s, t in zip(src, tgt)]
    neg, passed = product_negatives(src, tgt, aligner, ratio=ratio, seed=seed)
    n_hard = int(round(hard * len(neg)))
    if n_hard:
        rng = np.random.default_rng(seed + 2)
        keep = np.sort(rng.choice(len(neg), size=len(neg) - n_hard, replace=False))
        neg = [neg[i] for i in keep.tolist()] + hard_negatives(src, tgt, aligner, n=n_hard, seed=seed)
    ex = pos + neg
    order = np.random.default_rng(seed + 3).permutation(len(ex))
    ex = [ex[i] for i in order.tolist()]
    counts = {"positives": len(pos), "candidates_passing_filters": passed, "negatives": len(neg),
              "by_kind": {k: sum(e.kind == k for e in ex) for k in ("positive", "product", *HARD_KINDS)}}
    return ex, counts


def _eligible(src: list[str], tgt: list[str], min_words: int) -> list[int]:
    return [k for k, (s, t) in enumerate(zip(src, tgt)) if len(words(s)) >= min_words and len(words(t)) >= min_words]


def draw_positives(src: list[str], tgt: list[str], *, positives: int = 5000, min_words: int = 5, seed: int = 0,
                   ) -> list[int]:
    """The corpus lines :func:`corpus_examples` takes as positives: ``positives`` drawn uniformly
    (seeded) among the pairs with at least ``min_words`` words on both sides, in corpus order."""
    ok = _eligible(src, tgt, min_words)
    if len(ok) < positives:
        if not ok:
            raise ConfigError(f"none of the {len(src):,} pairs has {min_words}+ words on both sides: there is nothing "
                              "to train on; give a parallel corpus (004 draws 5,000 positives)")
        fix = f"lower --positives to {len(ok):,} or give a larger corpus" if len(ok) >= 10 else "give a larger corpus"
        raise ConfigError(f"only {len(ok):,} of the {len(src):,} pairs have {min_words}+ words on both sides, "
                          f"{positives:,} positives were asked for; {fix}")
    pick = np.sort(np.random.default_rng(seed).choice(len(ok), size=positives, replace=False))
    return [ok[i] for i in pick.tolist()]


def corpus_examples(src: list[str], tgt: list[str], aligner: WordAligner, *, positives: int = 5000,
                    min_words: int = 5, ratio: int = 5, seed: int = 0, hard: float = 0.0,
                    ) -> tuple[list[Example], dict]:
    """:func:`build_examples` on ``positives`` pairs of the corpus drawn uniformly (seeded)
    among those with at least ``min_words`` words on both sides (:func:`draw_positives`)."""
    pick = draw_positives(src, tgt, positives=positives, min_words=min_words, seed=seed)
    return build_examples([src[i] for i in pick], [tgt[i] for i in pick], aligner, ratio=ratio, seed=seed,
                          hard=hard)


# ---------------------------------------------------------------------- calibration (issue 55)
CALIBRATION_KINDS = ("mismatch", "product", *HARD_KINDS)


def heldout_pairs(src: list[str], tgt: list[str], used: list[int], *, n: int = 1000, min_words: int = 5,
                  seed: int = 0) -> list[int]:
    """Up to ``n`` corpus lines (seeded draw, in corpus order) for calibrating a model trained on
    the lines ``used``: pairs with ``min_words``+ words a side, neither of whose sides is a side
    of a ``used`` pair (corpora repeat sentences), each pair once."""
    seen_s = {src[i] for i in used}
    seen_t = {tgt[i] for i in used}
    cand, pairs = [], set()
    for k in _eligible(src, tgt, min_words):
        if src[k] in seen_s or tgt[k] in seen_t or (src[k], tgt[k]) in pairs:
            continue
        pairs.add((src[k], tgt[k]))
        cand.append(k)
    if len(cand) <= n:
        return cand
    pick = np.sort(np.random.default_rng(seed + 7).choice(len(cand), size=n, replace=False))
    return [cand[i] for i in pick.tolist()]


def calibration_examples(src: list[str], tgt: list[str], aligner: WordAligner, *, seed: int = 0,
                         ) -> tuple[list[Example], dict]:
    """Held-out clean pairs and as many divergent ones made from them, to calibrate a model on
    (:func:`bimine.training.divergence.fit_platt`): every pair is a positive; the negatives
    are taken in equal shares from :data:`CALIBRATION_KINDS`: ``mismatch`` (a source with the
    target of another pair, drawn at random: unrelated), ``product`` (the same, among the
    pairs that pass the length and dictionary-coverage filters of 004 §3), and the hard kinds
    of :func:`hard_negatives` (a phrase deleted, a word replaced, a sentence appended). A
    kind that cannot make its share (few product pairs pass the filters of a small set) leaves
    it to the hard kinds. Returns the examples (positives first) and their counts by kind."""
    n = len(src)
    if n < 2:
        raise ConfigError(f"calibration needs at least 2 held-out pairs, got {n}")
    rng = np.random.default_rng(seed + 11)
    share = {k: n // len(CALIBRATION_KINDS) + (i < n % len(CALIBRATION_KINDS)) for i, k in enumerate(CALIBRATION_KINDS)}

    def mismatches(m: int) -> list[Example]:
        out = []
        for i in rng.choice(n, size=m, replace=n < m).tolist():
            for _ in range(10):
                j = int(rng.integers(n - 1))
                j += j >= i  # another pair's target
                if tgt[j] != tgt[i]:
                    out.append(Example(src[i], tgt[j], 0.0, "mismatch"))
                    break
        return out

    neg = mismatches(share["mismatch"])
    cand = np.flatnonzero(candidate_mask(src, tgt, aligner))
    take = min(len(cand), share["product"])
    for k in np.sort(rng.choice(cand, size=take, replace=False)).tolist() if take else []:
        neg.append(Example(src[k // n], tgt[k % n], 0.0, "product"))
    # the hard kinds share what is left; a kind that cannot make its part (no sentence of 5+ words to
    # delete from) leaves it to the others, and mismatches fill what none of them can make
    kinds = list(HARD_KINDS)
    for round_ in range(len(HARD_KINDS)):
        need = n - len(neg)
        if need <= 0 or not kinds:
            break
        made_by = []
        for i, kind in enumerate(kinds):
            part = need // len(kinds) + (i < need % len(kinds))
            made = (hard_negatives(src, tgt, aligner, n=part, seed=seed + 13 + 7 * round_ + i, kinds=(kind,))
                    if part else [])
            neg += made
            if len(made) >= part:
                made_by.append(kind)
        kinds = made_by
    neg += mismatches(max(0, n - len(neg)))
    pos = [Example(s, t, 1.0, "positive") for s, t in zip(src, tgt)]
    ex = pos + neg
    counts = {"positives": len(pos), "negatives": len(neg),
              "by_kind": {k: sum(e.kind == k for e in neg) for k in CALIBRATION_KINDS}}
    return ex, counts
