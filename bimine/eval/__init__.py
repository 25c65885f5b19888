"""Evaluation: retrieval precision (P@N) and, later, mining and alignment metrics."""
