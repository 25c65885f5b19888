"""The pair scorers, below every job that uses them (docs/architecture.md): margins, the
calibrated confidence head, the rescorer (trees, cross-encoders), the divergence models and
their word aligner, and the trained pair classifiers. ``mine --rescore``, ``filter``,
``score``, ``divergence``, ``select`` and ``docs match`` take them from here."""
