"""Masked world reset: lights, parked cars, agent count, types, sizes, Table 2 conditioning,
spawn poses and speeds, goals; every part parallel over worlds' rows (no thread loops over a
world's agents x tries x map queries).

A reset is a fixed sequence of launches that run every step, masked by ``world_reset`` (no
host sync, nothing data dependent), each kernel in `pictura.sim.kernels`:

1. ``reset_rows_kernel``, one thread per snapshot row, world junction and world light:
   resetting worlds draw each junction's schedule and light outage (the spawn test needs the
   lights at t = 0), clear each slot and draw its type, size and conditioning, clear each
   parked row; other worlds carry their schedules and parked rows over.
2. ``spawn_static_kernel``, one thread per (row, try): the tests that need no other agent, for
   many tries at once (every try of a parked car, the first `EAGER_AGENT_TRIES` of an agent;
   a round tests a later one when it gets there): the 1.1x box clear of road edges and walls
   (pedestrians: walls), vehicles and cyclists off red / yellow stop lines, parked cars beside a
   curb (maps without parking spots).
3. ``spawn_round_kernel`` launched `SPAWN_ROUNDS` + 1 times, one thread per row: the overlap
   tests. A world's rows are ranked, its parked cars first, then its slots in order. In round r
   every unplaced row holds at most one proposal; it is accepted when it overlaps no proposal
   of a higher-ranked row in the same round (so accepted rows never overlap each other), else
   the row scans its next statically clear tries for one that overlaps neither a row placed
   before this round nor any proposal of this round (a superset of what this round accepts),
   and proposes it in round r + 1 (testing up to `SEARCH_BATCH` statically clear tries per pass
   over the world's rows). The acceptance test of rounds >= 0 runs just before, in
   ``spawn_conflict_kernel`` over (part, row) threads (`spawn_conflict_part`). Launch -1 only
   proposes; a row still unplaced after the last
   round, or out of tries, stays invalid. Overlap means the boxes overlap at t = 0,
   forecast / 2 or forecast under constant velocity (parked cars stand still).

Every row only writes its own entries; a round reads the proposals the previous launch wrote
(double-buffered by round parity), so the result does not depend on thread order. All draws
come from ``wp.rand_init`` keyed by (world seed, episode, slot, try), so a seeded rollout
repeats bit for bit on the same device.
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
from pictura.sim.geometry import Z_TOLERANCE_M, box_half_extents, box_hits_segment, boxes_overlap, rng_key, xy
from pictura.sim.goals import NO_GOAL_REQUEST, request_goal_set
from pictura.sim.grid import walk_cell
from pictura.sim.lanes import GOAL_WALK_TRIES, lane_speed_limit, map_cells
from pictura.sim.model_data import ModelData
from pictura.sim.snapshot import BOX_INVALID, BOX_ROW_FLOATS, BoxCol
from pictura.sim.state import StateData
from pictura.sim.traffic import JUNCTION_ALWAYS_GREEN, JUNCTION_CYCLING, JUNCTION_OFF, light_phase

SPAWN_EDGE_MARGIN = 1.1
"""The spawn box is scaled by this before the road-edge test (REFERENCE.md)."""
PURPOSE_AGENTS, PURPOSE_LIGHTS, PURPOSE_GOALS, PURPOSE_SEED, PURPOSE_PARKED = 1, 2, 3, 4, 5
"""RNG key purposes, so the streams of different draws never coincide."""
ATTEMPT_STRIDE = 1024
"""RNG offsets per slot: 0 = size and conditioning, 1..attempts = spawn tries, the last
GOAL_WALK_TRIES = goal-set tries."""

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
SPAWN_ROUNDS = 4
"""Acceptance rounds of the overlap test (a row proposes one try per round)."""
EAGER_AGENT_TRIES = 8
"""Tries per agent slot that `spawn_static_kernel` tests up front (about 97 % pass on the CARLA
towns); later ones are tested when a round reaches them. Parked cars test all their tries up
front (beside lanes, as few as a quarter pass)."""
SEARCH_BATCH = 4
"""Statically clear tries a rejected row tests against the round in one pass over its world's
rows (`clear_of_round`)."""
STATIC_UNKNOWN = -1
"""``spawn_static_ok`` of a try not tested yet."""
NOT_PLACED = 1 << 30
"""``spawn_placed_round`` of a row not (yet) placed."""
DEFAULT_SPEED_LIMIT = 15.0
"""m/s where a lane gives none (the rules use the same value)."""
_STRIDE = wp.constant(ATTEMPT_STRIDE)
_MODE_CYCLING = wp.constant(JUNCTION_CYCLING)
_MODE_OFF = wp.constant(JUNCTION_OFF)
_MODE_GREEN = wp.constant(JUNCTION_ALWAYS_GREEN)
_P_AGENTS = wp.constant(PURPOSE_AGENTS)
_GOAL_TRIES = wp.constant(GOAL_WALK_TRIES)
_NO_GOAL_REQUEST = wp.constant(NO_GOAL_REQUEST)
_P_LIGHTS = wp.constant(PURPOSE_LIGHTS)
_FORECAST_SAMPLES = wp.constant(FORECAST_SAMPLES)
_NOT_PLACED = wp.constant(NOT_PLACED)
_EAGER_AGENT_TRIES = wp.constant(EAGER_AGENT_TRIES)
_STATIC_UNKNOWN = wp.constant(STATIC_UNKNOWN)
_SEARCH_BATCH = wp.constant(SEARCH_BATCH)
_EDGE_MARGIN = wp.constant(SPAWN_EDGE_MARGIN)
_CURB_GAP = wp.constant(PARKED_CURB_GAP)
_CURB_PROBE = wp.constant(PARKED_CURB_PROBE)


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
    state.goal_stream[slot] = _NO_GOAL_REQUEST
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
    """Does the box touch a stop line whose light is red or yellow at t = 0 (spawn test)? Only
    the stop lines listed in the grid cells under the box are tested."""
    hl, hw, r = box_half_extents(length, width)
    p = xy(pos)
    cells = map_cells(model, m, p - wp.vec2(r, r), p + wp.vec2(r, r))
    hit = int(0)
    for i in range(cells[3]):
        cell = walk_cell(cells, i)
        for item in range(model.stop_cell_offsets[cell], model.stop_cell_offsets[cell + 1]):
            k = model.stop_cell_items[item]
            light = model.stop_line_light[k]
            if hit == 0 and light >= 0:
                a = model.stop_line_a[k]
                b = model.stop_line_b[k]
                mid = (a + b) * 0.5
                near = wp.length(xy(mid) - p) < r + 0.5 * wp.length(xy(b) - xy(a))
                if near and wp.abs(mid[2] - pos[2]) < Z_TOLERANCE_M:
                    st = light_at_reset(model, state, w, m, light)
                    if st == _RED or st == _YELLOW:
                        if box_hits_segment(p, heading, hl, hw, xy(a), xy(b)):
                            hit = 1
    return hit


@wp.func
def row_world(model: ModelData, state: StateData, row: int):
    """World of snapshot row ``row`` (a slot, or a parked row after the S slots)."""
    w = int(0)
    if row < model.num_slots:
        w = state.slot_world[row]
    else:
        w = (row - model.num_slots) // model.parked_per_world
    return w


@wp.func
def agents_key(state: StateData, w: int):
    return rng_key(state.world_seed[w], _P_AGENTS, state.world_episode[w], 0)


@wp.func
def parked_key(state: StateData, w: int):
    return rng_key(state.world_seed[w], _P_PARKED, state.world_episode[w], 0)


@wp.func
def lights_key(state: StateData, w: int):
    return rng_key(state.world_seed[w], _P_LIGHTS, state.world_episode[w], 0)


@wp.func
def agent_count_draw(model: ModelData, state: StateData, w: int):
    """World ``w``'s draw U{agents_lo, agents_hi} for its new episode (its own RNG stream)."""
    rng = wp.rand_init(agents_key(state, w), -1)
    return wp.randi(rng, model.agents_lo, model.agents_hi + 1)


