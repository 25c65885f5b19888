"""``bimine train``: train a DAN dual encoder from a YAML config."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import logging
import os

import click

from bimine.cli.group import cli


def is_run_folder(folder: str) -> bool:
    """Whether ``folder`` holds an earlier ``bimine train`` run: a checkpoint, or the config.yaml
    a run writes first (a run killed before its first checkpoint leaves only that, and the same
    command then starts it afresh), read as a training config (data and train sections)."""
    import yaml

    if any(os.path.exists(os.path.join(folder, name)) for name in ("checkpoint", "checkpoint.old")):
        return True
    try:
        with open(os.path.join(folder, "config.yaml"), encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and {"data", "train"} <= set(data)


def check_run_folder(output: str) -> None:
    """Refuse ``-o`` an existing folder that holds other files and no earlier run: the run would
    write its checkpoints, log.jsonl, config.yaml and model/ among them (``-o examples``)."""
    from bimine.errors import ConfigError

    if not os.path.isdir(output):
        return
    entries = sorted(os.listdir(output))
    if not entries or is_run_folder(output):
        return
    shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3:,} more" if len(entries) > 3 else "")
    raise ConfigError(f"-o/--output {output}: is a folder that holds other files ({shown}) and no earlier "
                      "'bimine train' run; a run writes its checkpoints, log.jsonl, config.yaml and model/ there: give "
                      "a new or empty folder (e.g. runs/my-model)")


@cli.command()
@click.option(
    "-c",
    "--config",
    "config_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="YAML config (see configs/example.yaml, configs/default.yaml; 'encoder: transformer' for paper 001's "
         "transformer, configs/transformer.yaml); relative data paths start at data.root.",
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(),
    help="Run folder: checkpoints, log.jsonl, and the exported model in OUTPUT/model.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config value, e.g. --set loss.margin=0 --set train.steps=500.",
)
@click.option("--resume", is_flag=True,
              help="Continue the run in OUTPUT from its last checkpoint (an error if OUTPUT holds none).")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def train(config_path: str, output: str, overrides: tuple[str, ...], resume: bool, no_progress: bool) -> None:
    """Train a sentence encoder on parallel data (needs the 'train' extra: PyTorch): a DAN
    (paper 000) or, with 'encoder: transformer' in the config, paper 001's transformer.

    Writes the model as OUTPUT/model/{config.json,model.safetensors}, usable as --model OUTPUT/model.
    """
    try:
        import torch  # noqa: F401
    except ImportError:
        raise click.ClickException(
            "training needs PyTorch: pip install torch==2.13.0 'bimine[train]'"
        ) from None
    from bimine.config import apply_overrides, load_yaml
    from bimine.outputs import check_output_dir
    from bimine.training.trainer import Trainer, load_train_config

    logging.getLogger("bimine").setLevel(logging.INFO)
    check_output_dir(output, inputs=(config_path,))
    check_run_folder(output)
    data = apply_overrides(load_yaml(config_path), list(overrides))
    # the whole config (keys, types, values, language codes, corpus files) and the run folder
    # are checked here and at the start of fit(), before any data is read
    cfg = load_train_config(data, os.path.dirname(os.path.abspath(config_path)))
    path = Trainer(cfg, output).fit(resume=resume, progress=not no_progress)
    click.echo(f"model written to {path}")
