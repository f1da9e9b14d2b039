"""Warp functions for 2-D oriented boxes and segments (collision, off-road, goals).

Boxes are (centre xy, heading, half-length, half-width). Conventions: boxes that only touch do
not overlap (strict SAT); segments that touch do intersect (inclusive orientation test).
"""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0) / bool(...)

from __future__ import annotations

import warp as wp

SWEEP_SUBSTEPS = 4
"""Poses interpolated between the previous and current pose in the swept off-road test: enough
for a box to turn through ~180 deg in one step without stepping over an edge."""
SWEEP_HEADING_TOLERANCE_M = 0.02
"""The swept collision test (`swept_boxes_overlap`) holds each box's heading constant over an
interval of the step; it uses enough intervals that no corner is further than this from where
the turning box's corner is."""
Z_TOLERANCE_M = 4.0
"""Geometry further than this in z is on another level (overpass) and never interacts."""
BROAD_PHASE_MARGIN_M = 1.0e-3
"""Added to the bounding circles of the broad-phase tests, so float rounding never culls a pair
the exact test would hit."""


@wp.func
def wrap_angle(a: float):
    """``a`` wrapped to [-pi, pi)."""
    return a - 2.0 * wp.pi * wp.floor((a + wp.pi) / (2.0 * wp.pi))


@wp.func
def cross2(a: wp.vec2, b: wp.vec2):
    return a[0] * b[1] - a[1] * b[0]


@wp.func
def xy(p: wp.vec3):
    return wp.vec2(p[0], p[1])


@wp.func
def box_corner(centre: wp.vec2, heading: float, half_length: float, half_width: float, k: int):
    """Corner ``k`` (0..3, counter-clockwise from front-left) of an oriented box."""
    c = wp.cos(heading)
    s = wp.sin(heading)
    fx = half_length
    fy = half_width
    if k == 1:
        fx = -half_length
    if k == 2:
        fx = -half_length
        fy = -half_width
    if k == 3:
        fy = -half_width
    return wp.vec2(centre[0] + c * fx - s * fy, centre[1] + s * fx + c * fy)


@wp.func
def boxes_overlap(ca: wp.vec2, ha: float, la: float, wa: float, cb: wp.vec2, hb: float, lb: float, wb: float):
    """Separating-axis test of two oriented boxes (full length ``l``, width ``w``, m): the
    swept test `translating_boxes_overlap` with no move."""
    return translating_boxes_overlap(cb - ca, cb - ca, ha, la, wa, hb, lb, wb)


@wp.func
def segments_intersect(p1: wp.vec2, p2: wp.vec2, q1: wp.vec2, q2: wp.vec2):
    """Do closed segments p1p2 and q1q2 share a point (collinear overlap included)?"""
    r = p2 - p1
    s = q2 - q1
    d1 = cross2(s, p1 - q1)
    d2 = cross2(s, p2 - q1)
    d3 = cross2(r, q1 - p1)
    d4 = cross2(r, q2 - p1)
    hit = False
    if d1 * d2 <= 0.0 and d3 * d4 <= 0.0:
        if d1 == 0.0 and d2 == 0.0:
            # collinear: overlap of the projections on the longer direction
            axis = r
            if wp.dot(s, s) > wp.dot(r, r):
                axis = s
            a0 = wp.dot(p1, axis)
            a1 = wp.dot(p2, axis)
            b0 = wp.dot(q1, axis)
            b1 = wp.dot(q2, axis)
            hit = wp.max(wp.min(a0, a1), wp.min(b0, b1)) <= wp.min(wp.max(a0, a1), wp.max(b0, b1))
        else:
            hit = True
    return hit


@wp.func
def point_in_box(p: wp.vec2, centre: wp.vec2, heading: float, half_length: float, half_width: float):
    d = p - centre
    c = wp.cos(heading)
    s = wp.sin(heading)
    return wp.abs(c * d[0] + s * d[1]) < half_length and wp.abs(-s * d[0] + c * d[1]) < half_width


@wp.func
def box_half_extents(length: float, width: float):
    """(half length, half width, circumscribed radius) of a box's footprint."""
    hl = 0.5 * length
    hw = 0.5 * width
    return hl, hw, wp.sqrt(hl * hl + hw * hw)


