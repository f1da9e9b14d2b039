"""Vectorized observations (privileged and blind) built from the per-step world snapshot.

`VectorizedObservation` packs the entity sets of the vectorized policy (paper Table 4,
REFERENCE.md "Observation layouts") from four per-step inputs only: the snapshot
``agent_box`` (the same boxes the renderer reads), the world ``light_state``, the
``slot_table`` (which world owns each slot: `pictura.sim.slot_table`; a static layout's own
row when not given) and the signed ``speed`` of every slot. So, like the pixels, the sets can
be rebuilt for any (step, slot) of a stored snapshot history instead of being kept for a whole
rollout.

Per (step, slot) request, in the ego frame (x forward, y left), inside the window 200 m ahead,
60 m behind and 50 m to each side (a thing is in the window when its centre / segment midpoint
is), nearest first (ties broken by id), zero-padded with a bool mask:

    partners      (N, 16, 7)  rel x/200, rel y/200, length/10, width/5, cos, sin of the
                              relative heading, distance/200 (other agents of the world and
                              parked cars)
    partners_aux  (N, 16, 1)  speed/40 (privileged; zeros for the blind variant); masked by
                              ``partners_mask``
    lanes         (N, 80, 6)  midpoint rel x/200, rel y/200, half-length/10, direction cos,
                              sin (ego frame), lane width/5
    boundaries    (N, 80, 6)  same, last column a type flag: road edge 0, wall 1
    traffic       (N, 10, 8)  stop-line endpoints rel (x1, y1, x2, y2)/200, one-hot state of
                              the governing light (red, yellow, green, off; off when none)

``ego_aux`` (N, 2) is not built here: the simulator writes it (``State.obs_ego_aux``); the
privileged variant passes it through and the blind variant zeros it (`ego_aux`).

Map geometry enters as pieces: every lane chunk, road-edge polyline and (chained) wall run is
cut into equal arc-length pieces of at most 10 m (the maps' native chunk size; 5 m for WOMD via
``subdivide_long_segments``), each kept as its chord: one midpoint, half-length and direction.

One Warp thread per (set, request) writes that set. Map pieces are binned by midpoint into a
per-map uniform grid, so a request visits only the cells under its window and every segment at
most once. Partners are kept as a bounded nearest-first insertion list; the segment sets, whose
candidates often outnumber the capacity several times, are selected in two passes (count by
distance bin, then sort only the kept ones within their bin: `gather_segments`). Scratch is laid
out [entry, request] so the threads of a warp touch neighbouring addresses.
"""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0)

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import numpy as np
import torch
import warp as wp
from torchrl.data import Categorical, Composite, Unbounded

from pictura.maps.roadmap import LIGHT_OFF, MAX_LANE_CHUNK_M, RoadMap
from pictura.sim.features import EGO_AUX_WIDTH
from pictura.sim.grid import GRID_MARGIN_M, Grid, bin_segments, clamped_cells
from pictura.sim.slot_table import (
    check_slot_table_shape,
    slot_table_width,
    table_row,
    table_slot_world,
    table_world_count,
    table_world_start,
)
from pictura.sim.snapshot import BOX_ROW_FLOATS, BoxCol, WorldLayout

# No gradients flow through observations.
wp.set_module_options({"enable_backward": False})

# ---- one source of truth for the layouts (kernels, specs and networks read these) -------------
PARTNER_WIDTH = 7
"""partner: rel x/200, rel y/200, length/10, width/5, cos, sin of relative heading, distance/200."""
PARTNER_AUX_WIDTH = 1
"""partner aux: speed/40 (zero in the blind variant)."""
SEGMENT_WIDTH = 6
"""lane / boundary segment: midpoint x/200, y/200, half-length/10, dir cos, dir sin, width/5 or flag."""
TRAFFIC_WIDTH = 8
"""traffic control: stop-line endpoints x1, y1, x2, y2 (/200), one-hot red, yellow, green, off."""
BOUNDARY_ROAD_EDGE, BOUNDARY_WALL = 0.0, 1.0
"""Type flag of a boundary segment."""

WINDOW_AHEAD_M, WINDOW_BEHIND_M, WINDOW_LATERAL_M = 200.0, 60.0, 50.0
"""Observation window in the ego frame: x in [-60, 200] m, |y| <= 50 m."""
POSITION_SCALE_M = 200.0
SPEED_SCALE_MPS = 40.0
LENGTH_SCALE_M = 10.0
WIDTH_SCALE_M = 5.0
OBS_GRID_CELL_M = 16.0
"""Cell of the observation grid (m): the window spans ~17 x 17 cells."""
MIN_SEGMENT_M = 1e-4
"""Polylines shorter than this (m) have no direction and are not packed."""
DISTANCE_BINS = 64
"""Distance bins (over 0 .. the window's farthest corner, ~3.2 m each) of the segment sets'
selection; see `gather_segments`."""
CELL_SLACK_M = 1.0
"""Margin (m) of the conservative cell tests: covers float rounding, never changes a result."""

ENTITY_SETS = ("partners", "lanes", "boundaries", "traffic")
"""Entity sets, each with ``<name>_mask``; ``partners_aux`` shares ``partners_mask``."""
VARIANTS = ("privileged", "blind")

_W_AHEAD = wp.constant(WINDOW_AHEAD_M)
_W_BEHIND = wp.constant(WINDOW_BEHIND_M)
_W_LAT = wp.constant(WINDOW_LATERAL_M)
_POS = wp.constant(POSITION_SCALE_M)
_SPEED = wp.constant(SPEED_SCALE_MPS)
_LEN = wp.constant(LENGTH_SCALE_M)
_WID = wp.constant(WIDTH_SCALE_M)
_LIGHT_OFF = wp.constant(LIGHT_OFF)
_BINS = wp.constant(DISTANCE_BINS)
_BIN_SCALE = wp.constant(DISTANCE_BINS / math.hypot(WINDOW_AHEAD_M, WINDOW_LATERAL_M))
_CELL_SLACK = wp.constant(CELL_SLACK_M)
_FAR = wp.constant(1.0e30)
"""A reach that rules out no cell."""
_NO_ITEM = wp.constant(2**31 - 1)
"""Id of an empty scratch entry (its distance is +inf): sorts after every real entry."""


