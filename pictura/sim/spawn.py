"""Masked world reset: agent count, sizes, Table 2 conditioning, spawn poses, goals, lights.

One thread resets one world, placing its agents one after another so each spawn can reject
overlap with those already placed. All draws come from ``wp.rand_init`` keyed by
(world seed, episode, slot, attempt), so a seeded rollout repeats bit for bit.
"""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0) / bool(...)

from __future__ import annotations

import warp as wp

from pictura.maps.roadmap import AGENT_VEHICLE
from pictura.sim.config import DIST_FIXED, DIST_UMIX
from pictura.sim.events import box_on_road_edge
from pictura.sim.features import COND_TYPE, CONDITIONING_WIDTH, NUM_COEFFICIENTS
from pictura.sim.geometry import boxes_overlap, rng_key, xy
from pictura.sim.lanes import lane_station, sample_goal_set
from pictura.sim.model import ModelData
from pictura.sim.state import StateData
from pictura.sim.traffic import JUNCTION_ALWAYS_GREEN, JUNCTION_CYCLING, JUNCTION_OFF

SPAWN_EDGE_MARGIN = 1.1
"""The spawn box is scaled by this before the road-edge test (REFERENCE.md)."""
PURPOSE_AGENTS, PURPOSE_LIGHTS, PURPOSE_GOALS, PURPOSE_SEED = 1, 2, 3, 4
"""RNG key purposes, so the streams of different draws never coincide."""
ATTEMPT_STRIDE = 1024
"""RNG offsets per slot: 0 = size and conditioning, 1..attempts = spawn tries, stride-1 = goals."""

_DIST_FIXED = wp.constant(DIST_FIXED)
_DIST_UMIX = wp.constant(DIST_UMIX)
_NUM_COEF = wp.constant(NUM_COEFFICIENTS)
_COND_WIDTH = wp.constant(CONDITIONING_WIDTH)
_COND_TYPE = wp.constant(COND_TYPE)
_VEHICLE = wp.constant(AGENT_VEHICLE)
_STRIDE = wp.constant(ATTEMPT_STRIDE)
_MODE_CYCLING = wp.constant(JUNCTION_CYCLING)
_MODE_OFF = wp.constant(JUNCTION_OFF)
_MODE_GREEN = wp.constant(JUNCTION_ALWAYS_GREEN)
_P_AGENTS = wp.constant(PURPOSE_AGENTS)
_P_LIGHTS = wp.constant(PURPOSE_LIGHTS)


@wp.func
def sample_coefficient(model: ModelData, c: int, rng: wp.uint32):
    """One Table 2 draw of coefficient ``c``; returns (value, rng)."""
    state = rng
    lo = model.cond_low[c]
    hi = model.cond_high[c]
    kind = model.cond_kind[c]
    u = wp.randf(state)
    value = lo + (hi - lo) * u
    if kind == _DIST_FIXED:
        value = lo
    elif kind == _DIST_UMIX:
        if wp.randf(state) < 0.5:
            value = lo + (1.0 - lo) * u
        else:
            value = 1.0 + (hi - 1.0) * u
    return value, state


@wp.func
def clear_slot(state: StateData, slot: int):
    """An empty slot: invalid, zero pose and size, no lane, no goals."""
    zero = wp.vec3(0.0, 0.0, 0.0)
    state.pos[slot] = zero
    state.prev_pos[slot] = zero
    state.heading[slot] = 0.0
    state.prev_heading[slot] = 0.0
    state.speed[slot] = 0.0
    state.accel_long[slot] = 0.0
    state.accel_lat[slot] = 0.0
    state.jerk_long[slot] = 0.0
    state.jerk_lat[slot] = 0.0
    state.steering[slot] = 0.0
    state.length[slot] = 0.0
    state.width[slot] = 0.0
    state.height[slot] = 0.0
    state.kind[slot] = _VEHICLE
    state.valid[slot] = 0
    state.halted[slot] = 0
    state.lane[slot] = -1
    state.lane_offset[slot] = 0.0
    state.lane_heading_error[slot] = 0.0
    state.goal_index[slot] = 0
    state.distance[slot] = 0.0
    for g in range(3):
        state.goal[slot, g] = zero
    for c in range(_COND_WIDTH):
        state.conditioning[slot, c] = 0.0


