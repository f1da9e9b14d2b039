"""Every shipped config instantiates and runs one PPO iteration on the real env, on CPU.

The three agents of the paper (Alberti, Vectorized, Vectorized-blind) must train from the same
recipe by changing only the observation and encoder sections; this runs each through the CLI
with the CPU overlay shrunk further so the test stays fast.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest

from pictura.modules.cli import run_lightning_cli

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
AGENT_CONFIGS = ("alberti.yaml", "vectorized.yaml", "vectorized_blind.yaml")


def shrink(root: Path) -> list[str]:
    return [
        "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false",
        f"--trainer.default_root_dir={root}",
        f"--trainer.logger.init_args.save_dir={root}",
        "--model.init_args.env.init_args.num_worlds=1",
        "--model.init_args.env.init_args.slots_per_world=8",
        "--model.init_args.env.init_args.agents_per_world=[4, 8]",
        "--model.init_args.env.init_args.block_slots=8",  # one block of up to 2 worlds (the configs pack)
        "--model.init_args.env.init_args.worlds_per_block=2",
        "--model.init_args.env.init_args.rig.init_args.width=32",
        "--model.init_args.env.init_args.rig.init_args.height=18",
        "--model.init_args.rollout_steps=4",
        "--model.init_args.minibatch_size=16",
        "--model.init_args.max_iterations=1",
    ]


@pytest.mark.parametrize("config", AGENT_CONFIGS)
def test_config_runs_one_iteration_on_cpu(config, tmp_path):
    argv = ["fit", "-c", str(CONFIGS / config), "-c", str(CONFIGS / "cpu.yaml"), *shrink(tmp_path)]
    cli = run_lightning_cli(argv)
    assert int(cli.model.iteration) == 1
    events = glob.glob(os.path.join(tmp_path, "**", "events.out.tfevents.*"), recursive=True)
    assert events, "no TensorBoard event file written"
    assert glob.glob(os.path.join(tmp_path, "**", "*.ckpt"), recursive=True), "no checkpoint written"


@pytest.mark.parametrize("config", AGENT_CONFIGS)
def test_agent_configs_differ_only_in_observation_and_policy(config):
    """Strip the observation and policy sections and the run name each agent logs under: what
    is left (precision included: Table 5's FP32 for all three) must equal alberti.yaml's."""
    import yaml

    def core(name: str) -> dict:
        cfg = yaml.safe_load((CONFIGS / name).read_text())
        cfg["trainer"]["logger"]["init_args"].pop("name")
        init = cfg["model"]["init_args"]
        init["env"]["init_args"].pop("observation", None)
        init.pop("policy")
        init.pop("compile_policy", None)  # on where it pays (the vectorized policy), docs/training.md
        return cfg

    assert core(config) == core("alberti.yaml")


@pytest.mark.parametrize("config", AGENT_CONFIGS)
def test_full_config_print_config_round_trips(config, tmp_path, capsys):
    """The GPU-sized configs (CARLA towns, DensitySweep, Table 5) parse, and the printed
    config parses again to the same text (nothing is instantiated)."""
    with pytest.raises(SystemExit) as exit_info:
        run_lightning_cli(["fit", "-c", str(CONFIGS / config), "--print_config"])
    assert exit_info.value.code in (0, None)
    printed = capsys.readouterr().out
    again = tmp_path / "printed.yaml"
    again.write_text(printed)
    with pytest.raises(SystemExit):
        run_lightning_cli(["fit", "-c", str(again), "--print_config"])
    assert capsys.readouterr().out == printed


@pytest.mark.parametrize(
    ("config", "overlay"),
    (("alberti.yaml", "learning_curve.yaml"), ("vectorized.yaml", "learning_curve_vectorized.yaml"),
     ("alberti.yaml", "procedural.yaml"), ("vectorized.yaml", "position_gain.yaml"),
     ("vectorized_blind.yaml", "position_gain.yaml"), ("alberti.yaml", "narrow_sweeps.yaml"),
     ("vectorized.yaml", "narrow_sweeps.yaml")),
)
def test_overlays_parse_on_the_agent_configs(config, overlay, capsys):
    """The GPU overlays compose with the full config (nothing is instantiated)."""
    with pytest.raises(SystemExit) as exit_info:
        run_lightning_cli(["fit", "-c", str(CONFIGS / config), "-c", str(CONFIGS / overlay), "--print_config"])
    assert exit_info.value.code in (0, None)
    printed = capsys.readouterr().out
    if overlay == "position_gain.yaml":
        assert "partner_position_gain: 10.0" in printed and "map_position_gain: 10.0" in printed
    elif overlay == "narrow_sweeps.yaml":  # one sampled sweep of 64 scenarios, nothing else evaluates
        assert printed.count("class_path: pictura.callbacks.DensitySweep") == 1
        assert "scenarios: 64" in printed and "actions: sample" in printed and "CameraVideo" not in printed
    elif overlay.startswith("learning_curve"):
        assert "at_start: true" in printed and "max_time: 00:00:07:00" in printed
        assert "actions: sample" in printed and "actions: argmax" in printed
        assert "minibatch_size: 8192" in printed
    else:
        assert "procedural:seed=7" in printed and "carla:" not in printed


def test_config_file_overrides_simulator_settings(tmp_path):
    """A `sim:` block in a config file reaches the env's SimConfig (it once failed to parse:
    jsonargparse could not serialise the conditioning table's default instances)."""
    overlay = tmp_path / "sim.yaml"
    overlay.write_text(
        "model:\n  init_args:\n    env:\n      init_args:\n        sim:\n"
        "          episode_length: 100\n          goal_spacing_m: [10.0, 30.0]\n"
    )
    argv = ["fit", "-c", str(CONFIGS / "alberti.yaml"), "-c", str(CONFIGS / "cpu.yaml"), "-c", str(overlay)]
    cli = run_lightning_cli([*argv, f"--trainer.default_root_dir={tmp_path}"], run=False)
    sim = cli.model.env_factory.keywords["sim"]
    assert (sim.episode_length, sim.goal_spacing_m) == (100, (10.0, 30.0))
    assert sim.pedestrian_fraction == 0.1  # the rest keeps its defaults


def test_config_file_sets_one_reward_coefficient_by_name(tmp_path):
    overlay = tmp_path / "reward.yaml"
    overlay.write_text(
        "model:\n  init_args:\n    env:\n      init_args:\n        sim:\n"
        "          collision_speed_weight: 0.2\n"
        "          conditioning:\n            alpha_collision: {low: 0.5, high: 2.0}\n"
    )
    argv = ["fit", "-c", str(CONFIGS / "alberti.yaml"), "-c", str(CONFIGS / "cpu.yaml"), "-c", str(overlay)]
    cli = run_lightning_cli([*argv, f"--trainer.default_root_dir={tmp_path}"], run=False)
    sim = cli.model.env_factory.keywords["sim"]
    rows = {c.name: (c.low, c.high) for c in sim.conditioning}
    assert rows["alpha_collision"] == (0.5, 2.0) and rows["alpha_offroad"] == (0.0, 3.0)
    assert sim.collision_speed_weight == 0.2
