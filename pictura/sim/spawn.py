"""Masked world reset: lights, parked cars, agent count, types, sizes, Table 2 conditioning,
spawn poses and speeds, goals.

One thread resets one world: first the light schedule (the spawn test needs the lights at
t = 0), then its parked cars, then its agents one after another so each spawn can reject
overlap with those already placed. All draws come from ``wp.rand_init`` keyed by
(world seed, episode, slot, attempt), so a seeded rollout repeats bit for bit.
"""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0) / bool(...)

from __future__ import annotations

import warp as wp

from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE, LIGHT_RED, LIGHT_YELLOW
from pictura.sim.config import DIST_FIXED, DIST_UMIX
from pictura.sim.events import box_on_road_edge
from pictura.sim.features import (
    COND_ACC,
    COND_COLLISION,
    COND_DELTA_GOAL,
    COND_STEER,
    COND_THROTTLE,
    COND_TYPE,
    COND_V_GOAL,
    CONDITIONING_WIDTH,
    NUM_COEFFICIENTS,
)
from pictura.sim.geometry import Z_TOLERANCE_M, box_hits_segment, boxes_overlap, rng_key, xy
from pictura.sim.lanes import lane_speed_limit, lane_station, sample_goal_set
from pictura.sim.model import ModelData
from pictura.sim.paths import sample_path_goals
from pictura.sim.snapshot import BOX_INVALID
from pictura.sim.state import StateData
from pictura.sim.traffic import JUNCTION_ALWAYS_GREEN, JUNCTION_CYCLING, JUNCTION_OFF, light_phase

SPAWN_EDGE_MARGIN = 1.1
"""The spawn box is scaled by this before the road-edge test (REFERENCE.md)."""
PURPOSE_AGENTS, PURPOSE_LIGHTS, PURPOSE_GOALS, PURPOSE_SEED, PURPOSE_PARKED = 1, 2, 3, 4, 5
"""RNG key purposes, so the streams of different draws never coincide."""
ATTEMPT_STRIDE = 1024
"""RNG offsets per slot: 0 = size and conditioning, 1..attempts = spawn tries, stride-1 = goals."""

_DIST_FIXED = wp.constant(DIST_FIXED)
_DIST_UMIX = wp.constant(DIST_UMIX)
_NUM_COEF = wp.constant(NUM_COEFFICIENTS)
_COND_WIDTH = wp.constant(CONDITIONING_WIDTH)
_COND_TYPE = wp.constant(COND_TYPE)
_VEHICLE = wp.constant(AGENT_VEHICLE)
_PEDESTRIAN = wp.constant(AGENT_PEDESTRIAN)
_CYCLIST = wp.constant(AGENT_CYCLIST)
_RED = wp.constant(LIGHT_RED)
_YELLOW = wp.constant(LIGHT_YELLOW)
_BOX_INVALID = wp.constant(BOX_INVALID)
_P_PARKED = wp.constant(PURPOSE_PARKED)
_C_DELTA_GOAL = wp.constant(COND_DELTA_GOAL)
_C_V_GOAL = wp.constant(COND_V_GOAL)
_C_COLLISION = wp.constant(COND_COLLISION)
_C_THROTTLE = wp.constant(COND_THROTTLE)
_C_STEER = wp.constant(COND_STEER)
_C_ACC = wp.constant(COND_ACC)
PARKED_CURB_GAP = 0.1
"""m between a parked car and its lane's right boundary (maps without parking spots)."""
PARKED_CURB_PROBE = 0.6
"""m: a car beside a lane is kept only when its box moved this far right touches a road edge."""
FORECAST_SAMPLES = 3
"""Times of the spawn forecast: 0, forecast/2, forecast (constant velocity)."""
DEFAULT_SPEED_LIMIT = 15.0
"""m/s where a lane gives none (the rules use the same value)."""
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
    state.path_seg[slot] = -1
    state.distance[slot] = 0.0
    for g in range(3):
        state.goal[slot, g] = zero
    for c in range(_COND_WIDTH):
        state.conditioning[slot, c] = 0.0


@wp.func
def pedestrian_coefficient(c: int):
    """Coefficients a pedestrian keeps; every other reward coefficient is zeroed, so only the
    goal and collision terms pay (dynamics coefficients are kept)."""
    return (
        c == _C_DELTA_GOAL
        or c == _C_V_GOAL
        or c == _C_COLLISION
        or c == _C_THROTTLE
        or c == _C_STEER
        or c == _C_ACC
    )


