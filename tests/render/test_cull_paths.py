"""The parallel cull (unsorted gather + rank), its overflow fallback, launch splitting and the
raster thread order: each must leave the images unchanged (device "cpu")."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from pictura.maps import load_road_map
from pictura.maps.roadmap import pack_polylines
from pictura.render import CameraRig, Renderer, common, rank, raster, scene, tuning
from pictura.render.camera import Camera
from pictura.render.demo import spawn_snapshot
from pictura.sim.snapshot import WorldLayout
from tests.render.conftest import boxes, empty_map, layout


@pytest.fixture(scope="module")
def town():
    """Two worlds of the procedural town, 12 demo agents each, every agent an ego."""
    road_map = load_road_map("procedural:seed=0")
    layout = WorldLayout.uniform([0, 0], 12, [len(road_map.light_position)])
    boxes = np.concatenate([spawn_snapshot(road_map, 12, 12, seed=w) for w in range(2)])[None]
    lights = np.random.default_rng(0).integers(0, 3, (1, layout.light_count)).astype(np.int32)
    requests = np.stack([np.zeros(24, np.int32), np.arange(24, dtype=np.int32)], 1)
    return road_map, layout, boxes, lights, requests


def make(town, width=32, height=18, **kw) -> Renderer:
    road_map, layout = town[0], town[1]
    return Renderer([road_map], layout, CameraRig(width=width, height=height), **kw)


def check_ranking_ties(capacity: int, far: float, device: str) -> None:
    """Hand-made buffers: many equal bounds (0.0 among them), counts that end inside a block of 4
    and on one, and two past what `rank_lists` sorts in shared memory; bounds beyond ``far``
    (they share the last distance bucket), in one bucket or spread over several. Each view's
    list must be NumPy's stable sort, cut at the capacity. (Also run on CUDA: tests/gpu.)"""
    rng = np.random.default_rng(3)
    cand_cap = rank.RANK_SHARED_KEYS + 8
    counts = np.array([cand_cap, cand_cap - 3, 40, 37, 13, 4, 3, 1, 0] + [33] * 30 + [64, 65, 97], np.int32)
    bound = rng.choice(np.array([0.0, 0.5, 0.5000001, 2.0, 7.25], np.float32), (len(counts), cand_cap))
    bound[-33:] = rng.uniform(0.0, 1.2 * far, (33, cand_cap)).astype(np.float32)  # mostly distinct
    ref = rng.permutation(len(counts) * cand_cap).astype(np.int32).reshape(len(counts), cand_cap)
    list_ref = wp.full((len(counts), capacity), -1, dtype=wp.int32, device=device)
    list_bound = wp.zeros((len(counts), capacity), dtype=wp.float32, device=device)
    cand_ref = wp.array(ref, dtype=wp.int32, device=device)
    cand_count = wp.array(counts, dtype=wp.int32, device=device)
    bits4 = wp.array(bound.reshape(-1, 4).view(np.int32), dtype=wp.vec4i, device=device)
    wp.launch_tiled(
        rank.rank_lists, dim=[len(counts)],
        inputs=[
            cand_ref, wp.array(bound, dtype=wp.float32, device=device), bits4, cand_count,
            rank.RANK_BUCKETS / far, capacity, 0,
        ],
        outputs=[list_ref, list_bound], device=device, block_dim=rank.RANK_LANES,
    )  # fmt: skip
    for v, n in enumerate(counts):
        order = np.argsort(bound[v, :n], kind="stable")[:capacity]
        kept = min(n, capacity)
        assert np.array_equal(list_ref.numpy()[v, :kept], ref[v, order]), v
        assert np.array_equal(list_bound.numpy()[v, :kept], bound[v, order]), v
        assert (list_ref.numpy()[v, kept:] == -1).all()


@pytest.mark.parametrize("far", [0.6, 8.0, 120.0])
@pytest.mark.parametrize("capacity", [1, 5, 12, 40, 96])
def test_ranking_breaks_ties_by_gather_order_in_every_block_position(capacity, far):
    check_ranking_ties(capacity, far, "cpu")