@dataclasses.dataclass
class VectorizedObservationConfig:
    """Config of the vectorized observation (``DrivingEnv(observation=...)``).

    Args:
        variant: "privileged" (partner speed and ego aux filled, as Gigaflow) or "blind" (the
            paper's Vectorized-dagger: same layout, aux slots zero).
        max_partners, max_lanes, max_boundaries, max_traffic: set capacities (16, 80, 80, 10).
        include_walls: walls travel in the boundary set with type flag 1.
        subdivide_long_segments: span (m) of the lane / boundary pieces; None = the maps' native
            chunk size `MAX_LANE_CHUNK_M` (10 m: one piece per lane chunk, road edges and walls
            cut to the same size); 5.0 for WOMD (paper App. C.2).
    """

    variant: Literal["privileged", "blind"] = "privileged"
    max_partners: int = 16
    max_lanes: int = 80
    max_boundaries: int = 80
    max_traffic: int = 10
    include_walls: bool = True
    subdivide_long_segments: float | None = None

    def build(self, road_maps: list[RoadMap], layout: WorldLayout, device: str) -> VectorizedObservation:
        return VectorizedObservation(road_maps, layout, device, **dataclasses.asdict(self))


# ---- packing (NumPy) ---------------------------------------------------------------------------


def polyline_pieces(points: np.ndarray, offsets: np.ndarray, span: float) -> tuple[np.ndarray, np.ndarray]:
    """Cut CSR polylines into equal arc-length pieces of at most ``span`` (m), each kept as its chord.

    A polyline of arc length ``s`` gives ``ceil(s / span)`` pieces, so finely sampled polylines
    (CARLA edges carry a point every ~1 m) and long single segments (WOMD, procedural edges)
    both come out at the training granularity. Polylines shorter than `MIN_SEGMENT_M` have no
    direction and give no piece. Only x, y are used.

    Returns ``(N, 2, 2)`` float32 piece endpoints (m) and ``(N,)`` the owning polyline.
    """
    # All polylines at once (a WOMD scene has hundreds; the replay env cuts every scene's map at
    # each build): per-point arc length along its own polyline, then np.interp's rule, x = the
    # piece ends.
    offsets = np.asarray(offsets, np.int64)
    counts = np.diff(offsets)
    empty = (np.zeros((0, 2, 2), np.float32), np.zeros(0, np.int64))
    if not (counts >= 2).any():
        return empty
    pts = np.asarray(points[: offsets[-1], :2], np.float64)
    lines = np.flatnonzero(counts > 0)
    owner_pt = np.repeat(np.arange(len(counts)), counts)
    step = np.zeros(len(pts))
    step[1:] = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    step[offsets[lines]] = 0.0  # each polyline's arc starts at 0
    cum = np.cumsum(step)
    arc = cum - cum[offsets[:-1].clip(max=len(pts) - 1)][owner_pt]
    total = np.zeros(len(counts))
    total[lines] = arc[offsets[1:][lines] - 1]
    cut = np.flatnonzero((counts >= 2) & (total >= MIN_SEGMENT_M))
    if not len(cut):
        return empty
    n = np.maximum(1, np.ceil(total[cut] / span - 1e-6)).astype(np.int64)
    # the n + 1 piece ends of each cut polyline: k * (length / n), the last one the length itself
    sample_line = np.repeat(cut, n + 1)
    k = np.arange(int((n + 1).sum())) - np.repeat(np.cumsum(n + 1) - (n + 1), n + 1)
    at = k * np.repeat(total[cut] / n, n + 1)
    last = k == np.repeat(n, n + 1)
    at[last] = total[sample_line[last]]
    # j: the last point of the sample's polyline with arc <= at (points sort before equal samples)
    keys = np.concatenate([arc, at])
    line = np.concatenate([owner_pt, sample_line])
    is_sample = np.concatenate([np.zeros(len(arc), bool), np.ones(len(at), bool)])
    order = np.lexsort((is_sample, keys, line))
    points_before = np.cumsum(~is_sample[order]) - 1  # global index of the last point at or before
    j = np.empty(len(keys), np.int64)
    j[order] = points_before
    j = j[len(arc) :]
    end_of_line = offsets[sample_line + 1] - 1
    inside = j < end_of_line
    g = np.minimum(j, end_of_line - 1)
    x0, x1 = arc[g], arc[g + 1]
    slope = (pts[g + 1] - pts[g]) / np.where(inside, x1 - x0, 1.0)[:, None]
    q = np.where(inside[:, None], slope * (at - x0)[:, None] + pts[g], pts[end_of_line])
    starts = np.cumsum(n + 1) - (n + 1)
    piece_start = np.repeat(starts, n) + (np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n))
    pieces = np.stack([q[piece_start], q[piece_start + 1]], axis=1)
    return pieces.astype(np.float32), np.repeat(cut, n)


