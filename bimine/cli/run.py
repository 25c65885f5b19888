"""``bimine run JOB.yaml``: a job written as YAML, the same config object a command builds."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import click

from bimine.cli.group import cli
from bimine.cli.options import echo_warning

KINDS = ("mine", "score", "filter", "align", "docs-match", "train-rescorer", "train-classifier", "calibrate",
         "train-divergence")


def _say(line: str) -> None:
    click.echo(line, err=True)


@cli.command()
@click.argument("job_file", metavar="JOB.yaml", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a field, e.g. --set mine.k=8 --set output=other.tsv (repeatable).")
def run(job_file: str, overrides: tuple[str, ...]) -> None:
    """Run the job written in JOB.yaml (- reads it from stdin): 'job:' names the kind (mine, score, filter, align,
    docs-match, train-rescorer, train-classifier, calibrate, train-divergence), the other keys are
    the fields of its config object (MineJob, FilterJob, AlignJob, DocsMatchJob, RescorerJob,
    ClassifierJob, CalibrateJob, DivergenceJob: docs/architecture.md), checked like a training
    config (an unknown key is an error). The command line of each kind builds the same object.

    \b
    job: mine
    src: examples/sample.en
    tgt: examples/sample.fr
    src_lang: en
    tgt_lang: fr
    output: pairs.tsv
    mine: {threshold: 1.85}
    """
    from bimine.config import apply_overrides, from_dict, load_yaml
    from bimine.errors import ConfigError

    data = apply_overrides(load_yaml(job_file), list(overrides))
    if not isinstance(data, dict) or "job" not in data:
        raise ConfigError(f"{job_file}: needs 'job: KIND' ({', '.join(KINDS)}) and the job's fields")
    kind = data.pop("job")
    if kind not in KINDS:
        raise ConfigError(f"{job_file}: job {kind!r} is not one of {', '.join(KINDS)}")

    def build(cls, fields):
        try:
            return from_dict(cls, fields)
        except ConfigError as e:
            raise ConfigError(f"{job_file}: {e}") from None
    if kind == "mine":
        from bimine.mining.job import MineJob, run_mine

        report = run_mine(build(MineJob, data), warn=echo_warning)
        _say(report.summary())
        _say(f"{report.written} pairs written to {data['output']}")
    elif kind in ("score", "filter"):
        from bimine.cli.filter import execute
        from bimine.filtering.job import FilterJob

        if "filtering" in data:
            raise ConfigError(f"{job_file}: 'filtering' is set by the kind (score or filter)")
        execute(build(FilterJob, {**data, "filtering": kind == "filter"}))
    elif kind == "align":
        from bimine.documents.job import AlignJob, run_align

        run_align(build(AlignJob, data), warn=echo_warning, say=_say)
    elif kind == "train-rescorer":
        from bimine.training.rescorer import RescorerJob, run_train_rescorer

        _say(run_train_rescorer(build(RescorerJob, data), say=_say, warn=echo_warning).summary())
    elif kind == "train-classifier":
        from bimine.training.classifier import ClassifierJob, run_train_classifier

        _say(run_train_classifier(build(ClassifierJob, data), warn=echo_warning))
    elif kind == "calibrate":
        from bimine.training.classifier import CalibrateJob, run_calibrate

        _say(run_calibrate(build(CalibrateJob, data)))
    elif kind == "train-divergence":
        from bimine.training.divergence import DivergenceJob, run_train_divergence

        job = build(DivergenceJob, data)
        run_train_divergence(job, say=_say, warn=_say)
        _say(f"wrote {job.output}")
    else:
        from bimine.documents.job import run_docs_match
        from bimine.documents.spec import DocsMatchJob

        _say(run_docs_match(build(DocsMatchJob, data), warn=echo_warning).summary())
