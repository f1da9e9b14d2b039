"""``python -m pictura validate|test --ckpt_path ...``: the in-domain evaluation of a checkpoint,
on the real simulator (a tiny procedural town, CPU)."""

import json

import pytest

from pictura.modules.cli import run_lightning_cli
from tests.modules.test_cli import HEAD, POLICY

CONFIG = HEAD.replace("version: v0", "version: fit") + """\
    - class_path: pictura.callbacks.DensitySweep
      init_args: {{every_n_iterations: 0, densities: [4, 6], scenarios: 2, steps: 6, seed: 3}}
model:
  class_path: pictura.modules.PPO
  init_args:
    env:
      class_path: pictura.envs.DrivingEnv
      init_args:
        maps: [procedural:seed=0]
        num_worlds: 2
        slots_per_world: 6
        agents_per_world: [3, 6]
        rig:
          class_path: pictura.render.CameraRig
          init_args: {{width: 32, height: 18}}""" + POLICY + """\
    rollout_steps: 4
    minibatch_size: 48
    max_iterations: 2
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("validate")
    config = root / "tiny.yaml"
    config.write_text(CONFIG.format(root=root))
    run_lightning_cli(["fit", "-c", str(config)])
    records = (root / "tiny" / "fit" / "eval" / "density_sweep.jsonl").read_text().splitlines()
    assert len(records) == 1  # fit runs no validation loop of its own (no sanity-check sweep)
    return root, config, json.loads(records[0])  # the sweep at the end of fit, of the final weights


@pytest.mark.parametrize("stage", ["validate", "test"])
def test_validate_and_test_evaluate_the_checkpoint(trained, stage):
    """The checkpoint's evaluation equals the one fit ran on the same weights at its end."""
    root, config, at_end_of_fit = trained
    ckpt = root / "tiny" / "fit" / "checkpoints" / "last.ckpt"
    cli = run_lightning_cli(
        [stage, "-c", str(config), f"--ckpt_path={ckpt}", f"--trainer.logger.init_args.version={stage}"]
    )
    prefix = {"validate": "val", "test": "test"}[stage]
    logged = {k: float(v) for k, v in cli.trainer.callback_metrics.items()}
    assert at_end_of_fit["iteration"] == 2
    for density in ("4", "6"):
        for name in ("goals", "offroad", "at_fault_collision", "episodes"):
            assert logged[f"{prefix}/eval/{density}/{name}"] == pytest.approx(
                at_end_of_fit["results"][density][name], abs=1e-6
            ), (density, name)
    record = json.loads((root / "tiny" / stage / "eval" / "density_sweep.jsonl").read_text())
    assert record["iteration"] == 2  # the checkpoint's iteration counter


def test_validate_shows_a_bar_per_density(trained, capsys):
    """Under validate the sweep is the whole run: it shows its scenarios' progress per density
    (with the trainer's progress bar on; fit never does, to keep Lightning's bar intact)."""
    root, config, _ = trained
    ckpt = root / "tiny" / "fit" / "checkpoints" / "last.ckpt"
    run_lightning_cli(["validate", "-c", str(config), f"--ckpt_path={ckpt}", "--trainer.enable_progress_bar=true",
                       "--trainer.logger.init_args.version=bar"])
    err = capsys.readouterr().err
    assert "eval @ 4 agents" in err and "eval @ 6 agents" in err and "2/2" in err


def test_validate_without_a_sweep_in_the_config_runs_the_default_one(trained, monkeypatch, tmp_path):
    """A config without a `DensitySweep` still evaluates under ``validate``: the CLI adds the
    default sweep (here one made small, so the test stays quick)."""
    import pictura.modules.cli as cli_module
    from pictura.callbacks import DensitySweep

    class SmallDefault(DensitySweep):
        def __init__(self):
            super().__init__(every_n_iterations=0, densities=[4], scenarios=1, steps=3, seed=3, plot=False)

    monkeypatch.setattr(cli_module, "DensitySweep", SmallDefault)
    root, _, _ = trained
    ckpt = root / "tiny" / "fit" / "checkpoints" / "last.ckpt"
    lines = CONFIG.format(root=tmp_path).splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "pictura.callbacks.DensitySweep" in line)
    bare = tmp_path / "no_sweep.yaml"
    bare.write_text("".join(lines[:at] + lines[at + 2:]))
    cli = run_lightning_cli(["validate", "-c", str(bare), f"--ckpt_path={ckpt}"])
    assert [type(c) for c in cli.trainer.callbacks if isinstance(c, DensitySweep)] == [SmallDefault]
    logged = {k: float(v) for k, v in cli.trainer.callback_metrics.items()}
    assert logged["val/eval/4/episodes"] >= 1
    assert 0.0 <= logged["val/eval/4/goals"]
