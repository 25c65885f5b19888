"""Mining translation pairs: kNN both ways, margin scores, pair selection."""
