"""``python -m pictura fit ...`` with a bad value, option, config file, checkpoint or policy:
one line naming it on stderr, exit code 2, no run folder left behind; ``--debug`` re-raises."""

from __future__ import annotations

import os

import pytest
import torch

from pictura.cli import main
from tests.modules.test_cli import TINY


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    path = root / "tiny.yaml"
    path.write_text(TINY.format(root=root))
    return path


def _error(capsys, *args) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(["fit", *args])
    assert exit_info.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(lines) == 1
    return lines[0]


@pytest.mark.parametrize(
    "option, named",
    [
        ("--model.init_args.minibatch_size=0", "minibatch_size must be >= 1, got 0"),
        ("--model.init_args.gamma=2", "gamma and gae_lambda must be in [0, 1]"),
        ("--model.init_args.rollout_steps=abc", "rollout_steps: Expected a <class 'int'>"),
        ("--model.init_args.rollout_stepz=3", "Option 'rollout_stepz' is not accepted"),
        ("--trainer.max_epoch=3", "unrecognized arguments: --trainer.max_epoch=3"),  # no abbreviations
        ("--model.init_args.policy=torch.nn.Linear", "Linear lacks the constructor argument(s) observation_spec, num_actions"),
    ],
)
def test_a_bad_option_is_one_line_naming_it(capsys, config, option, named):
    assert named in _error(capsys, "-c", str(config), option)


def test_a_malformed_config_file_is_named_with_its_line(capsys, config, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  init_args:\n    rollout_steps: 3\n   bad: [1\n")
    assert f"config file {bad}, line 4" in _error(capsys, "-c", str(config), "-c", str(bad))
    assert "no such file" in _error(capsys, "-c", str(tmp_path / "missing.yaml"))


def test_a_corrupt_or_foreign_checkpoint_is_named(capsys, config, tmp_path):
    corrupt = tmp_path / "random.ckpt"
    corrupt.write_bytes(bytes(range(256)) * 2)
    assert "not a readable PyTorch checkpoint" in _error(capsys, "-c", str(config), f"--ckpt_path={corrupt}")
    foreign = tmp_path / "weights.pt"
    torch.save({"weight": torch.zeros(2)}, foreign)
    assert "not a Pictura training checkpoint" in _error(capsys, "-c", str(config), f"--ckpt_path={foreign}")


def test_a_setup_error_leaves_no_run_folder_and_debug_shows_the_traceback(capsys, config):
    bad = "--model.init_args.env.init_args.agents_per_world=[2, 9]"  # the env is built in setup
    version = "--trainer.logger.init_args.version=never_started"
    assert "FakeDrivingEnv: agents_per_world must satisfy" in _error(capsys, "-c", str(config), bad, version)
    assert not os.path.exists(config.parent / "tiny" / "never_started")
    with pytest.raises(ValueError, match="agents_per_world"):
        main(["fit", "-c", str(config), bad, version, "--debug"])