@wp.func
def box_hits_segment(
    centre: wp.vec2, heading: float, half_length: float, half_width: float, a: wp.vec2, b: wp.vec2
):
    """Does segment ab cross an edge of the box or lie inside it?"""
    hit = point_in_box(a, centre, heading, half_length, half_width)
    for k in range(4):
        c0 = box_corner(centre, heading, half_length, half_width, k)
        c1 = box_corner(centre, heading, half_length, half_width, (k + 1) % 4)
        if segments_intersect(c0, c1, a, b):
            hit = True
    return hit


@wp.func
def swept_box_hits_segment(
    centre0: wp.vec2,
    heading0: float,
    centre1: wp.vec2,
    heading1: float,
    half_length: float,
    half_width: float,
    a: wp.vec2,
    b: wp.vec2,
):
    """Does the box swept from pose 0 to pose 1 touch segment ab?

    The sweep is `SWEEP_SUBSTEPS` interpolated poses (position linear, heading along the
    shorter turn); each pose's outline and each corner's path between poses is tested.
    """
    turn = wrap_angle(heading1 - heading0)
    hit = box_hits_segment(centre0, heading0, half_length, half_width, a, b)
    for i in range(1, SWEEP_SUBSTEPS + 1):
        t0 = float(i - 1) / float(SWEEP_SUBSTEPS)
        t1 = float(i) / float(SWEEP_SUBSTEPS)
        p0 = centre0 + (centre1 - centre0) * t0
        p1 = centre0 + (centre1 - centre0) * t1
        h0 = heading0 + turn * t0
        h1 = heading0 + turn * t1
        if box_hits_segment(p1, h1, half_length, half_width, a, b):
            hit = True
        for k in range(4):
            c0 = box_corner(p0, h0, half_length, half_width, k)
            c1 = box_corner(p1, h1, half_length, half_width, k)
            if segments_intersect(c0, c1, a, b):
                hit = True
    return hit


@wp.func
def point_segment_distance(p: wp.vec2, a: wp.vec2, b: wp.vec2):
    ab = b - a
    denom = wp.dot(ab, ab)
    t = float(0.0)
    if denom > 0.0:
        t = wp.clamp(wp.dot(p - a, ab) / denom, 0.0, 1.0)
    return wp.length(p - (a + ab * t))


@wp.func
def segments_distance(p1: wp.vec2, p2: wp.vec2, q1: wp.vec2, q2: wp.vec2):
    """Shortest distance between closed segments p1p2 and q1q2 (0 when they intersect)."""
    d = float(0.0)
    if not segments_intersect(p1, p2, q1, q2):
        d = wp.min(
            wp.min(point_segment_distance(p1, q1, q2), point_segment_distance(p2, q1, q2)),
            wp.min(point_segment_distance(q1, p1, p2), point_segment_distance(q2, p1, p2)),
        )
    return d


@wp.func
def translating_boxes_overlap(
    d0: wp.vec2, d1: wp.vec2, ha: float, la: float, wa: float, hb: float, lb: float, wb: float
):
    """Does box B (heading ``hb``, full length ``lb``, width ``wb``), its centre moving in a
    straight line from ``d0`` to ``d1`` relative to box A's centre, overlap box A (heading
    ``ha``) at any moment of that move? Exact for translation: separating axes over the swept
    shape (the convex hull of B at both ends, whose edges are B's and the move's) against A, i.e.
    the four box axes and the normal of the move. Touching is not overlap (as `boxes_overlap`)."""
    ua = wp.vec2(wp.cos(ha), wp.sin(ha))
    va = wp.vec2(-ua[1], ua[0])
    ub = wp.vec2(wp.cos(hb), wp.sin(hb))
    vb = wp.vec2(-ub[1], ub[0])
    move = d1 - d0
    normal = wp.vec2(-move[1], move[0])
    axes = int(4)
    if wp.dot(normal, normal) > 0.0:
        axes = 5
    overlap = bool(True)
    for k in range(axes):
        axis = ua
        if k == 1:
            axis = va
        if k == 2:
            axis = ub
        if k == 3:
            axis = vb
        if k == 4:
            axis = wp.normalize(normal)
        reach = (
            0.5 * la * wp.abs(wp.dot(ua, axis))
            + 0.5 * wa * wp.abs(wp.dot(va, axis))
            + 0.5 * lb * wp.abs(wp.dot(ub, axis))
            + 0.5 * wb * wp.abs(wp.dot(vb, axis))
        )
        s0 = wp.dot(d0, axis)
        s1 = wp.dot(d1, axis)
        if wp.min(s0, s1) >= reach or wp.max(s0, s1) <= -reach:
            overlap = False
    return overlap