@wp.func
def draw_agent_count(model: ModelData, state: StateData, w: int):
    """Agents of world ``w``'s new episode in a static layout, `agent_count_draw` (written to
    ``world_agent_count``; its first that many slots try to spawn)."""
    n = agent_count_draw(model, state, w)
    state.world_agent_count[w] = n
    return n


@wp.func
def draw_junction(model: ModelData, state: StateData, wj: int):
    """Schedule of world junction ``wj`` for its world's new episode (green, yellow, red,
    offset, mode; all of a world's junctions are off together with p all_off_p)."""
    w = model.world_junction_world[wj]
    m = model.world_map[w]
    j = wj - model.world_junction_start[w]
    key = lights_key(state, w)
    world_rng = wp.rand_init(key, -1)
    all_off = wp.randf(world_rng) < model.all_off_p
    r = wp.rand_init(key, j)
    green = wp.randf(r, model.green_lo, model.green_hi)
    yellow = wp.randf(r, model.yellow_lo, model.yellow_hi)
    red = wp.randf(r, model.red_lo, model.red_hi)
    groups = model.junction_group_count[model.map_junction_start[m] + j]
    period = float(wp.max(groups, 1)) * (green + yellow + red)
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


@wp.func
def draw_light_off(model: ModelData, state: StateData, tl: int):
    """Outage flag of world light ``tl`` for its world's new episode (p off_p)."""
    w = model.world_light_world[tl]
    m = model.world_map[w]
    nj = model.map_junction_start[m + 1] - model.map_junction_start[m]
    r = wp.rand_init(lights_key(state, w), nj + tl - model.world_light_start[w])
    off = int(0)
    if wp.randf(r) < model.off_p:
        off = 1
    state.light_off[tl] = off


