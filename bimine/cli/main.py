"""The ``bimine`` command: a thin layer over the Python API (one group per stage). This module
only gathers the commands (each attaches itself to :data:`bimine.cli.group.cli` on import) and
runs them; what commands share is in :mod:`bimine.cli.options`."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import atexit
import gc
import logging
import os
import sys

import click

from bimine.cli.group import Interrupted, cli


def registered() -> click.Group:
    """The ``bimine`` group with every command attached (each command module attaches its own
    on import)."""
    from bimine.cli import (  # noqa: F401  (register commands)
        adapt,
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
    return cli


_FREEZE_AT_EXIT = False


def main() -> None:
    from bimine.cleanup import Terminated, exit_cleanly_on_sigterm
    from bimine.cores import thread_env_problem

    exit_cleanly_on_sigterm()  # SIGTERM unwinds like Ctrl-C: temporary files and folders are removed
    bad_env = thread_env_problem()  # before numba reads it (a traceback from its import)
    if bad_env:
        click.echo(f"error: {bad_env}", err=True)
        sys.exit(2)
    # At exit the interpreter's last garbage collection walks every object the command made
    # (numba's compiler state among them: ~0.2 s of each run). Exit hooks run before it, so this
    # one freezes them: their memory goes back with the process, as it would anyway. Nothing
    # changes for a caller that goes on in the same interpreter.
    global _FREEZE_AT_EXIT
    if not _FREEZE_AT_EXIT:
        _FREEZE_AT_EXIT = True
        atexit.register(gc.freeze)
    try:
        registered()()
    except (Interrupted, Terminated) as e:
        # the command's clean-up has run (its finally blocks, as the exception unwound); what is left
        # are the interpreter's exit hooks, and one of them joins the thread of a worker pool, which
        # waits for ever on a result a stopped worker left half-sent: end here, as the signal would
        from bimine.streams import close

        close()  # copies of stream inputs a thread may still be making (exit hooks do not run)
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(e.code if isinstance(e.code, int) else 1)


if __name__ == "__main__":
    main()
