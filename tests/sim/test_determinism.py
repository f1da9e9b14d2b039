"""A seeded rollout repeats bit for bit on the same device; another seed differs."""

from __future__ import annotations

import importlib

import numpy as np

from pictura.sim import reset, step
from pictura.sim.features import EVENT_COLLISION

from .conftest import loop_map, make_world, vehicle_config


def _rollout(seed: int, steps: int = 150) -> dict[str, np.ndarray]:
    cfg = vehicle_config(agents_per_world=(5, 20), episode_length=60)
    model, s0, s1, ctl = make_world([loop_map()], [0, 0], 20, cfg)
    reset(model, s0, seed)
    rng = np.random.default_rng(123)
    for _ in range(steps):
        ctl.action.assign(rng.integers(0, 12, model.num_slots).astype(np.int32))
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
    return s0.numpy()


def test_same_seed_same_rollout():
    a, b = _rollout(7), _rollout(7)
    assert a["world_episode"].max() >= 2  # the rollout went through masked resets
    for name in a:
        assert np.array_equal(a[name], b[name]), name


def test_other_seed_other_rollout():
    a, b = _rollout(7, steps=1), _rollout(8, steps=1)
    assert not np.array_equal(a["pos"], b["pos"])


def test_split_kernels_do_not_change_the_rollout(monkeypatch):
    """`contact_kernel` and `spawn_conflict_kernel` split over (slot / row, part) threads (the
    GPU split, forced on "cpu") give the one-part rollout bit for bit, resets included."""
    step_module = importlib.import_module("pictura.sim.step")

    def rollout(parts: tuple[int, int, int]) -> tuple[dict[str, np.ndarray], int]:
        monkeypatch.setattr(step_module, "_contact_parts", lambda model: parts)
        monkeypatch.setattr(step_module, "_conflict_parts", lambda model: parts[0])
        cfg = vehicle_config(agents_per_world=(15, 20), episode_length=60)
        model, s0, s1, ctl = make_world([loop_map()], [0, 0], 20, cfg)
        reset(model, s0, 3)
        rng = np.random.default_rng(5)
        collisions = 0
        for _ in range(80):
            ctl.action.assign(rng.integers(0, 12, model.num_slots).astype(np.int32))
            step(model, s0, ctl, s1)
            s0, s1 = s1, s0
            collisions += int(s0.events.numpy()[:, EVENT_COLLISION].sum())
        assert s0.world_episode.numpy().max() >= 1  # through masked resets
        return s0.numpy(), collisions

    (a, hits_a), (b, hits_b) = rollout((1, 1, 1)), rollout((3, 2, 3))
    assert hits_a > 0 and hits_a == hits_b
    for name in a:
        assert np.array_equal(a[name], b[name]), name
