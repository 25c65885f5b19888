"""Defaults of the training commands that their options show in ``--help``: plain constants, so
that a command can read them without loading the training code."""

#: Below this dev ROC-AUC a trained pair classifier is refused (0.5 is chance): it learnt nothing,
#: most often because the two sides are not translations line by line (shuffled, out of step).
MIN_DEV_AUC = 0.6
