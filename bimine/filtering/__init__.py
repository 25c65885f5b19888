"""Filtering noisy parallel corpora (papers 002, 003): rules, language identification,
embedding and margin scores, trained pair classifiers, score combination and selection."""
