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


@wp.func_native("""
const float* p = reinterpret_cast<const float*>(lines) + 4 * (size_t)base;
#if defined(__CUDA_ARCH__)
// IEEE round-to-nearest intrinsics: fast math neither fuses nor reorders them, so a vertex's
// coordinates have the same bits wherever they are formed.
#define PCA_MUL(a, b) __fmul_rn((a), (b))
#define PCA_SUB(a, b) __fsub_rn((a), (b))
#define PCA_FMA(a, b, c) __fmaf_rn((a), (b), (c))
#define PCA_LOW(m) (__ffs(m) - 1)
#define PCA_MIN(a, b) fminf((a), (b))
#define PCA_MAX(a, b) fmaxf((a), (b))
#define PCA_LINE(i, gu, gv, s) { \\
    const float4 w4 = __ldg(reinterpret_cast<const float4*>(p) + (i)); \\
    gu = w4.y; gv = w4.z; s = PCA_FMA(y, gv, PCA_FMA(x, gu, w4.x)); }
#else
#define PCA_MUL(a, b) ((a) * (b))
#define PCA_SUB(a, b) ((a) - (b))
#define PCA_FMA(a, b, c) ((a) * (b) + (c))
#define PCA_LOW(m) __builtin_ctz((unsigned int)(m))
#define PCA_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PCA_MAX(a, b) ((a) > (b) ? (a) : (b))
#define PCA_LINE(i, gu, gv, s) { \\
    const float* w4 = p + 4 * (i); gu = w4[1]; gv = w4[2]; s = PCA_FMA(y, gv, PCA_FMA(x, gu, w4[0])); }
#endif
float area;
{
#if defined(__clang__) && !defined(__CUDA_ARCH__)
#pragma clang fp contract(off) reassociate(off)
#endif
// Offsets (u, v) from the pixel's grid point, across and down. A cut line c is f = s + gu u +
// gv v <= 0 inside (s: its value at the grid point); the square's sides are R: u = 1/2,
// L: u = -1/2, B: v = -1/2, T: v = 1/2. Each side's piece inside every cut line is an interval
// of the coordinate it runs along counter-clockwise (R: v, B: u, L: -v, T: -u), at distance 1/2
// from the grid point: it adds a quarter of its length.
float r_lo = -0.5f, r_hi = 0.5f, l_lo = -0.5f, l_hi = 0.5f, b_lo = -0.5f, b_hi = 0.5f, t_lo = -0.5f, t_hi = 0.5f;
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
for (int m = cut; m != 0; m &= m - 1) {
    float gu, gv, s;
    PCA_LINE(PCA_LOW(m), gu, gv, s);
    const float q_r = PCA_FMA(0.5f, gu, s), q_l = PCA_FMA(-0.5f, gu, s);
    if (fabsf(gv) > 1.0e-20f) {
        const float inv = 1.0f / gv;
        const float v_r = -PCA_MUL(q_r, inv), v_l = -PCA_MUL(q_l, inv);  // crossings (1/2, v_r), (-1/2, v_l)
        if (gv > 0.0f) { r_hi = PCA_MIN(r_hi, v_r); l_lo = PCA_MAX(l_lo, -v_l); }
        else { r_lo = PCA_MAX(r_lo, v_r); l_hi = PCA_MIN(l_hi, -v_l); }
    } else {
        // parallel: the side lies inside the line or not
        if (q_r > 0.0f) r_hi = -1.0f;
        if (q_l > 0.0f) l_hi = -1.0f;
    }
    const float q_b = PCA_FMA(-0.5f, gv, s), q_t = PCA_FMA(0.5f, gv, s);
    if (fabsf(gu) > 1.0e-20f) {
        const float inv = 1.0f / gu;
        const float u_b = -PCA_MUL(q_b, inv), u_t = -PCA_MUL(q_t, inv);  // crossings (u_b, -1/2), (u_t, 1/2)
        if (gu > 0.0f) { b_hi = PCA_MIN(b_hi, u_b); t_lo = PCA_MAX(t_lo, -u_t); }
        else { b_lo = PCA_MAX(b_lo, u_b); t_hi = PCA_MIN(t_hi, -u_t); }
    } else {
        if (q_b > 0.0f) b_hi = -1.0f;
        if (q_t > 0.0f) t_hi = -1.0f;
    }
}
area = 0.25f * (PCA_MAX(r_hi - r_lo, 0.0f) + PCA_MAX(l_hi - l_lo, 0.0f) + PCA_MAX(b_hi - b_lo, 0.0f) + PCA_MAX(t_hi - t_lo, 0.0f));
// Each cut line's piece, run with the inside on its left, along d = (-gv, gu): a point X of it
// at tau = d . X = gu X_v - gv X_u; the piece [lo, hi] lies at distance -s / |g| from the grid
// point and adds -s (hi - lo) / (2 |g|^2). Its crossings with the sides are the first pass's,
// to the bit.
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
for (int m = cut; m != 0; m &= m - 1) {
    const int c = PCA_LOW(m);
    float gu, gv, s;
    PCA_LINE(c, gu, gv, s);
    float lo = -1.0e30f, hi = 1.0e30f;
    const float q_r = PCA_FMA(0.5f, gu, s), q_l = PCA_FMA(-0.5f, gu, s);
    if (fabsf(gv) > 1.0e-20f) {
        const float inv = 1.0f / gv;
        const float tau_r = PCA_FMA(gu, -PCA_MUL(q_r, inv), -0.5f * gv);
        const float tau_l = PCA_FMA(gu, -PCA_MUL(q_l, inv), 0.5f * gv);
        if (gv > 0.0f) { lo = tau_r; hi = tau_l; }
        else { lo = tau_l; hi = tau_r; }
    } else if (gu > 0.0f ? (q_r <= 0.0f || q_l > 0.0f) : (q_r > 0.0f || q_l <= 0.0f)) {
        // parallel to R and L: a side and a line with the same inside keep the stricter (the
        // side where they coincide), with opposite insides both or neither
        hi = -1.0e30f;
    }
    const float q_b = PCA_FMA(-0.5f, gv, s), q_t = PCA_FMA(0.5f, gv, s);
    if (fabsf(gu) > 1.0e-20f) {
        const float inv = 1.0f / gu;
        const float tau_b = PCA_FMA(-gv, -PCA_MUL(q_b, inv), -0.5f * gu);
        const float tau_t = PCA_FMA(-gv, -PCA_MUL(q_t, inv), 0.5f * gu);
        if (gu > 0.0f) { lo = PCA_MAX(lo, tau_b); hi = PCA_MIN(hi, tau_t); }
        else { lo = PCA_MAX(lo, tau_t); hi = PCA_MIN(hi, tau_b); }
    } else if (gv > 0.0f ? (q_t <= 0.0f || q_b > 0.0f) : (q_t > 0.0f || q_b <= 0.0f)) {
        hi = -1.0e30f;
    }
    // The other cut lines: each vertex's terms are exactly antisymmetric in the pair (products
    // rounded alone), so both of its lines end their pieces at the same point X.
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
    for (int mj = cut & ~(1 << c); mj != 0; mj &= mj - 1) {
        const int j = PCA_LOW(mj);
        float guj, gvj, sj;
        PCA_LINE(j, guj, gvj, sj);
        const float det = PCA_SUB(PCA_MUL(gu, gvj), PCA_MUL(gv, guj));
        if (fabsf(det) > 1.0e-20f) {
            const float inv = 1.0f / fabsf(det);
            const float nu = PCA_SUB(PCA_MUL(gv, sj), PCA_MUL(gvj, s));
            const float nv = PCA_SUB(PCA_MUL(guj, s), PCA_MUL(gu, sj));
            const float xu = PCA_MUL(det > 0.0f ? nu : -nu, inv);
            const float xv = PCA_MUL(det > 0.0f ? nv : -nv, inv);
            const float tau = gu * xv - gv * xu;
            // f_j grows along d where cross(g, g_j) = det > 0: X ends the piece
            if (det > 0.0f) hi = PCA_MIN(hi, tau); else lo = PCA_MAX(lo, tau);
        } else {
            // parallel: with the same inside the stricter (larger s / |g|) is kept, the lower
            // index where they coincide; with opposite insides both or neither
            const float gc = sqrtf(PCA_FMA(gu, gu, PCA_MUL(gv, gv)));
            const float gj = sqrtf(PCA_FMA(guj, guj, PCA_MUL(gvj, gvj)));
            const float hc = PCA_MUL(s, gj), hj = PCA_MUL(sj, gc);
            const bool keep = PCA_FMA(gu, guj, PCA_MUL(gv, gvj)) > 0.0f ? (hc > hj || (hc == hj && c < j))
                                                                         : hc + hj <= 0.0f;
            if (!keep) hi = -1.0e30f;
        }
    }
    if (hi > lo) area += (-0.5f * s / (gu * gu + gv * gv)) * (hi - lo);
}
}
#undef PCA_MUL
#undef PCA_SUB
#undef PCA_FMA
#undef PCA_LOW
#undef PCA_MIN
#undef PCA_MAX
#undef PCA_LINE
return area < 0.0f ? 0.0f : (area < 1.0f ? area : 1.0f);
""")
def clipped_pixel_area(lines: wp.uint64, base: int, x: float, y: float, cut: int) -> float:
    """Exact area of the pixel at grid point (x, y) inside every stored line whose bit is set in
    ``cut`` (`lines_across`), in registers. The region K (the pixel square inside every such
    line) is convex, and its area is Green's 1/2 of the loop integral of u dv - v du over its
    boundary (u, v: offsets from the grid point). Each side of the square and each cut line
    gives one straight piece of that boundary, the interval of it inside all the others (a 1-D
    clip: one bound per crossing), and a piece at signed distance h from the grid point adds h
    times its length over 2. A first pass clips the four sides, a second each cut line.

    The silhouette is convex, the intersection of its edges' insides, so this is its area in the
    pixel wherever two or more edges cross it: at a corner of any angle, or where a sliver's two
    sides pass through the same pixel. The two pieces that meet at a vertex take it from the same
    bits: a line's crossing with a side is formed alike in both passes, and a crossing of two
    lines from terms exactly antisymmetric in the pair (each product rounded alone, in
    round-to-nearest intrinsics that fast math may neither fuse nor reorder). So the pieces
    close up even where two lines run nearly parallel and their crossing is ill-conditioned.
    Of two exactly parallel pieces with the same inside only the stricter counts (one of two
    coincident ones). The loops run over the cut lines' bits and reload each line (an L1 hit
    after `lines_across`): no arrays, so no local memory, which a polygon clip's dynamically
    indexed vertex lists need."""
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
    pixel gives its half-plane's area (`half_plane_area`); two or more, the area of the pixel
    square inside all of them (`clipped_pixel_area`).

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
