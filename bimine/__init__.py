"""bimine: mine, align and filter parallel corpora with bilingual sentence encoders."""

from __future__ import annotations

from bimine.jitcache import use_user_cache

use_user_cache()  # numba's compiled kernels are cached per user, never inside the installed package

from bimine.encoders.base import Encoder  # noqa: E402
from bimine.encoders.registry import load_encoder  # noqa: E402  (after the cache folder is set)

__version__ = "0.1.0"
__all__ = ["Encoder", "load_encoder", "__version__"]
