"""Per-agent infraction and goal tests: collision, swept off-road, red light, goal reached."""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0) / bool(...)

from __future__ import annotations

import warp as wp

from pictura.maps.roadmap import LIGHT_RED
from pictura.sim.geometry import (
    BROAD_PHASE_MARGIN_M,
    Z_TOLERANCE_M,
    box_hits_segment,
    boxes_overlap,
    point_segment_distance,
    segments_distance,
    segments_intersect,
    swept_box_hits_segment,
    wrap_angle,
    xy,
)
from pictura.sim.lanes import grid_cell_range
from pictura.sim.model import ModelData
from pictura.sim.state import StateData

RED_LIGHT_RADIUS_M = 10.0
"""The red-light rule applies within this distance of the stop-line midpoint."""
RED_LIGHT_HEADING_RAD = 0.7853981633974483
"""... and with the heading within 45 deg of the lane direction."""
STOP_LINE_EXTENSION = 1.5
"""Stop lines are extended 1.5x about their midpoint, so a bumper cannot slip past an end."""
_RED = wp.constant(LIGHT_RED)


SWEPT_COLLISION_MIN_MOVE_M = 0.1
"""Both agents must move at least this far in a step for the mid-step pose test to run."""


@wp.func
def mid_pose(p0: wp.vec3, h0: float, p1: wp.vec3, h1: float):
    return xy(p0 + (p1 - p0) * 0.5), h0 + 0.5 * wrap_angle(h1 - h0)


@wp.func
def sweep_circle(state: StateData, slot: int):
    """Broad-phase circle of ``slot``'s step: centre at the mid-step position (the mid pose of
    the swept test), radius = circumradius + half the move (+ a float margin), so it holds the
    box at the end pose and at the mid pose; radius -1 for an invalid slot."""
    p = state.pos[slot]
    p0 = state.prev_pos[slot]
    l = state.length[slot]
    wd = state.width[slot]
    m = xy(p0 + (p - p0) * 0.5)
    radius = 0.5 * wp.sqrt(l * l + wd * wd) + 0.5 * wp.length(xy(p) - xy(p0)) + BROAD_PHASE_MARGIN_M
    if state.valid[slot] == 0:
        radius = -1.0
    return wp.vec4(m[0], m[1], p[2], radius)


@wp.func
def hits_parked(
    model: ModelData,
    parked_box: wp.array2d(dtype=float),
    w: int,
    p: wp.vec3,
    h: float,
    l: float,
    wd: float,
    pm: wp.vec2,
    hm: float,
    moved: bool,
    circle: wp.vec4,
    first: int,
    stride: int,
):
    """Does the box (centre ``p``, heading ``h``, length ``l``, width ``wd``), or when ``moved``
    its mid-step pose (``pm``, ``hm``), overlap one of world ``w``'s parked cars (rows of
    ``parked_box``, the snapshot)? ``circle`` is the mover's `sweep_circle`. |dz| >= 4 m never
    collides. Tests the world's parked rows ``first``, ``first + stride``, ... (all: 0, 1)."""
    r = 0.5 * wp.sqrt(l * l + wd * wd)
    row0 = model.num_slots + w * model.parked_per_world
    hit = int(0)
    for row in range(row0 + first, row0 + model.parked_per_world, stride):
        if hit == 0 and parked_box[row, 7] >= 0.0:
            lo = parked_box[row, 4]
            wo = parked_box[row, 5]
            ro = 0.5 * wp.sqrt(lo * lo + wo * wo)
            q = wp.vec3(parked_box[row, 0], parked_box[row, 1], parked_box[row, 2])
            reach = circle[3] + ro
            d = xy(q) - wp.vec2(circle[0], circle[1])
            if wp.dot(d, d) < reach * reach and wp.abs(q[2] - p[2]) < Z_TOLERANCE_M:
                if wp.length(xy(q) - xy(p)) < r + ro:
                    if boxes_overlap(xy(p), h, l, wd, xy(q), parked_box[row, 3], lo, wo):
                        hit = 1
                if hit == 0 and moved and wp.length(xy(q) - pm) < r + ro:
                    if boxes_overlap(pm, hm, l, wd, xy(q), parked_box[row, 3], lo, wo):
                        hit = 1
    return hit


