"""Red-light rule: the rear bumper crossing the (extended) stop line of the agent's lane, or
changing lane into a stop line, while its light shows red is a terminal infraction; green,
yellow, off or too far away are not."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps.roadmap import LIGHT_GREEN, LIGHT_OFF, LIGHT_RED, LIGHT_YELLOW
from pictura.sim import EVENTS, REWARD_TERMS, reset, step
from pictura.sim.features import COND_STOP_LINE

from .conftest import make_world, set_slots, straight_map, two_lane_stop_map, vehicle_config

RED = EVENTS.index("red_light")


def _run_on(road, lights, x, y, heading, lane, length, width=2.0):
    """One vehicle at 10 m/s on ``road``, held on lane ``lane`` before the step, shown
    ``lights``; zero jerk. Returns the next state and its stop-line coefficient."""
    model, s0, s1, ctl = make_world([road], [0], 1, vehicle_config(agents_per_world=(1, 1)))
    reset(model, s0, 0)
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
        length=[length],
        width=[width],
        lane=[lane],
        light_state=list(lights),
        goal=np.full((1, 3, 3), 1000.0),
    )
    ctl.action.assign(np.full(1, 7, np.int32))
    alpha = s0.conditioning.numpy()[0, COND_STOP_LINE]
    step(model, s0, ctl, s1)
    return s1, alpha


def _run(light: int, x: float, heading: float = 0.0, lane: int = 4, y: float = -10.0):
    # 4 m long, 10 m/s: the rear bumper moves from x - 2 to x - 1
    return _run_on(straight_map(), [light], x, y, heading, lane, length=4.0)


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
    s1, _ = _run(LIGHT_RED, x=11.5, lane=5)  # on a lane without a stop line
    assert s1.events.numpy()[0, RED] == 0
    # held on another lane, the bumper still passes over lane 4's red line inside its span
    s1, _ = _run(LIGHT_RED, x=1.5, lane=5)
    assert s1.events.numpy()[0, RED] == 1
    s1, _ = _run(LIGHT_RED, x=1.5, y=-3.5)  # past the line's end (y = -5), inside its 1.5x extension
    assert s1.events.numpy()[0, RED] == 1
    s1, _ = _run(LIGHT_RED, x=1.5, y=-10.0, heading=np.pi / 3)  # 60 deg off the lane direction
    assert s1.events.numpy()[0, RED] == 0


def _two_lane_run(lights, x, y, heading, lane):
    """A 2 m x 1 m vehicle on `two_lane_stop_map` shown lights (A, B): its red-light event."""
    s1, _ = _run_on(two_lane_stop_map(), lights, x, y, heading, lane, length=2.0, width=1.0)
    return int(s1.events.numpy()[0, RED])


LANE_A, LANE_B = 2, 8  # the chunks of A and B ending at the stop lines


def _rear_crossing(x, y, heading, length=2.0):
    """Reference: where the rear bumper's straight path crosses x = 0 (None if it does not)."""
    h = 0.5 * length
    r0 = np.array([x - h * np.cos(heading), y - h * np.sin(heading)])
    d = 1.0 * np.array([np.cos(heading), np.sin(heading)])  # 10 m/s x 0.1 s
    if not r0[0] <= 0.0 <= r0[0] + d[0]:
        return None
    return r0[1] + d[1] * (-r0[0] / d[0])


def test_straight_crossings_of_both_lanes():
    # straight along A over A's red line; along B over B's red line; A's green line: none
    assert _two_lane_run((LIGHT_RED, LIGHT_GREEN), 0.5, -12.0, 0.0, LANE_A) == 1
    assert _two_lane_run((LIGHT_GREEN, LIGHT_RED), 0.5, -8.0, 0.0, LANE_B) == 1
    assert _two_lane_run((LIGHT_GREEN, LIGHT_RED), 0.5, -12.0, 0.0, LANE_A) == 0


def test_lane_change_into_a_red_stop_line():
    """Held on A (green) before the step, the rear bumper crosses B's red line inside B: a
    violation (the rule of the old lane alone would miss it)."""
    x, y, h = 0.4, -9.6, 0.6  # 34 deg towards B
    crossing = _rear_crossing(x, y, h)
    assert crossing is not None and -10.0 < crossing < -6.0  # the reference: inside B's line
    assert _two_lane_run((LIGHT_GREEN, LIGHT_RED), x, y, h, LANE_A) == 1
    assert _two_lane_run((LIGHT_GREEN, LIGHT_GREEN), x, y, h, LANE_A) == 0
    assert _two_lane_run((LIGHT_GREEN, LIGHT_RED), x, y, 0.9, LANE_A) == 0  # 52 deg: not a lane


def test_neighbour_red_line_is_not_extended_into_the_own_lane():
    """Straight along A over A's green line 0.5 m from B: B's red line extended 1.5x would reach
    the bumper, at its own length it does not."""
    crossing = _rear_crossing(0.5, -10.5, 0.0)
    assert crossing is not None and -11.0 < crossing < -10.0  # in A, inside B's 1.5x extension
    assert _two_lane_run((LIGHT_GREEN, LIGHT_RED), 0.5, -10.5, 0.0, LANE_A) == 0
