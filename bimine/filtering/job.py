"""A ``bimine score`` / ``bimine filter`` run as one config object and the library function
that runs it (issue 45).

The command builds a :class:`FilterJob` from its options and hands it to :func:`run_filter`;
the Python API takes the same object::

    from bimine.filtering.job import FilterJob, run_filter

    out = run_filter(FilterJob(output="scored.tsv", src="corpus.en", tgt="corpus.fr",
                               src_lang="en", tgt_lang="fr", kept="kept.tsv"))
    print(out.result.summary(True))

:func:`run_filter` checks the outputs against the inputs, builds the pipeline (a YAML file,
a :class:`~bimine.filtering.config.PipelineSpec`, or the default one with ``rules``), loads
the model when a score needs one (saying once when it serves a language poorly), chooses the
selection (the model's trained combination and its cut where it ships one), checks and
counts the whole input, and runs :func:`~bimine.filtering.pipeline.run_pipeline`. Warnings
and notes go to ``warn`` (a function of one line; default: the log) as they are known.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from bimine.config import bounds, check_fields, load_yaml
from bimine.cores import capped_workers
from bimine.encoders.languages import describe, load_for_languages, poorly_served
from bimine.encoders.user import hold_model
from bimine.errors import ConfigError
from bimine.executors import check_executor, plugin
from bimine.filtering.combine import combiners_for
from bimine.filtering.config import PipelineSpec, build_filters, default_spec, parse_pipeline
from bimine.filtering.decisions import Selection
from bimine.filtering.pipeline import (
    NOT_PARALLEL,
    UNRELATED_MIN_PAIRS,
    FilterReport,
    PipelineOptions,
    auto_workers,
    checked_pair_input,
    read_pair_blocks,
    run_pipeline,
)
from bimine.filtering.registry import needs_model
from bimine.langs import normalize_lang
from bimine.outputs import check_output_file
from bimine.progress import bar
from bimine.streams import reading_once
from bimine.text.io import scan_text

log = logging.getLogger(__name__)



@dataclass
class FilterJob:
    """What to score or filter, and how.

    Input: a TSV ``input`` (its ``columns``, 1-based, are the two sides) or line-aligned
    ``src`` and ``tgt`` files; ``src_lang`` / ``tgt_lang`` their languages. ``filtering``:
    decide (``keep``, ``reason``) or only score. The pipeline: ``config`` (a YAML file),
    ``spec`` (a :class:`~bimine.filtering.config.PipelineSpec`, named ``pipeline_name`` in the
    report), or the default one with ``rules`` (``default``, ``none`` or a comma-separated
    list) and, unless ``no_model``, the embedding scores of ``model``; each of
    ``classifiers`` (trained classifier files) adds a score that also decides. Selection on
    the combined score: ``threshold``, ``top_fraction``, ``token_budget`` (``normalize``:
    min-max each graded score first, paper 002 Eq. 4). ``kept``: also write the kept rows
    there; ``report``: an HTML report. ``workers``: processes (or ``auto``), ``block_size``:
    pairs per block; ``executor`` ``local`` or ``ray`` (at ``ray_address``)."""

    output: str
    input: str | None = None
    src: str | None = None
    tgt: str | None = None
    columns: tuple[int, int] = field(default=(1, 2), metadata=bounds(min=1))
    src_lang: str | None = None
    tgt_lang: str | None = None
    filtering: bool = True
    config: str | None = None
    spec: PipelineSpec | None = None
    pipeline_name: str | None = None
    rules: str = "default"
    model: str = "default"
    no_model: bool = False
    classifiers: list[str] = field(default_factory=list)
    workers: int | str = "auto"
    block_size: int = field(default=20_000, metadata=bounds(min=1))
    encoding_errors: str = "strict"
    report: str | None = None
    progress: bool = True
    threshold: float | None = None
    kept: str | None = None
    top_fraction: float | None = field(default=None, metadata=bounds(min=0, max=1))
    token_budget: int | None = field(default=None, metadata=bounds(min=0))
    normalize: bool = False
    executor: str = "local"
    ray_address: str | None = None
    command: str | None = None  # names the progress bar and the temporaries; default: filter or score

    def __post_init__(self) -> None:
        hold_model(self)  # an encoder object given in Python: its name, the object kept
        check_fields(self)
        self.columns = checked_pair_input(self.input, self.src, self.tgt, self.columns)
        if self.workers != "auto" and (not isinstance(self.workers, int) or self.workers < 1):
            raise ConfigError(f"workers: 'auto' or a whole number >= 1, got {self.workers!r}")
        check_executor(self.executor)

    @property
    def inputs(self) -> list[str]:
        return [self.input] if self.input is not None else [self.src, self.tgt]


@dataclass
class FilterOutcome:
    """What :func:`run_filter` did: the pipeline's report (counts, notes, warnings), its
    filters in order, and the output files."""

    result: FilterReport
    filters: list
    output: str
    kept: str | None = None
    report: str | None = None


def _log_warning(line: str) -> None:
    log.warning(line)


def check_outputs(job: FilterJob) -> None:
    """The output files are writable, none is an input, and no two are the same file."""
    check_output_file(job.output, inputs=job.inputs)
    if job.kept:
        check_output_file(job.kept, inputs=job.inputs, option="--kept")
        if Path(job.kept).resolve() == Path(job.output).resolve():
            raise ConfigError(f"--kept {job.kept}: is also the -o/--output file; choose another name")
    if job.report:
        check_output_file(job.report, inputs=job.inputs, option="--report")
        for other, option in ((job.output, "-o/--output"), (job.kept, "--kept")):
            if other and Path(job.report).resolve() == Path(other).resolve():
                raise ConfigError(f"--report {job.report}: is also the {option} file; choose another name")


@reading_once
def run_filter(job: FilterJob, *, warn: Callable[[str], None] | None = None) -> FilterOutcome:
    """Score (and with ``job.filtering``, decide on) every pair of ``job``'s input; see the
    module docstring. The steps: the outputs checked; the pipeline (:func:`pipeline_spec`);
    the model loaded when a score needs it, and the default pipeline extended with the
    model's trained combination when it ships one (:func:`with_combiner`); the selection and
    its default cut (:func:`_selection`); the filters built; the pipeline run
    (:func:`_run_pipeline`). ``job`` is not changed."""
    warn = warn or _log_warning
    if job.executor == "ray":
        plugin("ray").require_ray()
    check_outputs(job)
    spec, classifier_items = pipeline_spec(job)
    default_pipeline = not job.config and job.pipeline_name is None and not job.no_model
    # a classifier needs the model when it scores embeddings (it says so if no_model)
    encoder = combiners = gap_note = None
    if any(needs_model(item.get("score"), job.no_model) for item in spec.filters):
        encoder = load_for_languages(job.model, [job.src_lang, job.tgt_lang], "filter" if job.filtering else "score",
                                     warn=warn)
        combiners = combiners_for(encoder)
        if default_pipeline and combiners is not None and spec.combine is None:  # the model's trained combination
            left_out = rules_left_out(job, combiners)
            if left_out:  # --rules names fewer rules than it reads: 002's sum, said in a note
                gap_note = (f"score is the sum of cosine and margin (paper 002 Eq. 3): the model's trained "
                            f"combination reads the rule score(s) {', '.join(left_out)}, which --rules {job.rules} "
                            "leaves out")
            else:
                spec = with_combiner(job, spec, classifier_items)
    selection, cut_note = _selection(job, spec, encoder, combiners, default_pipeline)
    cut_note = gap_note or cut_note
    filters = build_filters(spec, src_lang=job.src_lang, tgt_lang=job.tgt_lang, encoder=encoder,
                            where=job.config or "the command-line pipeline")
    result, notes = _run_pipeline(job, filters, selection, encoder)
    result.notes.extend(notes)
    if cut_note:
        result.notes.append(cut_note)
    unrelated = classifiers_unrelated_warning(result, filters, job.classifiers) if job.filtering else None
    if unrelated:
        result.warnings.append(unrelated)
    return FilterOutcome(result, filters, job.output, job.kept, job.report)


def pipeline_spec(job: FilterJob) -> tuple[PipelineSpec, list[dict]]:
    """The pipeline of ``job`` (its ``spec``, its YAML ``config`` or the default one of its
    flags) with the job's selection options and its classifiers (a classifier given here takes
    part in the decision, with its own threshold, the best dev F1, and in the score), as a new
    :class:`PipelineSpec`; also the classifiers' items. An empty pipeline is refused."""
    spec = job.spec
    if spec is None and job.config:
        spec = parse_pipeline(load_yaml(job.config), where=job.config)  # YAML errors: one line, naming the file
    elif spec is None:
        spec = default_spec(job.rules, model=not job.no_model)
    classifier_items = [{"score": "classifier", "path": p, "threshold": "trained"} for p in job.classifiers]
    changes: dict = {key: getattr(job, key) for key in ("threshold", "top_fraction", "token_budget")
                     if getattr(job, key) is not None}
    if job.normalize:
        changes.update(normalize=True, combine="minmax")
    spec = replace(spec, filters=list(spec.filters) + classifier_items, **changes)
    if not spec.filters:  # nothing would score or drop a pair: every pair kept, every score equal
        if job.config or job.pipeline_name:
            raise ConfigError(f"{job.config or job.pipeline_name}: the pipeline has no filters, so every pair would be "
                              "kept with the same score; list at least one under 'filters:', a '- rule: NAME' (e.g. "
                              "empty, length_ratio, lang) or a '- score: NAME' (e.g. cosine, margin), or add a "
                              "--classifier (docs/filtering.md)")
        raise ConfigError("--rules none with --no-model leaves no filter, so every pair would be kept with the same "
                          "score; name some --rules, drop --no-model, or add a --classifier")
    return spec, classifier_items