def test_ranked_list_is_the_stable_sort_of_the_candidates(town):
    _, _, boxes, lights, requests = town
    r = make(town, list_capacity=24)
    r.render_numpy(boxes, lights, requests)
    cand_ref, cand_bound = r._cand_ref.numpy(), r._cand_bound.numpy()
    cand_n, ref, bound, n = r._cand_count.numpy(), r._list_ref.numpy(), r._list_bound.numpy(), r._list_count.numpy()
    views = len(requests) * r.num_cameras
    assert cand_n[:views].max() > 24, "the scene must overflow the list so truncation is tested"
    for v in range(views):
        m = cand_n[v]
        assert m <= r._cand_capacity
        order = np.argsort(cand_bound[v, :m], kind="stable")[:24]  # NumPy reference: stable sort
        assert n[v] == min(m, 24)
        assert np.array_equal(ref[v, : n[v]], cand_ref[v, order])
        assert np.array_equal(bound[v, : n[v]], cand_bound[v, order])


@pytest.mark.parametrize("cand_capacity", [4, 24, 40])
def test_overflowed_views_get_the_stable_sort_of_all_their_candidates(town, cand_capacity):
    # Reference: a buffer that holds every candidate in gather order, sorted stably by NumPy.
    # A view that overflows a small buffer ranks the buffer, then insertion-sorts the rest into
    # the list: the same list and images with the buffer below, at and above the list capacity.
    _, _, boxes, lights, requests = town
    full = make(town, list_capacity=24)
    small = make(town, list_capacity=24)
    small._cand_capacity = cand_capacity
    images = [r.render_numpy(boxes, lights, requests) for r in (full, small)]
    views = len(requests) * full.num_cameras
    n = full._cand_count.numpy()[:views]
    assert n.max() <= full._cand_capacity
    assert np.array_equal(small._cand_count.numpy()[:views], n)
    assert (n > cand_capacity).mean() > 0.3, "most views must overflow the small buffer"
    cand_ref, cand_bound = full._cand_ref.numpy(), full._cand_bound.numpy()
    ref, bound, count = small._list_ref.numpy(), small._list_bound.numpy(), small._list_count.numpy()
    for v in range(views):
        order = np.argsort(cand_bound[v, : n[v]], kind="stable")[:24]
        assert count[v] == len(order)
        assert np.array_equal(ref[v, : count[v]], cand_ref[v, order])
        assert np.array_equal(bound[v, : count[v]], cand_bound[v, order])
    assert np.array_equal(images[1], images[0])


def test_a_view_past_the_default_buffer_gets_the_stable_sort_of_all_its_candidates():
    # Markings every 0.5 m across the field ahead, cut into 2 m segments: the front camera
    # gathers more candidates than the default buffer holds (and than RANK_SHARED_KEYS, so `rank_lists`
    # counts in global memory). Reference: a buffer that holds them all, sorted stably by NumPy.
    lines = [np.array([[x, y, 0.0] for x in np.arange(1.0, 120.0, 2.0)]) for y in np.arange(-30.0, 30.1, 0.5)]
    pts, off = pack_polylines(lines)
    road_map = empty_map(marking_points=pts, marking_offsets=off, marking_kind=np.zeros(len(lines), np.int32))
    box = boxes(1, {0: (0.0, 0.0, 0.0, 0.0, 4.5, 1.9, 1.5, 0.0)})
    lights, request = np.zeros((1, 0), np.int32), np.array([[0, 0]])
    renderers = [Renderer([road_map], layout(1, 1), CameraRig(width=48, height=27)) for _ in range(2)]
    renderers[0]._cand_capacity = 16384
    images = [r.render_numpy(box, lights, request) for r in renderers]
    n = renderers[0]._cand_count.numpy()[:4]
    assert n.max() <= renderers[0]._cand_capacity
    assert n[0] > renderers[1]._cand_capacity > rank.RANK_SHARED_KEYS
    cand_ref, cand_bound = renderers[0]._cand_ref.numpy(), renderers[0]._cand_bound.numpy()
    k = renderers[0].list_capacity
    for r in renderers:
        ref, bound, count = r._list_ref.numpy(), r._list_bound.numpy(), r._list_count.numpy()
        for v in range(4):
            order = np.argsort(cand_bound[v, : n[v]], kind="stable")[:k]
            assert count[v] == len(order)
            assert np.array_equal(ref[v, : count[v]], cand_ref[v, order])
            assert np.array_equal(bound[v, : count[v]], cand_bound[v, order])
    assert np.array_equal(images[1], images[0])


