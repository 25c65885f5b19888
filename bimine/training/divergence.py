"""Training of the divergence models (paper 004; ``bimine train-divergence``): one config object,
:class:`DivergenceJob`, and :func:`run_train_divergence`, which runs the steps of docs/divergence.md:

1. the word aligner (IBM Models 1-2 both ways, :func:`bimine.training.aligner.train_aligner`), loaded
   when ``aligner`` names an existing file;
2. synthetic supervision without labels (:mod:`bimine.training.divergence_data`): positives drawn
   from the corpus, negatives from its Cartesian product that pass the length and
   dictionary-coverage filters, and the finer-grained hard ones;
3. the model: the VDPWI similarity model (:func:`train_vdpwi`) or Munteanu & Marcu's linear
   classifier (:func:`train_mm`);
4. its calibration on held-out pairs of the same corpus (:func:`calibrate_on_heldout`, issue 55):
   ``bimine train-divergence`` draws up to ``calibration_pairs`` pairs its training did not use
   (none sharing a side with a training pair), makes as many divergent pairs from them, and stores
   the Platt map fitted on both, the two classes weighted equally (:func:`fit_platt`). The shipped
   model is calibrated the same way on held-out dev sets instead (``python -m
   benchmarks.divergence_calibration --write``).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bimine.config import bounds, check_fields
from bimine.devices import check_device
from bimine.encoders import load_encoder
from bimine.errors import ConfigError
from bimine.outputs import check_output_file
from bimine.progress import bar
from bimine.scoring.divergence import DivergenceModel, PlattCalibration, logit_clipped, predict_pairs
from bimine.scoring.divergence_features import LinearClassifier, feature_names, pair_features
from bimine.scoring.ibm import WordAligner
from bimine.scoring.logistic import fit_logistic_1d
from bimine.scoring.vdpwi import (
    VDPWIConfig,
    WordVectors,
    pad_batch,
    sentence_words,
    torch_device,
    vdpwi_network,
)
from bimine.store.store import json_digest
from bimine.streams import reading_once
from bimine.text.io import read_parallel
from bimine.text.tokens import TOKENS_VERSION
from bimine.training.aligner import train_aligner
from bimine.training.checkpoint import (
    check_start,
    checkpoint_path,
    discard,
    load_checkpoint,
    save_checkpoint,
)
from bimine.training.divergence_data import (
    calibration_examples,
    corpus_examples,
    draw_positives,
    heldout_pairs,
)

log = logging.getLogger(__name__)


@dataclass
class DivergenceJob:
    """``bimine train-divergence``: a ``kind`` model (``vdpwi`` or ``mm``) trained on the parallel
    corpus of ``srcs``/``tgts`` (files paired in order), written to ``output``. ``model``: the
    encoder whose word vectors VDPWI reads; ``aligner``: a word-alignment file, loaded when it
    exists, else trained on the first ``align_pairs`` pairs and saved there; ``positives``,
    ``min_words``, ``ratio``, ``hard``: the synthetic examples; ``threshold``: the decision
    threshold stored; ``calibration_pairs``: held-out pairs to calibrate on (0: none);
    ``epochs``, ``device``: VDPWI's, which writes ``OUTPUT.checkpoint`` after every epoch and
    with ``resume`` goes on from it (removed once the model is written); ``progress``: a bar per
    epoch; ``prune``: mm's."""

    srcs: list[str]
    tgts: list[str]
    src_lang: str
    tgt_lang: str
    output: str
    kind: str = "vdpwi"
    model: str = "default"
    aligner: str | None = None
    align_pairs: int = field(default=200_000, metadata=bounds(min=1))
    positives: int = field(default=5000, metadata=bounds(min=10))
    min_words: int = field(default=1, metadata=bounds(min=1))
    ratio: int = field(default=5, metadata=bounds(min=1))
    hard: float = field(default=0.5, metadata=bounds(min=0, max=1))
    threshold: float = field(default=0.5, metadata=bounds(min=0, max=1))
    calibration_pairs: int = field(default=1000, metadata=bounds(min=0))
    epochs: int = field(default=10, metadata=bounds(min=1))
    prune: float = field(default=1e-4, metadata=bounds(min=0, max=1))
    seed: int = field(default=0, metadata=bounds(min=0))
    device: str | None = None
    resume: bool = False
    progress: bool = True

    def __post_init__(self) -> None:
        check_fields(self)
        if self.kind not in ("vdpwi", "mm"):
            raise ConfigError(f"kind: vdpwi or mm, got {self.kind!r}")
        if self.resume and self.kind != "vdpwi":
            raise ConfigError("--resume: only the vdpwi model trains in epochs (mm trains in one step)")