@wp.func
def collides_part(
    model: ModelData,
    state: StateData,
    parked_box: wp.array2d(dtype=float),
    slot: int,
    w: int,
    part: int,
    agent_parts: int,
    parked_parts: int,
):
    """Does ``slot``'s box overlap any other valid box of world ``w`` (halted ones included) or
    one of its parked cars (rows of ``parked_box``)? Part ``part`` of the test: for ``part <
    agent_parts`` the world's slots ``start + part``, ``start + part + agent_parts``, ...; else
    the parked rows ``part - agent_parts``, + ``parked_parts``, ... . The collision test is the OR of
    its ``agent_parts + parked_parts`` parts (`contact_kernel` runs them in parallel).

    Tested at the end of the step and, when both agents moved >= 0.1 m, at the mid-step poses
    too (so fast agents cannot pass through each other); parked cars at both poses. Pairs
    whose `sweep_circle`s do not meet (one vec4 read per pair), further apart than the sum of
    circumradii, or |dz| >= 4 m, are skipped before SAT.
    """
    p = state.pos[slot]
    h = state.heading[slot]
    l = state.length[slot]
    wd = state.width[slot]
    r = 0.5 * wp.sqrt(l * l + wd * wd)
    circle = state.sweep_circle[slot]
    pm, hm = mid_pose(state.prev_pos[slot], state.prev_heading[slot], p, h)
    moved = wp.length(p - state.prev_pos[slot]) >= SWEPT_COLLISION_MIN_MOVE_M
    hit = int(0)
    if part < agent_parts:
        start = state.world_slot_start[w]
        for other in range(start + part, start + state.world_slot_count[w], agent_parts):
            if hit == 0 and other != slot:
                c = state.sweep_circle[other]
                reach = circle[3] + c[3]
                dx = c[0] - circle[0]
                dy = c[1] - circle[1]
                # c[3] < 0: invalid slot
                if c[3] >= 0.0 and dx * dx + dy * dy < reach * reach and wp.abs(c[2] - p[2]) < Z_TOLERANCE_M:
                    q = state.pos[other]
                    ho = state.heading[other]
                    lo = state.length[other]
                    wo = state.width[other]
                    ro = 0.5 * wp.sqrt(lo * lo + wo * wo)
                    if wp.length(xy(q) - xy(p)) < r + ro:
                        if boxes_overlap(xy(p), h, l, wd, xy(q), ho, lo, wo):
                            hit = 1
                    if (
                        hit == 0
                        and moved
                        and wp.length(q - state.prev_pos[other]) >= SWEPT_COLLISION_MIN_MOVE_M
                    ):
                        qm, hom = mid_pose(state.prev_pos[other], state.prev_heading[other], q, ho)
                        if wp.length(qm - pm) < r + ro:
                            if boxes_overlap(pm, hm, l, wd, qm, hom, lo, wo):
                                hit = 1
    else:
        hit = hits_parked(
            model, parked_box, w, p, h, l, wd, pm, hm, moved, circle, part - agent_parts, parked_parts
        )
    return hit


@wp.func
def runs_red_light(model: ModelData, state_in: StateData, state: StateData, slot: int, w: int):
    """Did the agent's rear bumper cross its lane's stop line while the light was red?

    The lane is the one held before the step; the light state is the one the agent observed
    (``state_in``). Also needs the agent within 10 m of the stop-line midpoint and heading within
    45 deg of the lane's final direction; the stop line is extended 1.5x (REFERENCE.md).
    """
    violated = int(0)
    lane = state_in.lane[slot]
    if lane >= 0:
        stop = model.lane_stop_line[lane]
        if stop >= 0:
            light = model.stop_line_light[stop]
            if light >= 0:
                if state_in.light_state[model.world_light_start[w] + light] == _RED:
                    a = model.stop_line_a[stop]
                    b = model.stop_line_b[stop]
                    mid = (a + b) * 0.5
                    p0 = state.prev_pos[slot]
                    p1 = state.pos[slot]
                    last = model.lane_seg_start[lane + 1] - 1
                    d = xy(model.lane_seg_b[last]) - xy(model.lane_seg_a[last])
                    err = wrap_angle(state.heading[slot] - wp.atan2(d[1], d[0]))
                    near = wp.length(xy(p1) - xy(mid)) < RED_LIGHT_RADIUS_M
                    if (
                        near
                        and wp.abs(err) < RED_LIGHT_HEADING_RAD
                        and wp.abs(p1[2] - mid[2]) < Z_TOLERANCE_M
                    ):
                        half = 0.5 * state.length[slot]
                        h0 = state.prev_heading[slot]
                        h1 = state.heading[slot]
                        rear0 = xy(p0) - wp.vec2(wp.cos(h0), wp.sin(h0)) * half
                        rear1 = xy(p1) - wp.vec2(wp.cos(h1), wp.sin(h1)) * half
                        ea = xy(mid) + (xy(a) - xy(mid)) * STOP_LINE_EXTENSION
                        eb = xy(mid) + (xy(b) - xy(mid)) * STOP_LINE_EXTENSION
                        if segments_intersect(rear0, rear1, ea, eb):
                            violated = 1
    return violated


