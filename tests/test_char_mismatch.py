"""``benchmarks.char_mismatch``'s measure on hand-counted texts."""

from __future__ import annotations

from collections import Counter

import pytest

from benchmarks.char_mismatch import flagged, per_line


def test_flagged_characters_by_hand():
    # test: 1,000 characters, 10 of them U+02BB; train: 1,000 characters, 10 of them U+2018 and
    # 1 U+02BB; "a" at the same rate on both sides
    test = Counter({"a": 990, "\u02bb": 10})
    train = Counter({"a": 989, "\u2018": 10, "\u02bb": 1})
    got = flagged(test, train)
    # U+2018: 0 against 10 per mille (ratio 10.02 / 0.02); U+02BB: 10 against 1 (10.02 / 1.02 = 9.8)
    assert [c for c, _, _ in got] == ["\u2018", "\u02bb"]
    assert got[0][1:] == pytest.approx((0.0, 10.0))
    assert got[1][1:] == pytest.approx((10.0, 1.0))
    # a factor of 8 is needed: 10 against 2 per mille is not flagged; nor is a rare character
    assert flagged(Counter({"a": 990, "x": 10}), Counter({"a": 980, "x": 2, "b": 18})) == [
        ("b", 0.0, pytest.approx(18.0))]
    assert flagged(Counter({"a": 9999, "y": 1}), Counter({"a": 10000})) == []  # 0.1 per mille: under the floor


def test_zero_width_spaces_per_line():
    assert per_line(["a\u200bb\u200bc", "d\ufeffe", ""]) == 1.0
