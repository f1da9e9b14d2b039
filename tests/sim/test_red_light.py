"""Red-light rule: the rear bumper crossing the (extended) stop line of the agent's lane while
its light shows red is a terminal infraction; green, yellow, off or too far away are not."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps.roadmap import LIGHT_GREEN, LIGHT_OFF, LIGHT_RED, LIGHT_YELLOW
from pictura.sim import EVENTS, REWARD_TERMS, reset, step
from pictura.sim.features import COND_STOP_LINE

from .conftest import make_world, set_slots, straight_map, vehicle_config

RED = EVENTS.index("red_light")


def _run(light: int, x: float, heading: float = 0.0, lane: int = 4, y: float = -10.0):
    model, s0, s1, ctl = make_world([straight_map()], [0], 1, vehicle_config(agents_per_world=(1, 1)))
    reset(model, s0, 0)
    # 4 m long, 10 m/s: the rear bumper moves from x - 2 to x - 1
    set_slots(
        s0,
        valid=[1],
        halted=[0],
        pos=[[x, y, 0.0]],
        heading=[heading],
        speed=[10.0],
        accel_long=[0.0],
        accel_lat=[0.0],
        steering=[0.0],
        length=[4.0],
        width=[2.0],
        lane=[lane],
        light_state=[light],
    )
    ctl.action.assign(np.full(1, 7, np.int32))
    alpha = s0.conditioning.numpy()[0, COND_STOP_LINE]
    step(model, s0, ctl, s1)
    return s1, alpha


def test_rear_bumper_crossing_on_red_is_an_infraction():
    s1, alpha = _run(LIGHT_RED, x=1.5)  # rear: -0.5 -> 0.5
    assert s1.events.numpy()[0, RED] == 1 and s1.terminated.numpy()[0] == 1
    np.testing.assert_allclose(s1.reward_terms.numpy()[0, REWARD_TERMS.index("red_light")], -alpha, rtol=1e-6)


@pytest.mark.parametrize("light", [LIGHT_GREEN, LIGHT_YELLOW, LIGHT_OFF])
def test_other_lights_pass(light):
    s1, _ = _run(light, x=1.5)
    assert s1.events.numpy()[0, RED] == 0 and s1.terminated.numpy()[0] == 0


def test_only_the_rear_bumper_crossing_counts():
    s1, _ = _run(LIGHT_RED, x=-2.5)  # nose crosses the line, rear stays behind: not yet
    assert s1.events.numpy()[0, RED] == 0
    s1, _ = _run(LIGHT_RED, x=1.5, lane=5)  # on a lane without a stop line
    assert s1.events.numpy()[0, RED] == 0
    s1, _ = _run(LIGHT_RED, x=1.5, y=-3.5)  # past the line's end (y = -5), inside its 1.5x extension
    assert s1.events.numpy()[0, RED] == 1
    s1, _ = _run(LIGHT_RED, x=1.5, y=-10.0, heading=np.pi / 3)  # 60 deg off the lane direction
    assert s1.events.numpy()[0, RED] == 0
