"""Reward terms (REFERENCE.md "Reward terms"): named columns, each scaled by the agent's Table 2
coefficient, summed into ``State.reward``.

All eleven terms are computed (pedestrian-specific zeroing comes with pedestrians, issue 3).
Terms that need a lane (lane align, lane centre, velocity) are 0 when no lane is associated.
"""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0) / bool(...)

from __future__ import annotations

import warp as wp

from pictura.sim.features import (
    COND_CENTER_BIAS,
    COND_COLLISION,
    COND_COMFORT,
    COND_LANE_ALIGN,
    COND_LANE_CENTER,
    COND_OFFROAD,
    COND_OVERSPEED,
    COND_REVERSE,
    COND_STOP_LINE,
    COND_TIMESTEP,
    COND_VEL_ALIGN,
    COND_VELOCITY,
    NUM_REWARD_TERMS,
    TERM_COLLISION,
    TERM_COMFORT,
    TERM_GOAL,
    TERM_LANE_ALIGN,
    TERM_LANE_CENTER,
    TERM_OFFROAD,
    TERM_OVERSPEED,
    TERM_RED_LIGHT,
    TERM_REVERSE,
    TERM_TIMESTEP,
    TERM_VELOCITY,
)
from pictura.sim.state import StateData

COLLISION_SPEED_WEIGHT = 0.1
"""Collision penalty grows by this x |v| (REFERENCE.md; the damaged Eq. 4 prints 1)."""
COMFORT_ACCEL = 3.0
"""m/s^2 beyond which |a_long| or |a_lat| counts as uncomfortable."""
COMFORT_JERK = 5.0
"""m/s^3 beyond which |jerk| counts as uncomfortable."""
ALIGN_BONUS = 0.0025
CENTER_ALIGNED_COS = 0.5
CENTER_BONUS = 0.05
VELOCITY_MIN = 2.5
"""m/s: the velocity reward needs at least this speed."""
OVERSPEED_MARGIN = 2.0
"""m/s over the limit before the overspeed penalty fires."""

_C_COLLISION = wp.constant(COND_COLLISION)
_C_OFFROAD = wp.constant(COND_OFFROAD)
_C_STOP_LINE = wp.constant(COND_STOP_LINE)
_C_COMFORT = wp.constant(COND_COMFORT)
_C_LANE_ALIGN = wp.constant(COND_LANE_ALIGN)
_C_VEL_ALIGN = wp.constant(COND_VEL_ALIGN)
_C_LANE_CENTER = wp.constant(COND_LANE_CENTER)
_C_CENTER_BIAS = wp.constant(COND_CENTER_BIAS)
_C_VELOCITY = wp.constant(COND_VELOCITY)
_C_REVERSE = wp.constant(COND_REVERSE)
_C_OVERSPEED = wp.constant(COND_OVERSPEED)
_C_TIMESTEP = wp.constant(COND_TIMESTEP)
_T_GOAL = wp.constant(TERM_GOAL)
_T_COLLISION = wp.constant(TERM_COLLISION)
_T_OFFROAD = wp.constant(TERM_OFFROAD)
_T_RED_LIGHT = wp.constant(TERM_RED_LIGHT)
_T_COMFORT = wp.constant(TERM_COMFORT)
_T_LANE_ALIGN = wp.constant(TERM_LANE_ALIGN)
_T_LANE_CENTER = wp.constant(TERM_LANE_CENTER)
_T_VELOCITY = wp.constant(TERM_VELOCITY)
_T_OVERSPEED = wp.constant(TERM_OVERSPEED)
_T_REVERSE = wp.constant(TERM_REVERSE)
_T_TIMESTEP = wp.constant(TERM_TIMESTEP)
_NUM_TERMS = wp.constant(NUM_REWARD_TERMS)


@wp.func
def write_rewards(
    state: StateData,
    slot: int,
    dt: float,
    goal_paid: int,
    collision: int,
    offroad: int,
    red_light: int,
    speed_limit: float,
):
    """Fill ``state.reward_terms[slot]`` and ``state.reward[slot]`` for this step."""
    v = state.speed[slot]
    a_long = state.accel_long[slot]
    a_lat = state.accel_lat[slot]
    on_lane = state.lane[slot] >= 0
    theta = state.lane_heading_error[slot]
    cos_t = wp.cos(theta)
    d = wp.abs(state.lane_offset[slot] - state.conditioning[slot, _C_CENTER_BIAS])

    terms = wp.vector(dtype=float, length=_NUM_TERMS)
    terms[_T_GOAL] = float(goal_paid)
    terms[_T_COLLISION] = -(
        state.conditioning[slot, _C_COLLISION] + COLLISION_SPEED_WEIGHT * wp.abs(v)
    ) * float(collision)
    terms[_T_OFFROAD] = -state.conditioning[slot, _C_OFFROAD] * float(offroad)
    terms[_T_RED_LIGHT] = -state.conditioning[slot, _C_STOP_LINE] * float(red_light)
    discomfort = float(0.0)
    if wp.abs(a_long) > COMFORT_ACCEL:
        discomfort += 1.0
    if wp.abs(a_lat) > COMFORT_ACCEL:
        discomfort += 1.0
    if wp.abs(state.jerk_long[slot]) > COMFORT_JERK or wp.abs(state.jerk_lat[slot]) > COMFORT_JERK:
        discomfort += 1.0
    terms[_T_COMFORT] = -state.conditioning[slot, _C_COMFORT] * discomfort
    if on_lane:
        align = (
            wp.min(cos_t, 0.0)
            + state.conditioning[slot, _C_VEL_ALIGN] * wp.min(v * cos_t, 0.0)
            + ALIGN_BONUS * (1.0 - 2.0 * wp.abs(theta) / wp.pi)
        )
        terms[_T_LANE_ALIGN] = state.conditioning[slot, _C_LANE_ALIGN] * dt * align
        aligned = float(0.0)
        if cos_t > CENTER_ALIGNED_COS:
            aligned = 1.0
        terms[_T_LANE_CENTER] = (
            -state.conditioning[slot, _C_LANE_CENTER] * dt * (aligned * d - CENTER_BONUS * wp.exp(-(d - 0.5)))
        )
        if v > VELOCITY_MIN:
            terms[_T_VELOCITY] = state.conditioning[slot, _C_VELOCITY] * dt * wp.max(cos_t, 0.0)
    if v > speed_limit + OVERSPEED_MARGIN:
        terms[_T_OVERSPEED] = -state.conditioning[slot, _C_OVERSPEED]
    if v < 0.0:
        terms[_T_REVERSE] = -state.conditioning[slot, _C_REVERSE] * dt
    if v != 0.0 or a_long != 0.0 or a_lat != 0.0:
        terms[_T_TIMESTEP] = -state.conditioning[slot, _C_TIMESTEP] * dt
    total = float(0.0)
    for k in range(_NUM_TERMS):
        state.reward_terms[slot, k] = terms[k]
        total += terms[k]
    state.reward[slot] = total
