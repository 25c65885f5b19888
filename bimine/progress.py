"""Progress bars for long steps: drawn on an interactive terminal only.

On a terminal a bar redraws itself in place, so each finished bar shows once. Written to a
file or a pipe (a log, CI), tqdm's redraws pile up as many copies of the same bar; there the
bars are off and the command's summary reports what was done. ``BIMINE_PROGRESS=1`` forces
bars on, ``BIMINE_PROGRESS=0`` off.
"""

from __future__ import annotations

import os
import sys


def bars_wanted(enabled: bool = True) -> bool:
    """Whether to draw bars: asked for, and stderr is a terminal (or BIMINE_PROGRESS says so)."""
    if not enabled:
        return False
    force = os.environ.get("BIMINE_PROGRESS")
    if force in ("0", "1"):
        return force == "1"
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def bar(*, total: int | None = None, unit: str = " it", desc: str = "", enabled: bool = True, initial: int = 0):
    """A tqdm bar on stderr (a no-op bar when :func:`bars_wanted` says no)."""
    from tqdm.auto import tqdm  # loaded on use: tqdm is heavy or optional

    return tqdm(total=total, unit=unit, desc=desc, disable=not bars_wanted(enabled), dynamic_ncols=True,
                mininterval=0.5, initial=initial)
