"""examples/torchrl_ppo.py: TorchRL's `Collector`, `GAE` and `ClipPPOLoss` on `DrivingEnv`.

On one collected rollout, TorchRL's GAE advantages equal Pictura's `generalized_advantage` fed
the way `pictura.modules.PPO` feeds it (the next step's root value, the pre-reset observation's
value for truncated transitions), on every frame of an acting agent; and the example trains
at a tiny size."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import torch
from torchrl.collectors import Collector

from pictura.modules.gae import generalized_advantage

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torchrl_ppo.py"


def _example():
    spec = importlib.util.spec_from_file_location("torchrl_ppo_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_torchrl_gae_equals_picturas_on_one_rollout():
    example = _example()
    args = example.parse_args(["--rollout-steps", "10", "--episode-length", "6", "--seed", "1"])
    torch.manual_seed(args.seed)
    env = example.make_env(args)
    actor, critic = example.make_modules(env, args)
    frames = env.num_slots * args.rollout_steps
    collector = Collector(env, actor, frames_per_batch=frames, total_frames=frames, auto_register_policy_transforms=False)
    data = next(iter(collector))  # (S, T)
    collector.shutdown()
    gamma, lmbda = 0.99, 0.9
    data = example.torchrl_advantages(data, critic, gamma, lmbda)

    # Pictura's conventions, (T, S): V of the next root (the new episode's first observation
    # after a reset), the pre-reset observation's value bootstrapping truncated transitions
    value = data["state_value"].squeeze(-1).T
    next_root_value = torch.cat([value[1:], data["next", "state_value"][:, -1].squeeze(-1)[None]])
    next_root_valid = torch.cat([data["valid"].T[1:], data["next", "valid"][:, -1][None]])
    nxt = data["next"]
    advantage, returns = generalized_advantage(
        nxt["reward"].squeeze(-1).T, value, next_root_value, nxt["terminated"].squeeze(-1).T,
        nxt["truncated"].squeeze(-1).T, next_root_valid, gamma, lmbda,
        truncated_value=nxt["state_value"].squeeze(-1).T,
    )  # fmt: skip
    valid = data["valid"].T
    truncated = nxt["truncated"].squeeze(-1).T & valid
    assert truncated.sum() >= 4  # the worlds reset inside the rollout: the bootstrap is exercised
    assert not torch.equal(next_root_value[truncated], nxt["state_value"].squeeze(-1).T[truncated])
    ours, theirs = advantage[valid], data["advantage"].squeeze(-1).T[valid]
    assert torch.allclose(ours, theirs, rtol=1e-5, atol=1e-6), (ours - theirs).abs().max()
    assert torch.allclose(returns[valid], data["value_target"].squeeze(-1).T[valid], rtol=1e-5, atol=1e-6)


def test_the_example_trains_at_a_tiny_size():
    example = _example()
    history = example.train(example.parse_args(["--iterations", "1", "--rollout-steps", "6", "--epochs", "1"]))
    assert [h["iteration"] for h in history] == [1]
    assert all(math.isfinite(h["loss_objective"]) and math.isfinite(h["loss_critic"]) for h in history)
    assert 0 < history[0]["valid_fraction"] < 1  # empty slots are in the batch, masked out
