"""Errors a user can cause: each names the file, the line and the fix."""

from __future__ import annotations


class BimineError(Exception):
    """Base class of errors caused by input or options; the CLI prints them without a traceback."""


class InputError(BimineError):
    """A problem with an input file (name, line and a suggested fix are in the message)."""


class ConfigError(BimineError):
    """A problem with a configuration file or an option."""


class OptionError(ConfigError):
    """An option that is missing or does not fit the others, found once the job has started
    (e.g. a model whose features need the language); the CLI points to the command's help."""
