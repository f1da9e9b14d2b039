"""Lane queries through the per-map grid: association, stations, points along lanes, goal walks."""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0) / bool(...)

from __future__ import annotations

import warp as wp

from pictura.sim.geometry import Z_TOLERANCE_M, point_segment_distance, wrap_angle, xy
from pictura.sim.grid import cell_walk, clamped_cells
from pictura.sim.model_data import ModelData

ASSOCIATION_WIDTHS = 3.0
"""A lane is a candidate when the agent is within this many lane widths of its centreline."""
SWITCH_HYSTERESIS = 0.05
"""Score bonus of the current lane, so an agent does not flicker between two close lanes."""
DEFAULT_SPEED_LIMIT = 15.0
"""m/s, used where the lane gives no limit (or off any lane)."""
GOAL_WALK_TRIES = 8
"""Random walks tried per goal set before the last one is kept despite a sharp turn."""
MAX_WALK_LANES = 4096
"""Safety bound on branch points (or jump-table passes) crossed by one waypoint step of the walk."""
JUMP_LEVELS = 8
"""Levels of the single-successor jump table (one pass skips up to 2^8 - 1 lanes)."""


@wp.func
def grid_cell_range(model: ModelData, m: int, lo: wp.vec2, hi: wp.vec2):
    """Clamped cell index range (ix0, iy0, ix1, iy1) of map ``m`` covering the box [lo, hi]."""
    q = clamped_cells(lo, hi, model.map_grid_origin[m], model.map_grid_cell[m], model.map_grid_nx[m], model.map_grid_ny[m])
    return q[0], q[1], q[2], q[3]


@wp.func
def map_cells(model: ModelData, m: int, lo: wp.vec2, hi: wp.vec2) -> wp.vec4i:
    """Map ``m``'s grid cells under the box [lo, hi] as a `cell_walk` (visit them with
    `walk_cell`)."""
    ix0, iy0, ix1, iy1 = grid_cell_range(model, m, lo, hi)
    return cell_walk(wp.vec4i(ix0, iy0, ix1, iy1), model.map_cell_start[m], model.map_grid_nx[m])


@wp.func
def lane_speed_limit(model: ModelData, lane: int):
    limit = float(DEFAULT_SPEED_LIMIT)
    if lane >= 0:
        if model.lane_speed_limit[lane] > 0.0:
            limit = model.lane_speed_limit[lane]
    return limit


@wp.func
def score_lane_segment(
    model: ModelData, seg: int, p: wp.vec2, z: float, heading: float, current: int, best_score: float
):
    """Association score of lane segment ``seg`` for an agent at (``p``, ``z``) heading
    ``heading``: returns (better, score, lane, offset, heading error), ``better`` when the
    segment is a candidate (within 3 lane widths, |dz| < 4 m) scoring below ``best_score``.

    The distance term alone bounds the score from below, so the heading (an atan2) is only
    computed for segments that can still win; the result is the same."""
    a3 = model.lane_seg_a[seg]
    b3 = model.lane_seg_b[seg]
    lane = model.lane_seg_lane[seg]
    a = xy(a3)
    ab = xy(b3) - a
    better = bool(False)
    score = float(0.0)
    offset = float(0.0)
    err = float(0.0)
    seg_len2 = wp.dot(ab, ab)
    if seg_len2 > 0.0:
        t = wp.clamp(wp.dot(p - a, ab) / seg_len2, 0.0, 1.0)
        dist = wp.length(p - (a + ab * t))
        bound = 0.7 * dist / 4.0
        if lane == current:
            bound = bound - SWITCH_HYSTERESIS
        if bound < best_score and dist < ASSOCIATION_WIDTHS * model.lane_width[lane]:
            if wp.abs(z - (a3[2] + (b3[2] - a3[2]) * t)) < Z_TOLERANCE_M:
                err = wrap_angle(heading - wp.atan2(ab[1], ab[0]))
                score = 0.7 * dist / 4.0 + 0.3 * wp.abs(err) / wp.pi
                if lane == current:
                    score = score - SWITCH_HYSTERESIS
                if score < best_score:
                    better = True
                    u = ab / wp.sqrt(seg_len2)
                    # left of the direction of travel is negative
                    offset = -(u[0] * (p[1] - a[1]) - u[1] * (p[0] - a[0]))
    return better, score, lane, offset, err


@wp.func
def associate_lane(model: ModelData, m: int, pos: wp.vec3, heading: float, current: int):
    """Best lane near ``pos``: returns (lane or -1, signed lateral offset m, heading error rad).

    Score 0.7 dist/4 + 0.3 |dheading|/pi over lane segments within 3 lane widths and |dz| < 4 m;
    the current lane scores `SWITCH_HYSTERESIS` better. Offset is left-negative.

    The current lane's segments are scored first; their best score bounds how far a better
    segment can lie (0.7 dist / 4 - hysteresis < best), which shrinks the grid search from the
    map's 3 widest lane widths to about a metre for an agent on its lane.
    """
    p = xy(pos)
    best = int(-1)
    best_score = float(1.0e30)
    best_offset = float(0.0)
    best_err = float(0.0)
    if current >= 0:
        for seg in range(model.lane_seg_start[current], model.lane_seg_start[current + 1]):
            better, score, lane, offset, err = score_lane_segment(
                model, seg, p, pos[2], heading, current, best_score
            )
            if better:
                best = lane
                best_score = score
                best_offset = offset
                best_err = err
    reach = model.map_lane_reach[m]
    if best >= 0:
        reach = wp.min(reach, (best_score + SWITCH_HYSTERESIS) * (4.0 / 0.7) * 1.001 + 1.0e-3)
    ix0, iy0, ix1, iy1 = grid_cell_range(model, m, p - wp.vec2(reach, reach), p + wp.vec2(reach, reach))
    nx = model.map_grid_nx[m]
    base = model.map_cell_start[m]
    origin = model.map_grid_origin[m]
    size = model.map_grid_cell[m]
    for iy in range(iy0, iy1 + 1):
        for ix in range(ix0, ix1 + 1):
            # skip cells whose square lies beyond the reach circle
            lo = origin + wp.vec2(float(ix), float(iy)) * size
            gap = wp.max(wp.max(lo - p, p - (lo + wp.vec2(size, size))), wp.vec2(0.0, 0.0))
            if wp.length(gap) <= reach:
                cell = base + iy * nx + ix
                for k in range(model.lane_cell_offsets[cell], model.lane_cell_offsets[cell + 1]):
                    better, score, lane, offset, err = score_lane_segment(
                        model, model.lane_cell_items[k], p, pos[2], heading, current, best_score
                    )
                    if better:
                        best = lane
                        best_score = score
                        best_offset = offset
                        best_err = err
    return best, best_offset, best_err