@wp.func
def draw_agent(model: ModelData, state: StateData, slot: int, local: int, key: int):
    """Type, size and Table 2 conditioning of ``slot`` (local index ``local`` in its world)."""
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
    state.length[slot] = length
    state.width[slot] = width


@wp.func
def agent_try(model: ModelData, state: StateData, m: int, slot: int, local: int, attempt: int, key: int):
    """Pose of try ``attempt`` of ``slot``: a random point of a random lane segment with the
    lane heading (pedestrians: of a pedestrian-path segment, facing either way), at rest
    speed U(0, spawn_speed_fraction x limit). Returns (usable, pos, heading, speed, segment)."""
    kind = state.kind[slot]
    seg0 = model.map_lane_seg_start[m]
    nseg = model.map_lane_seg_start[m + 1] - seg0
    if kind == _PEDESTRIAN:
        seg0 = model.map_ped_seg_start[m]
        nseg = model.map_ped_seg_start[m + 1] - seg0
    usable = bool(False)
    pos = wp.vec3(0.0, 0.0, 0.0)
    heading = float(0.0)
    speed = float(0.0)
    seg = int(-1)
    if nseg > 0:
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
            usable = True
            pos = a + (b - a) * t
            heading = wp.atan2(d[1], d[0])
            limit = model.type_v_max[kind]
            if kind == _PEDESTRIAN:
                if wp.randf(r) < 0.5:
                    heading = heading + wp.pi
                    if heading >= wp.pi:
                        heading = heading - 2.0 * wp.pi
            else:
                limit = wp.min(limit, lane_speed_limit(model, model.lane_seg_lane[seg]))
            speed = wp.randf(r, 0.0, model.spawn_speed_fraction * limit)
    return usable, pos, heading, speed, seg


@wp.func
def parked_size(model: ModelData, i: int, key: int):
    """(length, width) of parked car ``i`` of a world."""
    rng = wp.rand_init(key, i * _STRIDE)
    length = wp.randf(rng, model.parked_length_lo, model.parked_length_hi)
    width = wp.min(wp.randf(rng, model.parked_width_lo, model.parked_width_hi), length)
    return length, width


