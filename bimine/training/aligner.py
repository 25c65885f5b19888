"""Training of the word aligner the divergence models read (IBM Models 1-2 by vectorised EM,
both directions; ``bimine train-divergence`` trains one on its corpus or loads one). The aligner
itself, its tables, symmetrisation and dictionary, is :mod:`bimine.scoring.ibm`."""

from __future__ import annotations

import numpy as np

from bimine.errors import ConfigError
from bimine.scoring.ibm import IBMModel, Vocab, WordAligner, alignment_key, corpus_links
from bimine.text.tokens import TOKENS_VERSION, tokenize


def _link_tables(s_ids: list[np.ndarray], t_ids: list[np.ndarray], n_f: int, model: int,
                 length_cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, int]:
    """Every possible link (e, f) of the corpus as arrays for EM: the sorted distinct link keys
    (``e * n_f + f``), each link's key index, its target word's group (the posterior's
    denominator), its Model 2 alignment key and Model 1's uniform ``1 / (l + 1)``, and the
    number of groups. Two passes over chunks of sentences keep the peak memory near the final
    per-link arrays."""
    step = 20_000
    chunks = [(k, min(k + step, len(s_ids))) for k in range(0, len(s_ids), step)]
    keys = np.zeros(0, np.int64)
    for a_, b_ in chunks:
        L = corpus_links(s_ids[a_:b_], t_ids[a_:b_])
        keys = np.union1d(keys, L.e * n_f + L.f)
    pair, group, akey, inv_len = [], [], [], []
    g0 = 0
    for a_, b_ in chunks:
        L = corpus_links(s_ids[a_:b_], t_ids[a_:b_])
        pair.append(np.searchsorted(keys, L.e * n_f + L.f).astype(np.int32))
        group.append((L.group + g0).astype(np.int32))
        g0 += int(L.lens[:, 1].sum())
        l_row, m_row = L.lens[L.sent, 0], L.lens[L.sent, 1]
        inv_len.append(1.0 / (l_row + 1))  # Model 1's uniform a(i | j, l, m)
        if model == 2:
            akey.append(alignment_key(L.i, L.j, l_row, m_row, length_cap).astype(np.int32))
        del L, l_row, m_row
    n_groups = g0

    def cat(xs, dt):
        return np.concatenate(xs) if xs else np.zeros(0, dt)

    pair, group, inv_len = cat(pair, np.int32), cat(group, np.int32), cat(inv_len, np.float64)
    akey = cat(akey, np.int32) if model == 2 else None
    return keys, pair, group, akey, inv_len, n_groups


def train_ibm(
    src: list[list[str]],
    tgt: list[list[str]],
    *,
    model: int = 2,
    iterations1: int = 5,
    iterations2: int = 5,
    length_cap: int = 50,
    src_vocab: Vocab | None = None,
    tgt_vocab: Vocab | None = None,
    progress=None,
) -> IBMModel:
    """Train ``t(f | e)`` (and ``a(i | j, l, m)`` when ``model == 2``) on tokenised pairs:
    ``iterations1`` EM iterations of Model 1 from a uniform table, then ``iterations2`` of
    Model 2 from Model 1's table, its ``a`` counted from the posteriors of Model 1's last
    iteration. Sentences are given as token lists; sentence lengths above ``length_cap``
    share the alignment parameters of that length (positions scaled)."""
    if model not in (1, 2):
        raise ConfigError(f"model must be 1 or 2, got {model}")
    if len(src) != len(tgt):
        raise ValueError("src and tgt must have the same number of sentences")
    sv = src_vocab or Vocab()
    tv = tgt_vocab or Vocab()
    s_ids = [sv.ids(x, grow=True) for x in src]
    t_ids = [tv.ids(x, grow=True) for x in tgt]
    n_f = len(tv)
    keys, pair, group, akey, inv_len, n_groups = _link_tables(s_ids, t_ids, n_f, model, length_cap)
    pair_e = keys // n_f
    # uniform start: t(f | e) = 1 / |V_f seen with e|
    per_e = np.bincount(pair_e, minlength=len(sv)).astype(np.float64)
    t = 1.0 / per_e[pair_e]
    c4 = (length_cap + 1) ** 4
    a = None  # dense a(i | j, l, m) over the whole key space, indexed by the key
    history: list[float] = []
    total = iterations1 + (iterations2 if model == 2 else 0)
    for it in range(total):
        w = t[pair]
        w *= a[akey] if a is not None else inv_len
        z = np.bincount(group, weights=w, minlength=n_groups)
        history.append(float(np.mean(np.log(np.maximum(z, 1e-300)))))
        w /= z[group]  # the posterior of each link
        c = np.bincount(pair, weights=w, minlength=len(keys))
        tot = np.bincount(pair_e, weights=c, minlength=len(sv))
        t = c / np.maximum(tot[pair_e], 1e-300)
        if it + 1 >= iterations1 and akey is not None:
            # the M-step of a (Model 2); after Model 1's last iteration it counts Model 1's
            # posteriors, which starts Model 2
            ca = np.bincount(akey, weights=w, minlength=c4).reshape(length_cap + 1, -1)  # (i, jlm)
            a = (ca / np.maximum(ca.sum(axis=0, keepdims=True), 1e-300)).ravel()
        del w
        if progress is not None:
            progress(it + 1, total, history[-1])
    a_keys = a_vals = None
    if model == 2:
        if a is None:  # Model 2 asked for with no Model 2 iteration: uniform
            a_keys, a_vals = np.zeros(0, np.int64), np.zeros(0)
        else:
            a_keys = np.flatnonzero(a).astype(np.int64)
            a_vals = a[a_keys]
    return IBMModel(sv, tv, keys, t, a_keys, a_vals, model, length_cap, history)


def train_aligner(src: list[str], tgt: list[str], *, model: int = 2, iterations: int = 5, src_lang: str = "",
                  tgt_lang: str = "", dict_threshold: float = 0.1, max_tokens: int = 80, progress=None,
                  ) -> WordAligner:
    """Tokenise the pairs (sentences longer than ``max_tokens`` tokens are cut there) and train
    both directions: Model 1 for ``iterations``, then (model 2) Model 2 for ``iterations``."""
    s = [tokenize(x, TOKENS_VERSION)[:max_tokens] for x in src]
    t = [tokenize(x, TOKENS_VERSION)[:max_tokens] for x in tgt]
    sv, tv = Vocab(), Vocab()
    e2f = train_ibm(s, t, model=model, iterations1=iterations, iterations2=iterations, src_vocab=sv, tgt_vocab=tv,
                    progress=(lambda i, n, ll: progress("e2f", i, n, ll)) if progress else None)
    f2e = train_ibm(t, s, model=model, iterations1=iterations, iterations2=iterations, src_vocab=tv, tgt_vocab=sv,
                    progress=(lambda i, n, ll: progress("f2e", i, n, ll)) if progress else None)
    for m in (e2f, f2e):  # at the precision of the file (float32): a saved and reloaded aligner is this one
        m.t_vals = m.t_vals.astype(np.float32).astype(np.float64)
        if m.a_vals is not None:
            m.a_vals = m.a_vals.astype(np.float32).astype(np.float64)
    return WordAligner(e2f, f2e, src_lang, tgt_lang, dict_threshold, TOKENS_VERSION)
