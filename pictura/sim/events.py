"""Per-agent infraction and goal tests: swept collision, off-road (swept box against road edges,
centre off the drivable map), red light (straight or by a lane change), goal reached."""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0) / bool(...)

from __future__ import annotations

import warp as wp

from pictura.maps.roadmap import LIGHT_RED
from pictura.sim.geometry import (
    BROAD_PHASE_MARGIN_M,
    Z_TOLERANCE_M,
    box_half_extents,
    box_hits_segment,
    point_segment_distance,
    segments_distance,
    segments_intersect,
    swept_box_hits_segment,
    swept_boxes_overlap,
    wrap_angle,
    xy,
)
from pictura.sim.grid import walk_cell
from pictura.sim.lanes import ASSOCIATION_WIDTHS, map_cells
from pictura.sim.model_data import ModelData
from pictura.sim.snapshot import BoxCol
from pictura.sim.state import StateData

RED_LIGHT_RADIUS_M = 10.0
"""The red-light rule applies within this distance of the stop-line midpoint."""
RED_LIGHT_HEADING_RAD = 0.7853981633974483
"""... and with the heading within 45 deg of the lane direction."""
STOP_LINE_EXTENSION = 1.5
"""Stop lines are extended 1.5x about their midpoint, so a bumper cannot slip past an end."""
DRIVABLE_MARGIN_LANE_WIDTHS = 0.5
"""The drivable area of the off-road centre test: each lane's polygon grown by this many lane
widths on both sides (`centre_on_drivable_map`)."""
_RED = wp.constant(LIGHT_RED)


@wp.func
def sweep_circle(state: StateData, slot: int):
    """Broad-phase circle of ``slot``'s step: centre at the mid-step position, radius =
    circumradius + half the move (+ a float margin), so it holds the box at every pose of the
    step's sweep (`swept_boxes_overlap`); radius -1 for an invalid slot."""
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
    p0: wp.vec2,
    h0: float,
    p: wp.vec3,
    h: float,
    l: float,
    wd: float,
    circle: wp.vec4,
    first: int,
    stride: int,
):
    """Does the box (length ``l``, width ``wd``) swept from (``p0``, ``h0``) to (``p``, ``h``)
    overlap one of world ``w``'s parked cars (rows of ``parked_box``, the snapshot)?
    ``circle`` is the mover's `sweep_circle`. |dz| >= 4 m never collides. Tests the world's
    parked rows ``first``, ``first + stride``, ... (all: 0, 1)."""
    row0 = model.num_slots + w * model.parked_per_world
    hit = int(0)
    for row in range(row0 + first, row0 + model.parked_per_world, stride):
        if hit == 0 and parked_box[row, BoxCol.KIND] >= 0.0:
            lo = parked_box[row, BoxCol.LENGTH]
            wo = parked_box[row, BoxCol.WIDTH]
            ro = 0.5 * wp.sqrt(lo * lo + wo * wo)
            q = wp.vec3(parked_box[row, BoxCol.X], parked_box[row, BoxCol.Y], parked_box[row, BoxCol.Z])
            reach = circle[3] + ro
            d = xy(q) - wp.vec2(circle[0], circle[1])
            if wp.dot(d, d) < reach * reach and wp.abs(q[2] - p[2]) < Z_TOLERANCE_M:
                ho = parked_box[row, BoxCol.HEADING]
                if swept_boxes_overlap(p0, h0, xy(p), h, l, wd, xy(q), ho, xy(q), ho, lo, wo):
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
    one of its parked cars (rows of ``parked_box``) at any moment of the step? Part ``part`` of
    the test: for ``part < agent_parts`` the world's slots ``start + part``, ``start + part +
    agent_parts``, ...; else the parked rows ``part - agent_parts``, + ``parked_parts``, ... .
    The collision test is the OR of its ``agent_parts + parked_parts`` parts (`contact_kernel`
    runs them in parallel).

    Both boxes are swept from their previous to their current pose (`swept_boxes_overlap`), so
    fast agents cannot pass through each other, a pedestrian or a parked car. Pairs whose
    `sweep_circle`s do not meet (one vec4 read per pair) or |dz| >= 4 m are skipped first.
    """
    p = state.pos[slot]
    h = state.heading[slot]
    l = state.length[slot]
    wd = state.width[slot]
    p0 = xy(state.prev_pos[slot])
    h0 = state.prev_heading[slot]
    circle = state.sweep_circle[slot]
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
                    if swept_boxes_overlap(
                        p0,
                        h0,
                        xy(p),
                        h,
                        l,
                        wd,
                        xy(state.prev_pos[other]),
                        state.prev_heading[other],
                        xy(state.pos[other]),
                        state.heading[other],
                        state.length[other],
                        state.width[other],
                    ):
                        hit = 1
    else:
        hit = hits_parked(model, parked_box, w, p0, h0, p, h, l, wd, circle, part - agent_parts, parked_parts)
    return hit


@wp.func
def crosses_red_stop_line(
    model: ModelData,
    state_in: StateData,
    state: StateData,
    slot: int,
    w: int,
    stop: int,
    rear0: wp.vec2,
    rear1: wp.vec2,
    extension: float,
):
    """Did the rear bumper's path ``rear0`` -> ``rear1`` cross stop line ``stop`` (global id;
    stretched ``extension`` x about its midpoint) while its light showed red (the state the
    agent observed, ``state_in``), the agent within 10 m of the line's midpoint and heading
    within 45 deg of the final direction of the line's lane?"""
    violated = int(0)
    light = model.stop_line_light[stop]
    if light >= 0:
        if state_in.light_state[model.world_light_start[w] + light] == _RED:
            a = model.stop_line_a[stop]
            b = model.stop_line_b[stop]
            mid = (a + b) * 0.5
            p1 = state.pos[slot]
            lane = model.stop_line_lane[stop]
            last = model.lane_seg_start[lane + 1] - 1
            d = xy(model.lane_seg_b[last]) - xy(model.lane_seg_a[last])
            err = wrap_angle(state.heading[slot] - wp.atan2(d[1], d[0]))
            near = wp.length(xy(p1) - xy(mid)) < RED_LIGHT_RADIUS_M
            if near and wp.abs(err) < RED_LIGHT_HEADING_RAD and wp.abs(p1[2] - mid[2]) < Z_TOLERANCE_M:
                ea = xy(mid) + (xy(a) - xy(mid)) * extension
                eb = xy(mid) + (xy(b) - xy(mid)) * extension
                if segments_intersect(rear0, rear1, ea, eb):
                    violated = 1
    return violated


