"""Building training data: sentence keys for decontamination, cleaning of translation catalogs."""
