"""Static scene primitives of every map, packed into flat arrays with a per-map culling grid.

Host-side NumPy packing; `Renderer` uploads the result to Warp once. Primitives of all maps
are stored back to back; a primitive reference is one int32, ``kind << REF_SHIFT | index``:

- ``REF_AGENT``  index = agent slot (dynamic; read from the snapshot at render time)
- ``REF_LINE``   ground line segment (markings, road edges, stop lines)
- ``REF_WALL``   vertical wall quad
- ``REF_LIGHT``  traffic-light disk

Each map has a uniform 2-D grid of ``cell_size`` m cells; a static primitive is listed in every
cell its x-y bounding box overlaps (CSR: ``cell_start`` into ``entry_ref``). Each entry also
carries the primitive's lowest cell (x, y) and its own cell's x, so a query over a cell rectangle
visits a primitive exactly once (it is taken in the first cell of the rectangle it overlaps),
also when the entries of a row of cells are read as one run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pictura.maps.roadmap import RoadMap
from pictura.render.palette import LINE_ROAD_EDGE, LINE_STOP_LINE, LINE_WIDTH_M, MARKING_TO_LINE

REF_AGENT, REF_LINE, REF_WALL, REF_LIGHT = 0, 1, 2, 3
REF_SHIFT = 24
REF_INDEX_MASK = (1 << REF_SHIFT) - 1
MAX_GRID_CELLS = 1 << 22
"""Upper bound on the cells of one map's grid (guards against absurd map extents)."""


@dataclass
class PackedScene:
    """Static geometry of M maps. P lines, Wl walls, T lights, G grid cells, E grid entries."""

    line_a: np.ndarray  # (P, 3) float32 m, first endpoint
    line_b: np.ndarray  # (P, 3) float32 m, second endpoint
    line_kind: np.ndarray  # (P,) int32 LINE_*
    line_half_width: np.ndarray  # (P,) float32 m
    wall_a: np.ndarray  # (Wl, 3) float32 m, base endpoint
    wall_b: np.ndarray  # (Wl, 3) float32 m, base endpoint
    wall_height: np.ndarray  # (Wl,) float32 m
    light_pos: np.ndarray  # (T, 3) float32 m, disk centre
    light_heading: np.ndarray  # (T,) float32 rad, direction the lamp faces
    light_local: np.ndarray  # (T,) int32 light index within its own map
    map_grid_origin: np.ndarray  # (M, 2) float32 m, lower-left corner of the grid
    map_grid_dims: np.ndarray  # (M, 2) int32 cells in x, y
    map_cell_base: np.ndarray  # (M,) int32 first cell of the map in cell_start
    cell_start: np.ndarray  # (G + 1,) int32 CSR offsets into entry_ref
    entry_ref: np.ndarray  # (E,) int32 primitive reference
    entry_min_cell: np.ndarray  # (E, 2) int32 the primitive's lowest cell (x, y)
    entry_cell_x: np.ndarray  # (E,) int32 x of the cell the entry is listed in
    cell_size: float  # m

    @property
    def primitive_count(self) -> int:
        return len(self.line_kind) + len(self.wall_height) + len(self.light_local)


def _map_lines(road_map: RoadMap) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, 2, 3) segments, (n,) LINE_* kinds, (n,) half widths of one map's ground lines."""
    segs, kinds = [], []
    mseg, mkind = road_map.marking_segments()
    unknown = sorted(set(np.unique(mkind).tolist()) - set(MARKING_TO_LINE))
    if unknown:
        raise ValueError(f"RoadMap {road_map.name!r}: marking_kind holds unknown kinds {unknown}")
    segs.append(mseg)
    kinds.append(np.array([MARKING_TO_LINE[int(k)] for k in mkind], np.int32))
    eseg = road_map.road_edge_segments()
    segs.append(eseg)
    kinds.append(np.full(len(eseg), LINE_ROAD_EDGE, np.int32))
    sseg = np.asarray(road_map.stop_line_points, np.float32).reshape(-1, 2, 3)
    segs.append(sseg)
    kinds.append(np.full(len(sseg), LINE_STOP_LINE, np.int32))
    seg = np.concatenate(segs).astype(np.float32).reshape(-1, 2, 3)
    kind = np.concatenate(kinds).astype(np.int32)
    # Zero-length segments draw nothing but would divide by zero in the kernel.
    keep = np.linalg.norm(seg[:, 1, :2] - seg[:, 0, :2], axis=1) > 1e-6
    seg, kind = seg[keep], kind[keep]
    return seg, kind, 0.5 * LINE_WIDTH_M[kind]


