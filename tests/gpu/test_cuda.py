"""The same env contract on a CUDA device: determinism per device and exact re-rendering.

CPU and GPU bits are not compared (different float contraction); each device must agree with
itself.
"""

from __future__ import annotations

import pytest
import torch

from pictura.envs import DrivingEnv
from pictura.envs.driving import stack_snapshots
from pictura.render import CameraRig
from pictura.sim import NUM_ACTIONS

pytestmark = pytest.mark.gpu


def cuda_env() -> DrivingEnv:
    return DrivingEnv(
        device="cuda",
        seed=0,
        maps=["procedural:seed=0,blocks_x=2,blocks_y=2"],
        num_worlds=4,
        slots_per_world=16,
        agents_per_world=(8, 16),
        rig=CameraRig(width=64, height=36),
    )


def rollout(env: DrivingEnv, steps: int = 40):
    gen = torch.Generator(device="cuda").manual_seed(0)
    td = env.reset()
    frames, boxes, snapshots, rewards = [], [], [], []
    for _ in range(steps):
        snapshots.append(env.snapshot())
        boxes.append(snapshots[-1]["agent_box"])
        frames.append(td["observation", "pixels"].clone())
        td["action"] = torch.randint(0, NUM_ACTIONS, (env.num_slots,), device="cuda", generator=gen)
        td = env.step(td)["next"]
        rewards.append(td["reward"].clone())
    return frames, boxes, rewards, snapshots


def test_cuda_rollout_is_deterministic():
    env = cuda_env()
    first, second = rollout(env)[:3], rollout(env)[:3]
    for a_list, b_list in zip(first, second, strict=True):
        assert all(torch.equal(a, b) for a, b in zip(a_list, b_list, strict=True))


def test_cuda_history_rerender_is_exact():
    env = cuda_env()
    frames, _, rewards, snapshots = rollout(env, steps=10)
    steps = torch.arange(10, device="cuda").repeat_interleave(env.num_slots)
    slots = torch.arange(env.num_slots, device="cuda").repeat(10)
    again = env.render_history(stack_snapshots(snapshots), steps, slots)
    assert torch.equal(again, torch.stack(frames).reshape(again.shape))
    assert torch.isfinite(torch.stack(rewards)).all()


def test_cuda_in_domain_evaluation_is_deterministic_with_its_standard_errors():
    """The in-domain protocol on CUDA twice with one seed: the same counters, the scenario
    moments behind the standard errors included (summed without atomics)."""
    from pictura.eval.metrics import ALL_COUNTERS, COUNTERS, summarize
    from pictura.eval.policies import random_policy
    from pictura.eval.protocols import build_in_domain_env, run_density

    def build(**kwargs):
        return DrivingEnv(rig=CameraRig(width=16, height=9), validate_actions=False, **kwargs)

    env = build_in_domain_env(build, 12, 4, 30, ["procedural:seed=0,blocks_x=2,blocks_y=2"], seed=3, device="cuda")
    first = run_density(env, random_policy(1), 6, 20, seed=5)
    second = run_density(env, random_policy(1), 6, 20, seed=5)
    assert first.shape == (len(ALL_COUNTERS),) and torch.equal(first, second)
    assert first[len(COUNTERS)] == 6  # six scenarios, two batches of four worlds
    assert "at_fault_collision_se" in summarize(first)
