"""Documents: sentence alignment inside document pairs (``align``); document matching and
document embeddings follow (issue 11)."""
