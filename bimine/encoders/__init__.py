"""Sentence encoders: the NumPy DAN (shipped default) and adapters for pretrained models."""

from bimine.encoders.base import Encoder
from bimine.encoders.registry import EncoderSpec, encoder_spec, load_encoder, register_encoder

__all__ = ["Encoder", "EncoderSpec", "encoder_spec", "load_encoder", "register_encoder"]