def rules_left_out(job: FilterJob, combiners) -> list[str]:
    """The score columns the model's trained combination reads that the job's ``--rules`` leave
    out of the default pipeline (``--rules none``: every rule's)."""
    extended = default_spec(job.rules, model=True, combiner=True)
    have = {item.get("rule") or item.get("score") for item in extended.filters}
    read = dict.fromkeys(list(combiners.full.columns) + list(combiners.small.columns))
    return [c for c in read if c not in have]


def with_combiner(job: FilterJob, spec: PipelineSpec, classifier_items: list[dict]) -> PipelineSpec:
    """The default pipeline of a model that ships a trained combination: the rules, the copy
    rule and every score the combined ``score`` reads, then the job's classifiers; the
    selection options of ``spec`` kept."""
    extended = default_spec(job.rules, model=True, combiner=True)
    return replace(extended, filters=extended.filters + classifier_items, threshold=spec.threshold,
                   top_fraction=spec.top_fraction, token_budget=spec.token_budget)


def _selection(job: FilterJob, spec: PipelineSpec, encoder, combiners,
               default_pipeline: bool) -> tuple[Selection, str | None]:
    """How the combined score decides, and the note that goes with it: the trained combination
    (the default pipeline with a model that ships one, or a pipeline saying combine: model)
    gets its default cut, chosen on dev, unless a side's language is one the model serves
    poorly (its genuine pairs score low there: no cut, no "not parallel" warning)."""
    selection = spec.selection(combiners if spec.combine == "model" else None)
    if selection.combine == "model" and selection.threshold is not None and not 0 <= selection.threshold <= 1:
        where = "--threshold" if job.threshold is not None else f"{job.config or job.pipeline_name}: threshold"
        raise ConfigError(f"{where} {selection.threshold:g}: the combined score of the model's trained combination is a "
                          f"probability, between 0 and 1, so {selection.threshold:g} would keep "
                          f"{'no pair' if selection.threshold > 1 else 'every pair the filters accept'}; give a "
                          f"threshold in that range (its default cut is {combiners.full.cut:g})")
    cut_note = None
    if default_pipeline and encoder is not None and combiners is None:
        name = encoder.spec.kind if job.model == "auto" else job.model  # auto: the model it chose
        cut_note = (f"model {name!r} ships no trained combination: score is the sum of cosine and margin (paper 002 "
                    "Eq. 3), which does not see the rules; sort by it only among the pairs the rules keep")
    weak = []
    if selection.combine == "model":
        weak = poorly_served(encoder, [normalize_lang(job.src_lang), normalize_lang(job.tgt_lang)], by="xsim")
        selection.warn_unrelated = not weak
    if (job.filtering and selection.combine == "model" and selection.threshold is None
            and selection.top_fraction is None and selection.token_budget is None):
        if weak:  # a fixed cut would drop many of its genuine pairs
            cut_note = (f"no default cut on score: the model serves {describe(weak)} less well, so genuine pairs "
                        "score low there; sort by score, pass --threshold, or "
                        "use -m e5-small")
        else:
            selection.threshold = combiners.full.cut  # the default cut, chosen on dev (docs/filtering.md)
    return selection, cut_note


