"""What a filtering run is told and what it tells: how the combined score selects pairs
(:class:`Selection`) and what the run did (:class:`FilterReport`), shared by the pipeline, its
HTML report and the commands."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from bimine.errors import ConfigError


@dataclass
class Selection:
    """How the combined score decides, after the filters: ``normalize`` (002 Eq. 4 on each
    graded score before the sum, Eq. 3), then among the pairs every filter accepts, keep
    those with ``score >= threshold``, the best ``top_fraction`` of them, or the best up to
    ``token_budget`` target-side tokens (words; characters in scripts without spaces)."""

    normalize: bool = False
    threshold: float | None = None
    top_fraction: float | None = None
    token_budget: int | None = None
    combine: str = "sum"  # model | sum (002 Eq. 3) | minmax (Eq. 4): bimine.filtering.combine
    combiners: object = None  # the model's Combiners, for combine == "model"
    # warn when most pairs score below the combiner's cut; off where a side's language is one the model
    # serves poorly (its genuine pairs score low there too: the warning would mislead)
    warn_unrelated: bool = True

    def __post_init__(self) -> None:
        if self.top_fraction is not None and self.token_budget is not None:
            raise ConfigError("choose a top fraction or a token budget, not both")
        if self.top_fraction is not None and not 0 <= self.top_fraction <= 1:
            raise ConfigError(f"top fraction must be in [0, 1], got {self.top_fraction}")
        if self.token_budget is not None and self.token_budget < 0:
            raise ConfigError(f"token budget must be >= 0, got {self.token_budget}")


@dataclass
class FilterReport:
    """What a run did: pairs read and kept, and per filter how many pairs failed it and how
    many were dropped with it as the first failing filter (the reason written)."""

    pairs: int = 0
    kept: int = 0
    failed: Counter = field(default_factory=Counter)
    dropped_by: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # one line each, printed as 'warning: ...'
    # wall-clock seconds of this process per phase: reading blocks, scoring (or waiting for the
    # workers) and spooling, whole-corpus scores (the margin's kNN), decisions, writing the
    # outputs, the report (``BIMINE_TIMINGS=1 bimine filter ...`` prints them)
    seconds: Counter = field(default_factory=Counter)
    repeats: int = 0  # rows whose pair came earlier: scored and decided as their first copy

    def summary(self, filtering: bool) -> str:
        again = (f"{self.repeats:,} rows repeat an earlier pair (each scored as its first copy; the corpus "
                 "statistics taken over distinct pairs)") if self.repeats else None
        if not filtering:
            return "; ".join([f"scored {self.pairs:,} pairs"] + ([again] if again else []) + self.notes)
        parts = [f"kept {self.kept:,} of {self.pairs:,} pairs"]
        if self.pairs:
            parts[0] += f" ({100 * self.kept / self.pairs:.1f}%)"
        if again:
            parts.append(again)
        drops = ", ".join(f"{name} {n:,}" for name, n in self.dropped_by.most_common() if n)
        if drops:
            parts.append(f"dropped by (first failing filter): {drops}")
        return "; ".join(parts + self.notes)
