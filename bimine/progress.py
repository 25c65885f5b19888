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


class NoBar:
    """What :func:`bar` gives when no bar is drawn: the calls of a tqdm bar that bimine makes,
    doing nothing but counting (tqdm is not imported: ~60 ms of a command's start-up)."""

    def __init__(self, total: int | None = None, initial: int = 0) -> None:
        self.total = total
        self.n = initial

    def update(self, n: int = 1) -> None:
        self.n += n

    def close(self) -> None:
        pass

    def clear(self, *args, **kwargs) -> None:
        pass

    def refresh(self, *args, **kwargs) -> None:
        pass

    def set_postfix(self, *args, **kwargs) -> None:
        pass

    def set_postfix_str(self, *args, **kwargs) -> None:
        pass

    def set_description(self, *args, **kwargs) -> None:
        pass

    def write(self, s: str, file=None, end: str = "\n") -> None:
        print(s, file=file if file is not None else sys.stdout, end=end)

    def __enter__(self) -> NoBar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def bar(*, total: int | None = None, unit: str = " it", desc: str = "", enabled: bool = True, initial: int = 0,
        force: bool = False):
    """A tqdm bar on stderr (a :class:`NoBar` when :func:`bars_wanted` says no); ``force``: drawn
    wherever stderr goes (a notebook asks for it with ``show_progress_bar=True``)."""
    if not force and not bars_wanted(enabled):
        return NoBar(total=total, initial=initial)
    from tqdm.auto import tqdm  # loaded on use: tqdm is heavy or optional

    return tqdm(total=total, unit=unit, desc=desc, dynamic_ncols=True,
                mininterval=0.5, initial=initial)
