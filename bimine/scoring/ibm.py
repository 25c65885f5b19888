"""IBM Models 1 and 2, their symmetrised word alignments and the bilingual dictionary they give
(paper 004 §3 and §5.2, paper 003 §4.3); their training by EM, vectorised with NumPy, is
:mod:`bimine.training.aligner`, which reads the link tables built here.

Model 1 (Brown et al. 1993) explains each target word ``f_j`` by one source word ``e_i`` or by
NULL (``i = 0``) with a translation table ``t(f | e)`` and uniform alignment probabilities;
Model 2 adds ``a(i | j, l, m)``, the probability of linking target position ``j`` of an
``m``-word sentence to source position ``i`` of an ``l``-word one (started from Model 1's
table). EM, one iteration over the whole corpus at a time, written as array operations:

* every possible link ``(k, j, i)`` of every sentence pair ``k`` is one row; its ``(e, f)``
  word pair is an index into the table of co-occurring pairs (``np.unique`` over
  ``e * |V_f| + f``), its ``(k, j)`` is a group of ``l + 1`` consecutive rows;
* E-step: ``w = t[pair] * a[key]``, normalised within each group (``np.bincount``);
* M-step: ``t(f | e) = sum of w over the rows of (e, f) / sum over the rows of e``, and the
  same for ``a`` over ``(i, j, l, m)`` normalised over ``i``.

Alignments are Viterbi links in each direction (the most probable source word per target
word; NULL means unaligned), combined by intersection, union, grow-diag-final or
grow-diag-final-and (Koehn et al. 2003). The dictionary keeps the word pairs whose translation
probability reaches a threshold (003 §4.3: 10 %) in either direction. Models are saved as
safetensors (arrays) with the vocabularies and settings as JSON metadata; never pickle.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bimine.errors import ConfigError
from bimine.outputs import atomic_path
from bimine.text.tokens import TOKENS_VERSION, check_version, tokenize
from bimine.weights import read_safetensors, save_safetensors

FORMAT = 1
SYMMETRIZATIONS = ("intersection", "union", "grow-diag-final", "grow-diag-final-and")


def is_word(token: str) -> bool:
    """A token that holds a letter or digit (punctuation is not counted as a word)."""
    return any(c.isalnum() for c in token)


def words(s: str, limit: int | None = None, version: int = TOKENS_VERSION) -> list[str]:
    """The word tokens of ``s`` (punctuation dropped), the first ``limit`` of them: what
    lengths, dictionary coverage, the M&M features and the VDPWI model count. ``version``: the
    token version (:mod:`bimine.text.tokens`) of the model that reads them."""
    return [t for t in tokenize(s, version) if is_word(t)][:limit]


class Vocab:
    """Token <-> id; id 0 is NULL (source side) or unused (target side)."""

    def __init__(self, tokens: list[str] | None = None) -> None:
        self.tokens: list[str] = ["<null>"]
        self.index: dict[str, int] = {}
        for t in tokens or []:
            self.add(t)

    def add(self, tok: str) -> int:
        i = self.index.get(tok)
        if i is None:
            i = len(self.tokens)
            self.index[tok] = i
            self.tokens.append(tok)
        return i

    def ids(self, toks: list[str], grow: bool) -> np.ndarray:
        if grow:
            return np.fromiter((self.add(t) for t in toks), dtype=np.int64, count=len(toks))
        get = self.index.get
        return np.fromiter((get(t, -1) for t in toks), dtype=np.int64, count=len(toks))

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass
class Links:
    """Every possible link of a corpus, one row each (see the module docstring)."""

    sent: np.ndarray  # (R,) sentence index k
    i: np.ndarray  # source position, 0 = NULL, 1..l
    j: np.ndarray  # target position 1..m
    e: np.ndarray  # source word id (0 = NULL)
    f: np.ndarray  # target word id (-1 = unknown)
    group: np.ndarray  # (k, j) group id, rows of a group are consecutive
    lens: np.ndarray  # (K, 2) l, m


def corpus_links(src_ids: list[np.ndarray], tgt_ids: list[np.ndarray]) -> Links:
    ls = np.array([len(s) for s in src_ids], dtype=np.int64)
    ms = np.array([len(t) for t in tgt_ids], dtype=np.int64)
    per = (ls + 1) * ms  # rows per sentence
    R = int(per.sum())
    sent = np.repeat(np.arange(len(ls)), per)
    start = np.concatenate([[0], np.cumsum(per)[:-1]])
    r = np.arange(R) - start[sent]  # row within its sentence: (j - 1) * (l + 1) + i
    lp1 = ls[sent] + 1
    jj = r // lp1 + 1
    ii = r % lp1
    e_cat = [np.concatenate([[0], s]) for s in src_ids]
    e_off = np.concatenate([[0], np.cumsum(ls + 1)[:-1]])
    f_off = np.concatenate([[0], np.cumsum(ms)[:-1]])
    e_all = np.concatenate(e_cat) if e_cat else np.zeros(0, np.int64)
    f_all = np.concatenate(tgt_ids) if tgt_ids else np.zeros(0, np.int64)
    e = e_all[e_off[sent] + ii] if R else np.zeros(0, np.int64)
    f = f_all[f_off[sent] + jj - 1] if R else np.zeros(0, np.int64)
    group_start = np.concatenate([[0], np.cumsum(ms)[:-1]])
    group = group_start[sent] + jj - 1
    return Links(sent, ii, jj, e, f, group, np.stack([ls, ms], axis=1))


def alignment_key(i, j, l, m, cap: int) -> np.ndarray:
    """One int64 key for (i, j, l, m); lengths above ``cap`` share the key of ``cap`` with
    positions scaled into it (long sentences are rare; their shape is what matters)."""
    big = np.maximum(l, m) > cap
    if np.any(big):
        scale = cap / np.maximum(l, m).astype(np.float64)
        i = np.where(big & (i > 0), np.maximum(1, np.rint(i * scale)), i).astype(np.int64)
        j = np.where(big, np.maximum(1, np.rint(j * scale)), j).astype(np.int64)
        l = np.where(big, np.maximum(1, np.rint(l * scale)), l).astype(np.int64)
        m = np.where(big, np.maximum(1, np.rint(m * scale)), m).astype(np.int64)
    c = cap + 1
    return ((i * c + j) * c + l) * c + m


@dataclass
class IBMModel:
    """One direction's model: ``t(f | e)`` as a sparse table over co-occurring pairs (sorted
    keys ``e * |V_f| + f``), and for Model 2 ``a(i | j, l, m)`` over the keys seen."""

    src_vocab: Vocab
    tgt_vocab: Vocab
    t_keys: np.ndarray
    t_vals: np.ndarray
    a_keys: np.ndarray | None = None
    a_vals: np.ndarray | None = None
    model: int = 1
    length_cap: int = 50
    history: list[float] = field(default_factory=list)  # mean log-likelihood per target word

    # ------------------------------------------------------------------ probabilities
    def t_prob(self, e: np.ndarray, f: np.ndarray) -> np.ndarray:
        """t(f | e) for id arrays (0 for pairs never seen together or unknown words)."""
        key = np.asarray(e, np.int64) * len(self.tgt_vocab) + np.asarray(f, np.int64)
        pos = np.searchsorted(self.t_keys, key)
        pos = np.minimum(pos, max(len(self.t_keys) - 1, 0))
        hit = (len(self.t_keys) > 0) & (self.t_keys[pos] == key) & (np.asarray(f) >= 0) & (np.asarray(e) >= 0)
        return np.where(hit, self.t_vals[pos] if len(self.t_vals) else 0.0, 0.0)

    def a_prob(self, i, j, l, m) -> np.ndarray:
        """a(i | j, l, m); uniform 1 / (l + 1) for Model 1 and for shapes never seen."""
        uniform = 1.0 / (np.asarray(l, np.float64) + 1)
        if self.model == 1 or self.a_keys is None or len(self.a_keys) == 0:
            return np.broadcast_to(uniform, np.shape(i)).astype(np.float64)
        key = alignment_key(np.asarray(i), np.asarray(j), np.asarray(l), np.asarray(m), self.length_cap)
        pos = np.minimum(np.searchsorted(self.a_keys, key), len(self.a_keys) - 1)
        hit = self.a_keys[pos] == key
        return np.where(hit, self.a_vals[pos], uniform)

    # ------------------------------------------------------------------ alignment
    def link_scores(self, src: list[list[str]], tgt: list[list[str]]) -> tuple[Links, np.ndarray]:
        s_ids = [self.src_vocab.ids(x, grow=False) for x in src]
        t_ids = [self.tgt_vocab.ids(x, grow=False) for x in tgt]
        L = corpus_links(s_ids, t_ids)
        p = self.t_prob(L.e, L.f)
        # an unknown source word aligns nowhere; an unknown target word goes to NULL
        l, m = L.lens[L.sent, 0], L.lens[L.sent, 1]
        return L, p * self.a_prob(L.i, L.j, l, m)

    def viterbi(self, src: list[list[str]], tgt: list[list[str]]) -> list[list[tuple[int, int]]]:
        """Per pair, the links ``(i, j)`` (0-based source, target positions) of the most
        probable source word of each target word; target words whose best is NULL (or that
        have no probability anywhere) stay unaligned."""
        out: list[list[tuple[int, int]]] = [[] for _ in src]
        L, p = self.link_scores(src, tgt)
        if len(p) == 0:
            return out
        # first row of each group holding its maximum (rows of a group are consecutive)
        starts = np.flatnonzero(np.r_[True, L.group[1:] != L.group[:-1]])
        best = np.maximum.reduceat(p, starts)
        is_best = p == np.repeat(best, np.diff(np.r_[starts, len(p)]))
        rows = np.flatnonzero(is_best)
        first = rows[np.r_[True, L.group[rows][1:] != L.group[rows][:-1]]]
        first = first[(L.i[first] > 0) & (p[first] > 0)]
        for k, i, j in zip(L.sent[first].tolist(), L.i[first].tolist(), L.j[first].tolist()):
            out[k].append((i - 1, j - 1))
        return out

    # ------------------------------------------------------------------ storage
    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        d = {f"{prefix}.t_keys": self.t_keys, f"{prefix}.t_vals": self.t_vals.astype(np.float32)}
        if self.a_keys is not None:
            d[f"{prefix}.a_keys"] = self.a_keys
            d[f"{prefix}.a_vals"] = self.a_vals.astype(np.float32)
        return d

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], prefix: str, src_vocab: Vocab, tgt_vocab: Vocab,
                    length_cap: int, model: int | None = None, history: list[float] | None = None) -> IBMModel:
        """The model :meth:`arrays` wrote under ``prefix``; ``model`` None: 2 when it has an
        alignment table, else 1."""
        a_vals = arrays.get(f"{prefix}.a_vals")
        if model is None:
            model = 2 if f"{prefix}.a_keys" in arrays else 1
        return cls(src_vocab, tgt_vocab, arrays[f"{prefix}.t_keys"], arrays[f"{prefix}.t_vals"].astype(np.float64),
                   arrays.get(f"{prefix}.a_keys"), None if a_vals is None else a_vals.astype(np.float64),
                   model, length_cap, list(history or []))


# ---------------------------------------------------------------------- symmetrisation
def symmetrize(e2f: list[tuple[int, int]], f2e: list[tuple[int, int]], method: str = "grow-diag-final-and",
               ) -> set[tuple[int, int]]:
    """Combine the links of the two directions, both given as ``(i, j)`` = (source position,
    target position): intersection, union, or Koehn's grow-diag-final(-and): start from the
    intersection, add union links that neighbour (also diagonally) an existing link and
    cover a word not yet aligned, then (final) union links whose words are both (-and) or
    either unaligned."""
    if method not in SYMMETRIZATIONS:
        raise ConfigError(f"unknown symmetrisation {method!r}; choose from {', '.join(SYMMETRIZATIONS)}")
    a, b = set(e2f), set(f2e)
    inter, union = a & b, a | b
    if method == "intersection":
        return inter
    if method == "union":
        return union
    align = set(inter)
    src_al = {i for i, _ in align}
    tgt_al = {j for _, j in align}
    nbrs = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))
    added = True
    while added:
        added = False
        for i, j in sorted(align):
            for di, dj in nbrs:
                p = (i + di, j + dj)
                if p in union and p not in align and (p[0] not in src_al or p[1] not in tgt_al):
                    align.add(p)
                    src_al.add(p[0])
                    tgt_al.add(p[1])
                    added = True
    both = method == "grow-diag-final-and"
    for links in (sorted(a), sorted(b)):
        for i, j in links:
            if (i, j) in align:
                continue
            free_s, free_t = i not in src_al, j not in tgt_al
            if (free_s and free_t) if both else (free_s or free_t):
                align.add((i, j))
                src_al.add(i)
                tgt_al.add(j)
    return align


# ---------------------------------------------------------------------- both directions
@dataclass
class WordAligner:
    """IBM models in both directions (``e2f`` explains target words by source words, ``f2e``
    the reverse) and the dictionary taken from them."""

    e2f: IBMModel
    f2e: IBMModel
    src_lang: str = ""
    tgt_lang: str = ""
    dict_threshold: float = 0.1
    token_version: int = TOKENS_VERSION  #: the token version its vocabularies were made with (:mod:`bimine.text.tokens`)
    _dict: tuple[dict, dict] | None = field(default=None, repr=False)

    def words(self, s: str, limit: int | None = None) -> list[str]:
        """The word tokens of ``s`` as this aligner's vocabularies were cut (:func:`words`)."""
        return words(s, limit, self.token_version)

    def align(self, src: list[list[str]], tgt: list[list[str]], method: str = "grow-diag-final-and",
              ) -> list[set[tuple[int, int]]]:
        """Symmetrised links ``(i, j)`` for each tokenised pair."""
        a = self.e2f.viterbi(src, tgt)
        b = [[(i, j) for j, i in links] for links in self.f2e.viterbi(tgt, src)]
        return [symmetrize(x, y, method) for x, y in zip(a, b)]

    def dictionary(self) -> set[tuple[str, str]]:
        """Word pairs ``(source word, target word)`` with ``t(f | e)`` or ``t(e | f)`` at or
        above ``dict_threshold`` (NULL and punctuation excluded)."""
        fwd, bwd = self._dictionary()
        return {(a, b) for a, bs in fwd.items() for b in bs} | {(a, b) for b, as_ in bwd.items() for a in as_}

    def _dictionary(self):
        if self._dict is None:
            sides = []
            for m in (self.e2f, self.f2e):
                nf = len(m.tgt_vocab)
                out: dict[str, set[str]] = {}
                for key in m.t_keys[m.t_vals >= self.dict_threshold].tolist():
                    e, f = divmod(key, nf)
                    if e == 0:
                        continue
                    a, b = m.src_vocab.tokens[e], m.tgt_vocab.tokens[f]
                    if is_word(a) and is_word(b):
                        out.setdefault(a, set()).add(b)
                sides.append(out)
            self._dict = (sides[0], sides[1])
        return self._dict

    def translations(self, side: str) -> dict[str, set[str]]:
        """``side='src'``: source word ``e`` -> the target words ``f`` with ``t(f | e)`` at or
        above the threshold (what checks that a source word has a translation in a target
        sentence); ``'tgt'``: target word ``f`` -> source words with ``t(e | f)`` above it."""
        fwd, bwd = self._dictionary()
        return fwd if side == "src" else bwd

    def pruned(self, min_t: float) -> WordAligner:
        """A copy that keeps ``t(f | e) >= min_t`` (and every ``t(f | NULL)``: NULL competes
        with each real word for every target word, so dropping its small values would change
        which words are linked), with the tables rounded to float32 as a model file stores
        them. Links from the copy differ from the full model's where a dropped pair was the
        best; a model that stores the copy must be trained on the copy's links."""
        models = []
        for m in (self.e2f, self.f2e):
            keep = (m.t_vals >= min_t) | (m.t_keys // len(m.tgt_vocab) == 0)
            models.append(IBMModel(m.src_vocab, m.tgt_vocab, m.t_keys[keep],
                                   m.t_vals[keep].astype(np.float32).astype(np.float64), m.a_keys,
                                   None if m.a_vals is None else m.a_vals.astype(np.float32).astype(np.float64),
                                   m.model, m.length_cap, list(m.history)))
        return WordAligner(models[0], models[1], self.src_lang, self.tgt_lang, self.dict_threshold, self.token_version)

    # ------------------------------------------------------------------ storage
    def save(self, path: str | os.PathLike) -> None:
        meta = {
            "format": FORMAT,
            "src_lang": self.src_lang,
            "tgt_lang": self.tgt_lang,
            "dict_threshold": self.dict_threshold,
            "token_version": self.token_version,
            "src_vocab": self.e2f.src_vocab.tokens,
            "tgt_vocab": self.e2f.tgt_vocab.tokens,
            "models": {k: {"model": m.model, "length_cap": m.length_cap, "history": m.history}
                       for k, m in (("e2f", self.e2f), ("f2e", self.f2e))},
        }
        arrays = {**self.e2f.arrays("e2f"), **self.f2e.arrays("f2e")}
        with atomic_path(path) as tmp:
            save_safetensors(tmp, arrays, {"bimine_word_aligner": json.dumps(meta, ensure_ascii=False)}, atomic=False)

    @classmethod
    def load(cls, path: str | os.PathLike) -> WordAligner:
        path = Path(path)
        metadata, arrays = read_safetensors(path, "numpy", "word-alignment model", "bimine train-divergence --aligner")
        raw = metadata.get("bimine_word_aligner")
        if raw is None:
            raise ConfigError(f"{path}: not a bimine word-alignment model (no 'bimine_word_aligner' metadata)")
        meta = json.loads(raw)
        if meta.get("format") != FORMAT:
            raise ConfigError(f"{path}: word-alignment model format {meta.get('format')}, this bimine reads {FORMAT}")
        sv, tv = Vocab(meta["src_vocab"][1:]), Vocab(meta["tgt_vocab"][1:])
        models = {k: IBMModel.from_arrays(arrays, k, a, b, meta["models"][k]["length_cap"], meta["models"][k]["model"],
                                          meta["models"][k].get("history"))
                  for k, (a, b) in (("e2f", (sv, tv)), ("f2e", (tv, sv)))}
        try:  # a file without a version was made before version 2
            version = check_version(meta.get("token_version", 1), str(path))
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return cls(models["e2f"], models["f2e"], meta["src_lang"], meta["tgt_lang"], meta["dict_threshold"], version)