@pytest.mark.parametrize("cpu_blocks", [False, True])
@pytest.mark.parametrize("cand_capacity", [512, 40])
def test_parallel_gather_builds_the_serial_candidate_buffer(town, cand_capacity, cpu_blocks, monkeypatch):
    # A block of lanes per view, appending each round in lane order, gives the
    # one-thread-per-view gather's buffer entry for entry (same order); with a small buffer the
    # overflowed views take the same sorted-insert path. On the CPU Warp runs a block as one
    # thread unless `enable_cpu_blocks` is set: then the lanes are GATHER_LANES threads, as on
    # a GPU (tests/gpu/test_cuda_render.py checks the same on CUDA).
    monkeypatch.setattr(wp.config, "enable_cpu_blocks", cpu_blocks)
    _, _, boxes, lights, requests = town
    # and invalid requests (no slot, a step past the history): black views, world -1
    requests = np.concatenate([requests, [[0, -1], [3, 0]]]).astype(np.int32)
    out, bufs = [], []
    for way in ("lanes", "views"):
        r = make(town, width=40, height=20, list_capacity=24)
        r._cand_capacity = cand_capacity
        r._gather = way
        out.append(r.render_numpy(boxes, lights, requests))
        n = r._cand_count.numpy()
        views = len(requests) * r.num_cameras
        bufs.append((n[:views], r._cand_ref.numpy()[:views], r._list_ref.numpy()[:views], r._list_count.numpy()[:views]))
        assert (r._view_world.numpy()[views - 2 * r.num_cameras : views] == -1).all()
        assert not out[-1][-2:].any()
    assert np.array_equal(out[0], out[1])
    (n0, c0, l0, k0), (n1, c1, l1, k1) = bufs
    assert np.array_equal(n0, n1) and np.array_equal(k0, k1) and np.array_equal(l0, l1)
    for v in range(len(n0)):
        if n0[v] <= cand_capacity:
            assert np.array_equal(c0[v, : n0[v]], c1[v, : n1[v]])
    assert (n0 > cand_capacity).any() == (cand_capacity == 40)


@pytest.mark.parametrize(
    "width,height,coverage",
    # the second: partial tiles in both axes; the third: each launch reads its own views' part
    # of the silhouette mode's stored lines (`Renderer._coverage_mode`)
    [(40, 24, "exact"), (37, 21, "exact"), (37, 21, "silhouette")],
)
def test_split_launches_do_not_change_the_image(town, width, height, coverage):
    _, _, boxes, lights, requests = town
    whole = make(town, width=width, height=height, coverage=coverage).render_numpy(boxes, lights, requests)
    # A few views per launch, a ragged last piece: for the gather (960 threads per view), then
    # for `entry_setup` and the raster too (96: the list capacity).
    for max_launch in (3 * 64 * 15 + 7, 2 * 96 + 7):
        split = make(town, width=width, height=height, chunk_size=5, coverage=coverage)
        split._max_launch = max_launch
        assert np.array_equal(split.render_numpy(boxes, lights, requests), whole)


