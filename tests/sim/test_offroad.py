"""Swept off-road rule on hand-built poses around a straight road edge (y = 0, z = 0)."""

from __future__ import annotations

import numpy as np

from pictura.sim import EVENTS, REWARD_TERMS, reset, step
from pictura.sim.features import COND_OFFROAD
from pictura.sim.step import swept_offroad

from .conftest import make_world, set_slots, straight_map, vehicle_config

H = np.pi / 2


def _model():
    cfg = vehicle_config(agents_per_world=(1, 1))
    return make_world([straight_map()], [0], 1, cfg)


def test_hand_built_sweeps():
    model = _model()[0]
    cases = [
        # x0, y0, z0, h0, x1, y1, z1, h1, length, width -> crosses?
        ((0, -3.0, 0, H, 0, -1.5, 0, H, 4, 2), True),  # nose pushes through the edge
        ((-10, -1.2, 0, 0, -5, -1.2, 0, 0, 4, 2), False),  # parallel, 0.2 m clear
        ((0, -1.5, 0, 0, 0, -1.5, 0, 3.0, 4.5, 1.8), True),  # U-turn swings across, ends clear
        ((0, -1.5, 0, 0, 0, -1.5, 0, 0, 4.5, 1.8), False),  # start pose of the U-turn alone
        ((0, -1.5, 0, 3.0, 0, -1.5, 0, 3.0, 4.5, 1.8), False),  # end pose of the U-turn alone
        ((0, -3.0, 0, H, 0, 3.0, 0, H, 1, 1), True),  # fast: jumps over the edge in one step
        ((0, -3.0, 4.5, H, 0, -1.5, 4.5, H, 4, 2), False),  # 4.5 m above the edge: other level
        ((0, -3.0, 3.0, H, 0, -1.5, 3.0, H, 4, 2), True),  # 3 m above: same level
        ((20, -10, 0, 0, 25, -10, 0, 0, 4, 2), False),  # mid-road
        ((28, -10, 0, 0, 32, -10, 0, 0, 4, 2), False),  # passes under the overpass edge (z 10)
        ((28, -10, 8, 0, 32, -10, 8, 0, 4, 2), True),  # ... and into it at z 8
    ]
    poses = np.array([c[0] for c in cases], float)
    expected = [c[1] for c in cases]
    assert swept_offroad(model, 0, poses).tolist() == expected


def test_offroad_rule_in_step():
    model, s0, s1, ctl = _model()
    reset(model, s0, 0)
    set_slots(
        s0,
        valid=[1],
        halted=[0],
        pos=[[0, -2.5, 0]],
        heading=[H],
        speed=[10.0],
        accel_long=[0.0],
        accel_lat=[0.0],
        steering=[0.0],
        length=[4.0],
        width=[2.0],
    )
    alpha = s0.conditioning.numpy()[0, COND_OFFROAD]
    ctl.action.assign(np.full(1, 7, np.int32))
    step(model, s0, ctl, s1)
    ev = s1.events.numpy()[0]
    assert ev[EVENTS.index("offroad")] == 1 and ev[EVENTS.index("collision")] == 0
    assert s1.terminated.numpy()[0] == 1
    np.testing.assert_allclose(s1.reward_terms.numpy()[0, REWARD_TERMS.index("offroad")], -alpha, rtol=1e-6)