@wp.func
def parked_try(model: ModelData, m: int, i: int, attempt: int, key: int, width: float):
    """Pose of try ``attempt`` of parked car ``i``: a random parking spot of the map or, on a
    map without spots, the right-hand side of a random lane segment (0.1 m inside the lane's
    right boundary). Returns (usable, pos, heading, right unit vector)."""
    k0 = model.map_park_start[m]
    nspots = model.map_park_start[m + 1] - k0
    r = wp.rand_init(key, i * _STRIDE + 1 + attempt)
    usable = bool(False)
    pos = wp.vec3(0.0, 0.0, 0.0)
    heading = float(0.0)
    right = wp.vec3(0.0, 0.0, 0.0)
    if nspots > 0:
        spot = model.park_spot[k0 + wp.randi(r, 0, nspots)]
        pos = wp.vec3(spot[0], spot[1], spot[2])
        heading = spot[3]
        usable = True
    else:
        seg0 = model.map_lane_seg_start[m]
        seg = seg0 + wp.randi(r, 0, model.map_lane_seg_start[m + 1] - seg0)
        a = model.lane_seg_a[seg]
        b = model.lane_seg_b[seg]
        d = xy(b) - xy(a)
        if wp.length(d) > 0.0:
            heading = wp.atan2(d[1], d[0])
            shift = 0.5 * (model.lane_width[model.lane_seg_lane[seg]] - width) - _CURB_GAP
            right = wp.vec3(wp.sin(heading), -wp.cos(heading), 0.0)
            pos = a + (b - a) * wp.randf(r) + right * shift
            usable = True
    return usable, pos, heading, right


@wp.func
def static_try_ok(model: ModelData, state: StateData, row: int, attempt: int):
    """1 when try ``attempt`` of ``row`` (of a resetting world) passes the tests that involve
    no other agent: agents' 1.1x box clear of road edges and walls (pedestrians: walls) and
    vehicles / cyclists off stop lines that are red or yellow at t = 0; parked cars beside
    lanes clear of edges with a curb within 0.6 m to their right."""
    w = row_world(model, state, row)
    m = model.world_map[w]
    ok = int(0)
    if row < model.num_slots:
        local = row - state.world_slot_start[w]
        if local < state.world_agent_count[w]:
            usable, pos, heading, speed, seg = agent_try(
                model, state, m, row, local, attempt, agents_key(state, w)
            )
            if usable:
                kind = state.kind[row]
                length = state.length[row]
                width = state.width[row]
                walls_only = int(0)
                if kind == _PEDESTRIAN:
                    walls_only = 1
                clear = box_on_road_edge(
                    model, m, pos, heading, _EDGE_MARGIN * length, _EDGE_MARGIN * width, walls_only
                )
                if clear == 0:
                    ok = 1
                    if kind != _PEDESTRIAN:
                        if on_stopping_line(model, state, w, m, pos, heading, length, width) != 0:
                            ok = 0
    elif state.world_agent_count[w] > 0:  # (an empty record of a packed block parks no cars)
        i = row - model.num_slots - w * model.parked_per_world
        key = parked_key(state, w)
        length, width = parked_size(model, i, key)
        usable, pos, heading, right = parked_try(model, m, i, attempt, key, width)
        if usable:
            ok = 1
            if model.map_park_start[m + 1] == model.map_park_start[m]:
                # beside a lane: clear of every edge, and a curb (road edge) right beside it
                if box_on_road_edge(model, m, pos, heading, length, width, 0) != 0:
                    ok = 0
                elif box_on_road_edge(model, m, pos + right * _CURB_PROBE, heading, length, width, 0) == 0:
                    ok = 0
    return ok


@wp.func
def try_record(model: ModelData, state: StateData, row: int, attempt: int):
    """(pose, motion) of try ``attempt`` of ``row``: pose (x, y, z, heading), motion (speed,
    length, width, circumradius); only called for tries that passed `static_try_ok`."""
    w = row_world(model, state, row)
    m = model.world_map[w]
    pos = wp.vec3(0.0, 0.0, 0.0)
    heading = float(0.0)
    speed = float(0.0)
    length = float(0.0)
    width = float(0.0)
    if row < model.num_slots:
        local = row - state.world_slot_start[w]
        usable, p, h, v, seg = agent_try(model, state, m, row, local, attempt, agents_key(state, w))
        pos = p
        heading = h
        speed = v
        length = state.length[row]
        width = state.width[row]
    else:
        i = row - model.num_slots - w * model.parked_per_world
        key = parked_key(state, w)
        length, width = parked_size(model, i, key)
        usable, p, h, right = parked_try(model, m, i, attempt, key, width)
        pos = p
        heading = h
    radius = 0.5 * wp.sqrt(length * length + width * width)
    return wp.vec4(pos[0], pos[1], pos[2], heading), wp.vec4(speed, length, width, radius)


