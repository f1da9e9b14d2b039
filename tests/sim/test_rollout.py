"""Long random rollouts: no NaN, the step's bookkeeping holds, and lane association matches a
brute-force NumPy search (no grid)."""

from __future__ import annotations

import numpy as np

from pictura.sim import EVENTS, reset, step
from pictura.sim.snapshot import BOX_INVALID, BoxView

from .conftest import loop_map, make_world, vehicle_config, wrap


def _np_associate(road, pos, heading, current):
    """REFERENCE.md lane association over every lane segment: (lane or -1, offset, error)."""
    seg, owner = road.lane_segments()
    a, b = seg[:, 0].astype(np.float64), seg[:, 1].astype(np.float64)
    ab = b[:, :2] - a[:, :2]
    t = np.clip(((pos[:2] - a[:, :2]) * ab).sum(1) / (ab**2).sum(1), 0, 1)
    dist = np.linalg.norm(a[:, :2] + ab * t[:, None] - pos[:2], axis=1)
    z = a[:, 2] + (b[:, 2] - a[:, 2]) * t
    err = wrap(heading - np.arctan2(ab[:, 1], ab[:, 0]))
    score = 0.7 * dist / 4 + 0.3 * np.abs(err) / np.pi - 0.05 * (owner == current)
    ok = (dist < 3 * road.lane_width[owner]) & (np.abs(pos[2] - z) < 4)
    if not ok.any():
        return -1, 0.0, 0.0, np.inf
    score = np.where(ok, score, np.inf)
    i = int(np.argmin(score))
    u = ab[i] / np.linalg.norm(ab[i])
    d = pos[:2] - a[i, :2]
    second = np.partition(score[owner != owner[i]], 0)[0] if (owner != owner[i]).any() else np.inf
    return int(owner[i]), -(u[0] * d[1] - u[1] * d[0]), err[i], second - score[i]


def test_random_rollout_no_nan_and_invariants():
    road = loop_map()
    cfg = vehicle_config(agents_per_world=(4, 24), episode_length=300)
    model, s0, s1, ctl = make_world([road], [0, 0], 24, cfg)
    reset(model, s0, 11)
    rng = np.random.default_rng(0)
    # mostly gentle actions so agents live long enough to drive somewhere
    p = np.full(12, 0.02)
    p[[6, 7, 8]] = [0.1, 0.6, 0.1]
    p /= p.sum()
    lanes_checked = 0
    total_resets = 0
    for t in range(2000):
        ctl.action.assign(rng.choice(12, model.num_slots, p=p).astype(np.int32))
        before = s0.numpy() if t % 50 == 0 else None
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        if t % 10 and t != 1999:
            continue
        st = s0.numpy()
        for name, arr in st.items():
            assert np.all(np.isfinite(arr)), (t, name)
        np.testing.assert_allclose(st["reward"], st["reward_terms"].sum(1), atol=1e-5)
        assert np.array_equal(st["active"], st["valid"] * (1 - st["halted"]))
        kind = BoxView(st["agent_box"]).kind
        assert np.all(kind[st["valid"] == 0] == BOX_INVALID)
        assert np.all(kind[st["valid"] == 1] == 0.0)
        np.testing.assert_array_equal(st["agent_box"][st["valid"] == 1, :3], st["pos"][st["valid"] == 1])
        world_reset = st["world_reset"][model.layout.slot_world]
        assert np.all(st["truncated"] <= world_reset)
        assert np.all(st["truncated"] + st["terminated"] <= 1)
        ev = st["events"]
        infractions = ev[:, [EVENTS.index(e) for e in ("collision", "offroad", "red_light")]]
        assert np.all(infractions.sum(1) <= 1)  # at most one infraction per agent per step
        np.testing.assert_array_equal(st["terminated"], infractions.max(1))
        assert np.all(st["world_step"] < cfg.episode_length)
        assert np.all(np.abs(st["heading"]) <= np.pi + 1e-6)
        total_resets += int(st["world_reset"].sum())
        if before is not None:
            # lane association of agents that stayed active in a world that did not reset
            for slot in np.nonzero((st["active"] == 1) & (world_reset == 0))[0]:
                lane, offset, err, margin = _np_associate(
                    road, st["pos"][slot].astype(np.float64), float(st["heading"][slot]), before["lane"][slot]
                )
                if margin < 1e-4:
                    continue  # a near tie between two lanes: float32 may pick either
                assert st["lane"][slot] == lane, (t, slot)
                if lane >= 0:
                    assert abs(st["lane_offset"][slot] - offset) < 1e-3
                    assert abs(wrap(st["lane_heading_error"][slot] - err)) < 1e-4
                lanes_checked += 1
    assert lanes_checked > 50
    assert total_resets > 0