@pytest.mark.parametrize(
    ("width", "height", "kw"),
    [(37, 21, {}), (104, 100, {}), (37, 21, {"supersample": 2}), (37, 21, {"coverage": "silhouette"})],
)
def test_raster_thread_shape_does_not_change_the_image(town, width, height, kw, monkeypatch):
    # One band per thread is the reference; a ragged group (3 bands), the default group, and the
    # wide-view kernel (its own register budget and group) must give the same bytes.
    from pictura.render import rasterizer

    _, _, boxes, lights, requests = town
    images = []
    for wide_pixels, bands in ((10**9, 1), (10**9, 3), (10**9, 16), (1, 32)):
        monkeypatch.setattr(rasterizer, "WIDE_VIEW_PIXELS", dict.fromkeys(rasterizer.WIDE_VIEW_PIXELS, wide_pixels))
        monkeypatch.setattr(rasterizer, "RASTER_BANDS_PER_THREAD", bands)
        monkeypatch.setattr(rasterizer, "RASTER_WIDE_BANDS_PER_THREAD", bands)
        images.append(make(town, width=width, height=height, **kw).render_numpy(boxes, lights, requests))
    for image in images[1:]:
        assert np.array_equal(image, images[0])


@pytest.mark.parametrize(
    ("width", "height", "kw"),
    [
        (96, 54, {}), (37, 21, {}), (40, 20, {"supersample": 2}), (40, 20, {"antialias": False}),
        (37, 21, {"coverage": "exact", "supersample": 2}), (96, 54, {"coverage": "silhouette"}),
        (40, 20, {"coverage": "silhouette", "supersample": 2}),
    ],  # fmt: skip
)
def test_tight_tile_bins_drop_nothing_that_is_drawn(town, width, height, kw):
    # Every entry in every tile is the reference: the screen rectangle and outline edges of
    # the binning (clipped at the camera plane) may only drop entries that draw nothing there.
    _, _, boxes, lights, requests = town
    images = {}
    for mode in (0, 1, 2):
        r = make(town, width=width, height=height, **kw)
        r._bin_mode = mode
        images[mode] = r.render_numpy(boxes, lights, requests)
    assert np.array_equal(images[1], images[0])
    assert np.array_equal(images[2], images[0])
    # The edges do cut work: fewer (tile, entry) pairs than the rectangles alone.
    r = make(town, width=width, height=height, **kw)
    counts = []
    for mode in (1, 2):
        r._bin_mode = mode
        r.render_numpy(boxes, lights, requests)
        counts.append(np.unpackbits(r._mask.numpy().view(np.uint8)).sum())
    assert counts[1] < counts[0]


@pytest.mark.parametrize("coverage", ["ramp", "exact"])
def test_warp_binning_on_the_cpu_bins_each_entry_alone(town, coverage):
    # `binning.WarpBinning` is compiled for the CPU too, where there are no warps: every entry
    # must bin itself, the same mask words as `SoloBinning` (tests/gpu checks the CUDA sharing).
    _, _, boxes, lights, requests = town
    masks = {}
    for warp in (False, True):
        r = make(town, width=96, height=54, coverage=coverage)
        r._warp_binning = warp
        r._shared_bin_tiles = 0  # every entry would share, if there were a warp
        assert r._binning() == ("warp" if warp else "solo")
        r.render_numpy(boxes, lights, requests)
        masks[warp] = r._mask.numpy()[: len(requests) * r.num_cameras]
    assert masks[False].any()
    assert np.array_equal(masks[True], masks[False])
    assert make(town, width=192, height=108)._binning() == "solo"  # auto: "warp" only on CUDA


def test_tight_bins_hold_off_axis_in_a_wide_rig(town):
    # A 135-degree lens with its principal point off centre: a pixel near the border spans a
    # third of the angle of one at the principal point, so the band margins (`bin_margin`) grow
    # there. Every entry in every tile (mode 0) is the reference.
    road_map, layout, boxes, lights, requests = town
    images = {}
    for mode in (0, 2):
        rig = CameraRig(width=64, height=36, focal_px=400.0, principal_point=(700.0, 400.0))
        r = Renderer([road_map], layout, rig)
        r._bin_mode = mode
        images[mode] = r.render_numpy(boxes, lights, requests)
    assert np.array_equal(images[2], images[0])