@wp.func
def lane_station(model: ModelData, lane: int, pos: wp.vec3):
    """Distance along ``lane`` (m from its start) of the point closest to ``pos``."""
    p = xy(pos)
    best = float(1.0e30)
    station = float(0.0)
    along = float(0.0)
    for seg in range(model.lane_seg_start[lane], model.lane_seg_start[lane + 1]):
        a = xy(model.lane_seg_a[seg])
        b = xy(model.lane_seg_b[seg])
        seg_len = wp.length(b - a)
        d = point_segment_distance(p, a, b)
        if d < best:
            best = d
            t = float(0.0)
            if seg_len > 0.0:
                t = wp.clamp(wp.dot(p - a, b - a) / (seg_len * seg_len), 0.0, 1.0)
            station = along + t * seg_len
        along = along + seg_len
    return station


@wp.func
def lane_point(model: ModelData, lane: int, station: float):
    """Point (vec3) at distance ``station`` along ``lane`` (clamped to its ends)."""
    along = float(0.0)
    out = model.lane_seg_b[model.lane_seg_start[lane + 1] - 1]
    done = bool(False)
    for seg in range(model.lane_seg_start[lane], model.lane_seg_start[lane + 1]):
        a = model.lane_seg_a[seg]
        b = model.lane_seg_b[seg]
        seg_len = wp.length(xy(b) - xy(a))
        if not done and station <= along + seg_len:
            t = float(0.0)
            if seg_len > 0.0:
                t = wp.max(station - along, 0.0) / seg_len
            out = a + (b - a) * t
            done = True
        along = along + seg_len
    return out


@wp.func
def walk_lanes(model: ModelData, lane: int, station: float, distance: float, rng: wp.uint32):
    """Follow the lane graph ``distance`` m from (lane, station), picking a successor at random
    where a lane has several.

    Stops at the end of a lane with no successor. Runs of lanes with a single successor (95 %
    of the CARLA towns' 9 m lane chunks) are skipped through the jump table (``lane_jump``,
    ``lane_jump_length``: 2^k lanes ahead and their length) instead of lane by lane, so a 200 m
    step costs a few reads instead of ~20 dependent ones. Returns (lane, station, rng).
    """
    l = lane
    target = station + distance  # m from the start of lane l
    state = rng
    for _ in range(MAX_WALK_LANES):
        for kk in range(JUMP_LEVELS):
            k = JUMP_LEVELS - 1 - kk
            ahead = model.lane_jump[l, k]
            if ahead >= 0:
                skipped = model.lane_jump_length[l, k]
                if target > skipped:
                    target = target - skipped
                    l = ahead
        length = model.lane_length[l]
        if target <= length:
            break
        off = model.lane_succ_offsets[l]
        n = model.lane_succ_offsets[l + 1] - off
        if n == 0:
            target = length
            break
        target = target - length
        pick = int(0)
        if n > 1:
            pick = wp.randi(state, 0, n)
        l = model.lane_succ[off + pick]
    return l, target, state


@wp.func
def turn_ok(model: ModelData, direction: wp.vec2, previous: wp.vec2):
    n = wp.length(direction) * wp.length(previous)
    ok = True
    if n > 0.0:
        ok = wp.dot(direction, previous) / n >= model.max_goal_turn_cos
    return ok


@wp.func
def goal_walk(model: ModelData, lane: int, station: float, pos: wp.vec3, heading: float, rng: wp.uint32):
    """One try of a goal set: three waypoints by a random walk on the lane graph from (lane,
    station), spacing ~ U(goal_spacing_m). Returns (g0, g1, g2, ok) with ``ok`` when no chord
    direction (starting from the agent's heading) turns more than max_goal_turn_deg.

    A set takes the first of `GOAL_WALK_TRIES` tries that is ok, else the last; the tries run in
    parallel (``goal_walk_kernel``), each from its own RNG stream."""
    state = rng
    g0 = pos
    g1 = pos
    g2 = pos
    l = lane
    s = station
    prev_pt = pos
    prev_dir = wp.vec2(wp.cos(heading), wp.sin(heading))
    ok = bool(True)
    for g in range(3):
        step = wp.randf(state, model.goal_spacing_lo, model.goal_spacing_hi)
        l, s, state = walk_lanes(model, l, s, step, state)
        pt = lane_point(model, l, s)
        direction = xy(pt) - xy(prev_pt)
        if not turn_ok(model, direction, prev_dir):
            ok = False
        if wp.length(direction) > 0.0:
            prev_dir = direction
        prev_pt = pt
        if g == 0:
            g0 = pt
        elif g == 1:
            g1 = pt
        else:
            g2 = pt
    return g0, g1, g2, ok
