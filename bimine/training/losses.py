"""Translation ranking losses computed from embeddings alone (no model needed to test them).

Paper 000 Eq. 2 / Fig. 2: the scores of a batch of K pairs are one matrix product ``U V^T``;
row i is a softmax over the K targets (and any appended hard negatives) with target i as the
answer. Paper 001 Eq. 4-5 adds the same loss over columns (target -> source) and Eq. 6-8
subtracts an additive margin ``m`` from the positive scores before the softmax.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class LossConfig:
    """Options of the ranking loss.

    similarity: ``"cosine"`` (rows L2-normalised, scores multiplied by ``scale``) or ``"dot"``
        (raw dot products, paper 000; ``scale`` still multiplies).
    margin: additive margin on the positive scores, in cosine units (001 default 0.3).
    bidirectional: add the target -> source loss (001 Eq. 5).
    length_penalty: weight of the mean L2 norm of the raw embeddings (001 footnote 3).
    """

    similarity: str = "cosine"
    scale: float = 20.0
    margin: float = 0.3
    bidirectional: bool = True
    length_penalty: float = 0.0


def ranking_loss(
    src: torch.Tensor,
    tgt: torch.Tensor,
    cfg: LossConfig,
    *,
    hard_negatives: torch.Tensor | None = None,
    exclude: torch.Tensor | None = None,
    exclude_hard: torch.Tensor | None = None,
) -> torch.Tensor:
    """In-batch softmax loss for K aligned pairs ``src[i] <-> tgt[i]``.

    Args:
        src, tgt: ``(K, d)`` raw encoder outputs (normalised here when ``similarity=cosine``).
        hard_negatives: ``(H, d)`` extra targets appended to the target matrix (paper 000
            §2.3); they are candidates for every source row, never answers.
        exclude: ``(K, K)`` bool, True where an off-diagonal pair must not be a negative
            (duplicate texts in the batch). The diagonal is ignored.
        exclude_hard: ``(K, H)`` bool, True where hard negative h equals row i's gold target.

    Returns the mean forward loss, plus the mean backward loss when bidirectional (001 Eq. 5:
    their sum), plus the length penalty.
    """
    if cfg.similarity not in ("cosine", "dot"):
        raise ValueError(f"similarity must be 'cosine' or 'dot', not {cfg.similarity!r}")
    penalty = 0.0
    if cfg.length_penalty:
        norms = [src.norm(dim=1), tgt.norm(dim=1)]
        if hard_negatives is not None:
            norms.append(hard_negatives.norm(dim=1))
        penalty = cfg.length_penalty * torch.cat(norms).mean()
    if cfg.similarity == "cosine":
        src = F.normalize(src, dim=1)
        tgt = F.normalize(tgt, dim=1)
        if hard_negatives is not None:
            hard_negatives = F.normalize(hard_negatives, dim=1)
    k = src.shape[0]
    eye = torch.eye(k, dtype=torch.bool, device=src.device)
    scores = src @ tgt.T - cfg.margin * eye.to(src.dtype)
    if exclude is not None:
        scores = scores.masked_fill(exclude & ~eye, float("-inf"))
    fwd = scores
    if hard_negatives is not None and hard_negatives.shape[0]:
        hard = src @ hard_negatives.T
        if exclude_hard is not None:
            hard = hard.masked_fill(exclude_hard, float("-inf"))
        fwd = torch.cat([scores, hard], dim=1)
    labels = torch.arange(k, device=src.device)
    loss = F.cross_entropy(cfg.scale * fwd, labels)
    if cfg.bidirectional:
        loss = loss + F.cross_entropy(cfg.scale * scores.T, labels)
    return loss + penalty


def distill_loss(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """Mean squared distance between L2-normalised student rows and teacher rows:
    ``mean_i ||s_i/|s_i| - t_i/|t_i|||^2`` (= 2 - 2 cos). Reimers & Gurevych (2020) take the
    MSE of the raw vectors; both models here are compared by cosine, so the directions are
    what is matched."""
    return (F.normalize(student, dim=1) - F.normalize(teacher, dim=1)).pow(2).sum(dim=1).mean()


def word_distill_loss(student: torch.Tensor, teacher: torch.Tensor, *, weight: float, rank_weight: float,
                      scale: float, margin: float, exclude: torch.Tensor | None = None) -> torch.Tensor:
    """Teacher vocabulary distillation (issue 43, :mod:`bimine.training.words`) of a batch of
    words: ``weight`` x :func:`distill_loss` (each student row toward its teacher row) plus
    ``rank_weight`` x the in-batch ranking loss with the student rows as sources and the teacher
    rows as targets, cosine, additive ``margin``, ``scale``, both directions
    (:func:`ranking_loss`); ``exclude`` marks pairs of rows holding the same word."""
    loss = student.new_zeros(())
    if weight:
        loss = loss + weight * distill_loss(student, teacher)
    if rank_weight:
        cfg = LossConfig(similarity="cosine", scale=scale, margin=margin, bidirectional=True)
        loss = loss + rank_weight * ranking_loss(student, teacher.to(student.dtype), cfg, exclude=exclude)
    return loss
