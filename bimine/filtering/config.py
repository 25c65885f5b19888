"""A filtering pipeline described as data (a YAML file or command-line flags).

```yaml
filters:                      # run in this order; the first failing one names the drop reason
  - rule: empty
  - rule: length_ratio
    threshold: 2.5
  - rule: lang                # py3langid, both sides
    threshold: 0.5
  - score: cosine             # embedding cosine with --model; no threshold: it only scores
    threshold: 0.3            # ... unless given one
threshold: 0.4                # optional: also drop pairs whose combined score is below it
normalize: true               # optional: min-max normalise each graded score before the sum
top_fraction: 0.5             # optional: keep the best half (or token_budget: 5000000)
```

Each item names one ``rule`` (:data:`RULE_NAMES`) or one ``score`` (:data:`bimine.filtering.registry.SCORES`), and
may set ``name`` (its output column), ``threshold`` (a number, or null for none) and the
options of that filter; any other key is an error.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from bimine.errors import ConfigError
from bimine.filtering.decisions import Selection
from bimine.filtering.langid import LanguageId
from bimine.filtering.registry import COMBINED_SCORES, NEEDED, NONE, SCORE_NAMES, SCORES
from bimine.filtering.rules import RULES
from bimine.scoring.base import PairFilter

RULE_NAMES = (*RULES, "lang")
COMBINE_MODES = ("model", "sum", "minmax", "gate")
DEFAULT_RULES = ("empty", "bad_chars", "identical", "min_length", "max_length", "length_ratio", "numbers", "urls",
                 "duplicate", "lang")
_COMMON = {"name", "threshold"}
_INTERNAL = {"clean_high", "reason", "stateful", "kind", "unchecked", "encoder", "src_lang", "tgt_lang", "batch_size",
             "needs_corpus"}


@dataclass
class PipelineSpec:
    filters: list[dict] = field(default_factory=list)
    threshold: float | None = None
    normalize: bool = False
    top_fraction: float | None = None
    token_budget: int | None = None
    combine: str | None = None  # model | sum | minmax | gate; None: sum (minmax with normalize)

    def selection(self, combiners=None):
        """The decision of this pipeline; ``combiners``: the :class:`~bimine.filtering.combine.Combiners`
        shipped with the encoder (``combine: model``)."""
        mode = self.combine or ("minmax" if self.normalize else "sum")
        if mode == "model" and combiners is None:
            raise ConfigError("combine: model needs the combiner shipped with the model (the default model has one; "
                              "use combine: sum or minmax with this one)")
        return Selection(normalize=mode == "minmax", threshold=self.threshold, top_fraction=self.top_fraction,
                         token_budget=self.token_budget, combine=mode, combiners=combiners if mode == "model" else None)


def _refuse_non_finite(value: object, where: str) -> None:
    """YAML reads ``.nan`` and ``.inf`` as numbers: a threshold of nan would drop every pair."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: must be a finite number, got {value}")
    if isinstance(value, dict):
        for k, v in value.items():
            _refuse_non_finite(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _refuse_non_finite(v, f"{where}[{i}]")


def parse_pipeline(data: object, where: str = "pipeline") -> PipelineSpec:
    """Check a pipeline mapping (from YAML) and return it; errors name the item and key."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping with 'filters', got {type(data).__name__}")
    _refuse_non_finite(data, where)
    known = ("filters", "threshold", "normalize", "top_fraction", "token_budget", "combine")
    unknown = set(data) - set(known)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; known: {', '.join(known)}")
    items = data.get("filters") or []
    if not isinstance(items, list):
        raise ConfigError(f"{where}: 'filters' must be a list")
    thr = data.get("threshold")
    if thr is not None and (isinstance(thr, bool) or not isinstance(thr, (int, float))):
        raise ConfigError(f"{where}: threshold must be a number or null, got {thr!r}")
    for i, item in enumerate(items):
        if not isinstance(item, dict) or len({"rule", "score"} & set(item)) != 1:
            raise ConfigError(f"{where}.filters[{i}]: each filter is a mapping with one 'rule' or one 'score' key")
    norm = data.get("normalize", False)
    if not isinstance(norm, bool):
        raise ConfigError(f"{where}: normalize must be true or false, got {norm!r}")
    frac, budget = data.get("top_fraction"), data.get("token_budget")
    if frac is not None and (isinstance(frac, bool) or not isinstance(frac, (int, float))):
        raise ConfigError(f"{where}: top_fraction must be a number, got {frac!r}")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
        raise ConfigError(f"{where}: token_budget must be a whole number, got {budget!r}")
    mode = data.get("combine")
    if mode is not None and mode not in COMBINE_MODES:
        raise ConfigError(f"{where}: combine must be one of {', '.join(COMBINE_MODES)}, got {mode!r}")
    if mode is not None and norm and mode != "minmax":
        raise ConfigError(f"{where}: normalize: true is combine: minmax; drop one of the two")
    spec = PipelineSpec(filters=list(items), threshold=thr, normalize=norm, top_fraction=frac, token_budget=budget,
                        combine=mode)
    try:  # the selection's own checks; whether the model ships a combiner is known once it is loaded
        dataclasses.replace(spec, combine=None if mode == "model" else mode).selection()
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
    return spec


def build_filters(spec: PipelineSpec, *, src_lang: str, tgt_lang: str, encoder=None,
                  where: str = "pipeline") -> list[PairFilter]:
    """The filters of ``spec``; ``encoder`` serves the embedding scores (needed when one is listed)."""
    out: list[PairFilter] = []
    for i, item in enumerate(spec.filters):
        here = f"{where}.filters[{i}]"
        item = dict(item)
        if "rule" in item:
            kind = item.pop("rule")
            if kind not in RULE_NAMES:
                raise ConfigError(f"{here}: unknown rule {kind!r}; rules: {', '.join(RULE_NAMES)}")
            cls = LanguageId if kind == "lang" else RULES[kind]
            extra = {"src_lang": src_lang, "tgt_lang": tgt_lang} if kind in ("lang", "copy") else {}
        else:
            kind = item.pop("score")
            if kind not in SCORE_NAMES:
                raise ConfigError(f"{here}: unknown score {kind!r}; scores: {', '.join(SCORE_NAMES)}")
            entry = SCORES[kind]
            if encoder is None and entry.model == NEEDED:
                raise ConfigError(f"{here}: the {kind} score needs a model (remove --no-model)")
            cls = entry.cls
            extra = ({} if entry.model == NONE else
                     {"encoder": encoder, "src_lang": src_lang, "tgt_lang": tgt_lang})
        options = {f.name for f in dataclasses.fields(cls)} - _INTERNAL
        bad = set(item) - options
        if bad:
            raise ConfigError(f"{here}: unknown option(s) {sorted(bad)} for {kind}; options: {', '.join(sorted(options))}")
        thr = item.get("threshold", "unset")
        if thr == "trained" and getattr(cls, "stores_threshold", False):
            pass
        elif thr is not None and thr != "unset" and (isinstance(thr, bool) or not isinstance(thr, (int, float))):
            raise ConfigError(f"{here}: threshold must be a number or null, got {thr!r}")
        try:
            f = cls(**item, **extra)
        except (TypeError, ValueError, ConfigError) as e:
            raise ConfigError(f"{here}: {e}") from None
        if kind == "classifier" and "name" not in item and any(g.name == f.name for g in out):
            f.name = f"{f.name}_classifier"  # named after its kind, which the pipeline has already (confidence)
        out.append(f)
    return out


def default_spec(rules: str = "default", model: bool = True, combiner: bool = False) -> PipelineSpec:
    """The pipeline of the command-line flags: ``rules`` is ``default`` (all rules), ``none``,
    or a comma-separated list; ``model`` adds the embedding cosine and the in-corpus margin;
    ``combiner`` (the model ships one) adds the copy rule and every score the combined ``score``
    reads (:data:`COMBINED_SCORES`: 002's sum becomes the trained combination)."""
    if rules == "default":
        names = list(DEFAULT_RULES)
    elif rules == "none":
        names = []
    else:
        names = [r.strip() for r in rules.split(",") if r.strip()]
        bad = [r for r in names if r not in RULE_NAMES]
        if bad:
            raise ConfigError(f"--rules: unknown rule(s) {bad}; rules: {', '.join(RULE_NAMES)}")
    if model and combiner:
        if rules == "default":
            names.insert(names.index("identical") + 1, "copy")
        items = [{"rule": r} for r in names] + [{"score": s} for s in COMBINED_SCORES]
        return PipelineSpec(filters=items, combine="model")
    items = [{"rule": r} for r in names] + ([{"score": "cosine"}, {"score": "margin"}] if model else [])
    return PipelineSpec(filters=items)
