"""What one list entry leaves on one pixel ray, and the ray's front-to-back composite.

Each kind (cuboid, ground line, wall, light) turns its `EntryRecord` into a `Fragment` (depth
t along the unit ray, packed colour, coverage); `trace_ray` walks a band's entries nearest
first into a two-slot depth-sorted register buffer and composites it over sky or ground.
"""

# Warp needs `x = int(0)` / `float(0.0)` to declare a local it mutates in a loop (a bare
# literal becomes a constant), hence UP018 is off in this file.
# ruff: noqa: UP018

from __future__ import annotations

from typing import Any

import warp as wp

from pictura.render.array_io import (
    load_u32,
    load_vec3,
)
from pictura.render.common import (
    _FAR_FADE,
    _FRAGS,
    _LIGHT_RADIUS,
    _OPAQUE,
    _REF_AGENT,
    _REF_LINE,
    _REF_WALL,
    _REJECT_MARGIN,
    _REJECT_SLACK,
    EntryRecord,
    RampCoverage,
    coverage,
    depth_shade,
    pack_color,
    record_word,
    unpack_color,
)
from pictura.render.coverage import (
    box_alpha,
    colour_first,
    face_weight,
)
from pictura.render.tuning import MODULE_OPTIONS

wp.set_module_options(MODULE_OPTIONS)


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
def box_depth(t: float, r0: wp.vec4, r1: wp.vec4, dx: float, dy: float, dz: float) -> float:
    """A cuboid fragment's depth: ``t`` clamped to the depths of the box's own corners along the
    unit ray (dx, dy, dz in the box frame; r0, r1 its record: the camera and the half-extents in
    that frame). Every point of the box lies within them, so wherever the ray meets the box, t
    is unchanged. A pixel whose centre ray passes beside the box takes its depth from a face's
    plane; for a face seen nearly edge-on (a side under a pixel wide) the ray meets that plane
    far behind the box, and the box would be sorted, and shaded, behind what it hides."""
    centre = -(r0[0] * dx + r0[1] * dy + r0[2] * dz)
    half = r1[0] * wp.abs(dx) + r1[1] * wp.abs(dy) + r1[2] * wp.abs(dz)
    return wp.clamp(t, centre - half, centre + half)


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
    raster's walk, which would spill at its register cap."""
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
    # taken here, while the record and the ray are at hand: one register across the coverage
    depth = box_depth(best_t, r0, r1, dx, dy, d[2])
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
    f = fragment(depth, col * (depth_shade(depth) / cov_sum), alpha)
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
    per kept fragment (a quarter of the raster's instructions at 96x54). The kept fragments are then composited front to back.
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
