"""Planted corpora: gold translation pairs planted among distractor sentences, BUCC-style
(:func:`plant_pairs`, the layout of :func:`bimine.eval.bucc.make_newstest_bucc`), and the
rescorer's training rows mined from them as real corpora are mined (:func:`training_rows`;
the rescorer itself is :mod:`bimine.scoring.rescore`). Here, in ``mining/``, because making
them runs the miner: kNN both ways, the margin and a selection strategy."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

import numpy as np

from bimine.errors import InputError
from bimine.index.sides import knn_both_ways, side_from_array
from bimine.mining.select import select_pairs
from bimine.mining.spec import MineConfig
from bimine.scoring.margin import score_candidates
from bimine.scoring.rescore import TEXT_VERSION, knn_features, pair_features, swap_sides
from bimine.scoring.vdpwi import WordVectors


@dataclass
class BuccSplit:
    src_ids: list[str]
    src: list[str]
    tgt_ids: list[str]
    tgt: list[str]
    gold: set[tuple[str, str]]


def _key(t: str) -> str:
    return " ".join(t.casefold().split())


def take_gold(s: str, t: str, seen_s: set[str], seen_t: set[str]) -> bool:
    """Whether :func:`plant_pairs` can take ``(s, t)`` as a gold pair after the gold texts in
    ``seen_s``/``seen_t`` (both sides non-empty, neither text, case and spacing aside, an
    earlier gold text: it would have two translations); if so its texts are added to them."""
    if not s.strip() or not t.strip() or _key(s) in seen_s or _key(t) in seen_t:
        return False
    seen_s.add(_key(s))
    seen_t.add(_key(t))
    return True


def plant_pairs(pairs, gold: int, distractors: int, *, seed: int = 0, prefix: str = "p") -> BuccSplit:
    """A BUCC-style split from parallel ``(src, tgt)`` pairs, in the manner of
    :func:`bimine.eval.bucc.make_newstest_bucc`: the first ``gold`` usable pairs are the gold, planted among the
    source sides of the next ``distractors`` pairs and the target sides of the ``distractors``
    pairs after those, so that no distractor has its translation on the other side. A pair is
    usable when both sides are non-empty (a gold pair also when neither side repeats an earlier gold text); a distractor is left out when its text (case and
    spacing aside) equals a gold text or the text of the *other* distractor pairs on its side
    (a repeated sentence could be another pair's translation). Both sides are shuffled
    (seeded). Reads ``pairs`` lazily and stops when it has enough."""
    g: list[tuple[str, str]] = []
    ds: list[tuple[str, str]] = []
    dt: list[tuple[str, str]] = []
    seen_s: set[str] = set()
    seen_t: set[str] = set()
    for s, t in pairs:
        if not s.strip() or not t.strip():
            continue
        if len(g) < gold:
            if take_gold(s, t, seen_s, seen_t):
                g.append((s, t))
        elif len(ds) < distractors:
            ds.append((s, t))
        elif len(dt) < distractors:
            dt.append((s, t))
        else:
            break
    if len(g) < gold:
        raise InputError(f"{len(g)} usable pairs, {gold} gold pairs asked for")
    gold_s = {_key(s) for s, _ in g}
    gold_t = {_key(t) for _, t in g}
    other_s = {_key(s) for s, _ in dt}  # sources whose translation is among the target distractors
    other_t = {_key(t) for _, t in ds}  # targets whose translation is among the source distractors
    src = [(s, n) for n, (s, _) in enumerate(g)]
    src += [(s, None) for s, _ in ds if _key(s) not in gold_s and _key(s) not in other_s]
    tgt = [(t, n) for n, (_, t) in enumerate(g)]
    tgt += [(t, None) for _, t in dt if _key(t) not in gold_t and _key(t) not in other_t]
    rng = random.Random(f"{seed}-{prefix}")
    rng.shuffle(src)
    rng.shuffle(tgt)
    sid = {r: f"{prefix}-s{n:06d}" for n, (_, r) in enumerate(src) if r is not None}
    tid = {r: f"{prefix}-t{n:06d}" for n, (_, r) in enumerate(tgt) if r is not None}
    return BuccSplit([f"{prefix}-s{n:06d}" for n in range(len(src))], [s for s, _ in src],
                     [f"{prefix}-t{n:06d}" for n in range(len(tgt))], [t for t, _ in tgt],
                     {(sid[r], tid[r]) for r in range(len(g))})


# ------------------------------------------------------------------------------ the rescorer's training rows


@dataclass
class Candidates:
    """The pairs a mining strategy selects, with their base score and rescoring features."""

    score: np.ndarray  # the mining score (e.g. Eq. 9), best first
    src: np.ndarray  # source rows
    tgt: np.ndarray  # target rows
    features: np.ndarray  # one row of FEATURES per pair


def mine_candidates(x: np.ndarray, y: np.ndarray, src_texts: list[str], tgt_texts: list[str], vectors,
                    src_lang: str, tgt_lang: str, cfg=None, text_version: int = TEXT_VERSION) -> Candidates:
    """Mine unit-norm embeddings ``x`` (sources) against ``y`` (targets) in memory with ``cfg``
    (a :class:`~bimine.mining.pipeline.MineConfig`; threshold ignored) and return every
    selected candidate with its features (``vectors``: the encoder's word vectors; text features
    of ``text_version``: a rescorer's own, for one that scores them)."""
    cfg = replace(cfg or MineConfig(), threshold=None)
    k = min(cfg.k, len(x), len(y))
    cfg = replace(cfg, k=k)
    sxy, ixy, syx, iyx = knn_both_ways(side_from_array(x), side_from_array(y), cfg)
    fwd, bwd = score_candidates(cfg.score, k, sxy, ixy, syx, iyx)
    s, i, j = select_pairs(fwd, ixy, bwd, iyx, cfg.strategy)
    f = pair_features([src_texts[a] for a in i.tolist()], [tgt_texts[b] for b in j.tolist()],
                      knn_features(sxy, ixy, syx, iyx, k, i, j), vectors, src_lang, tgt_lang, text_version)
    return Candidates(s, i, j, f)


def planted_corpus(pairs, encoder, src_lang: str, tgt_lang: str, *, gold: int = 300, distractors: int = 6000,
                   near: int = 0, pool: int = 20000, seed: int = 0, prefix: str = "p"):
    """A BUCC-style corpus (a :class:`BuccSplit`) for training a rescorer,
    from parallel ``(src, tgt)`` pairs: ``gold`` pairs planted among ``distractors`` sentences
    on each side, taken from other pairs so that none has its translation on the other side
    (:func:`plant_pairs`). With ``near``, each side's distractors are first the
    ``near`` nearest neighbours (by the encoder) of every gold sentence among that side's texts
    of ``pool`` further pairs, then others in file order: hard negatives close to the gold, as
    in real comparable corpora, rather than only random sentences."""
    if not near:
        return plant_pairs(pairs, gold, distractors, seed=seed, prefix=prefix)
    rows = []
    for p in pairs:
        rows.append(p)
        if len(rows) >= gold + 2 * pool:
            break
    base = plant_pairs(rows, gold, pool, seed=seed, prefix=prefix)
    is_gold_s = {a for a, _ in base.gold}
    is_gold_t = {b for _, b in base.gold}

    def pick(ids, texts, gold_ids, lang):
        g = [n for n, i in enumerate(ids) if i in gold_ids]
        rest = [n for n, i in enumerate(ids) if i not in gold_ids]
        if not rest:
            return g
        e = encoder.encode([texts[n] for n in g + rest], lang)
        sims = e[: len(g)] @ e[len(g):].T
        k = min(near, len(rest))
        nn = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < len(rest) else np.tile(np.arange(len(rest)), (len(g), 1))
        chosen = list(dict.fromkeys(int(c) for c in nn.T.ravel()))  # round-robin over the gold, no repeats
        chosen = chosen[:distractors]
        if len(chosen) < distractors:
            taken = set(chosen)
            chosen += [c for c in range(len(rest)) if c not in taken][: distractors - len(chosen)]
        return g + [rest[c] for c in chosen]

    keep_s = pick(base.src_ids, base.src, is_gold_s, src_lang)
    keep_t = pick(base.tgt_ids, base.tgt, is_gold_t, tgt_lang)
    return BuccSplit([base.src_ids[n] for n in keep_s], [base.src[n] for n in keep_s],
                     [base.tgt_ids[n] for n in keep_t], [base.tgt[n] for n in keep_t], base.gold)


def candidate_sets(encoder, corpora, *, gold: int = 300, distractors: int = 6000, near: int = 10, pool: int = 20000,
                   cfg=None, seed: int = 0, vectors=None, text_version: int = TEXT_VERSION):
    """For each ``(lang, pairs)`` of ``corpora`` (``pairs``: (other-language, English) pairs
    whose first ``gold`` usable ones the encoder never saw), a planted corpus
    (:func:`planted_corpus`) mined as ``cfg`` (default Eq. 9, max, k = 4): yields ``(lang,
    split, candidates, label)``, ``label`` 1 for the candidates that are gold pairs (text
    features of ``text_version``)."""
    if vectors is None:
        vectors = WordVectors(encoder)
    for lang, pairs in corpora:
        split = planted_corpus(pairs, encoder, lang, "en", gold=gold, distractors=distractors, near=near, pool=pool,
                               seed=seed, prefix=lang)
        x = encoder.encode(split.src, lang)
        y = encoder.encode(split.tgt, "en")
        c = mine_candidates(x, y, split.src, split.tgt, vectors, lang, "en", cfg, text_version)
        label = np.array([(split.src_ids[a], split.tgt_ids[b]) in split.gold for a, b in zip(c.src.tolist(), c.tgt.tolist())],
                         dtype=np.int8)
        yield lang, split, c, label


def training_rows(encoder, corpora, *, gold: int = 300, distractors: int = 6000, near: int = 10, pool: int = 20000,
                  cfg=None, seed: int = 0, log=None, texts: list | None = None, sizes: list | None = None,
                  text_version: int = TEXT_VERSION) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Candidate features and labels for training a rescorer, from :func:`candidate_sets`: gold
    pairs are positives, every other selected candidate a negative; each row also enters with
    its sides swapped (:func:`swap_sides`), so the rescorer serves both directions. Returns
    features, labels, each row's candidate number (the two copies of a candidate share it:
    split train and dev by it) and each row's language. With ``texts`` (a list), each
    candidate's ``(source, target)`` texts are appended to it, in candidate-number order. With
    ``sizes`` (a list), each language's ``(lang, source sentences, target sentences, gold
    pairs)`` is appended to it: a side smaller than ``gold + distractors`` ran out of pairs.
    ``text_version``: of the text features (the rescorer trained on them records it)."""
    xs, ys, ids, langs = [], [], [], []
    for lang, split, c, label in candidate_sets(encoder, corpora, gold=gold, distractors=distractors, near=near,
                                                pool=pool, cfg=cfg, seed=seed, text_version=text_version):
        xs += [c.features, swap_sides(c.features)]
        ys += [label, label]
        if texts is not None:
            texts += [(split.src[a], split.tgt[b]) for a, b in zip(c.src.tolist(), c.tgt.tolist())]
        first = sum(len(a) for a in ids) // 2
        ids += [np.arange(first, first + len(label))] * 2
        langs += [lang] * (2 * len(label))
        if sizes is not None:
            sizes.append((lang, len(split.src), len(split.tgt), len(split.gold)))
        if log is not None:
            log(f"{lang}: {len(split.src):,} x {len(split.tgt):,} sentences, {len(label):,} candidates, "
                f"{int(label.sum())} of {len(split.gold)} gold pairs among them")
    if not xs:
        raise InputError("no corpora to train the rescorer on")
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ids), langs
