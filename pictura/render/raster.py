"""Stage 4, raster: a warp per group of screen bands of one view, a thread per pixel of a band.

`view_rays` writes each view's ray frame; `raster_views` (and `raster_views_wide`, the same
body with its spills in shared memory, and `raster_views_ss`, ``s x s`` rays per pixel) stores
the background at once for an empty band, else traces the pixel's ray through the band's
entries (`trace_ray`). `raster_ids` draws the occlusion query's id buffer.

Per-view-parallel kernels take a ``view_base`` so a chunk can be split into launches of fewer
than 2^31 threads (Warp's limit on one launch).
"""

# Warp needs `x = int(0)` / `float(0.0)` to declare a local it mutates in a loop (a bare
# literal becomes a constant), hence UP018 is off in this file.
# ruff: noqa: UP018

from __future__ import annotations

from typing import Any

import warp as wp

from pictura.render.array_io import (
    load_u32,
    load_vec4,
    store_rgb,
)
from pictura.render.common import (
    _BAND,
    _FULL,
    _NO_VIEW,
    _REF_AGENT,
    _REF_MASK,
    _REF_SHIFT,
    _REF_WALL,
    _TILE,
    _TILE_SHIFT,
    TILE_PX,
    EntryRecord,
)
from pictura.render.data import Palette, RigData, ViewScratch
from pictura.render.fragments import (
    Fragment,
    entry_fragment,
    ground_frame,
    trace_ray,
)
from pictura.render.tuning import MODULE_OPTIONS, TUNING

wp.set_module_options(MODULE_OPTIONS)


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
    192x108). The view is the quotient by the runtime group count,
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
    by row over the band's TILE x BAND pixels, so a warp walks one band list (faster than a
    warp per 32 pixels of an image row). The tile row is a quotient by the runtime ``tiles_x`` through
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
    views: ViewScratch,
    rig: RigData,
    view_base: int,
    # output: the ray of pixel (px, py) is r0.xyz + px r1.xyz + py r2.xyz (unnormalised, through
    # the pixel centre); r1.w = the view's horizon row (`row_background`), or `NO_VIEW` for an
    # invalid view (black)
    ray_out: wp.array2d(dtype=wp.vec4),
):
    """Thread per view: the raster's per-view ray frame, so a pixel thread loads 3 words instead
    of the camera origin, basis, world and ground height.

    The rig has no roll, so a ray's height depends on its image row w alone: z(w) = a_z + w
    down_z, with down_z = -cos(pitch) < 0 (|pitch| < 89 deg, `camera.CameraRig`). The rows past
    w = -a_z / down_z look below the horizontal, at the ground when it lies below the camera
    (else no row does: `_FULL`); clamped at -1, below every row."""
    v = view_base + wp.tid()
    focal = rig.focal
    cx = rig.cx
    cy = rig.cy
    b = views.view_basis[v]
    a = b[0] * focal + b[1] * (cx - 0.5) + b[2] * (cy - 0.5)
    horizon = _FULL
    if views.view_ground[v] < views.view_origin[v][2]:
        horizon = wp.clamp(a[2] / b[2][2], -1.0, _FULL)
    if views.view_world[v] < 0:
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
    the row alone, so a band without entries needs no ray."""
    return wp.where(w > r1[3], 1, 0)


RASTER_BLOCK_DIM = TUNING.raster_block_dim
"""Threads per block of the raster kernels (`RenderTuning.raster_block_dim`)."""


RASTER_MAX_REGISTERS = TUNING.raster_max_registers
"""Register cap of `raster_views` (`RenderTuning.raster_max_registers`): resident warps hide
the walk's dependent loads, spills cost instructions; the default is the fastest cap measured."""


RASTER_WIDE_MAX_REGISTERS = TUNING.raster_wide_max_registers
"""Register cap of `raster_views_wide` (`RenderTuning.raster_wide_max_registers`), set through
CUDA launch bounds so that its spills may go to shared memory: faster for large views and for
the exact and silhouette modes, which spill more; smaller views of the ramp mode keep
`raster_views` (`rasterizer.WIDE_VIEW_PIXELS`)."""


@wp.struct
class RasterParams:
    """What every thread of a raster launch reads besides the coverage mode and the image.

    The launch's views go flattened (``view_ray`` 3 rows per view, ``rec`` ``capacity`` records,
    ``tile_mask`` bands x words mask words), so a load takes one index (a 2-D index costs two
    negative-index wraps and two 64-bit products; ~16 instructions per mask word)."""

    view_ray: wp.array(dtype=wp.vec4)  # `view_rays`
    rec: wp.array(dtype=EntryRecord)  # `entry_setup`
    tile_mask: wp.array(dtype=wp.uint32)  # `binning.bin_entry`
    capacity: int  # list entries per view
    face_color: wp.array(dtype=wp.vec3)
    misc_color: wp.array(dtype=wp.vec3)  # sky, ground, wall
    width: int
    height: int
    pix: float  # 1 / focal at the output resolution (a sub-ray's with supersampling)
    near: float
    far: float
    antialias: int
    out_offset: int  # the chunk's first image
    view_base: int  # the launch's first view in the chunk
    # launch shape (`raster_launch`)
    groups_view: int
    group_magic: int
    group_shift: int
    inv_tiles_x: float
    supersample: int  # rays per pixel along each axis (`raster_views_ss`)
    sky_rgb: wp.vec3ub  # `palette_bytes` of misc_color's sky and ground (`raster_views`' empty bands)
    ground_rgb: wp.vec3ub


