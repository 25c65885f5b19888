"""bimine: mine, align and filter parallel corpora with bilingual sentence encoders."""

from __future__ import annotations

from bimine.encoders.base import Encoder, load_encoder

__version__ = "0.1.0"
__all__ = ["Encoder", "load_encoder", "__version__"]
