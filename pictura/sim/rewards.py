"""Reward terms (REFERENCE.md "Reward terms"): named columns, each scaled by the agent's Table 2
coefficient, summed into ``State.reward``.

All eleven terms are computed for every agent type; a pedestrian pays only goal and collision
because its other coefficients are 0 (`pictura.sim.spawn`).
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
    collision_speed_weight: float,
):
    """Fill ``state.reward_terms[slot]`` and ``state.reward[slot]`` for this step."""
    v = state.speed[slot]
    a_long = state.accel_long[slot]
    a_lat = state.accel_lat[slot]
    on_lane = state.lane[slot] >= 0
    theta = state.lane_heading_error[slot]
    cos_t = wp.cos(theta)
    d = wp.abs(state.lane_offset[slot] - state.conditioning[slot, COND_CENTER_BIAS])

    terms = wp.vector(dtype=float, length=NUM_REWARD_TERMS)
    terms[TERM_GOAL] = float(goal_paid)
    terms[TERM_COLLISION] = -(
        state.conditioning[slot, COND_COLLISION] + collision_speed_weight * wp.abs(v)
    ) * float(collision)
    terms[TERM_OFFROAD] = -state.conditioning[slot, COND_OFFROAD] * float(offroad)
    terms[TERM_RED_LIGHT] = -state.conditioning[slot, COND_STOP_LINE] * float(red_light)
    discomfort = float(0.0)
    if wp.abs(a_long) > COMFORT_ACCEL:
        discomfort += 1.0
    if wp.abs(a_lat) > COMFORT_ACCEL:
        discomfort += 1.0
    if wp.abs(state.jerk_long[slot]) > COMFORT_JERK or wp.abs(state.jerk_lat[slot]) > COMFORT_JERK:
        discomfort += 1.0
    terms[TERM_COMFORT] = -state.conditioning[slot, COND_COMFORT] * discomfort
    if on_lane:
        align = (
            wp.min(cos_t, 0.0)
            + state.conditioning[slot, COND_VEL_ALIGN] * wp.min(v * cos_t, 0.0)
            + ALIGN_BONUS * (1.0 - 2.0 * wp.abs(theta) / wp.pi)
        )
        terms[TERM_LANE_ALIGN] = state.conditioning[slot, COND_LANE_ALIGN] * dt * align
        aligned = float(0.0)
        if cos_t > CENTER_ALIGNED_COS:
            aligned = 1.0
        terms[TERM_LANE_CENTER] = (
            -state.conditioning[slot, COND_LANE_CENTER] * dt * (aligned * d - CENTER_BONUS * wp.exp(-(d - 0.5)))
        )
        if v > VELOCITY_MIN:
            terms[TERM_VELOCITY] = state.conditioning[slot, COND_VELOCITY] * dt * wp.max(cos_t, 0.0)
    if v > speed_limit + OVERSPEED_MARGIN:
        terms[TERM_OVERSPEED] = -state.conditioning[slot, COND_OVERSPEED]
    if v < 0.0:
        terms[TERM_REVERSE] = -state.conditioning[slot, COND_REVERSE] * dt
    if v != 0.0 or a_long != 0.0 or a_lat != 0.0:
        terms[TERM_TIMESTEP] = -state.conditioning[slot, COND_TIMESTEP] * dt
    total = float(0.0)
    for k in range(NUM_REWARD_TERMS):
        state.reward_terms[slot, k] = terms[k]
        total += terms[k]
    state.reward[slot] = total