@wp.func
def light_at_reset(model: ModelData, state: StateData, w: int, m: int, light: int):
    """LIGHT_* of map-local light ``light`` of world ``w`` at episode time 0."""
    ml = model.map_light_start[m] + light
    j = model.light_junction[ml]
    wj = model.world_junction_start[w] + j - model.map_junction_start[m]
    return light_phase(
        state.junction_offset[wj],
        model.light_group[ml],
        model.junction_group_count[j],
        state.junction_green[wj],
        state.junction_yellow[wj],
        state.junction_red[wj],
        state.junction_mode[wj],
        state.light_off[model.world_light_start[w] + light],
    )


@wp.func
def on_stopping_line(
    model: ModelData,
    state: StateData,
    w: int,
    m: int,
    pos: wp.vec3,
    heading: float,
    length: float,
    width: float,
):
    """Does the box touch a stop line whose light is red or yellow at t = 0 (spawn test)?"""
    hl = 0.5 * length
    hw = 0.5 * width
    r = wp.sqrt(hl * hl + hw * hw)
    hit = int(0)
    for k in range(model.map_stop_start[m], model.map_stop_start[m + 1]):
        light = model.stop_line_light[k]
        if hit == 0 and light >= 0:
            a = model.stop_line_a[k]
            b = model.stop_line_b[k]
            mid = (a + b) * 0.5
            near = wp.length(xy(mid) - xy(pos)) < r + 0.5 * wp.length(xy(b) - xy(a))
            if near and wp.abs(mid[2] - pos[2]) < Z_TOLERANCE_M:
                st = light_at_reset(model, state, w, m, light)
                if st == _RED or st == _YELLOW:
                    if box_hits_segment(xy(pos), heading, hl, hw, xy(a), xy(b)):
                        hit = 1
    return hit


@wp.func
def forecast_clear(
    model: ModelData,
    state: StateData,
    w: int,
    slot: int,
    pos: wp.vec3,
    heading: float,
    speed: float,
    length: float,
    width: float,
):
    """No overlap with the agents placed before ``slot`` nor with the world's parked cars, at
    t = 0, forecast/2 and forecast under constant velocity (REFERENCE.md spawn rule).

    A pair is only tested when the two circumcircles can meet within the forecast (centre
    distance below the radii plus both speeds x forecast), so far-away agents cost one
    distance test."""
    ok = bool(True)
    r0 = 0.5 * wp.sqrt(length * length + width * width)
    u = wp.vec3(wp.cos(heading), wp.sin(heading), 0.0)
    horizon = model.spawn_forecast_s
    for other in range(model.world_slot_start[w], slot):
        if ok and state.valid[other] != 0:
            q0 = state.pos[other]
            ho = state.heading[other]
            vo = state.speed[other]
            lo = state.length[other]
            wo = state.width[other]
            ro = 0.5 * wp.sqrt(lo * lo + wo * wo)
            reach = r0 + ro + (wp.abs(speed) + wp.abs(vo)) * horizon
            if wp.length(xy(q0) - xy(pos)) < reach and wp.abs(q0[2] - pos[2]) < Z_TOLERANCE_M:
                uo = wp.vec3(wp.cos(ho), wp.sin(ho), 0.0)
                for i in range(FORECAST_SAMPLES):
                    t = horizon * float(i) / float(FORECAST_SAMPLES - 1)
                    p = pos + u * (speed * t)
                    q = q0 + uo * (vo * t)
                    if ok and wp.length(xy(q) - xy(p)) < r0 + ro:
                        if boxes_overlap(xy(p), heading, length, width, xy(q), ho, lo, wo):
                            ok = False
    row0 = model.num_slots + w * model.parked_per_world
    for row in range(row0, row0 + model.parked_per_world):
        if ok and state.agent_box[row, 7] >= 0.0:
            q = wp.vec3(state.agent_box[row, 0], state.agent_box[row, 1], state.agent_box[row, 2])
            lo = state.agent_box[row, 4]
            wo = state.agent_box[row, 5]
            ro = 0.5 * wp.sqrt(lo * lo + wo * wo)
            if wp.length(xy(q) - xy(pos)) < r0 + ro + wp.abs(speed) * horizon:
                if wp.abs(q[2] - pos[2]) < Z_TOLERANCE_M:
                    for i in range(FORECAST_SAMPLES):
                        t = horizon * float(i) / float(FORECAST_SAMPLES - 1)
                        p = pos + u * (speed * t)
                        if ok and wp.length(xy(q) - xy(p)) < r0 + ro:
                            if boxes_overlap(
                                xy(p), heading, length, width, xy(q), state.agent_box[row, 3], lo, wo
                            ):
                                ok = False
    return ok