@wp.func
def records_overlap(model: ModelData, pa: wp.vec4, ma: wp.vec4, pb: wp.vec4, mb: wp.vec4):
    """Do two spawn records (pose, motion as in `try_record`) overlap at t = 0, forecast / 2
    or forecast under constant velocity? Pairs whose circumcircles cannot meet within the
    forecast, or |dz| >= 4 m, cost one distance test."""
    horizon = model.spawn_forecast_s
    va = ma[0]
    vb = mb[0]
    rr = ma[3] + mb[3]
    reach = rr + (wp.abs(va) + wp.abs(vb)) * horizon
    d = wp.vec2(pb[0] - pa[0], pb[1] - pa[1])
    hit = bool(False)
    if wp.dot(d, d) < reach * reach and wp.abs(pb[2] - pa[2]) < Z_TOLERANCE_M:
        ua = wp.vec2(wp.cos(pa[3]), wp.sin(pa[3]))
        ub = wp.vec2(wp.cos(pb[3]), wp.sin(pb[3]))
        samples = int(_FORECAST_SAMPLES)
        if va == 0.0 and vb == 0.0:
            samples = 1
        for i in range(samples):
            t = horizon * float(i) / float(_FORECAST_SAMPLES - 1)
            ca = wp.vec2(pa[0], pa[1]) + ua * (va * t)
            cb = wp.vec2(pb[0], pb[1]) + ub * (vb * t)
            if not hit and wp.length(cb - ca) < rr:
                if boxes_overlap(ca, pa[3], ma[1], ma[2], cb, pb[3], mb[1], mb[2]):
                    hit = True
    return hit


@wp.func
def spawn_rank(model: ModelData, state: StateData, w: int, row: int):
    """Acceptance priority of ``row`` in world ``w``: its parked rows first, then its slots."""
    rank = int(0)
    if row < model.num_slots:
        rank = model.parked_per_world + row - state.world_slot_start[w]
    else:
        rank = row - model.num_slots - w * model.parked_per_world
    return rank


@wp.func
def world_row(model: ModelData, state: StateData, w: int, rank: int):
    """Snapshot row of rank ``rank`` in world ``w`` (inverse of `spawn_rank`)."""
    row = int(0)
    if rank < model.parked_per_world:
        row = model.num_slots + w * model.parked_per_world + rank
    else:
        row = state.world_slot_start[w] + rank - model.parked_per_world
    return row


@wp.func
def clear_of_round(
    model: ModelData,
    state: StateData,
    w: int,
    row: int,
    spawn_round: int,
    n: int,
    poses: wp.mat44,
    motions: wp.mat44,
):
    """Which of the first ``n`` (<= SEARCH_BATCH) records (rows of ``poses`` / ``motions``, as
    in `try_record`) overlap no row placed before
    ``spawn_round`` and no proposal of that round (other than ``row``'s own)? Bit i set: record
    i is clear. One pass over the world's rows for the whole batch (one row's loads serve
    every candidate)."""
    cur = (spawn_round + 2) % 2
    clear = int((1 << n) - 1)
    ranks = model.parked_per_world + state.world_slot_count[w]
    for rank in range(ranks):
        j = world_row(model, state, w, rank)
        if clear != 0 and j != row:
            placed = state.spawn_placed_round[j]
            b = cur
            live = bool(True)
            if placed < spawn_round:
                b = (placed + 2) % 2
            else:
                live = state.spawn_motion[cur, j][3] >= 0.0
            if live:
                pj = state.spawn_pose[b, j]
                mj = state.spawn_motion[b, j]
                for i in range(n):
                    bit = 1 << i
                    if (clear & bit) != 0:
                        pa = poses[i]
                        ma = motions[i]
                        if records_overlap(model, pa, ma, pj, mj):
                            clear = clear - bit
    return clear


