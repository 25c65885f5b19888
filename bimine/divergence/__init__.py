"""Semantic divergence detection (paper 004): word alignment, synthetic supervision, models."""
