"""Traffic-light schedules: each junction cycles its light groups.

A junction with G groups has a period of G x (green + yellow + red) seconds: in its turn a group
shows green, then yellow, then red for the all-red clearance while every other group is red.
Its clock is ``world_step * dt + offset``, the offset drawn per episode in [0, period).
"""

from __future__ import annotations

import warp as wp

from pictura.maps.roadmap import LIGHT_GREEN, LIGHT_OFF, LIGHT_RED, LIGHT_YELLOW

JUNCTION_CYCLING, JUNCTION_OFF, JUNCTION_ALWAYS_GREEN = 0, 1, 2
"""``State.junction_mode`` values."""

_RED = wp.constant(LIGHT_RED)
_YELLOW = wp.constant(LIGHT_YELLOW)
_GREEN = wp.constant(LIGHT_GREEN)
_OFF = wp.constant(LIGHT_OFF)
_MODE_OFF = wp.constant(JUNCTION_OFF)
_MODE_GREEN = wp.constant(JUNCTION_ALWAYS_GREEN)


@wp.func
def light_phase(
    time_s: float, group: int, group_count: int, green: float, yellow: float, red: float, mode: int, off: int
):
    """LIGHT_* of light ``group`` of a junction with ``group_count`` groups at ``time_s``."""
    state = _RED
    if off != 0 or mode == _MODE_OFF:
        state = _OFF
    elif mode == _MODE_GREEN:
        state = _GREEN
    else:
        turn = green + yellow + red
        period = turn * float(wp.max(group_count, 1))
        t = time_s - period * wp.floor(time_s / period)
        active = wp.min(int(t / turn), wp.max(group_count, 1) - 1)
        within = t - float(active) * turn
        if active == group:
            if within < green:
                state = _GREEN
            elif within < green + yellow:
                state = _YELLOW
    return state