def _run_pipeline(job: FilterJob, filters: list, selection: Selection, encoder) -> tuple[FilterReport, list[str]]:
    """Check and count the whole input (binary, UTF-8) before any work, then run the pipeline
    with a progress bar; also the notes of the run (a side the language identifier does not know)."""
    total = [scan_text(p, errors=job.encoding_errors).lines for p in job.inputs][0]
    blocks = read_pair_blocks(job.input, src=job.src, tgt=job.tgt, columns=job.columns, block_size=job.block_size,
                              errors=job.encoding_errors)
    langs = {"src": job.src_lang, "tgt": job.tgt_lang}
    notes = [f"the language identifier does not know {langs[side]!r}: the {side} side was not checked"
             for f in filters for side in getattr(f, "unchecked", [])]
    info = {"input": job.input if job.input is not None else f"{job.src} and {job.tgt} (line-aligned)",
            "languages": f"{job.src_lang} → {job.tgt_lang}",
            "pipeline": (job.pipeline_name or job.config
                         or f"--rules {job.rules}" + (" --no-model" if job.no_model else ""))
            + "".join(f" --classifier {c}" for c in job.classifiers),
            "model": job.model if encoder is not None else "none (rules only)"}
    for i, note in enumerate(notes):
        info[f"note {i + 1}" if len(notes) > 1 else "note"] = note
    command = job.command or ("filter" if job.filtering else "score")
    opts = PipelineOptions(columns=job.columns if job.input is not None else None, filtering=job.filtering,
                           selection=selection, kept_output=job.kept,
                           workers=auto_workers() if job.workers == "auto" else
                           capped_workers(job.workers, -(-total // job.block_size)) if job.executor == "local"
                           else job.workers,
                           report_path=job.report, report_info=info, executor=job.executor,
                           ray_address=job.ray_address, command=command)
    progress = bar(total=total, unit=" pairs", desc=command, enabled=job.progress)
    try:
        return run_pipeline(blocks, filters, job.output, opts, progress=progress), notes
    finally:
        progress.close()


def classifiers_unrelated_warning(result: FilterReport, filters: list, classifiers: list[str]) -> str | None:
    """The "does not look parallel" warning of a ``filter --classifier`` run: the pipeline's own
    (the combined score below its cut) is silent there, because a pair the classifier rejects
    scores 0 like one a rule rejects, so none "passes the rules". The classifiers come last in
    the pipeline: warn when more than half of the pairs every other filter accepts (at least
    :data:`UNRELATED_MIN_PAIRS`) fail one of them, unless the pipeline's warning was given."""
    if not classifiers or any(NOT_PARALLEL in w for w in result.warnings):
        return None
    ours, others = filters[len(filters) - len(classifiers):], filters[: len(filters) - len(classifiers)]
    reached = result.pairs - sum(result.dropped_by[f.name] for f in others)
    failed = sum(result.dropped_by[f.name] for f in ours)
    if reached < UNRELATED_MIN_PAIRS or 2 * failed <= reached:
        return None
    which = ", ".join(classifiers)
    return (f"{failed:,} of the {reached:,} pairs that pass the other filters fail the classifier"
            f"{'s' if len(classifiers) > 1 else ''} {which}: {NOT_PARALLEL}")


def divergence_job(output: str, *, divergence_model: str = "default", keep: float | None = None, **kw) -> FilterJob:
    """``bimine divergence`` (``keep`` None: score only) or ``bimine select`` (keep the least
    divergent ``keep`` fraction) as a :class:`FilterJob`: the divergence model (a file from
    ``bimine train-divergence`` or ``default``) as the pipeline's one score, one process. With the
    shipped divergence model, ``-m e5-small`` and ``-m auto`` read the shipped model's word vectors
    (the only ones it fits), with a note.
    Untranslated copies (``identical``, ``copy``) and sides in another language (``lang``) are
    rules that gate it (``combine: gate``): they score 0, at the bottom, where the model, which
    matches word vectors, gave a copy 0.96 (issue 72 §6). ``kw``: the other
    :class:`FilterJob` fields (input, src, tgt, languages, kept, report, ...)."""
    model = kw.get("model", "default")
    if divergence_model == "default" and model in ("e5-small", "auto"):
        # -m names the encoder whose word vectors the divergence model reads: the shipped one reads the shipped
        # model's, which -m auto would choose anyway (no other model's word vectors fit it)
        log.warning(f"note: the shipped divergence model reads the shipped model's word vectors; -m {model} "
                    "does not apply to it, -m default is used")
        kw["model"] = "default"
    spec = PipelineSpec(filters=[{"rule": "identical"}, {"rule": "copy"}, {"rule": "lang"},
                                 {"score": "divergence", "path": divergence_model}], combine="gate")
    return FilterJob(output=output, filtering=keep is not None, config=None, rules="none", no_model=False,
                     classifiers=[], workers=1, spec=spec, pipeline_name=f"divergence model {divergence_model}",
                     top_fraction=keep, command="select" if keep is not None else "divergence", **kw)
