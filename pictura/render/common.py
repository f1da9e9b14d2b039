"""Constants, structs and small device functions that several render stages share.

The kinds of list entry (``REF_*``), the screen tiling (`TILE_PX`), the coverage-mode structs
(`RampCoverage`, `ExactCoverage`, `SilhouetteCoverage`: a kernel's ``mode`` argument, whose
type picks each mode's overloads at compile time), the per-entry record (`EntryRecord`) and its
vector loads and stores, the colour packing of the raster's fragment buffer, depth shading and
CUDA warp intrinsics (each with a CPU fallback that answers as a warp of one thread).
"""

# Warp needs `x = int(0)` / `float(0.0)` to declare a local it mutates in a loop (a bare
# literal becomes a constant), hence UP018 is off in this file.
# ruff: noqa: UP018

from __future__ import annotations

import math

import warp as wp

from pictura.render.array_io import (
    load_snippet,
    store_snippet,
)
from pictura.render.palette import (
    LIGHT_CUTOFF_DEG,
    LIGHT_FULL_DEG,
    LIGHT_RADIUS_M,
    SHADE_DISTANCE_M,
    SHADE_MIN,
)
from pictura.render.scene import (
    REF_AGENT,
    REF_INDEX_MASK,
    REF_LIGHT,
    REF_LINE,
    REF_SHIFT,
    REF_WALL,
)
from pictura.render.tuning import MODULE_OPTIONS

wp.set_module_options(MODULE_OPTIONS)


vec5 = wp.types.vector(length=5, dtype=wp.float32)
"""A fragment: t (m along the unit ray), r, g, b, alpha."""


vec8 = wp.types.vector(length=8, dtype=wp.float32)


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
Two slots with that merge are both faster and closer to an 8-slot reference than four slots
that drop the fifth fragment (docs/benchmarks.md). Not a knob: `trace_ray`'s buffer (vec2 slots) and its insert are written out for
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
    """Box edges from the in-plane ramp (`Renderer(coverage="ramp")`, the fastest mode): a
    face's coverage ramps over the pixel's
    footprint in its own plane, exact head-on, up to ~0.33 off on faces seen at an angle
    (docs/renderer.md, Known limits). `entry_setup` and the raster kernels are generic in their
    ``mode`` argument; its type picks the overloads of `box_rect_reach`, `box_image_axes`,
    `face_weight` and `box_alpha` at compile time, so each mode's kernels hold only their own
    code (`kernels.ENTRY_SETUP`, `kernels.RASTER_KERNELS`)."""

    unused: int


@wp.struct
class ExactCoverage:
    """Box edges from the silhouette's exact screen lines of the face the ray meets
    (`Renderer(coverage="exact")`): the pixel's box-filter coverage, within ~0.003 of the exact
    polygon area away from corners on the test poses, though 2.5 % of edge pixels on random
    poses are more than 0.02 off, mostly beside faces under 2 px wide, and roofs along the
    horizon are up to 0.94 off (`SilhouetteCoverage`, the default, draws both); a little faster
    than it (docs/renderer.md, "Coverage modes")."""

    unused: int


@wp.struct
class SilhouetteCoverage:
    """Box edges from the box's silhouette edges themselves (`Renderer(coverage="silhouette")`,
    the default): every screen line of an edge between a camera-facing and a hidden face, so
    the pixel's box-filter coverage is the exact area of the silhouette in the pixel, corners
    (where the pixel is clipped by every edge that crosses it), slivers and roofs at the
    horizon included (docs/renderer.md, "Coverage modes"). `entry_setup` writes each cuboid
    entry's `BOX_LINES` lines into ``lines`` (`store_box_lines`), and the raster reads them
    (`stored_lines_coverage`)."""

    lines: wp.uint64  # data of a vec4 array: `BOX_LINES` per list entry, from BOX_LINES * (record index)
    supersample: int  # rays per pixel along each axis: the lines are in units of the sample grid


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


# ---- per-entry setup: camera-relative records and tight screen bins -----------------------


@wp.func
def cam_coords(p: wp.vec3, o: wp.vec3, basis: wp.mat33) -> wp.vec3:
    """World point -> camera coordinates (x forward, y left, z up)."""
    rel = p - o
    return wp.vec3(wp.dot(rel, basis[0]), wp.dot(rel, basis[1]), wp.dot(rel, basis[2]))


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
    which can differ from lane to lane."""
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
    light's colour is packed once per entry by `entry_setup`, not per fragment."""
    return wp.cast(pack_color(c), wp.float32)


@wp.func
def unpack_color(p: int) -> wp.vec3:
    """`pack_color` inverse (to the nearest level)."""
    inv = 1.0 / _COLOR_LEVELS
    return wp.vec3(
        float(p & _COLOR_MASK) * inv, float((p >> _COLOR_BITS) & _COLOR_MASK) * inv,
        float((p >> (2 * _COLOR_BITS)) & _COLOR_MASK) * inv,
    )  # fmt: skip