def chain_segments(seg: np.ndarray, tol: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """``(N, 2, D)`` segments -> CSR polylines (points (P, D), offsets), joining each segment to
    the previous one when it starts where that one ended (walls come as consecutive quads)."""
    if len(seg) == 0:
        return np.zeros((0, seg.shape[-1]), np.float32), np.zeros(1, np.int32)
    joined = np.linalg.norm(seg[1:, 0, :2] - seg[:-1, 1, :2], axis=1) <= tol
    starts = np.concatenate([[True], ~joined])
    points, offsets = [], [0]
    for i in range(len(seg)):
        if starts[i]:
            if i:
                offsets.append(len(points))
            points.append(seg[i, 0])
        points.append(seg[i, 1])
    offsets.append(len(points))
    return np.asarray(points, np.float32), np.asarray(offsets, np.int32)


@wp.struct
class VectorMapData:
    """Kernel view of the packed maps (see `VectorizedObservation` for shapes and units)."""

    lane_a: wp.array(dtype=wp.vec2)
    lane_b: wp.array(dtype=wp.vec2)
    lane_width: wp.array(dtype=float)
    boundary_a: wp.array(dtype=wp.vec2)
    boundary_b: wp.array(dtype=wp.vec2)
    boundary_kind: wp.array(dtype=float)
    stop_a: wp.array(dtype=wp.vec2)
    stop_b: wp.array(dtype=wp.vec2)
    stop_light: wp.array(dtype=wp.int32)
    map_grid_origin: wp.array(dtype=wp.vec2)
    map_grid_cell: wp.array(dtype=float)
    map_grid_nx: wp.array(dtype=wp.int32)
    map_grid_ny: wp.array(dtype=wp.int32)
    map_cell_start: wp.array(dtype=wp.int32)
    lane_cell_offsets: wp.array(dtype=wp.int32)
    lane_cell_items: wp.array(dtype=wp.int32)
    boundary_cell_offsets: wp.array(dtype=wp.int32)
    boundary_cell_items: wp.array(dtype=wp.int32)
    stop_cell_offsets: wp.array(dtype=wp.int32)
    stop_cell_items: wp.array(dtype=wp.int32)
    world_map: wp.array(dtype=wp.int32)
    world_light_start: wp.array(dtype=wp.int32)


# ---- kernel helpers ----------------------------------------------------------------------------


@wp.func
def in_window(local: wp.vec2):
    return local[0] >= -_W_BEHIND and local[0] <= _W_AHEAD and wp.abs(local[1]) <= _W_LAT


@wp.func
def to_ego(p: wp.vec2, origin: wp.vec2, c: float, s: float):
    """World point -> ego frame (x forward, y left)."""
    d = p - origin
    return wp.vec2(c * d[0] + s * d[1], -s * d[0] + c * d[1])


@wp.func
def nearer(dist_a: float, item_a: int, dist_b: float, item_b: int):
    """Whether (dist_a, item_a) sorts before (dist_b, item_b): nearest first, ties by id."""
    return dist_a < dist_b or (dist_a == dist_b and item_a < item_b)


@wp.func
def clear_run(
    col: int, lo: int, hi: int, scratch_dist: wp.array2d(dtype=float), scratch_item: wp.array2d(dtype=wp.int32)
):
    """Fill scratch rows [lo, hi) of column ``col`` with empty entries, which sort after every real one."""
    for j in range(lo, hi):
        scratch_dist[j, col] = wp.inf
        scratch_item[j, col] = _NO_ITEM


@wp.func
def insert_nearest(
    col: int, lo: int, hi: int, dist: float, item: int,
    scratch_dist: wp.array2d(dtype=float), scratch_item: wp.array2d(dtype=wp.int32),
):
    """Insert (dist, item) into the sorted run [lo, hi) of scratch column ``col`` (empty entries
    at its end, see `clear_run`); when the run is full its last entry falls off, and an item
    that sorts after every entry is dropped."""
    if nearer(dist, item, scratch_dist[hi - 1, col], scratch_item[hi - 1, col]):
        j = hi - 1
        while j > lo:
            prev_dist = scratch_dist[j - 1, col]
            prev_item = scratch_item[j - 1, col]
            if nearer(prev_dist, prev_item, dist, item):
                break
            scratch_dist[j, col] = prev_dist
            scratch_item[j, col] = prev_item
            j -= 1
        scratch_dist[j, col] = dist
        scratch_item[j, col] = item


@wp.func
def distance_bin(dist: float):
    """Distance bin of an in-window distance (monotone in ``dist``, so bin order never
    contradicts distance order)."""
    return wp.min(int(dist * _BIN_SCALE), _BINS - 1)


@wp.func
def cell_range(origin: wp.vec2, c: float, s: float, reach: float, g0: wp.vec2, cell: float, nx: int, ny: int):
    """Cells (ix0, iy0, ix1, iy1) under the axis-aligned world box of the window, cut to the box
    of the disk of radius ``reach`` around the agent."""
    lo = wp.vec2(1.0e30, 1.0e30)
    hi = wp.vec2(-1.0e30, -1.0e30)
    for k in range(4):
        lx = wp.where(k == 0 or k == 3, -_W_BEHIND, _W_AHEAD)
        ly = wp.where(k < 2, -_W_LAT, _W_LAT)
        w = origin + wp.vec2(c * lx - s * ly, s * lx + c * ly)
        lo = wp.min(lo, w)
        hi = wp.max(hi, w)
    lo = wp.max(lo, origin - wp.vec2(reach, reach))
    hi = wp.min(hi, origin + wp.vec2(reach, reach))
    return clamped_cells(lo, hi, g0, cell, nx, ny)


@wp.func
def cell_may_hold(
    ix: int, iy: int, g0: wp.vec2, cell: float, origin: wp.vec2, c: float, s: float, reach: float
):
    """Whether cell (ix, iy) may hold a midpoint that is in the window and within ``reach`` of the
    agent. Conservative (a cell is ruled out only when its whole square, widened by
    `CELL_SLACK_M` for rounding, lies outside), so skipping the others changes no result."""
    centre = to_ego(g0 + wp.vec2((float(ix) + 0.5) * cell, (float(iy) + 0.5) * cell), origin, c, s)
    r = 0.7072 * cell + _CELL_SLACK  # half the cell's diagonal (rounded up), plus the slack
    return (
        centre[0] >= -_W_BEHIND - r
        and centre[0] <= _W_AHEAD + r
        and wp.abs(centre[1]) <= _W_LAT + r
        and wp.length(centre) <= reach + r
    )


@wp.func
def scan_segments(
    placing: int, origin: wp.vec2, c: float, s: float, m: int, col: int, base: int,
    count: int, cut: int, reach: float,
    seg_a: wp.array(dtype=wp.vec2), seg_b: wp.array(dtype=wp.vec2),
    map_data: VectorMapData,
    cell_offsets: wp.array(dtype=wp.int32), cell_items: wp.array(dtype=wp.int32),
    bins: wp.array2d(dtype=wp.int32), bin_base: int,
    scratch_dist: wp.array2d(dtype=float), scratch_item: wp.array2d(dtype=wp.int32),
):
    """One pass over the segments of map ``m`` whose midpoint is in the window (every segment at
    most once). Counting pass (``placing`` 0): adds each to the count of its distance bin and
    returns how many there are. Placing pass: inserts each of bin <= ``cut`` into its bin's run
    of the scratch column (bins hold their run starts by then; the cut bin's run ends at
    ``count``); returns 0."""
    g0 = map_data.map_grid_origin[m]
    cell = map_data.map_grid_cell[m]
    nx = map_data.map_grid_nx[m]
    cells = cell_range(origin, c, s, reach, g0, cell, nx, map_data.map_grid_ny[m])
    c0 = map_data.map_cell_start[m]
    total = int(0)
    for iy in range(cells[1], cells[3] + 1):
        for ix in range(cells[0], cells[2] + 1):
            if cell_may_hold(ix, iy, g0, cell, origin, c, s, reach):
                cid = c0 + iy * nx + ix
                for k in range(cell_offsets[cid], cell_offsets[cid + 1]):
                    i = cell_items[k]
                    mid = to_ego(0.5 * (seg_a[i] + seg_b[i]), origin, c, s)
                    if in_window(mid):
                        dist = wp.length(mid)
                        b = distance_bin(dist)
                        if placing == 0:
                            bins[bin_base + b, col] = bins[bin_base + b, col] + 1
                            total += 1
                        elif b <= cut:
                            end = count
                            if b < cut:
                                end = bins[bin_base + b + 1, col]
                            lo = base + bins[bin_base + b, col]
                            insert_nearest(col, lo, base + end, dist, i, scratch_dist, scratch_item)
    return total


@wp.func
def gather_segments(
    origin: wp.vec2, c: float, s: float, m: int, col: int, base: int, capacity: int,
    seg_a: wp.array(dtype=wp.vec2), seg_b: wp.array(dtype=wp.vec2),
    map_data: VectorMapData,
    cell_offsets: wp.array(dtype=wp.int32), cell_items: wp.array(dtype=wp.int32),
    bins: wp.array2d(dtype=wp.int32), bin_base: int,
    scratch_dist: wp.array2d(dtype=float), scratch_item: wp.array2d(dtype=wp.int32),
):
    """The ``capacity`` nearest segments of map ``m`` with the midpoint in the window, sorted by
    (distance, id) into scratch rows ``base ...`` of column ``col``; returns how many.

    A counting pass bins the candidates by distance; the first bin at which the running count
    reaches ``capacity`` is the cut: nearer bins are kept whole, the cut bin keeps its nearest
    few, farther bins nothing. The placing pass then visits only cells within the cut bin's
    reach and sorts each kept segment within its own bin's run, so no insertion shifts more
    than one bin's entries."""
    if capacity == 0:
        return int(0)
    for b in range(_BINS):
        bins[bin_base + b, col] = 0
    total = scan_segments(
        0, origin, c, s, m, col, base, 0, 0, _FAR, seg_a, seg_b, map_data,
        cell_offsets, cell_items, bins, bin_base, scratch_dist, scratch_item,
    )
    count = wp.min(total, capacity)
    # Bin counts -> run starts (exclusive prefix sums), and the cut bin.
    running = int(0)
    cut = int(_BINS - 1)
    for b in range(_BINS):
        n = bins[bin_base + b, col]
        bins[bin_base + b, col] = running
        running += n
        if cut == _BINS - 1 and running >= capacity:
            cut = b
    reach = float(_FAR)
    if cut < _BINS - 1:
        reach = float(cut + 1) / _BIN_SCALE + _CELL_SLACK
    clear_run(col, base, base + count, scratch_dist, scratch_item)
    scan_segments(
        1, origin, c, s, m, col, base, count, cut, reach, seg_a, seg_b, map_data,
        cell_offsets, cell_items, bins, bin_base, scratch_dist, scratch_item,
    )
    return count


@wp.func
def write_segment(
    origin: wp.vec2, c: float, s: float, a: wp.vec2, b: wp.vec2, last: float,
    row: int, j: int, out: wp.array3d(dtype=float),
):
    mid = to_ego(0.5 * (a + b), origin, c, s)
    d = b - a
    half = 0.5 * wp.length(d)
    u = d / wp.max(2.0 * half, 1.0e-12)
    out[row, j, 0] = mid[0] / _POS
    out[row, j, 1] = mid[1] / _POS
    out[row, j, 2] = half / _LEN
    out[row, j, 3] = c * u[0] + s * u[1]
    out[row, j, 4] = -s * u[0] + c * u[1]
    out[row, j, 5] = last


@wp.func
def clear_member(row: int, j: int, out: wp.array3d(dtype=float)):
    for k in range(out.shape[2]):
        out[row, j, k] = 0.0


@wp.func
def write_segment_set(
    origin: wp.vec2, c: float, s: float, row: int, base: int, count: int,
    seg_a: wp.array(dtype=wp.vec2), seg_b: wp.array(dtype=wp.vec2),
    last: wp.array(dtype=float), last_scale: float,
    scratch_item: wp.array2d(dtype=wp.int32),
    out: wp.array3d(dtype=float), mask_out: wp.array2d(dtype=wp.bool),
):
    """Members of a segment set (lanes, boundaries) from the ``count`` ids `gather_segments` left
    in scratch rows ``base ...`` of column ``row``; the rest of the set empty. Each member's last
    feature is ``last[id] / last_scale`` (lane width, boundary kind)."""
    for j in range(out.shape[1]):
        if j < count:
            i = scratch_item[base + j, row]
            write_segment(origin, c, s, seg_a[i], seg_b[i], last[i] / last_scale, row, j, out)
            mask_out[row, j] = True
        else:
            clear_member(row, j, out)
            mask_out[row, j] = False


@wp.kernel
def vectorized_observation_kernel(
    map_data: VectorMapData,
    agent_box: wp.array3d(dtype=float),
    light_state: wp.array2d(dtype=wp.int32),
    speed: wp.array2d(dtype=float),
    slot_table: wp.array2d(dtype=wp.int32),
    parked_box: wp.array3d(dtype=float),
    parked_per_world: int,
    requests: wp.array2d(dtype=wp.int32),
    privileged: int,
    partners_out: wp.array3d(dtype=float),
    partners_aux_out: wp.array3d(dtype=float),
    partners_mask_out: wp.array2d(dtype=wp.bool),
    lanes_out: wp.array3d(dtype=float),
    lanes_mask_out: wp.array2d(dtype=wp.bool),
    boundaries_out: wp.array3d(dtype=float),
    boundaries_mask_out: wp.array2d(dtype=wp.bool),
    traffic_out: wp.array3d(dtype=float),
    traffic_mask_out: wp.array2d(dtype=wp.bool),
    scratch_dist: wp.array2d(dtype=float),
    scratch_item: wp.array2d(dtype=wp.int32),
    bins: wp.array2d(dtype=wp.int32),
):
    """One entity set (0 partners, 1 lanes, 2 boundaries, 3 traffic) of request ``row`` =
    (step, slot) of the snapshot history. The slot's world and the world's slot range come from
    the step's row of ``slot_table`` (`pictura.sim.slot_table`), which a packed layout redraws
    at every block reset.

    Scratch is indexed [entry, row] so the threads of a warp (consecutive rows, one set) touch
    consecutive addresses; each set has its own scratch rows (``scratch_*``: the partners' run,
    then the lanes', boundaries' and traffic's; ``bins``: `DISTANCE_BINS` rows for each segment
    set)."""
    entity_set, row = wp.tid()
    step = requests[row, 0]
    slot = requests[row, 1]
    max_partners = partners_out.shape[1]
    max_lanes = lanes_out.shape[1]
    max_boundaries = boundaries_out.shape[1]
    max_traffic = traffic_out.shape[1]
    occupied = agent_box[step, slot, BoxCol.KIND] >= 0.0  # an empty slot gets empty sets
    origin = wp.vec2(agent_box[step, slot, BoxCol.X], agent_box[step, slot, BoxCol.Y])
    heading = agent_box[step, slot, BoxCol.HEADING]
    c = wp.cos(heading)
    s = wp.sin(heading)
    num_slots = agent_box.shape[1]
    table_step = table_row(slot_table, step)
    world = table_slot_world(slot_table, table_step, slot)
    m = map_data.world_map[world]
    parked_step = wp.min(step, parked_box.shape[0] - 1)

    if entity_set == 0:
        # Partners: the other agents of the world, then its parked cars (ids past the slot range).
        found = int(0)
        if occupied and max_partners > 0:
            clear_run(row, 0, max_partners, scratch_dist, scratch_item)
            s0 = table_world_start(slot_table, table_step, num_slots, world)
            for other in range(s0, s0 + table_world_count(slot_table, table_step, num_slots, world)):
                if other != slot and agent_box[step, other, BoxCol.KIND] >= 0.0:
                    rel = to_ego(wp.vec2(agent_box[step, other, BoxCol.X], agent_box[step, other, BoxCol.Y]), origin, c, s)
                    if in_window(rel):
                        insert_nearest(row, 0, max_partners, wp.length(rel), other, scratch_dist, scratch_item)
                        found += 1
            for p in range(parked_per_world):
                prow = world * parked_per_world + p
                if parked_box[parked_step, prow, BoxCol.KIND] >= 0.0:
                    rel = to_ego(wp.vec2(parked_box[parked_step, prow, BoxCol.X], parked_box[parked_step, prow, BoxCol.Y]), origin, c, s)
                    if in_window(rel):
                        insert_nearest(
                            row, 0, max_partners, wp.length(rel), num_slots + prow, scratch_dist, scratch_item
                        )
                        found += 1
        count = wp.min(found, max_partners)
        for j in range(max_partners):
            if j < count:
                item = scratch_item[j, row]
                x = float(0.0)
                y = float(0.0)
                h = float(0.0)
                length = float(0.0)
                width = float(0.0)
                v = float(0.0)
                if item < num_slots:
                    x = agent_box[step, item, BoxCol.X]
                    y = agent_box[step, item, BoxCol.Y]
                    h = agent_box[step, item, BoxCol.HEADING]
                    length = agent_box[step, item, BoxCol.LENGTH]
                    width = agent_box[step, item, BoxCol.WIDTH]
                    v = speed[step, item]
                else:
                    prow = item - num_slots
                    x = parked_box[parked_step, prow, BoxCol.X]
                    y = parked_box[parked_step, prow, BoxCol.Y]
                    h = parked_box[parked_step, prow, BoxCol.HEADING]
                    length = parked_box[parked_step, prow, BoxCol.LENGTH]
                    width = parked_box[parked_step, prow, BoxCol.WIDTH]
                rel = to_ego(wp.vec2(x, y), origin, c, s)
                partners_out[row, j, 0] = rel[0] / _POS
                partners_out[row, j, 1] = rel[1] / _POS
                partners_out[row, j, 2] = length / _LEN
                partners_out[row, j, 3] = width / _WID
                partners_out[row, j, 4] = wp.cos(h - heading)
                partners_out[row, j, 5] = wp.sin(h - heading)
                partners_out[row, j, 6] = scratch_dist[j, row] / _POS
                partners_aux_out[row, j, 0] = wp.where(privileged != 0, v / _SPEED, 0.0)
                partners_mask_out[row, j] = True
            else:
                clear_member(row, j, partners_out)
                partners_aux_out[row, j, 0] = 0.0
                partners_mask_out[row, j] = False

    elif entity_set == 1:
        base = max_partners
        count = int(0)
        if occupied:
            count = gather_segments(
                origin, c, s, m, row, base, max_lanes, map_data.lane_a, map_data.lane_b, map_data,
                map_data.lane_cell_offsets, map_data.lane_cell_items, bins, 0, scratch_dist, scratch_item,
            )
        write_segment_set(
            origin, c, s, row, base, count, map_data.lane_a, map_data.lane_b, map_data.lane_width, _WID,
            scratch_item, lanes_out, lanes_mask_out,
        )

    elif entity_set == 2:
        # Boundaries: road edges and walls.
        base = max_partners + max_lanes
        count = int(0)
        if occupied:
            count = gather_segments(
                origin, c, s, m, row, base, max_boundaries, map_data.boundary_a, map_data.boundary_b, map_data,
                map_data.boundary_cell_offsets, map_data.boundary_cell_items, bins, _BINS, scratch_dist, scratch_item,
            )
        write_segment_set(
            origin, c, s, row, base, count, map_data.boundary_a, map_data.boundary_b, map_data.boundary_kind, 1.0,
            scratch_item, boundaries_out, boundaries_mask_out,
        )

    else:
        # Traffic controls: stop lines and the state of their light.
        base = max_partners + max_lanes + max_boundaries
        count = int(0)
        if occupied:
            count = gather_segments(
                origin, c, s, m, row, base, max_traffic, map_data.stop_a, map_data.stop_b, map_data,
                map_data.stop_cell_offsets, map_data.stop_cell_items, bins, 2 * _BINS, scratch_dist, scratch_item,
            )
        for j in range(max_traffic):
            if j < count:
                i = scratch_item[base + j, row]
                a = to_ego(map_data.stop_a[i], origin, c, s)
                b = to_ego(map_data.stop_b[i], origin, c, s)
                traffic_out[row, j, 0] = a[0] / _POS
                traffic_out[row, j, 1] = a[1] / _POS
                traffic_out[row, j, 2] = b[0] / _POS
                traffic_out[row, j, 3] = b[1] / _POS
                state = int(_LIGHT_OFF)
                light = map_data.stop_light[i]
                if light >= 0:
                    state = light_state[step, map_data.world_light_start[world] + light]
                    if state < 0 or state > _LIGHT_OFF:
                        state = int(_LIGHT_OFF)
                for q in range(4):
                    traffic_out[row, j, 4 + q] = wp.where(q == state, 1.0, 0.0)
                traffic_mask_out[row, j] = True
            else:
                clear_member(row, j, traffic_out)
                traffic_mask_out[row, j] = False


# ---- the builder ---------------------------------------------------------------------------------


def _torch_device(device: str) -> torch.device:
    return torch.device("cpu") if device == "cpu" else torch.device(device)


def _as_torch(x):
    """A torch view of a Warp array (zero copy); torch tensors and None pass through."""
    return wp.to_torch(x) if isinstance(x, wp.array) else x


class VectorizedObservation:
    """Builds the vectorized entity sets of every agent slot from the world snapshot.

    Args:
        road_maps: the maps of the env, in the order ``layout.world_map`` indexes them.
        layout: the slot / world / light layout (`pictura.sim.snapshot.WorldLayout`); a packed
            one needs the ``slot_table`` of every call (`build_requests`).
        device: Warp device ("cpu", "cuda:0"); torch tensors passed in must live there.
        variant, max_partners, max_lanes, max_boundaries, max_traffic, include_walls,
        subdivide_long_segments: see `VectorizedObservationConfig`.

    Packed static arrays (all maps back to back; M maps, C grid cells over all maps):
      lane_a, lane_b (N,) vec2 m: lane centreline pieces (chords, direction of travel);
      lane_width (N,) m; boundary_a, boundary_b (E,) vec2 m; boundary_kind (E,) 0 road edge,
      1 wall (pieces of at most ``segment_span_m``, see `map_segments`); stop_a, stop_b (K,)
      vec2 m stop-line endpoints; stop_light (K,) map-local light
      index or -1; map grids: map_grid_origin (M,) vec2 m, map_grid_cell (M,) m,
      map_grid_nx/ny (M,), map_cell_start (M + 1,); per set a CSR (C + 1,) of global ids,
      binned by segment midpoint (every id in exactly one cell).
    Elevation is ignored: the window and all features are 2-D.
    """

    def __init__(
        self,
        road_maps: list[RoadMap],
        layout: WorldLayout,
        device: str = "cpu",
        variant: Literal["privileged", "blind"] = "privileged",
        max_partners: int = 16,
        max_lanes: int = 80,
        max_boundaries: int = 80,
        max_traffic: int = 10,
        include_walls: bool = True,
        subdivide_long_segments: float | None = None,
    ):
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        for name, value in (
            ("max_partners", max_partners),
            ("max_lanes", max_lanes),
            ("max_boundaries", max_boundaries),
            ("max_traffic", max_traffic),
        ):
            if int(value) != value or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value}")
        if subdivide_long_segments is not None and not subdivide_long_segments > 0:
            raise ValueError(f"subdivide_long_segments must be > 0 m or None, got {subdivide_long_segments}")
        if not road_maps:
            raise ValueError("road_maps must hold at least one RoadMap")
        M = len(road_maps)
        if layout.num_worlds == 0 or layout.world_map.min() < 0 or layout.world_map.max() >= M:
            raise ValueError(f"layout.world_map holds a map index outside 0..{M - 1}")
        lights = np.array([len(road_maps[m].light_position) for m in layout.world_map], np.int64)
        light_start = np.concatenate([[0], np.cumsum(lights)[:-1]])
        if int(lights.sum()) != layout.light_count or not np.array_equal(light_start, layout.world_light_start):
            raise ValueError("layout.world_light_start / light_count do not match the maps' light_position counts")
        self.variant = variant
        self.privileged = variant == "privileged"
        self.max_partners, self.max_lanes = int(max_partners), int(max_lanes)
        self.max_boundaries, self.max_traffic = int(max_boundaries), int(max_traffic)
        self.include_walls = bool(include_walls)
        self.subdivide_long_segments = subdivide_long_segments
        self.segment_span_m = MAX_LANE_CHUNK_M if subdivide_long_segments is None else float(subdivide_long_segments)
        self.layout = layout
        self.device = device
        self.torch_device = _torch_device(device)
        self.num_slots = layout.num_slots
        self._pack(road_maps)
        self._scratch: tuple[wp.array, wp.array, wp.array] | None = None
        self._no_parked = wp.full((1, 1, BOX_ROW_FLOATS), -1.0, dtype=float, device=device)
        # A static layout's slot ranges never change: its one row serves every call that passes none.
        self._layout_slot_table = None  # uploaded at first use (`_slot_table_history`)

    # ---- static packing ----------------------------------------------------------------------
    def map_segments(self, road_map: RoadMap) -> dict[str, np.ndarray]:
        """One map's entities as packed (x, y only): ``lane`` (N, 2, 2) m pieces of the lane
        chunks and ``lane_width`` (N,) m; ``boundary`` (E, 2, 2) m pieces of the road edges then
        the walls (consecutive wall quads chained first) and ``boundary_kind`` (E,);
        ``stop`` (K, 2, 2) m stop lines and ``stop_light`` (K,) map-local light or -1.

        Lane chunks (<= 10 m) give one piece each at the default span; boundaries are cut to
        the same granularity (`polyline_pieces`)."""
        span = self.segment_span_m
        lane, owner = polyline_pieces(road_map.lane_points, road_map.lane_offsets, span)
        edge, _ = polyline_pieces(road_map.road_edge_points, road_map.road_edge_offsets, span)
        wall = np.zeros((0, 2, 2), np.float32)
        if self.include_walls and len(road_map.wall_points):
            wall, _ = polyline_pieces(*chain_segments(road_map.wall_points), span)
        return {
            "lane": lane,
            "lane_width": road_map.lane_width[owner].astype(np.float32),
            "boundary": np.concatenate([edge, wall]),
            "boundary_kind": np.concatenate(
                [np.full(len(edge), BOUNDARY_ROAD_EDGE, np.float32), np.full(len(wall), BOUNDARY_WALL, np.float32)]
            ),
            "stop": road_map.stop_line_points[:, :, :2].astype(np.float32).reshape(-1, 2, 2),
            "stop_light": road_map.stop_line_light.astype(np.int32),
        }

    def _pack(self, road_maps: list[RoadMap]) -> None:
        for rm in road_maps:
            rm.validate()
        per_map = [self.map_segments(rm) for rm in road_maps]
        self.map_segment_counts = [{k: len(v) for k, v in seg.items() if k in ("lane", "boundary", "stop")} for seg in per_map]
        a: dict[str, list] = {}
        starts = {"lane": 0, "boundary": 0, "stop": 0}
        cells = [0]
        for seg in per_map:
            mids = {k: 0.5 * (seg[k][:, 0] + seg[k][:, 1]) for k in starts}
            # the grid covers the map's own pieces (a WOMD scene lies kilometres from the origin:
            # a grid reaching back to (0, 0) would hold ~1000x the cells); the origin only for
            # a map without any piece
            allpts = np.concatenate([seg[k].reshape(-1, 2) for k in starts])
            if not len(allpts):
                allpts = np.zeros((1, 2), np.float32)
            lo, hi = allpts.min(0) - GRID_MARGIN_M, allpts.max(0) + GRID_MARGIN_M
            cell = max(OBS_GRID_CELL_M, float(max(hi - lo)) / 1024.0)
            nx = max(1, math.ceil(float(hi[0] - lo[0]) / cell))
            ny = max(1, math.ceil(float(hi[1] - lo[1]) / cell))
            grid = Grid(origin=lo.astype(np.float32), cell=cell, nx=nx, ny=ny)
            a.setdefault("map_grid_origin", []).append(grid.origin)
            a.setdefault("map_grid_cell", []).append(cell)
            a.setdefault("map_grid_nx", []).append(nx)
            a.setdefault("map_grid_ny", []).append(ny)
            cells.append(cells[-1] + nx * ny)
            for key, name in (("lane", "lane"), ("boundary", "boundary"), ("stop", "stop")):
                point = np.repeat(mids[key][:, None, :], 2, axis=1)
                point = np.concatenate([point, np.zeros((len(point), 2, 1), np.float32)], axis=2)
                off, items = bin_segments(grid, point)
                prev = a.setdefault(f"{name}_cell_offsets", [np.zeros(1, np.int32)])
                prev.append(off[1:] + prev[-1][-1])
                a.setdefault(f"{name}_cell_items", []).append(items + starts[key])
                a.setdefault(f"{name}_a", []).append(seg[key][:, 0])
                a.setdefault(f"{name}_b", []).append(seg[key][:, 1])
                starts[key] += len(seg[key])
            a.setdefault("lane_width", []).append(seg["lane_width"])
            a.setdefault("boundary_kind", []).append(seg["boundary_kind"])
            a.setdefault("stop_light", []).append(seg["stop_light"])
        a["map_cell_start"] = [np.asarray(cells)]
        lay = self.layout
        # The slot ranges are not here: they come with every call (`build_requests`'s slot_table).
        layout_arrays = {"world_map": lay.world_map, "world_light_start": lay.world_light_start}
        self.data = VectorMapData()
        for name, var in VectorMapData.vars.items():
            dtype = var.type.dtype
            if name in layout_arrays:
                values = np.asarray(layout_arrays[name], np.int32)
            elif dtype == wp.vec2:
                values = np.concatenate([np.asarray(p, np.float32).reshape(-1, 2) for p in a[name]])
            elif dtype == wp.int32:
                values = np.concatenate([np.asarray(p, np.int32).reshape(-1) for p in a[name]])
            else:
                values = np.concatenate([np.asarray(p, np.float32).reshape(-1) for p in a[name]])
            arr = wp.array(np.ascontiguousarray(values), dtype=dtype, device=self.device)
            setattr(self.data, name, arr)
            setattr(self, name, arr)

    # ---- specs ---------------------------------------------------------------------------------
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Per-sample shape of every output key (masks included)."""
        return {
            "partners": (self.max_partners, PARTNER_WIDTH),
            "partners_aux": (self.max_partners, PARTNER_AUX_WIDTH),
            "partners_mask": (self.max_partners,),
            "lanes": (self.max_lanes, SEGMENT_WIDTH),
            "lanes_mask": (self.max_lanes,),
            "boundaries": (self.max_boundaries, SEGMENT_WIDTH),
            "boundaries_mask": (self.max_boundaries,),
            "traffic": (self.max_traffic, TRAFFIC_WIDTH),
            "traffic_mask": (self.max_traffic,),
        }

    def spec(self, num_slots: int, device: torch.device | str) -> Composite:
        """The ``("observation", ...)`` fragment: the entity sets, their masks and ``ego_aux``.

        A `Composite` of batch shape ``(num_slots,)``; merge it into the env's observation
        entry (``observation_spec["observation"].update(fragment)``).
        """
        entries = {}
        for key, shape in self.shapes().items():
            if key.endswith("_mask"):
                entries[key] = Categorical(2, shape=(num_slots, *shape), dtype=torch.bool, device=device)
            else:
                entries[key] = Unbounded(shape=(num_slots, *shape), dtype=torch.float32, device=device)
        entries["ego_aux"] = Unbounded(shape=(num_slots, EGO_AUX_WIDTH), dtype=torch.float32, device=device)
        return Composite(entries, shape=(num_slots,), device=device)

    # ---- per step ------------------------------------------------------------------------------
    def ego_aux(self, obs_ego_aux: torch.Tensor) -> torch.Tensor:
        """``("observation", "ego_aux")`` from the simulator's ``State.obs_ego_aux`` (..., 2):
        a copy for the privileged variant, zeros for the blind one."""
        return obs_ego_aux.clone() if self.privileged else torch.zeros_like(obs_ego_aux)

    def allocate(self, batch: tuple[int, ...]) -> dict[str, torch.Tensor]:
        """Zeroed output tensors of batch shape ``batch`` for `build` / `build_requests`."""
        out = {}
        for key, shape in self.shapes().items():
            dtype = torch.bool if key.endswith("_mask") else torch.float32
            out[key] = torch.zeros((*batch, *shape), dtype=dtype, device=self.torch_device)
        return out

    def build(
        self,
        agent_box: torch.Tensor,
        light_state: torch.Tensor,
        speed: torch.Tensor,
        out: dict[str, torch.Tensor] | None = None,
        parked_box: torch.Tensor | None = None,
        slot_table: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """Entity sets of every slot of one step, or of every (step, slot) of a history.

        Inputs and ``out`` may be torch tensors or Warp arrays (viewed as tensors, zero copy).

        Args:
            agent_box: (S, 8) or (T, S, 8) float32 snapshot boxes (`pictura.sim.snapshot`).
            light_state: (L,) or (T, L) int32 LIGHT_* of every world light.
            speed: (S,) or (T, S) float32 signed speed of every slot, m/s (partner aux).
            out: tensors to write into (keys of `shapes`, batch (S,) or (T, S)); None allocates.
            parked_box: parked cars (the simulator has none yet): (W * P, 8) or (T, W * P, 8)
                boxes in the snapshot layout, world ``w``'s P cars at rows ``w * P ...``,
                kind -1 for an empty row. They join the partner set with speed 0.
            slot_table: (S + 2W,) int32 slot-table row of the step (`pictura.sim.slot_table`), or
                for a history (T, S + 2W) / (1, S + 2W); None = the layout's own (static layouts
                only; see `build_requests`).
        Returns:
            ``out``: the keys of `shapes` with batch shape (S,) or (T, S).
        """
        agent_box, light_state, speed, parked_box, slot_table = (
            _as_torch(x) for x in (agent_box, light_state, speed, parked_box, slot_table)
        )
        if out is not None:
            out = {k: _as_torch(v) for k, v in out.items()}
        single = agent_box.ndim == 2
        if single:
            agent_box, light_state, speed = agent_box[None], light_state[None], speed[None]
            if parked_box is not None and parked_box.ndim == 2:
                parked_box = parked_box[None]
            if slot_table is not None:
                width = slot_table_width(self.num_slots, self.layout.num_worlds)
                if tuple(slot_table.shape) != (width,):
                    raise ValueError(f"slot_table of one step must be (S + 2W = {width},), got {tuple(slot_table.shape)}")
                slot_table = slot_table[None]
        if agent_box.ndim != 3:
            raise ValueError(f"agent_box must be (S, {BOX_ROW_FLOATS}) or (T, S, {BOX_ROW_FLOATS}), got {tuple(agent_box.shape)}")
        T, S = agent_box.shape[:2]
        steps = torch.arange(T, device=agent_box.device, dtype=torch.int32).repeat_interleave(S)
        slots = torch.arange(S, device=agent_box.device, dtype=torch.int32).repeat(T)
        flat = None if out is None else {k: v.view(T * S, *v.shape[(1 if single else 2):]) for k, v in out.items()}
        result = self.build_requests(agent_box, light_state, speed, steps, slots, flat, parked_box, slot_table)
        batch = (S,) if single else (T, S)
        if out is not None:
            return out
        return {k: v.view(*batch, *v.shape[1:]) for k, v in result.items()}

    def build_requests(
        self,
        agent_box_hist: torch.Tensor,
        light_hist: torch.Tensor,
        speed_hist: torch.Tensor,
        steps: torch.Tensor,
        slots: torch.Tensor,
        out: dict[str, torch.Tensor] | None = None,
        parked_hist: torch.Tensor | None = None,
        slot_table: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """Entity sets of (step, slot) pairs of a stacked snapshot history (PPO minibatches).

        Args:
            agent_box_hist: (T, S, 8) float32; light_hist: (T, L) int32; speed_hist: (T, S) float32.
            steps, slots: (N,) integer indices into the history (not range-checked: no host sync).
            out: (N, ...) tensors to write into; None allocates.
            parked_hist: (T, W * P, 8) or (1, W * P, 8) parked-car boxes (see `build`), or None.
            slot_table: (T, S + 2W) int32 slot-table history (`pictura.sim.slot_table`: which
                world owns each slot, each world's slot range), or one row (1, S + 2W) for every
                step. None = the layout's own table, which only a static layout has: a packed
                layout redraws its slot ranges at every block reset, so its caller passes them
                (the env: ``State.slot_table``).
        Returns:
            ``out``: (N, ...) tensors, equal to what `build` gave for those slots at those steps.
        """
        agent_box_hist, light_hist, speed_hist, steps, slots, parked_hist, slot_table = (
            _as_torch(x) for x in (agent_box_hist, light_hist, speed_hist, steps, slots, parked_hist, slot_table)
        )
        if out is not None:
            out = {k: _as_torch(v) for k, v in out.items()}
        S = self.num_slots
        if agent_box_hist.ndim != 3 or tuple(agent_box_hist.shape[1:]) != (S, BOX_ROW_FLOATS):
            raise ValueError(f"agent_box must be (T, {S}, {BOX_ROW_FLOATS}), got {tuple(agent_box_hist.shape)}")
        T = agent_box_hist.shape[0]
        L = self.layout.light_count
        if light_hist.ndim != 2 or tuple(light_hist.shape) != (T, L):
            raise ValueError(f"light_state must be (T={T}, {L}) to match agent_box, got {tuple(light_hist.shape)}")
        if tuple(speed_hist.shape) != (T, S):
            raise ValueError(f"speed must be (T={T}, {S}) to match agent_box, got {tuple(speed_hist.shape)}")
        table = self._slot_table_history(slot_table, T)
        N = int(steps.shape[0])
        if out is None:
            out = self.allocate((N,))
        else:
            for key, shape in self.shapes().items():
                if key not in out or tuple(out[key].shape) != (N, *shape) or not out[key].is_contiguous():
                    raise ValueError(f"out[{key!r}] must be a contiguous ({N}, {', '.join(map(str, shape))}) tensor")
        parked_per_world = 0
        if parked_hist is None:
            parked = self._no_parked
        else:
            W = self.layout.num_worlds
            if parked_hist.ndim != 3 or parked_hist.shape[-1] != BOX_ROW_FLOATS or parked_hist.shape[1] % W:
                raise ValueError(f"parked_box must be (T, W * P, {BOX_ROW_FLOATS}) with W={W}, got {tuple(parked_hist.shape)}")
            parked_per_world = parked_hist.shape[1] // W
            parked = wp.from_torch(parked_hist.float().contiguous())
        if N == 0:
            return out
        requests = torch.stack([steps.to(torch.int32), slots.to(torch.int32)], dim=1).contiguous()
        if self._scratch is None or self._scratch[0].shape[1] < N:
            # [entry, request]: one run of entries per set (see vectorized_observation_kernel).
            entries = max(1, self.max_partners + self.max_lanes + self.max_boundaries + self.max_traffic)
            self._scratch = (
                wp.empty((entries, N), dtype=float, device=self.device),
                wp.empty((entries, N), dtype=wp.int32, device=self.device),
                wp.empty((3 * DISTANCE_BINS, N), dtype=wp.int32, device=self.device),
            )
        stream = None
        if self.torch_device.type == "cuda":
            stream = wp.stream_from_torch(torch.cuda.current_stream(self.torch_device))
        wp.launch(
            vectorized_observation_kernel,
            dim=(len(ENTITY_SETS), N),
            inputs=[
                self.data,
                wp.from_torch(agent_box_hist.float().contiguous()),
                wp.from_torch(light_hist.to(torch.int32).contiguous(), dtype=wp.int32),
                wp.from_torch(speed_hist.float().contiguous()),
                table,
                parked,
                parked_per_world,
                wp.from_torch(requests, dtype=wp.int32),
                int(self.privileged),
            ],
            outputs=[
                wp.from_torch(out["partners"]),
                wp.from_torch(out["partners_aux"]),
                wp.from_torch(out["partners_mask"], dtype=wp.bool),
                wp.from_torch(out["lanes"]),
                wp.from_torch(out["lanes_mask"], dtype=wp.bool),
                wp.from_torch(out["boundaries"]),
                wp.from_torch(out["boundaries_mask"], dtype=wp.bool),
                wp.from_torch(out["traffic"]),
                wp.from_torch(out["traffic_mask"], dtype=wp.bool),
                *self._scratch,
            ],
            device=self.device,
            stream=stream,
        )
        return out

    def _slot_table_history(self, slot_table: torch.Tensor | None, steps: int) -> wp.array:
        """The kernel's (T or 1, S + 2W) slot table: ``slot_table`` checked against a history of
        ``steps`` steps, or the layout's own row when None."""
        if slot_table is None:
            if self._layout_slot_table is None:
                table = self.layout.fixed_slot_table("VectorizedObservation")
                self._layout_slot_table = wp.array(table, dtype=wp.int32, device=self.device)
            return self._layout_slot_table
        check_slot_table_shape(slot_table.shape, steps, self.num_slots, self.layout.num_worlds)
        return wp.from_torch(slot_table.to(torch.int32).contiguous(), dtype=wp.int32)
