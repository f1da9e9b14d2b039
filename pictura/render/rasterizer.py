"""`Renderer`: every requested ego's camera views from a snapshot history, on the Warp device.

The renderer owns the static scene (all maps packed once, with per-map culling grids) and
takes *view requests* ``(step, slot)`` against a history of snapshots (`pictura.sim.snapshot`:
agent boxes, light states and slot tables), so PPO can re-render minibatches instead of storing
images. ``render`` never synchronises with the host; requests are processed in chunks of
``chunk_size`` so memory stays bounded by the chunk's per-view lists, whatever the number of
requests.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from pictura.maps.roadmap import RoadMap
from pictura.render import common, cull, data, entry_setup, kernels, rank, raster, tuning
from pictura.render.camera import CameraRig
from pictura.render.palette import AGENT_FACE_COLOR, GROUND, LIGHT_COLOR, LINE_COLOR, SKY, WALL
from pictura.render.scene import PackedScene, pack_scene
from pictura.sim.slot_table import check_slot_table_shape, split_slot_table
from pictura.sim.snapshot import BOX_INVALID, BOX_ROW_FLOATS, BoxView, WorldLayout

SCRATCH_MEMORY_SHARE = 0.125
"""Share of the device's free memory an automatically sized chunk's scratch may take."""
SCRATCH_MEMORY_MAX_BYTES = 8 << 30
"""Cap on an automatically sized chunk's scratch (8 GiB: ~70 K requests of 4 views at 96x54)."""
HOST_SCRATCH_MAX_BYTES = 1 << 30
"""Cap on an automatically sized chunk's scratch on the CPU."""
MIN_CHUNK_REQUESTS = 256


GATHER_BLOCK_DIM = tuning.TUNING.gather_block_dim
"""Threads per block of `cull.gather_views` (`RenderTuning.gather_block_dim`): one thread per
view runs a long serial gather and a call has few of them, so small blocks spread them over
every SM at once."""
WIDE_VIEW_PIXELS = {"ramp": 10_000, "exact": 0, "silhouette": 0}
"""Per coverage mode: views of at least this many pixels are drawn by `raster.raster_views_wide`
(spills in shared memory) with `RASTER_WIDE_BANDS_PER_THREAD`, smaller ones by
`raster.raster_views` with `RASTER_BANDS_PER_THREAD`. The ramp mode is faster narrow at 96x54
and wide at 192x108, so its threshold lies between them; the exact and silhouette modes,
which spill more, are faster wide at every size."""


RASTER_BANDS_PER_THREAD = tuning.TUNING.raster_bands_per_thread
"""At most this many bands of one view per raster warp, shaded in turn: a view's bands split
into ceil(bands / this) groups, group j taking every group-count-th band from band j
(`raster.raster_group`; `RenderTuning.raster_bands_per_thread`). Warp's launch preamble and
the thread decode are paid once per group."""
RASTER_WIDE_BANDS_PER_THREAD = tuning.TUNING.raster_wide_bands_per_thread
"""`RASTER_BANDS_PER_THREAD` for views of `WIDE_VIEW_PIXELS` or more
(`RenderTuning.raster_wide_bands_per_thread`)."""


WARP_BINNING_VIEW_PIXELS = 10_000
"""On CUDA, `entry_setup` bins the entries of views of at least this many pixels with
`binning.WarpBinning` (a warp shares its large entries' tiles), smaller ones with
`binning.SoloBinning`: the shared binning pays for large views and costs a little at 96x54,
where a warp's entries are small."""


def background_color(rgb, name: str) -> tuple[float, float, float]:
    """``rgb`` as a linear colour of three floats in [0, 1]; anything else is an error naming
    ``name`` (no clamping: a colour out of range is a mistake in the scene)."""
    try:
        values = tuple(float(x) for x in rgb)
    except (TypeError, ValueError):
        values = ()
    if len(values) != 3 or not all(0.0 <= x <= 1.0 for x in values):
        raise ValueError(f"{name} must be 3 linear RGB floats in [0, 1], got {rgb!r}")
    return values


def _shape(a: wp.array | np.ndarray) -> tuple[int, ...]:
    return tuple(int(x) for x in a.shape)


