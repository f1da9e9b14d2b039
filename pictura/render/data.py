"""The structs the render kernels take, so that a launch passes a few named bundles.

`Renderer` fills them once per call (`Renderer._launch_data`): `SceneData` (the static scene and
its culling grids, all maps packed), `Palette` (the colours), `RigData` (the cameras at the
current resolution), `SnapshotData` (the snapshot history and the chunk's requests) and
`ViewScratch` (the chunk's per-view buffers, which the stages write and read in turn). A kernel
reads a field where it needs it; the arrays are the same device buffers the positional
arguments were, so a struct changes what a launch looks like, not what it computes.
"""

from __future__ import annotations

import warp as wp

from pictura.render.common import EntryRecord
from pictura.render.tuning import MODULE_OPTIONS

wp.set_module_options(MODULE_OPTIONS)


@wp.struct
class SceneData:
    """The static scene of every map, packed (`scene.pack_scene`), with each map's culling grid,
    and the layout's per-world tables."""

    line_a: wp.array(dtype=wp.vec3)
    line_b: wp.array(dtype=wp.vec3)
    line_half_width: wp.array(dtype=wp.float32)
    line_kind: wp.array(dtype=wp.int32)
    wall_a: wp.array(dtype=wp.vec3)
    wall_b: wp.array(dtype=wp.vec3)
    wall_height: wp.array(dtype=wp.float32)
    light_pos: wp.array(dtype=wp.vec3)
    light_heading: wp.array(dtype=wp.float32)
    light_local: wp.array(dtype=wp.int32)  # the light's index within its map's lights
    # per map: its grid's origin (m), (nx, ny) cells and first cell in cell_start
    map_grid_origin: wp.array(dtype=wp.vec2)
    map_grid_dims: wp.array2d(dtype=wp.int32)
    map_cell_base: wp.array(dtype=wp.int32)
    # per cell its first grid entry; per entry its REF_* reference, first cell (x, y) and cell x
    cell_start: wp.array(dtype=wp.int32)
    entry_ref: wp.array(dtype=wp.int32)
    entry_min_cell: wp.array2d(dtype=wp.int32)
    entry_cell_x: wp.array(dtype=wp.int32)
    cell_size: float
    # layout: each world's map and first light; S agent slots, then P parked rows per world
    world_map: wp.array(dtype=wp.int32)
    world_light_start: wp.array(dtype=wp.int32)
    num_slots: int
    parked_per_world: int


@wp.struct
class Palette:
    """Colours (linear RGB): per (agent kind, face), per line kind, per light state, and sky,
    ground and wall (`misc_color` rows 0, 1, 2)."""

    face_color: wp.array(dtype=wp.vec3)
    line_color: wp.array(dtype=wp.vec3)
    light_color: wp.array(dtype=wp.vec3)
    misc_color: wp.array(dtype=wp.vec3)


@wp.struct
class RigData:
    """The camera rig at the current resolution: each camera's mount (`CameraRig.extrinsics`:
    x, y, z, yaw, pitch) and the shared intrinsics (px) and clip distances (m)."""

    cam_extr: wp.array2d(dtype=wp.float32)
    num_cams: int
    focal: float
    cx: float
    cy: float
    width: float
    height: float
    near: float
    far: float


@wp.struct
class SnapshotData:
    """The snapshot history (`pictura.sim.snapshot`) and the requests of the chunk: view v of the
    chunk is camera v % C of request ``request_offset + v / C``."""

    agent_box: wp.array3d(dtype=wp.float32)
    light_state: wp.array2d(dtype=wp.int32)
    slot_table: wp.array2d(dtype=wp.int32)
    requests: wp.array2d(dtype=wp.int32)
    request_offset: int


@wp.struct
class ViewScratch:
    """A chunk's per-view buffers, indexed by view: the cull's candidates (``cand_*``, the
    buffer's capacity its second dimension), the view's camera, the ranked list (``list_*``,
    ``K`` its second dimension), each entry's record and the tile masks (`binning.bin_entry`)."""

    cand_ref: wp.array2d(dtype=wp.int32)
    cand_bound: wp.array2d(dtype=wp.float32)
    cand_count: wp.array(dtype=wp.int32)
    view_origin: wp.array(dtype=wp.vec3)
    view_basis: wp.array(dtype=wp.mat33)
    view_step: wp.array(dtype=wp.int32)
    view_world: wp.array(dtype=wp.int32)  # -1: an invalid request, drawn black
    view_ground: wp.array(dtype=wp.float32)
    list_ref: wp.array2d(dtype=wp.int32)
    list_bound: wp.array2d(dtype=wp.float32)
    list_count: wp.array(dtype=wp.int32)
    rec: wp.array2d(dtype=EntryRecord)
    tile_mask: wp.array3d(dtype=wp.uint32)
