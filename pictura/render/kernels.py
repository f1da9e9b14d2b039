"""Warp kernels of the rasterizer: cull + project per view, then raster per pixel.

One Warp module (one compile). A *view* is one (request, camera) pair; views of a chunk are
numbered ``v = (request - request_offset) * C + camera``.

1. `gather_lanes` (a block of `GATHER_LANES` threads per view) builds the camera basis from the
   ego's box and the grid query (cells under the camera's horizontal field of view, a sector of
   radius ``far``), then walks, 32 candidates a round, the world's agents (its slot range at
   the request's step, as the slot-table history says), its parked cars and the query's cell
   rows, rejecting what lies outside the frustum with a bounding-sphere test; each round's
   survivors go to the per-view candidate buffer in lane order, with a lower bound on their
   ray distance: exactly what the serial `gather_views` (thread per view, mode 0; the CPU's
   path and the occlusion query's) appends. A view with more candidates than the buffer
   holds gets the ranked buffer (step 2) continued by `gather_views` mode 1: a bounded, stable
   insertion sort of the candidates past the buffer (the farthest drop).
2. `rank_lists` (a warp per view): scatters each candidate to its rank by (bound, gather order)
   and keeps the ``K`` nearest: the same list the insertion sort builds, from a bucket sort by
   distance in shared memory instead of O(K) shifting in global memory.
3. `entry_setup` (thread per list entry) writes the entry's camera-relative record (all the
   per-pixel test needs) and its clipped, projected outline (screen rectangle and edge lines),
   then (`bin_entry`, over its rectangle's tiles) sets one bit per (band, entry) for the
   ``TILE_PX``-square screen tiles the outline may touch (integer atomic OR: the same words
   whatever the order, so with `WarpBinning` a CUDA warp may share its large entries' tiles).
4. `view_rays` (thread per view) writes the view's ray frame; `raster_views` (a warp per group
   of bands of one view, a thread per pixel of a band, walking the group's bands in turn;
   `raster_views_wide` the same for large views, `raster_views_ss` with ``s x s`` rays per
   pixel) stores the background at once when a band is empty (its bit in the group's ballot of
   non-empty bands is clear), else tests the band's entries front
   to back from their records
   (depth and coverage only) into a 2-slot depth-sorted register buffer (a third fragment
   composited behind the last slot), stops once the next
   primitive's bound lies behind an opaque fragment, then colours and composites the kept
   fragments front to back over ground or sky. Coverage is analytic: the signed distance (m)
   of the ray's hit point to the primitive's edge divided by the pixel footprint at that depth.

Per-view-parallel kernels take a ``view_base`` so a chunk can be split into launches of fewer
than 2^31 threads (Warp's limit on one launch).

No float atomics (the bins' integer OR gives the same words in any order) and a
fixed evaluation order: every image is a pure function of the snapshot, on a given device. CUDA
builds use fast math (below), CPU builds exact arithmetic, so the two differ in the last bits.
"""

# Warp needs `x = int(0)` / `float(0.0)` to declare a local it mutates in a loop (a bare
# literal becomes a constant), hence UP018 is off in this file.
# ruff: noqa: UP018

from __future__ import annotations

import math
import os
from typing import Any

import warp as wp

from pictura.render.array_io import (
    load_snippet,
    load_u32,
    load_vec3,
    load_vec4,
    load_vec4_at,
    load_vec4i,
    store_rgb,
    store_snippet,
    store_vec4_at,
)
from pictura.render.palette import (
    LIGHT_CUTOFF_DEG,
    LIGHT_FULL_DEG,
    LIGHT_RADIUS_M,
    SHADE_DISTANCE_M,
    SHADE_MIN,
)
from pictura.render.scene import REF_AGENT, REF_INDEX_MASK, REF_LIGHT, REF_LINE, REF_SHIFT, REF_WALL
from pictura.sim.grid import clamped_cells
from pictura.sim.slot_table import table_row, table_slot_world, table_world_count, table_world_start

vec5 = wp.types.vector(length=5, dtype=wp.float32)
"""A fragment: t (m along the unit ray), r, g, b, alpha."""
vec8 = wp.types.vector(length=8, dtype=wp.float32)

# Forward-only kernels: no adjoint code (halves compile time and code size).
# fast_math (CUDA only; Warp builds CPU kernels without it): approximate division, square root,
# sin/cos/exp and flush-to-zero in every render kernel. On the H200 pinned scene it bought +9 %
# at 96x54 (the cull's sin/cos, atan2 and divisions: gather 4.1 -> 2.9 ms, entry_setup 2.1 ->
# 1.2 ms) and changed 0.01 % of the pixels (docs/renderer.md, round 7); still deterministic per
# device, so re-rendered views equal the acting ones bit for bit. PICTURA_RENDER_FAST_MATH=0
# turns it off (e.g. to compare with exact arithmetic).
# default_grid_stride False: every render kernel launches one thread per index, without Warp's
# grid-stride loop, whose 64-bit index the raster kept on its stack (+2.4 % at 96x54 on the
# H200 pinned scene, docs/renderer.md round 13; no launch here caps its block count).
MODULE_OPTIONS = {
    "enable_backward": False,
    "fast_math": os.environ.get("PICTURA_RENDER_FAST_MATH", "1") != "0",
    "default_grid_stride": False,
}
"""This module's Warp options, and those of the kernels a factory builds in modules of their
own (`gather_lanes_warp`)."""
wp.set_module_options(MODULE_OPTIONS)