@wp.func
def row_in_round(model: ModelData, state: StateData, row: int, spawn_round: int):
    """Is ``row`` still placing in round ``spawn_round``: its world resets this step, it is a
    drawn agent slot (or a parked row), and no earlier round accepted it."""
    w = row_world(model, state, row)
    if state.world_reset[w] == 0:
        return False
    if row < model.num_slots:
        if row - state.world_slot_start[w] >= state.world_agent_count[w]:
            return False
    elif state.world_agent_count[w] == 0:
        return False  # an empty world record of a packed block parks no cars
    return state.spawn_placed_round[row] >= spawn_round


@wp.func
def spawn_conflict_part(
    model: ModelData, state: StateData, row: int, spawn_round: int, part: int, parts: int
):
    """Part ``part`` of ``parts`` of round ``spawn_round``'s acceptance test of ``row``: sets
    ``spawn_conflict[row]`` when the live proposal of a higher-ranked row among ranks ``part``,
    ``part + parts``, ... overlaps ``row``'s proposal (`spawn_round_row` then rejects it)."""
    if not row_in_round(model, state, row, spawn_round):
        return
    w = row_world(model, state, row)
    cur = (spawn_round + 2) % 2
    motion = state.spawn_motion[cur, row]
    if motion[3] < 0.0:
        return
    pose = state.spawn_pose[cur, row]
    hit = bool(False)
    for rank in range(part, spawn_rank(model, state, w, row), parts):
        j = world_row(model, state, w, rank)
        other = state.spawn_motion[cur, j]
        if not hit and other[3] >= 0.0:
            if records_overlap(model, pose, motion, state.spawn_pose[cur, j], other):
                if state.spawn_placed_round[j] >= spawn_round:  # a live proposal
                    hit = True
    if hit:
        state.spawn_conflict[row] = 1


@wp.func
def place_agent(model: ModelData, state: StateData, w: int, slot: int, attempt: int):
    """Write ``slot``'s accepted try: pose, speed, lane, goals; the slot becomes valid."""
    m = model.world_map[w]
    local = slot - state.world_slot_start[w]
    key = agents_key(state, w)
    usable, pos, heading, speed, seg = agent_try(model, state, m, slot, local, attempt, key)
    kind = state.kind[slot]
    state.pos[slot] = pos
    state.prev_pos[slot] = pos
    state.heading[slot] = heading
    state.prev_heading[slot] = heading
    state.speed[slot] = speed
    state.height[slot] = model.type_height[kind]
    state.valid[slot] = 1
    if kind == _PEDESTRIAN:
        # a path set starts from the last waypoint's segment and position: the spawn's
        state.path_seg[slot] = seg
        state.goal[slot, 2] = pos
    else:
        state.lane[slot] = model.lane_seg_lane[seg]
    # drawn by the goal-walk pass after the last round (streams STRIDE - tries .. STRIDE - 1)
    request_goal_set(state, slot, key, local * _STRIDE + _STRIDE - _GOAL_TRIES)


@wp.func
def place_parked(model: ModelData, state: StateData, row: int, pose: wp.vec4, motion: wp.vec4):
    """Write a parked car's accepted try into its snapshot row."""
    state.agent_box[row, BoxCol.X] = pose[0]
    state.agent_box[row, BoxCol.Y] = pose[1]
    state.agent_box[row, BoxCol.Z] = pose[2]
    state.agent_box[row, BoxCol.HEADING] = pose[3]
    state.agent_box[row, BoxCol.LENGTH] = motion[1]
    state.agent_box[row, BoxCol.WIDTH] = motion[2]
    state.agent_box[row, BoxCol.HEIGHT] = model.parked_height
    state.agent_box[row, BoxCol.KIND] = float(_VEHICLE)