@wp.func
def runs_red_light(model: ModelData, state_in: StateData, state: StateData, slot: int, w: int):
    """App. C.1: the agent's rear bumper crosses, or changes lane into, a stop line held red.

    Going straight: the stop line of the lane held before the step (``state_in.lane``),
    extended 1.5x about its midpoint (REFERENCE.md) so a bumper cannot slip past an end.
    Changing lane: every other stop line of the map near the bumper's path (the per-map stop-line
    grid), at its own length, so the bumper must pass over the line inside the lane it belongs
    to; a neighbour's line extended would catch an agent driving straight over its own green
    line. The same test catches the common straight-on case where the lane association moved
    the centre onto the junction's connector lane (no stop line) before the rear bumper crossed
    (on 16 CARLA worlds, 63 of 96 violations in 150 steps). Both need the line's light red, the agent within 10 m of the line's midpoint and
    heading within 45 deg of the line's lane (`crosses_red_stop_line`).
    """
    half = 0.5 * state.length[slot]
    h0 = state.prev_heading[slot]
    h1 = state.heading[slot]
    rear0 = xy(state.prev_pos[slot]) - wp.vec2(wp.cos(h0), wp.sin(h0)) * half
    rear1 = xy(state.pos[slot]) - wp.vec2(wp.cos(h1), wp.sin(h1)) * half
    own = int(-1)
    lane = state_in.lane[slot]
    if lane >= 0:
        own = model.lane_stop_line[lane]
    violated = int(0)
    if own >= 0:
        violated = crosses_red_stop_line(model, state_in, state, slot, w, own, rear0, rear1, STOP_LINE_EXTENSION)
    if violated == 0:
        m = model.world_map[w]
        lo = wp.vec2(wp.min(rear0[0], rear1[0]), wp.min(rear0[1], rear1[1]))
        hi = wp.vec2(wp.max(rear0[0], rear1[0]), wp.max(rear0[1], rear1[1]))
        cells = map_cells(model, m, lo, hi)
        for i in range(cells[3]):
            cell = walk_cell(cells, i)
            for item in range(model.stop_cell_offsets[cell], model.stop_cell_offsets[cell + 1]):
                stop = model.stop_cell_items[item]
                if violated == 0 and stop != own:
                    violated = crosses_red_stop_line(model, state_in, state, slot, w, stop, rear0, rear1, 1.0)
    return violated


