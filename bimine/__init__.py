"""bimine: mine, align and filter parallel corpora with bilingual sentence encoders.

The library (docs/api.md)::

    import bimine
    enc = bimine.load_encoder()                      # the shipped fast model
    v = enc.encode("Le chat dort.", "fr")            # one vector, (384,)
    pairs = bimine.mine(english, french, src_lang="en", tgt_lang="fr", threshold=1.85)

The functions are loaded on first use (``import bimine`` stays light for the command line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bimine.jitcache import use_user_cache

use_user_cache()  # numba's compiled kernels are cached per user, never inside the installed package

from bimine.encoders.base import Encoder  # noqa: E402
from bimine.errors import BimineError, ConfigError, InputError, OptionError  # noqa: E402

if TYPE_CHECKING:
    from bimine.api import (
        align,
        divergence,
        filter_pairs,
        load_encoder,
        match_documents,
        mine,
        read_lines,
        score_pairs,
        select,
    )

__version__ = "0.1.0"
_API = ("load_encoder", "mine", "align", "match_documents", "filter_pairs", "score_pairs", "divergence", "select",
        "read_lines")
__all__ = ["Encoder", "BimineError", "ConfigError", "InputError", "OptionError", "load_encoder", "mine", "align",
           "match_documents", "filter_pairs", "score_pairs", "divergence", "select", "read_lines", "__version__"]


def __getattr__(name: str) -> Any:
    if name in _API:
        from importlib import (
            import_module,  # bimine.api on first use: it imports mining, alignment, filtering
        )

        value = getattr(import_module("bimine.api"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bimine' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
