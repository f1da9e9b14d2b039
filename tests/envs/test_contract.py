"""`pictura.envs.contract.TrainingEnv`: the envs PPO trains on define every method it declares,
with the same parameters, and PPO touches no other env method."""

import ast
import inspect
from pathlib import Path

import pytest

from pictura.envs import DrivingEnv
from pictura.envs.contract import TrainingEnv
from pictura.modules import ppo
from tests.modules.fake_env import FakeDrivingEnv

METHODS = sorted(
    name for name, value in vars(TrainingEnv).items() if not name.startswith("_") and inspect.isfunction(value)
)
ATTRIBUTES = sorted(TrainingEnv.__annotations__) + ["num_slots"]


def _parameters(function) -> list[str]:
    return [p for p in inspect.signature(function).parameters if p not in ("args", "kwargs")]


@pytest.mark.parametrize("env_class", [DrivingEnv, FakeDrivingEnv])
@pytest.mark.parametrize("name", METHODS)
def test_env_defines_the_declared_method(env_class, name):
    assert _parameters(getattr(env_class, name))[: len(_parameters(getattr(TrainingEnv, name)))] == _parameters(
        getattr(TrainingEnv, name)
    )


def test_ppo_uses_only_declared_env_members():
    """Every ``self.env.<name>`` / ``env.<name>`` PPO reads or writes is part of the contract."""
    tree = ast.parse(Path(ppo.__file__).read_text())
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            owner = node.value
            if (isinstance(owner, ast.Name) and owner.id == "env") or (
                isinstance(owner, ast.Attribute) and owner.attr == "env" and isinstance(owner.value, ast.Name)
                and owner.value.id == "self"
            ):
                used.add(node.attr)
    assert "render_history" in used and "phase_clock" in used  # the walk finds PPO's env calls
    assert used <= set(METHODS) | set(ATTRIBUTES), sorted(used - set(METHODS) - set(ATTRIBUTES))
