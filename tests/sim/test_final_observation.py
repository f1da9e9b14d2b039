"""``final_*``: the snapshot and observations a truncated slot had before its world reset
(PPO bootstraps a truncated slot from them)."""

from __future__ import annotations

import numpy as np

from pictura.sim import SimConfig, reset, step

from .conftest import loop_map, make_world

FINAL = ("agent_box", "light_state", "obs_ego", "obs_ego_aux", "obs_goals", "obs_conditioning")


def _copy(state) -> dict[str, np.ndarray]:
    return {k: v.copy() for k, v in state.numpy().items()}  # on "cpu" numpy() is a view


def _run(episode_length: int, steps: int) -> list[dict[str, np.ndarray]]:
    cfg = SimConfig(agents_per_world=(5, 20), episode_length=episode_length, parked_per_world=4)
    model, s0, s1, ctl = make_world([loop_map()], [0, 0, 0], 20, cfg)
    reset(model, s0, 3)
    rng = np.random.default_rng(5)
    out = [_copy(s0)]
    for _ in range(steps):
        ctl.action.assign(rng.integers(0, 12, model.num_slots).astype(np.int32))
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        out.append(_copy(s0))
    return out


def test_final_arrays_hold_the_state_before_the_reset():
    # run A resets every world at step 6; run B (longer episodes) is the same rollout without
    # that reset, so A's final_* at step 6 must be B's regular arrays bit for bit
    a, b = _run(6, 8), _run(60, 8)
    for name in FINAL:
        assert np.array_equal(a[0]["final_" + name], a[0][name]), name  # after reset()
    for t in range(1, 6):
        for name in FINAL:
            assert np.array_equal(a[t][name], b[t][name]), (t, name)
    at, bt = a[6], b[6]
    assert np.all(at["world_reset"] == 1) and np.all(bt["world_reset"] == 0)
    truncated = at["truncated"] == 1
    assert truncated.sum() > 10
    for name in FINAL:
        assert np.array_equal(at["final_" + name], bt[name]), name
        assert not np.array_equal(at["final_" + name], at[name]), name  # the reset changed them
    # a truncated slot's final box is its pose after the step, before the respawn
    assert np.all(at["final_agent_box"][: len(truncated)][truncated, 7] >= 0)
    # in steps without a reset the final arrays equal the regular ones
    for name in FINAL:
        assert np.array_equal(a[7]["final_" + name], a[7][name]), name
