"""Each loss against a loop-by-loop reference written from the papers' equations."""

from __future__ import annotations

import math

import pytest
import torch

from bimine.training.losses import LossConfig, ranking_loss


def ref_loss(u, v, cfg: LossConfig, hard=None, exclude=None, exclude_hard=None):
    """Paper 001 Eq. 3-8 (and paper 000 §2.3 appended negatives) with explicit loops."""
    u, v = u.double().tolist(), v.double().tolist()
    hard = [] if hard is None else hard.double().tolist()

    def norm(x):
        n = math.sqrt(sum(t * t for t in x))
        return [t / n for t in x]

    if cfg.similarity == "cosine":
        u, v, hard = [norm(x) for x in u], [norm(x) for x in v], [norm(x) for x in hard]

    def phi(a, b):
        return sum(p * q for p, q in zip(a, b))

    k = len(u)
    fwd = 0.0
    for i in range(k):
        pos = math.exp(cfg.scale * (phi(u[i], v[i]) - cfg.margin))
        neg = sum(
            math.exp(cfg.scale * phi(u[i], v[n]))
            for n in range(k)
            if n != i and not (exclude is not None and exclude[i][n])
        )
        neg += sum(
            math.exp(cfg.scale * phi(u[i], h))
            for j, h in enumerate(hard)
            if not (exclude_hard is not None and exclude_hard[i][j])
        )
        fwd += -math.log(pos / (pos + neg))
    loss = fwd / k
    if cfg.bidirectional:
        bwd = 0.0
        for i in range(k):
            pos = math.exp(cfg.scale * (phi(v[i], u[i]) - cfg.margin))
            neg = sum(
                math.exp(cfg.scale * phi(v[i], u[n]))
                for n in range(k)
                if n != i and not (exclude is not None and exclude[n][i])
            )
            bwd += -math.log(pos / (pos + neg))
        loss += bwd / k
    if cfg.length_penalty:
        norms = [math.sqrt(sum(t * t for t in x)) for x in (u + v + hard)]
        loss += cfg.length_penalty * sum(norms) / len(norms)
    return loss


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("margin", [0.0, 0.3])
@pytest.mark.parametrize("similarity", ["cosine", "dot"])
def test_matches_reference(bidirectional, margin, similarity):
    g = torch.Generator().manual_seed(1)
    u, v = torch.randn(6, 5, generator=g), torch.randn(6, 5, generator=g)
    cfg = LossConfig(
        similarity=similarity,
        scale=5.0 if similarity == "cosine" else 1.0,
        margin=margin,
        bidirectional=bidirectional,
    )
    got = ranking_loss(u, v, cfg).item()
    assert got == pytest.approx(ref_loss(u, v, cfg), rel=1e-5)


def test_hard_negatives_appended_and_masks():
    g = torch.Generator().manual_seed(2)
    u, v, h = torch.randn(5, 4, generator=g), torch.randn(5, 4, generator=g), torch.randn(7, 4, generator=g)
    exclude = torch.zeros(5, 5, dtype=torch.bool)
    exclude[0, 3] = exclude[3, 0] = True  # rows 0 and 3 are duplicates
    exclude_hard = torch.zeros(5, 7, dtype=torch.bool)
    exclude_hard[1, 2] = True  # hard negative 2 equals row 1's gold target
    cfg = LossConfig(scale=10.0, margin=0.3, bidirectional=True)
    got = ranking_loss(u, v, cfg, hard_negatives=h, exclude=exclude, exclude_hard=exclude_hard).item()
    want = ref_loss(u, v, cfg, hard=h, exclude=exclude.tolist(), exclude_hard=exclude_hard.tolist())
    assert got == pytest.approx(want, rel=1e-5)
    # appending hard negatives makes the forward task harder: loss goes up
    assert got > ranking_loss(u, v, cfg, exclude=exclude).item()


def test_length_penalty():
    g = torch.Generator().manual_seed(3)
    u, v = torch.randn(4, 3, generator=g) * 3, torch.randn(4, 3, generator=g)
    cfg = LossConfig(similarity="dot", scale=1.0, margin=0.0, length_penalty=0.5)
    assert ranking_loss(u, v, cfg).item() == pytest.approx(ref_loss(u, v, cfg), rel=1e-5)


def test_margin_is_a_cost_on_positives():
    u = torch.eye(3)
    v = torch.eye(3)
    a = ranking_loss(u, v, LossConfig(margin=0.0)).item()
    b = ranking_loss(u, v, LossConfig(margin=0.3)).item()
    assert b > a
