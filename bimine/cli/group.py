"""The ``bimine`` click group every command attaches to: one line ``error: ...`` for every user
mistake, Ctrl-C as exit status 130, the library's warnings in the commands' style."""

from __future__ import annotations

import logging
import sys

import click

from bimine import __version__
from bimine.errors import BimineError, OptionError


class Interrupted(SystemExit):
    """Ctrl-C ended the command (exit status 130), after its own clean-up ran."""


class _Group(click.Group):
    """Every user mistake ends in one line ``error: ...`` and exit code 2, no traceback:
    :class:`BimineError` from the work, and click's usage errors (a bad option value, a
    missing argument), which click would print as a four-line usage block."""

    def invoke(self, ctx):
        from bimine.streams import one_read

        try:  # one_read: a stream input (stdin, a pipe) is read once per command, its copy removed at the end
            with one_read():
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
        except Exception as e:
            if not _from_ctrl_c(e):
                raise
            click.echo("interrupted", err=True)
            raise Interrupted(130) from None
        sys.exit(rv if isinstance(rv, int) else 0)


def _from_ctrl_c(e: BaseException) -> bool:
    """Whether ``e`` was caused by a Ctrl-C: a compiled extension that the signal interrupts
    (numba loading a cached kernel) raises ``SystemError ... returned a result with an exception
    set`` with the KeyboardInterrupt in its chain, not the KeyboardInterrupt itself."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


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