@wp.func
def spawn_agent(model: ModelData, state: StateData, w: int, m: int, slot: int, key: int):
    """Draw type, size and conditioning of ``slot`` and try to place it; 1 if placed, else the
    slot is left invalid.

    Vehicles and cyclists spawn on a random point of a random lane segment with the lane
    heading; pedestrians on a random point of a pedestrian-path segment, facing either way.
    A try is rejected when the 1.1x box touches a road edge or wall (pedestrians: a wall),
    when it touches a stop line whose light is red or yellow (vehicles, cyclists), or when the
    box overlaps a placed agent or parked car within the 1 s constant-velocity forecast.
    """
    local = slot - model.world_slot_start[w]
    rng = wp.rand_init(key, local * _STRIDE)
    u_kind = wp.randf(rng)
    kind = _VEHICLE
    if u_kind < model.pedestrian_fraction:
        kind = _PEDESTRIAN
    elif u_kind < model.pedestrian_fraction + model.cyclist_fraction:
        kind = _CYCLIST
    length = wp.randf(rng, model.type_length_lo[kind], model.type_length_hi[kind])
    wlo = model.type_width_lo[kind]
    whi = model.type_width_hi[kind]
    width = wp.randf(rng, wlo, whi)
    if kind == _VEHICLE:
        # vehicles are never wider than long (REFERENCE.md Table 5 sizes)
        width = wp.min(wp.randf(rng, wlo, wp.max(wlo, wp.min(whi, length))), length)
    for c in range(_NUM_COEF):
        value, rng = sample_coefficient(model, c, rng)
        if kind == _PEDESTRIAN:
            if c == _C_DELTA_GOAL:
                value = wp.min(value, model.pedestrian_goal_radius)
            elif not pedestrian_coefficient(c):
                value = 0.0
        state.conditioning[slot, c] = value
    state.conditioning[slot, _COND_TYPE + kind] = 1.0
    state.kind[slot] = kind
    v_top = model.type_v_max[kind]

    seg0 = model.map_lane_seg_start[m]
    nseg = model.map_lane_seg_start[m + 1] - seg0
    if kind == _PEDESTRIAN:
        seg0 = model.map_ped_seg_start[m]
        nseg = model.map_ped_seg_start[m + 1] - seg0
    placed = int(0)
    for attempt in range(model.spawn_attempts):
        if placed == 0 and nseg > 0:
            r = wp.rand_init(key, local * _STRIDE + 1 + attempt)
            seg = seg0 + wp.randi(r, 0, nseg)
            t = wp.randf(r)
            a = model.lane_seg_a[seg]
            b = model.lane_seg_b[seg]
            if kind == _PEDESTRIAN:
                a = model.ped_seg_a[seg]
                b = model.ped_seg_b[seg]
            d = xy(b) - xy(a)
            if wp.length(d) > 0.0:
                pos = a + (b - a) * t
                heading = wp.atan2(d[1], d[0])
                limit = v_top
                lane = int(-1)
                walls_only = int(1)
                if kind == _PEDESTRIAN:
                    if wp.randf(r) < 0.5:
                        heading = heading + wp.pi
                        if heading >= wp.pi:
                            heading = heading - 2.0 * wp.pi
                else:
                    lane = model.lane_seg_lane[seg]
                    limit = wp.min(limit, lane_speed_limit(model, lane))
                    walls_only = 0
                speed = wp.randf(r, 0.0, model.spawn_speed_fraction * limit)
                ok = (
                    box_on_road_edge(
                        model,
                        m,
                        pos,
                        heading,
                        SPAWN_EDGE_MARGIN * length,
                        SPAWN_EDGE_MARGIN * width,
                        walls_only,
                    )
                    == 0
                )
                if ok and kind != _PEDESTRIAN:
                    ok = on_stopping_line(model, state, w, m, pos, heading, length, width) == 0
                if ok:
                    ok = forecast_clear(model, state, w, slot, pos, heading, speed, length, width)
                if ok:
                    placed = 1
                    state.pos[slot] = pos
                    state.prev_pos[slot] = pos
                    state.heading[slot] = heading
                    state.prev_heading[slot] = heading
                    state.speed[slot] = speed
                    state.length[slot] = length
                    state.width[slot] = width
                    state.height[slot] = model.type_height[kind]
                    state.valid[slot] = 1
                    state.lane[slot] = lane
                    g_rng = wp.rand_init(key, local * _STRIDE + _STRIDE - 1)
                    if kind == _PEDESTRIAN:
                        g0, g1, g2, last, g_rng = sample_path_goals(model, seg, pos, g_rng)
                        state.path_seg[slot] = last
                        state.goal[slot, 0] = g0
                        state.goal[slot, 1] = g1
                        state.goal[slot, 2] = g2
                    else:
                        g0, g1, g2, g_rng = sample_goal_set(
                            model, lane, lane_station(model, lane, pos), pos, heading, g_rng
                        )
                        state.goal[slot, 0] = g0
                        state.goal[slot, 1] = g1
                        state.goal[slot, 2] = g2
    if placed == 0:
        # an unplaced slot stays empty (its drawn type and conditioning are not kept)
        clear_slot(state, slot)
    return placed


