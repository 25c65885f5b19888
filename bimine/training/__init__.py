"""Training of dual encoders (needs the ``train`` extra: PyTorch)."""
