"""Stage 3, entry setup: a camera-relative record and screen bins per list entry.

`entry_setup` (a thread per (view, list entry)) writes everything the per-pixel test needs
(`EntryRecord`), the silhouette mode's screen lines (`store_box_lines`), and bins the entry's
clipped, projected outline into the view's tile masks (`bin_entry`).
"""

# Warp needs `x = int(0)` / `float(0.0)` to declare a local it mutates in a loop (a bare
# literal becomes a constant), hence UP018 is off in this file.
# ruff: noqa: UP018

from __future__ import annotations

from typing import Any

import warp as wp

from pictura.render.binning import (
    bin_entry,
    bin_margin,
    entry_margin,
    no_edges,
    rect_add,
    rect_edges,
)
from pictura.render.common import (
    _BOX_REACH_EXTRA,
    _EDGES,
    _FULL,
    _LIGHT_RADIUS,
    _LINE_MARGIN,
    _REF_AGENT,
    _REF_LINE,
    _REF_MASK,
    _REF_SHIFT,
    _REF_WALL,
    _REJECT_SLACK,
    _TILE,
    ExactCoverage,
    RampCoverage,
    SilhouetteCoverage,
    cam_coords,
    light_visibility,
    packed_color_word,
    store_record,
    vec5,
    vec8,
)
from pictura.render.coverage import (
    store_box_lines,
)
from pictura.render.data import Palette, RigData, SceneData, SnapshotData, ViewScratch
from pictura.render.tuning import MODULE_OPTIONS, TUNING
from pictura.sim.snapshot import BoxCol

wp.set_module_options(MODULE_OPTIONS)


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
    ca = wp.cos(agent_box[step, i, BoxCol.HEADING])
    sa = wp.sin(agent_box[step, i, BoxCol.HEADING])
    hl = 0.5 * agent_box[step, i, BoxCol.LENGTH]
    hw = 0.5 * agent_box[step, i, BoxCol.WIDTH]
    xs = vec8(0.0)
    ys = vec8(0.0)
    zs = vec8(0.0)
    rect = wp.vec4(_FULL, _FULL, -_FULL, -_FULL)
    for c in range(8):
        lx = hl * (2.0 * float(c % 2) - 1.0)
        ly = hw * (2.0 * float((c / 2) % 2) - 1.0)
        lz = agent_box[step, i, BoxCol.HEIGHT] * float(c / 4)
        p = wp.vec3(
            agent_box[step, i, BoxCol.X] + ca * lx - sa * ly, agent_box[step, i, BoxCol.Y] + sa * lx + ca * ly,
            agent_box[step, i, BoxCol.Z] + lz,
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
    while the outlines of lines within ``far`` still reach it. A
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
    snap: SnapshotData,
    rig: RigData,
    scene: SceneData,
    palette: Palette,
    clip: float,
    bin: int,
    bin_mode: int,
    shared_tiles: int,  # `bin_entry`
    mode: Any,  # a `COVERAGE_MODES` struct: `kernels.ENTRY_SETUP`
    binning: Any,  # SoloBinning or WarpBinning: `kernels.ENTRY_SETUP`
    view_base: int,
    # reads the views' camera and lists; writes each entry's record (see `trace_ray`) and, with
    # bin = 1, its bits in the tile masks (`bin_entry`; the masks zeroed by the caller)
    views: ViewScratch,
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
    agent_box = snap.agent_box
    focal = rig.focal
    cx = rig.cx
    cy = rig.cy
    width = rig.width
    height = rig.height
    far = rig.far
    cap = views.list_ref.shape[1]
    v = view_base + tid / cap
    k = tid - (tid / cap) * cap
    if k >= views.list_count[v]:
        return  # an exited lane does not hold up `bin_entry`'s warp-wide calls (`WarpBinning`)
    o = views.view_origin[v]
    basis = views.view_basis[v]
    step = views.view_step[v]
    ref = views.list_ref[v, k]
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
    # branches: called in each, a warp holding both kinds would run it twice.
    quad = int(0)
    q0 = wp.vec3(0.0)
    q1 = wp.vec3(0.0)
    q2 = wp.vec3(0.0)
    q3 = wp.vec3(0.0)
    quad_shift = float(0.0)
    quad_first_row = -_FULL
    if kind == _REF_AGENT:
        ca = wp.cos(agent_box[step, i, BoxCol.HEADING])
        sa = wp.sin(agent_box[step, i, BoxCol.HEADING])
        bh = agent_box[step, i, BoxCol.HEIGHT]
        rx = o[0] - agent_box[step, i, BoxCol.X]
        ry = o[1] - agent_box[step, i, BoxCol.Y]
        rz = o[2] - (agent_box[step, i, BoxCol.Z] + 0.5 * bh)
        r0 = wp.vec4(ca * rx + sa * ry, -sa * rx + ca * ry, rz, ca)
        r1 = wp.vec4(0.5 * agent_box[step, i, BoxCol.LENGTH], 0.5 * agent_box[step, i, BoxCol.WIDTH], 0.5 * bh, sa)
        r2 = wp.vec4(float(wp.clamp(int(agent_box[step, i, BoxCol.KIND]), 0, 2)), 0.0, 0.0, float(kind))
        if bin == 1:
            rect = box_rect(agent_box, step, i, o, basis, focal, cx, cy, clip)
            rect = box_rect_reach(rect, mode)
            edges = rect_edges(rect, -_FULL)
    elif kind == _REF_LINE:
        a = scene.line_a[i]
        b = scene.line_b[i]
        ux = b[0] - a[0]
        uy = b[1] - a[1]
        seg_len = wp.sqrt(ux * ux + uy * uy)
        ux = ux / seg_len
        uy = uy / seg_len
        zm = 0.5 * (a[2] + b[2])
        hw = scene.line_half_width[i]
        col = palette.line_color[scene.line_kind[i]]
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
        a = scene.wall_a[i]
        b = scene.wall_b[i]
        ux = b[0] - a[0]
        uy = b[1] - a[1]
        seg_len = wp.sqrt(ux * ux + uy * uy)
        if seg_len >= 1.0e-6:
            ux = ux / seg_len
            uy = uy / seg_len
        else:
            seg_len = 0.0
        h = scene.wall_height[i]
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
        p = scene.light_pos[i]
        hd = scene.light_heading[i]
        state = wp.clamp(snap.light_state[step, scene.world_light_start[views.view_world[v]] + scene.light_local[i]], 0, 3)
        col = palette.light_color[state]
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
    store_record(views.rec, v, k, r0, r1, r2, views.list_bound[v, k], r3)
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
    bin_entry(v, k, tiles, edges, tiles_x, tiles_y, focal, cx, cy, bin_mode, shared_tiles, binning, views.tile_mask)


ENTRY_SETUP_MAX_REGISTERS = TUNING.entry_setup_max_registers
"""Register cap of `entry_setup` (0: none; `RenderTuning.entry_setup_max_registers`)."""


ENTRY_SETUP_BLOCK_DIM = TUNING.entry_setup_block_dim
"""Threads per block of `entry_setup` (`RenderTuning.entry_setup_block_dim`)."""


entry_setup = wp.kernel(_entry_setup, name="entry_setup", cuda_max_registers=ENTRY_SETUP_MAX_REGISTERS or None)
