"""Errors a user can cause: each names the file, the line and the fix."""

from __future__ import annotations


class BimineError(Exception):
    """Base class of errors caused by input or options; the CLI prints them without a traceback."""


class InputError(BimineError):
    """A problem with an input file (name, line and a suggested fix are in the message)."""


class ConfigError(BimineError):
    """A problem with a configuration file or an option."""
