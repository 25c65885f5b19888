"""benchmarks.bigru_train's data step: several recipes pooled with repeats and dev lines dropped,
and a data folder that is never reused for other inputs."""

from __future__ import annotations

import gzip
import json
import os
import time

from benchmarks import bigru_train


def _recipe(root, name, rows):
    os.makedirs(root / name / "pairs")
    with gzip.open(root / name / "pairs" / "en-fr.tsv.gz", "wt", encoding="utf-8") as f:
        f.writelines(f"{a}\t{b}\n" for a, b in rows)
    return str(root / name)


def test_recipes_are_pooled_without_repeats_or_dev_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(bigru_train, "dev_lines", lambda: {"a held-out line."})
    a = _recipe(tmp_path, "a", [("One cat.", "Un chat."), ("Two dogs.", "Deux chiens."), (" ", "vide")])
    b = _recipe(tmp_path, "b", [("One cat.", "Un chat."), ("A held-out  LINE.", "Une ligne."), ("Red.", "Rouge.")])
    counts = bigru_train.build([a, b], 10, 0, str(tmp_path / "data"))
    assert counts["sources"] == {"a en-fr": 2, "b en-fr": 1}
    assert (counts["empty"], counts["repeated"], counts["dev_overlap"], counts["chosen"]) == (1, 1, 1, 3)
    en = (tmp_path / "data" / "train.en-fr.en").read_text().splitlines()
    fr = (tmp_path / "data" / "train.en-fr.fr").read_text().splitlines()
    assert sorted(zip(en, fr)) == [("One cat.", "Un chat."), ("Red.", "Rouge."), ("Two dogs.", "Deux chiens.")]
    assert json.loads((tmp_path / "data" / "train.json").read_text())["recipes"] == [a, b]


def test_the_data_folder_key_follows_the_pairs(tmp_path):
    a = _recipe(tmp_path, "a", [("One cat.", "Un chat.")])
    b = _recipe(tmp_path, "b", [("Two cats.", "Deux chats.")])
    key_a, key_b = bigru_train.inputs_key([a]), bigru_train.inputs_key([b])
    assert len({key_a, key_b, bigru_train.inputs_key([a, b]), bigru_train.inputs_key([b, a])}) == 4
    path = os.path.join(a, "pairs", "en-fr.tsv.gz")
    with open(path, "rb") as f:
        before = f.read()
    time.sleep(1.1)  # gzip stores the time: the archive's bytes change, its pairs do not
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("One cat.\tUn chat.\n")
    with open(path, "rb") as f:
        assert f.read() != before
    assert bigru_train.inputs_key([a]) == key_a  # a rebuilt recipe with the same pairs: reused
    with gzip.open(os.path.join(b, "pairs", "en-fr.tsv.gz"), "wt", encoding="utf-8") as f:
        f.write("Two cats.\tDeux chats.\nOne cat.\tUn chat.\n")
    assert bigru_train.inputs_key([b]) != key_b  # rebuilt with other pairs: a new folder
