"""The model card's tables come from the model's training record, the recipe manifest and xsim results."""

from __future__ import annotations

from benchmarks.model_card import tables


def test_tables_from_records():
    cfg = {"training": {"languages": {"ru": 5000, "fr": 9000}}}
    manifest = {
        "sources": {"firefox": {"description": "Firefox packs", "license_note": "MPL-2.0", "pairs": 11000},
                    "bible": {"description": "Bible", "license_note": "PD", "pairs": 3000}},
        "languages": {"fr": {"pairs": 9000, "sources": {"firefox": 8000, "bible": 1000}},
                      "ru": {"pairs": 5000, "sources": {"firefox": 3000, "bible": 2000}}},
    }
    xsim = {"results": {"m": {"ntrex": {"rus": {"lang": "ru", "mean": 12.34}, "fra-CA": {"lang": "fr", "mean": 2.0},
                                        "fra": {"lang": "fr", "mean": 4.84}},
                              "pud": {"fr": {"lang": "fr", "mean": 3.0}}}}}
    md = tables(cfg, manifest, xsim).splitlines()
    assert md[2] == "| firefox | Firefox packs | MPL-2.0 | 11,000 |"
    assert md[3] == "| bible | Bible | PD | 3,000 |"
    # a language with several sets shows each of them, named
    assert md[7] == "| French | fr | 9,000 | 9,000 | firefox 8,000, bible 1,000 | 2.0 (fra-CA) / 4.8 (fra) | 3.0 |"
    assert md[8] == "| Russian | ru | 5,000 | 5,000 | firefox 3,000, bible 2,000 | 12.3 | - |"