@wp.func
def centre_on_drivable_map(model: ModelData, m: int, pos: wp.vec3, lane: int):
    """Is the agent's centre on map ``m``'s drivable area? App. C.1's second off-road test
    ("its center leaves the drivable map").

    The drivable area is the union of the lanes' polygons (centreline segments widened to the
    lane's width), each grown by `DRIVABLE_MARGIN_LANE_WIDTHS` lane widths on both sides: lane
    polygons alone do not tile a junction's curb-rounded corners or a road's shoulder, where a
    centre stays inside the road edges (the swept box test already covers crossing those).
    Only segments within 4 m in z count. ``lane`` (the associated lane, or -1) is tried first:
    an agent on its lane needs no grid search."""
    p = xy(pos)
    on = bool(False)
    if lane >= 0:
        limit = (0.5 + DRIVABLE_MARGIN_LANE_WIDTHS) * model.lane_width[lane]
        for seg in range(model.lane_seg_start[lane], model.lane_seg_start[lane + 1]):
            if not on and lane_segment_holds(model, seg, p, pos[2], limit):
                on = True
    if not on:
        # map_lane_reach is ASSOCIATION_WIDTHS of the map's widest lane
        reach = model.map_lane_reach[m] * ((0.5 + DRIVABLE_MARGIN_LANE_WIDTHS) / ASSOCIATION_WIDTHS)
        cells = map_cells(model, m, p - wp.vec2(reach, reach), p + wp.vec2(reach, reach))
        for i in range(cells[3]):
            cell = walk_cell(cells, i)
            for k in range(model.lane_cell_offsets[cell], model.lane_cell_offsets[cell + 1]):
                seg = model.lane_cell_items[k]
                if not on:
                    limit = (0.5 + DRIVABLE_MARGIN_LANE_WIDTHS) * model.lane_width[model.lane_seg_lane[seg]]
                    if lane_segment_holds(model, seg, p, pos[2], limit):
                        on = True
    return on


@wp.func
def lane_segment_holds(model: ModelData, seg: int, p: wp.vec2, z: float, limit: float):
    """Is ``p`` within ``limit`` m (xy) of lane segment ``seg``, at a height within 4 m of it?"""
    a3 = model.lane_seg_a[seg]
    b3 = model.lane_seg_b[seg]
    a = xy(a3)
    ab = xy(b3) - a
    den = wp.dot(ab, ab)
    t = float(0.0)
    if den > 0.0:
        t = wp.clamp(wp.dot(p - a, ab) / den, 0.0, 1.0)
    near = wp.length(p - (a + ab * t)) <= limit
    return near and wp.abs(z - (a3[2] + (b3[2] - a3[2]) * t)) < Z_TOLERANCE_M


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
    hl, hw, r = box_half_extents(length, width)
    reach = r + BROAD_PHASE_MARGIN_M
    p0 = xy(pos0)
    p1 = xy(pos1)
    lo = wp.vec2(wp.min(p0[0], p1[0]) - r, wp.min(p0[1], p1[1]) - r)
    hi = wp.vec2(wp.max(p0[0], p1[0]) + r, wp.max(p0[1], p1[1]) + r)
    cells = map_cells(model, m, lo, hi)
    hit = int(0)
    for i in range(cells[3]):
        cell = walk_cell(cells, i)
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
    hl, hw, r = box_half_extents(length, width)
    p = xy(pos)
    cells = map_cells(model, m, p - wp.vec2(r, r), p + wp.vec2(r, r))
    hit = int(0)
    for i in range(cells[3]):
        cell = walk_cell(cells, i)
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
