"""Stage 1, cull: each view's camera and its candidate primitives with a lower bound on their
ray distance.

A *view* is one (request, camera) pair; views of a chunk are numbered
``v = (request - request_offset) * C + camera``. `gather_lanes` (a block of `GATHER_LANES`
threads per view, CUDA) and `gather_views` (a thread per view: the CPU's path, the occlusion
query's and the sorted second pass of views that overflowed the candidate buffer) walk the
ego's world's agents, its parked cars and the grid cells under the camera's horizontal field
of view, keeping what a bounding-sphere test leaves inside the frustum, in the same order.
"""

# Warp needs `x = int(0)` / `float(0.0)` to declare a local it mutates in a loop (a bare
# literal becomes a constant), hence UP018 is off in this file.
# ruff: noqa: UP018

from __future__ import annotations

import warp as wp

from pictura.render.common import (
    _LIGHT_RADIUS,
    _REF_AGENT,
    _REF_LINE,
    _REF_MASK,
    _REF_SHIFT,
    _REF_WALL,
    append_offsets_ballot,
    light_visibility,
)
from pictura.render.data import RigData, SceneData, SnapshotData, ViewScratch
from pictura.render.tuning import MODULE_OPTIONS, TUNING
from pictura.sim.grid import (
    clamped_cells,
)
from pictura.sim.slot_table import (
    table_row,
    table_slot_world,
    table_world_count,
    table_world_start,
)
from pictura.sim.snapshot import BoxCol

wp.set_module_options(MODULE_OPTIONS)


@wp.func
def sphere_bound(
    c: wp.vec3,
    r: float,
    o: wp.vec3,
    basis: wp.mat33,
    focal: float,
    cx: float,
    cy: float,
    width: float,
    height: float,
    near: float,
    far: float,
) -> float:
    """Lower bound (m) on the ray distance to a sphere inside the view frustum, or -1 if culled."""
    rel = c - o
    dist = wp.length(rel)
    if dist - r > far:
        return -1.0
    xc = wp.dot(rel, basis[0])
    yc = wp.dot(rel, basis[1])
    zc = wp.dot(rel, basis[2])
    if xc + r < near:
        return -1.0
    # Inward frustum side planes through the camera centre, in pixel units.
    if (cx * xc - focal * yc) / wp.sqrt(cx * cx + focal * focal) < -r:
        return -1.0
    if ((width - cx) * xc + focal * yc) / wp.sqrt((width - cx) * (width - cx) + focal * focal) < -r:
        return -1.0
    if (cy * xc - focal * zc) / wp.sqrt(cy * cy + focal * focal) < -r:
        return -1.0
    if ((height - cy) * xc + focal * zc) / wp.sqrt((height - cy) * (height - cy) + focal * focal) < -r:
        return -1.0
    return wp.max(dist - r, 0.0)


@wp.func
def list_insert(
    list_ref: wp.array2d(dtype=wp.int32),
    list_bound: wp.array2d(dtype=wp.float32),
    v: int,
    n: int,
    cap: int,
    ref: int,
    bound: float,
) -> int:
    """Insert into view ``v``'s list (sorted by bound, stable); returns the new count."""
    if n == cap:
        if bound >= list_bound[v, cap - 1]:
            return n
    i = wp.min(n, cap - 1)
    while i > 0:
        if list_bound[v, i - 1] <= bound:
            break
        list_bound[v, i] = list_bound[v, i - 1]
        list_ref[v, i] = list_ref[v, i - 1]
        i -= 1
    list_bound[v, i] = bound
    list_ref[v, i] = ref
    return wp.min(n + 1, cap)


