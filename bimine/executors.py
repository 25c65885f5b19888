"""Where the library's parallel steps run: ``local`` (this process and the worker processes it
starts) or a plug-in executor, found by name when a job asks for it.

The one plug-in is ``ray`` (:mod:`bimine.distributed.ray_executor`, the ``ray`` extra): it
embeds store shards, fills and searches key indexes and scores filter blocks as Ray tasks.
The steps that can run there (:mod:`bimine.store`, :mod:`bimine.index.sides`,
:mod:`bimine.mining`, :mod:`bimine.filtering`) sit below ``bimine.distributed`` in the
package's layers (``pyproject.toml``), so they reach it by name through :func:`plugin`, as
``load_encoder`` reaches an encoder backend, never by an import: the executor depends on the
steps it runs, the steps only on this module.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from bimine.errors import ConfigError

EXECUTORS = ("local", "ray")
_PLUGINS = {"ray": "bimine.distributed.ray_executor"}


def check_executor(name: str) -> str:
    """``name`` if it is an executor, else a :class:`ConfigError` naming the choices."""
    if name not in EXECUTORS:
        raise ConfigError(f"unknown executor {name!r}: choose {' or '.join(EXECUTORS)}")
    return name


def plugin(name: str) -> ModuleType:
    """The module that runs steps on executor ``name`` (not ``local``), imported on first use."""
    if name not in _PLUGINS:
        raise ConfigError(f"executor {name!r} has no plug-in module: choose {' or '.join(_PLUGINS)}")
    return importlib.import_module(_PLUGINS[name])
