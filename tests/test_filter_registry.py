"""The one table of filtering scores (bimine.filtering.registry): the lists read from it are the
ones the pipeline had written out before (the default pipeline's column order is part of the
output format), and each entry builds the score it names."""

import dataclasses

import pytest

from bimine.filtering.registry import (
    COMBINED_SCORES,
    FEATURES_WITHOUT_MODEL,
    SCORE_NAMES,
    SCORES,
    needs_model,
)


def test_lists_read_from_the_table():
    assert COMBINED_SCORES == ("cosine", "confidence", "margin", "cover", "punct", "menu", "sentences", "length_log",
                               "repeat", "lone_numbers")
    assert FEATURES_WITHOUT_MODEL == ("punct", "menu", "sentences", "length_log", "repeat", "lone_numbers")
    assert set(SCORE_NAMES) == set(COMBINED_SCORES) | {"classifier", "divergence", "rescore"}


def test_which_scores_load_the_model():
    assert {n for n in SCORE_NAMES if needs_model(n)} == {"cosine", "margin", "confidence", "rescore", "cover",
                                                          "classifier", "divergence"}
    assert {n for n in SCORE_NAMES if needs_model(n, no_model=True)} == {"cosine", "margin", "confidence", "rescore",
                                                                         "cover"}
    assert not needs_model(None) and not needs_model("no-such-score")


@pytest.mark.parametrize("name", SCORE_NAMES)
def test_each_entry_names_its_own_column(name):
    field = {f.name: f for f in dataclasses.fields(SCORES[name].cls)}["name"]
    assert field.default == (name if name != "classifier" else "")  # a classifier's column: its kind


def test_corpus_scores():
    assert {n for n, s in SCORES.items() if s.needs_corpus} == {"margin", "repeat", "rescore"}
