"""Training of the pair classifiers of :mod:`bimine.scoring.classifiers` on clean pairs, and the
jobs of ``bimine train-classifier`` (:class:`ClassifierJob`) and ``bimine calibrate``
(:class:`CalibrateJob`).

All three hold out ``dev`` pairs (the last ones given, or a separate set), train on the rest
with a fixed seed, and set the decision threshold at the best F1 on the dev pairs mixed with
negatives of the kind the classifier was trained on (random targets for ``bigru`` and
``confidence``, the synthetic ones for ``fc``); the dev figures are stored in the file.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from bimine.config import bounds, check_fields
from bimine.encoders import load_encoder
from bimine.encoders.base import model_folder, uses_language
from bimine.errors import ConfigError, OptionError
from bimine.filtering.pipeline import checked_pair_input, read_pair_blocks, two_columns
from bimine.outputs import check_output_file
from bimine.progress import bar, bars_wanted
from bimine.scoring.calibration import CALIBRATION_FILE
from bimine.scoring.calibration_metrics import expected_calibration_error
from bimine.scoring.classifiers import (
    KINDS,
    PairClassifier,
    PieceTokenizer,
    TokenHasher,
    build_module,
    pad_batch,
    roc_auc,
)
from bimine.scoring.logistic import best_f1_threshold, fit_logistic_1d
from bimine.streams import reading_once
from bimine.text.sameness import same_file
from bimine.text.tokens import TOKENS_VERSION
from bimine.training.defaults import MIN_DEV_AUC
from bimine.training.negatives import make_negatives

log = logging.getLogger(__name__)



@dataclass
class ClassifierTrainConfig:
    kind: str
    epochs: int | None = None  # None: 15 (bigru, as 003), 10 (fc), 5 (confidence)
    batch_pairs: int | None = None  # positives per batch (default 128; 003: 128 examples, i.e. 16 with 7 negatives)
    lr: float | None = None  # None: 2e-4 (bigru, as 003), 1e-3
    negatives: int = 7  # bigru: random negatives per positive and epoch
    dropout: float | None = None  # None: 0.2 (bigru), 0.1 (fc), 0.4 (confidence, as 000)
    hidden: int | None = None  # bigru GRU state per direction (128); fc: the layer's width (the embedding dim)
    emb: int = 128  # bigru token embedding size
    fc: int = 256  # bigru hidden layer (003: 256)
    buckets: int = 1 << 18  # bigru hashed token rows
    max_tokens: int = 64
    clip: float = 5.0
    seed: int = 0
    retrieved: int = 0  # confidence: each source's R nearest training targets added as candidates (0 = as 000)
    threads: int = 1  # torch threads: one per run is fastest on a shared 2-core machine (decisions.md)
    tokens: str = "hashed"  # bigru input: "hashed" words (003's words, no vocabulary) or "pieces" of init_model
    init_model: str | None = None  # bigru with pieces: the DAN model whose pieces and rows it takes ("default")
    hard_negatives: int = 0  # bigru: of the negatives, how many are the batch's nearest targets (0 = 003's random)
    curve_pairs: int = 1000  # bigru: dev pairs of the Cartesian-product F1 after each epoch (0: none)
    checkpoint: str | None = None  # bigru: written every checkpoint_seconds and after each epoch
    checkpoint_seconds: float = 600.0
    resume: bool = False

    def resolved(self) -> ClassifierTrainConfig:
        if self.kind not in KINDS:
            raise ConfigError(f"unknown classifier kind {self.kind!r}; kinds: {', '.join(KINDS)}")
        big = self.kind == "bigru"
        return replace(
            self,
            epochs=self.epochs or {"bigru": 15, "fc": 10, "confidence": 5}[self.kind],
            batch_pairs=self.batch_pairs or 128,
            lr=self.lr or (2e-4 if big else 1e-3),
            dropout=self.dropout if self.dropout is not None else {"bigru": 0.2, "fc": 0.1, "confidence": 0.4}[self.kind],
            hidden=self.hidden or (128 if big else None),
        )


def clip_grad_norm(params, max_norm: float) -> float:
    """Scale all gradients, dense and sparse, so that their joint L2 norm is at most
    ``max_norm`` (torch's ``clip_grad_norm_`` does not take sparse gradients); returns the
    norm before clipping."""
    import torch  # loaded on use: PyTorch is heavy or optional

    grads = [p.grad for p in params if p.grad is not None]
    sq = torch.zeros(())
    for g in grads:
        vals = g.coalesce().values() if g.is_sparse else g
        sq = sq + vals.double().pow(2).sum()
    norm = float(sq.sqrt())
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm


def _random_others(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``(n, k)`` indices ``j != i`` drawn uniformly (with replacement across the k)."""
    j = rng.integers(0, n - 1, size=(n, k))
    return j + (j >= np.arange(n)[:, None])


def train_classifier(
    cfg: ClassifierTrainConfig,
    src: list[str],
    tgt: list[str],
    *,
    src_lang: str | None,
    tgt_lang: str | None,
    encoder=None,
    dev: tuple[list[str], list[str]] | None = None,
    dev_size: int = 500,
    progress: bool = True,
    groups: np.ndarray | None = None,
) -> PairClassifier:
    """Train a classifier of ``cfg.kind`` on the parallel ``src``/``tgt`` (in document order:
    ``fc``'s adjacent-sentence negatives use it). ``encoder`` (frozen) is needed by the
    embedding kinds. Without ``dev``, the last ``dev_size`` pairs are held out.

    ``groups`` (``confidence`` only, with ``dev`` given): one id per training pair; each batch
    then holds pairs of one group, so a source's in-batch negatives are in its own target
    language (as when the encoder was trained)."""
    import torch  # loaded on use: PyTorch is heavy or optional

    cfg = cfg.resolved()
    if len(src) != len(tgt):
        raise ConfigError(f"{len(src)} sources but {len(tgt)} targets")
    if dev is None:
        if len(src) < dev_size + 2 * max(cfg.batch_pairs, 2):
            raise ConfigError(f"{len(src)} pairs are too few to hold out {dev_size} for dev and train on the rest")
        dev = (src[-dev_size:], tgt[-dev_size:])
        src, tgt = src[:-dev_size], tgt[:-dev_size]
    if len(dev[0]) < 2 or len(src) < 2:
        raise ConfigError("need at least 2 training and 2 dev pairs")
    if groups is not None and (cfg.kind != "confidence" or len(groups) != len(src)):
        raise ConfigError("groups are for the confidence kind, one per training pair (with dev pairs given)")
    if cfg.kind in ("confidence", "fc") and encoder is None:
        raise ConfigError(f"the {cfg.kind} classifier is trained on a model's embeddings: give --model")
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(max(1, cfg.threads))
    rng = np.random.default_rng(cfg.seed)
    t0 = time.time()
    if cfg.kind == "confidence":
        clf = _train_confidence(cfg, src, tgt, dev, encoder, src_lang, tgt_lang, rng, progress, groups)
    else:
        fn = {"fc": _train_fc, "bigru": _train_bigru}[cfg.kind]
        clf = fn(cfg, src, tgt, dev, encoder, src_lang, tgt_lang, rng, progress)
    clf.config.update(
        kind=cfg.kind, src_lang=src_lang, tgt_lang=tgt_lang, train_pairs=len(src), dev_pairs=len(dev[0]),
        epochs=cfg.epochs, batch_pairs=cfg.batch_pairs, lr=cfg.lr, seed=cfg.seed,
        train_seconds=round(time.time() - t0, 1),
    )
    clf.module.eval()
    return clf


def _batches(n: int, size: int, rng: np.random.Generator):
    perm = rng.permutation(n)
    for a in range(0, n - size + 1 if n >= size else 1, size):
        yield perm[a: a + size]


def _retrieved(u: np.ndarray, v: np.ndarray, tgt: list[str], groups: np.ndarray | None,
               k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each source's ``k`` nearest targets (cosine) among the targets of its group, and whether
    each is right (the pair's own target, or one with the same text)."""
    groups = np.zeros(len(u), np.int64) if groups is None else np.asarray(groups)
    near = np.zeros((len(u), k), np.int64)
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        kk = min(k, len(rows))
        for a in range(0, len(rows), 2048):
            r = rows[a: a + 2048]
            sim = u[r] @ v[rows].T
            top = np.argpartition(-sim, kk - 1, axis=1)[:, :kk]
            order = np.argsort(-np.take_along_axis(sim, top, axis=1), axis=1, kind="stable")
            top = rows[np.take_along_axis(top, order, axis=1)]
            near[r, :kk] = top
            near[r, kk:] = top[:, -1:]
    right = np.array([[tgt[j] == tgt[i] for j in row] for i, row in enumerate(near)], bool)
    return near, right


def _grouped_batches(groups: np.ndarray, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Batches of ``size`` pairs of one group each (a group smaller than ``size`` is one
    batch; the remainder of a bigger one is dropped, as by :func:`_batches`), in random order."""
    out = []
    for g in np.unique(groups):
        idx = rng.permutation(np.flatnonzero(groups == g))
        if len(idx) < 2:
            continue
        stop = len(idx) - size + 1 if len(idx) >= size else 1
        out.extend(idx[a: a + size] for a in range(0, stop, size))
    return [out[i] for i in rng.permutation(len(out))]


def _step(opt, loss, bar) -> None:
    opt.zero_grad()
    loss.backward()
    opt.step()
    bar.update(1)
    bar.set_postfix(loss=f"{loss.item():.4f}")


def _bar(total: int, desc: str, progress: bool, initial: int = 0):
    return bar(total=total, unit=" step", desc=desc, enabled=progress, initial=initial)


def _dev_figures(scores: np.ndarray, labels: np.ndarray) -> dict:
    t, p, r, f = best_f1_threshold(scores, labels)
    return {"threshold": t, "dev_precision": round(p, 4), "dev_recall": round(r, 4), "dev_f1": round(f, 4),
            "dev_roc_auc": round(roc_auc(scores, labels), 4)}


# ---------------------------------------------------------------- calibrated confidence (000)
def _train_confidence(cfg, src, tgt, dev, encoder, src_lang, tgt_lang, rng, progress, groups=None):
    import torch  # loaded on use: PyTorch is heavy or optional

    u = torch.from_numpy(encoder.encode(src, src_lang))
    v = torch.from_numpy(encoder.encode(tgt, tgt_lang))
    conf = {"kind": "confidence", "dim": int(u.shape[1]), "dropout": cfg.dropout, "encoder": encoder.model_id,
            "positive_scale": True}
    module = build_module(conf)
    B = min(cfg.batch_pairs, len(src))

    def epoch_batches(r: np.random.Generator) -> list[np.ndarray]:
        return _grouped_batches(groups, B, r) if groups is not None else list(_batches(len(src), B, r))

    # start from the best single scale and bias (a logistic fit of the in-batch cosines), so the
    # per-source weights only learn how sources differ: from the default start (10, -5) Adam
    # needs far more steps than a few epochs to reach the right overall scale
    cos, lab = [], []
    with torch.no_grad():
        for idx in epoch_batches(np.random.default_rng(cfg.seed))[:200]:
            ix = torch.from_numpy(idx)
            cos.append((u[ix] @ v[ix].T).numpy().ravel())
            lab.append(np.eye(len(idx)).ravel())
    near = near_lab = None
    if cfg.retrieved:
        near, near_lab = _retrieved(u.numpy(), v.numpy(), tgt, groups, cfg.retrieved)
        sims = np.einsum("id,ikd->ik", u.numpy(), v.numpy()[near])
        cos.append(sims.ravel())
        lab.append(near_lab.ravel().astype(np.float64))
        near, near_lab = torch.from_numpy(near), torch.from_numpy(near_lab.astype(np.float32))
    a, b = fit_logistic_1d(np.concatenate(cos), np.concatenate(lab))
    with torch.no_grad():
        a = max(a, 1e-3)
        module.scale.bias.fill_(a + math.log(-math.expm1(-a)) if conf["positive_scale"] else a)  # softplus^-1
        module.bias.bias.fill_(b)
    conf["init_scale_bias"] = [round(a, 4), round(b, 4)]
    opt = torch.optim.Adam(module.parameters(), lr=cfg.lr)
    steps = cfg.epochs * len(epoch_batches(np.random.default_rng(0)))  # the count does not depend on the draw
    with _bar(steps, "confidence", progress) as bar:
        for _ in range(cfg.epochs):
            module.train()
            for idx in epoch_batches(rng):
                ix = torch.from_numpy(idx)
                z = module.logits_matrix(u[ix], v[ix])
                loss = torch.nn.functional.binary_cross_entropy_with_logits(z, torch.eye(len(idx)))
                if near is not None:  # the same sources against their nearest training targets
                    sc, bi = module.scale_bias(u[ix])
                    cz = sc[:, None] * torch.einsum("bd,bkd->bk", u[ix], v[near[ix]]) + bi[:, None]
                    loss = loss + torch.nn.functional.binary_cross_entropy_with_logits(cz, near_lab[ix])
                _step(opt, loss, bar)
    module.eval()
    clf = PairClassifier(conf, module)
    # dev: each dev source against the targets of its block of B (as in training)
    du, dv = encoder.encode(dev[0], src_lang), encoder.encode(dev[1], tgt_lang)
    scores, labels = [], []
    with torch.inference_mode():
        for a in range(0, len(du), B):
            z = torch.sigmoid(module.logits_matrix(torch.from_numpy(du[a: a + B]), torch.from_numpy(dv[a: a + B])))
            scores.append(z.numpy().ravel())
            labels.append(np.eye(len(z), dtype=bool).ravel())
    s, y = np.concatenate(scores), np.concatenate(labels)
    clf.config.update(_dev_figures(s, y))
    pred = s >= 0.5
    tp = float((pred & y).sum())
    clf.config["dev_f1_at_0.5"] = round(2 * tp / max(pred.sum() + y.sum(), 1), 4)

    clf.config["dev_ece"] = round(expected_calibration_error(s, y), 5)
    return clf


# ---------------------------------------------------------------- classifier on embeddings (002)
def _train_fc(cfg, src, tgt, dev, encoder, src_lang, tgt_lang, rng, progress):
    import torch  # loaded on use: PyTorch is heavy or optional

    u = encoder.encode(src, src_lang)
    v = encoder.encode(tgt, tgt_lang)
    dim = int(u.shape[1])
    conf = {"kind": "fc", "dim": dim, "hidden": cfg.hidden or dim, "dropout": cfg.dropout,
            "encoder": encoder.model_id}
    module = build_module(conf)
    opt = torch.optim.Adam(module.parameters(), lr=cfg.lr)
    B = min(cfg.batch_pairs, len(src))
    steps = cfg.epochs * max(1, len(src) // B)

    def negatives(s, t, g):
        ns, nt, kinds = make_negatives(s, t, g)
        return encoder.encode(ns, src_lang), encoder.encode(nt, tgt_lang), kinds

    with _bar(steps, "fc", progress) as bar:
        for _ in range(cfg.epochs):
            nu, nv, _k = negatives(src, tgt, rng)  # fresh negatives each epoch
            module.train()
            for idx in _batches(len(src), B, rng):
                x1 = torch.from_numpy(np.concatenate([u[idx], nu[idx]]))
                x2 = torch.from_numpy(np.concatenate([v[idx], nv[idx]]))
                y = torch.cat([torch.ones(len(idx), dtype=torch.long), torch.zeros(len(idx), dtype=torch.long)])
                loss = torch.nn.functional.cross_entropy(module.logits(x1, x2), y)
                _step(opt, loss, bar)
    module.eval()
    clf = PairClassifier(conf, module)
    du, dv = encoder.encode(dev[0], src_lang), encoder.encode(dev[1], tgt_lang)
    nu, nv, kinds = negatives(dev[0], dev[1], np.random.default_rng(cfg.seed + 1))
    eu, ev = np.concatenate([du, nu]), np.concatenate([dv, nv])
    y = np.r_[np.ones(len(du), bool), np.zeros(len(nu), bool)]
    s = clf.score_embeddings(eu, ev)
    clf.config.update(_dev_figures(s, y))
    p = clf.score_embeddings(eu, ev, output="probability")
    clf.config["dev_accuracy"] = round(float(((p >= 0.5) == y).mean()), 4)
    return clf


# ---------------------------------------------------------------- siamese BiGRU (003)
def _bigru_tokenizer(cfg: ClassifierTrainConfig):
    """The tokenizer, its config entries and the initial rows of the embedding table (or None):
    hashed words (003's words, no vocabulary), or the subword pieces of ``cfg.init_model`` (a DAN
    model with ``features.subwords``), each row started from that model's embedding of the piece."""
    if cfg.tokens == "hashed":
        conf = {"tokens": "hashed", "buckets": cfg.buckets, "emb": cfg.emb, "token_version": TOKENS_VERSION}
        return TokenHasher(cfg.buckets, cfg.max_tokens, TOKENS_VERSION), conf, None
    if cfg.tokens != "pieces":
        raise ConfigError(f"tokens: 'hashed' or 'pieces', got {cfg.tokens!r}")
    enc = load_encoder(cfg.init_model or "default")
    pieces = getattr(getattr(enc, "featurizer", None), "pieces", None)
    if pieces is None:
        raise ConfigError(f"--tokens pieces: model {cfg.init_model or 'default'} has no subword pieces to take "
                          "(a DAN model trained with features.subwords)")
    feats, model, vocab = enc.config.features, pieces.model, int(pieces.vocab_size)
    table = enc.table()
    rows = np.zeros((vocab + 1, table.shape[1]), np.float32)
    for a in range(0, vocab, 65536):
        rows[1 + a: 1 + min(vocab, a + 65536)] = table.lookup(np.arange(feats.buckets + a,
                                                                         feats.buckets + min(vocab, a + 65536)))
    rms = float(np.sqrt((rows[1:] ** 2).mean())) or 1.0
    rows /= rms  # unit scale per value, as nn.Embedding's own N(0, 1) start
    conf = {"tokens": "pieces", "buckets": vocab + 1, "emb": int(table.shape[1]), "lowercase": feats.lowercase,
            "marks_in_words": bool(feats.marks_in_words), "init_model": enc.model_id}
    for k in ("join_zero_width", "fold_variants"):  # absent when off: a classifier's config reads as before
        if getattr(feats, k):
            conf[k] = True
    return PieceTokenizer(model, vocab, cfg.max_tokens, feats.text_norm), conf, rows


class _Tokenized:
    """Texts cut once into one flat id array (``ids[off[i]:off[i + 1]]`` is text ``i``)."""

    def __init__(self, tok, texts: list[str]):
        from bimine.text.subwords import flatten

        self.ids, self.off = flatten(tok.many(texts))

    def batch(self, idx: np.ndarray):
        """Padded ids and lengths of texts ``idx`` (:func:`~bimine.scoring.classifiers.pad_batch`)."""
        return pad_batch([self.ids[self.off[i]: self.off[i + 1]] for i in idx])


def cartesian_f1(clf: PairClassifier, src: list[str], tgt: list[str]) -> dict:
    """Every source of the aligned ``src``/``tgt`` scored against every target (003 §5.1's
    Cartesian product, ``n**2`` candidates, ``n`` of them parallel): precision, recall and F1 at
    the threshold with the best F1, and the share of sources whose own target scores highest."""
    from bimine.scoring.logistic import best_f1_threshold

    n = len(src)
    m = clf.score_matrix(src, tgt)
    t, p, r, f = best_f1_threshold(m.ravel(), np.eye(n, dtype=bool).ravel())
    return {"threshold": t, "P": round(p, 4), "R": round(r, 4), "F1": round(f, 4),
            "top1": round(float((m.argmax(1) == np.arange(n)).mean()), 4)}


def _bigru_digest(cfg: ClassifierTrainConfig, src, tgt, dev) -> str:
    """What a BiGRU checkpoint may be resumed with: the pairs, the dev pairs and every setting
    but the epochs and the threads (which may change on resume)."""
    import hashlib

    from bimine.store.store import json_digest

    h = hashlib.sha256()
    for part in (src, tgt, dev[0], dev[1]):
        for x in part:
            h.update(x.encode("utf-8", "surrogatepass") + b"\n")
        h.update(b"\0")
    settings = {k: v for k, v in cfg.__dict__.items() if k not in ("epochs", "threads", "checkpoint", "resume",
                                                                     "checkpoint_seconds")}
    if cfg.tokens == "hashed":  # its rows are of the tokens' version
        settings["token_version"] = TOKENS_VERSION
    return json_digest({"pairs": h.hexdigest(), "settings": settings})


def _bigru_module(cfg):
    """The BiGRU classifier's tokenizer, config and untrained module (its table started from the
    tokenizer's rows where it has some)."""
    import torch

    tok, tconf, rows = _bigru_tokenizer(cfg)
    conf = {"kind": "bigru", **tconf, "hidden": cfg.hidden, "fc": cfg.fc, "dropout": cfg.dropout,
            "max_tokens": cfg.max_tokens, "negatives": cfg.negatives, "hard_negatives": cfg.hard_negatives}
    module = build_module(conf)
    if rows is not None:
        with torch.no_grad():
            module.emb.weight.copy_(torch.from_numpy(rows))
    return tok, conf, module


def _train_bigru(cfg, src, tgt, dev, encoder, src_lang, tgt_lang, rng, progress):
    import torch  # loaded on use: PyTorch is heavy or optional

    from bimine.training.checkpoint import load_checkpoint, save_checkpoint

    if cfg.batch_pairs <= 1:
        raise ConfigError("bigru needs batches of at least 2 pairs (negatives come from the batch)")
    tok, conf, module = _bigru_module(cfg)
    pieces = tok.model if isinstance(tok, PieceTokenizer) else None
    t_tok = time.time()
    xs, xt = _Tokenized(tok, src), _Tokenized(tok, tgt)
    log.info("bigru: %s pairs cut into %s + %s tokens in %.0f s", f"{len(src):,}", f"{len(xs.ids):,}",
             f"{len(xt.ids):,}", time.time() - t_tok)
    # the table is large (rows x emb) and a batch touches few rows: sparse gradients with
    # SparseAdam for it, Adam for the rest (dense Adam over the table costs ~10x)
    dense = [p for n, p in module.named_parameters() if not n.startswith("emb.")]
    opts = [torch.optim.SparseAdam(list(module.emb.parameters()), lr=cfg.lr), torch.optim.Adam(dense, lr=cfg.lr)]
    B = min(cfg.batch_pairs, len(src))
    k = min(cfg.negatives, B - 1)
    hard = min(cfg.hard_negatives, k)
    per_epoch = len(src) // B if len(src) >= B else 1
    steps = cfg.epochs * per_epoch
    curve_n = min(cfg.curve_pairs, len(dev[0]))
    first_epoch, first_batch, curve, spent = 0, 0, [], 0.0
    digest = _bigru_digest(cfg, src, tgt, dev) if cfg.checkpoint else ""
    if cfg.checkpoint and cfg.resume:
        state, _ = load_checkpoint(cfg.checkpoint, module, opts, digest)
        first_epoch, first_batch, curve, spent = state["epoch"], state["batch"], state["curve"], state["seconds"]
        log.info("bigru: resumed at epoch %d, batch %d of %d (%s)", first_epoch + 1, first_batch, per_epoch,
                 cfg.checkpoint)
    t0 = time.time() - spent
    last_save = time.time()

    def save(epoch: int, batch: int) -> None:
        save_checkpoint(cfg.checkpoint, module, opts, None,
                        {"fingerprint": digest, "epoch": epoch, "batch": batch, "curve": curve,
                         "seconds": time.time() - t0})

    clf = PairClassifier(conf, module, pieces)
    # a resumed run's bar starts at the steps done, so its rate and ETA are this run's own
    with _bar(steps, "bigru", progress, initial=first_epoch * per_epoch + first_batch) as pbar:
        for ep in range(first_epoch, cfg.epochs):
            # each epoch's order and negatives come from its own generator, so a run resumed at
            # any batch draws what an unstopped run draws
            g = np.random.default_rng([cfg.seed, 3, ep])
            module.train()
            for b, idx in enumerate(_batches(len(src), B, g)):
                neg = _random_others(len(idx), k, g)
                if ep == first_epoch and b < first_batch:
                    continue
                loss = _bigru_step(module, opts, xs.batch(idx), xt.batch(idx), neg, hard, cfg.clip)
                pbar.update(1)
                pbar.set_postfix(loss=f"{loss.item():.4f}")
                if cfg.checkpoint and time.time() - last_save >= cfg.checkpoint_seconds:
                    save(ep, b + 1)
                    last_save = time.time()
            if curve_n >= 2:  # the learning curve: dev figures after each epoch
                module.eval()
                curve.append(_curve_point(clf, dev, curve_n, ep + 1, (ep + 1) * per_epoch * B, time.time() - t0))
                line = (f"bigru: epoch {ep + 1}: dev Cartesian F1 {curve[-1]['cartesian_F1']:.4f} (P "
                        f"{curve[-1]['cartesian_P']:.4f}, R {curve[-1]['cartesian_R']:.4f}, top-1 "
                        f"{curve[-1]['cartesian_top1']:.4f}) on {curve_n} x {curve_n} candidates")
                if bars_wanted(progress):
                    pbar.write(line, file=sys.stderr)  # above the bar, not into its line
                else:
                    log.info(line)
            if cfg.checkpoint:
                save(ep + 1, 0)
                last_save = time.time()
    module.eval()
    clf.config.update(_bigru_dev_figures(clf, dev, k, cfg.seed))
    if curve:
        clf.config["curve"] = curve
        clf.config.update({f"dev_cartesian_{a}": curve[-1][f"cartesian_{a}"] for a in ("P", "R", "F1", "top1")})
        clf.config["dev_cartesian_pairs"] = curve_n
    clf.config["train_seconds_total"] = round(time.time() - t0, 1)
    return clf


def _bigru_step(module, opts, src_batch, tgt_batch, neg: np.ndarray, hard: int, clip: float):
    """One training step on a batch: each pair against ``neg``'s others of the batch (the first
    ``hard`` of them replaced by the batch's targets nearest to the source), binary cross-entropy."""
    import torch

    hs, ht = module.encode(*src_batch), module.encode(*tgt_batch)
    n, k = neg.shape
    if hard:  # the batch's targets nearest to each source (cosine of the current states)
        with torch.no_grad():
            sim = torch.nn.functional.normalize(hs, dim=1) @ torch.nn.functional.normalize(ht, dim=1).T
            sim.fill_diagonal_(-2.0)
            neg[:, :hard] = sim.topk(hard, dim=1).indices.numpy()
    negt = torch.from_numpy(neg.ravel())
    rows = torch.arange(n).repeat_interleave(k)
    z = torch.cat([module.match(hs, ht), module.match(hs[rows], ht[negt])])
    y = torch.cat([torch.ones(n), torch.zeros(len(rows))])
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    for o in opts:
        o.zero_grad()
    loss.backward()
    clip_grad_norm(module.parameters(), clip)
    for o in opts:
        o.step()
    return loss


def _curve_point(clf: PairClassifier, dev, n: int, epoch: int, pairs_seen: int, seconds: float) -> dict:
    """The learning curve's point after an epoch: Cartesian P, R, F1 and top-1 on ``n`` x ``n`` dev pairs."""
    return {"epoch": epoch, "pairs_seen": pairs_seen, "seconds": round(seconds, 1),
            **{f"cartesian_{a}": v for a, v in cartesian_f1(clf, dev[0][:n], dev[1][:n]).items() if a != "threshold"}}


def _bigru_dev_figures(clf: PairClassifier, dev, k: int, seed: int) -> dict:
    """The dev figures of the trained classifier: each dev pair against ``k`` random others."""
    hs, ht = clf.encode_texts(dev[0]), clf.encode_texts(dev[1])
    neg = _random_others(len(hs), k, np.random.default_rng(seed + 1)).ravel()
    rows = np.repeat(np.arange(len(hs)), k)
    sc = np.r_[clf.match_vectors(hs, ht), clf.match_vectors(hs[rows], ht[neg])]
    return _dev_figures(sc, np.r_[np.ones(len(hs), bool), np.zeros(len(rows), bool)])


def check_learnt(clf: PairClassifier, floor: float = MIN_DEV_AUC) -> None:
    """Refuse (:class:`ConfigError`) a classifier whose dev ROC-AUC is below ``floor``: it tells
    translations from its negatives no better than chance, and would score every pair alike."""
    auc = float(clf.config["dev_roc_auc"])
    if not auc >= floor:
        raise ConfigError(
            f"the {clf.config['kind']} classifier learnt nothing: dev ROC-AUC {auc:.4f} (chance 0.5, floor "
            f"{floor:g}); are the two sides translations of each other line by line (not shuffled or out of "
            "step)? Too few pairs or epochs can also cause this; --min-dev-auc 0 writes it anyway")


def describe(clf: PairClassifier) -> str:
    c = clf.config
    langs = f"{c['src_lang']}-{c['tgt_lang']}" if c.get("src_lang") else "any languages"
    parts = [f"{c['kind']} classifier ({langs}), {c['train_pairs']:,} training pairs, {c['epochs']} epochs "
             f"in {c['train_seconds']:.0f} s",
             f"dev ({c['dev_pairs']:,} pairs with negatives): ROC-AUC {c['dev_roc_auc']:.4f}, best F1 "
             f"{c['dev_f1']:.4f} (P {c['dev_precision']:.4f}, R {c['dev_recall']:.4f}) at threshold "
             f"{c['threshold']:.4g}"]
    if "dev_cartesian_F1" in c:
        parts.append(f"dev Cartesian product ({c['dev_cartesian_pairs']:,} x {c['dev_cartesian_pairs']:,} candidates): "
                     f"best F1 {c['dev_cartesian_F1']:.4f} (P {c['dev_cartesian_P']:.4f}, R {c['dev_cartesian_R']:.4f}), "
                     f"own target first for {c['dev_cartesian_top1']:.1%} of sources")
    if "dev_f1_at_0.5" in c:
        parts.append(f"F1 at 0.5 (000's default) {c['dev_f1_at_0.5']:.4f}")
    if "dev_ece" in c:
        parts.append(f"expected calibration error {c['dev_ece']:.4f}")
    if "dev_accuracy" in c and not math.isnan(c["dev_accuracy"]):
        parts.append(f"softmax accuracy {c['dev_accuracy']:.4f}")
    return "; ".join(parts)


# ---------------------------------------------------------------- the commands' jobs
MAX_DEV_OVERLAP = 0.5  # more dev pairs than this also in training: refused; more than WARN_DEV_OVERLAP: a warning
WARN_DEV_OVERLAP = 0.1


def usable_pairs(blocks, limit: int | None = None) -> tuple[list[str], list[str], int]:
    """Sources, targets and the number of pairs skipped for an empty side, from pair blocks
    (at most ``limit`` pairs)."""
    a, b, skipped = [], [], 0
    for block in blocks:
        for x, y in zip(block.src, block.tgt):
            if not x.strip() or not y.strip():
                skipped += 1
                continue
            a.append(x)
            b.append(y)
        if limit is not None and len(a) >= limit:
            break
    return (a[:limit], b[:limit], skipped) if limit is not None else (a, b, skipped)


def same_dev_files(input, src, tgt, dev_src, dev_tgt) -> bool:
    """Whether ``--dev-src``/``--dev-tgt`` are the training files themselves (also through a link)."""
    train = [p for p in (input, src, tgt) if p]
    return any(same_file(d, p) for d in (dev_src, dev_tgt) for p in train)


def check_dev_apart(src: list[str], tgt: list[str], dev_src: list[str], dev_tgt: list[str], *, same: bool,
                    warn: Callable[[str], None] | None = None) -> None:
    """Refuse dev pairs that are mostly training pairs (more than :data:`MAX_DEV_OVERLAP` of
    them, compared by the hash of the pair's two stripped sides), and warn above
    :data:`WARN_DEV_OVERLAP`: the dev ROC-AUC, F1 and the decision threshold chosen on them
    would measure what the classifier memorised (train-classifier with the training files as
    dev reported ROC-AUC 0.9998). ``same``: the dev files are the training files."""
    seen = {hash((x.strip(), y.strip())) for x, y in zip(src, tgt)}
    shared = sum(hash((x.strip(), y.strip())) in seen for x, y in zip(dev_src, dev_tgt))
    n = len(dev_src)
    if not n or shared <= WARN_DEV_OVERLAP * n:
        return
    what = (f"{shared:,} of the {n:,} dev pairs ({100 * shared / n:.0f}%) are also training pairs"
            + (" (--dev-src/--dev-tgt are the training files)" if same else ""))
    if shared > MAX_DEV_OVERLAP * n:
        raise ConfigError(f"--dev-src/--dev-tgt: {what}, so the dev ROC-AUC and the threshold chosen on them would "
                          "measure memory, not the classifier; give pairs held out from training, or drop "
                          "--dev-src/--dev-tgt to hold out the last --dev-size pairs")
    (warn or log.warning)(f"warning: --dev-src/--dev-tgt: {what}: the dev figures and the threshold will be "
                          "optimistic; give pairs held out from training")


@dataclass
class ClassifierJob:
    """``bimine train-classifier``: a ``kind`` classifier trained on the clean pairs of ``input``
    (a TSV; ``columns``, 1-based) or ``src``/``tgt``, written to ``output``. Dev pairs: ``dev_src``
    and ``dev_tgt``, else the last ``dev_size``; ``any_languages`` records no language pair.
    The rest are :class:`ClassifierTrainConfig`'s, and ``min_dev_auc`` the floor of
    :func:`check_learnt`."""

    kind: str
    output: str
    src_lang: str
    tgt_lang: str
    input: str | None = None
    src: str | None = None
    tgt: str | None = None
    columns: tuple[int, int] = field(default=(1, 2), metadata=bounds(min=1))
    any_languages: bool = False
    model: str = "default"
    dev_src: str | None = None
    dev_tgt: str | None = None
    dev_size: int = field(default=500, metadata=bounds(min=2))
    max_pairs: int | None = field(default=None, metadata=bounds(min=2))
    epochs: int | None = field(default=None, metadata=bounds(min=1))
    batch_pairs: int | None = field(default=None, metadata=bounds(min=2))
    lr: float | None = field(default=None, metadata=bounds(min=0, min_open=True))
    negatives: int = field(default=7, metadata=bounds(min=1))
    hidden: int | None = field(default=None, metadata=bounds(min=1))
    seed: int = field(default=0, metadata=bounds(min=0))
    threads: int = field(default=1, metadata=bounds(min=1))
    min_dev_auc: float = field(default=MIN_DEV_AUC, metadata=bounds(min=0, max=1))
    encoding_errors: str = "strict"
    progress: bool = True
    emb: int | None = field(default=None, metadata=bounds(min=1))  # bigru with hashed tokens: the embedding size (128)
    tokens: str = "hashed"
    init_model: str | None = None
    hard_negatives: int = field(default=0, metadata=bounds(min=0))
    curve_pairs: int = field(default=1000, metadata=bounds(min=0))
    resume: bool = False
    checkpoint_minutes: float = field(default=10.0, metadata=bounds(min=0, min_open=True))

    def __post_init__(self) -> None:
        check_fields(self)
        if self.kind not in KINDS:
            raise ConfigError(f"kind: one of {', '.join(KINDS)}, got {self.kind!r}")
        self.columns = checked_pair_input(self.input, self.src, self.tgt, self.columns)
        if self.kind != "bigru" and (self.resume or self.tokens != "hashed" or self.hard_negatives):
            raise OptionError("--resume, --tokens and --hard-negatives are options of the bigru classifier")
        if self.tokens == "pieces" and self.emb is not None:
            raise OptionError("--emb: with --tokens pieces the embedding size is the model's own")
        if self.hard_negatives > self.negatives:
            raise OptionError(f"--hard-negatives {self.hard_negatives}: at most --negatives ({self.negatives}), "
                              "of which they are a part")


@reading_once
def run_train_classifier(job: ClassifierJob, *, warn: Callable[[str], None] | None = None) -> str:
    """Train, check and write the classifier of ``job``; returns the line that describes it."""
    from bimine.training.checkpoint import check_start, checkpoint_path, discard

    if (job.dev_src is None) != (job.dev_tgt is None):
        raise OptionError("give both --dev-src and --dev-tgt, or neither")
    check_output_file(job.output, inputs=[p for p in (job.input, job.src, job.tgt, job.dev_src, job.dev_tgt) if p])
    ckpt = checkpoint_path(job.output) if job.kind == "bigru" else None
    if ckpt:
        check_start(ckpt, job.resume, "train-classifier bigru")

    def read(inp, s, t, limit=None):
        return usable_pairs(read_pair_blocks(inp, src=s, tgt=t, columns=job.columns,
                                             errors=job.encoding_errors), limit)

    s, t, skipped = read(job.input, job.src, job.tgt, job.max_pairs)
    dev = None
    if job.dev_src is not None:
        ds, dt, dskipped = read(None, job.dev_src, job.dev_tgt)
        dev = (ds, dt)
        skipped += dskipped
    if len(s) < 2:
        raise ConfigError(f"{len(s)} usable pair(s): too few to train on")
    if dev is not None:
        check_dev_apart(s, t, *dev, same=same_dev_files(job.input, job.src, job.tgt, job.dev_src, job.dev_tgt),
                        warn=warn)
    encoder = load_encoder(job.model) if job.kind in ("confidence", "fc") else None
    cfg = ClassifierTrainConfig(job.kind, epochs=job.epochs, batch_pairs=job.batch_pairs, lr=job.lr,
                                negatives=job.negatives, hidden=job.hidden, seed=job.seed, threads=job.threads,
                                emb=job.emb or 128, tokens=job.tokens, init_model=job.init_model,
                                hard_negatives=job.hard_negatives, curve_pairs=job.curve_pairs, checkpoint=ckpt,
                                checkpoint_seconds=60 * job.checkpoint_minutes, resume=job.resume)
    clf = train_classifier(cfg, s, t, src_lang=None if job.any_languages else job.src_lang,
                           tgt_lang=None if job.any_languages else job.tgt_lang, encoder=encoder, dev=dev,
                           dev_size=job.dev_size, progress=job.progress)
    out = _finish(clf, skipped, job.min_dev_auc, job.output)
    discard(ckpt)
    return out


def _finish(clf: PairClassifier, skipped: int, min_dev_auc: float, output: str) -> str:
    clf.config["skipped_empty"] = skipped
    check_learnt(clf, min_dev_auc)
    clf.save(output)
    note = f"; skipped {skipped:,} pair(s) with an empty side" if skipped else ""
    return f"{describe(clf)}{note}; wrote {output}"


@dataclass
class CalibrateJob:
    """``bimine calibrate``: the calibrated confidence head of ``model`` trained on the pairs of
    ``inputs`` (TSV files, one language pair each, both directions unless ``one_direction``),
    ``dev_size`` of them held out; written to ``output``, by default the model folder's
    ``calibration.safetensors``."""

    inputs: list[str]
    model: str = "default"
    output: str | None = None
    columns: tuple[int, int] = field(default=(1, 2), metadata=bounds(min=1))
    dev_size: int = field(default=1000, metadata=bounds(min=2))
    epochs: int = field(default=5, metadata=bounds(min=1))
    batch_pairs: int = field(default=128, metadata=bounds(min=2))
    retrieved: int = field(default=4, metadata=bounds(min=0))
    one_direction: bool = False
    seed: int = field(default=0, metadata=bounds(min=0))
    threads: int = field(default=1, metadata=bounds(min=1))
    min_dev_auc: float = field(default=MIN_DEV_AUC, metadata=bounds(min=0, max=1))
    encoding_errors: str = "strict"
    progress: bool = True

    def __post_init__(self) -> None:
        check_fields(self)
        if not self.inputs:
            raise ConfigError("inputs: at least one TSV of translation pairs")
        self.columns = two_columns(self.columns)


@reading_once
def run_calibrate(job: CalibrateJob) -> str:
    """Train, check and write the confidence head of ``job``; returns the line that describes it."""
    encoder = load_encoder(job.model)
    if uses_language(encoder):
        raise ConfigError(f"model {job.model}'s features depend on the language; calibrate it per language pair with "
                          "'bimine train-classifier confidence --src-lang L --tgt-lang L'")
    output = job.output
    if output is None:
        folder = model_folder(encoder)
        if folder is None:
            raise OptionError(f"model {job.model} has no folder to store the head in: give -o FILE")
        output = str(folder / CALIBRATION_FILE)
    check_output_file(output, inputs=job.inputs)
    groups, skipped = _calibration_groups(job)
    total = sum(len(a) for a, _ in groups)
    if total < job.dev_size + 2 * job.batch_pairs:
        raise ConfigError(f"{total:,} pairs are too few to hold out {job.dev_size:,} and train on the rest")
    rng = np.random.default_rng(job.seed)
    src, tgt, gid, dsrc, dtgt = [], [], [], [], []
    for g, (a, b) in enumerate(groups):
        order = rng.permutation(len(a))
        n_dev = max(1, round(len(a) * job.dev_size / total))
        for i in order[n_dev:]:
            src.append(a[i])
            tgt.append(b[i])
            gid.append(g)
        dsrc += [a[i] for i in order[:n_dev]]
        dtgt += [b[i] for i in order[:n_dev]]
    cfg = ClassifierTrainConfig("confidence", epochs=job.epochs, batch_pairs=job.batch_pairs, seed=job.seed,
                                threads=job.threads, retrieved=job.retrieved)
    clf = train_classifier(cfg, src, tgt, src_lang=None, tgt_lang=None, encoder=encoder, dev=(dsrc, dtgt),
                           progress=job.progress, groups=np.array(gid))
    clf.config["inputs"] = [os.path.basename(p) for p in job.inputs]
    clf.config["both_directions"] = not job.one_direction
    return _finish(clf, skipped, job.min_dev_auc, output)


def _calibration_groups(job: CalibrateJob) -> tuple[list[tuple[list[str], list[str]]], int]:
    """The usable pairs of each input (and each reversed, for both directions), and how many
    pairs with an empty side were skipped."""
    groups: list[tuple[list[str], list[str]]] = []
    skipped = 0
    for path in job.inputs:
        a, b, n_skipped = usable_pairs(read_pair_blocks(path, columns=job.columns, errors=job.encoding_errors))
        skipped += n_skipped
        if len(a) < 2:
            raise ConfigError(f"{path}: {len(a)} usable pair(s); need at least 2")
        groups.append((a, b))
        if not job.one_direction:
            groups.append((b, a))
    return groups, skipped