@wp.func
def sector_extent(o: wp.vec3, yaw: float, half: float, far: float) -> wp.vec4:
    """x-y bounding box (xmin, ymin, xmax, ymax) of a circular sector of radius ``far``."""
    lo_x = o[0]
    lo_y = o[1]
    hi_x = o[0]
    hi_y = o[1]
    for k in range(2):
        a = yaw - half + 2.0 * half * float(k)
        px = o[0] + far * wp.cos(a)
        py = o[1] + far * wp.sin(a)
        lo_x = wp.min(lo_x, px)
        hi_x = wp.max(hi_x, px)
        lo_y = wp.min(lo_y, py)
        hi_y = wp.max(hi_y, py)
    for k in range(4):
        a = 0.5 * wp.pi * float(k)
        diff = wp.atan2(wp.sin(a - yaw), wp.cos(a - yaw))
        if wp.abs(diff) <= half:
            lo_x = wp.min(lo_x, o[0] + far * wp.cos(a))
            hi_x = wp.max(hi_x, o[0] + far * wp.cos(a))
            lo_y = wp.min(lo_y, o[1] + far * wp.sin(a))
            hi_y = wp.max(hi_y, o[1] + far * wp.sin(a))
    return wp.vec4(lo_x, lo_y, hi_x, hi_y)


@wp.func
def camera_origin(agent_box: wp.array3d(dtype=wp.float32), step: int, slot: int, cam_extr: wp.array2d(dtype=wp.float32), cam: int) -> wp.vec3:
    """World position of camera ``cam`` mounted on ego ``slot``."""
    ch = wp.cos(agent_box[step, slot, BoxCol.HEADING])
    sh = wp.sin(agent_box[step, slot, BoxCol.HEADING])
    mx = cam_extr[cam, 0]
    my = cam_extr[cam, 1]
    return wp.vec3(
        agent_box[step, slot, BoxCol.X] + ch * mx - sh * my, agent_box[step, slot, BoxCol.Y] + sh * mx + ch * my,
        agent_box[step, slot, BoxCol.Z] + cam_extr[cam, 2],
    )  # fmt: skip


@wp.func
def camera_basis(yaw: float, pitch: float) -> wp.mat33:
    """Rows: forward, left, up (world frame)."""
    fwd = wp.vec3(wp.cos(pitch) * wp.cos(yaw), wp.cos(pitch) * wp.sin(yaw), -wp.sin(pitch))
    left = wp.vec3(-wp.sin(yaw), wp.cos(yaw), 0.0)
    up = wp.cross(fwd, left)
    return wp.mat33(fwd[0], fwd[1], fwd[2], left[0], left[1], left[2], up[0], up[1], up[2])


@wp.func
def agent_bound(
    agent_box: wp.array3d(dtype=wp.float32),
    step: int,
    s: int,
    o: wp.vec3,
    basis: wp.mat33,
    focal: float,
    cx: float,
    cy: float,
    width: float,
    height: float,
    near: float,
    far: float,
) -> float:
    """Candidate bound of snapshot row ``s`` (agent or parked car), -1 if empty or culled."""
    if agent_box[step, s, BoxCol.KIND] < 0.0:
        return -1.0
    bl = agent_box[step, s, BoxCol.LENGTH]
    bw = agent_box[step, s, BoxCol.WIDTH]
    bh = agent_box[step, s, BoxCol.HEIGHT]
    c = wp.vec3(agent_box[step, s, BoxCol.X], agent_box[step, s, BoxCol.Y], agent_box[step, s, BoxCol.Z] + 0.5 * bh)
    rad = 0.5 * wp.sqrt(bl * bl + bw * bw + bh * bh)
    return sphere_bound(c, rad, o, basis, focal, cx, cy, width, height, near, far)


@wp.func
def static_bound(
    ref: int,
    scene: SceneData,
    o: wp.vec3,
    basis: wp.mat33,
    focal: float,
    cx: float,
    cy: float,
    width: float,
    height: float,
    near: float,
    far: float,
) -> float:
    """Candidate bound of a static primitive (line, wall, light), -1 if culled."""
    kind = ref >> _REF_SHIFT
    i = ref & _REF_MASK
    c = wp.vec3(0.0)
    rad = float(0.0)
    if kind == _REF_LINE:
        c = 0.5 * (scene.line_a[i] + scene.line_b[i])
        rad = 0.5 * wp.length(scene.line_b[i] - scene.line_a[i]) + scene.line_half_width[i]
    elif kind == _REF_WALL:
        hl = 0.5 * wp.length(scene.wall_b[i] - scene.wall_a[i])
        hh = 0.5 * scene.wall_height[i]
        c = 0.5 * (scene.wall_a[i] + scene.wall_b[i]) + wp.vec3(0.0, 0.0, hh)
        rad = wp.sqrt(hl * hl + hh * hh)
    else:
        if light_visibility(scene.light_pos[i], scene.light_heading[i], o) <= 0.0:
            return -1.0
        c = scene.light_pos[i]
        rad = _LIGHT_RADIUS
    return sphere_bound(c, rad, o, basis, focal, cx, cy, width, height, near, far)