def _raster_views(params: RasterParams, mode: Any, image_out: wp.array2d(dtype=wp.vec3ub)):
    """Thread per (view, band group, pixel of a band): one ray through the pixel's centre in
    each band of the group (supersample = 1)."""
    # the struct's fields once, as locals (the arguments they were)
    view_ray = params.view_ray
    rec = params.rec
    tile_mask = params.tile_mask
    capacity = params.capacity
    face_color = params.face_color
    misc_color = params.misc_color
    width = params.width
    height = params.height
    pix = params.pix
    near = params.near
    far = params.far
    antialias = params.antialias
    out_offset = params.out_offset
    view_base = params.view_base
    groups_view = params.groups_view
    group_magic = params.group_magic
    group_shift = params.group_shift
    inv_tiles_x = params.inv_tiles_x
    sky_rgb = params.sky_rgb
    ground_rgb = params.ground_rgb
    g = raster_group(wp.tid(), groups_view, group_magic, group_shift, width, height, capacity)
    image = out_offset + view_base + g.view
    # The group's non-empty bands, one bit each (lane b reads the group's band b; a group holds
    # at most 32 bands): a band's bit replaces loading its mask words to find it empty (~45 % of
    # bands at 96x54), and the walk loads a non-empty band's words once.
    lane_bits = wp.uint32(0)
    lane_band = g.first + g.lane * g.step
    if lane_band < g.end:
        lane_bits = band_bits(tile_mask, g.mask_row + lane_band * g.words, g.words)
    occupied = group_occupancy(lane_bits, tile_mask, g.mask_row, g.first, g.step, g.end, g.words)
    # A while loop: `range` with a runtime step tests the step's sign on every pass (~15
    # instructions per band, 3 % of the raster's at 96x54).
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
            # across the branch, it raises the raster's spills.
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
def raster_views_ss(params: RasterParams, mode: Any, image_out: wp.array2d(dtype=wp.vec3ub)):
    """`raster_views` with ``supersample`` x ``supersample`` rays per pixel, averaged (``pix``
    = 1 / (focal * supersample), a sub-ray's footprint)."""
    g = raster_group(
        wp.tid(), params.groups_view, params.group_magic, params.group_shift, params.width, params.height,
        params.capacity,
    )  # fmt: skip
    s = params.supersample
    ss = float(s)
    next_band = g.first
    while next_band < g.end:  # as `_raster_views`
        band = next_band
        next_band = band + g.step
        p = band_pixel(band, g.lane, g.tiles_x, params.inv_tiles_x)
        if p[0] >= params.width or p[1] >= params.height:
            continue
        r1 = load_vec4(params.view_ray, 3 * g.view + 1)
        color = wp.vec3(0.0)
        if view_drawn(r1):
            r0 = load_vec4(params.view_ray, 3 * g.view)
            r2 = load_vec4(params.view_ray, 3 * g.view + 2)
            for sy in range(s):
                for sx in range(s):
                    # sub-pixel centres, relative to the pixel centre that r0 points through
                    u = float(p[0]) + (float(sx) + 0.5) / ss - 0.5
                    w = float(p[1]) + (float(sy) + 0.5) / ss - 0.5
                    d = pixel_ray(r0, r1, r2, u, w)
                    color += trace_ray(
                        d, pack_pixel(p[0] * s + sx, p[1] * s + sy), params.rec, g.rec_base, params.tile_mask,
                        g.mask_row + band * g.words, g.words, params.face_color, params.misc_color,
                        row_background(r1, w), params.pix, params.near, params.far, params.antialias, mode,
                    )  # fmt: skip
            color = color / (ss * ss)
        store_pixel(image_out, params.out_offset + params.view_base + g.view, params.width, p[1], p[0], color)


@wp.kernel
def raster_ids(
    views: ViewScratch,
    rig: RigData,
    palette: Palette,
    rec: wp.array(dtype=EntryRecord),  # views.rec flattened: the list's capacity records per view
    # output: nearest opaque surface at the pixel centre: agent slot, -2 wall, -1 none
    id_out: wp.array3d(dtype=wp.int32),
):
    """Thread per pixel of the occlusion query's views: the id of the nearest opaque surface at
    the pixel's centre, walking the view's whole list (no bins), without antialiasing."""
    tid = wp.tid()
    height = id_out.shape[1]
    width = id_out.shape[2]
    v = tid / (width * height)
    rem = tid - v * width * height
    py = rem / width
    px = rem - py * width
    best = int(-1)
    if views.view_world[v] >= 0:
        basis = views.view_basis[v]
        d = wp.normalize(
            basis[0] * rig.focal + basis[1] * (rig.cx - (float(px) + 0.5)) + basis[2] * (rig.cy - (float(py) + 0.5))
        )
        g = ground_frame(d, 1.0)
        t_best = float(1.0e30)
        for k in range(views.list_count[v]):
            if views.list_bound[v, k] >= t_best:
                break
            ref = views.list_ref[v, k]
            kind = ref >> _REF_SHIFT
            frag = Fragment()
            ident = int(-1)
            if kind == _REF_AGENT or kind == _REF_WALL:
                frag = entry_fragment(rec, v * views.list_ref.shape[1] + k, d, g, palette.face_color, palette.misc_color[2], 1.0, rig.near, rig.far, 0)
                ident = -2
                if kind == _REF_AGENT:
                    ident = ref & _REF_MASK
            if frag.alpha > 0.0 and frag.t < t_best:
                t_best = frag.t
                best = ident
    id_out[v, py, px] = best