@wp.func
def spawn_agent(model: ModelData, state: StateData, w: int, m: int, slot: int, key: int):
    """Draw size and conditioning of ``slot`` and try to place it; 1 if placed, else the slot
    is left invalid."""
    local = slot - model.world_slot_start[w]
    rng = wp.rand_init(key, local * _STRIDE)
    length = wp.randf(rng, model.length_lo, model.length_hi)
    width = wp.min(
        wp.randf(rng, model.width_lo, wp.max(model.width_lo, wp.min(model.width_hi, length))), length
    )
    for c in range(_NUM_COEF):
        value, rng = sample_coefficient(model, c, rng)
        state.conditioning[slot, c] = value
    state.conditioning[slot, _COND_TYPE + _VEHICLE] = 1.0

    seg0 = model.map_lane_seg_start[m]
    nseg = model.map_lane_seg_start[m + 1] - seg0
    placed = int(0)
    for attempt in range(model.spawn_attempts):
        if placed == 0:
            r = wp.rand_init(key, local * _STRIDE + 1 + attempt)
            seg = seg0 + wp.randi(r, 0, nseg)
            t = wp.randf(r)
            a = model.lane_seg_a[seg]
            b = model.lane_seg_b[seg]
            d = xy(b) - xy(a)
            if wp.length(d) > 0.0:
                pos = a + (b - a) * t
                heading = wp.atan2(d[1], d[0])
                ok = (
                    box_on_road_edge(
                        model, m, pos, heading, SPAWN_EDGE_MARGIN * length, SPAWN_EDGE_MARGIN * width
                    )
                    == 0
                )
                r0 = 0.5 * wp.sqrt(length * length + width * width)
                # agents spawn at rest, so the 1 s constant-velocity forecast equals this test
                for other in range(model.world_slot_start[w], slot):
                    if ok and state.valid[other] != 0:
                        q = state.pos[other]
                        ro = 0.5 * wp.sqrt(state.length[other] ** 2.0 + state.width[other] ** 2.0)
                        if wp.length(xy(q) - xy(pos)) < r0 + ro and wp.abs(q[2] - pos[2]) < 4.0:
                            if boxes_overlap(
                                xy(pos),
                                heading,
                                length,
                                width,
                                xy(q),
                                state.heading[other],
                                state.length[other],
                                state.width[other],
                            ):
                                ok = False
                if ok:
                    placed = 1
                    lane = model.lane_seg_lane[seg]
                    state.pos[slot] = pos
                    state.prev_pos[slot] = pos
                    state.heading[slot] = heading
                    state.prev_heading[slot] = heading
                    state.length[slot] = length
                    state.width[slot] = width
                    state.height[slot] = model.height
                    state.valid[slot] = 1
                    state.lane[slot] = lane
                    g_rng = wp.rand_init(key, local * _STRIDE + _STRIDE - 1)
                    g0, g1, g2, g_rng = sample_goal_set(
                        model, lane, lane_station(model, lane, pos), pos, heading, g_rng
                    )
                    state.goal[slot, 0] = g0
                    state.goal[slot, 1] = g1
                    state.goal[slot, 2] = g2
    return placed


@wp.func
def respawn_world(model: ModelData, state: StateData, w: int):
    """Redraw world ``w``'s agents (count, sizes, conditioning, poses, goals) and lights."""
    m = model.world_map[w]
    seed = state.world_seed[w]
    episode = state.world_episode[w]
    key = rng_key(seed, _P_AGENTS, episode, 0)
    rng = wp.rand_init(key, -1)
    n = wp.randi(rng, model.agents_lo, model.agents_hi + 1)
    state.world_agent_count[w] = n
    start = model.world_slot_start[w]
    for k in range(model.world_slot_count[w]):
        slot = start + k
        clear_slot(state, slot)
        if k < n:
            spawn_agent(model, state, w, m, slot, key)

    # traffic lights: per-junction timings and modes, per-light outages
    lkey = rng_key(seed, _P_LIGHTS, episode, 0)
    lrng = wp.rand_init(lkey, -1)
    all_off = wp.randf(lrng) < model.all_off_p
    j0 = model.map_junction_start[m]
    nj = model.map_junction_start[m + 1] - j0
    for j in range(nj):
        wj = model.world_junction_start[w] + j
        r = wp.rand_init(lkey, j)
        green = wp.randf(r, model.green_lo, model.green_hi)
        yellow = wp.randf(r, model.yellow_lo, model.yellow_hi)
        red = wp.randf(r, model.red_lo, model.red_hi)
        period = float(wp.max(model.junction_group_count[j0 + j], 1)) * (green + yellow + red)
        mode = _MODE_CYCLING
        if wp.randf(r) < model.always_green_p:
            mode = _MODE_GREEN
        if all_off:
            mode = _MODE_OFF
        state.junction_green[wj] = green
        state.junction_yellow[wj] = yellow
        state.junction_red[wj] = red
        state.junction_offset[wj] = wp.randf(r, 0.0, period)
        state.junction_mode[wj] = mode
    l0 = model.world_light_start[w]
    nl = model.map_light_start[m + 1] - model.map_light_start[m]
    for k in range(nl):
        r = wp.rand_init(lkey, nj + k)
        off = int(0)
        if wp.randf(r) < model.off_p:
            off = 1
        state.light_off[l0 + k] = off
