"""Per-map uniform 2-D grids (CSR of segment ids per cell) so map queries stay local.

A segment is listed in every cell its axis-aligned bounding box touches; a query walks the
cells of its own bounding box, so it may meet a segment twice (queries are min/any, so
duplicates are harmless) but never misses one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import warp as wp

GRID_MARGIN_M = 20.0
"""Grid extends this far beyond the map's geometry so agents just off the map still find edges."""
MIN_CELL_M = 8.0
MAX_CELLS_PER_AXIS = 1024


@dataclass
class Grid:
    """One map's grid: cell (ix, iy) covers [origin + (ix, iy) * cell, ... + cell)."""

    origin: np.ndarray  # (2,) m
    cell: float  # m
    nx: int
    ny: int


def grid_for_bounds(lo: np.ndarray, hi: np.ndarray) -> Grid:
    """A grid covering the (2,) box [lo, hi] plus `GRID_MARGIN_M`, cells >= `MIN_CELL_M`."""
    lo = np.asarray(lo[:2], np.float64) - GRID_MARGIN_M
    hi = np.asarray(hi[:2], np.float64) + GRID_MARGIN_M
    extent = float(max(hi[0] - lo[0], hi[1] - lo[1]))
    cell = max(MIN_CELL_M, extent / MAX_CELLS_PER_AXIS)
    nx = max(1, int(np.ceil((hi[0] - lo[0]) / cell)))
    ny = max(1, int(np.ceil((hi[1] - lo[1]) / cell)))
    return Grid(origin=lo.astype(np.float32), cell=float(cell), nx=nx, ny=ny)


def bin_segments(grid: Grid, seg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(offsets (nx*ny + 1,), items (K,))`` of the ``(N, 2, 3)`` segment ids per cell.

    Cells are numbered ``iy * nx + ix``; ids are local to ``seg``.
    """
    ncell = grid.nx * grid.ny
    if len(seg) == 0:
        return np.zeros(ncell + 1, np.int32), np.zeros(0, np.int32)
    xy = seg[:, :, :2].astype(np.float64)
    lo = np.floor((xy.min(1) - grid.origin) / grid.cell).astype(np.int64)
    hi = np.floor((xy.max(1) - grid.origin) / grid.cell).astype(np.int64)
    lo[:, 0] = np.clip(lo[:, 0], 0, grid.nx - 1)
    hi[:, 0] = np.clip(hi[:, 0], 0, grid.nx - 1)
    lo[:, 1] = np.clip(lo[:, 1], 0, grid.ny - 1)
    hi[:, 1] = np.clip(hi[:, 1], 0, grid.ny - 1)
    span = hi - lo + 1
    count = span[:, 0] * span[:, 1]
    seg_id = np.repeat(np.arange(len(seg), dtype=np.int64), count)
    k = np.arange(len(seg_id)) - np.repeat(np.cumsum(count) - count, count)
    sx = np.repeat(span[:, 0], count)
    ix = np.repeat(lo[:, 0], count) + k % sx
    iy = np.repeat(lo[:, 1], count) + k // sx
    cell_id = iy * grid.nx + ix
    order = np.argsort(cell_id, kind="stable")
    offsets = np.zeros(ncell + 1, np.int64)
    offsets[1:] = np.cumsum(np.bincount(cell_id, minlength=ncell))
    return offsets.astype(np.int32), seg_id[order].astype(np.int32)


@wp.func
def clamped_cells(lo: wp.vec2, hi: wp.vec2, origin: wp.vec2, cell: float, nx: int, ny: int) -> wp.vec4i:
    """Inclusive cell rectangle (ix0, iy0, ix1, iy1) of a grid (``origin``, ``cell``, ``nx`` x
    ``ny``) under the box [lo, hi], clamped into the grid (`bin_segments` clamps what lies off
    the grid to its border cells, so a clamped query still finds it)."""
    return wp.vec4i(
        wp.clamp(int(wp.floor((lo[0] - origin[0]) / cell)), 0, nx - 1),
        wp.clamp(int(wp.floor((lo[1] - origin[1]) / cell)), 0, ny - 1),
        wp.clamp(int(wp.floor((hi[0] - origin[0]) / cell)), 0, nx - 1),
        wp.clamp(int(wp.floor((hi[1] - origin[1]) / cell)), 0, ny - 1),
    )


@wp.func
def cell_walk(cells: wp.vec4i, base: int, nx: int) -> wp.vec4i:
    """The cells of the inclusive rectangle ``cells`` (ix0, iy0, ix1, iy1: `clamped_cells`) of a
    grid ``nx`` cells wide whose cell (0, 0) has id ``base``, as (first id, columns, nx, count):
    a query visits them with ``for i in range(walk[3]): cell = walk_cell(walk, i)``."""
    columns = cells[2] - cells[0] + 1
    return wp.vec4i(base + cells[1] * nx + cells[0], columns, nx, columns * (cells[3] - cells[1] + 1))


@wp.func
def walk_cell(walk: wp.vec4i, i: int) -> int:
    """Id of cell ``i`` (0 .. ``walk[3]`` - 1) of a `cell_walk`, row by row (x fastest)."""
    return walk[0] + (i // walk[1]) * walk[2] + i % walk[1]