@wp.func
def swept_boxes_overlap(
    ca0: wp.vec2,
    ha0: float,
    ca1: wp.vec2,
    ha1: float,
    la: float,
    wa: float,
    cb0: wp.vec2,
    hb0: float,
    cb1: wp.vec2,
    hb1: float,
    lb: float,
    wb: float,
):
    """Do boxes A and B, each moving from pose 0 to pose 1 during the step (centre linear,
    heading along the shorter turn), overlap at any moment of it?

    The step is cut into 1 to `SWEEP_SUBSTEPS` intervals, as many as keep each box's heading,
    held at the interval's middle, within `SWEEP_HEADING_TOLERANCE_M` of its true corner
    positions (one for boxes that do not turn); in each, `translating_boxes_overlap` tests the
    relative move exactly, so no partner, however thin, is passed through. The end poses are
    also tested exactly. End poses, and intervals, whose centres stay farther apart than the two
    circumradii are skipped before any trigonometry. A static partner is ``cb0 == cb1``,
    ``hb0 == hb1``."""
    ra = 0.5 * wp.sqrt(la * la + wa * wa)
    rb = 0.5 * wp.sqrt(lb * lb + wb * wb)
    reach = ra + rb + BROAD_PHASE_MARGIN_M
    hit = bool(False)
    if wp.length(cb1 - ca1) < reach:
        hit = boxes_overlap(ca1, ha1, la, wa, cb1, hb1, lb, wb)
    turn_a = wrap_angle(ha1 - ha0)
    turn_b = wrap_angle(hb1 - hb0)
    # a heading held at an interval's middle is off by at most half the interval's turn
    swing = 0.5 * wp.max(ra * wp.abs(turn_a), rb * wp.abs(turn_b))
    intervals = wp.clamp(int(wp.ceil(swing / SWEEP_HEADING_TOLERANCE_M)), 1, SWEEP_SUBSTEPS)
    origin = wp.vec2(0.0, 0.0)
    for i in range(intervals):
        if not hit:
            t0 = float(i) / float(intervals)
            t1 = float(i + 1) / float(intervals)
            d0 = (cb0 - ca0) + ((cb1 - cb0) - (ca1 - ca0)) * t0
            d1 = (cb0 - ca0) + ((cb1 - cb0) - (ca1 - ca0)) * t1
            if point_segment_distance(origin, d0, d1) < reach:
                tm = 0.5 * (t0 + t1)
                if translating_boxes_overlap(d0, d1, ha0 + turn_a * tm, la, wa, hb0 + turn_b * tm, lb, wb):
                    hit = True
    return hit


@wp.func
def hash_u32(x: wp.uint32):
    """Integer hash (lowbias32) used to derive RNG keys from (seed, episode, slot, ...)."""
    x = x ^ (x >> wp.uint32(16))
    x = x * wp.uint32(0x7FEB352D)
    x = x ^ (x >> wp.uint32(15))
    x = x * wp.uint32(0x846CA68B)
    x = x ^ (x >> wp.uint32(16))
    return x


@wp.func
def rng_key(seed: int, purpose: int, a: int, b: int):
    """A non-negative int32 RNG seed from a world seed, a purpose tag and two counters."""
    h = hash_u32(wp.uint32(seed) ^ wp.uint32(0x9E3779B9))
    h = hash_u32(h ^ wp.uint32(purpose))
    h = hash_u32(h ^ wp.uint32(a))
    h = hash_u32(h ^ wp.uint32(b))
    return int(h & wp.uint32(0x7FFFFFFF))
