"""Reading corpora and turning sentences into hashed n-gram features."""

from bimine.text.io import read_lines, read_parallel

__all__ = ["read_lines", "read_parallel"]
