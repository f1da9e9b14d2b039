"""Coverage of a pixel by a cuboid's silhouette, per coverage mode.

`face_weight` gives each camera-facing face's (t, weight), `box_alpha` the box's coverage of
the pixel; both are overloaded on the mode struct (`RampCoverage`, `ExactCoverage`,
`SilhouetteCoverage`), so each mode's kernels compile only their own code. The silhouette mode
stores the box's silhouette edges as screen lines once per entry (`store_box_lines`) and takes
the box-filter area from the lines that cross the pixel (`stored_lines_coverage`).
"""

# Warp needs `x = int(0)` / `float(0.0)` to declare a local it mutates in a loop (a bare
# literal becomes a constant), hence UP018 is off in this file.
# ruff: noqa: UP018

from __future__ import annotations

import warp as wp

from pictura.render.array_io import (
    load_vec4_at,
    store_vec4_at,
)
from pictura.render.common import (
    EntryRecord,
    ExactCoverage,
    RampCoverage,
    SilhouetteCoverage,
    coverage,
    record_word,
    vec5,
)
from pictura.render.tuning import MODULE_OPTIONS

wp.set_module_options(MODULE_OPTIONS)


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
    silhouette's corners.

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
    raster's spills at its register cap."""
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
    in the same order of multiply-adds (native code cannot call a `wp.func`). Unrolled, with
    each load volatile so the compiler keeps it after the previous line's exit test: hoisted,
    the six loads would hold 24 registers across the walk and the raster would spill."""
    ...


@wp.func_native(f"""
const float* p = reinterpret_cast<const float*>(lines) + 4 * (size_t)base;
// The pixel square around its grid point, counter-clockwise in (across, down) offsets, and the
// polygon each clip leaves: a convex polygon gains at most one vertex per line.
float ux[{BOX_LINES + 4}], uy[{BOX_LINES + 4}], vx[{BOX_LINES + 4}], vy[{BOX_LINES + 4}];
ux[0] = -0.5f; uy[0] = -0.5f; ux[1] = 0.5f; uy[1] = -0.5f;
ux[2] = 0.5f; uy[2] = 0.5f; ux[3] = -0.5f; uy[3] = 0.5f;
int n = 4;
for (int k = 0; k < {BOX_LINES}; ++k) {{
    if (((cut >> k) & 1) == 0) continue;
    const float* l = p + 4 * k;
    const float gu = l[1];
    const float gv = l[2];
    const float s = (l[0] + x * gu) + y * gv;
    int m = 0;
    for (int i = 0; i < n; ++i) {{
        const int j = i + 1 == n ? 0 : i + 1;
        const float fi = s + ux[i] * gu + uy[i] * gv;
        const float fj = s + ux[j] * gu + uy[j] * gv;
        if (fi <= 0.0f) {{ vx[m] = ux[i]; vy[m] = uy[i]; ++m; }}
        if ((fi <= 0.0f) != (fj <= 0.0f)) {{
            const float a = fi / (fi - fj);
            vx[m] = ux[i] + a * (ux[j] - ux[i]);
            vy[m] = uy[i] + a * (uy[j] - uy[i]);
            ++m;
        }}
    }}
    if (m < 3) return 0.0f;
    n = m;
    for (int i = 0; i < n; ++i) {{ ux[i] = vx[i]; uy[i] = vy[i]; }}
}}
float twice = 0.0f;
for (int i = 0; i < n; ++i) {{
    const int j = i + 1 == n ? 0 : i + 1;
    twice += ux[i] * uy[j] - ux[j] * uy[i];
}}
const float area = 0.5f * (twice < 0.0f ? -twice : twice);
return area < 1.0f ? area : 1.0f;
""")
def clipped_pixel_area(lines: wp.uint64, base: int, x: float, y: float, cut: int) -> float:
    """Exact area of the pixel at grid point (x, y) inside every stored line whose bit is set in
    ``cut`` (`lines_across`): the pixel square clipped by each line in turn (Sutherland-Hodgman),
    then the shoelace sum. The silhouette is convex, the intersection of its edges' insides, so
    this is its area in the pixel wherever two or more edges cross it: at a corner of any angle,
    or where a sliver's two sides pass through the same pixel. Native code: the polygon lives in
    small local arrays, which only such pixels touch."""
    ...


@wp.func
def stored_lines_coverage(lines: wp.uint64, base: int, pixel: int) -> float:
    """Box-filter coverage of the pixel by the box's silhouette, from its stored lines
    (`store_box_lines`, from vec4 ``base`` at ``lines``): the exact area of the silhouette in
    the pixel. ``pixel``: the pixel's point on the sample grid (`pack_pixel`).

    A line's value at the pixel is two multiply-adds of the grid coordinates (`stored_line_at`).
    The pixel spans it +- its stored reach (1 + b) / 2 (b: the line's smaller change per step,
    its larger being 1), so a first pass tells per line whether the pixel lies wholly outside
    it (off the box: 0), wholly inside, or across it (`lines_across`). One line across the
    pixel gives its half-plane's area (`half_plane_area`); two or more, the pixel square
    clipped by each of them (`clipped_pixel_area`).

    No face is needed: the lines are the silhouette's own, so a sliver's far edge, a side seen
    nearly edge-on and a roof seen from just above come out as exact as a face seen head-on.
    The lines are made once per entry, not per pixel, in the pixels' own coordinates; the
    first pass is unrolled with its loads kept in order (`lines_across`)."""
    x = float(pixel & 0xFFFF)
    y = float(pixel >> 16)
    cut = lines_across(lines, base, x, y)
    if cut <= 0:
        return wp.where(cut == 0, 1.0, 0.0)
    if (cut & (cut - 1)) != 0:
        return clipped_pixel_area(lines, base, x, y, cut)
    n = load_vec4_at(lines, base + wp.bit_count(wp.uint32(cut - 1)))
    return half_plane_area(stored_line_at(n, x, y)[0], 1.0, 2.0 * n[3] - 1.0)


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


@wp.func
def colour_first(mode: RampCoverage) -> bool:
    """`RampCoverage`: `box_fragment` takes the box's coverage before its colour."""
    return False


# Overloads: Warp picks a function by its argument types (here `mode`).
@wp.func
def colour_first(mode: ExactCoverage) -> bool:  # noqa: F811
    """`ExactCoverage`: the coverage before the colour, so its two edge lines run without the
    faces' weights held (`raster_views_wide` spills less this way)."""
    return False


@wp.func
def colour_first(mode: SilhouetteCoverage) -> bool:  # noqa: F811
    """`SilhouetteCoverage`: the colour first, packed, so that the stored lines' walk holds one
    register of it instead of the faces' weights, signs and depth (`raster_views_wide` spills
    less this way)."""
    return True