@reading_once
def run_train_divergence(job: DivergenceJob, *, say: Callable[[str], None] | None = None,
                         warn: Callable[[str], None] | None = None) -> DivergenceModel:
    """Train, calibrate and write the divergence model of ``job`` (the module docstring's
    steps); progress lines go to ``say``, warnings to ``warn`` (default: the log)."""
    say, warn = say or log.info, warn or log.warning
    if len(job.srcs) != len(job.tgts):
        raise ConfigError(f"{len(job.srcs)} --src files but {len(job.tgts)} --tgt files: give them in pairs")
    check_device(job.device)  # a device this PyTorch lacks fails now, not after the aligner's training
    check_output_file(job.output, inputs=[*job.srcs, *job.tgts])
    ckpt = checkpoint_path(job.output) if job.kind == "vdpwi" else None
    if ckpt:
        check_start(ckpt, job.resume, "train-divergence")
    src, tgt = [], []
    for a, b in zip(job.srcs, job.tgts):
        for x, y in read_parallel(a, b):  # refuses sides of different lengths
            src.append(x)
            tgt.append(y)
    # too few pairs: fail before the aligner
    draw_positives(src, tgt, positives=job.positives, min_words=job.min_words, seed=job.seed)
    al = _word_aligner(job, src, tgt, say)
    ex, counts = corpus_examples(src, tgt, al, positives=job.positives, min_words=job.min_words, ratio=job.ratio,
                                 seed=job.seed, hard=job.hard)
    say(f"synthetic examples: {counts['positives']:,} positives, {counts['negatives']:,} negatives "
        f"({counts['candidates_passing_filters']:,} product pairs passed the filters)")
    enc = None
    if job.kind == "mm":
        m = train_mm(ex, al, src_lang=job.src_lang, tgt_lang=job.tgt_lang, prune=job.prune)
    else:
        try:
            import torch  # noqa: F401  (loaded on use: PyTorch is heavy or optional)
        except ImportError:
            raise ConfigError("the vdpwi model needs PyTorch: pip install torch==2.13.0 'bimine[train]'") from None
        enc = load_encoder(job.model)
        m = train_vdpwi(ex, enc, src_lang=job.src_lang, tgt_lang=job.tgt_lang,
                        training=VDPWITraining(epochs=job.epochs, seed=job.seed, device=job.device, checkpoint=ckpt,
                                               resume=job.resume, progress=job.progress),
                        log=lambda h: say(f"  resumed after epoch {h['resumed']} ({ckpt})" if "resumed" in h else
                                          f"  epoch {h['epoch']}: loss {h['loss']:.4f}, dev Pearson "
                                          f"{h['dev_pearson']:.4f} ({h['minutes']:.1f} min)"))
    if job.calibration_pairs:
        _calibrate(job, m, src, tgt, al, enc, say, warn)
    m.meta["threshold"] = job.threshold
    m.meta.setdefault("training", {}).update({"synthetic": counts, "positives_min_words": job.min_words,
                                              "corpus": [os.path.basename(p) for p in job.srcs], "hard": job.hard})
    m.save(job.output)
    discard(ckpt)
    return m


def _word_aligner(job: DivergenceJob, src: list[str], tgt: list[str], say: Callable[[str], None]) -> WordAligner:
    if job.aligner and os.path.exists(job.aligner):
        say(f"word aligner: {job.aligner}")
        return WordAligner.load(job.aligner)
    say(f"training the word aligner (IBM 1+2, both directions) on {min(job.align_pairs, len(src)):,} pairs")
    al = train_aligner(src[:job.align_pairs], tgt[:job.align_pairs], src_lang=job.src_lang, tgt_lang=job.tgt_lang,
                       progress=lambda d, i, n, ll: say(f"  {d} iteration {i}/{n}: log-likelihood {ll:.3f} per word"))
    if job.aligner:
        al.save(job.aligner)
    return al


def _calibrate(job: DivergenceJob, m: DivergenceModel, src, tgt, al, enc, say, warn) -> None:
    c = calibrate_on_heldout(m, src, tgt, al, src_lang=job.src_lang, tgt_lang=job.tgt_lang, positives=job.positives,
                             min_words=job.min_words, seed=job.seed, n=job.calibration_pairs, encoder=enc)
    if not c["calibrated"]:
        warn(f"warning: {c['reason']}: the model is saved uncalibrated (its 'score' ranks but is no probability); "
             "lower --positives or give a larger corpus")
        return
    sign = "+" if c["b"] >= 0 else "-"
    say(f"calibrated on {c['counts']['positives']:,} held-out pairs and {c['counts']['negatives']:,} divergent "
        f"ones made from them: score = sigmoid({c['a']:.3f} * logit(raw) {sign} {abs(c['b']):.3f}); median "
        f"score of the held-out pairs {c['clean_median_raw']:.3f} -> {c['clean_median']:.3f}, of the divergent "
        f"ones {c['divergent_median_raw']:.3f} -> {c['divergent_median']:.3f}")


