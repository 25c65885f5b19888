"""The DAN's output bytes do not depend on the number of threads (issue 13: a Ray task given one
CPU must write the same store as a local run on all cores)."""

from pathlib import Path

import numpy as np
import pytest

from bimine.encoders import load_encoder
from bimine.encoders.dan import SLICE_ROWS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sentences():
    lines = (ROOT / "examples" / "sample.en").read_text(encoding="utf-8").splitlines()
    # several slices and a partial last one: variants of the sample's lines
    out = [f"{s} ({i})" if i else s for i in range(4) for s in lines]
    assert len(out) > 2 * SLICE_ROWS and len(out) % SLICE_ROWS
    return out


def test_threads_do_not_change_the_bytes(sentences):
    ref = load_encoder("default", threads=1).encode(sentences, "en")
    for t in (2, 3):
        got = load_encoder("default", threads=t).encode(sentences, "en")
        assert got.tobytes() == ref.tobytes(), f"{t} threads give other bytes than 1"


def test_rows_equal_the_numpy_reference_closely(sentences):
    # the compiled path and the NumPy reference compute the same sums (BLAS shapes differ, so
    # only the last bits may differ): a check that the fixed slicing keeps every row in place
    a = load_encoder("default", threads=2).encode(sentences, "en")
    b = load_encoder("default", backend="numpy").encode(sentences, "en")
    np.testing.assert_allclose(a, b, atol=2e-6)
