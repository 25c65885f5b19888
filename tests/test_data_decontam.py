"""Decontamination keys equal the held-out lists' own definition; listed pairs are dropped and counted."""

from __future__ import annotations

import gzip
import importlib.util

import pytest

from bimine.data.decontam import DecontamReport, HeldOutKeys, normalize_for_key, sentence_key

SAMPLES = ["The cat sleeps.", "  Ｔｈｅ  ＣＡＴ sleeps!!", "Straße – „Grüße“", "l'été dernier…", "東京は晴れです。",
           "٣ كتب", "a\u200bb\u00adc d\te", "ﬁnancial ©2024 ™", "Ελληνικά; τέλος", "x", ""]


def test_normalisation_by_hand():
    assert normalize_for_key("  Ｔｈｅ  ＣＡＴ sleeps!!") == "thecatsleeps"
    assert normalize_for_key("Straße – „Grüße“") == "strassegrüsse"
    assert sentence_key("The cat sleeps.") == sentence_key("the CAT   sleeps")


def test_keys_equal_the_reference_definition(shared_data):
    path = shared_data / "decontam" / "normalize.py"
    spec = importlib.util.spec_from_file_location("reference_normalize", path)
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    for s in SAMPLES:
        assert normalize_for_key(s) == ref.norm(s), s
        assert sentence_key(s) == ref.key(s), s


def test_filter_drops_pairs_with_a_listed_side_and_counts_them(tmp_path):
    listed = ["The cat sleeps on the sofa.", "Le chien mange du pain."]
    keys = tmp_path / "keys.txt.gz"
    with gzip.open(keys, "wt") as f:
        f.write("".join(sentence_key(s) + "\n" for s in listed) + sentence_key("abc") + "\n")
    h = HeldOutKeys.load(str(keys))
    pairs = [("the cat sleeps on the sofa", "Le chat dort sur le canapé."),  # source listed (up to case/punct.)
             ("A dog.", "Le chien mange du pain !"),  # target listed
             ("A bird sings.", "Un oiseau chante."),
             ("abc", "abc")]  # shorter than 4 characters: never dropped, even if its key is listed
    rep = DecontamReport()
    kept = list(h.filter_pairs(pairs, rep, batch=3))
    assert kept == [("A bird sings.", "Un oiseau chante."), ("abc", "abc")]
    assert (rep.pairs, rep.dropped) == (4, 2)


def test_bad_key_file_is_a_clear_error(tmp_path):
    from bimine.errors import InputError

    p = tmp_path / "k.txt"
    p.write_text("not-a-key\n")
    with pytest.raises(InputError, match="hexadecimal key"):
        HeldOutKeys.load(str(p))


def test_real_key_list_loads(shared_data):
    h = HeldOutKeys.load(str(shared_data / "decontam" / "holdout-keys.txt.gz"))
    assert len(h) > 500_000


def test_batch_normalisation_equals_one_by_one():
    """normalize_many (NumPy removal over a batch) equals normalize_for_key on each string:
    the samples, empty strings, every code point below 0x3000 in runs, and a lone surrogate."""
    import numpy as np

    from bimine.data.decontam import normalize_for_key, normalize_many

    rng = np.random.default_rng(0)
    cps = [c for c in range(0x3000) if not 0xD800 <= c < 0xE000]
    runs = ["".join(map(chr, cps[i : i + 37])) for i in range(0, len(cps), 37)]
    mixed = ["".join(rng.choice(SAMPLES + runs, size=3)) for _ in range(200)]
    texts = SAMPLES + ["", " ", "\t\n"] + runs + mixed
    assert normalize_many(texts) == [normalize_for_key(t) for t in texts]
    odd = ["ok \udcff text", "fine"]
    assert normalize_many(odd) == [normalize_for_key(t) for t in odd]
    assert normalize_many([]) == []
