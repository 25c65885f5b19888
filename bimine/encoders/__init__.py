"""Sentence encoders: the NumPy DAN (shipped default) and adapters for pretrained models."""

from bimine.encoders.base import Encoder, load_encoder

__all__ = ["Encoder", "load_encoder"]