@wp.func
def grid_query(
    o: wp.vec3,
    yaw: float,
    focal: float,
    cx: float,
    width: float,
    far: float,
    org: wp.vec2,
    nx: int,
    ny: int,
    cell_size: float,
) -> wp.vec4i:
    """Cell rectangle (qx0, qy0, qx1, qy1), inclusive, under the camera's horizontal field of view."""
    half = wp.max(wp.atan(cx / focal), wp.atan((width - cx) / focal))
    box = sector_extent(o, yaw, wp.min(half, 0.5 * wp.pi), far)
    return clamped_cells(wp.vec2(box[0], box[1]), wp.vec2(box[2], box[3]), org, cell_size, nx, ny)


@wp.func
def first_in_query(entry_min_cell: wp.array2d(dtype=wp.int32), e: int, gx: int, gy: int, q: wp.vec4i) -> bool:
    """Whether grid entry ``e``, listed in cell (gx, gy), is where a query over the cell rectangle
    ``q`` takes its primitive: the first cell of ``q`` the primitive overlaps, so a primitive
    spanning several cells is visited once."""
    return gx == wp.max(entry_min_cell[e, 0], q[0]) and gy == wp.max(entry_min_cell[e, 1], q[1])


@wp.struct
class ViewCamera:
    """View v's request and camera (`view_camera`); ``valid`` 0 for an invalid request."""

    valid: int
    step: int
    slot: int
    row: int  # of the slot-table history at the request's step
    world: int
    origin: wp.vec3
    yaw: float
    basis: wp.mat33


@wp.func
def view_camera(snap: SnapshotData, rig: RigData, num_slots: int, v: int) -> ViewCamera:
    """The request and camera of view v (request ``request_offset + v / num_cams``). An invalid
    request (a step outside the history, a slot outside the layout or empty) renders black;
    `Renderer.validate_requests` reports it on the host."""
    agent_box = snap.agent_box
    c = ViewCamera()
    num_cams = rig.num_cams
    r = snap.request_offset + v / num_cams
    cam = v - (v / num_cams) * num_cams
    c.step = snap.requests[r, 0]
    c.slot = snap.requests[r, 1]
    c.valid = 0
    if c.step < 0 or c.step >= agent_box.shape[0] or c.slot < 0 or c.slot >= num_slots:
        return c
    if agent_box[c.step, c.slot, BoxCol.KIND] < 0.0:
        return c
    c.valid = 1
    c.row = table_row(snap.slot_table, c.step)
    c.world = table_slot_world(snap.slot_table, c.row, c.slot)
    c.origin = camera_origin(agent_box, c.step, c.slot, rig.cam_extr, cam)
    c.yaw = agent_box[c.step, c.slot, BoxCol.HEADING] + rig.cam_extr[cam, 3]
    c.basis = camera_basis(c.yaw, rig.cam_extr[cam, 4])
    return c


@wp.func
def store_view(c: ViewCamera, agent_box: wp.array3d(dtype=wp.float32), v: int, views: ViewScratch):
    """The per-view outputs of a gather for a valid view ``c``."""
    views.view_origin[v] = c.origin
    views.view_basis[v] = c.basis
    views.view_step[v] = c.step
    views.view_world[v] = c.world
    views.view_ground[v] = agent_box[c.step, c.slot, BoxCol.Z]


GATHER_LANES = TUNING.gather_lanes
"""Threads of `gather_lanes` per view (`RenderTuning.gather_lanes`). On the CPU Warp runs a
block as one thread unless ``wp.config.enable_cpu_blocks`` is set."""


