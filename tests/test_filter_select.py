"""Score combination (002 Eq. 3-4) and selection on hand-computed scores."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.errors import ConfigError
from bimine.filtering.select import (
    combine_scores,
    minmax,
    rank,
    select_budget,
    select_fraction,
    select_threshold,
)


def test_minmax_by_hand():
    np.testing.assert_allclose(minmax(np.array([2.0, 4.0, 3.0])), [0.0, 1.0, 0.5])
    np.testing.assert_allclose(minmax(np.array([5.0, 5.0])), [0.0, 0.0])
    out = minmax(np.array([1.0, np.nan, 3.0]))
    assert out[0] == 0 and np.isnan(out[1]) and out[2] == 1


def test_combination_sum_and_normalised_sum():
    a = np.array([0.9, 0.5, 0.1])      # e.g. a cosine
    b = np.array([1.30, 1.10, 1.00])   # e.g. a margin
    np.testing.assert_allclose(combine_scores([a, b]), [2.2, 1.6, 1.1])
    # Eq. 4 first: a -> [1, 0.5, 0], b -> [1, 1/3, 0]
    np.testing.assert_allclose(combine_scores([a, b], normalize=True), [2.0, 0.5 + 1 / 3, 0.0])
    np.testing.assert_allclose(combine_scores([np.array([1.0, np.nan])]), [1.0, 0.0])
    with pytest.raises(ConfigError):
        combine_scores([])


def test_rank_breaks_ties_by_input_order_and_puts_nan_last():
    assert rank(np.array([0.5, np.nan, 0.9, 0.5, 0.9])).tolist() == [2, 4, 0, 3, 1]


def test_threshold_fraction_budget():
    s = np.array([0.2, 0.9, 0.5, 0.7, np.nan])
    assert select_threshold(s, 0.5).tolist() == [False, True, True, True, False]
    assert select_fraction(s, 0.4).tolist() == [False, True, False, True, False]  # round(0.4 * 5) = 2
    assert select_fraction(s, 0.5, eligible=np.array([1, 0, 1, 1, 1], bool)).tolist() == \
        [False, False, True, True, False]  # 2 of the 4 eligible: 0.7 then 0.5
    tokens = np.array([10, 4, 3, 5, 1])
    # ranked 0.9 (4), 0.7 (5), 0.5 (3): 4 + 5 = 9 <= 10; +3 would be 12 > 10: stop
    assert select_budget(s, tokens, 10).tolist() == [False, True, False, True, False]
    assert select_budget(s, tokens, 12).tolist() == [False, True, True, True, False]
    assert not select_budget(s, tokens, 3).any()  # the best pair alone is over budget
    with pytest.raises(ConfigError):
        select_fraction(s, 1.5)