def test_launch_ranges_cover_every_view_once():
    r = Renderer.__new__(Renderer)
    r._max_launch = 2**31 - 1
    ranges = r._launch_ranges(32768, 384 * 216)
    assert all(c * 384 * 216 <= 2**31 - 1 for _, c in ranges)
    assert len(ranges) > 1
    covered = np.concatenate([np.arange(b, b + c) for b, c in ranges])
    assert np.array_equal(covered, np.arange(32768))


def test_bad_requests_and_cameras_are_named(town):
    _, layout, boxes, _, _ = town
    r = make(town)
    with pytest.raises(ValueError, match="slot 24 outside"):
        r.validate_requests(boxes, np.array([[0, 24]]))
    with pytest.raises(ValueError, match="slot -1 outside"):
        r.validate_requests(boxes, np.array([[0, -1]]))
    with pytest.raises(ValueError, match="step -1 outside"):
        r.validate_requests(boxes, np.array([[-1, 0]]))
    with pytest.raises(ValueError, match="step 1 outside"):
        r.validate_requests(boxes, np.array([[1, 0]]))
    with pytest.raises(ValueError, match="focal_px"):
        CameraRig(focal_px=-10.0)
    with pytest.raises(ValueError, match="height"):
        CameraRig(width=96, height=4097)
    with pytest.raises(ValueError, match="width"):
        CameraRig().set_resolution(8192, 54)


@wp.kernel
def _group_of_thread(
    tids: wp.array(dtype=wp.int32), groups_view: int, magic: int, shift: int, out: wp.array(dtype=wp.vec3i)
):
    i = wp.tid()
    out[i] = raster.band_group(tids[i], groups_view, magic, shift)


@wp.kernel
def _pixel_of_band(
    bands: wp.array(dtype=wp.int32), tiles_x: int, inv_tiles_x: float, out: wp.array2d(dtype=wp.vec2i)
):
    i, lane = wp.tid()
    out[i, lane] = raster.band_pixel(bands[i], lane, tiles_x, inv_tiles_x)