def _grid_entries(
    lo: np.ndarray, hi: np.ndarray, refs: np.ndarray, origin: np.ndarray, cell: float, dims: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cells covered by each (lo, hi) box: (cell id, ref, min cell xy) per entry, sorted by cell."""
    c0 = np.clip(np.floor((lo - origin) / cell).astype(np.int64), 0, dims - 1)
    c1 = np.clip(np.floor((hi - origin) / cell).astype(np.int64), 0, dims - 1)
    nx = c1[:, 0] - c0[:, 0] + 1
    ny = c1[:, 1] - c0[:, 1] + 1
    per = nx * ny
    owner = np.repeat(np.arange(len(refs)), per)
    local = np.arange(per.sum()) - np.repeat(np.cumsum(per) - per, per)
    cx = c0[owner, 0] + local % nx[owner]
    cy = c0[owner, 1] + local // nx[owner]
    cell_id = cy * dims[0] + cx
    order = np.argsort(cell_id, kind="stable")
    return cell_id[order], refs[owner][order], c0[owner][order].astype(np.int32)


def pack_scene(road_maps: list[RoadMap], cell_size: float = 16.0) -> PackedScene:
    """Pack the static primitives of ``road_maps`` and build each map's culling grid."""
    if len(road_maps) == 0:
        raise ValueError("road_maps: need at least one RoadMap")
    if not cell_size > 0:
        raise ValueError(f"cell_size must be > 0, got {cell_size}")
    lines_a, lines_b, lines_k, lines_hw = [], [], [], []
    walls_a, walls_b, walls_h = [], [], []
    lights_p, lights_h, lights_l = [], [], []
    origins, dims_all, cell_base = [], [], []
    cell_counts, entries, entry_cells, entry_cell_x = [], [], [], []
    n_line = n_wall = n_light = 0
    total_cells = 0
    for road_map in road_maps:
        seg, kind, hw = _map_lines(road_map)
        wall = np.asarray(road_map.wall_points, np.float32).reshape(-1, 2, 3)
        wall_h = np.asarray(road_map.wall_height, np.float32)
        if len(wall_h) != len(wall):
            raise ValueError(f"RoadMap {road_map.name!r}: wall_height has {len(wall_h)} rows, walls: {len(wall)}")
        if np.any(wall_h <= 0):
            raise ValueError(f"RoadMap {road_map.name!r}: wall_height must be positive")
        lpos = np.asarray(road_map.light_position, np.float32).reshape(-1, 3)
        lhead = np.asarray(road_map.light_heading, np.float32)
        if len(lhead) != len(lpos):
            raise ValueError(f"RoadMap {road_map.name!r}: light_heading has {len(lhead)} rows, lights: {len(lpos)}")
        # Per-primitive x-y bounding boxes (lines padded by their half width).
        lo = [np.minimum(seg[:, 0, :2], seg[:, 1, :2]) - hw[:, None], np.minimum(wall[:, 0, :2], wall[:, 1, :2])]
        hi = [np.maximum(seg[:, 0, :2], seg[:, 1, :2]) + hw[:, None], np.maximum(wall[:, 0, :2], wall[:, 1, :2])]
        lo.append(lpos[:, :2] - 0.5)
        hi.append(lpos[:, :2] + 0.5)
        lo_all = np.concatenate(lo).astype(np.float64)
        hi_all = np.concatenate(hi).astype(np.float64)
        refs = np.concatenate(
            [
                (REF_LINE << REF_SHIFT) | (n_line + np.arange(len(seg))),
                (REF_WALL << REF_SHIFT) | (n_wall + np.arange(len(wall))),
                (REF_LIGHT << REF_SHIFT) | (n_light + np.arange(len(lpos))),
            ]
        ).astype(np.int64)
        if len(refs):
            origin = lo_all.min(0) - cell_size
            extent = hi_all.max(0) + cell_size - origin
        else:
            origin, extent = np.zeros(2), np.full(2, cell_size)
        dims = np.maximum(np.ceil(extent / cell_size).astype(np.int64), 1)
        if dims[0] * dims[1] > MAX_GRID_CELLS:
            raise ValueError(
                f"RoadMap {road_map.name!r}: extent {extent.tolist()} m needs {dims.tolist()} cells of "
                f"{cell_size} m (max {MAX_GRID_CELLS}); raise cell_size"
            )
        cell_id, ref_sorted, min_cell = _grid_entries(lo_all, hi_all, refs, origin, cell_size, dims)
        counts = np.bincount(cell_id, minlength=int(dims[0] * dims[1]))
        origins.append(origin.astype(np.float32))
        dims_all.append(dims.astype(np.int32))
        cell_base.append(total_cells)
        total_cells += int(dims[0] * dims[1])
        cell_counts.append(counts)
        entries.append(ref_sorted)
        entry_cells.append(min_cell)
        entry_cell_x.append(cell_id % dims[0])
        lines_a.append(seg[:, 0])
        lines_b.append(seg[:, 1])
        lines_k.append(kind)
        lines_hw.append(hw)
        walls_a.append(wall[:, 0])
        walls_b.append(wall[:, 1])
        walls_h.append(wall_h)
        lights_p.append(lpos)
        lights_h.append(lhead)
        lights_l.append(np.arange(len(lpos), dtype=np.int32))
        n_line += len(seg)
        n_wall += len(wall)
        n_light += len(lpos)
        if max(n_line, n_wall, n_light) > REF_INDEX_MASK:
            raise ValueError(f"road_maps: more than {REF_INDEX_MASK} primitives of one kind")
    cell_start = np.zeros(total_cells + 1, np.int32)
    cell_start[1:] = np.cumsum(np.concatenate(cell_counts))

    def cat(parts: list[np.ndarray], shape: tuple[int, ...], dtype: type) -> np.ndarray:
        out = np.concatenate(parts) if parts else np.zeros(shape, dtype)
        return np.ascontiguousarray(out.reshape((-1, *shape[1:])), dtype=dtype)

    return PackedScene(
        line_a=cat(lines_a, (0, 3), np.float32),
        line_b=cat(lines_b, (0, 3), np.float32),
        line_kind=cat(lines_k, (0,), np.int32),
        line_half_width=cat(lines_hw, (0,), np.float32),
        wall_a=cat(walls_a, (0, 3), np.float32),
        wall_b=cat(walls_b, (0, 3), np.float32),
        wall_height=cat(walls_h, (0,), np.float32),
        light_pos=cat(lights_p, (0, 3), np.float32),
        light_heading=cat(lights_h, (0,), np.float32),
        light_local=cat(lights_l, (0,), np.int32),
        map_grid_origin=np.stack(origins).astype(np.float32),
        map_grid_dims=np.stack(dims_all).astype(np.int32),
        map_cell_base=np.asarray(cell_base, np.int32),
        cell_start=cell_start,
        entry_ref=cat(entries, (0,), np.int32),
        entry_min_cell=cat(entry_cells, (0, 2), np.int32),
        entry_cell_x=cat(entry_cell_x, (0,), np.int32),
        cell_size=float(cell_size),
    )
