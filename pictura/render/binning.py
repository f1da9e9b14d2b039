"""Screen-tile binning: which bands of ``TILE_PX``-square tiles each list entry may touch.

`entry_setup` ends with `bin_entry`, which sets one bit per (band, entry) in the view's tile
masks by an integer atomic OR (the same words whatever the order of the writes). Margins
(`bin_margin`) keep every pixel centre an entry's coverage can reach inside its bands.
"""

# Warp needs `x = int(0)` / `float(0.0)` to declare a local it mutates in a loop (a bare
# literal becomes a constant), hence UP018 is off in this file.
# ruff: noqa: UP018

from __future__ import annotations

import warp as wp

from pictura.render.common import (
    _BAND,
    _CENTRE_SLACK,
    _EDGES,
    _FULL,
    _LINE_MARGIN,
    _REACH_SCALE,
    _REACH_SLACK,
    _REF_LINE,
    _TILE,
    append_offsets_ballot,
    warp_ballot,
    warp_lane,
    warp_lanes,
    warp_read_float,
    warp_read_int,
)
from pictura.render.tuning import MODULE_OPTIONS, TUNING

wp.set_module_options(MODULE_OPTIONS)


@wp.struct
class SoloBinning:
    """Each list entry bins its own tiles (`bin_entry`): the CPU's binning, and CUDA's for views
    under `rasterizer.WARP_BINNING_VIEW_PIXELS`. `entry_setup` is generic in its ``binning``
    argument, like ``mode`` (`ENTRY_SETUP`)."""

    unused: int


@wp.struct
class WarpBinning:
    """A CUDA warp shares the binning of its larger entries (`bin_entry`); for views of
    `rasterizer.WARP_BINNING_VIEW_PIXELS` or more, where it pays."""

    unused: int


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


SHARED_BIN_TILES = TUNING.shared_bin_tiles
"""With `WarpBinning`, an entry whose tile range holds more tiles than this has them binned by
its whole warp (`bin_entry`; `RenderTuning.shared_bin_tiles`)."""


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
    flat loop of `bin_range_share` makes `entry_setup` slower at 96x54."""
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
    waiting on its largest entry, several times its mean. Every running lane
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
    # this one takes every count-th tile from its rank among them. Dealt out by hardware lane,
    # the returned lanes' shares would be lost.
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