@pytest.mark.parametrize("width,height", [(32, 18), (96, 54), (100, 7), (4096, 4096), (4096, 1)])
@pytest.mark.parametrize("bands_per_thread", [1, 3, 16])
def test_raster_thread_decode_is_exact_integer_division(width, height, bands_per_thread):
    """band_group and band_pixel divide by the group count (a multiply and shift) and the
    tile count (a reciprocal);
    compare with integer division over the whole int32 launch range (a launch holds < 2^31
    threads) and over a view's bands, with every band's 32 lanes covering its 8 x 4 pixels."""
    threads_view, groups, magic, shift, inv_tiles_x = raster.raster_launch(width, height, bands_per_thread)
    tiles_x, tiles_y = -(-width // 8), -(-height // 8)
    assert groups == -(-2 * tiles_x * tiles_y // bands_per_thread) and threads_view == 32 * groups
    rng = np.random.default_rng(0)
    last_view = (2**31 - 1) // threads_view
    views = np.concatenate([[0, 1, last_view - 1, last_view - 2], rng.integers(0, last_view - 1, 200)])
    within = np.concatenate([[0, 31, 32, threads_view - 1, threads_view - 32], rng.integers(0, threads_view, 200)])
    tids = (views[:, None] * threads_view + within[None, :]).reshape(-1).astype(np.int64)
    tids = tids[(tids >= 0) & (tids < 2**31)].astype(np.int32)
    out = wp.zeros(len(tids), dtype=wp.vec3i, device="cpu")
    wp.launch(
        _group_of_thread,
        dim=len(tids),
        inputs=[wp.array(tids, dtype=wp.int32, device="cpu"), groups, magic, shift],
        outputs=[out],
        device="cpu",
    )
    warp = tids.astype(np.int64) // 32
    np.testing.assert_array_equal(out.numpy(), np.stack([warp // groups, warp % groups, tids % 32], axis=1))

    bands = np.arange(2 * tiles_x * tiles_y)
    if len(bands) > 4096:
        bands = np.concatenate([bands[:64], bands[-64:], rng.choice(bands, 2048, replace=False)])
    pix = wp.zeros((len(bands), 32), dtype=wp.vec2i, device="cpu")
    wp.launch(
        _pixel_of_band,
        dim=(len(bands), 32),
        inputs=[wp.array(bands, dtype=wp.int32, device="cpu"), tiles_x, inv_tiles_x],
        outputs=[pix],
        device="cpu",
    )
    lane = np.arange(32)[None, :]
    tile = bands[:, None] // 2
    px = (tile % tiles_x) * 8 + lane % 8
    py = (tile // tiles_x) * 8 + (bands[:, None] % 2) * 4 + lane // 8
    np.testing.assert_array_equal(pix.numpy()[..., 0], px)
    np.testing.assert_array_equal(pix.numpy()[..., 1], py)


def test_tuning_knobs_name_a_bad_value():
    # An environment override names its variable, a field set in code names the field.
    from_env = tuning.RenderTuning.from_env
    with pytest.raises(ValueError, match="PICTURA_RASTER_BLOCK_DIM must be a positive multiple of 32"):
        from_env({"PICTURA_RASTER_BLOCK_DIM": "100"})
    assert from_env({"PICTURA_RASTER_BLOCK_DIM": "256"}).raster_block_dim == 256
    assert from_env({}) == tuning.RenderTuning()
    with pytest.raises(ValueError, match="PICTURA_RASTER_WIDE_MAX_REGISTERS must be an integer"):
        from_env({"PICTURA_RASTER_WIDE_MAX_REGISTERS": "lots"})
    for bad in ("0", "33"):  # a group's bands are the bits of one uint32 (`group_occupancy`)
        with pytest.raises(ValueError, match=r"PICTURA_RASTER_BANDS_PER_THREAD must be an integer in \[1, 32\]"):
            from_env({"PICTURA_RASTER_BANDS_PER_THREAD": bad})
    assert from_env({"PICTURA_RENDER_FAST_MATH": "0"}).fast_math is False
    with pytest.raises(ValueError, match=r"RenderTuning.gather_lanes must be a positive multiple of 32"):
        tuning.RenderTuning(gather_lanes=48)


PITCHED = [
    Camera("down", 1.6, 0.0, 1.5, 0.0, pitch_deg=-8.0),
    Camera("up_left", 1.6, 0.1, 1.5, 40.0, pitch_deg=6.0),
    Camera("level_back", -0.5, 0.0, 1.4, 180.0),
    Camera("high", 0.0, 0.0, 4.0, -70.0, pitch_deg=-25.0),
]


@pytest.mark.parametrize(
    ("cameras", "width", "height", "far"),
    [
        (PITCHED, 37, 21, 40.0), (PITCHED, 96, 54, 40.0), (PITCHED, 64, 36, 120.0),
        # level cameras: the band of rows 28-31 sees its plane within 32 m only in its last row
        (None, 96, 54, 32.0),
    ],
)  # fmt: skip
def test_line_first_row_drops_nothing_that_is_drawn(town, cameras, width, height, far):
    # The ground lines' first row (`entry_setup.line_first_row`) follows the camera's pitch and
    # height; every entry in every tile (mode 0) is the reference.
    road_map, layout, boxes, lights, requests = town
    images = {}
    for mode in (0, 2):
        r = Renderer([road_map], layout, CameraRig(cameras=cameras, width=width, height=height, far=far))
        r._bin_mode = mode
        images[mode] = r.render_numpy(boxes, lights, requests)
    assert np.array_equal(images[2], images[0])


def test_line_first_row_keeps_ground_lines_out_of_bands_that_see_the_plane_beyond_far(town):
    # Level cameras: a line on the plane h m below the camera can draw only at pixel centres at
    # least |h| focal / far px below the principal point (the ray meets its plane within far).
    # With the edges (mode 2) no band whose pixel centres all lie above that row may hold the
    # line (NumPy reference); screen rectangles alone (mode 1) do put lines there.
    road_map, layout, boxes, lights, requests = town
    rig = CameraRig(width=96, height=54, far=60.0)
    views = len(requests) * rig.num_cameras
    cy = rig.principal[1]
    violations = {}
    for mode in (1, 2):
        r = Renderer([road_map], layout, rig)
        r._bin_mode = mode
        r.render_numpy(boxes, lights, requests)
        rec = r._rec.numpy()[:views]
        count = r._list_count.numpy()[:views]
        masks = r._mask.numpy()[:views]  # (views, bands, words)
        bits = np.unpackbits(masks.view(np.uint8).reshape(*masks.shape, 4), axis=-1, bitorder="little")
        binned = bits.reshape(views, masks.shape[1], -1)[..., : r.list_capacity].astype(bool)
        band = np.arange(masks.shape[1])
        tiles_x = -(-rig.width // common.TILE_PX)
        lowest_centre = (band // 2) // tiles_x * common.TILE_PX + (band % 2) * common.TILE_PX // 2 + 3.5
        checked = bad = 0
        for v in range(views):
            for k in range(count[v]):
                if int(rec[v, k]["r2"][3]) != scene.REF_LINE:
                    continue
                h = float(rec[v, k]["r1"][1])
                first_row = cy + max(-h, 0.0) * rig.focal / rig.far - common.BIN_CENTRE_SLACK_PX
                bad += int((lowest_centre[binned[v, :, k]] < first_row).sum())
                checked += 1
        assert checked > 100
        violations[mode] = bad
    assert violations[2] == 0
    assert violations[1] > 0


def test_ground_lines_bin_only_to_bands_near_their_projection(town):
    # NumPy reference: project each line entry's end points with the view's camera; every band
    # the line is binned to must come within the line's reach of that segment's screen
    # rectangle: the strip's projected half width, the 1.5 px end margin, the largest band
    # margin and half a pixel. This holds for lines too short to have an outline (a dash under
    # a pixel in area) too: they must not take both bands of every tile their rectangle touches.
    road_map, layout, boxes, lights, requests = town
    rig = CameraRig(width=96, height=54)
    r = Renderer([road_map], layout, rig)
    r.render_numpy(boxes, lights, requests)
    views = len(requests) * rig.num_cameras
    rec = r._rec.numpy()[:views]
    count = r._list_count.numpy()[:views]
    basis = r._view_basis.numpy()[:views]
    masks = r._mask.numpy()[:views]
    bits = np.unpackbits(masks.view(np.uint8).reshape(*masks.shape, 4), axis=-1, bitorder="little")
    binned = bits.reshape(views, masks.shape[1], -1)[..., : r.list_capacity].astype(bool)
    band = np.arange(masks.shape[1])
    tiles_x = -(-rig.width // common.TILE_PX)
    bu0 = (band // 2) % tiles_x * common.TILE_PX
    bw0 = (band // 2) // tiles_x * common.TILE_PX + (band % 2) * (common.TILE_PX // 2)
    f, (cx, cy) = rig.focal, rig.principal
    checked = 0
    for v in range(views):
        for k in range(count[v]):
            e = rec[v, k]
            if int(e["r2"][3]) != scene.REF_LINE:
                continue
            a = np.array([e["r0"][0], e["r0"][1], e["r1"][1]], np.float64)
            ends = [a, a + e["r1"][0] * np.array([e["r0"][2], e["r0"][3], 0.0])]
            cam = [basis[v].astype(np.float64) @ p for p in ends]
            if min(c[0] for c in cam) < 1.0:
                continue  # near or behind the camera plane: clipped outlines, whole-screen bins
            us = [cx - f * c[1] / c[0] for c in cam]
            ws = [cy - f * c[2] / c[0] for c in cam]
            reach = float(e["r1"][2]) * f / min(c[0] for c in cam) + common.BIN_LINE_MARGIN_PX + 0.5 + 0.5
            for b in np.flatnonzero(binned[v, :, k]):
                assert bu0[b] - reach <= max(us) and min(us) <= bu0[b] + common.TILE_PX + reach, (v, k, b)
                assert bw0[b] - reach <= max(ws) and min(ws) <= bw0[b] + common.TILE_PX // 2 + reach, (v, k, b)
            checked += 1
    assert checked > 100


@wp.kernel
def _occupancy_of_groups(
    mask: wp.array(dtype=wp.uint32), words: int, bands: int, bands_per_thread: int, groups: int,
    out: wp.array(dtype=wp.uint32),
):
    # a warp per (view, band group), as in the raster: group j holds bands j, j + groups, ...
    # and lane b reads the group's band b
    tid = wp.tid()
    v = tid / (groups * 32)
    grp = (tid - v * groups * 32) / 32
    lane = tid & 31
    mask_row = v * bands * words
    lane_bits = wp.uint32(0)
    if grp + lane * groups < bands:
        lane_bits = raster.band_bits(mask, mask_row + (grp + lane * groups) * words, words)
    occupied = raster.group_occupancy(lane_bits, mask, mask_row, grp, groups, bands, words)
    if lane == 0:
        out[v * groups + grp] = occupied


def check_group_occupancy(device: str, bands_per_thread: int):
    # NumPy reference: bit b of group g is set when any mask word of band g + b * groups is
    # non-zero (the last groups may hold one band fewer; sparse masks leave many bands empty).
    rng = np.random.default_rng(bands_per_thread)
    views, bands, words = 3, 37, 3
    mask = np.where(rng.random((views, bands, words)) < 0.15, rng.integers(1, 2**32, (views, bands, words)), 0)
    mask[1] = 0  # an empty view
    mask[2, :, 0] = 0  # entries only in the later words
    groups = -(-bands // bands_per_thread)
    out = wp.zeros(views * groups, dtype=wp.uint32, device=device)
    wp.launch(
        _occupancy_of_groups,
        dim=views * groups * 32,
        inputs=[wp.array(mask.astype(np.uint32).ravel(), dtype=wp.uint32, device=device), words, bands, bands_per_thread, groups],
        outputs=[out],
        device=device,
    )
    expect = np.zeros((views, groups), np.uint64)
    for v in range(views):
        for band in range(bands):
            if mask[v, band].any():
                expect[v, band % groups] |= np.uint64(1) << np.uint64(band // groups)
    np.testing.assert_array_equal(out.numpy().reshape(views, groups), expect.astype(np.uint32))


@pytest.mark.parametrize("bands_per_thread", [1, 5, 16, 32])
def test_group_occupancy_sets_a_bit_per_band_with_an_entry(bands_per_thread):
    check_group_occupancy("cpu", bands_per_thread)


@pytest.mark.gpu
@pytest.mark.parametrize("bands_per_thread", [1, 5, 16, 32])
def test_group_occupancy_warp_ballot_on_cuda(bands_per_thread):
    check_group_occupancy("cuda", bands_per_thread)


def test_division_magic_is_exact_for_every_warp_index():
    # Every divisor up to 5,000 (a view's band groups: 4096x4096 at one band per thread is
    # 524,288; checked below) against Python's //, at the ends of the 26-bit warp range, at
    # the multiples of the divisor and one either side of them, and at random points.
    rng = np.random.default_rng(1)
    top = 2**26 - 1
    for d in [*range(1, 5001), 524_288, 524_287, 99_991]:
        m, k = raster.division_magic(d)
        assert 0 < m <= 2**27 and top * m < 2**63
        q = rng.integers(0, top // d + 1, 64)
        w = np.concatenate([[0, 1, top, top - 1], rng.integers(0, top + 1, 64), q * d, q * d - 1, q * d + 1])
        w = w[(w >= 0) & (w <= top)].astype(object)  # Python ints: exact products
        assert all((x * m) >> k == x // d for x in w), d
    with pytest.raises(ValueError, match="divisor"):
        raster.division_magic(0)