@wp.func
def spawn_parked(model: ModelData, state: StateData, w: int, m: int, key: int):
    """Redraw world ``w``'s parked cars into their ``agent_box`` rows.

    Each car takes a random parking spot of the map (``RoadMap.parking_spots``) or, on a map
    without spots, the right-hand side of a random lane segment (its right side 0.1 m inside
    the lane's right boundary, clear of road edges and walls, with a road edge (the curb)
    within 0.6 m to its right, so only curb lanes get parked cars); a car that overlaps an
    earlier one is redrawn, up to ``spawn_attempts`` times, after which its row stays invalid.
    """
    row0 = model.num_slots + w * model.parked_per_world
    k0 = model.map_park_start[m]
    nspots = model.map_park_start[m + 1] - k0
    seg0 = model.map_lane_seg_start[m]
    nseg = model.map_lane_seg_start[m + 1] - seg0
    for i in range(model.parked_per_world):
        row = row0 + i
        for c in range(8):
            state.agent_box[row, c] = 0.0
        state.agent_box[row, 7] = _BOX_INVALID
        rng = wp.rand_init(key, i * _STRIDE)
        length = wp.randf(rng, model.parked_length_lo, model.parked_length_hi)
        width = wp.min(wp.randf(rng, model.parked_width_lo, model.parked_width_hi), length)
        r0 = 0.5 * wp.sqrt(length * length + width * width)
        placed = int(0)
        for attempt in range(model.spawn_attempts):
            if placed == 0:
                r = wp.rand_init(key, i * _STRIDE + 1 + attempt)
                pos = wp.vec3(0.0, 0.0, 0.0)
                heading = float(0.0)
                ok = bool(False)
                if nspots > 0:
                    spot = model.park_spot[k0 + wp.randi(r, 0, nspots)]
                    pos = wp.vec3(spot[0], spot[1], spot[2])
                    heading = spot[3]
                    ok = True
                else:
                    seg = seg0 + wp.randi(r, 0, nseg)
                    a = model.lane_seg_a[seg]
                    b = model.lane_seg_b[seg]
                    d = xy(b) - xy(a)
                    if wp.length(d) > 0.0:
                        heading = wp.atan2(d[1], d[0])
                        shift = 0.5 * (model.lane_width[model.lane_seg_lane[seg]] - width) - PARKED_CURB_GAP
                        right = wp.vec3(wp.sin(heading), -wp.cos(heading), 0.0)
                        pos = a + (b - a) * wp.randf(r) + right * shift
                        # clear of every edge, and a curb (road edge) right beside it
                        ok = box_on_road_edge(model, m, pos, heading, length, width, 0) == 0
                        if ok:
                            probe = pos + right * PARKED_CURB_PROBE
                            ok = box_on_road_edge(model, m, probe, heading, length, width, 0) != 0
                for other in range(row0, row):
                    if ok and state.agent_box[other, 7] >= 0.0:
                        q = wp.vec3(
                            state.agent_box[other, 0], state.agent_box[other, 1], state.agent_box[other, 2]
                        )
                        lo = state.agent_box[other, 4]
                        wo = state.agent_box[other, 5]
                        if wp.length(xy(q) - xy(pos)) < r0 + 0.5 * wp.sqrt(lo * lo + wo * wo):
                            if wp.abs(q[2] - pos[2]) < Z_TOLERANCE_M:
                                if boxes_overlap(
                                    xy(pos), heading, length, width, xy(q), state.agent_box[other, 3], lo, wo
                                ):
                                    ok = False
                if ok:
                    placed = 1
                    state.agent_box[row, 0] = pos[0]
                    state.agent_box[row, 1] = pos[1]
                    state.agent_box[row, 2] = pos[2]
                    state.agent_box[row, 3] = heading
                    state.agent_box[row, 4] = length
                    state.agent_box[row, 5] = width
                    state.agent_box[row, 6] = model.parked_height
                    state.agent_box[row, 7] = float(_VEHICLE)


@wp.func
def respawn_world(model: ModelData, state: StateData, w: int):
    """Redraw world ``w``: light schedule, parked cars, then agents (count, types, sizes,
    conditioning, poses, speeds, goals)."""
    m = model.world_map[w]
    seed = state.world_seed[w]
    episode = state.world_episode[w]

    # traffic lights first: the spawn test rejects stop lines that are red or yellow at t = 0
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

    spawn_parked(model, state, w, m, rng_key(seed, _P_PARKED, episode, 0))

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