class Renderer:
    """Perspective rasterizer for a pool of worlds playing on ``road_maps``.

    Args:
        road_maps: the maps; ``layout.world_map`` indexes into this list.
        layout: how slots and lights are cut into worlds. A packed layout's slot ranges change at
            every block reset, so its callers pass the slot-table history to every call.
        rig: the camera rig; its current resolution is read at every ``render`` call.
        device: Warp device ("cpu", "cuda", "cuda:1", ...).
        list_capacity: primitives kept per view after culling (nearest first), K.
        chunk_size: requests rendered per kernel pass (bounds the per-view scratch memory).
            None (the default) sizes it from the device's free memory at each call: the chunk's
            per-view scratch takes at most `SCRATCH_MEMORY_SHARE` of it, capped by
            `SCRATCH_MEMORY_MAX_BYTES` (`HOST_SCRATCH_MAX_BYTES` on the CPU). Wide chunks matter on a GPU: the cull runs a thread per
            view, and a narrow launch waits on its slowest views with most of the GPU idle.
        supersample: rays per pixel along each axis (1 = analytic coverage only; 2 = the 2x2
            supersampled reference mode).
        antialias: analytic-coverage antialiasing; False gives hard 1-sample edges.
        coverage: how antialiased box edges are covered (`kernels.COVERAGE_MODES`):
            "silhouette" (the default, `kernels.DEFAULT_COVERAGE`), the box filter of every
            silhouette edge: the exact area of the silhouette in the pixel (within 0.004 on the
            test and random poses), corners, slivers and roofs along the horizon included; "exact", the box filter of the
            silhouette's screen lines through the face the ray meets (within ~0.003 away from
            its corners on the test poses, not beside faces under ~2 px wide nor on roofs along
            the horizon), a little faster; "ramp", a ramp over the pixel's footprint in each
            face's plane, exact head-on but up to ~0.33 off for faces seen at an angle, the
            fastest (docs/renderer.md, "Coverage modes").
        cell_size: culling grid cell edge (m).
        sky, ground: background colours (linear RGB, each channel in [0, 1]) above and below
            the horizon; `palette.SKY` and `palette.GROUND` by default.
    """

    def __init__(
        self,
        road_maps: list[RoadMap],
        layout: WorldLayout,
        rig: CameraRig,
        device: str = "cpu",
        list_capacity: int = 96,
        chunk_size: int | None = None,
        supersample: int = 1,
        antialias: bool = True,
        coverage: str = kernels.DEFAULT_COVERAGE,
        cell_size: float = 16.0,
        sky: tuple[float, float, float] = SKY,
        ground: tuple[float, float, float] = GROUND,
    ) -> None:
        if list_capacity < 1:
            raise ValueError(f"list_capacity must be >= 1, got {list_capacity}")
        if chunk_size is not None and chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1 or None, got {chunk_size}")
        if supersample not in (1, 2, 3, 4):
            raise ValueError(f"supersample must be 1, 2, 3 or 4, got {supersample}")
        if coverage not in kernels.COVERAGE_MODES:
            raise ValueError(f"coverage must be one of {sorted(kernels.COVERAGE_MODES)}, got {coverage!r}")
        _check_layout(road_maps, layout)
        self.sky = background_color(sky, "sky")
        self.ground = background_color(ground, "ground")
        self.road_maps = list(road_maps)
        self.layout = layout
        self.rig = rig
        self.device = wp.get_device(device)
        self.list_capacity = int(list_capacity)
        self.chunk_size = None if chunk_size is None else int(chunk_size)
        self.supersample = int(supersample)
        self.antialias = bool(antialias)
        self.coverage = coverage
        self.scene: PackedScene = pack_scene(self.road_maps, cell_size)
        self._upload()
        self._scratch_views = 0
        # Unsorted candidates kept per view before ranking (8 bytes each). 2048 holds every view
        # of the 8 CARLA towns at far = 120 m (at most ~970 seen); a view with
        # more continues its ranked buffer with the serial sorted insert (`gather_views` mode
        # 1), so this bounds memory, never the result. A multiple of 4: `rank_lists` reads
        # a large view's bounds in blocks of 4.
        self._cand_capacity = -(-max(2 * self.list_capacity, 2048) // 4) * 4
        # Pass 1 of the cull (both build the same candidate buffer, entry for entry): "lanes", a
        # block of GATHER_LANES threads per view (`cull.gather_lanes`), or "views", one
        # thread per view (`cull.gather_views`, which also serves occlusion queries and the
        # overflowed views). "lanes" keeps a GPU full where a thread per view leaves it mostly
        # idle. The
        # CPU runs a block as one thread, where the lanes would only add the block's
        # bookkeeping: it keeps "views".
        self._gather = "lanes" if self.device.is_cuda else "views"
        # A block of one CUDA warp appends by a ballot (`cull.gather_lanes_warp`).
        self._warp_lanes = self.device.is_cuda and cull.GATHER_LANES == 32
        # Tile binning: 2 = screen rectangle and outline edges, 1 = rectangle, 0 = every tile.
        self._bin_mode = 2
        # `binning.WarpBinning`: None = by view size (`_binning`); entries of more tiles than
        # `_shared_bin_tiles` are binned by their whole CUDA warp (`binning.bin_entry`).
        self._warp_binning: bool | None = None
        self._shared_bin_tiles = tuning.TUNING.shared_bin_tiles
        self._no_mask = wp.zeros((1, 1, 1), dtype=wp.uint32, device=self.device)  # `entry_setup` unbinned
        # Most threads in one launch (Warp's launch extent is a signed 32-bit count).
        self._max_launch = 2**31 - 1

    # ---- setup ------------------------------------------------------------------------
    def _upload(self) -> None:
        dev = self.device
        sc = self.scene

        def arr(x: np.ndarray, dtype) -> wp.array:
            return wp.array(x, dtype=dtype, device=dev)

        scene = data.SceneData()
        scene.line_a = arr(sc.line_a, wp.vec3)
        scene.line_b = arr(sc.line_b, wp.vec3)
        scene.line_kind = arr(sc.line_kind, wp.int32)
        scene.line_half_width = arr(sc.line_half_width, wp.float32)
        scene.wall_a = arr(sc.wall_a, wp.vec3)
        scene.wall_b = arr(sc.wall_b, wp.vec3)
        scene.wall_height = arr(sc.wall_height, wp.float32)
        scene.light_pos = arr(sc.light_pos, wp.vec3)
        scene.light_heading = arr(sc.light_heading, wp.float32)
        scene.light_local = arr(sc.light_local, wp.int32)
        scene.map_grid_origin = arr(sc.map_grid_origin, wp.vec2)
        scene.map_grid_dims = arr(sc.map_grid_dims, wp.int32)
        scene.map_cell_base = arr(sc.map_cell_base, wp.int32)
        scene.cell_start = arr(sc.cell_start, wp.int32)
        scene.entry_ref = arr(sc.entry_ref, wp.int32)
        scene.entry_min_cell = arr(sc.entry_min_cell.reshape(-1, 2), wp.int32)
        scene.entry_cell_x = arr(sc.entry_cell_x, wp.int32)
        scene.cell_size = sc.cell_size
        lay = self.layout
        scene.world_map = arr(np.asarray(lay.world_map, np.int32), wp.int32)
        scene.world_light_start = arr(np.asarray(lay.world_light_start, np.int32), wp.int32)
        scene.num_slots = lay.num_slots
        scene.parked_per_world = lay.parked_per_world
        self._scene_data = scene
        # a static layout's one slot-table row serves every step (`render`'s default)
        self._layout_table = None  # uploaded at first use (`_layout_table_unless`)
        palette = data.Palette()
        palette.face_color = arr(AGENT_FACE_COLOR.reshape(-1, 3), wp.vec3)
        palette.line_color = arr(LINE_COLOR, wp.vec3)
        palette.light_color = arr(LIGHT_COLOR, wp.vec3)
        palette.misc_color = arr(np.array([self.sky, self.ground, WALL], np.float32), wp.vec3)
        self._palette = palette
        # Sky and ground as output bytes, for the raster's empty bands: converted by the same
        # function on the same device as every other pixel, so the bytes are the same.
        misc_bytes = wp.zeros(2, dtype=wp.vec3ub, device=self.device)
        wp.launch(raster.palette_bytes, dim=2, inputs=[palette.misc_color], outputs=[misc_bytes], device=self.device)
        self._sky_rgb, self._ground_rgb = (wp.vec3ub(*rgb) for rgb in misc_bytes.numpy())

    def _scratch_shapes(self) -> dict[str, tuple[tuple[int, ...], type]]:
        """Per-view buffers of a chunk (independent of resolution): attribute -> (shape of one
        view's part, dtype). One table for `_scratch` and `scratch_bytes_per_view`."""
        k = self.list_capacity
        shapes = {
            "_view_origin": ((), wp.vec3),
            "_view_basis": ((), wp.mat33),
            "_view_step": ((), wp.int32),
            "_view_world": ((), wp.int32),
            "_view_ground": ((), wp.float32),
            "_view_ray": ((3,), wp.vec4),
            "_list_ref": ((k,), wp.int32),
            "_list_bound": ((k,), wp.float32),
            "_list_count": ((), wp.int32),
            "_cand_ref": ((self._cand_capacity,), wp.int32),
            "_cand_bound": ((self._cand_capacity,), wp.float32),
            "_cand_count": ((), wp.int32),
            "_rec": ((k,), common.EntryRecord),
        }
        if kernels.STORED_LINES[self.coverage]:
            shapes["_box_lines"] = ((k * kernels.STORED_LINES[self.coverage],), wp.vec4)
        return shapes

    def _scratch(self, views: int) -> None:
        """Allocate the per-view buffers (`_scratch_shapes`) for a chunk of ``views`` views."""
        if views <= self._scratch_views:
            return
        if self._cand_capacity % 4:
            raise ValueError(f"the candidate buffer must hold a multiple of 4 entries, got {self._cand_capacity}")
        for name, (shape, dtype) in self._scratch_shapes().items():
            setattr(self, name, wp.zeros((views, *shape), dtype=dtype, device=self.device))
        self._scratch_views = views
        scratch = data.ViewScratch()
        for field in ("cand_ref", "cand_bound", "cand_count", "list_ref", "list_bound", "list_count", "rec"):
            setattr(scratch, field, getattr(self, f"_{field}"))
        for field in ("origin", "basis", "step", "world", "ground"):
            setattr(scratch, f"view_{field}", getattr(self, f"_view_{field}"))
        self._views = scratch

    def _coverage_mode(self, base: int, count: int):
        """`kernels.coverage_mode` for a launch over the chunk's views base .. base + count - 1,
        with their part of the stored lines where the mode stores lines."""
        lines = None
        if kernels.STORED_LINES[self.coverage]:
            lines = self._box_lines[base : base + count].flatten()
        return kernels.coverage_mode(self.coverage, lines, self.supersample)

    def _tile_mask_shape(self) -> tuple[int, int]:
        """One view's part of the tile masks at the rig's current resolution: (2 bands per 8x8
        tile, one uint32 word per 32 list entries)."""
        tile = common.TILE_PX
        tiles = ((self.rig.width + tile - 1) // tile) * ((self.rig.height + tile - 1) // tile)
        return 2 * tiles, (self.list_capacity + 31) // 32

    def _wide_views(self) -> bool:
        """Whether the rig's views go to `raster.raster_views_wide` (`WIDE_VIEW_PIXELS`)."""
        return self.rig.width * self.rig.height >= WIDE_VIEW_PIXELS[self.coverage]

    def _binning(self) -> str:
        """`kernels.BINNINGS` key of `entry_setup`'s binning: as `_warp_binning` forces it (the
        tests), else "warp" on CUDA for views of `WARP_BINNING_VIEW_PIXELS` or more and "solo"
        otherwise (on the CPU `WarpBinning` bins each entry alone, like `SoloBinning`)."""
        warp = self._warp_binning
        if warp is None:
            warp = self.device.is_cuda and self.rig.width * self.rig.height >= WARP_BINNING_VIEW_PIXELS
        return "warp" if warp else "solo"

    def _raster_launch(self) -> tuple[int, int, int, int, float]:
        """The raster's launch at the rig's current resolution (`raster.raster_launch`: threads
        per view, band groups per view, ...)."""
        bands = RASTER_WIDE_BANDS_PER_THREAD if self._wide_views() else RASTER_BANDS_PER_THREAD
        return raster.raster_launch(self.rig.width, self.rig.height, bands)

    def scratch_bytes_per_view(self) -> int:
        """Device bytes of one view's scratch at the rig's current resolution (`_scratch`,
        `_tile_mask`)."""
        parts = [*self._scratch_shapes().values(), (self._tile_mask_shape(), wp.uint32)]
        return sum(int(np.prod(shape, dtype=np.int64)) * wp.types.type_size_in_bytes(dtype) for shape, dtype in parts)

    def chunk_requests(self, n: int) -> int:
        """Requests per kernel pass for ``n`` requests: ``chunk_size``, or sized from free memory."""
        if self.chunk_size is not None:
            return self.chunk_size
        budget = SCRATCH_MEMORY_MAX_BYTES
        if self.device.is_cuda:
            budget = min(budget, SCRATCH_MEMORY_SHARE * self.device.free_memory)
        else:  # Warp reports no free host memory, and the CPU gains nothing from wide passes
            budget = min(budget, HOST_SCRATCH_MAX_BYTES)
        fits = int(budget // (self.scratch_bytes_per_view() * self.rig.num_cameras))
        # the scratch already allocated is reused, whatever free memory says now
        return max(1, min(n, max(fits, self._scratch_views // self.rig.num_cameras, MIN_CHUNK_REQUESTS)))

    def _tile_mask(self, views: int) -> wp.array:
        """(views, 2 * tiles, words) uint32 screen-bin masks (two bands per tile); sized by chunk
        and resolution."""
        shape = (views, *self._tile_mask_shape())
        mask = getattr(self, "_mask", None)
        if mask is None or mask.shape[0] < views or mask.shape[1:] != shape[1:]:
            self._mask = wp.zeros(shape, dtype=wp.uint32, device=self.device)
        return self._mask

    # ---- public API ---------------------------------------------------------------------
    @property
    def num_cameras(self) -> int:
        return self.rig.num_cameras

    def new_output(self, n_requests: int) -> wp.array:
        """A zeroed ``(n_requests * C, H, W, 3)`` uint8 image array on the device."""
        if n_requests < 0:
            raise ValueError(f"n_requests must be >= 0, got {n_requests}")
        shape = (n_requests * self.rig.num_cameras, self.rig.height, self.rig.width, 3)
        return wp.zeros(shape, dtype=wp.uint8, device=self.device)

    def render(
        self,
        agent_box: wp.array,
        light_state: wp.array,
        requests: wp.array,
        out: wp.array,
        slot_table: wp.array | None = None,
    ) -> None:
        """Draw all C cameras of each requested ego into ``out`` (row ``i * C + c``).

        Args:
            agent_box: ``(T, S + P, BOX_ROW_FLOATS)`` float32 snapshot history.
            light_state: ``(T, layout.light_count)`` int32 LIGHT_* history.
            requests: ``(N, 2)`` int32 rows (step, slot). Invalid egos render black; use
                `validate_requests` on the host to report them.
            out: ``(N * C, H, W, 3)`` uint8, e.g. from `new_output`.
            slot_table: ``(T, S + 2 W)`` int32 slot-table history (`pictura.sim.slot_table`), or
                one row ``(1, S + 2 W)`` for every step: which world owns each slot, and each
                world's slot range, at each step. None uses the layout's own row, which only a
                static layout has (a static layout's table must hold its own ranges).

        Only shapes are checked (no host sync); the work is queued on ``self.device``.
        """
        slot_table = self._layout_table_unless(slot_table)
        n = self._check_inputs(agent_box, light_state, requests, slot_table)
        C, H, W = self.rig.num_cameras, self.rig.height, self.rig.width
        if _shape(out) != (n * C, H, W, 3) or out.dtype != wp.uint8:
            raise ValueError(f"out must be uint8 of shape {(n * C, H, W, 3)}, got {out.dtype} {_shape(out)}")
        if out.device != self.device:
            raise ValueError(f"out is on {out.device}, the renderer on {self.device}")
        if not out.is_contiguous:
            raise ValueError("out must be contiguous (e.g. from new_output)")
        focal = self.rig.focal
        cx, cy = self.rig.principal
        chunk = self.chunk_requests(n)
        threads_per_view, *launch_shape = self._raster_launch()
        # One ray per pixel (the default) has its own kernels: no sample loop, fewer registers.
        narrow, wide, supersampled = kernels.RASTER_KERNELS[self.coverage]
        kernel, pix = wide if self._wide_views() else narrow, 1.0 / focal
        if self.supersample > 1:
            kernel, pix = supersampled, 1.0 / (focal * self.supersample)
        rows = out.reshape((n * C, H * W, 3)).view(wp.vec3ub)  # a row of RGB pixels per image: one index per pixel
        params = raster.RasterParams()
        params.capacity = self.list_capacity
        params.face_color = self._palette.face_color
        params.misc_color = self._palette.misc_color
        params.width, params.height = W, H
        params.pix, params.near, params.far = pix, self.rig.near, self.rig.far
        params.antialias = int(self.antialias)
        params.groups_view, params.group_magic, params.group_shift, params.inv_tiles_x = launch_shape
        params.supersample = self.supersample
        params.sky_rgb, params.ground_rgb = self._sky_rgb, self._ground_rgb  # `raster_views`'s empty bands
        rig = self._rig_data()
        for start in range(0, n, chunk):
            views = min(chunk, n - start) * C
            self._cull(agent_box, light_state, requests, slot_table, start, views, solo_slot=-1)
            for base, count in self._launch_ranges(views, 1):
                wp.launch(
                    raster.view_rays, dim=count, inputs=[self._views, rig, base], outputs=[self._view_ray],
                    device=self.device,
                )  # fmt: skip
            mask = self._tile_mask(views)
            # a launch's lists and masks go flattened (one index per load; contiguous, as
            # `array_io`'s raw loads need), so each must stay below 2^31 elements, as its
            # threads do
            per_view = max(threads_per_view, mask.shape[1] * mask.shape[2], self.list_capacity)
            params.out_offset = start * C
            for base, count in self._launch_ranges(views, per_view):
                params.view_ray = self._view_ray[base : base + count].flatten()
                params.rec = self._rec[base : base + count].flatten()
                params.tile_mask = mask[base : base + count].flatten()
                params.view_base = base
                wp.launch(
                    kernel, dim=count * threads_per_view, inputs=[params, self._coverage_mode(base, count)],
                    outputs=[rows], device=self.device, block_dim=raster.RASTER_BLOCK_DIM,
                )  # fmt: skip

    def render_numpy(
        self,
        agent_box: np.ndarray,
        light_state: np.ndarray,
        requests: np.ndarray,
        slot_table: np.ndarray | None = None,
    ) -> np.ndarray:
        """Host convenience (tools, tests): NumPy in, ``(N, C, H, W, 3)`` uint8 NumPy out.

        ``slot_table`` as in `render`; a 1-D ``(S + 2 W,)`` row serves every step."""
        ab, ls, rq = self._to_device(agent_box, light_state, requests)
        table = None
        if slot_table is not None:
            table = self._table_to_device(self._host_slot_table(slot_table, ab.shape[0]))
        out = self.new_output(rq.shape[0])
        self.render(ab, ls, rq, out, table)
        C, H, W = self.rig.num_cameras, self.rig.height, self.rig.width
        return out.numpy().reshape(rq.shape[0], C, H, W, 3)

    def validate_requests(
        self,
        agent_box: wp.array | np.ndarray,
        requests: wp.array | np.ndarray,
        light_state: wp.array | np.ndarray | None = None,
        slot_table: wp.array | np.ndarray | None = None,
    ) -> None:
        """Host-side check (syncs): every request names an in-range step and a valid ego that
        lies in its world's slot range (``slot_table`` as in `render`).

        Also checks every agent kind is AGENT_* or -1 and, when given, every light state is
        LIGHT_* (the kernels would otherwise draw out-of-range values with a neighbouring colour).
        """
        boxes = agent_box.numpy() if isinstance(agent_box, wp.array) else np.asarray(agent_box)
        req = requests.numpy() if isinstance(requests, wp.array) else np.asarray(requests)
        if light_state is not None:
            ls = light_state.numpy() if isinstance(light_state, wp.array) else np.asarray(light_state)
            bad_ls = (ls < 0) | (ls > 3)
            if bad_ls.any():
                idx = tuple(int(i) for i in np.argwhere(bad_ls)[0])
                raise ValueError(f"light_state{list(idx)} = {ls[idx]} is not a LIGHT_* value (0..3)")
        if req.ndim != 2 or req.shape[1] != 2:
            raise ValueError(f"requests must have shape (N, 2), got {req.shape}")
        if boxes.ndim != 3 or boxes.shape[2] != BOX_ROW_FLOATS:
            raise ValueError(f"agent_box must have shape (T, S + P, {BOX_ROW_FLOATS}), got {boxes.shape}")
        T = boxes.shape[0]
        S, W = self.layout.num_slots, self.layout.num_worlds  # egos are agent slots, never parked-car rows
        table = self._host_slot_table(slot_table, T)
        slot_world, world_start, world_count = split_slot_table(table, S, W)
        for i, (step, slot) in enumerate(req.tolist()):
            if not 0 <= step < T:
                raise ValueError(f"requests[{i}]: step {step} outside 0..{T - 1}")
            if not 0 <= slot < S:
                raise ValueError(f"requests[{i}]: slot {slot} outside 0..{S - 1}")
            if BoxView(boxes[step, slot]).kind == BOX_INVALID:
                raise ValueError(f"requests[{i}]: slot {slot} at step {step} is empty (kind == -1)")
            row = step if len(table) > 1 else 0
            w = slot_world[row, slot]
            if not (0 <= w < W and world_start[row, w] <= slot < world_start[row, w] + world_count[row, w]):
                raise ValueError(
                    f"requests[{i}]: slot {slot} at step {step} lies outside its world {w}'s slot_table range"
                )
        kinds = BoxView(boxes).kind
        bad = ~np.isin(kinds, (BOX_INVALID, 0.0, 1.0, 2.0))
        if bad.any():
            t, s = np.argwhere(bad)[0]
            raise ValueError(f"agent_box[{t}, {s}] kind {kinds[t, s]} is not an AGENT_* value or -1")

    def occlusion_fraction(
        self,
        agent_box: np.ndarray,
        light_state: np.ndarray,
        ego_slot: int,
        target_slot: int,
        slot_table: np.ndarray | None = None,
    ) -> float:
        """Visible fraction of ``target_slot``'s projected area over all of ``ego_slot``'s cameras.

        Renders target-id buffers (pixel centres, no antialiasing) with every occluder
        (agents and walls) and with the target alone; returns visible / unoccluded pixel
        counts, and 0.0 when the target projects to no pixel at all. ``agent_box`` is one step,
        ``(S + P, BOX_ROW_FLOATS)``; ``light_state`` ``(light_count,)`` (lights never occlude);
        ``slot_table`` this step's ``(S + 2 W,)`` row (None: the static layout's own).
        ``target_slot`` may be a parked-car row (>= S); a target in another world gives 0.0.
        """
        boxes = np.asarray(agent_box, np.float32)
        lay = self.layout
        if boxes.ndim != 2 or boxes.shape != (lay.box_count, BOX_ROW_FLOATS):
            raise ValueError(f"agent_box must have shape ({lay.box_count}, {BOX_ROW_FLOATS}), got {boxes.shape}")
        for key, s, rows in (("ego_slot", ego_slot, lay.num_slots), ("target_slot", target_slot, lay.box_count)):
            if not 0 <= s < rows or BoxView(boxes[s]).kind == BOX_INVALID:
                raise ValueError(f"{key} {s} is not a valid agent slot")
        if ego_slot == target_slot:
            raise ValueError("target_slot must differ from ego_slot (the ego is never drawn)")
        if slot_table is not None and np.ndim(slot_table) != 1:
            raise ValueError(f"slot_table must be one step's (S + 2W,) row, got shape {np.shape(slot_table)}")
        table = self._host_slot_table(slot_table, 1)
        slot_world = split_slot_table(table, lay.num_slots, lay.num_worlds)[0][0]
        if target_slot >= lay.num_slots:
            target_world = (target_slot - lay.num_slots) // max(lay.parked_per_world, 1)
        else:
            target_world = slot_world[target_slot]
        if slot_world[ego_slot] != target_world:
            return 0.0
        req = np.array([[0, ego_slot]], np.int32)
        ab, ls, rq = self._to_device(boxes[None], np.asarray(light_state, np.int32).reshape(1, -1), req)
        st = self._table_to_device(table)
        counts = []
        for solo in (-1, target_slot):
            ids = self._id_buffer(ab, ls, rq, st, solo)
            counts.append(int(np.count_nonzero(ids == target_slot)))
        return 0.0 if counts[1] == 0 else counts[0] / counts[1]

    # ---- internals ----------------------------------------------------------------------
    def _launch_ranges(self, views: int, threads_per_view: int) -> list[tuple[int, int]]:
        """(first view, view count) pieces so no launch exceeds ``self._max_launch`` threads."""
        per = max(1, self._max_launch // max(threads_per_view, 1))
        return [(b, min(per, views - b)) for b in range(0, views, per)]

    def _cull(
        self,
        agent_box: wp.array,
        light_state: wp.array,
        requests: wp.array,
        slot_table: wp.array,
        start: int,
        views: int,
        solo_slot: int,
    ) -> None:
        """Per-view camera, depth-sorted primitive list and (unless solo) screen-tile masks."""
        self._scratch(views)
        k, cand = self.list_capacity, self._cand_capacity
        snap = data.SnapshotData()
        snap.agent_box, snap.light_state, snap.slot_table = agent_box, light_state, slot_table
        snap.requests, snap.request_offset = requests, start
        rig, scene = self._rig_data(), self._scene_data
        views_data = self._views
        if self._gather not in ("lanes", "views"):
            raise ValueError(f"_gather must be 'lanes' or 'views', got {self._gather!r}")
        for mode in (0, 1):
            # Mode 0 gathers every view unsorted (the lanes, or a thread per view for the CPU and
            # occlusion queries); mode 1 re-gathers, sorted, only the views whose candidates
            # overflowed the buffer (the other threads return at once).
            if mode == 0 and solo_slot < 0 and self._gather == "lanes":
                for base, count in self._launch_ranges(views, cull.GATHER_LANES):
                    wp.launch_tiled(
                        cull.gather_lanes_warp if self._warp_lanes else cull.gather_lanes, dim=[count],
                        inputs=[snap, rig, scene, -1, 0, base, views_data], device=self.device,
                        block_dim=cull.GATHER_LANES,
                    )  # fmt: skip
            else:
                wp.launch(
                    cull.gather_views, dim=views, inputs=[snap, rig, scene, solo_slot, mode, 0, views_data],
                    device=self.device, block_dim=GATHER_BLOCK_DIM,
                )  # fmt: skip
            if mode == 0:
                # the flattened bounds, like the threads, must stay below 2^31 per launch
                for base, count in self._launch_ranges(views, max(rank.RANK_LANES, cand)):
                    bits = self._cand_bound[base : base + count].flatten().view(wp.int32)
                    wp.launch_tiled(
                        rank.rank_lists,
                        dim=[count],
                        inputs=[
                            self._cand_ref, self._cand_bound, bits.reshape((-1, 4)).view(wp.vec4i), self._cand_count,
                            rank.RANK_BUCKETS / self.rig.far, k, base,
                        ],
                        outputs=[self._list_ref, self._list_bound],
                        device=self.device,
                        block_dim=rank.RANK_LANES,
                    )  # fmt: skip
        binned = int(solo_slot < 0)  # the id buffer walks the whole list: no tile masks
        if binned:
            mask = self._tile_mask(views)
            mask.zero_()  # `entry_setup` ORs each entry's bits in (`binning.bin_entry`)
        else:
            mask = self._no_mask
        views_data.tile_mask = mask
        binning_name = self._binning()
        # The id buffer draws by the ramp (`raster.raster_ids`): its records need no image axes
        # and no stored lines.
        coverage = self.coverage if binned else "ramp"
        mode = self._coverage_mode(0, views) if binned else kernels.coverage_mode(coverage)
        for base, count in self._launch_ranges(views, k):
            wp.launch(
                kernels.ENTRY_SETUP[coverage, binning_name],
                dim=count * k,
                inputs=[
                    snap, rig, scene, self._palette, self._clip_x(), binned, self._bin_mode, self._shared_bin_tiles,
                    mode, kernels.BINNINGS[binning_name](), base, views_data,
                ],
                device=self.device,
                block_dim=entry_setup.ENTRY_SETUP_BLOCK_DIM,
            )  # fmt: skip

    def _rig_data(self) -> data.RigData:
        """The rig at its current resolution, as the kernels take it."""
        rig = data.RigData()
        rig.cam_extr = self._cam_extr()
        rig.num_cams = self.rig.num_cameras
        rig.focal = self.rig.focal
        rig.cx, rig.cy = self.rig.principal
        rig.width, rig.height = float(self.rig.width), float(self.rig.height)
        rig.near, rig.far = self.rig.near, self.rig.far
        return rig

    def _clip_x(self) -> float:
        """Camera-plane depth (m) below which no pixel ray can reach ``near``: half the near
        distance along the most oblique pixel ray. Binning clips outlines there, so nothing it
        drops is ever drawn."""
        cx, cy = self.rig.principal
        f = self.rig.focal
        du = max(cx, self.rig.width - cx)
        dv = max(cy, self.rig.height - cy)
        return 0.5 * self.rig.near * f / float(np.sqrt(f * f + du * du + dv * dv))

    def _cam_extr(self) -> wp.array:
        extr = self.rig.extrinsics()
        cached = getattr(self, "_extr_cache", None)
        if cached is None or not np.array_equal(cached[0], extr):
            self._extr_cache = (extr, wp.array(extr, dtype=wp.float32, device=self.device))
        return self._extr_cache[1]

    def _id_buffer(
        self, agent_box: wp.array, light_state: wp.array, requests: wp.array, slot_table: wp.array, solo_slot: int
    ) -> np.ndarray:
        C, H, W = self.rig.num_cameras, self.rig.height, self.rig.width
        views = requests.shape[0] * C
        self._cull(agent_box, light_state, requests, slot_table, 0, views, solo_slot)
        ids = wp.zeros((views, H, W), dtype=wp.int32, device=self.device)
        wp.launch(
            raster.raster_ids, dim=views * H * W,
            inputs=[self._views, self._rig_data(), self._palette, self._rec.flatten()], outputs=[ids],
            device=self.device,
        )  # fmt: skip
        return ids.numpy()

    def _to_device(
        self, agent_box: np.ndarray, light_state: np.ndarray, requests: np.ndarray
    ) -> tuple[wp.array, wp.array, wp.array]:
        ab = wp.array(np.ascontiguousarray(agent_box, np.float32), dtype=wp.float32, device=self.device)
        ls_np = np.ascontiguousarray(light_state, np.int32)
        if ls_np.ndim == 1:
            ls_np = ls_np[None].repeat(ab.shape[0], 0)
        ls = wp.array(ls_np.reshape(ab.shape[0], self.layout.light_count), dtype=wp.int32, device=self.device)
        rq = wp.array(np.ascontiguousarray(requests, np.int32).reshape(-1, 2), dtype=wp.int32, device=self.device)
        return ab, ls, rq

    def _table_to_device(self, table: np.ndarray) -> wp.array:
        return wp.array(np.ascontiguousarray(table, np.int32), dtype=wp.int32, device=self.device)

    def _layout_table_unless(self, slot_table: wp.array | None) -> wp.array:
        """``slot_table``, or the static layout's own row when None."""
        if slot_table is not None:
            return slot_table
        if self._layout_table is None:
            self._layout_table = self._table_to_device(self.layout.fixed_slot_table("Renderer"))
        return self._layout_table

    def _host_slot_table(self, slot_table: wp.array | np.ndarray | None, steps: int) -> np.ndarray:
        """Host ``(1 or steps, S + 2 W)`` int32 copy of ``slot_table`` (a 1-D row: one step's, for
        every step), or the static layout's own row when None."""
        lay = self.layout
        if slot_table is None:
            return lay.fixed_slot_table("Renderer")
        table = slot_table.numpy() if isinstance(slot_table, wp.array) else np.asarray(slot_table)
        if table.ndim == 1:
            table = table[None]
        check_slot_table_shape(table.shape, steps, lay.num_slots, lay.num_worlds)
        if not np.issubdtype(table.dtype, np.integer):
            raise ValueError(f"slot_table must hold integers (int32), got {table.dtype}")
        return table.astype(np.int32)

    def _check_inputs(
        self, agent_box: wp.array, light_state: wp.array, requests: wp.array, slot_table: wp.array
    ) -> int:
        S, Lc = self.layout.box_count, self.layout.light_count
        if agent_box.ndim != 3 or agent_box.shape[1:] != (S, BOX_ROW_FLOATS) or agent_box.dtype != wp.float32:
            raise ValueError(f"agent_box must be float32 (T, {S}, {BOX_ROW_FLOATS}), got {agent_box.dtype} {_shape(agent_box)}")
        T = agent_box.shape[0]
        if light_state.ndim != 2 or _shape(light_state) != (T, Lc) or light_state.dtype != wp.int32:
            raise ValueError(f"light_state must be int32 ({T}, {Lc}), got {light_state.dtype} {_shape(light_state)}")
        if requests.ndim != 2 or requests.shape[1] != 2 or requests.dtype != wp.int32:
            raise ValueError(f"requests must be int32 (N, 2), got {requests.dtype} {_shape(requests)}")
        if not isinstance(slot_table, wp.array):
            raise ValueError(f"slot_table must be a wp.array, got {type(slot_table).__name__}")
        check_slot_table_shape(slot_table.shape, T, self.layout.num_slots, self.layout.num_worlds)
        if slot_table.dtype != wp.int32:
            raise ValueError(f"slot_table must be int32, got {slot_table.dtype}")
        for name, a in (
            ("agent_box", agent_box), ("light_state", light_state), ("requests", requests), ("slot_table", slot_table)
        ):
            if a.device != self.device:
                raise ValueError(f"{name} is on {a.device}, the renderer on {self.device}")
            if not a.is_contiguous:
                raise ValueError(f"{name} must be contiguous")
        return int(requests.shape[0])


def _check_layout(road_maps: list[RoadMap], layout: WorldLayout) -> None:
    if len(road_maps) == 0:
        raise ValueError("road_maps: need at least one RoadMap")
    wm = np.asarray(layout.world_map)
    if wm.min() < 0 or wm.max() >= len(road_maps):
        raise ValueError(f"layout.world_map holds a map index outside 0..{len(road_maps) - 1}")
    if layout.parked_per_world < 0:
        raise ValueError(f"layout.parked_per_world must be >= 0, got {layout.parked_per_world}")
    for w in range(layout.num_worlds):
        n_lights = len(road_maps[wm[w]].light_position)
        if layout.world_light_start[w] + n_lights > layout.light_count:
            raise ValueError(
                f"layout.world_light_start[{w}] + {n_lights} lights of map {wm[w]} exceeds light_count "
                f"{layout.light_count}"
            )
    if layout.is_packed:
        return  # its slot arrays are only the state before the first reset; ranges come per call
    starts = np.asarray(layout.world_slot_start)
    counts = np.asarray(layout.world_slot_count)
    if np.any(starts < 0) or np.any(starts + counts > layout.num_slots):
        raise ValueError("layout.world_slot_start/world_slot_count reach outside the slot pool")
    sw = np.asarray(layout.slot_world)
    for w in range(layout.num_worlds):
        if np.any(sw[starts[w] : starts[w] + counts[w]] != w):
            raise ValueError(f"layout.slot_world disagrees with world {w}'s slot range")