def fit_platt(raw, labels, weights=None, *, balance: bool = True, l2: float = 0.0, max_iter: int = 100,
              ) -> PlattCalibration:
    """Fit :class:`PlattCalibration` by weighted maximum likelihood (Newton's method on the two
    parameters): ``labels`` 1 = equivalent, 0 = divergent; ``balance`` weighs the two classes
    equally (the map's prior is then 1:1, whatever the counts); ``l2`` a ridge on ``a``. A map
    that would reverse the ranking (``a <= 0``: the scores do not separate the classes) is an
    error."""
    z = logit_clipped(raw)
    y = np.asarray(labels, np.float64).ravel()
    w = np.ones(len(y)) if weights is None else np.asarray(weights, np.float64).ravel()
    if not (len(z) == len(y) == len(w)):
        raise ValueError(f"{len(z)} scores, {len(y)} labels and {len(w)} weights")
    pos = y > 0.5
    if not pos.any() or pos.all():
        raise ConfigError("calibration needs equivalent and divergent pairs, found one class only")
    if balance:
        w = np.where(pos, w / w[pos].sum(), w / w[~pos].sum())
    a, b = fit_logistic_1d(z, y, w, l2=l2, max_iter=max_iter)
    if not a > 0:
        raise ConfigError(f"calibration: the model's scores do not rank the held-out equivalent pairs above the "
                          f"divergent ones (fitted slope {a:.3g}); the model is not usable on these pairs")
    return PlattCalibration(a, b)


MIN_PAIRS = 50  # fewer held-out pairs than this: the model is left uncalibrated


def calibrate_on_heldout(model: DivergenceModel, src: list[str], tgt: list[str], aligner: WordAligner, *,
                         src_lang: str, tgt_lang: str, positives: int, min_words: int, seed: int = 0, n: int = 1000,
                         encoder=None, min_pairs: int = MIN_PAIRS) -> dict:
    """Fit and store ``model``'s calibration on up to ``n`` pairs of the corpus ``src``/``tgt``
    that its training (``positives``, ``min_words``, ``seed``: the options it was trained with)
    did not use. The stored thresholds are left as they are (the caller sets them on the new
    scale). Returns what happened: ``{"pairs": int, "calibrated": bool, ...}``; with fewer than
    ``min_pairs`` such pairs, or scores that do not rank them, the model is left uncalibrated
    (``reason`` says why)."""
    used = draw_positives(src, tgt, positives=positives, min_words=min_words, seed=seed)
    idx = heldout_pairs(src, tgt, used, n=n, min_words=min_words, seed=seed)
    if len(idx) < max(min_pairs, 2):
        return {"pairs": len(idx), "calibrated": False,
                "reason": f"only {len(idx):,} pairs of the corpus are left out of training ({min_words}+ words a side, "
                f"no side shared with a positive; {min_pairs} needed)"}
    ex, counts = calibration_examples([src[i] for i in idx], [tgt[i] for i in idx], aligner, seed=seed)
    raw = model.raw_score([e.src for e in ex], [e.tgt for e in ex], src_lang=src_lang, tgt_lang=tgt_lang,
                          encoder=encoder)
    y = np.array([e.label for e in ex])
    try:
        cal = fit_platt(raw, y)
    except ConfigError as e:  # the model does not rank these pairs: keep it, uncalibrated, and say why
        return {"pairs": len(idx), "calibrated": False, "reason": str(e)}
    score = cal(raw)
    pos = y > 0.5
    model.set_calibration(cal, map_thresholds=False,
                          fitted_on=f"{counts['positives']:,} held-out pairs of the training corpus (no side shared "
                          f"with a training pair) and {counts['negatives']:,} divergent pairs made from them "
                          "(bimine.training.divergence_data.calibration_examples), classes weighted equally",
                          pairs={"clean": counts["positives"], **counts["by_kind"]},
                          command="bimine train-divergence")
    return {"pairs": len(idx), "calibrated": True, "a": cal.a, "b": cal.b, "counts": counts,
            "clean_median_raw": float(np.median(raw[pos])), "clean_median": float(np.median(score[pos])),
            "divergent_median_raw": float(np.median(raw[~pos])), "divergent_median": float(np.median(score[~pos]))}


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    x = np.asarray(x, np.float64) - np.mean(x)
    y = np.asarray(y, np.float64) - np.mean(y)
    d = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y / d) if d else 0.0


