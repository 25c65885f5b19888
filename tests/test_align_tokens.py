"""Shared numbers and names in the two-pass search (bimine.documents.tokens, issue 44)."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.documents.align import _layer_starts
from bimine.documents.beads import AlignConfig
from bimine.documents.tokens import candidates, shared_token_bits


class _Ov:
    """The parts of an Overlaps that shared_token_bits reads."""

    def __init__(self, n: int, k: int) -> None:
        self.n, self.start = n, _layer_starts(n, k)
        self.vectors = np.zeros((sum(max(n - s + 1, 0) for s in range(1, k + 1)), 1))

    @property
    def k(self) -> int:
        return len(self.start)


def _members(row: np.ndarray, bit: dict[str, int]) -> set[str]:
    return {t for t, b in bit.items() if int(row[b // 64]) >> (b % 64) & 1}


def test_candidates_are_numbers_and_capitalised_words():
    got = candidates("Im Mai 1956 war die « Abinger Expedition » (Nr. 293, S. 340-343) unter Mrs. Joyce, 1956")
    assert list(got) == ["mai", "1956", "abinger", "expedition", "293", "340", "343", "mrs", "joyce"]
    assert list(candidates("le 7 juillet")) == ["7"]
    assert not candidates("")


def test_shared_tokens_per_run_and_the_document_frequency_cap():
    src = ["Lombard 1952 Berg", "Zimmermann", "1952 Tal", "Pugh"]
    tgt = ["Lombard 1952", "montagne Zimmermann", "1952", "Hagen"]
    so, to = _Ov(len(src), 2), _Ov(len(tgt), 2)
    xs, xt = shared_token_bits(src, tgt, so, to)
    # shared: tokens of both documents, bits in their order in the source (lombard, 1952, zimmermann)
    bit = {"lombard": 0, "1952": 1, "zimmermann": 2}
    assert [_members(xs[i], bit) for i in range(4)] == [{"1952", "lombard"}, {"zimmermann"}, {"1952"}, set()]
    assert [_members(xt[j], bit) for j in range(4)] == [{"1952", "lombard"}, {"zimmermann"}, {"1952"}, set()]
    # layer 2: the run of sentences 1..2 holds the union of both
    assert _members(xs[so.start[1] + 1], bit) == {"zimmermann", "1952"}
    assert not xs[:, 1:].any()  # three tokens: bits of the first word only
    # 1952 is in two sentences of each side: a cap of 1 leaves it out (lombard, zimmermann -> bits 0, 1)
    ys, yt = shared_token_bits(src, tgt, so, to, max_df=1)
    bit1 = {"lombard": 0, "zimmermann": 1}
    assert [_members(ys[i], bit1) for i in range(4)] == [{"lombard"}, {"zimmermann"}, set(), set()]


def test_more_shared_tokens_than_bits_wrap_around():
    src = [f"Name{i}" for i in range(600)]
    so = _Ov(600, 1)
    xs, xt = shared_token_bits(src, list(src), so, so, words=8)
    assert xs.shape == (600, 8) and (xs == xt).all()
    # 600 tokens in 512 bits: each row holds exactly one bit, and only tokens 512 lines apart share one
    assert all(sum(bin(int(w)).count("1") for w in r) == 1 for r in xs)
    rows = [tuple(int(w) for w in r) for r in xs]
    assert rows[0] == rows[512] and rows[87] == rows[599]
    assert len(set(rows[:512])) == 512 and len(set(rows[88:600])) == 512


def test_token_options_are_checked():
    with pytest.raises(Exception, match="token_weight"):
        AlignConfig(token_weight=-0.1)
    with pytest.raises(Exception, match="token_max_df"):
        AlignConfig(token_max_df=-1)


def test_popcount_and_token_counts_against_python():
    from bimine.documents._twopass_kernel import _popcount, token_counts

    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**63, size=(5, 8), dtype=np.uint64) | np.uint64(1 << 63)
    b = rng.integers(0, 2**63, size=(5, 8), dtype=np.uint64)
    for v in list(a[0]) + [np.uint64(0), np.uint64(2**64 - 1)]:
        assert _popcount(np.uint64(v)) == bin(int(v)).count("1")
    for i in range(5):
        x = sum(int(w) << (64 * k) for k, w in enumerate(a[i]))
        y = sum(int(w) << (64 * k) for k, w in enumerate(b[i]))
        assert token_counts(a, i, b, i) == (bin(x & y).count("1"), bin(x ^ y).count("1"))


def test_attach_shared_tokens_only_for_the_two_pass_search_that_reads_them():
    from bimine.documents.tokens import attach_shared_tokens

    src, tgt = ["Lombard 1952", "Pugh"], ["Lombard 1952", "Hagen"]
    so, to = _Ov(2, 2), _Ov(2, 2)
    attach_shared_tokens(src, tgt, so, to, AlignConfig(method="two-pass"))
    assert so.tokens.shape == (3, 8) and int(so.tokens[0, 0]) == 0b11 and int(to.tokens[1, 0]) == 0
    for cfg in (AlignConfig(method="two-pass", token_weight=0.0), AlignConfig(method="vecalign")):
        attach_shared_tokens(src, tgt, so, to, cfg)
        assert so.tokens is None and to.tokens is None
