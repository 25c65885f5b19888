"""Every score a filtering pipeline can list (``- score: NAME``), in one table: its class, whether
it needs the sentence encoder, and whether the combined ``score`` of a model with a trained
combiner reads it. The names the pipeline accepts, the scores that run without a model, the
scores of the default pipeline and what makes a run load the model are all read from here;
whether a score needs a pass over the whole corpus is its class's ``needs_corpus``.

A new score: write its class (a :class:`~bimine.scoring.base.PairFilter`), add one line here, and,
if the combined ``score`` should read it, a transform in :data:`bimine.filtering.combine.TRANSFORMS`
and a refitted combiner (``python -m benchmarks.fit_combiner``).
"""

from __future__ import annotations

from dataclasses import dataclass

from bimine.filtering.features import (
    LengthLog,
    LoneNumbers,
    Punctuation,
    RepeatedSide,
    SentenceCount,
    Separators,
)
from bimine.scoring.base import PairFilter
from bimine.scoring.pair_scores import (
    ClassifierScore,
    ConfidenceScore,
    CosineScore,
    Coverage,
    DivergenceScore,
    MarginScore,
    RescoreScore,
)

NEEDED, OPTIONAL, NONE = "needed", "optional", "none"


@dataclass(frozen=True)
class ScoreKind:
    """One score: ``cls`` builds it; ``model``: the encoder is ``needed``, ``optional`` (the score
    reads embeddings only when its own file says so: a classifier on embeddings, the divergence
    model's word vectors) or ``none`` (text alone); ``combined``: the default pipeline of a model
    that ships a trained combiner lists it, and the combined ``score`` reads it."""

    cls: type[PairFilter]
    model: str
    combined: bool

    @property
    def needs_corpus(self) -> bool:
        """Scored over the whole corpus at once (the in-corpus margin, coverage), not per block."""
        return bool(self.cls.needs_corpus)


SCORES: dict[str, ScoreKind] = {
    "cosine": ScoreKind(CosineScore, NEEDED, True),
    "confidence": ScoreKind(ConfidenceScore, NEEDED, True),
    "margin": ScoreKind(MarginScore, NEEDED, True),
    "classifier": ScoreKind(ClassifierScore, OPTIONAL, False),
    "divergence": ScoreKind(DivergenceScore, OPTIONAL, False),
    "rescore": ScoreKind(RescoreScore, NEEDED, False),
    "cover": ScoreKind(Coverage, NEEDED, True),
    "punct": ScoreKind(Punctuation, NONE, True),
    "menu": ScoreKind(Separators, NONE, True),
    "sentences": ScoreKind(SentenceCount, NONE, True),
    "length_log": ScoreKind(LengthLog, NONE, True),
    "repeat": ScoreKind(RepeatedSide, NONE, True),
    "lone_numbers": ScoreKind(LoneNumbers, NONE, True),
}

SCORE_NAMES = tuple(SCORES)
#: text alone: built without the encoder or the languages
FEATURES_WITHOUT_MODEL = tuple(n for n, s in SCORES.items() if s.model == NONE)
#: what the default pipeline of a model with a trained combiner scores, in its column order
COMBINED_SCORES = tuple(n for n, s in SCORES.items() if s.combined)


def needs_model(name: str, no_model: bool = False) -> bool:
    """Whether listing score ``name`` makes a run load the encoder (``no_model``: the user said
    not to, which an optional score accepts)."""
    kind = SCORES.get(name)
    return kind is not None and (kind.model == NEEDED or (kind.model == OPTIONAL and not no_model))