@wp.func
def crosses_road_edge_part(
    model: ModelData,
    m: int,
    pos0: wp.vec3,
    heading0: float,
    pos1: wp.vec3,
    heading1: float,
    length: float,
    width: float,
    walls_only: int,
    part: int,
    parts: int,
):
    """Part ``part`` of ``parts`` of `crosses_road_edge`: only the cell items ``k`` (indices of
    ``edge_cell_items``) with ``k % parts == part``; the test is the OR of its parts."""
    hl = 0.5 * length
    hw = 0.5 * width
    r = wp.sqrt(hl * hl + hw * hw)
    reach = r + BROAD_PHASE_MARGIN_M
    p0 = xy(pos0)
    p1 = xy(pos1)
    lo = wp.vec2(wp.min(p0[0], p1[0]) - r, wp.min(p0[1], p1[1]) - r)
    hi = wp.vec2(wp.max(p0[0], p1[0]) + r, wp.max(p0[1], p1[1]) + r)
    ix0, iy0, ix1, iy1 = grid_cell_range(model, m, lo, hi)
    nx = model.map_grid_nx[m]
    base = model.map_cell_start[m]
    hit = int(0)
    for iy in range(iy0, iy1 + 1):
        for ix in range(ix0, ix1 + 1):
            cell = base + iy * nx + ix
            k0 = model.edge_cell_offsets[cell]
            k0 = k0 + (part + parts - k0 % parts) % parts
            for k in range(k0, model.edge_cell_offsets[cell + 1], parts):
                e = model.edge_cell_items[k]
                if hit == 0 and (walls_only == 0 or model.edge_wall[e] != 0):
                    a = model.edge_a[e]
                    b = model.edge_b[e]
                    dz = wp.min(wp.abs(a[2] - pos1[2]), wp.abs(b[2] - pos1[2]))
                    # every swept pose lies within r of the centre's path: farther segments
                    # cannot be touched (a cheap test before the 4 interpolated poses)
                    if dz < Z_TOLERANCE_M and segments_distance(p0, p1, xy(a), xy(b)) < reach:
                        if swept_box_hits_segment(p0, heading0, p1, heading1, hl, hw, xy(a), xy(b)):
                            hit = 1
    return hit


@wp.func
def crosses_road_edge(
    model: ModelData,
    m: int,
    pos0: wp.vec3,
    heading0: float,
    pos1: wp.vec3,
    heading1: float,
    length: float,
    width: float,
    walls_only: int,
):
    """Does the box swept from pose 0 to pose 1 cross a road-edge or wall segment of map ``m``
    (only a wall when ``walls_only`` != 0)?

    Only segments whose nearest endpoint height is within 4 m of the agent count.
    """
    return crosses_road_edge_part(model, m, pos0, heading0, pos1, heading1, length, width, walls_only, 0, 1)


@wp.func
def box_on_road_edge(
    model: ModelData, m: int, pos: wp.vec3, heading: float, length: float, width: float, walls_only: int
):
    """Does a static box touch a road-edge or wall segment of map ``m`` (only a wall when
    ``walls_only`` != 0)? The spawn test."""
    hl = 0.5 * length
    hw = 0.5 * width
    r = wp.sqrt(hl * hl + hw * hw)
    p = xy(pos)
    ix0, iy0, ix1, iy1 = grid_cell_range(model, m, p - wp.vec2(r, r), p + wp.vec2(r, r))
    nx = model.map_grid_nx[m]
    base = model.map_cell_start[m]
    hit = int(0)
    for iy in range(iy0, iy1 + 1):
        for ix in range(ix0, ix1 + 1):
            cell = base + iy * nx + ix
            for k in range(model.edge_cell_offsets[cell], model.edge_cell_offsets[cell + 1]):
                e = model.edge_cell_items[k]
                a = model.edge_a[e]
                b = model.edge_b[e]
                wall_ok = walls_only == 0 or model.edge_wall[e] != 0
                if (
                    hit == 0
                    and wall_ok
                    and wp.min(wp.abs(a[2] - pos[2]), wp.abs(b[2] - pos[2])) < Z_TOLERANCE_M
                ):
                    if point_segment_distance(p, xy(a), xy(b)) < r + BROAD_PHASE_MARGIN_M:
                        if box_hits_segment(p, heading, hl, hw, xy(a), xy(b)):
                            hit = 1
    return hit


@wp.func
def goal_reached(goal: wp.vec3, pos0: wp.vec3, pos1: wp.vec3, radius: float):
    """Is ``goal`` within ``radius`` of the segment swept from pos0 to pos1 (and |dz| < 4 m)?"""
    near = point_segment_distance(xy(goal), xy(pos0), xy(pos1)) < radius
    return near and wp.abs(goal[2] - pos1[2]) < Z_TOLERANCE_M