@wp.func
def append_offsets_scan(keep: int, lane: int) -> wp.vec2i:
    """(kept lanes below ``lane``, kept lanes) of the block (every thread calls it): one
    block-wide scan; the inclusive count less the lane's own is its offset, and the last lane's
    inclusive count is the round's total (a scan and a sum cost two)."""
    kept = wp.tile_scan_inclusive(wp.tile(keep))
    return wp.vec2i(wp.untile(kept) - keep, kept[wp.block_dim() - 1])


@wp.func
def append_offsets_alone(keep: int, lane: int) -> wp.vec2i:
    """`append_offsets_scan` for a thread that gathers its view alone (``lane`` 0 of 1)."""
    return wp.vec2i(0, keep)


def _gather_kernel(append_offsets, name: str, lanes_per_view: bool):
    """The cull's gather with ``append_offsets`` (`append_offsets_alone`, `append_offsets_scan`
    or `append_offsets_ballot`) placing each round's kept candidates: one body, three kernels
    (``name`` is what profiles and ptxas call it). ``lanes_per_view``: launched tiled, a block
    of threads per view (`gather_lanes`), else a thread per view (`gather_views`)."""

    @wp.func
    def gather_append(
        keep: int, lane: int, ref: int, bound: float, n: int, v: int, mode: int, views: ViewScratch
    ) -> int:  # fmt: skip
        """Cooperative (every thread of the view calls it): the kept candidates of one round
        (one per lane) take candidate numbers ``n``, ``n + 1``, ... in lane order, as a serial
        loop over the round would; returns ``n`` plus their number (the same in every lane).

        Mode 0 writes a candidate to the buffer while there is room (the count keeps growing
        past its capacity). Mode 1, for a view that overflowed the buffer and whose list already
        holds the ranked buffer (the stable insertion sort's state after the buffer's
        candidates), insertion-sorts only the candidates past the buffer (`list_insert`)."""
        o = append_offsets(keep, lane)
        at = n + o[0]
        if keep == 1:
            cand_cap = views.cand_ref.shape[1]
            if at < cand_cap:
                if mode == 0:
                    views.cand_ref[v, at] = ref
                    views.cand_bound[v, at] = bound
            elif mode == 1:
                capacity = views.list_ref.shape[1]
                list_insert(views.list_ref, views.list_bound, v, wp.min(at, capacity), capacity, ref, bound)
        return n + o[1]

    @wp.func
    def gather_view(
        i: int,
        lane: int,
        lanes: int,
        snap: SnapshotData,
        rig: RigData,
        scene: SceneData,
        solo_slot: int,
        mode: int,
        view_base: int,
        views: ViewScratch,
    ):
        """Lane ``lane`` of ``lanes`` (every one calls it) of the gather of view ``view_base + i``:
        its candidates, each with a lower bound on its ray distance: the world's agents (never
        the ego itself), its parked cars, then the static primitives of the grid cells under the
        camera's horizontal field of view, row by row, each row's cells one contiguous run of
        entries. ``solo_slot`` >= 0 gathers that
        agent only (the occlusion query). Mode 0 appends every candidate unsorted; mode 1 redoes
        only the views whose candidates overflowed the buffer: `rank.rank_lists` ranked the
        buffer into the list, a bounded sorted insert adds the candidates past it.

        Each round takes one candidate per lane and appends the survivors in lane order
        (`gather_append`), so the buffer, its count and hence every image are the same whether a
        view is walked by one thread or by a block (a thread per view leaves a GPU with a few
        warps per SM; a block per view keeps it full)."""
        v = view_base + i
        agent_box = snap.agent_box
        if mode == 1:
            if views.cand_count[v] <= views.cand_ref.shape[1]:
                return
        if lane == 0:
            if mode == 0:
                views.cand_count[v] = 0
            views.list_count[v] = 0
            views.view_world[v] = -1
            views.view_step[v] = 0
        c = view_camera(snap, rig, scene.num_slots, v)
        if c.valid == 0:
            return  # the same for every thread of the view: all return or none does
        if lane == 0:
            store_view(c, agent_box, v, views)
        focal = rig.focal
        cx = rig.cx
        cy = rig.cy
        width = rig.width
        height = rig.height
        near = rig.near
        far = rig.far
        n = int(0)
        # Agents of the ego's world (never the ego itself), then the world's parked cars: the
        # snapshot rows after the S slots, drawn like agents.
        s0 = table_world_start(snap.slot_table, c.row, scene.num_slots, c.world)
        count = table_world_count(snap.slot_table, c.row, scene.num_slots, c.world)
        parked = scene.parked_per_world
        p0 = scene.num_slots + c.world * parked
        # while loops: `range` with the runtime step ``lanes`` tests its sign on every pass
        k = int(0)
        while k < count + parked:
            j = k + lane
            k += lanes
            s = wp.where(j < count, s0 + j, p0 + j - count)
            b = float(-1.0)
            if j < count + parked and s != c.slot and (solo_slot < 0 or s == solo_slot):
                b = agent_bound(agent_box, c.step, s, c.origin, c.basis, focal, cx, cy, width, height, near, far)
            n = gather_append(wp.where(b >= 0.0, 1, 0), lane, (_REF_AGENT << _REF_SHIFT) | s, b, n, v, mode, views)
        if solo_slot < 0:
            m = scene.world_map[c.world]
            nx = scene.map_grid_dims[m, 0]
            q = grid_query(
                c.origin, c.yaw, focal, cx, width, far, scene.map_grid_origin[m], nx, scene.map_grid_dims[m, 1],
                scene.cell_size,
            )  # fmt: skip
            base = scene.map_cell_base[m]
            for gy in range(q[1], q[3] + 1):
                e1 = scene.cell_start[base + gy * nx + q[2] + 1]
                e0 = scene.cell_start[base + gy * nx + q[0]]
                while e0 < e1:
                    e = e0 + lane
                    e0 += lanes
                    b = float(-1.0)
                    ref = int(0)
                    if e < e1:
                        if first_in_query(scene.entry_min_cell, e, scene.entry_cell_x[e], gy, q):
                            ref = scene.entry_ref[e]
                            b = static_bound(ref, scene, c.origin, c.basis, focal, cx, cy, width, height, near, far)
                    n = gather_append(wp.where(b >= 0.0, 1, 0), lane, ref, b, n, v, mode, views)
        if lane == 0:
            # Mode 1 leaves the count (a count past the buffer flags the overflow) as mode 0 wrote it.
            if mode == 0:
                views.cand_count[v] = n
            views.list_count[v] = wp.min(n, views.list_ref.shape[1])


    if lanes_per_view:

        @wp.kernel(name=name, module="unique", module_options=MODULE_OPTIONS)
        def gather(
            snap: SnapshotData,
            rig: RigData,
            scene: SceneData,
            solo_slot: int,
            mode: int,
            view_base: int,
            views: ViewScratch,
        ):
            """`gather_view` by a block of threads per view (`wp.launch_tiled`)."""
            i, lane = wp.tid()
            gather_view(i, lane, wp.block_dim(), snap, rig, scene, solo_slot, mode, view_base, views)

    else:

        @wp.kernel(name=name, module="unique", module_options=MODULE_OPTIONS)
        def gather(
            snap: SnapshotData,
            rig: RigData,
            scene: SceneData,
            solo_slot: int,
            mode: int,
            view_base: int,
            views: ViewScratch,
        ):
            """`gather_view` by a thread per view (`wp.launch`)."""
            gather_view(wp.tid(), 0, 1, snap, rig, scene, solo_slot, mode, view_base, views)

    return gather


gather_views = _gather_kernel(append_offsets_alone, "gather_views", lanes_per_view=False)
"""The cull with a thread per view (`wp.launch`): the CPU's path, the occlusion query's
(``solo_slot``) and the second pass (mode 1) of views whose candidates overflowed the buffer."""
gather_lanes = _gather_kernel(append_offsets_scan, "gather_lanes", lanes_per_view=True)
"""The cull's first pass with a block of `GATHER_LANES` threads per view (`wp.launch_tiled`,
any block size; the CPU with ``wp.config.enable_cpu_blocks``)."""
gather_lanes_warp = _gather_kernel(append_offsets_ballot, "gather_lanes_warp", lanes_per_view=True)
"""`gather_lanes` for blocks of one CUDA warp (`GATHER_LANES` = 32, the default): the rounds
append by a warp ballot instead of a block scan (fewer registers)."""