def env_int(name: str, default: int, ok, requirement: str) -> int:
    """Integer tuning knob ``name`` from the environment (``default`` when unset); a value that is
    not an integer or fails ``ok`` is an error naming the variable, the ``requirement`` and the value."""
    raw = os.environ.get(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not ok(value):
        raise ValueError(f"{name} must be {requirement}, got {raw!r}")
    return value


def register_cap(name: str, default: int) -> int:
    """Register-cap tuning knob ``name``, checked: an integer CUDA accepts as a per-thread cap."""
    return env_int(name, default, lambda x: 16 <= x <= 255, "an integer in [16, 255]")


def block_dim(name: str, default: int) -> int:
    """Threads-per-block tuning knob ``name``, checked: a positive multiple of 32 (a warp)."""
    return env_int(name, default, lambda x: x > 0 and x % 32 == 0, "a positive multiple of 32 (threads per block)")


_REF_AGENT = wp.constant(REF_AGENT)
_REF_LINE = wp.constant(REF_LINE)
_REF_WALL = wp.constant(REF_WALL)
_REF_LIGHT = wp.constant(REF_LIGHT)
_REF_SHIFT = wp.constant(REF_SHIFT)
_REF_MASK = wp.constant(REF_INDEX_MASK)
_LIGHT_RADIUS = wp.constant(LIGHT_RADIUS_M)
_LIGHT_COS_FULL = wp.constant(math.cos(math.radians(LIGHT_FULL_DEG)))
_LIGHT_COS_CUT = wp.constant(math.cos(math.radians(LIGHT_CUTOFF_DEG)))
_SHADE_MIN = wp.constant(SHADE_MIN)
_SHADE_DIST = wp.constant(SHADE_DISTANCE_M)
FRAGMENT_SLOTS = 2
"""Fragments `trace_ray` keeps per ray, nearest first; one more is composited behind the last.
Two slots with that merge beat four that dropped the fifth fragment in speed (+2.6 % exact,
+4.0 % ramp at 96x54 on an H200) and in accuracy against an 8-slot reference (docs/renderer.md,
round 46). Not a knob: `trace_ray`'s buffer (vec2 slots) and its insert are written out for
two slots, with constant indices so that they stay in registers."""
_FRAGS = wp.constant(FRAGMENT_SLOTS)
TILE_PX = 8
"""Screen tiles are TILE_PX x TILE_PX output pixels (a tile range per list entry); each view keeps
one bit per (band, list entry), a band being the top or bottom TILE_PX / 2 rows of a tile (the
rows one warp of a tile shades), so mask row 2 t + h is half h of tile t."""
_TILE = wp.constant(TILE_PX)
_BAND = wp.constant(TILE_PX // 2)
# The raster's per-band index arithmetic is shifts and masks (a signed `/` by a power of two is
# three instructions, a shift one): tid -> lane (32 per warp), band -> tile, lane -> tile row.
TILE_SHIFT = 3
assert 1 << TILE_SHIFT == TILE_PX
_TILE_SHIFT = wp.constant(TILE_SHIFT)
_FULL = wp.constant(1.0e9)
NO_VIEW = -2.0
"""`view_rays`' horizon row of an invalid view: below every valid one (>= -1)."""
_NO_VIEW = wp.constant(NO_VIEW)
_OPAQUE = wp.constant(0.999)
_FAR_FADE = wp.constant(0.15)
# `line_fragment`'s early reject: rounding slack (m per m of the terms) and squared margin.
_REJECT_SLACK = wp.constant(4.0e-6)
_REJECT_MARGIN = wp.constant(1.03)
BIN_REACH_SCALE = 1.05
"""Least perspective slack on a fragment's reach past its projected outline (`bin_margin`): a
point half a footprint (t pix) away in the primitive's plane can lie nearer the camera than the
ray's hit, at t (1 - pix / 2), and so subtend up to 1 / (1 - pix / 2) times more; `bin_margin`
takes that factor when it exceeds this one (focal below ~10 px)."""
BIN_REACH_SLACK_PX = 0.05
"""Rounding slack (px) of the binning tests (`bin_margin`)."""
_REACH_SCALE = wp.constant(BIN_REACH_SCALE)
_REACH_SLACK = wp.constant(BIN_REACH_SLACK_PX)
BOX_REACH_EXTRA_PX = 0.22
"""How much further (px) than `bin_margin`'s half pixel a cuboid's coverage reaches past its
screen rectangle: its coverage is the box filter of the pixel in screen space
(`silhouette_coverage`), which reaches half the pixel's diagonal, sqrt(1/2) px, past an edge
line; (sqrt(1/2) - 1/2) x `BIN_REACH_SCALE` = 0.217. `entry_setup` grows the rectangle by it."""
_BOX_REACH_EXTRA = wp.constant(BOX_REACH_EXTRA_PX)
BIN_LINE_MARGIN_PX = 1.5
"""Least bin margin (px) of a road-marking line. A line's coverage is not bounded by
`bin_margin`: its along-segment filter works in footprint-scaled ground coordinates (so that
consecutive segments share their joint), whose end boundary is skewed against the drawn quad.
On the pinned Town10HD scene (800 views at 96x54) lines reached up to 1.45 px past their quad
at pixel centres; this margin (plus the half-pixel inset of pixel centres) has kept every line
pixel, as the byte-for-byte comparisons of the binning modes check (`tests/render`)."""
_LINE_MARGIN = wp.constant(BIN_LINE_MARGIN_PX)
_EDGES = wp.constant(4)
BIN_CENTRE_SLACK_PX = 0.01
"""Slack (px) of the ground lines' first-row test at pixel centres (`line_first_row`,
`bin_entry`), for the raster's fast-math ray distance (a relative error near 1e-6, about
1e-6 px there)."""
_CENTRE_SLACK = wp.constant(BIN_CENTRE_SLACK_PX)


@wp.struct
class RampCoverage:
    """Box edges from the in-plane ramp (`Renderer(coverage="ramp")`, ~18 % faster than the
    default `SilhouetteCoverage` at 96x54 on an H200): a face's coverage ramps over the pixel's
    footprint in its own plane, exact head-on, up to ~0.33 off on faces seen at an angle
    (docs/renderer.md, Known limits). `entry_setup` and the raster kernels are generic in their
    ``mode`` argument; its type picks the overloads of `box_rect_reach`, `box_image_axes`,
    `face_weight` and `box_alpha` at compile time, so each mode's kernels hold only their own
    code (`ENTRY_SETUP`, `RASTER_KERNELS`)."""

    unused: int


@wp.struct
class ExactCoverage:
    """Box edges from the silhouette's exact screen lines of the face the ray meets
    (`Renderer(coverage="exact")`, the default from the thirtieth to the thirty-fourth
    session): the pixel's box-filter coverage, within ~0.003 of the exact polygon area away
    from corners on the test poses, though 2.5 % of edge pixels on random poses are more than
    0.02 off, mostly beside faces under 2 px wide, and roofs along the horizon are up to 0.94
    off (issue 5; `SilhouetteCoverage`, the default, draws both); about 5 % faster than it at
    96x54 on an H200 (docs/renderer.md, rounds 27-60 and "Coverage modes")."""

    unused: int


@wp.struct
class SilhouetteCoverage:
    """Box edges from the box's silhouette edges themselves (`Renderer(coverage="silhouette")`,
    the default since the thirty-fourth session; rounds 48-60): every screen line of an edge
    between a camera-facing and a hidden face, so the pixel's box-filter coverage is exact wherever at most two of them cut it, slivers
    and roofs at the horizon included (within 0.02 on all but 0.03 % of edge pixels on random
    poses; docs/renderer.md, "Coverage modes"). `entry_setup` writes each cuboid entry's
    `BOX_LINES` lines into ``lines`` (`store_box_lines`), and the raster reads them
    (`stored_lines_coverage`)."""

    lines: wp.uint64  # data of a vec4 array: `BOX_LINES` per list entry, from BOX_LINES * (record index)
    supersample: int  # rays per pixel along each axis: the lines are in units of the sample grid


@wp.struct
class SoloBinning:
    """Each list entry bins its own tiles (`bin_entry`): the CPU's binning, and CUDA's for views
    under `rasterizer.WARP_BINNING_VIEW_PIXELS`. `entry_setup` is generic in its ``binning``
    argument, like ``mode`` (`ENTRY_SETUP`)."""

    unused: int


@wp.struct
class WarpBinning:
    """A CUDA warp shares the binning of its larger entries (`bin_entry`); for views of
    `rasterizer.WARP_BINNING_VIEW_PIXELS` or more, where it paid (docs/renderer.md, round 33)."""

    unused: int


@wp.struct
class EntryRecord:
    """One (view, list entry) record (`entry_setup`): three words of per-pixel data and the
    entry's depth bound, so the raster finds all four at one address."""

    r0: wp.vec4
    r1: wp.vec4
    r2: wp.vec4
    bound: wp.float32
    r3: wp.vec3  # 64 bytes: `record_word` reads a record as four aligned 16-byte words


RECORD_WORDS = 4
"""16-byte words of one `EntryRecord` (r0, r1, r2, then the bound and r3)."""


# The raster reads every walked record (`trace_ray`) with the whole warp on one address: four
# vector loads (`array_io`) instead of 13 scalar ones.
@wp.func_native(
    "".join(
        store_snippet(f"reinterpret_cast<float*>(wp::address(a, v, k)) + {4 * n}", value, "vec4")
        for n, value in enumerate(["r0", "r1", "r2", "wp::vec4(bound, r3[0], r3[1], r3[2])"])
    )
)
def store_record(
    a: wp.array2d(dtype=EntryRecord), v: int, k: int, r0: wp.vec4, r1: wp.vec4, r2: wp.vec4, bound: float, r3: wp.vec3
):
    """``a[v, k]`` = the record (r0, r1, r2, bound, r3), one vector store per `record_word`."""
    ...


@wp.func_native(load_snippet("reinterpret_cast<const float*>(a.data) + 16 * (size_t)i + 4 * word", "vec4"))
def record_word(a: wp.array(dtype=EntryRecord), i: int, word: int) -> wp.vec4:
    """Word ``word`` (0: r0, 1: r1, 2: r2, 3: (bound, r3)) of ``a[i]`` of the contiguous ``a``
    (i >= 0), one vector load."""
    ...


@wp.func
def coverage(sd: float, footprint: float, antialias: int) -> float:
    """Pixel coverage of an edge at signed distance ``sd`` (m, negative inside)."""
    if antialias == 0:
        if sd <= 0.0:
            return 1.0
        return 0.0
    if sd >= footprint:
        # sd / footprint >= 1 (footprint > 0, division rounds monotonically): the clamp gives 0;
        # skipping the division keeps the result bit for bit.
        return 0.0
    return wp.clamp(0.5 - sd / footprint, 0.0, 1.0)


@wp.func
def depth_shade(t: float) -> float:
    return _SHADE_MIN + (1.0 - _SHADE_MIN) * wp.exp(-t * (1.0 / _SHADE_DIST))


@wp.func
def light_visibility(light_p: wp.vec3, heading: float, cam: wp.vec3) -> float:
    """Smooth angular visibility in [0, 1] of a lamp facing ``heading`` seen from ``cam``."""
    gx = cam[0] - light_p[0]
    gy = cam[1] - light_p[1]
    g = wp.sqrt(gx * gx + gy * gy)
    if g < 1e-6:
        return 0.0
    c = (gx * wp.cos(heading) + gy * wp.sin(heading)) / g
    return wp.clamp((c - _LIGHT_COS_CUT) / (_LIGHT_COS_FULL - _LIGHT_COS_CUT), 0.0, 1.0)


@wp.func
def sphere_bound(
    c: wp.vec3,
    r: float,
    o: wp.vec3,
    basis: wp.mat33,
    focal: float,
    cx: float,
    cy: float,
    width: float,
    height: float,
    near: float,
    far: float,
) -> float:
    """Lower bound (m) on the ray distance to a sphere inside the view frustum, or -1 if culled."""
    rel = c - o
    dist = wp.length(rel)
    if dist - r > far:
        return -1.0
    xc = wp.dot(rel, basis[0])
    yc = wp.dot(rel, basis[1])
    zc = wp.dot(rel, basis[2])
    if xc + r < near:
        return -1.0
    # Inward frustum side planes through the camera centre, in pixel units.
    if (cx * xc - focal * yc) / wp.sqrt(cx * cx + focal * focal) < -r:
        return -1.0
    if ((width - cx) * xc + focal * yc) / wp.sqrt((width - cx) * (width - cx) + focal * focal) < -r:
        return -1.0
    if (cy * xc - focal * zc) / wp.sqrt(cy * cy + focal * focal) < -r:
        return -1.0
    if ((height - cy) * xc + focal * zc) / wp.sqrt((height - cy) * (height - cy) + focal * focal) < -r:
        return -1.0
    return wp.max(dist - r, 0.0)


@wp.func
def list_insert(
    list_ref: wp.array2d(dtype=wp.int32),
    list_bound: wp.array2d(dtype=wp.float32),
    v: int,
    n: int,
    cap: int,
    ref: int,
    bound: float,
) -> int:
    """Insert into view ``v``'s list (sorted by bound, stable); returns the new count."""
    if n == cap:
        if bound >= list_bound[v, cap - 1]:
            return n
    i = wp.min(n, cap - 1)
    while i > 0:
        if list_bound[v, i - 1] <= bound:
            break
        list_bound[v, i] = list_bound[v, i - 1]
        list_ref[v, i] = list_ref[v, i - 1]
        i -= 1
    list_bound[v, i] = bound
    list_ref[v, i] = ref
    return wp.min(n + 1, cap)


@wp.func
def candidate_add(
    mode: int,
    cand_ref: wp.array2d(dtype=wp.int32),
    cand_bound: wp.array2d(dtype=wp.float32),
    list_ref: wp.array2d(dtype=wp.int32),
    list_bound: wp.array2d(dtype=wp.float32),
    v: int,
    n: int,
    cand_cap: int,
    list_cap: int,
    ref: int,
    bound: float,
) -> int:
    """Candidate ``n`` (gather order) of view ``v``; returns ``n + 1``.

    Mode 0 appends it to the buffer while there is room (the count keeps growing past
    ``cand_cap``). Mode 1, for a view that overflowed the buffer and whose list already holds
    the ranked buffer (the stable insertion sort's state after ``cand_cap`` candidates, with
    ``min(n, list_cap)`` entries), insertion-sorts only the candidates past the buffer.
    """
    if n < cand_cap:
        if mode == 0:
            cand_ref[v, n] = ref
            cand_bound[v, n] = bound
    elif mode == 1:
        list_insert(list_ref, list_bound, v, wp.min(n, list_cap), list_cap, ref, bound)
    return n + 1


@wp.func
def sector_extent(o: wp.vec3, yaw: float, half: float, far: float) -> wp.vec4:
    """x-y bounding box (xmin, ymin, xmax, ymax) of a circular sector of radius ``far``."""
    lo_x = o[0]
    lo_y = o[1]
    hi_x = o[0]
    hi_y = o[1]
    for k in range(2):
        a = yaw - half + 2.0 * half * float(k)
        px = o[0] + far * wp.cos(a)
        py = o[1] + far * wp.sin(a)
        lo_x = wp.min(lo_x, px)
        hi_x = wp.max(hi_x, px)
        lo_y = wp.min(lo_y, py)
        hi_y = wp.max(hi_y, py)
    for k in range(4):
        a = 0.5 * wp.pi * float(k)
        diff = wp.atan2(wp.sin(a - yaw), wp.cos(a - yaw))
        if wp.abs(diff) <= half:
            lo_x = wp.min(lo_x, o[0] + far * wp.cos(a))
            hi_x = wp.max(hi_x, o[0] + far * wp.cos(a))
            lo_y = wp.min(lo_y, o[1] + far * wp.sin(a))
            hi_y = wp.max(hi_y, o[1] + far * wp.sin(a))
    return wp.vec4(lo_x, lo_y, hi_x, hi_y)



@wp.func
def camera_origin(agent_box: wp.array3d(dtype=wp.float32), step: int, slot: int, cam_extr: wp.array2d(dtype=wp.float32), cam: int) -> wp.vec3:
    """World position of camera ``cam`` mounted on ego ``slot``."""
    ch = wp.cos(agent_box[step, slot, 3])
    sh = wp.sin(agent_box[step, slot, 3])
    mx = cam_extr[cam, 0]
    my = cam_extr[cam, 1]
    return wp.vec3(
        agent_box[step, slot, 0] + ch * mx - sh * my, agent_box[step, slot, 1] + sh * mx + ch * my,
        agent_box[step, slot, 2] + cam_extr[cam, 2],
    )  # fmt: skip


@wp.func
def camera_basis(yaw: float, pitch: float) -> wp.mat33:
    """Rows: forward, left, up (world frame)."""
    fwd = wp.vec3(wp.cos(pitch) * wp.cos(yaw), wp.cos(pitch) * wp.sin(yaw), -wp.sin(pitch))
    left = wp.vec3(-wp.sin(yaw), wp.cos(yaw), 0.0)
    up = wp.cross(fwd, left)
    return wp.mat33(fwd[0], fwd[1], fwd[2], left[0], left[1], left[2], up[0], up[1], up[2])


@wp.func
def agent_bound(
    agent_box: wp.array3d(dtype=wp.float32),
    step: int,
    s: int,
    o: wp.vec3,
    basis: wp.mat33,
    focal: float,
    cx: float,
    cy: float,
    width: float,
    height: float,
    near: float,
    far: float,
) -> float:
    """Candidate bound of snapshot row ``s`` (agent or parked car), -1 if empty or culled."""
    if agent_box[step, s, 7] < 0.0:
        return -1.0
    bl = agent_box[step, s, 4]
    bw = agent_box[step, s, 5]
    bh = agent_box[step, s, 6]
    c = wp.vec3(agent_box[step, s, 0], agent_box[step, s, 1], agent_box[step, s, 2] + 0.5 * bh)
    rad = 0.5 * wp.sqrt(bl * bl + bw * bw + bh * bh)
    return sphere_bound(c, rad, o, basis, focal, cx, cy, width, height, near, far)


@wp.func
def static_bound(
    ref: int,
    line_a: wp.array(dtype=wp.vec3),
    line_b: wp.array(dtype=wp.vec3),
    line_half_width: wp.array(dtype=wp.float32),
    wall_a: wp.array(dtype=wp.vec3),
    wall_b: wp.array(dtype=wp.vec3),
    wall_height: wp.array(dtype=wp.float32),
    light_pos: wp.array(dtype=wp.vec3),
    light_heading: wp.array(dtype=wp.float32),
    o: wp.vec3,
    basis: wp.mat33,
    focal: float,
    cx: float,
    cy: float,
    width: float,
    height: float,
    near: float,
    far: float,
) -> float:
    """Candidate bound of a static primitive (line, wall, light), -1 if culled."""
    kind = ref >> _REF_SHIFT
    i = ref & _REF_MASK
    c = wp.vec3(0.0)
    rad = float(0.0)
    if kind == _REF_LINE:
        c = 0.5 * (line_a[i] + line_b[i])
        rad = 0.5 * wp.length(line_b[i] - line_a[i]) + line_half_width[i]
    elif kind == _REF_WALL:
        hl = 0.5 * wp.length(wall_b[i] - wall_a[i])
        hh = 0.5 * wall_height[i]
        c = 0.5 * (wall_a[i] + wall_b[i]) + wp.vec3(0.0, 0.0, hh)
        rad = wp.sqrt(hl * hl + hh * hh)
    else:
        if light_visibility(light_pos[i], light_heading[i], o) <= 0.0:
            return -1.0
        c = light_pos[i]
        rad = _LIGHT_RADIUS
    return sphere_bound(c, rad, o, basis, focal, cx, cy, width, height, near, far)


@wp.func
def grid_query(
    o: wp.vec3,
    yaw: float,
    focal: float,
    cx: float,
    width: float,
    far: float,
    org: wp.vec2,
    nx: int,
    ny: int,
    cell_size: float,
) -> wp.vec4i:
    """Cell rectangle (qx0, qy0, qx1, qy1), inclusive, under the camera's horizontal field of view."""
    half = wp.max(wp.atan(cx / focal), wp.atan((width - cx) / focal))
    box = sector_extent(o, yaw, wp.min(half, 0.5 * wp.pi), far)
    return clamped_cells(wp.vec2(box[0], box[1]), wp.vec2(box[2], box[3]), org, cell_size, nx, ny)


@wp.func
def first_in_query(entry_min_cell: wp.array2d(dtype=wp.int32), e: int, gx: int, gy: int, q: wp.vec4i) -> bool:
    """Whether grid entry ``e``, listed in cell (gx, gy), is where a query over the cell rectangle
    ``q`` takes its primitive: the first cell of ``q`` the primitive overlaps, so a primitive
    spanning several cells is visited once."""
    return gx == wp.max(entry_min_cell[e, 0], q[0]) and gy == wp.max(entry_min_cell[e, 1], q[1])


@wp.struct
class ViewCamera:
    """View v's request and camera (`view_camera`); ``valid`` 0 for an invalid request."""

    valid: int
    step: int
    slot: int
    row: int  # of the slot-table history at the request's step
    world: int
    origin: wp.vec3
    yaw: float
    basis: wp.mat33


@wp.func
def view_camera(
    agent_box: wp.array3d(dtype=wp.float32),
    requests: wp.array2d(dtype=wp.int32),
    request_offset: int,
    v: int,
    num_cams: int,
    cam_extr: wp.array2d(dtype=wp.float32),
    slot_table: wp.array2d(dtype=wp.int32),
    num_slots: int,
) -> ViewCamera:
    """The request and camera of view v (request ``request_offset + v / num_cams``). An invalid
    request (a step outside the history, a slot outside the layout or empty) renders black;
    `Renderer.validate_requests` reports it on the host."""
    c = ViewCamera()
    r = request_offset + v / num_cams
    cam = v - (v / num_cams) * num_cams
    c.step = requests[r, 0]
    c.slot = requests[r, 1]
    c.valid = 0
    if c.step < 0 or c.step >= agent_box.shape[0] or c.slot < 0 or c.slot >= num_slots:
        return c
    if agent_box[c.step, c.slot, 7] < 0.0:
        return c
    c.valid = 1
    c.row = table_row(slot_table, c.step)
    c.world = table_slot_world(slot_table, c.row, c.slot)
    c.origin = camera_origin(agent_box, c.step, c.slot, cam_extr, cam)
    c.yaw = agent_box[c.step, c.slot, 3] + cam_extr[cam, 3]
    c.basis = camera_basis(c.yaw, cam_extr[cam, 4])
    return c


@wp.func
def store_view(
    c: ViewCamera,
    agent_box: wp.array3d(dtype=wp.float32),
    v: int,
    view_origin_out: wp.array(dtype=wp.vec3),
    view_basis_out: wp.array(dtype=wp.mat33),
    view_step_out: wp.array(dtype=wp.int32),
    view_world_out: wp.array(dtype=wp.int32),
    view_ground_out: wp.array(dtype=wp.float32),
):
    """The per-view outputs of a gather for a valid view ``c``."""
    view_origin_out[v] = c.origin
    view_basis_out[v] = c.basis
    view_step_out[v] = c.step
    view_world_out[v] = c.world
    view_ground_out[v] = agent_box[c.step, c.slot, 2]


@wp.kernel
def gather_views(
    # snapshot history and requests
    agent_box: wp.array3d(dtype=wp.float32),
    requests: wp.array2d(dtype=wp.int32),
    request_offset: int,
    # rig
    cam_extr: wp.array2d(dtype=wp.float32),
    num_cams: int,
    focal: float,
    cx: float,
    cy: float,
    width: float,
    height: float,
    near: float,
    far: float,
    # layout: the slot-table history (`pictura.sim.slot_table`) gives each step's slot ranges
    slot_table: wp.array2d(dtype=wp.int32),
    world_map: wp.array(dtype=wp.int32),
    num_slots: int,
    parked_per_world: int,
    # static scene
    line_a: wp.array(dtype=wp.vec3),
    line_b: wp.array(dtype=wp.vec3),
    line_half_width: wp.array(dtype=wp.float32),
    wall_a: wp.array(dtype=wp.vec3),
    wall_b: wp.array(dtype=wp.vec3),
    wall_height: wp.array(dtype=wp.float32),
    light_pos: wp.array(dtype=wp.vec3),
    light_heading: wp.array(dtype=wp.float32),
    map_grid_origin: wp.array(dtype=wp.vec2),
    map_grid_dims: wp.array2d(dtype=wp.int32),
    map_cell_base: wp.array(dtype=wp.int32),
    cell_start: wp.array(dtype=wp.int32),
    entry_ref: wp.array(dtype=wp.int32),
    entry_min_cell: wp.array2d(dtype=wp.int32),
    cell_size: float,
    # options: solo_slot >= 0 gathers that agent only (occlusion query); mode 0 appends every
    # candidate unsorted (pass 1), mode 1 redoes only the views whose candidates overflowed
    # ``cand_cap``: `rank_lists` ranked the buffer into the list, a bounded sorted insert
    # adds the candidates past it (pass 2)
    solo_slot: int,
    capacity: int,
    cand_cap: int,
    mode: int,
    # outputs
    cand_ref_out: wp.array2d(dtype=wp.int32),
    cand_bound_out: wp.array2d(dtype=wp.float32),
    cand_count_out: wp.array(dtype=wp.int32),
    view_origin_out: wp.array(dtype=wp.vec3),
    view_basis_out: wp.array(dtype=wp.mat33),
    view_step_out: wp.array(dtype=wp.int32),
    view_world_out: wp.array(dtype=wp.int32),
    view_ground_out: wp.array(dtype=wp.float32),
    list_ref_out: wp.array2d(dtype=wp.int32),
    list_bound_out: wp.array2d(dtype=wp.float32),
    list_count_out: wp.array(dtype=wp.int32),
):
    v = wp.tid()
    if mode == 1:
        if cand_count_out[v] <= cand_cap:
            return
    if mode == 0:
        cand_count_out[v] = 0
    list_count_out[v] = 0
    view_world_out[v] = -1
    view_step_out[v] = 0
    c = view_camera(agent_box, requests, request_offset, v, num_cams, cam_extr, slot_table, num_slots)
    if c.valid == 0:
        return
    store_view(c, agent_box, v, view_origin_out, view_basis_out, view_step_out, view_world_out, view_ground_out)

    n = int(0)
    # Agents of the ego's world (never the ego itself, never another world's).
    s0 = table_world_start(slot_table, c.row, num_slots, c.world)
    for s in range(s0, s0 + table_world_count(slot_table, c.row, num_slots, c.world)):
        if s == c.slot:
            continue
        if solo_slot >= 0 and s != solo_slot:
            continue
        b = agent_bound(agent_box, c.step, s, c.origin, c.basis, focal, cx, cy, width, height, near, far)
        if b >= 0.0:
            n = candidate_add(
                mode, cand_ref_out, cand_bound_out, list_ref_out, list_bound_out, v, n, cand_cap, capacity,
                (_REF_AGENT << _REF_SHIFT) | s, b,
            )
    # The world's parked cars: snapshot rows after the S slots, drawn like agents.
    p0 = num_slots + c.world * parked_per_world
    for s in range(p0, p0 + parked_per_world):
        if solo_slot >= 0 and s != solo_slot:
            continue
        b = agent_bound(agent_box, c.step, s, c.origin, c.basis, focal, cx, cy, width, height, near, far)
        if b >= 0.0:
            n = candidate_add(
                mode, cand_ref_out, cand_bound_out, list_ref_out, list_bound_out, v, n, cand_cap, capacity,
                (_REF_AGENT << _REF_SHIFT) | s, b,
            )
    if solo_slot >= 0:
        if mode == 0:
            cand_count_out[v] = n
        list_count_out[v] = wp.min(n, capacity)
        return

    # Static primitives from the grid cells under the horizontal field of view.
    m = world_map[c.world]
    nx = map_grid_dims[m, 0]
    q = grid_query(c.origin, c.yaw, focal, cx, width, far, map_grid_origin[m], nx, map_grid_dims[m, 1], cell_size)
    base = map_cell_base[m]
    for gy in range(q[1], q[3] + 1):
        for gx in range(q[0], q[2] + 1):
            cell = base + gy * nx + gx
            for e in range(cell_start[cell], cell_start[cell + 1]):
                if not first_in_query(entry_min_cell, e, gx, gy, q):
                    continue
                ref = entry_ref[e]
                b = static_bound(
                    ref, line_a, line_b, line_half_width, wall_a, wall_b, wall_height, light_pos, light_heading,
                    c.origin, c.basis, focal, cx, cy, width, height, near, far,
                )  # fmt: skip
                if b >= 0.0:
                    n = candidate_add(
                        mode, cand_ref_out, cand_bound_out, list_ref_out, list_bound_out, v, n, cand_cap, capacity,
                        ref, b,
                    )
    # Pass 2 leaves the count (count > cand_cap flags the overflow) as pass 1 wrote it.
    if mode == 0:
        cand_count_out[v] = n
    list_count_out[v] = wp.min(n, capacity)


GATHER_LANES = block_dim("PICTURA_GATHER_LANES", 32)
"""Threads of `gather_lanes` per view (one warp; ``PICTURA_GATHER_LANES`` overrides it, for
tuning). On the CPU Warp runs a block as one thread unless ``wp.config.enable_cpu_blocks`` is
set."""


@wp.func
def append_offsets_scan(keep: int, lane: int) -> wp.vec2i:
    """(kept lanes below ``lane``, kept lanes) of the block (every thread calls it): one
    block-wide scan; the inclusive count less the lane's own is its offset, and the last lane's
    inclusive count is the round's total (a scan and a sum cost two)."""
    kept = wp.tile_scan_inclusive(wp.tile(keep))
    return wp.vec2i(wp.untile(kept) - keep, kept[wp.block_dim() - 1])


@wp.func_native("""
#if defined(__CUDA_ARCH__)
const unsigned int kept = __ballot_sync(0xffffffffu, keep != 0);
return wp::vec2i(__popc(kept & ((1u << lane) - 1u)), __popc(kept));
#else
return wp::vec2i(0, keep);
#endif
""")
def append_offsets_ballot(keep: int, lane: int) -> wp.vec2i:
    """`append_offsets_scan` for a block of one CUDA warp, every lane of which must reach it: a
    ballot and two population counts, no shared memory or barrier (`gather_lanes_warp`). A CPU
    thread has no warp: it answers as for a block of one thread."""
    ...


def _gather_lanes_kernel(append_offsets, name: str):
    """`gather_lanes` with ``append_offsets`` (`append_offsets_scan` or `append_offsets_ballot`)
    placing each round's kept candidates: one kernel body, two kernels (``name`` is what
    profiles and ptxas call it)."""

    @wp.func
    def lanes_append(
        keep: int,
        lane: int,
        ref: int,
        bound: float,
        n: int,
        v: int,
        cand_cap: int,
        cand_ref_out: wp.array2d(dtype=wp.int32),
        cand_bound_out: wp.array2d(dtype=wp.float32),
    ) -> int:
        """Cooperative (every thread of the block calls it): the block's kept candidates of one
        round go to the buffer at ``n`` in lane order, as a serial loop over the round would
        append them; returns ``n`` plus their number (the same in every lane)."""
        o = append_offsets(keep, lane)
        at = n + o[0]
        if keep == 1 and at < cand_cap:
            cand_ref_out[v, at] = ref
            cand_bound_out[v, at] = bound
        return n + o[1]

    @wp.kernel(name=name, module="unique", module_options=MODULE_OPTIONS)
    def gather_lanes(
        # snapshot history and requests
        agent_box: wp.array3d(dtype=wp.float32),
        requests: wp.array2d(dtype=wp.int32),
        request_offset: int,
        # rig
        cam_extr: wp.array2d(dtype=wp.float32),
        num_cams: int,
        focal: float,
        cx: float,
        cy: float,
        width: float,
        height: float,
        near: float,
        far: float,
        # layout
        slot_table: wp.array2d(dtype=wp.int32),
        world_map: wp.array(dtype=wp.int32),
        num_slots: int,
        parked_per_world: int,
        # static scene
        line_a: wp.array(dtype=wp.vec3),
        line_b: wp.array(dtype=wp.vec3),
        line_half_width: wp.array(dtype=wp.float32),
        wall_a: wp.array(dtype=wp.vec3),
        wall_b: wp.array(dtype=wp.vec3),
        wall_height: wp.array(dtype=wp.float32),
        light_pos: wp.array(dtype=wp.vec3),
        light_heading: wp.array(dtype=wp.float32),
        map_grid_origin: wp.array(dtype=wp.vec2),
        map_grid_dims: wp.array2d(dtype=wp.int32),
        map_cell_base: wp.array(dtype=wp.int32),
        cell_start: wp.array(dtype=wp.int32),
        entry_ref: wp.array(dtype=wp.int32),
        entry_min_cell: wp.array2d(dtype=wp.int32),
        entry_cell_x: wp.array(dtype=wp.int32),
        cell_size: float,
        capacity: int,
        view_base: int,
        # outputs: as `gather_views` mode 0
        cand_ref_out: wp.array2d(dtype=wp.int32),
        cand_bound_out: wp.array2d(dtype=wp.float32),
        cand_count_out: wp.array(dtype=wp.int32),
        view_origin_out: wp.array(dtype=wp.vec3),
        view_basis_out: wp.array(dtype=wp.mat33),
        view_step_out: wp.array(dtype=wp.int32),
        view_world_out: wp.array(dtype=wp.int32),
        view_ground_out: wp.array(dtype=wp.float32),
        list_count_out: wp.array(dtype=wp.int32),
    ):
        """Block of `GATHER_LANES` threads per view (`wp.launch_tiled`): `gather_views` mode 0 with
        the lanes taking consecutive candidates of each round.

        The rounds walk the same sequence as the serial loop (the world's agents, its parked cars,
        then the query's cell rows, each row's cells one contiguous run of entries), and each
        round's survivors go to the buffer in lane order (`lanes_append`), so the buffer, its count
        and hence every image are the serial gather's. A thread per view leaves an H200 with a few
        warps per SM; a block per view keeps it full.
        """
        i, lane = wp.tid()
        lanes = wp.block_dim()
        v = view_base + i
        if lane == 0:
            cand_count_out[v] = 0
            list_count_out[v] = 0
            view_world_out[v] = -1
            view_step_out[v] = 0
        c = view_camera(agent_box, requests, request_offset, v, num_cams, cam_extr, slot_table, num_slots)
        if c.valid == 0:
            return  # the same for the whole block: every thread returns or none does
        if lane == 0:
            store_view(c, agent_box, v, view_origin_out, view_basis_out, view_step_out, view_world_out, view_ground_out)
        cand_cap = cand_ref_out.shape[1]
        n = int(0)
        # Agents of the ego's world (never the ego itself), then the world's parked cars.
        s0 = table_world_start(slot_table, c.row, num_slots, c.world)
        count = table_world_count(slot_table, c.row, num_slots, c.world)
        p0 = num_slots + c.world * parked_per_world
        # while loops: `range` with the runtime step ``lanes`` tests its sign on every pass
        k = int(0)
        while k < count + parked_per_world:
            j = k + lane
            k += lanes
            s = wp.where(j < count, s0 + j, p0 + j - count)
            b = float(-1.0)
            if j < count + parked_per_world and s != c.slot:
                b = agent_bound(agent_box, c.step, s, c.origin, c.basis, focal, cx, cy, width, height, near, far)
            n = lanes_append(
                wp.where(b >= 0.0, 1, 0), lane, (_REF_AGENT << _REF_SHIFT) | s, b, n, v, cand_cap, cand_ref_out,
                cand_bound_out,
            )  # fmt: skip
        # Static primitives from the grid cells under the horizontal field of view, row by row.
        m = world_map[c.world]
        nx = map_grid_dims[m, 0]
        q = grid_query(c.origin, c.yaw, focal, cx, width, far, map_grid_origin[m], nx, map_grid_dims[m, 1], cell_size)
        base = map_cell_base[m]
        for gy in range(q[1], q[3] + 1):
            e1 = cell_start[base + gy * nx + q[2] + 1]
            e0 = cell_start[base + gy * nx + q[0]]
            while e0 < e1:
                e = e0 + lane
                e0 += lanes
                b = float(-1.0)
                ref = int(0)
                if e < e1:
                    if first_in_query(entry_min_cell, e, entry_cell_x[e], gy, q):
                        ref = entry_ref[e]
                        b = static_bound(
                            ref, line_a, line_b, line_half_width, wall_a, wall_b, wall_height, light_pos, light_heading,
                            c.origin, c.basis, focal, cx, cy, width, height, near, far,
                        )  # fmt: skip
                n = lanes_append(wp.where(b >= 0.0, 1, 0), lane, ref, b, n, v, cand_cap, cand_ref_out, cand_bound_out)
        if lane == 0:
            cand_count_out[v] = n
            list_count_out[v] = wp.min(n, capacity)

    return gather_lanes


gather_lanes = _gather_lanes_kernel(append_offsets_scan, "gather_lanes")
"""Pass 1 of the cull with a block of `GATHER_LANES` threads per view (any block size; the CPU
with ``wp.config.enable_cpu_blocks``)."""
gather_lanes_warp = _gather_lanes_kernel(append_offsets_ballot, "gather_lanes_warp")
"""`gather_lanes` for blocks of one CUDA warp (`GATHER_LANES` = 32, the default): the rounds
append by a warp ballot instead of a block scan (ptxas: 70 registers instead of 90)."""


@wp.func
def below4(b: wp.vec4i, key: int) -> int:
    """How many of the 4 values of ``b`` lie below ``key``."""
    return wp.where(b[0] < key, 1, 0) + wp.where(b[1] < key, 1, 0) + wp.where(b[2] < key, 1, 0) + wp.where(b[3] < key, 1, 0)


@wp.func
def count_below(
    bits4: wp.array(dtype=wp.vec4i), q0: int, q1: int, key: int, rank: int, capacity: int
) -> int:
    """``rank`` plus the number of values below ``key`` in the blocks ``bits4[q0:q1]`` of 4, or
    any count >= ``capacity`` once it gets there (the caller drops such a candidate)."""
    r = rank
    q = q0
    # One index (and address) per 4 values; one exit test per two blocks, so their two loads
    # are in flight together: the rank only grows, so stopping after a pair of blocks instead
    # of after the exact compare keeps the result.
    while q + 1 < q1 and r < capacity:
        b = load_vec4i(bits4, q)
        c = load_vec4i(bits4, q + 1)
        r += below4(b, key) + below4(c, key)
        q += 2
    if q < q1 and r < capacity:
        r += below4(load_vec4i(bits4, q), key)
    return r


RANK_BUCKETS = 64
"""Distance buckets per view of `rank_lists`: bucket b holds the bounds in [b, b + 1) x far /
RANK_BUCKETS (the last also those beyond ``far``)."""
_RANK_BUCKETS = wp.constant(RANK_BUCKETS)
RANK_SHARED_KEYS = 512
"""`rank_lists` sorts a view with at most this many candidates in shared memory (the pinned scene:
171 on average, p95 429); a view with more counts each candidate's rank over the whole buffer
in global memory (`count_below`)."""
_RANK_SHARED_KEYS = wp.constant(RANK_SHARED_KEYS)
_RANK_BUCKET_SLOTS = wp.constant(RANK_BUCKETS + 1)  # and a spare (`rank_lists`)
_RANK_KEY_SLOTS = wp.constant(RANK_SHARED_KEYS + 1)
RANK_LANES = 32
"""Threads per view of `rank_lists`: one CUDA warp, whose lanes group by `warp_match` and
prefix-sum by `warp_scan`."""


@wp.func
def rank_bucket(bound: float, scale: float) -> int:
    """The bucket of a candidate bound (>= 0): ``scale`` = RANK_BUCKETS / far. Non-decreasing in
    the bound, so every candidate of a lower bucket has a lower bound, and equal bounds share
    one bucket."""
    return wp.min(int(bound * scale), _RANK_BUCKETS - 1)


@wp.func
def group_first_slot(b: int, same: wp.uint32, below: wp.uint32) -> int:
    """Where the first lane of a `warp_match` group (``same``; ``below`` = the lanes before this
    one) adds the group's size in `rank_lists`' per-bucket tiles: its bucket ``b``; every other
    lane, and a lane with no candidate (b < 0), the spare slot RANK_BUCKETS."""
    return wp.where(b >= 0 and (same & below) == wp.uint32(0), b, _RANK_BUCKETS)


@wp.kernel
def rank_lists(
    cand_ref: wp.array2d(dtype=wp.int32),
    cand_bound: wp.array2d(dtype=wp.float32),
    # the launch's bounds again, flattened (``cand_cap`` per view, a multiple of 4) and read as
    # int32 in blocks of 4, for a view past RANK_SHARED_KEYS candidates (`count_below`)
    cand_bits4: wp.array(dtype=wp.vec4i),
    cand_count: wp.array(dtype=wp.int32),
    scale: float,
    capacity: int,
    view_base: int,
    list_ref_out: wp.array2d(dtype=wp.int32),
    list_bound_out: wp.array2d(dtype=wp.float32),
):
    """A block of RANK_LANES (one warp) per view (`wp.launch_tiled`): each candidate j goes to its
    rank by (bound, j), the ``capacity`` first kept.

    The order is exactly the stable bounded insertion sort's (ties keep gather order), so the
    list is the same as `list_insert` builds. A view that overflowed the buffer ranks the buffer
    (its first ``cand_cap`` candidates in gather order: the sort's state at that point);
    `gather_views` mode 1 inserts the rest.

    A view of at most RANK_SHARED_KEYS candidates is bucket-sorted in shared memory, in rounds
    of a candidate per lane: count the candidates of each distance bucket (`rank_bucket`; the
    lanes of a round that share a bucket are one `warp_match` group), prefix-sum the counts,
    then write each bound into its bucket's run, in gather order within the run. A candidate's
    rank is its bucket's start plus the bounds of its own run that come before it: about 500
    compares per view on the pinned scene instead of the 31,000 of counting over the whole
    buffer, and no global memory between the steps (docs/renderer.md, round 35). A run
    starting at or past ``capacity`` holds only candidates ranked out: skipped. A larger view
    counts each candidate's rank over the whole buffer in global memory: the candidates before
    it with a bound <= its own, those after it with a smaller one (`count_below`, blocks of 4).
    """
    view, lane = wp.tid()
    threads = wp.block_dim()  # RANK_LANES; 1 on the CPU, which runs a block as one thread
    lanes = warp_lanes()
    below = (wp.uint32(1) << wp.uint32(warp_lane())) - wp.uint32(1)  # the lanes before this one
    cand_cap = cand_ref.shape[1]
    v = view_base + view
    n = wp.min(cand_count[v], cand_cap)
    # Shared tiles. Writing an element ends in a block barrier, which every lane must reach, so
    # the lanes with nothing to write write to the spare last element instead.
    count = wp.tile_zeros(shape=_RANK_BUCKET_SLOTS, dtype=wp.int32, storage="shared")
    start = wp.tile_zeros(shape=_RANK_BUCKET_SLOTS, dtype=wp.int32, storage="shared")
    fill = wp.tile_zeros(shape=_RANK_BUCKET_SLOTS, dtype=wp.int32, storage="shared")
    keys = wp.tile_zeros(shape=_RANK_KEY_SLOTS, dtype=wp.int32, storage="shared")
    order = wp.tile_zeros(shape=_RANK_KEY_SLOTS, dtype=wp.int32, storage="shared")
    if n <= _RANK_SHARED_KEYS:  # the same for the whole block
        rounds = (n + threads - 1) / threads
        for r in range(rounds):
            j = r * threads + lane
            b = int(-1)
            if j < n:
                b = rank_bucket(cand_bound[v, j], scale)
            same = warp_match(lanes, b)
            at = group_first_slot(b, same, below)
            count[at] = count[at] + wp.bit_count(same)
        carry = int(0)
        for b0 in range(0, _RANK_BUCKETS, threads):
            c = count[b0 + lane]
            upto = warp_scan(lanes, c)
            start[b0 + lane] = carry + upto - c
            carry += warp_read_int(lanes, upto, threads - 1)
        for r in range(rounds):
            j = r * threads + lane
            b = int(-1)
            bound = float(0.0)
            if j < n:
                bound = cand_bound[v, j]
                b = rank_bucket(bound, scale)
            same = warp_match(lanes, b)
            p = _RANK_SHARED_KEYS
            if b >= 0:
                p = start[b] + fill[b] + wp.bit_count(same & below)
            keys[p] = wp.cast(bound, wp.int32)
            order[p] = j
            at = group_first_slot(b, same, below)
            fill[at] = fill[at] + wp.bit_count(same)
        # Runs are in bucket order: once a position's run starts at capacity, so do the later ones.
        p = lane
        while p < n:
            key = keys[p]
            b = rank_bucket(wp.cast(key, wp.float32), scale)
            rank = start[b]
            if rank >= capacity:
                break
            for q in range(rank, rank + count[b]):
                if q != p:
                    rank += wp.where(keys[q] < key + wp.where(q < p, 1, 0), 1, 0)
            if rank < capacity:
                list_ref_out[v, rank] = cand_ref[v, order[p]]
                list_bound_out[v, rank] = wp.cast(key, wp.float32)
            p += threads
    else:
        row = view * cand_cap
        full = n / 4  # whole blocks of 4 candidates
        for j in range(lane, n, threads):
            key = wp.cast(cand_bound[v, j], wp.int32)
            jq = j / 4
            rank = count_below(cand_bits4, row / 4, row / 4 + jq, key + 1, 0, capacity)
            rank = count_below(cand_bits4, row / 4 + jq + 1, row / 4 + full, key, rank, capacity)
            # j's own block, and the last partial block when j lies before it
            for e in range(4):
                i = 4 * jq + e
                if i < n and i != j:
                    rank += wp.where(wp.cast(cand_bound[v, i], wp.int32) < key + wp.where(i < j, 1, 0), 1, 0)
            if jq < full:
                for i in range(4 * full, n):
                    rank += wp.where(wp.cast(cand_bound[v, i], wp.int32) < key, 1, 0)
            if rank < capacity:
                list_ref_out[v, rank] = cand_ref[v, j]
                list_bound_out[v, rank] = cand_bound[v, j]


# ---- per-entry setup: camera-relative records and tight screen bins -----------------------


@wp.func
def cam_coords(p: wp.vec3, o: wp.vec3, basis: wp.mat33) -> wp.vec3:
    """World point -> camera coordinates (x forward, y left, z up)."""
    rel = p - o
    return wp.vec3(wp.dot(rel, basis[0]), wp.dot(rel, basis[1]), wp.dot(rel, basis[2]))


@wp.func
def rect_add(rect: wp.vec4, c: wp.vec3, focal: float, cx: float, cy: float) -> wp.vec4:
    """Grow the screen rectangle (umin, wmin, umax, wmax) by camera point c (c[0] > 0)."""
    u = cx - focal * c[1] / c[0]
    w = cy - focal * c[2] / c[0]
    return wp.vec4(wp.min(rect[0], u), wp.min(rect[1], w), wp.max(rect[2], u), wp.max(rect[3], w))


@wp.func
def bin_margin(du: float, dw: float, focal: float) -> float:
    """How far (px) to grow a screen rectangle, whose farthest point lies (du, dw) px from the
    principal point, so that it contains every pixel centre a primitive inside it can cover.

    A cuboid's, wall's or light's coverage ends within half a footprint of its outline in its
    own plane, the footprint being t * pix with pix = 1 / focal, the on-axis pixel's angle; so
    within ~pix / 2 of it in angle (times the perspective factor of `BIN_REACH_SCALE`). An angle
    a at r = |(du, dw)| / focal off axis spans up to a * focal * (1 + r^2) px (radially), and
    pixel centres lie half a pixel inside any pixel-aligned rectangle. Lines can reach further
    (`BIN_LINE_MARGIN_PX`).
    """
    r2 = (du * du + dw * dw) / (focal * focal)
    scale = wp.max(_REACH_SCALE, 1.0 / wp.max(1.0 - 0.5 / focal, 0.5))
    return 0.5 * (1.0 + r2) * scale + _REACH_SLACK - 0.5


@wp.func
def entry_margin(kind: int, du: float, dw: float, focal: float) -> float:
    """`bin_margin` for an entry of REF_* ``kind``: lines take at least `BIN_LINE_MARGIN_PX`."""
    m = bin_margin(du, dw, focal)
    if kind == _REF_LINE:
        m = wp.max(m, _LINE_MARGIN)
    return m


@wp.func
def no_edges(first_row: float) -> wp.mat44:
    """Four edge lines (rows a, b, c, first row) that hold everywhere: 0 u + 0 w + 1 >= 0."""
    return wp.mat44(
        0.0, 0.0, 1.0, first_row,
        0.0, 0.0, 1.0, first_row,
        0.0, 0.0, 1.0, first_row,
        0.0, 0.0, 1.0, first_row,
    )  # fmt: skip


@wp.func
def rect_edges(rect: wp.vec4, first_row: float) -> wp.mat44:
    """The screen rectangle (umin, wmin, umax, wmax) as `quad_bin`'s edge lines (rows), for the
    entries with no polygon outline (cuboids, lights, a quad seen as a sliver), so `bin_entry`
    tests every kind per band; w = ``first_row`` (`quad_bin`)."""
    return wp.mat44(
        1.0, 0.0, -rect[0], first_row,
        0.0, 1.0, -rect[1], first_row,
        -1.0, 0.0, rect[2], first_row,
        0.0, -1.0, rect[3], first_row,
    )  # fmt: skip


@wp.func
def box_rect(
    agent_box: wp.array3d(dtype=wp.float32),
    step: int,
    i: int,
    o: wp.vec3,
    basis: wp.mat33,
    focal: float,
    cx: float,
    cy: float,
    clip: float,
) -> wp.vec4:
    """Screen rectangle of a cuboid clipped to the camera plane x = clip (corners and edge crossings)."""
    ca = wp.cos(agent_box[step, i, 3])
    sa = wp.sin(agent_box[step, i, 3])
    hl = 0.5 * agent_box[step, i, 4]
    hw = 0.5 * agent_box[step, i, 5]
    xs = vec8(0.0)
    ys = vec8(0.0)
    zs = vec8(0.0)
    rect = wp.vec4(_FULL, _FULL, -_FULL, -_FULL)
    for c in range(8):
        lx = hl * (2.0 * float(c % 2) - 1.0)
        ly = hw * (2.0 * float((c / 2) % 2) - 1.0)
        lz = agent_box[step, i, 6] * float(c / 4)
        p = wp.vec3(
            agent_box[step, i, 0] + ca * lx - sa * ly, agent_box[step, i, 1] + sa * lx + ca * ly,
            agent_box[step, i, 2] + lz,
        )  # fmt: skip
        q = cam_coords(p, o, basis)
        xs[c] = q[0]
        ys[c] = q[1]
        zs[c] = q[2]
        if q[0] >= clip:
            rect = rect_add(rect, q, focal, cx, cy)
    # The 12 edges join corners that differ in one index bit; add where they cross x = clip.
    for c in range(8):
        for e in range(3):
            bit = 1 << e
            if (c & bit) == 0:
                c2 = c | bit
                if (xs[c] >= clip) != (xs[c2] >= clip):
                    s = (clip - xs[c]) / (xs[c2] - xs[c])
                    q = wp.vec3(clip, ys[c] + s * (ys[c2] - ys[c]), zs[c] + s * (zs[c2] - zs[c]))
                    rect = rect_add(rect, q, focal, cx, cy)
    return rect


@wp.func
def quad_bin(
    p0: wp.vec3,
    p1: wp.vec3,
    p2: wp.vec3,
    p3: wp.vec3,
    o: wp.vec3,
    basis: wp.mat33,
    focal: float,
    cx: float,
    cy: float,
    clip: float,
    end_shift: float,
    first_row: float,
):
    """Screen rectangle and edge lines (the rows of a mat44) of a planar convex quad clipped to
    the plane x = clip.

    The (up to 5-gon) clipped polygon projects to a convex polygon; its first ``_EDGES`` edges
    are returned as unit lines (a, b, c), inside where a u + b w + c >= 0 (any subset of a convex
    polygon's edges bounds it, so dropping one stays conservative). The edges along the quad's
    edges p1 p2 and p3 p0 (a ground line's ends) and along the clip plane are moved out by
    ``end_shift`` px; an edge slot the polygon leaves unused (a triangle, a zero-length edge)
    gets a line that holds everywhere. Degenerate polygons (seen edge-on, or a sliver under a
    pixel in area) get their rectangle's edges instead, moved out by ``end_shift``. All four
    carry ``first_row`` in w (`bin_entry` drops the bands whose pixel centres all lie above
    it; -_FULL: none). A polygon wholly behind the clip plane returns an empty rectangle (and
    lines that hold everywhere): it bins nowhere.
    """
    xq = wp.vec4(0.0)
    yq = wp.vec4(0.0)
    zq = wp.vec4(0.0)
    for i in range(4):
        p = p0
        if i == 1:
            p = p1
        elif i == 2:
            p = p2
        elif i == 3:
            p = p3
        q = cam_coords(p, o, basis)
        xq[i] = q[0]
        yq[i] = q[1]
        zq[i] = q[2]
    us = vec5(0.0)
    ws = vec5(0.0)
    # Bit n: the polygon edge from vertex n lies along p1 p2, p3 p0 or the clip line. A kept
    # corner i, and the point where the outline comes back in front of the plane, start a piece
    # of quad edge i; the point where it goes behind starts a piece of the clip line.
    shifted = int(0)
    n = int(0)
    for i in range(4):
        j = (i + 1) % 4
        if xq[i] >= clip:
            us[n] = cx - focal * yq[i] / xq[i]
            ws[n] = cy - focal * zq[i] / xq[i]
            shifted = shifted | ((i % 2) << n)
            n += 1
        if (xq[i] >= clip) != (xq[j] >= clip):
            s = (clip - xq[i]) / (xq[j] - xq[i])
            us[n] = cx - focal * (yq[i] + s * (yq[j] - yq[i])) / clip
            ws[n] = cy - focal * (zq[i] + s * (zq[j] - zq[i])) / clip
            shifted = shifted | (wp.where(xq[j] >= clip, i % 2, 1) << n)
            n += 1
    rect = wp.vec4(_FULL, _FULL, -_FULL, -_FULL)
    edges = no_edges(first_row)
    if n < 3:
        return rect, edges
    area2 = float(0.0)
    for i in range(n):
        j = (i + 1) % n
        rect = wp.vec4(wp.min(rect[0], us[i]), wp.min(rect[1], ws[i]), wp.max(rect[2], us[i]), wp.max(rect[3], ws[i]))
        area2 += us[i] * ws[j] - us[j] * ws[i]
    if wp.abs(area2) >= 1.0:
        sgn = wp.sign(area2)
        for i in range(_EDGES):
            edge = edges[i]  # an unused slot keeps every band
            if i < n:
                j = (i + 1) % n
                du = us[j] - us[i]
                dw = ws[j] - ws[i]
                ln = wp.sqrt(du * du + dw * dw)
                if ln > 1.0e-6:
                    a = -sgn * dw / ln
                    b = sgn * du / ln
                    shift = wp.where(((shifted >> i) & 1) == 1, end_shift, 0.0)
                    edge = wp.vec4(a, b, shift - (a * us[i] + b * ws[i]), first_row)
            edges[i] = edge
    else:
        # No outline (a far line's dash, under a pixel in area): its rectangle, grown by
        # ``end_shift`` (all of a sliver is near an end), tests each band instead of the whole
        # tile range (at 96x54 these were a quarter of the walked lines that draw nothing).
        g = wp.vec4(rect[0] - end_shift, rect[1] - end_shift, rect[2] + end_shift, rect[3] + end_shift)
        edges = rect_edges(g, first_row)
    return rect, edges


@wp.func
def line_first_row(basis: wp.mat33, h: float, focal: float, cy: float, far: float) -> float:
    """The smallest screen row w (pixel centres at py + 0.5) at which a ground line on the plane
    ``h`` m above the camera can draw, or -_FULL (no limit) for a camera with roll or pointing
    straight down.

    `line_fragment` draws only where the pixel ray points down and meets the plane within
    ``far``: -d_z >= -h / far for the unit ray d. The ray through screen point (u, w) is
    D = f b0 + (cx - u) b1 + (cy - w) b2 (b = the camera's forward, left and up axes), and
    |D| >= f, so a pixel that draws has -D_z >= -h f / far. The rig's cameras turn by yaw and
    pitch only, so b1 is level (b1_z = 0) and that reads w >= cy + (f b0_z - h f / far) / b2_z:
    one row for the whole view. Near the horizon a band's pixels see the plane beyond ``far``
    while the outlines of lines within ``far`` still reach it (docs/renderer.md round 17). A
    plane at or above the camera (h >= 0) keeps the horizon row (h = 0): conservative.
    """
    if wp.abs(basis[1][2]) > 1.0e-6 or basis[2][2] < 1.0e-6:
        return -_FULL
    return cy + (focal * basis[0][2] + wp.max(-h, 0.0) * focal / far) / basis[2][2]


@wp.func
def box_rect_reach(rect: wp.vec4, mode: RampCoverage) -> wp.vec4:
    """`RampCoverage`: a cuboid's coverage ends within `bin_margin` of its screen rectangle."""
    return rect


# Overloads: Warp picks a function by its argument types (here `mode`).
@wp.func
def box_rect_reach(rect: wp.vec4, mode: ExactCoverage) -> wp.vec4:  # noqa: F811
    """`ExactCoverage`: the rectangle grown by `BOX_REACH_EXTRA_PX` (unless empty)."""
    if rect[0] > rect[2]:
        return rect
    x = _BOX_REACH_EXTRA
    return wp.vec4(rect[0] - x, rect[1] - x, rect[2] + x, rect[3] + x)


@wp.func
def box_rect_reach(rect: wp.vec4, mode: SilhouetteCoverage) -> wp.vec4:  # noqa: F811
    """`SilhouetteCoverage`: as `ExactCoverage` (the same box filter)."""
    return box_rect_reach(rect, ExactCoverage())


@wp.func
def box_image_axes(r0: wp.vec4, r1: wp.vec4, basis: wp.mat33, mode: RampCoverage) -> vec5:
    """`RampCoverage`: a cuboid's record carries no image axes (zeros)."""
    return vec5(0.0)


@wp.func
def box_image_axes(r0: wp.vec4, r1: wp.vec4, basis: wp.mat33, mode: ExactCoverage) -> vec5:  # noqa: F811
    """`ExactCoverage`: the image's across (right = -left; level, the rig has no roll: x, y)
    and down (-up: x, y, z) axes in the frame of the cuboid whose record starts r0, r1 (cos h =
    r0[3], sin h = r1[3]), for `silhouette_coverage`'s screen gradients."""
    right = -basis[1]
    down = -basis[2]
    return vec5(
        r0[3] * right[0] + r1[3] * right[1], -r1[3] * right[0] + r0[3] * right[1],
        r0[3] * down[0] + r1[3] * down[1], -r1[3] * down[0] + r0[3] * down[1], down[2],
    )  # fmt: skip


@wp.func
def box_image_axes(r0: wp.vec4, r1: wp.vec4, basis: wp.mat33, mode: SilhouetteCoverage) -> vec5:  # noqa: F811
    """`SilhouetteCoverage`: as `ExactCoverage`, for the stored lines' screen gradients
    (`store_box_lines`)."""
    return box_image_axes(r0, r1, basis, ExactCoverage())


def _entry_setup(
    view_origin: wp.array(dtype=wp.vec3),
    view_basis: wp.array(dtype=wp.mat33),
    view_step: wp.array(dtype=wp.int32),
    view_world: wp.array(dtype=wp.int32),
    list_ref: wp.array2d(dtype=wp.int32),
    list_count: wp.array(dtype=wp.int32),
    list_bound: wp.array2d(dtype=wp.float32),
    agent_box: wp.array3d(dtype=wp.float32),
    light_state: wp.array2d(dtype=wp.int32),
    world_light_start: wp.array(dtype=wp.int32),
    line_a: wp.array(dtype=wp.vec3),
    line_b: wp.array(dtype=wp.vec3),
    line_half_width: wp.array(dtype=wp.float32),
    line_kind: wp.array(dtype=wp.int32),
    wall_a: wp.array(dtype=wp.vec3),
    wall_b: wp.array(dtype=wp.vec3),
    wall_height: wp.array(dtype=wp.float32),
    light_pos: wp.array(dtype=wp.vec3),
    light_heading: wp.array(dtype=wp.float32),
    light_local: wp.array(dtype=wp.int32),
    line_color: wp.array(dtype=wp.vec3),
    light_color: wp.array(dtype=wp.vec3),
    focal: float,
    cx: float,
    cy: float,
    width: float,
    height: float,
    clip: float,
    far: float,
    bin: int,
    bin_mode: int,
    shared_tiles: int,  # `bin_entry`
    mode: Any,  # RampCoverage or ExactCoverage: `ENTRY_SETUP`
    binning: Any,  # SoloBinning or WarpBinning: `ENTRY_SETUP`
    view_base: int,
    # outputs: the entry's record (see `trace_ray`); with bin = 1 also its bits in the tile
    # masks (`bin_entry`; the masks zeroed by the caller)
    rec_out: wp.array2d(dtype=EntryRecord),
    tile_mask_out: wp.array3d(dtype=wp.uint32),
):
    """Thread per (view, list entry): everything per-pixel work needs, relative to the camera.

    Records (`EntryRecord`: r0, r1, r2, the list bound and r3 (0 unless given); o = camera
    centre, all positions relative to it):
      agent  (ol, cos h) (half extents, sin h) (agent kind, right_x, right_y, R) r3 = down;
             ol = camera in box frame; right / down = the image's axes in the box frame
             (`box_image_axes`: `ExactCoverage` only, which also grows the box's rectangle by
             `BOX_REACH_EXTRA_PX`: `box_rect_reach`), else 0
      line   (a - o [xy], u [xy]) (length, plane z - o_z, half width, reject margin)
             (packed colour: `packed_color_word`, -, -, R)
      wall   (a - o, u_x) (u_y, length, b_z - a_z, height) (-, -, -, R)
      light  (p - o, n_x) (n_y, angular visibility, -, -) (packed colour, -, -, R)
    R = the entry's REF_* kind as a float, so the raster needs no list reference.
    """
    tid = wp.tid()
    cap = list_ref.shape[1]
    v = view_base + tid / cap
    k = tid - (tid / cap) * cap
    if k >= list_count[v]:
        return  # an exited lane does not hold up `bin_entry`'s warp-wide calls (`WarpBinning`)
    o = view_origin[v]
    basis = view_basis[v]
    step = view_step[v]
    ref = list_ref[v, k]
    kind = ref >> _REF_SHIFT
    i = ref & _REF_MASK
    # Every kind's binning path below sets the screen rectangle and the _EDGES edge lines of
    # its outline (a, b, c, first row: `rect_edges`, `quad_bin`), which `bin_entry` tests per
    # band; an empty rectangle gets the empty tile range and bins nowhere.
    rect = wp.vec4(_FULL, _FULL, -_FULL, -_FULL)
    edges = no_edges(-_FULL)
    r0 = wp.vec4(0.0)
    r1 = wp.vec4(0.0)
    r2 = wp.vec4(0.0)
    r3 = wp.vec3(0.0)
    # A line's and a wall's outline are quads, binned by one `quad_bin` call after the kinds'
    # branches: called in each, a warp holding both kinds ran it twice (round 60).
    quad = int(0)
    q0 = wp.vec3(0.0)
    q1 = wp.vec3(0.0)
    q2 = wp.vec3(0.0)
    q3 = wp.vec3(0.0)
    quad_shift = float(0.0)
    quad_first_row = -_FULL
    if kind == _REF_AGENT:
        ca = wp.cos(agent_box[step, i, 3])
        sa = wp.sin(agent_box[step, i, 3])
        bh = agent_box[step, i, 6]
        rx = o[0] - agent_box[step, i, 0]
        ry = o[1] - agent_box[step, i, 1]
        rz = o[2] - (agent_box[step, i, 2] + 0.5 * bh)
        r0 = wp.vec4(ca * rx + sa * ry, -sa * rx + ca * ry, rz, ca)
        r1 = wp.vec4(0.5 * agent_box[step, i, 4], 0.5 * agent_box[step, i, 5], 0.5 * bh, sa)
        r2 = wp.vec4(float(wp.clamp(int(agent_box[step, i, 7]), 0, 2)), 0.0, 0.0, float(kind))
        if bin == 1:
            rect = box_rect(agent_box, step, i, o, basis, focal, cx, cy, clip)
            rect = box_rect_reach(rect, mode)
            edges = rect_edges(rect, -_FULL)
    elif kind == _REF_LINE:
        a = line_a[i]
        b = line_b[i]
        ux = b[0] - a[0]
        uy = b[1] - a[1]
        seg_len = wp.sqrt(ux * ux + uy * uy)
        ux = ux / seg_len
        uy = uy / seg_len
        zm = 0.5 * (a[2] + b[2])
        hw = line_half_width[i]
        col = line_color[line_kind[i]]
        r0 = wp.vec4(a[0] - o[0], a[1] - o[1], ux, uy)
        # r1[3]: the half width plus a rounding slack for `line_fragment`'s early reject.
        slack = hw + _REJECT_SLACK * (wp.abs(a[0] - o[0]) + wp.abs(a[1] - o[1]) + 1.0)
        r1 = wp.vec4(seg_len, zm - o[2], hw, slack)
        r2 = wp.vec4(packed_color_word(col), 0.0, 0.0, float(kind))
        if bin == 1:
            # The drawn capsule (round caps) on its plane z = zm.
            du = wp.vec3(ux * hw, uy * hw, 0.0)
            dn = wp.vec3(-uy * hw, ux * hw, 0.0)
            pa = wp.vec3(a[0], a[1], zm) - du
            pb = wp.vec3(b[0], b[1], zm) + du
            # `bin_entry` grows every edge by the band's angular margin (`bin_margin`), which
            # holds across a line; its ends need `BIN_LINE_MARGIN_PX`, so they move out by that
            # less the smallest band margin (at the principal point).
            quad = 1
            q0 = pa + dn
            q1 = pb + dn
            q2 = pb - dn
            q3 = pa - dn
            quad_shift = wp.max(_LINE_MARGIN - bin_margin(0.0, 0.0, focal), 0.0)
            quad_first_row = line_first_row(basis, zm - o[2], focal, cy, far)
    elif kind == _REF_WALL:
        a = wall_a[i]
        b = wall_b[i]
        ux = b[0] - a[0]
        uy = b[1] - a[1]
        seg_len = wp.sqrt(ux * ux + uy * uy)
        if seg_len >= 1.0e-6:
            ux = ux / seg_len
            uy = uy / seg_len
        else:
            seg_len = 0.0
        h = wall_height[i]
        r0 = wp.vec4(a[0] - o[0], a[1] - o[1], a[2] - o[2], ux)
        r1 = wp.vec4(uy, seg_len, b[2] - a[2], h)
        r2 = wp.vec4(0.0, 0.0, 0.0, float(kind))
        if bin == 1 and seg_len > 0.0:
            hz = wp.vec3(0.0, 0.0, h)
            quad = 1
            q0 = a
            q1 = b
            q2 = b + hz
            q3 = a + hz
    else:
        p = light_pos[i]
        hd = light_heading[i]
        state = wp.clamp(light_state[step, world_light_start[view_world[v]] + light_local[i]], 0, 3)
        col = light_color[state]
        r0 = wp.vec4(p[0] - o[0], p[1] - o[1], p[2] - o[2], wp.cos(hd))
        r1 = wp.vec4(wp.sin(hd), light_visibility(p, hd, o), 0.0, 0.0)
        r2 = wp.vec4(packed_color_word(col), 0.0, 0.0, float(kind))
        if bin == 1:
            # A sphere-ish bound of the disk (any orientation); the whole screen if it reaches
            # behind the clip plane.
            for c in range(8):
                ang = 0.25 * wp.pi * float(c)
                ring = p + _LIGHT_RADIUS * wp.vec3(wp.cos(ang), wp.sin(ang), 0.0)
                for s in range(2):
                    q = cam_coords(ring + wp.vec3(0.0, 0.0, _LIGHT_RADIUS * (2.0 * float(s) - 1.0)), o, basis)
                    if q[0] < clip:
                        rect = wp.vec4(-_FULL, -_FULL, _FULL, _FULL)
                    else:
                        rect = rect_add(rect, q, focal, cx, cy)
            edges = rect_edges(rect, -_FULL)
    if quad == 1:
        rect, edges = quad_bin(q0, q1, q2, q3, o, basis, focal, cx, cy, clip, quad_shift, quad_first_row)
    if kind == _REF_AGENT:
        # computed after the binning, so they take no registers across it
        axes = box_image_axes(r0, r1, basis, mode)
        r2[1] = axes[0]
        r2[2] = axes[1]
        r3 = wp.vec3(axes[2], axes[3], axes[4])
        store_box_lines(mode, v * cap + k, r0, r1, axes, focal, cx, cy)
    store_record(rec_out, v, k, r0, r1, r2, list_bound[v, k], r3)
    if bin == 0:
        return
    # The margin at the image corner farthest from the principal point holds for every pixel.
    m = entry_margin(kind, wp.max(cx, width - cx), wp.max(cy, height - cy), focal)
    tiles = wp.vec4i(1, 1, 0, 0)  # empty: off screen, or an empty rectangle
    tiles_x = (int(width) + _TILE - 1) / _TILE
    tiles_y = (int(height) + _TILE - 1) / _TILE
    if rect[2] >= -m and rect[3] >= -m and rect[0] <= width + m and rect[1] <= height + m:
        tiles = wp.vec4i(
            wp.clamp(int(wp.floor((wp.max(rect[0], -2.0 * m) - m) / float(_TILE))), 0, tiles_x - 1),
            wp.clamp(int(wp.floor((wp.max(rect[1], -2.0 * m) - m) / float(_TILE))), 0, tiles_y - 1),
            wp.clamp(int(wp.floor((wp.min(rect[2], width + 2.0 * m) + m) / float(_TILE))), 0, tiles_x - 1),
            wp.clamp(int(wp.floor((wp.min(rect[3], height + 2.0 * m) + m) / float(_TILE))), 0, tiles_y - 1),
        )
    bin_entry(v, k, tiles, edges, tiles_x, tiles_y, focal, cx, cy, bin_mode, shared_tiles, binning, tile_mask_out)


ENTRY_SETUP_MAX_REGISTERS = env_int(
    "PICTURA_ENTRY_SETUP_MAX_REGISTERS", 0, lambda x: x == 0 or 16 <= x <= 255, "0 (no cap) or an integer in [16, 255]"
)
"""Register cap of `entry_setup` (0: none; ``PICTURA_ENTRY_SETUP_MAX_REGISTERS`` overrides it, for tuning)."""
ENTRY_SETUP_BLOCK_DIM = block_dim("PICTURA_ENTRY_SETUP_BLOCK_DIM", 256)
"""Threads per block of `entry_setup` (``PICTURA_ENTRY_SETUP_BLOCK_DIM`` overrides it, for tuning)."""
entry_setup = wp.kernel(_entry_setup, name="entry_setup", cuda_max_registers=ENTRY_SETUP_MAX_REGISTERS or None)


@wp.func
def bin_edges(outline: wp.mat44, bin_mode: int) -> wp.mat44:
    """The edge lines `bin_tile` tests for ``bin_mode`` (`bin_entry`): the outline's (2), or none
    (1: the rectangle only; 0: every tile)."""
    if bin_mode == 2:
        return outline
    return no_edges(-_FULL)


@wp.func
def bin_range(q: wp.vec4i, tiles_x: int, tiles_y: int, bin_mode: int) -> wp.vec4i:
    """The tile range `bin_entry` visits for ``bin_mode``: the entry's ``q``, or every tile (0)."""
    if bin_mode == 0:
        return wp.vec4i(0, 0, tiles_x - 1, tiles_y - 1)
    return q


@wp.func
def range_tiles(q: wp.vec4i) -> int:
    """Tiles in the range ``q`` = (x0, y0, x1, y1), inclusive (0 for an empty one)."""
    return wp.max(q[2] - q[0] + 1, 0) * wp.max(q[3] - q[1] + 1, 0)


@wp.func
def band_row_reach(ty: int, cy: float) -> wp.vec2:
    """The largest |w - cy| over the top and the bottom band of tile row ``ty`` (`bin_margin`'s
    dw for each)."""
    w0 = float(ty * _TILE)
    wm = w0 + float(_BAND)
    w1 = w0 + float(_TILE)
    return wp.vec2(wp.max(wp.abs(w0 - cy), wp.abs(wm - cy)), wp.max(wp.abs(wm - cy), wp.abs(w1 - cy)))


@wp.func
def bin_tile(
    v: int,
    k: int,
    tx: int,
    ty: int,
    row_reach: wp.vec2,
    edges: wp.mat44,
    tiles_x: int,
    focal: float,
    cx: float,
    tile_mask_out: wp.array3d(dtype=wp.uint32),
):
    """`bin_entry`'s test of one tile (tx, ty): set list entry k of view v's bit in each of the
    tile's two bands that no edge line of ``edges`` has wholly outside (``row_reach`` =
    `band_row_reach` (ty))."""
    # A ground line's first row (`line_first_row`, the w of each of its edges; -_FULL for other
    # kinds): a band whose lowest pixel centre lies above it sees the line's plane only beyond
    # `far`.
    first_row = edges[0][3] - _CENTRE_SLACK
    w0 = float(ty * _TILE)
    wm = w0 + float(_BAND)
    w1 = w0 + float(_TILE)
    u0 = float(tx * _TILE)
    u1 = u0 + float(_TILE)
    du = wp.max(wp.abs(u0 - cx), wp.abs(u1 - cx))
    m0 = bin_margin(du, row_reach[0], focal)
    m1 = bin_margin(du, row_reach[1], focal)
    # the band's lowest pixel centre lies half a pixel above its bottom edge
    in0 = wp.where(wm - 0.5 >= first_row, 1, 0)
    in1 = wp.where(w1 - 0.5 >= first_row, 1, 0)
    for e in range(_EDGES):
        ed = edges[e]
        reach_u = ed[0] * wp.where(ed[0] > 0.0, u1, u0) + ed[2]
        if reach_u + ed[1] * wp.where(ed[1] > 0.0, wm, w0) < -m0:
            in0 = 0
        if reach_u + ed[1] * wp.where(ed[1] > 0.0, w1, wm) < -m1:
            in1 = 0
    t = ty * tiles_x + tx
    bit = wp.uint32(1) << wp.uint32(k - (k / 32) * 32)
    if in0 == 1:
        wp.atomic_or(tile_mask_out, v, 2 * t, k / 32, bit)
    if in1 == 1:
        wp.atomic_or(tile_mask_out, v, 2 * t + 1, k / 32, bit)


SHARED_BIN_TILES = env_int(
    "PICTURA_SHARED_BIN_TILES", 8, lambda x: x >= 0, "a non-negative integer (tiles an entry bins alone)"
)
"""With `WarpBinning`, an entry whose tile range holds more tiles than this has them binned by its
whole warp (`bin_entry`; `entry_setup`'s ``shared_tiles``, the renderer's default).
``PICTURA_SHARED_BIN_TILES`` overrides it, for tuning: on an H200 at 192x108, 8 tiles gave
`entry_setup` 1.50 ms and 4 tiles 1.63 ms (docs/renderer.md, round 33)."""


@wp.func_native("""
#if defined(__CUDA_ARCH__)
return 0xffffffffu;
#else
return 0u;
#endif
""")
def warp_lanes() -> wp.uint32:
    """The mask of a whole CUDA warp for the `warp_ballot` / `warp_read_*` calls (0 on the CPU,
    which has no warps). A lane that has returned does not hold those calls up (CUDA's *_sync
    rules); `__activemask()` would not do: it names only the lanes converged at that moment,
    which can differ from lane to lane. (The first GPU builds, with either mask, lost ~2 % of
    the pixels for another reason: `bin_entry` dealt tiles by hardware lane; round 33.)"""
    ...


@wp.func_native("""
#if defined(__CUDA_ARCH__)
return __ballot_sync(lanes, pred != 0);
#else
return 0u;
#endif
""")
def warp_ballot(lanes: wp.uint32, pred: int) -> wp.uint32:
    """Bit l set when lane l of ``lanes`` (`warp_lanes`) has ``pred`` != 0; 0 on the CPU."""
    ...


@wp.func_native("""
#if defined(__CUDA_ARCH__)
return __shfl_sync(lanes, x, src);
#else
return x;
#endif
""")
def warp_read_int(lanes: wp.uint32, x: int, src: int) -> int:
    """Lane ``src``'s ``x`` (`warp_ballot`'s ``lanes``)."""
    ...


@wp.func_native("""
#if defined(__CUDA_ARCH__)
return __shfl_sync(lanes, x, src);
#else
return x;
#endif
""")
def warp_read_float(lanes: wp.uint32, x: float, src: int) -> float:
    """Lane ``src``'s ``x`` (`warp_ballot`'s ``lanes``)."""
    ...


@wp.func_native("""
#if defined(__CUDA_ARCH__)
return threadIdx.x & 31;
#else
return 0;
#endif
""")
def warp_lane() -> int:
    """The calling thread's lane in its CUDA warp (0 on the CPU)."""
    ...


@wp.func_native("""
#if defined(__CUDA_ARCH__)
return __match_any_sync(lanes, x);
#else
return 1u;
#endif
""")
def warp_match(lanes: wp.uint32, x: int) -> wp.uint32:
    """The lanes of ``lanes`` (`warp_lanes`) whose ``x`` equals this lane's; on the CPU, which has
    no warps, the calling thread alone (bit 0)."""
    ...


@wp.func_native("""
#if defined(__CUDA_ARCH__)
const int lane = threadIdx.x & 31;
for (int d = 1; d < 32; d <<= 1) {
    const int y = __shfl_up_sync(lanes, x, d);
    if (lane >= d) x += y;
}
#endif
return x;
""")
def warp_scan(lanes: wp.uint32, x: int) -> int:
    """The sum of ``x`` over lanes 0 .. this one of a whole warp (``x`` itself on the CPU)."""
    ...


@wp.func
def bin_entry(
    v: int,
    k: int,
    q: wp.vec4i,
    outline: wp.mat44,
    tiles_x: int,
    tiles_y: int,
    focal: float,
    cx: float,
    cy: float,
    bin_mode: int,
    shared_tiles: int,
    binning: SoloBinning,
    tile_mask_out: wp.array3d(dtype=wp.uint32),
):
    """Set list entry k of view v's bit in every band it may touch: `entry_setup`'s last step,
    with the entry's tile range ``q`` and the edge lines of its outline (rows a, b, c, first row).

    ``bin_mode``: 2 = rectangle and edge lines (the renderer's), 1 = rectangle only, 0 = every
    tile (the reference the tests compare against). ``tile_mask_out`` (zeroed by the caller):
    bit k % 32 of word k / 32 of row 2 t + h says list entry k may touch half h of tile t (its
    top or bottom _BAND rows).

    An entry is kept in a band when its tile range holds the tile and no edge line of its
    outline (its projected polygon's, or its screen rectangle's) has the whole band, grown by
    the band's `bin_margin`, on its outside. The margin grows off axis, where a pixel spans a
    smaller angle: 0.08 px at the image centre, 0.34 px in the corners of the default rig
    (Table 3) at 96x54, against 1.5 px for every kind before. Across a ground line its
    coverage reaches at most half a footprint past the strip too; its ends reach up to
    `BIN_LINE_MARGIN_PX`, and `quad_bin` moved those edges out. A ground line also skips the
    bands whose pixel centres all lie above its first row (`line_first_row`: they meet its
    plane only beyond ``far``). Each entry visits only the tiles of its range. Bits are set
    with an integer atomic OR, whose result does not depend on the order of the writes: the
    masks are the same words on every run, whoever sets them (`WarpBinning`'s overload).
    Entries keep their depth order inside every band (bit k is list slot k).

    `SoloBinning`: the entry's own thread visits all its tiles (``shared_tiles`` unused).
    """
    q = bin_range(q, tiles_x, tiles_y, bin_mode)
    bin_range_alone(v, k, q, bin_edges(outline, bin_mode), tiles_x, focal, cx, cy, tile_mask_out)


@wp.func
def bin_range_alone(
    v: int,
    k: int,
    q: wp.vec4i,
    edges: wp.mat44,
    tiles_x: int,
    focal: float,
    cx: float,
    cy: float,
    tile_mask_out: wp.array3d(dtype=wp.uint32),
):
    """`bin_tile` on every tile of the range ``q``, by the calling thread alone. Nested loops: the
    flat loop of `bin_range_share` made `entry_setup` 16 % slower at 96x54 (docs/renderer.md,
    round 33)."""
    for ty in range(q[1], q[3] + 1):
        row_reach = band_row_reach(ty, cy)
        for tx in range(q[0], q[2] + 1):
            bin_tile(v, k, tx, ty, row_reach, edges, tiles_x, focal, cx, tile_mask_out)


@wp.func
def bin_range_share(
    v: int,
    k: int,
    q: wp.vec4i,
    edges: wp.mat44,
    first: int,
    stride: int,
    tiles_x: int,
    focal: float,
    cx: float,
    cy: float,
    tile_mask_out: wp.array3d(dtype=wp.uint32),
):
    """`bin_tile` on tiles ``first``, ``first + stride``, ... of the range ``q`` (row major): one
    lane's share of an entry's tiles (`WarpBinning`)."""
    w = q[2] - q[0] + 1
    end = range_tiles(q)
    idx = first
    while idx < end:  # not `range`: its runtime step's sign is tested on every pass
        row = idx / w
        ty = q[1] + row
        bin_tile(v, k, q[0] + idx - row * w, ty, band_row_reach(ty, cy), edges, tiles_x, focal, cx, tile_mask_out)
        idx += stride


@wp.func
def bin_entry(  # noqa: F811
    v: int,
    k: int,
    q: wp.vec4i,
    outline: wp.mat44,
    tiles_x: int,
    tiles_y: int,
    focal: float,
    cx: float,
    cy: float,
    bin_mode: int,
    shared_tiles: int,
    binning: WarpBinning,
    tile_mask_out: wp.array3d(dtype=wp.uint32),
):
    """`bin_entry` shared within a CUDA warp (the same bits as `SoloBinning`'s): an entry of at
    most ``shared_tiles`` tiles bins itself, and the warp's larger entries are binned one after
    another by all its running lanes, a tile each in turn. A warp's 32 entries (of one view) bin
    to 2.1-6.9 bands on average by kind but up to 130, so a thread per entry left the warp
    waiting on its largest entry: 4.5x its mean (docs/renderer.md, round 33). Every running lane
    of the warp must reach this call (a lane that has returned does not count). On the CPU,
    which has no warps, each entry bins alone.
    """
    lanes = warp_lanes()
    q = bin_range(q, tiles_x, tiles_y, bin_mode)
    edges = bin_edges(outline, bin_mode)
    shared = wp.where(lanes != wp.uint32(0) and range_tiles(q) > shared_tiles, 1, 0)
    if shared == 0:
        bin_range_alone(v, k, q, edges, tiles_x, focal, cx, cy, tile_mask_out)
    pending = warp_ballot(lanes, shared)
    # The lanes still running (a lane past its view's list count has returned) share the tiles:
    # this one takes every count-th tile from its rank among them. Dealing them out by hardware
    # lane lost the returned lanes' shares (2 % of the pixels on the first GPU run).
    running = append_offsets_ballot(1, warp_lane())  # (this lane's rank, running lanes)
    rank = running[0]
    count = running[1]
    while pending != wp.uint32(0):
        low = pending & (~pending + wp.uint32(1))
        pending = pending ^ low
        src = wp.bit_count(low - wp.uint32(1))
        sq = wp.vec4i(
            warp_read_int(lanes, q[0], src), warp_read_int(lanes, q[1], src), warp_read_int(lanes, q[2], src),
            warp_read_int(lanes, q[3], src),
        )  # fmt: skip
        se = wp.mat44()
        for r in range(4):
            for c in range(4):
                se[r, c] = warp_read_float(lanes, edges[r, c], src)
        bin_range_share(
            warp_read_int(lanes, v, src), warp_read_int(lanes, k, src), sq, se, rank, count, tiles_x, focal, cx, cy,
            tile_mask_out,
        )  # fmt: skip


# ---- per-pixel fragments from the records (o = camera centre, d = unit ray) ----------------


@wp.func
def face_excess(ob: float, db: float, eb: float, oc: float, dc: float, ec: float, t: float) -> float:
    """How far (m, negative inside) the ray's hit at depth t lies outside the cuboid face whose
    in-plane axes are b and c: the larger of its excesses over the two half-extents."""
    return wp.max(wp.abs(ob + t * db) - eb, wp.abs(oc + t * dc) - ec)


@wp.func
def box_face(
    oa: float, da: float, ea: float, ob: float, db: float, eb: float, oc: float, dc: float, ec: float,
    pix: float, near: float, far: float, antialias: int,
) -> wp.vec2:
    """(t, coverage) of the ray on the cuboid face across axis a that faces the camera (axes b,
    c span it): the in-plane distance to the face's edges over the pixel footprint; (0, 0) when
    the face looks away, or lies outside [near, far]."""
    side = wp.sign(oa)
    if wp.abs(oa) > ea and da * side < 0.0:
        t = (side * ea - oa) / da
        if t >= near and t <= far:
            return wp.vec2(t, coverage(face_excess(ob, db, eb, oc, dc, ec, t), t * pix, antialias))
    return wp.vec2(0.0)


_PRESENT = wp.constant(1.0e-4)
"""`ExactCoverage`'s weight of a face that the pixel centre misses by more than `coverage`'s ramp
but whose edge the pixel may still overlap (`face_weight`): it names the face for the colour
and the silhouette's edge (`silhouette_coverage`), which sets the coverage."""
_INSIDE = wp.constant(2.0)
"""`SilhouetteCoverage`'s weight of a face that holds the whole pixel (`face_weight`): above the
ramp's 1, so that `box_alpha` knows the box covers the pixel without its silhouette's edges;
no other face reaches such a pixel by more than `_PRESENT`, so the colour stays the face's."""
_REACH = wp.constant(0.75)
"""A face edge's reach in the face's plane, times |d_a| / (t pix), is at most 1 / sqrt(2)
(`face_weight`); 0.75 leaves a margin for the ray's off-axis angle."""
_THICK = wp.constant(2.0)
"""Pixels a face must span on screen across each of its axes for `ExactCoverage` to draw it
from its edge lines (`thick_face`): a thinner face (a roof seen from just above it) has edge
lines that run nearly parallel through the same pixels, and along the horizon, where the
product of two half-planes is not its area; it keeps the ramp."""


@wp.func
def thick_face(da: float, db: float, eb: float, dc: float, ec: float, t: float, pix: float) -> bool:
    """Whether the face across axis a spans at least `_THICK` px across axes b and c: across b
    its screen extent is 2 e_b / |g_b|, the in-plane coordinate's screen gradient being about
    t pix sqrt(d_a^2 + d_b^2) / |d_a| (here bounded by |d_a| + |d_b|)."""
    ta = _THICK * t * pix
    return 2.0 * eb * wp.abs(da) >= ta * (wp.abs(da) + wp.abs(db)) and 2.0 * ec * wp.abs(da) >= ta * (
        wp.abs(da) + wp.abs(dc)
    )


@wp.func
def face_weight(
    oa: float, da: float, ea: float, ob: float, db: float, eb: float, oc: float, dc: float, ec: float,
    pix: float, near: float, far: float, antialias: int, mode: RampCoverage,
) -> wp.vec2:  # fmt: skip
    """`RampCoverage`: the face's (t, coverage), `box_face`."""
    return box_face(oa, da, ea, ob, db, eb, oc, dc, ec, pix, near, far, antialias)


# Overloads: Warp picks a function by its argument types (here `mode`).
@wp.func
def face_weight(  # noqa: F811
    oa: float, da: float, ea: float, ob: float, db: float, eb: float, oc: float, dc: float, ec: float,
    pix: float, near: float, far: float, antialias: int, mode: ExactCoverage,
) -> wp.vec2:  # fmt: skip
    """`ExactCoverage`: `box_face`'s (t, weight), where the weight mixes the faces' colours and
    the box's coverage is its silhouette's (`box_alpha`).

    An oblique face stretches the pixel's footprint in its plane by up to 1 / |d_a| (the screen
    gradient of an in-plane coordinate is at most t pix / |d_a| long, and a pixel reaches
    1 / sqrt(2) of it along its diagonal), so a face the centre misses by less than that weighs
    `_PRESENT`: its edge may still cover part of the pixel (unless it is thinner than `_THICK`
    on screen)."""
    f = box_face(oa, da, ea, ob, db, eb, oc, dc, ec, pix, near, far, antialias)
    t = f[0]
    if f[1] <= 0.0 and t > 0.0 and antialias == 1:
        sd = face_excess(ob, db, eb, oc, dc, ec, t)
        if sd * wp.abs(da) < _REACH * t * pix and thick_face(da, db, eb, dc, ec, t, pix):
            return wp.vec2(t, _PRESENT)
    return f


@wp.func
def face_weight(  # noqa: F811
    oa: float, da: float, ea: float, ob: float, db: float, eb: float, oc: float, dc: float, ec: float,
    pix: float, near: float, far: float, antialias: int, mode: SilhouetteCoverage,
) -> wp.vec2:  # fmt: skip
    """`SilhouetteCoverage`: `box_face`'s (t, weight), where the weight mixes the faces' colours
    and the box's coverage is its silhouette edges' (`box_alpha`). A face the centre misses by
    less than the pixel's reach in its plane weighs `_PRESENT` (as `ExactCoverage`, whatever the
    face's width); one the centre lies inside by more than that holds the whole pixel and weighs
    `_INSIDE`, which spares `box_alpha` the edges."""
    f = box_face(oa, da, ea, ob, db, eb, oc, dc, ec, pix, near, far, antialias)
    t = f[0]
    if t > 0.0 and antialias == 1:
        sd = face_excess(ob, db, eb, oc, dc, ec, t) * wp.abs(da)
        reach = _REACH * t * pix
        if f[1] <= 0.0:
            if sd < reach:
                return wp.vec2(t, _PRESENT)
        elif sd < -reach:
            return wp.vec2(t, _INSIDE)
    return f


@wp.func
def half_plane_area(s: float, a: float, b: float) -> float:
    """Exact fraction of a unit pixel (a box filter) inside the half-plane ``y <= 0`` of a
    quantity ``y`` that is ``s`` at the pixel centre and whose change per pixel across and down
    the image has the magnitudes ``a`` >= ``b`` >= 0 (in either order: the area does not
    depend on which, nor on their signs).

    The pixel spans ``y`` in [s - h, s + h], h = (a + b) / 2: the straight part of the
    coverage curve, |s| <= (a - b) / 2, is 1/2 - s / a, and each end is a triangle of area
    (h - |s|)^2 / (2 a b). No square root: the distances stay in y's own units, and b = 0
    never reaches the triangles."""
    h = 0.5 * (a + b)
    if s >= h:
        return 0.0
    if s <= -h:
        return 1.0
    if wp.abs(s) <= 0.5 * (a - b):
        return 0.5 - s / a
    r = h - wp.abs(s)
    tri = r * r / (2.0 * a * b)
    if s > 0.0:
        return tri
    return 1.0 - tri


@wp.func
def half_plane_coverage(s: float, gu: float, gv: float) -> float:
    """`half_plane_area` of a quantity that is ``s`` at the pixel centre and changes by (``gu``,
    ``gv``) per pixel across and down the image."""
    return half_plane_area(s, wp.max(wp.abs(gu), wp.abs(gv)), wp.min(wp.abs(gu), wp.abs(gv)))


@wp.func
def edge_coverage(
    s: float, ok: float, uk: float, wk: float, t: float, inv_da: float, ua: float, wa: float, cos_pix: float
) -> float:
    """Exact box-filter coverage of the pixel by the inside of one edge of the face across
    axis a, the edge y_k = e that lies ``s`` (m, negative inside) from the ray's hit at depth t,
    ``ok`` = o_k - e (`silhouette_coverage`)."""
    c = ok * inv_da
    return half_plane_coverage(s, cos_pix * (c * ua + t * uk), cos_pix * (c * wa + t * wk))


@wp.func
def silhouette_coverage(
    t: float, da: float, ua: float, wa: float,
    ob: float, db: float, eb: float, ub: float, wb: float,
    oc: float, dc: float, ec: float, uc: float, wc: float,
    cos_pix: float, pix: float, ramp: float,
) -> float:  # fmt: skip
    """Coverage of the pixel by the box's silhouette, from the face across axis a that the
    ray meets at depth t (its in-plane axes b, c): the product of the exact box filters of the
    half-planes of the face's two nearest edges (`half_plane_coverage`), exact away from the
    silhouette's corners (issue 5).

    On the face's plane, y_b along the unnormalised pixel ray r crosses the edge y_b = e where
    the affine L = (o_b - e) r_a + t d_a r_b vanishes: the edge's exact screen line. At the pixel
    centre L = |r| d_a (y_b - e), and L's gradient per pixel is (o_b - e) (u_a, w_a) + t d_a
    (u_b, w_b), (u, w) the image's across and down axes in the box frame. Dividing both by
    |r| d_a (1 / |r| = cos(phi) pix, ``cos_pix``) keeps the distance in metres and the ratio
    exact.

    An edge the face shares with another camera-facing face (the camera lies beyond it:
    |o_b| > e_b on y_b's side) is inside the silhouette: it counts 1 while the pixel overlaps
    the face's side of it at all. A pixel wholly beyond it lies on that other face, which then
    covers it more and is the one `box_fragment` asks, or off the box.

    A face thinner than `_THICK` px on screen returns ``ramp`` (the faces' summed ramp)."""
    if not thick_face(da, db, eb, dc, ec, t, pix):
        return ramp
    inv_da = 1.0 / da
    yb = ob + t * db
    yc = oc + t * dc
    cov_b = edge_coverage(wp.abs(yb) - eb, ob - wp.sign(yb) * eb, ub, wb, t, inv_da, ua, wa, cos_pix)
    cov_c = edge_coverage(wp.abs(yc) - ec, oc - wp.sign(yc) * ec, uc, wc, t, inv_da, ua, wa, cos_pix)
    if wp.abs(ob) > eb and ob * yb > 0.0 and cov_b > 0.0:
        cov_b = 1.0
    if wp.abs(oc) > ec and oc * yc > 0.0 and cov_c > 0.0:
        cov_c = 1.0
    return cov_b * cov_c


@wp.func
def ray_cos_pix(d: wp.vec3, dx: float, dy: float, u0: float, u1: float, r3: wp.vec4, pix: float) -> float:
    """cos(phi) pix = 1 / |r| for the unnormalised pixel ray r: phi the unit ray d's angle to the
    camera's forward axis u x w, from the image's axes in the box frame (across u = (u0, u1, 0),
    down w = r3[1:]; dx, dy = d in the box frame)."""
    return wp.abs(dx * u1 * r3[3] - dy * u0 * r3[3] + d[2] * (u0 * r3[2] - u1 * r3[1])) * pix


@wp.func
def box_alpha(
    r0: wp.vec4, r1: wp.vec4, rec: wp.array(dtype=EntryRecord), i: int, d: wp.vec3, dx: float, dy: float,
    best: int, best_t: float, cov_sum: float, pixel: int, pix: float, antialias: int, mode: RampCoverage,
) -> float:  # fmt: skip
    """`RampCoverage`: the box's coverage is its faces' summed ramp."""
    return wp.min(cov_sum, 1.0)


@wp.func
def box_alpha(  # noqa: F811
    r0: wp.vec4, r1: wp.vec4, rec: wp.array(dtype=EntryRecord), i: int, d: wp.vec3, dx: float, dy: float,
    best: int, best_t: float, cov_sum: float, pixel: int, pix: float, antialias: int, mode: ExactCoverage,
) -> float:  # fmt: skip
    """`ExactCoverage`: the box's coverage is its silhouette's (`silhouette_coverage`), from
    face ``best`` (0, 1, 2: across x, y, z) met at ``best_t``, with the image's axes from words 2
    and 3 of record ``i`` of ``rec`` (`entry_setup`); ``dx``, ``dy`` = the ray in the box frame.
    The two words are loaded again here, not held from the walk: held, they raised the
    raster's spills at its register cap (ptxas, sm_90: 92 bytes instead of 84)."""
    if antialias == 0:
        return wp.min(cov_sum, 1.0)
    r2 = record_word(rec, i, 2)
    r3 = record_word(rec, i, 3)
    # The image's axes in the box frame: across u = (r2[1], r2[2], 0), down w = r3[1:].
    u0 = r2[1]
    u1 = r2[2]
    cos_pix = ray_cos_pix(d, dx, dy, u0, u1, r3, pix)
    # The best face's axes (a; b, c in axis order), by selects rather than a branch per face.
    on_x = best == 0
    on_z = best == 2
    return silhouette_coverage(
        best_t,
        wp.where(on_x, dx, wp.where(on_z, d[2], dy)),
        wp.where(on_x, u0, wp.where(on_z, 0.0, u1)),
        wp.where(on_x, r3[1], wp.where(on_z, r3[3], r3[2])),
        wp.where(on_x, r0[1], r0[0]), wp.where(on_x, dy, dx), wp.where(on_x, r1[1], r1[0]),
        wp.where(on_x, u1, u0), wp.where(on_x, r3[2], r3[1]),
        wp.where(on_z, r0[1], r0[2]), wp.where(on_z, dy, d[2]), wp.where(on_z, r1[1], r1[2]),
        wp.where(on_z, u1, 0.0), wp.where(on_z, r3[2], r3[3]),
        cos_pix, pix, wp.min(cov_sum, 1.0),
    )  # fmt: skip


@wp.func
def silhouette_edge_sides(first: int, oa: float, ea: float, ob: float, eb: float) -> wp.vec2:
    """(side on axis a, side on axis b) of one of the box's two silhouette edges along the third
    axis c (``first`` picks which), (0, 0) when there is none: an edge is the silhouette's where
    exactly one of its two faces faces the camera (o: the camera in the box frame, e: the
    half-extents; the face across a on side s faces it when s o_a > e_a)."""
    t = wp.where(first == 1, 1.0, -1.0)
    sa = wp.sign(oa)
    sb = wp.sign(ob)
    if wp.abs(oa) > ea:
        if wp.abs(ob) > eb:
            return wp.vec2(t * sa, -t * sb)
        return wp.vec2(sa, t)
    if wp.abs(ob) > eb:
        return wp.vec2(t, sb)
    return wp.vec2(0.0, 0.0)


@wp.func
def line_value(line: wp.vec3, x: float, y: float) -> float:
    """A line's (value at the pixel centre, change per pixel across, down: `stored_line_at`)
    value at (x, y) px from the pixel centre."""
    return line[0] + x * line[1] + y * line[2]


@wp.func
def two_lines_coverage(c1: float, c2: float, l1: wp.vec3, l2: wp.vec3) -> float:
    """Box-filter coverage of the pixel by the insides of two `stored_line_at` s that both cut it
    (``c1``, ``c2`` their own coverages). Lines that cross inside the pixel meet at one of the
    silhouette's corners: the product. Lines that do not cut the pixel in three: the insides
    overlap in the middle (the coverages less 1), or one outside holds the other (the smaller
    coverage; the edges of a side seen nearly edge-on run almost parallel through the same
    pixels), or the outsides overlap in the middle (0). The corner deepest inside one line
    tells the last two apart: it lies inside the other too only when one outside holds the
    other."""
    det = l1[1] * l2[2] - l1[2] * l2[1]
    half = 0.5 * wp.abs(det)
    if wp.abs(l2[0] * l1[2] - l1[0] * l2[2]) <= half and wp.abs(l1[0] * l2[1] - l2[0] * l1[1]) <= half:
        return c1 * c2
    # The pixel corners deepest outside each line (k) and inside it (j).
    k1x = 0.5 * wp.sign(l1[1])
    k1y = 0.5 * wp.sign(l1[2])
    k2x = 0.5 * wp.sign(l2[1])
    k2y = 0.5 * wp.sign(l2[2])
    if line_value(l2, k1x, k1y) > 0.0 or line_value(l1, k2x, k2y) > 0.0:
        if (line_value(l1, -k2x, -k2y) < 0.0 and line_value(l2, -k2x, -k2y) < 0.0) or (
            line_value(l1, -k1x, -k1y) < 0.0 and line_value(l2, -k1x, -k1y) < 0.0
        ):
            return wp.min(c1, c2)
        return 0.0
    return wp.max(c1 + c2 - 1.0, 0.0)


BOX_LINES = 6
"""Lines `SilhouetteCoverage` stores per cuboid entry: two along each axis (`silhouette_normal`)."""
_BOX_LINES = wp.constant(BOX_LINES)


@wp.func
def silhouette_normal(k: int, o: wp.vec3, e: wp.vec3) -> wp.vec3:
    """Normal (box frame) of the plane through the camera and the box's silhouette edge ``k``
    (0-5: along z for k = 0, 1 (axes a, b = x, y), along y for 2, 3 (x, z), along x for 4, 5
    (y, z); ``k`` % 2 picks one of the pair, `silhouette_edge_sides`), oriented so that the
    box lies on its negative side; 0 where there is no such edge. o: the camera in the box
    frame, e: the half-extents.

    The plane through the camera and the edge along c through p = (s_a e_a, s_b e_b) holds the
    rays r with ((p - o) x c) . r = (p_b - o_b) r_a - (p_a - o_a) r_b = 0. A silhouette edge's
    plane supports the box, which lies on the side of it that the direction to the box's
    centre, -o, takes."""
    on_x = k < 4  # axis a: x, else y
    b_y = k < 2  # axis b: y, else z
    oa = wp.where(on_x, o[0], o[1])
    ea = wp.where(on_x, e[0], e[1])
    ob = wp.where(b_y, o[1], o[2])
    eb = wp.where(b_y, e[1], e[2])
    sides = silhouette_edge_sides(k % 2, oa, ea, ob, eb)
    if sides[0] == 0.0:
        return wp.vec3(0.0)
    s = wp.where(sides[0] * ea * ob - sides[1] * eb * oa > 0.0, -1.0, 1.0)
    na = s * (sides[1] * eb - ob)
    nb = -s * (sides[0] * ea - oa)
    return wp.vec3(wp.where(on_x, na, 0.0), wp.where(on_x, wp.where(b_y, nb, 0.0), na), wp.where(b_y, 0.0, nb))


@wp.func
def store_box_lines(
    mode: RampCoverage, j: int, r0: wp.vec4, r1: wp.vec4, axes: vec5, focal: float, cx: float, cy: float
):  # fmt: skip
    """`RampCoverage`: no lines."""
    pass


# Overloads: Warp picks a function by its argument types (here `mode`).
@wp.func
def store_box_lines(  # noqa: F811
    mode: ExactCoverage, j: int, r0: wp.vec4, r1: wp.vec4, axes: vec5, focal: float, cx: float, cy: float
):  # fmt: skip
    """`ExactCoverage`: no lines (its two come from the ray's face, `silhouette_coverage`)."""
    pass


@wp.func
def store_box_lines(  # noqa: F811
    mode: SilhouetteCoverage, j: int, r0: wp.vec4, r1: wp.vec4, axes: vec5, focal: float, cx: float, cy: float
):  # fmt: skip
    """`SilhouetteCoverage`: the `BOX_LINES` silhouette planes (`silhouette_normal`) of the
    cuboid entry whose record is r0, r1 (camera and half-extents in the box frame) and whose
    image axes are ``axes`` (`box_image_axes`), as screen lines, into vec4 BOX_LINES j at
    ``mode.lines``; focal, cx, cy: the view's intrinsics (px).

    A normal n gives the unnormalised ray r of image point (u, w) (px; pixel centres at
    integers, `view_rays`), r = focal f + (u + 1/2 - cx) x + (w + 1/2 - cy) y (f the camera's
    forward axis, x, y the image's across and down axes), the line L = n . r, affine in (u, w).
    n is scaled so that the larger of its changes per pixel |n . x|, |n . y| is 1, and the
    line is stored as its value at the sample grid's origin, its changes per grid step across
    and down (in grid steps: a supersampled grid of s x s points per pixel scales L by s), and
    the pixel's reach across it, (1 + b) / 2 with b the smaller change's magnitude
    (`half_plane_area`): the raster then takes a line's value at a pixel with two multiply-adds
    of the pixel's grid coordinates, and needs nothing else for its area
    (`stored_lines_coverage`). A missing edge gets a line far inside every pixel."""
    o = wp.vec3(r0[0], r0[1], r0[2])
    e = wp.vec3(r1[0], r1[1], r1[2])
    x = wp.vec3(axes[0], axes[1], 0.0)
    y = wp.vec3(axes[2], axes[3], axes[4])
    f = wp.cross(x, y)
    s = float(mode.supersample)
    for k in range(_BOX_LINES):
        n = silhouette_normal(k, o, e)
        gu = wp.dot(n, x)
        gv = wp.dot(n, y)
        big = wp.max(wp.abs(gu), wp.abs(gv))
        line = wp.vec4(-1.0e6, 0.0, 0.0, 0.0)
        if big > 0.0:
            inv = 1.0 / big
            gu *= inv
            gv *= inv
            # L at grid point (a, b): s L(u, w) with u = (a + 1/2) / s - 1/2 (`raster_views_ss`)
            value = s * (focal * wp.dot(n, f) * inv - cx * gu - cy * gv) + 0.5 * (gu + gv)
            line = wp.vec4(value, gu, gv, 0.5 + 0.5 * wp.min(wp.abs(gu), wp.abs(gv)))
        store_vec4_at(mode.lines, _BOX_LINES * j + k, line)


@wp.func
def stored_line_at(n: wp.vec4, x: float, y: float) -> wp.vec3:
    """A stored line (`store_box_lines`) at point (x, y) of the sample grid: its value there (in
    grid steps, negative on the box's side) and its changes per step across and down."""
    line = wp.vec3(n[0], n[1], n[2])
    return wp.vec3(line_value(line, x, y), n[1], n[2])


@wp.func_native(f"""
const float* p = reinterpret_cast<const float*>(lines) + 4 * (size_t)base;
int cut = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
for (int k = 0; k < {BOX_LINES}; ++k) {{
    float n0, n1, n2, n3;
    asm volatile("ld.global.nc.v4.f32 {{%0, %1, %2, %3}}, [%4];"
                 : "=f"(n0), "=f"(n1), "=f"(n2), "=f"(n3) : "l"(p + 4 * k));
    const float sd = __fmaf_rn(y, n2, __fmaf_rn(x, n1, n0));
    if (sd >= n3) return -1;
    if (sd > -n3) cut |= 1 << k;
}}
#else
for (int k = 0; k < {BOX_LINES}; ++k) {{
    const float* n = p + 4 * k;
    const float sd = (n[0] + x * n[1]) + y * n[2];
    if (sd >= n[3]) return -1;
    if (sd > -n[3]) cut |= 1 << k;
}}
#endif
return cut;
""")
def lines_across(lines: wp.uint64, base: int, x: float, y: float) -> int:
    """First pass of `stored_lines_coverage`: -1 when the pixel at grid point (x, y) lies
    wholly outside one of the `BOX_LINES` stored lines from vec4 ``base`` at ``lines`` (off the
    box), else a bit per line that cuts it. A line's value is `stored_line_at`'s, written out
    in the same order of multiply-adds (native code cannot call a `wp.func`). Unrolled, with each load volatile so the compiler
    keeps it after the previous line's exit test: hoisted, the six loads held 24 registers
    across the walk and the raster spilled (round 57)."""
    ...


@wp.func
def stored_lines_coverage(lines: wp.uint64, base: int, pixel: int) -> float:
    """Box-filter coverage of the pixel by the box's silhouette, from its stored lines
    (`store_box_lines`, from vec4 ``base`` at ``lines``): exact where at most two of them cut
    the pixel, away from the silhouette's corners (issue 5). ``pixel``: the pixel's point on
    the sample grid (`pack_pixel`).

    A line's value at the pixel is two multiply-adds of the grid coordinates (`stored_line_at`).
    The pixel spans it +- its stored reach (1 + b) / 2 (b: the line's smaller change per step,
    its larger being 1), so a first pass tells per line whether the pixel lies wholly outside
    it (off the box: 0), wholly inside, or across it. A second pass takes the lines across it,
    one or two and three at a corner: one gives its half-plane (`half_plane_area`), two
    `two_lines_coverage` (the two lines loaded again rather than held through the loop:
    registers), more the product.

    No face is needed: the lines are the silhouette's own, so a sliver's far edge, a side seen
    nearly edge-on and a roof seen from just above come out as exact as a face seen head-on
    (round 48). The lines are made once per entry, not per pixel, in the pixels' own
    coordinates (round 53); the first pass is unrolled with its loads kept in order
    (`lines_across`, round 57), the second is a loop (unrolled, the compiler hoisted its loads
    and the raster spilled); and the area of a line across the pixel waits for the
    second pass, where a warp runs it once per line that cuts some lane's pixel instead of
    once per line that any lane is near (rounds 51 and 52)."""
    x = float(pixel & 0xFFFF)
    y = float(pixel >> 16)
    cut = lines_across(lines, base, x, y)
    if cut < 0:
        return 0.0
    cov = float(1.0)
    cuts = int(0)
    k1 = int(0)
    k2 = int(0)
    c1 = float(1.0)
    c2 = float(1.0)
    while cut != 0:
        low = cut & (-cut)
        cut = cut ^ low
        k = wp.bit_count(wp.uint32(low - 1))
        n = load_vec4_at(lines, base + k)
        c = half_plane_area(stored_line_at(n, x, y)[0], 1.0, 2.0 * n[3] - 1.0)
        if c <= 0.0:
            return 0.0
        if c < 1.0:
            cov *= c
            cuts += 1
            if cuts == 1:
                k1 = k
                c1 = c
            if cuts == 2:
                k2 = k
                c2 = c
    if cuts == 2:
        return two_lines_coverage(
            c1, c2, stored_line_at(load_vec4_at(lines, base + k1), x, y),
            stored_line_at(load_vec4_at(lines, base + k2), x, y),
        )  # fmt: skip
    return cov


@wp.func
def box_alpha(  # noqa: F811
    r0: wp.vec4, r1: wp.vec4, rec: wp.array(dtype=EntryRecord), i: int, d: wp.vec3, dx: float, dy: float,
    best: int, best_t: float, cov_sum: float, pixel: int, pix: float, antialias: int, mode: SilhouetteCoverage,
) -> float:  # fmt: skip
    """`SilhouetteCoverage`: the box's coverage is its silhouette's (`stored_lines_coverage`,
    the lines of record ``i``), 1 where a face holds the whole pixel (`_INSIDE`); the ray and
    the best face are not needed."""
    if antialias == 0 or cov_sum >= _INSIDE:
        return wp.min(cov_sum, 1.0)
    return stored_lines_coverage(mode.lines, _BOX_LINES * i, pixel)


@wp.struct
class Fragment:
    """What a list entry leaves on a ray (`record_fragment`): its depth, its colour packed
    (`pack_color`) and its coverage (0: none)."""

    t: float
    color: int
    alpha: float


@wp.func
def packed_fragment(t: float, color: int, alpha: float) -> Fragment:
    """A `Fragment` of the packed colour ``color`` (`pack_color`)."""
    f = Fragment()
    f.t = t
    f.color = color
    f.alpha = alpha
    return f


@wp.func
def fragment(t: float, color: wp.vec3, alpha: float) -> Fragment:
    """A `Fragment` of colour ``color`` (packed here)."""
    return packed_fragment(t, pack_color(color), alpha)


@wp.func
def colour_first(mode: RampCoverage) -> bool:
    """`RampCoverage`: `box_fragment` takes the box's coverage before its colour."""
    return False


# Overloads: Warp picks a function by its argument types (here `mode`).
@wp.func
def colour_first(mode: ExactCoverage) -> bool:  # noqa: F811
    """`ExactCoverage`: the coverage before the colour, so its two edge lines run without the
    faces' weights held (round 29; ptxas, sm_90, `raster_views_wide`: 4,608 bytes of spills
    in shared memory per block this way, 6,656 the other, round 55)."""
    return False


@wp.func
def colour_first(mode: SilhouetteCoverage) -> bool:  # noqa: F811
    """`SilhouetteCoverage`: the colour first, packed, so that the stored lines' walk holds one
    register of it instead of the faces' weights, signs and depth (round 55; ptxas, sm_90,
    `raster_views_wide`: 7,168 -> 4,608 bytes of spills in shared memory per block)."""
    return True


@wp.func
def box_fragment(
    r0: wp.vec4,
    r1: wp.vec4,
    rec: wp.array(dtype=EntryRecord),
    i: int,
    kind: int,
    d: wp.vec3,
    pixel: int,
    face_color: wp.array(dtype=wp.vec3),
    pix: float,
    near: float,
    far: float,
    antialias: int,
    mode: Any,
) -> Fragment:
    """Cuboid: per camera-facing face, its weight from the in-plane distance to the face
    edges (`face_weight`), the faces' colours mixed by those weights, drawn at the box's
    coverage (`box_alpha`); ``mode`` (a `COVERAGE_MODES` struct) picks both.

    Each face's (t, coverage) comes first and the colours after: a loop over the axes that
    loaded and accumulated each face's colour as it went held ~26 more registers across the
    raster's walk, which spilled at its register cap (docs/renderer.md, round 19)."""
    ca = r0[3]
    sa = r1[3]
    dx = ca * d[0] + sa * d[1]
    dy = -sa * d[0] + ca * d[1]
    fx = face_weight(r0[0], dx, r1[0], r0[1], dy, r1[1], r0[2], d[2], r1[2], pix, near, far, antialias, mode)
    fy = face_weight(r0[1], dy, r1[1], r0[0], dx, r1[0], r0[2], d[2], r1[2], pix, near, far, antialias, mode)
    fz = face_weight(r0[2], d[2], r1[2], r0[0], dx, r1[0], r0[1], dy, r1[1], pix, near, far, antialias, mode)
    cx = fx[1]
    cy = fy[1]
    cz = fz[1]
    cov_sum = cx + cy + cz  # a face that adds 0 leaves the sums' bits as skipping it would
    if cov_sum <= 0.0:
        return Fragment()
    # The most-covering face's depth (the first of equals, in axis order).
    best_t = fx[0]
    best_cov = cx
    best = int(0)
    if cy > best_cov:
        best_t = fy[0]
        best_cov = cy
        best = 1
    if cz > best_cov:
        best_t = fz[0]
        best = 2
    # The coverage before or after the colour, whichever holds fewer registers across it
    # (`colour_first`): a compile-time constant per mode, so only one call remains.
    alpha = float(0.0)
    if not colour_first(mode):
        alpha = box_alpha(r0, r1, rec, i, d, dx, dy, best, best_t, cov_sum, pixel, pix, antialias, mode)
    base = kind * 6
    col = wp.vec3(0.0)
    if cx > 0.0:
        col += cx * load_vec3(face_color, base + wp.where(r0[0] < 0.0, 1, 0))
    if cy > 0.0:
        col += cy * load_vec3(face_color, base + 2 + wp.where(r0[1] < 0.0, 1, 0))
    if cz > 0.0:
        col += cz * load_vec3(face_color, base + 4 + wp.where(r0[2] < 0.0, 1, 0))
    f = fragment(best_t, col * (depth_shade(best_t) / cov_sum), alpha)
    if colour_first(mode):
        f.alpha = box_alpha(r0, r1, rec, i, d, dx, dy, best, best_t, cov_sum, pixel, pix, antialias, mode)
    return f


@wp.func
def box_filter(x: float, lo: float, hi: float, fp: float) -> float:
    """Fraction of the interval [x - fp / 2, x + fp / 2] inside [lo, hi]."""
    return wp.max(0.0, wp.min(x + 0.5 * fp, hi) - wp.max(x - 0.5 * fp, lo)) / fp


@wp.func
def ground_frame(d: wp.vec3, pix: float) -> wp.vec3:
    """Per-ray terms of `line_fragment`: the ray's unit ground direction (gx, gy) and 1 / S."""
    gx = float(1.0)
    gy = float(0.0)
    hxy = wp.sqrt(d[0] * d[0] + d[1] * d[1])
    if hxy > 1.0e-9:
        inv = 1.0 / hxy
        gx = d[0] * inv
        gy = d[1] * inv
    return wp.vec3(gx, gy, wp.abs(d[2]) + 0.5 * pix)


@wp.func
def line_fragment(
    r0: wp.vec4, r1: wp.vec4, d: wp.vec3, g: wp.vec3, pix: float, near: float, far: float, antialias: int
) -> wp.vec2:
    """Ground line (t, coverage): the painted strip box-filtered over the pixel's ground footprint.

    ``g`` = `ground_frame` (d, pix), computed once per ray by the caller.
    """
    if d[2] > -1.0e-6:
        return wp.vec2(0.0)
    ux = r0[2]
    uy = r0[3]
    if antialias != 0:
        # Early reject without a division or square root (nearly every line test misses): the
        # across-line test below multiplied through by |d_z| (t = h / d_z) and 1 / S. It rejects
        # only when |s_n| - hw exceeds half the footprint by ~1.5 % plus a rounding slack
        # (r1[3] - hw, 4e-6 * t: many ulps of every term), so the exact test would give
        # cov_n = 0 too and the bytes are unchanged (alpha 0 either way).
        h = r1[1]
        adz = wp.abs(d[2])
        n_dz = h * (uy * d[0] - ux * d[1]) - (uy * r0[0] - ux * r0[1]) * d[2]  # = d_z * s_n
        lead = wp.abs(n_dz) - r1[3] * adz - _REJECT_SLACK * wp.abs(h)
        if lead > 0.0:
            g_n = wp.abs(-uy * g[0] + ux * g[1])
            hp = h * pix
            q = g_n * g_n + wp.max(1.0 - g_n * g_n, 0.0) * (g[2] * g[2])
            if 4.0 * lead * lead * (g[2] * g[2]) > _REJECT_MARGIN * hp * hp * q:
                return wp.vec2(0.0)
    t = r1[1] / d[2]
    if t < near or t > far:
        return wp.vec2(0.0)
    seg_len = r1[0]
    hw = r1[2]
    rx = t * d[0] - r0[0]
    ry = t * d[1] - r0[1]
    s_u = rx * ux + ry * uy  # along the segment, from its first end
    s_n = uy * rx - ux * ry  # across it
    cov = float(0.0)
    if antialias == 0:
        along = wp.clamp(s_u, 0.0, seg_len)
        if (s_u - along) * (s_u - along) + s_n * s_n <= hw * hw:
            cov = 1.0
    else:
        # The pixel's ground footprint is t * pix wide across the ray and t * pix * S long along
        # the ray's ground direction g, S = 1 / (|d_z| + pix / 2) (the near half-pixel: the far
        # half runs off to the horizon and would smear lines over the whole horizon band).
        # Across the line: a 1-D box filter of the strip [-hw, hw] over the footprint's width
        # in that direction. Along it: ground offsets scaled to footprint units (about pixels),
        # a unit box filter of the segment measured along the scaled line direction, so a
        # segment's coverage ends within about half a pixel of its projected end on screen and
        # consecutive segments of a polyline share their coverage at the joint.
        gx = g[0]
        gy = g[1]
        inv_g = g[2]  # 1 / S
        g_n = wp.abs(-uy * gx + ux * gy)
        fp_n = t * pix * wp.sqrt((g_n * g_n) / (inv_g * inv_g) + wp.max(1.0 - g_n * g_n, 0.0))
        cov_n = box_filter(s_n, -hw, hw, fp_n)
        if cov_n <= 0.0:
            # Outside the strip (nearly every line test): the product below would be 0 exactly.
            return wp.vec2(t, 0.0)
        # Scaled (footprint-unit) components along g and across it, times t * pix.
        u_g = (ux * gx + uy * gy) * inv_g
        u_p = -ux * gy + uy * gx
        r_g = (rx * gx + ry * gy) * inv_g
        r_p = -rx * gy + ry * gx
        su_len = wp.sqrt(u_g * u_g + u_p * u_p)
        tp = t * pix
        inv_tp = 1.0 / tp
        s_su = (r_g * u_g + r_p * u_p) / su_len * inv_tp
        cov = cov_n * box_filter(s_su, 0.0, seg_len * su_len * inv_tp, 1.0)
    return wp.vec2(t, wp.min(cov, 1.0))


@wp.func
def wall_fragment(r0: wp.vec4, r1: wp.vec4, d: wp.vec3, pix: float, near: float, far: float, antialias: int) -> wp.vec3:
    """Vertical quad: (t, coverage, shade factor)."""
    ux = r0[3]
    uy = r1[0]
    seg_len = r1[1]
    if seg_len <= 0.0:
        return wp.vec3(0.0)
    dn = -uy * d[0] + ux * d[1]
    if wp.abs(dn) < 1.0e-9:
        return wp.vec3(0.0)
    t = (-uy * r0[0] + ux * r0[1]) / dn
    if t < near or t > far:
        return wp.vec3(0.0)
    along = (t * d[0] - r0[0]) * ux + (t * d[1] - r0[1]) * uy
    zb = r0[2] + r1[2] * (along / seg_len)
    pz = t * d[2]
    sd = wp.max(wp.max(-along, along - seg_len), wp.max(zb - pz, pz - (zb + r1[3])))
    return wp.vec3(t, coverage(sd, t * pix, antialias), depth_shade(t) * (0.75 + 0.25 * wp.abs(dn)))


@wp.func
def light_fragment(r0: wp.vec4, r1: wp.vec4, d: wp.vec3, pix: float, near: float, far: float, antialias: int) -> wp.vec2:
    """Disk facing its heading, faded by its angular visibility from the camera: (t, coverage)."""
    vis = r1[1]
    if vis <= 0.0:
        return wp.vec2(0.0)
    dn = r0[3] * d[0] + r1[0] * d[1]
    if wp.abs(dn) < 1.0e-9:
        return wp.vec2(0.0)
    t = (r0[3] * r0[0] + r1[0] * r0[1]) / dn
    if t < near or t > far:
        return wp.vec2(0.0)
    sd = wp.length(t * d - wp.vec3(r0[0], r0[1], r0[2])) - _LIGHT_RADIUS
    return wp.vec2(t, coverage(sd, t * pix, antialias) * vis)


@wp.func
def record_fragment(
    r0: wp.vec4,
    r1: wp.vec4,
    r2: wp.vec4,
    rec: wp.array(dtype=EntryRecord),
    i: int,
    kind: int,
    d: wp.vec3,
    pixel: int,
    g: wp.vec3,
    face_color: wp.array(dtype=wp.vec3),
    wall_color: wp.vec3,
    pix: float,
    near: float,
    far: float,
    antialias: int,
    mode: Any,
) -> Fragment:
    """The `Fragment` record ``i`` of ``rec`` (its words r0, r1, r2, loaded by the caller) of
    REF_* ``kind`` leaves on the ray (alpha 0 = none), its colour packed here rather than by
    `trace_ray` (a box may then pack it before its coverage: `colour_first`); ``g`` =
    `ground_frame` (d, pix), computed once per ray by the caller; ``mode`` (a `COVERAGE_MODES`
    struct) picks the cuboids'."""
    if kind == _REF_AGENT:
        return box_fragment(r0, r1, rec, i, int(r2[0]), d, pixel, face_color, pix, near, far, antialias, mode)
    if kind == _REF_WALL:
        fw = wall_fragment(r0, r1, d, pix, near, far, antialias)
        if fw[1] <= 0.0:
            return Fragment()
        return fragment(fw[0], wall_color * fw[2], fw[1])
    f = wp.vec2(0.0)
    if kind == _REF_LINE:
        f = line_fragment(r0, r1, d, g, pix, near, far, antialias)
    else:
        f = light_fragment(r0, r1, d, pix, near, far, antialias)
    if f[1] <= 0.0:
        return Fragment()
    return packed_fragment(f[0], wp.cast(r2[0], wp.int32), f[1])


@wp.func
def entry_fragment(
    rec: wp.array(dtype=EntryRecord),
    i: int,
    d: wp.vec3,
    g: wp.vec3,
    face_color: wp.array(dtype=wp.vec3),
    wall_color: wp.vec3,
    pix: float,
    near: float,
    far: float,
    antialias: int,
) -> Fragment:
    """The fragment record ``i`` of the flattened lists ``rec`` leaves on the ray (alpha 0 =
    none; cuboids by `RampCoverage`); ``g`` = `ground_frame` (d, pix), computed once per ray by
    the caller."""
    e = rec[i]
    return record_fragment(
        e.r0, e.r1, e.r2, rec, i, int(e.r2[3]), d, 0, g, face_color, wall_color, pix, near, far, antialias,
        RampCoverage(),
    )


COLOR_BITS = 10
"""Bits per channel of a fragment colour while it waits in `trace_ray`'s buffer (three channels
in one int32): 4x finer than the 8-bit output, so a colour moves the composite by at most
1 / 2046 (1/8 of an output level) before the final rounding."""
_COLOR_LEVELS = wp.constant(float((1 << COLOR_BITS) - 1))
_COLOR_MASK = wp.constant((1 << COLOR_BITS) - 1)
_COLOR_BITS = wp.constant(COLOR_BITS)


@wp.func
def pack_color(c: wp.vec3) -> int:
    """Colour (channels in [0, 1]) -> one int: COLOR_BITS per channel, red lowest."""
    r = int(wp.clamp(c[0], 0.0, 1.0) * _COLOR_LEVELS + 0.5)
    gr = int(wp.clamp(c[1], 0.0, 1.0) * _COLOR_LEVELS + 0.5)
    b = int(wp.clamp(c[2], 0.0, 1.0) * _COLOR_LEVELS + 0.5)
    return r | (gr << _COLOR_BITS) | (b << (2 * _COLOR_BITS))


@wp.func
def packed_color_word(c: wp.vec3) -> float:
    """`pack_color` (c) as a record word (its bits as a float32, `wp.cast`): a line's or a
    light's colour is packed once per entry by `entry_setup`, not per fragment (round 59)."""
    return wp.cast(pack_color(c), wp.float32)


@wp.func
def unpack_color(p: int) -> wp.vec3:
    """`pack_color` inverse (to the nearest level)."""
    inv = 1.0 / _COLOR_LEVELS
    return wp.vec3(
        float(p & _COLOR_MASK) * inv, float((p >> _COLOR_BITS) & _COLOR_MASK) * inv,
        float((p >> (2 * _COLOR_BITS)) & _COLOR_MASK) * inv,
    )  # fmt: skip


@wp.func
def trace_ray(
    d: wp.vec3,
    pixel: int,
    rec: wp.array(dtype=EntryRecord),
    rec_base: int,
    tile_mask: wp.array(dtype=wp.uint32),
    mask_base: int,
    words: int,
    face_color: wp.array(dtype=wp.vec3),
    misc_color: wp.array(dtype=wp.vec3),
    on_ground: int,
    pix: float,
    near: float,
    far: float,
    antialias: int,
    mode: Any,
) -> wp.vec3:
    """Colour seen along the unit ray d from the camera centre: front-to-back composite over the
    ground (``on_ground`` = 1) or the sky. ``pixel`` = `pack_pixel` of the ray's point on the
    view's sample grid (`SilhouetteCoverage`'s lines are affine in it).

    ``rec`` and ``tile_mask`` are the launch's lists and tile masks flattened (`raster_views`):
    the view's list starts at ``rec_base``, and the ray's band's ``words`` mask words at
    ``mask_base``.
    The walk visits the band's entries nearest bound first; each entry costs four vector loads
    (`record_word`: its record and bound, at one address for the whole warp) and its fragment
    (`record_fragment`). Fragments go into a `_FRAGS`-slot buffer sorted by depth (stable) of
    (t, alpha, packed colour) that lives in registers: every slot is indexed by a constant, an
    insertion is a fixed sequence of selects. When the buffer is full, the fragment pushed
    past the last slot is composited behind that slot (the over operator), so no fragment is
    lost: exact while the fragments arrive in depth order, as the entries' bounds mostly put
    them. The colour is packed (`pack_color`) so a slot costs 3 registers; keeping the entry
    index instead and recomputing the colour after the walk cost a second fragment evaluation
    per kept fragment (a quarter of the raster's instructions at 96x54, docs/renderer.md
    round 10). The kept fragments are then composited front to back.
    """
    g = ground_frame(d, pix)
    inv_fade = 1.0 / (_FAR_FADE * far)
    ft = wp.vec2(0.0)
    fa = wp.vec2(0.0)
    fc = wp.vec2i(0)
    nf = int(0)
    t_opaque = float(1.0e30)
    done = int(0)
    for wd in range(words):
        bits = load_u32(tile_mask, mask_base + wd)
        if done == 1:
            break
        while bits != wp.uint32(0):
            low = bits & (~bits + wp.uint32(1))
            bits = bits ^ low
            k = wd * 32 + wp.bit_count(low - wp.uint32(1))
            i = rec_base + k
            r0 = record_word(rec, i, 0)
            r1 = record_word(rec, i, 1)
            r2 = record_word(rec, i, 2)
            if record_word(rec, i, 3)[0] >= t_opaque:  # the entry's bound
                done = 1
                break
            f = record_fragment(
                r0, r1, r2, rec, i, int(r2[3]), d, pixel, g, face_color, load_vec3(misc_color, 2), pix, near, far,
                antialias, mode,
            )  # fmt: skip
            if f.alpha <= 0.0:
                continue  # no coverage: the faded alpha below would be <= 0 too
            t = f.t
            # Fade out over the last 15% before `far` so geometry does not pop at the clip distance.
            fad = f.alpha * wp.clamp((far - t) * inv_fade, 0.0, 1.0)
            if fad <= 0.0 or t >= t_opaque:
                continue
            # Stable insert: j = the number of kept fragments at or before t (2: behind both).
            j = int(0)
            if nf > 0 and ft[0] <= t:
                j = 1
                if nf > 1 and ft[1] <= t:
                    j = 2
            c = f.color
            # With the buffer full, the fragment that the insert pushes past the last slot (the
            # new one when j = 2, else the old last) is composited behind the new last slot.
            past_a = wp.where(j == 2, fad, fa[1])
            past_c = wp.where(j == 2, c, fc[1])
            ft[1] = wp.where(j < 1, ft[0], wp.where(j == 1, t, ft[1]))
            fa[1] = wp.where(j < 1, fa[0], wp.where(j == 1, fad, fa[1]))
            fc[1] = wp.where(j < 1, fc[0], wp.where(j == 1, c, fc[1]))
            ft[0] = wp.where(j == 0, t, ft[0])
            fa[0] = wp.where(j == 0, fad, fa[0])
            fc[0] = wp.where(j == 0, c, fc[0])
            if nf == _FRAGS:
                # over: alpha a + (1 - a) a', colour (a c + (1 - a) a' c') / that alpha
                a1 = fa[1]
                w = (1.0 - a1) * past_a
                fa[1] = a1 + w
                fc[1] = pack_color((a1 * unpack_color(fc[1]) + w * unpack_color(past_c)) / fa[1])
            nf = wp.min(nf + 1, _FRAGS)
            if fad >= _OPAQUE:
                t_opaque = wp.min(t_opaque, t)
    acc = wp.vec3(0.0)
    alpha = float(0.0)
    for _i in range(nf):
        # Front slot out, the rest shift up (constant slot indices keep the buffer in registers).
        c = fc[0]
        a = fa[0]
        fc[0] = fc[1]
        fa[0] = fa[1]
        w = (1.0 - alpha) * a
        acc += w * unpack_color(c)
        alpha += w
    return acc + (1.0 - alpha) * load_vec3(misc_color, on_ground)


def division_magic(divisor: int) -> tuple[int, int]:
    """(m, k) with w // divisor == (w * m) >> k for every 0 <= w < 2^26 (`band_group`'s warps:
    a launch holds < 2^31 threads): m = ceil(2^k / divisor), k = 26 + ceil(log2 divisor), so
    m <= 2^27 fits an int32 and w * m < 2^54 an int64. Exact because m * divisor - 2^k lies in
    [0, divisor), which moves w / divisor up by less than 2^-ceil(log2 divisor) <= 1 / divisor:
    never onto the next integer (the round-up method of Granlund and Montgomery)."""
    if divisor < 1:
        raise ValueError(f"divisor must be >= 1, got {divisor}")
    k = 26 + (divisor - 1).bit_length()
    return -(-(1 << k) // divisor), k


@wp.func
def band_group(tid: int, groups_view: int, group_magic: int, group_shift: int) -> wp.vec3i:
    """(view of the launch, band group, lane) of raster thread ``tid``.

    A warp is one (view, group of bands: `raster_group`) and each thread walks its pixel of
    every band of the group in turn, so Warp's launch preamble and this decode are paid once
    per group instead of once per band (together ~105 of ~580 warp instructions per band at
    192x108, docs/renderer.md round 12). The view is the quotient by the runtime group count,
    taken as a 64-bit product and a shift (`division_magic`): an integer division by a runtime
    value is ~30 instructions, this 2-3, and the raster recomputes the view in its walk rather
    than hold it in a register.
    """
    w = tid >> 5
    view = int((wp.int64(w) * wp.int64(group_magic)) >> wp.int64(group_shift))
    return wp.vec3i(view, w - view * groups_view, tid & 31)


@wp.func
def band_pixel(band: int, lane: int, tiles_x: int, inv_tiles_x: float) -> wp.vec2i:
    """Pixel (px, py) of ``lane`` in ``band`` (mask row 2 t + h: half h of tile t): lanes go row
    by row over the band's TILE x BAND pixels, so a warp walks one band list (row order, a warp
    per 32 pixels of an image row, was measured slower: 241 K vs 306 K agent-steps/s at 96x54,
    docs/renderer.md). The tile row is a quotient by the runtime ``tiles_x`` through
    its float32 reciprocal, exact for the < 2^18 tiles of a view (see `band_group`)."""
    t = band >> 1
    ty = int((float(t) + 0.5) * inv_tiles_x)
    px = ((t - ty * tiles_x) << _TILE_SHIFT) + (lane & (_TILE - 1))
    py = (ty << _TILE_SHIFT) + (band & 1) * _BAND + (lane >> _TILE_SHIFT)
    return wp.vec2i(px, py)


@wp.struct
class RasterGroup:
    """What a raster thread needs of its band group (`raster_group`)."""

    view: int  # the view within the launch
    lane: int  # the thread's pixel in each band (`band_pixel`)
    first: int  # the group's bands: first, first + step, ... below end
    step: int
    end: int
    tiles_x: int
    words: int  # mask words per band
    rec_base: int  # the view's first record in the launch's flattened lists
    mask_row: int  # the view's first mask word in the launch's flattened masks


@wp.func
def raster_group(
    tid: int, groups_view: int, group_magic: int, group_shift: int, width: int, height: int, capacity: int,
) -> RasterGroup:
    """Raster thread ``tid``'s view, lane and bands (`band_group`) with its row offsets into the
    launch's flattened lists and masks, for a width x height view and list ``capacity``."""
    g = band_group(tid, groups_view, group_magic, group_shift)
    r = RasterGroup()
    r.view = g[0]
    r.lane = g[2]
    # shifts, not `/`: the walk recomputes these offsets rather than hold them in registers
    r.tiles_x = (width + _TILE - 1) >> _TILE_SHIFT
    bands = 2 * r.tiles_x * ((height + _TILE - 1) >> _TILE_SHIFT)
    # Group j takes every groups_view-th band from band j, so each group spans the whole image
    # (sky, road, horizon rows alike) and the warps of a block finish together; contiguous
    # groups differed by the work of their rows, and a block's finished warps held their
    # slots until its last one ended (achieved occupancy 43 % of 62.5 % at 96x54).
    r.first = g[1]
    r.step = groups_view
    r.end = bands
    r.words = mask_words(capacity)
    r.rec_base = g[0] * capacity
    r.mask_row = g[0] * bands * r.words
    return r


def raster_launch(width: int, height: int, bands_per_thread: int) -> tuple[int, int, int, int, float]:
    """Raster launch shape for a width x height view: (threads per view, band groups per view,
    the groups' `division_magic` pair (`band_group`), 1 / tiles per row (`band_pixel`))."""
    tiles_x = -(-width // TILE_PX)
    bands = 2 * tiles_x * -(-height // TILE_PX)
    groups = -(-bands // bands_per_thread)
    return 32 * groups, groups, *division_magic(groups), 1.0 / tiles_x


@wp.func
def unit(v: wp.vec3) -> wp.vec3:
    """v / |v| with one reciprocal instead of three divisions (approximate under the module's fast math)."""
    return v * (1.0 / wp.length(v))


@wp.func
def mask_words(capacity: int) -> int:
    """uint32 words of one band's mask: a bit per list entry."""
    return (capacity + 31) >> 5


@wp.func
def band_bits(tile_mask: wp.array(dtype=wp.uint32), mask_base: int, words: int) -> wp.uint32:
    """The OR of the ``words`` mask words of one band, from ``mask_base`` (0: no entry)."""
    bits = wp.uint32(0)
    for wd in range(words):
        bits = bits | load_u32(tile_mask, mask_base + wd)
    return bits


@wp.func_native("""
#if defined(__CUDA_ARCH__)
return __ballot_sync(0xffffffffu, lane_bits != 0u);
#else
const unsigned int* m = reinterpret_cast<const unsigned int*>(tile_mask.data);
unsigned int occupied = 0u;
for (int b = first, bit = 0; b < end; b += step, ++bit) {
    unsigned int bits = 0u;
    for (int w = 0; w < words; ++w) bits |= m[(size_t)mask_row + (size_t)b * words + w];
    if (bits != 0u) occupied |= 1u << bit;
}
return occupied;
#endif
""")
def group_occupancy(
    lane_bits: wp.uint32, tile_mask: wp.array(dtype=wp.uint32), mask_row: int, first: int, step: int, end: int,
    words: int,
) -> wp.uint32:
    """Bit b set when band ``first + b step`` (< ``end``) of the view whose masks start at
    ``mask_row`` has a list entry. On CUDA a warp ballot of each lane's ``lane_bits`` (lane b:
    `band_bits` of band first + b step, 0 past ``end``), which every lane of the warp must reach; the
    CPU, where a warp is not a unit, ORs the group's mask words itself."""
    ...


@wp.func
def color_bytes(color: wp.vec3) -> wp.vec3ub:
    """An output pixel's bytes: each channel clamped to [0, 1] and rounded to 8 bits."""
    rgb = wp.vec3ub(wp.uint8(0))
    for ch in range(3):
        rgb[ch] = wp.uint8(int(wp.floor(wp.clamp(color[ch], 0.0, 1.0) * 255.0 + 0.5)))
    return rgb


@wp.func
def store_pixel(image_out: wp.array2d(dtype=wp.vec3ub), i: int, width: int, py: int, px: int, color: wp.vec3):
    """Write ``color`` to pixel (px, py) of image i; ``image_out`` holds one row of H * W RGB
    pixels per image (one address for the three bytes)."""
    store_rgb(image_out, i, py * width + px, color_bytes(color))


@wp.kernel
def palette_bytes(colors: wp.array(dtype=wp.vec3), bytes_out: wp.array(dtype=wp.vec3ub)):
    """`color_bytes` of each colour, on the device that draws with them: the raster's empty
    bands store the background's bytes from kernel arguments, the same bytes `store_pixel`
    would write (same function, same device)."""
    i = wp.tid()
    bytes_out[i] = color_bytes(colors[i])


@wp.kernel
def view_rays(
    view_origin: wp.array(dtype=wp.vec3),
    view_basis: wp.array(dtype=wp.mat33),
    view_world: wp.array(dtype=wp.int32),
    view_ground: wp.array(dtype=wp.float32),
    focal: float,
    cx: float,
    cy: float,
    view_base: int,
    # output: the ray of pixel (px, py) is r0.xyz + px r1.xyz + py r2.xyz (unnormalised, through
    # the pixel centre); r1.w = the view's horizon row (`row_background`), or `NO_VIEW` for an
    # invalid view (black)
    ray_out: wp.array2d(dtype=wp.vec4),
):
    """Thread per view: the raster's per-view ray frame, so a pixel thread loads 3 words instead
    of the camera origin, basis, world and ground height.

    The rig has no roll, so a ray's height depends on its image row w alone: z(w) = a_z + w
    down_z, with down_z = -cos(pitch) < 0 (|pitch| < 89 deg, `camera.Rig`). The rows past
    w = -a_z / down_z look below the horizontal, at the ground when it lies below the camera
    (else no row does: `_FULL`); clamped at -1, below every row."""
    v = view_base + wp.tid()
    b = view_basis[v]
    a = b[0] * focal + b[1] * (cx - 0.5) + b[2] * (cy - 0.5)
    horizon = _FULL
    if view_ground[v] < view_origin[v][2]:
        horizon = wp.clamp(a[2] / b[2][2], -1.0, _FULL)
    if view_world[v] < 0:
        horizon = _NO_VIEW
    ray_out[v, 0] = wp.vec4(a[0], a[1], a[2], 0.0)
    ray_out[v, 1] = wp.vec4(-b[1][0], -b[1][1], -b[1][2], horizon)
    ray_out[v, 2] = wp.vec4(-b[2][0], -b[2][1], -b[2][2], 0.0)


@wp.func
def pack_pixel(x: int, y: int) -> int:
    """A point (x, y) of a view's sample grid (pixels, or sub-pixels of a supersampled view:
    at most 4 x 4096 each) in one int, so the walk holds one register for it: x in the low
    16 bits."""
    return x | (y << 16)


@wp.func
def pixel_ray(r0: wp.vec4, r1: wp.vec4, r2: wp.vec4, u: float, w: float) -> wp.vec3:
    """Unit ray through image point (u, w) (pixel (px, py)'s centre at u = px, w = py) of the
    view whose `view_rays` frame is (r0, r1, r2)."""
    return unit(wp.vec3(r0[0], r0[1], r0[2]) + u * wp.vec3(r1[0], r1[1], r1[2]) + w * wp.vec3(r2[0], r2[1], r2[2]))


@wp.func
def view_drawn(r1: wp.vec4) -> bool:
    """Whether the view whose `view_rays` frame has middle row ``r1`` is drawn (else black)."""
    return r1[3] > _NO_VIEW


@wp.func
def row_background(r1: wp.vec4, w: float) -> int:
    """1 (misc_color's ground) for image row w (pixel centres at integers) below the horizon
    row of the view whose `view_rays` frame has middle row ``r1``, 0 (sky) above it: a test of
    the row alone, so a band without entries needs no ray (round 58)."""
    return wp.where(w > r1[3], 1, 0)


RASTER_BLOCK_DIM = block_dim("PICTURA_RASTER_BLOCK_DIM", 128)
"""Threads per block of the raster kernels (``PICTURA_RASTER_BLOCK_DIM`` overrides it, for
tuning): 128 beat 256 and 64 on an H200 (the sweep is at `RASTER_MAX_REGISTERS`). Since round
20 (strided band groups), 96x54: 64 ties 128 at cap 48 with 16 bands per thread and loses 4 %
at cap 56 with 32; 32 loses 6 % (cap 48, 16 bands)."""
RASTER_MAX_REGISTERS = register_cap("PICTURA_RASTER_MAX_REGISTERS", 56)
"""Register cap of `raster_views` (``PICTURA_RASTER_MAX_REGISTERS`` overrides it, for tuning).
Resident warps hide the walk's dependent loads; spills cost instructions. Since round 20
(strided band groups, 32 bands per thread), agent-steps/s at 96x54, blocks of 128: cap 48:
1.941 M; 56: 1.959 M; 64: 1.940 M; 72: 1.868 M; uncapped (80): 1.740 M; blocks of 64: cap 56:
1.878 M, 64: 1.867 M. Before, agent-steps/s of a
20,400-ego call on an H200 (2026-12-01, round 10 in docs/renderer.md), 96x54 / 192x108, blocks
of 256 threads: cap 64: 845 K / 355 K; 56: 893 K / 375 K; 48: 923 K / 386 K; 40: 940 K / 375 K;
blocks of 128 (`RASTER_BLOCK_DIM`): cap 56: 946 K / 406 K; 48: 962 K / 399 K;
40: 959 K / 376 K; blocks of 64: cap 56: 926 K / 400 K; 48: 941 K / 394 K. With 16 bands per
thread (round 12): cap 48: 1.048 M / 474 K; 56: 1.033 M / 486 K; 64: 1.011 M / 479 K. Views of
`rasterizer.WIDE_VIEW_PIXELS` or more (every view of the exact coverage mode) use
`raster_views_wide` and its cap instead."""
RASTER_WIDE_MAX_REGISTERS = register_cap("PICTURA_RASTER_WIDE_MAX_REGISTERS", 56)
"""Register cap of `raster_views_wide` (``PICTURA_RASTER_WIDE_MAX_REGISTERS`` overrides it), set
through CUDA launch bounds so that its spills may go to shared memory: with 32 bands per
thread, 192x108 on an H200 (docs/renderer.md round 13): cap 56 511 K agent-steps/s, with
shared-memory spills 520 K (cap 48 with them 501 K); at 96x54 the spills to shared memory
lose 3 %, so smaller views keep `raster_views`. The exact coverage mode spills more and gains
there: at 96x54, cap 56 +2.3 % over `raster_views`, 48 +0.9 %, 40 -1.1 %, 64 -0.7 %, 72 -2.7 %
(round 32), so it draws every view with this kernel."""


def _raster_views(
    # per-view data from view_rays / gather_* / rank_lists / entry_setup:
    # the launch's views flattened (view_ray 3 rows, rec capacity records, tile_mask bands *
    # words mask words each), so a load takes one index (a 2-D index costs two negative-index
    # wraps and two 64-bit products; ~16 instructions per mask word)
    view_ray: wp.array(dtype=wp.vec4),
    rec: wp.array(dtype=EntryRecord),
    tile_mask: wp.array(dtype=wp.uint32),
    capacity: int,
    # palette
    face_color: wp.array(dtype=wp.vec3),
    misc_color: wp.array(dtype=wp.vec3),
    # rig (1 / focal at the output resolution) and options
    width: int,
    height: int,
    pix: float,
    near: float,
    far: float,
    antialias: int,
    mode: Any,  # RampCoverage or ExactCoverage: `RASTER_KERNELS`
    out_offset: int,
    view_base: int,
    # launch shape (`raster_launch`)
    groups_view: int,
    group_magic: int,
    group_shift: int,
    inv_tiles_x: float,
    # `palette_bytes` of misc_color's sky and ground
    sky_rgb: wp.vec3ub,
    ground_rgb: wp.vec3ub,
    # output: one row of height * width RGB pixels per image
    image_out: wp.array2d(dtype=wp.vec3ub),
):
    """Thread per (view, band group, pixel of a band): one ray through the pixel's centre in
    each band of the group (supersample = 1)."""
    g = raster_group(wp.tid(), groups_view, group_magic, group_shift, width, height, capacity)
    image = out_offset + view_base + g.view
    # The group's non-empty bands, one bit each (lane b reads the group's band b; a group holds
    # at most 32 bands): a band's bit replaces loading its mask words to find it empty (~45 % of
    # bands at 96x54), and the walk loads a non-empty band's words once (round 19).
    lane_bits = wp.uint32(0)
    lane_band = g.first + g.lane * g.step
    if lane_band < g.end:
        lane_bits = band_bits(tile_mask, g.mask_row + lane_band * g.words, g.words)
    occupied = group_occupancy(lane_bits, tile_mask, g.mask_row, g.first, g.step, g.end, g.words)
    # A while loop: `range` with a runtime step tests the step's sign on every pass (~15
    # instructions per band, 3 % of the raster's at 96x54, round 58).
    next_band = g.first
    while next_band < g.end:
        band = next_band
        next_band = band + g.step
        band_empty = (occupied & wp.uint32(1)) == wp.uint32(0)
        occupied = occupied >> wp.uint32(1)  # bit 0 is the next band's
        p = band_pixel(band, g.lane, g.tiles_x, inv_tiles_x)
        if p[0] >= width or p[1] >= height:
            continue  # a partial tile's padding
        # The view's ray frame is loaded per band: held across the loop it would take ~10
        # registers, and the walk is register bound (a wider stack frame spills in its loop).
        r1 = load_vec4(view_ray, 3 * g.view + 1)
        if not view_drawn(r1):
            # an invalid request (slot -1, empty slot, bad step; 37 % of the env's acting
            # requests): black, stored as bytes
            store_rgb(image_out, image, p[1] * width + p[0], wp.vec3ub(wp.uint8(0)))
            continue
        if band_empty:
            # ~45 % of bands (96x54, pinned scene): ground or sky, stored as bytes: bit for bit
            # what trace_ray returns for an empty list (0 + 1 * colour), converted; no ray.
            # `row_background` is taken in each branch rather than once before them: held
            # across the branch, it raised the raster's spills (ptxas, sm_90: 4,608 -> 6,144
            # bytes per block for the silhouette mode, round 58).
            rgb = sky_rgb
            if row_background(r1, float(p[1])) == 1:
                rgb = ground_rgb
            store_rgb(image_out, image, p[1] * width + p[0], rgb)
            continue
        r0 = load_vec4(view_ray, 3 * g.view)
        r2 = load_vec4(view_ray, 3 * g.view + 2)
        d = pixel_ray(r0, r1, r2, float(p[0]), float(p[1]))
        color = trace_ray(
            d, pack_pixel(p[0], p[1]), rec, g.rec_base, tile_mask, g.mask_row + band * g.words, g.words, face_color,
            misc_color, row_background(r1, float(p[1])), pix, near, far, antialias, mode,
        )  # fmt: skip
        store_pixel(image_out, image, width, p[1], p[0], color)


raster_views = wp.kernel(_raster_views, name="raster_views", cuda_max_registers=RASTER_MAX_REGISTERS)
"""The raster (`_raster_views`) for views under `rasterizer.WIDE_VIEW_PIXELS` pixels (of the
default coverage mode), capped at `RASTER_MAX_REGISTERS`."""
raster_views_wide = wp.kernel(
    _raster_views,
    name="raster_views_wide",
    launch_bounds=(RASTER_BLOCK_DIM, max(1, 65536 // (RASTER_WIDE_MAX_REGISTERS * RASTER_BLOCK_DIM))),
    enable_cuda_smem_spilling=True,
)
"""The same raster for larger views and for the exact coverage mode: `RASTER_WIDE_MAX_REGISTERS`
per thread (the 64 K registers of an SM over the blocks the launch bounds ask it to hold),
spills in shared memory."""


@wp.kernel
def raster_views_ss(
    view_ray: wp.array(dtype=wp.vec4),
    rec: wp.array(dtype=EntryRecord),
    tile_mask: wp.array(dtype=wp.uint32),
    capacity: int,
    face_color: wp.array(dtype=wp.vec3),
    misc_color: wp.array(dtype=wp.vec3),
    width: int,
    height: int,
    pix: float,
    near: float,
    far: float,
    antialias: int,
    mode: Any,
    out_offset: int,
    view_base: int,
    groups_view: int,
    group_magic: int,
    group_shift: int,
    inv_tiles_x: float,
    supersample: int,
    image_out: wp.array2d(dtype=wp.vec3ub),
):
    """`raster_views` with ``supersample`` x ``supersample`` rays per pixel, averaged (``pix``
    = 1 / (focal * supersample), a sub-ray's footprint)."""
    g = raster_group(wp.tid(), groups_view, group_magic, group_shift, width, height, capacity)
    ss = float(supersample)
    next_band = g.first
    while next_band < g.end:  # as `_raster_views`
        band = next_band
        next_band = band + g.step
        p = band_pixel(band, g.lane, g.tiles_x, inv_tiles_x)
        if p[0] >= width or p[1] >= height:
            continue
        r1 = load_vec4(view_ray, 3 * g.view + 1)
        color = wp.vec3(0.0)
        if view_drawn(r1):
            r0 = load_vec4(view_ray, 3 * g.view)
            r2 = load_vec4(view_ray, 3 * g.view + 2)
            for sy in range(supersample):
                for sx in range(supersample):
                    # sub-pixel centres, relative to the pixel centre that r0 points through
                    u = float(p[0]) + (float(sx) + 0.5) / ss - 0.5
                    w = float(p[1]) + (float(sy) + 0.5) / ss - 0.5
                    d = pixel_ray(r0, r1, r2, u, w)
                    color += trace_ray(
                        d, pack_pixel(p[0] * supersample + sx, p[1] * supersample + sy), rec, g.rec_base, tile_mask,
                        g.mask_row + band * g.words, g.words, face_color, misc_color, row_background(r1, w), pix,
                        near, far, antialias, mode,
                    )  # fmt: skip
            color = color / (ss * ss)
        store_pixel(image_out, out_offset + view_base + g.view, width, p[1], p[0], color)


COVERAGE_MODES = {"ramp": RampCoverage, "exact": ExactCoverage, "silhouette": SilhouetteCoverage}
"""`Renderer(coverage=...)`: how box edges are antialiased (the three structs' docstrings)."""
STORED_LINES = {"ramp": 0, "exact": 0, "silhouette": BOX_LINES}
"""Per coverage mode: the lines it stores per list entry (`store_box_lines`)."""


def coverage_mode(name: str, lines: wp.array | None = None, supersample: int = 1):
    """The `COVERAGE_MODES` struct ``name`` for a launch, holding ``lines`` (`STORED_LINES` per
    list entry of the launch's records, flattened) and the rays per pixel along each axis
    (their units) where the mode stores lines."""
    mode = COVERAGE_MODES[name]()
    if STORED_LINES[name]:
        mode.lines = lines.ptr
        mode.supersample = supersample
    return mode

DEFAULT_COVERAGE = "silhouette"
"""The coverage mode of `Renderer`, the env (``render_coverage``), the debug tool and the
benchmarks unless told otherwise: the one that meets both issue 5's coverage (within 0.02, on
the test poses and on random ones) and its 2 M agent-steps/s at 96x54 (docs/renderer.md,
"Coverage modes")."""
BINNINGS = {"solo": SoloBinning, "warp": WarpBinning}
"""How `entry_setup` bins its entries (the two structs' docstrings)."""
ENTRY_SETUP = {
    (name, binning): wp.overload(entry_setup, {"mode": mode, "binning": binning_type})
    for name, mode in COVERAGE_MODES.items()
    for binning, binning_type in BINNINGS.items()
}
"""Per (coverage mode, binning): its `entry_setup` overload."""
RASTER_KERNELS = {
    name: tuple(wp.overload(k, {"mode": mode}) for k in (raster_views, raster_views_wide, raster_views_ss))
    for name, mode in COVERAGE_MODES.items()
}
"""Per coverage mode: its (`raster_views`, `raster_views_wide`, `raster_views_ss`) overloads."""


@wp.kernel
def raster_ids(
    view_origin: wp.array(dtype=wp.vec3),
    view_basis: wp.array(dtype=wp.mat33),
    view_world: wp.array(dtype=wp.int32),
    list_ref: wp.array2d(dtype=wp.int32),
    list_bound: wp.array2d(dtype=wp.float32),
    list_count: wp.array(dtype=wp.int32),
    rec: wp.array(dtype=EntryRecord),  # flattened, list_ref.shape[1] records per view
    face_color: wp.array(dtype=wp.vec3),
    misc_color: wp.array(dtype=wp.vec3),
    focal: float,
    cx: float,
    cy: float,
    near: float,
    far: float,
    # output: nearest opaque surface at the pixel centre: agent slot, -2 wall, -1 none
    id_out: wp.array3d(dtype=wp.int32),
):
    tid = wp.tid()
    height = id_out.shape[1]
    width = id_out.shape[2]
    v = tid / (width * height)
    rem = tid - v * width * height
    py = rem / width
    px = rem - py * width
    best = int(-1)
    if view_world[v] >= 0:
        basis = view_basis[v]
        d = wp.normalize(
            basis[0] * focal + basis[1] * (cx - (float(px) + 0.5)) + basis[2] * (cy - (float(py) + 0.5))
        )
        g = ground_frame(d, 1.0)
        t_best = float(1.0e30)
        for k in range(list_count[v]):
            if list_bound[v, k] >= t_best:
                break
            ref = list_ref[v, k]
            kind = ref >> _REF_SHIFT
            frag = Fragment()
            ident = int(-1)
            if kind == _REF_AGENT or kind == _REF_WALL:
                frag = entry_fragment(rec, v * list_ref.shape[1] + k, d, g, face_color, misc_color[2], 1.0, near, far, 0)
                ident = -2
                if kind == _REF_AGENT:
                    ident = ref & _REF_MASK
            if frag.alpha > 0.0 and frag.t < t_best:
                t_best = frag.t
                best = ident
    id_out[v, py, px] = best