@dataclass(frozen=True)
class VDPWITraining:
    """The VDPWI model's training: ``epochs`` in batches of ``batch`` at learning rate ``lr``,
    ``dev_fraction`` of the examples held out to choose the epoch, ``seed``, PyTorch ``threads``
    (None: its default) and ``device`` (None: a CUDA GPU when there is one, else the CPU)."""

    epochs: int = 10
    batch: int = 32
    lr: float = 1e-3
    seed: int = 0
    dev_fraction: float = 0.1
    threads: int | None = None
    device: str | None = None
    checkpoint: str | None = None  #: written after every epoch (:mod:`bimine.training.checkpoint`)
    resume: bool = False  #: go on from ``checkpoint``
    progress: bool = False  #: a bar per epoch


def _examples_digest(examples, cfg: VDPWIConfig, t: VDPWITraining, encoder, src_lang: str, tgt_lang: str) -> str:
    """What a checkpoint may be resumed with: the examples, the network's sizes and the training
    settings (all but the epochs, the threads and the device, which may change on resume)."""
    h = hashlib.sha256()
    for e in examples:
        h.update(f"{e.src}\t{e.tgt}\t{e.label!r}\n".encode())
    return json_digest({"examples": h.hexdigest(), "config": cfg.to_dict(), "batch": t.batch, "lr": t.lr,
                        "seed": t.seed, "dev_fraction": t.dev_fraction, "languages": [src_lang, tgt_lang],
                        "encoder": getattr(encoder, "model_id", ""), "token_version": TOKENS_VERSION})


def train_vdpwi(examples, encoder, *, src_lang: str, tgt_lang: str, config: VDPWIConfig | None = None,
                training: VDPWITraining | None = None, log=None) -> DivergenceModel:
    """Train the semantic similarity model (``config``: its sizes) on synthetic ``examples``
    (:class:`bimine.training.divergence_data.Example`), ``training.dev_fraction`` of them held
    out to choose the epoch with the best Pearson correlation (004 §5.1). Adam, KL divergence to
    ``[1-y, y]``. With ``training.checkpoint`` the state is written after every epoch, and
    ``training.resume`` goes on from it: the weights are those of a run never stopped."""
    import torch  # loaded on use: PyTorch is heavy or optional

    t = training or VDPWITraining()
    epochs, batch, lr, seed, dev_fraction, threads, device = (t.epochs, t.batch, t.lr, t.seed, t.dev_fraction,
                                                               t.threads, t.device)
    cfg = config or VDPWIConfig()
    torch.manual_seed(seed)
    if threads:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(seed)
    n = len(examples)
    perm = rng.permutation(n)
    n_dev = max(1, int(round(dev_fraction * n)))
    dev_idx, tr_idx = perm[:n_dev], perm[n_dev:]
    sw = [sentence_words(e.src, cfg.max_words, TOKENS_VERSION) for e in examples]
    tw = [sentence_words(e.tgt, cfg.max_words, TOKENS_VERSION) for e in examples]
    y = np.array([e.label for e in examples], np.float32)
    vectors = WordVectors(encoder)
    vs = vectors.lookup(sw, src_lang)
    vt = vectors.lookup(tw, tgt_lang)
    dim = vs[0].shape[1] if vs else vectors.dim
    tdev = torch_device(device)
    net = vdpwi_network(cfg, dim).to(tdev)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    kl = torch.nn.KLDivLoss(reduction="batchmean")

    def predict(idx):
        net.eval()
        return predict_pairs(net, [max(len(sw[i]), len(tw[i])) for i in idx],
                             lambda part: ([vs[idx[o]] for o in part], [vt[idx[o]] for o in part]), 128)

    best = (-2.0, None, -1)
    history: list[dict] = []
    t0 = time.time()
    first = 0
    digest = _examples_digest(examples, cfg, t, encoder, src_lang, tgt_lang) if t.checkpoint else ""
    if t.checkpoint and t.resume:
        state, best_sd = load_checkpoint(t.checkpoint, net, opt, digest)
        first, history = state["epoch"], state["history"]
        best = (state["best_r"], best_sd, state["best_epoch"])
        rng.bit_generator.state = state["numpy_rng"]
        t0 -= state["seconds"]
        if log:
            log({"resumed": first})
    for ep in range(first, epochs):
        batches = _length_batches(tr_idx, [max(len(a), len(b)) for a, b in zip(sw, tw)], batch, rng)
        with bar(total=len(batches), unit=" batches", desc=f"epoch {ep + 1}/{epochs}", enabled=t.progress) as shown:
            total = _train_epoch(net, opt, kl, batches, vs, vt, y, tdev, shown)
        dev = predict(dev_idx)
        r = pearson(dev, y[dev_idx])
        history.append({"epoch": ep + 1, "loss": total / len(tr_idx), "dev_pearson": r,
                        "minutes": (time.time() - t0) / 60})
        if r > best[0]:
            best = (r, {k: v.detach().clone() for k, v in net.state_dict().items()}, ep + 1)
        if t.checkpoint:
            save_checkpoint(t.checkpoint, net, opt, best[1],
                            {"fingerprint": digest, "epoch": ep + 1, "history": history, "best_r": best[0],
                             "best_epoch": best[2], "numpy_rng": rng.bit_generator.state,
                             "seconds": time.time() - t0})
        if log:
            log(history[-1])
    net.load_state_dict(best[1])
    weights = {f"net.{k}": v.cpu().numpy() for k, v in net.state_dict().items()}
    meta = {"encoder": getattr(encoder, "model_id", ""), "languages": [src_lang, tgt_lang], "threshold": 0.5,
            "training": {"examples": n, "dev_examples": int(n_dev), "epochs": epochs, "best_epoch": best[2],
                         "dev_pearson": best[0], "seed": seed, "lr": lr, "batch": batch, "history": history,
                         "minutes": (time.time() - t0) / 60}}
    return DivergenceModel("vdpwi", {"vdpwi": cfg.to_dict(), "dim": int(dim), "token_version": TOKENS_VERSION},
                           weights, meta)