@wp.func
def spawn_round_row(model: ModelData, state: StateData, row: int, spawn_round: int, last: int):
    """Round ``spawn_round`` of the overlap test for ``row`` (module docstring): accept its
    proposal if no higher-ranked proposal of the round overlaps it, else propose its next
    clear try for the next round (none on the last round: the row stays invalid)."""
    if not row_in_round(model, state, row, spawn_round):
        return
    w = row_world(model, state, row)
    cur = (spawn_round + 2) % 2
    nxt = (spawn_round + 3) % 2
    accepted = bool(False)
    if spawn_round >= 0:
        motion = state.spawn_motion[cur, row]
        if motion[3] >= 0.0:
            # overlaps with higher-ranked proposals: `spawn_conflict_kernel`, just before
            accepted = state.spawn_conflict[row] == 0
            state.spawn_conflict[row] = 0
            if accepted:
                pose = state.spawn_pose[cur, row]
                state.spawn_placed_round[row] = spawn_round
                if row < model.num_slots:
                    place_agent(model, state, w, row, state.spawn_attempt[cur, row])
                else:
                    place_parked(model, state, row, pose, motion)
    if not accepted:
        if last != 0:
            if row < model.num_slots:
                clear_slot(state, row)  # its drawn type and conditioning are not kept
        else:
            # the first statically clear try from spawn_next that is clear of the round,
            # tested in batches of up to SEARCH_BATCH statically clear tries (one pass over
            # the world's rows per batch); a try not tested yet is only tested at the head of
            # a batch, i.e. when every earlier try failed (as in a try-by-try scan)
            found = bool(False)
            attempt = int(state.spawn_next[row])
            batch = int(_SEARCH_BATCH)
            if spawn_round < 0:
                batch = 1  # no clear test: the first statically clear try
            while attempt < model.spawn_attempts and not found:
                # the batch head's static test first, before any record of the batch is live
                head_ok = state.spawn_static_ok[row, attempt]
                if head_ok == _STATIC_UNKNOWN:
                    head_ok = static_try_ok(model, state, row, attempt)
                head = attempt
                n = int(0)
                tries = wp.vec4i(0, 0, 0, 0)
                poses = wp.mat44(0.0)
                motions = wp.mat44(0.0)
                gather = bool(True)
                while gather and attempt < model.spawn_attempts and n < batch:
                    ok = head_ok
                    if attempt > head:
                        ok = state.spawn_static_ok[row, attempt]
                        if ok == _STATIC_UNKNOWN:
                            gather = False  # left to the head of the next batch
                    if gather:
                        if ok != 0:
                            pose, motion = try_record(model, state, row, attempt)
                            tries[n] = attempt
                            poses[n] = pose
                            motions[n] = motion
                            n += 1
                        attempt += 1
                if n > 0:
                    clear = int(1)
                    if spawn_round >= 0:
                        clear = clear_of_round(model, state, w, row, spawn_round, n, poses, motions)
                    if clear != 0:
                        found = True
                        i = int(0)
                        while (clear & (1 << i)) == 0:
                            i += 1
                        pick = tries[i]
                        attempt = pick + 1
                        state.spawn_pose[nxt, row] = poses[i]
                        state.spawn_motion[nxt, row] = motions[i]
                        state.spawn_attempt[nxt, row] = pick
            state.spawn_next[row] = attempt
            if not found:
                state.spawn_motion[nxt, row] = wp.vec4(0.0, 0.0, 0.0, -1.0)


@wp.func
def begin_row_reset(model: ModelData, state: StateData, row: int):
    """Clear ``row`` of a resetting world and its spawn scratch; slots below the world's agent
    count draw their type, size and conditioning."""
    w = row_world(model, state, row)
    state.spawn_next[row] = 0
    state.spawn_placed_round[row] = _NOT_PLACED
    state.spawn_conflict[row] = 0
    none = wp.vec4(0.0, 0.0, 0.0, -1.0)
    state.spawn_motion[0, row] = none
    state.spawn_motion[1, row] = none
    if row < model.num_slots:
        clear_slot(state, row)
        local = row - state.world_slot_start[w]
        if local < state.world_agent_count[w]:
            draw_agent(model, state, row, local, agents_key(state, w))
    else:
        for c in range(BOX_ROW_FLOATS):
            state.agent_box[row, c] = 0.0
        state.agent_box[row, BoxCol.KIND] = _BOX_INVALID