def _length_batches(tr_idx: np.ndarray, lengths: list[int], batch: int, rng) -> list[np.ndarray]:
    """An epoch's batches: the training rows shuffled, cut into chunks of 50 batches, each chunk
    sorted by length (less padding) and cut into batches, then the batches shuffled."""
    idx = tr_idx[rng.permutation(len(tr_idx))]
    batches = []
    for k in range(0, len(idx), batch * 50):
        ch = idx[k:k + batch * 50]
        ch = ch[np.argsort([lengths[i] for i in ch], kind="stable")]
        batches += [ch[j:j + batch] for j in range(0, len(ch), batch)]
    return [batches[i] for i in rng.permutation(len(batches))]


def _train_epoch(net, opt, kl, batches, vs, vt, y: np.ndarray, tdev, shown) -> float:
    """One pass over ``batches``: KL divergence to ``[1-y, y]``, gradients clipped at 5; the summed loss."""
    import torch

    net.train()
    total = 0.0
    for b in batches:
        xs, ls = pad_batch([vs[i] for i in b])
        xt, lt = pad_batch([vt[i] for i in b])
        gold = torch.from_numpy(np.stack([1 - y[b], y[b]], 1)).to(tdev)
        loss = kl(net(xs.to(tdev), ls, xt.to(tdev), lt), gold)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
        opt.step()
        total += float(loss.detach()) * len(b)
        shown.update(1)
    return total


def train_mm(examples, aligner, *, src_lang: str, tgt_lang: str, l2: float = 1.0, prune: float = 1e-4,
             ) -> DivergenceModel:
    """Fit Munteanu & Marcu's linear classifier on ``examples``. The model keeps the word-
    alignment tables with translation probabilities below ``prune`` dropped
    (:meth:`WordAligner.pruned`; the dictionary at 10 % is untouched), and the classifier is
    fitted on the links of those stored tables, the ones it will see when scoring."""
    t0 = time.time()
    stored = aligner.pruned(prune)
    x = pair_features([e.src for e in examples], [e.tgt for e in examples], stored)
    y = np.array([e.label for e in examples], np.float64)
    clf = LinearClassifier.fit(x, y, l2=l2)
    weights = {**clf.arrays("clf"), **stored.e2f.arrays("e2f"), **stored.f2e.arrays("f2e")}
    config = {"src_vocab": aligner.e2f.src_vocab.tokens, "tgt_vocab": aligner.e2f.tgt_vocab.tokens,
              "length_cap": aligner.e2f.length_cap, "dict_threshold": aligner.dict_threshold,
              "features": feature_names(), "token_version": aligner.token_version}
    meta = {"languages": [src_lang, tgt_lang], "threshold": 0.5,
            "training": {"examples": len(examples), "minutes": (time.time() - t0) / 60, "l2": l2, "prune": prune}}
    return DivergenceModel("mm", config, weights, meta)
