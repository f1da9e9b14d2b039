"""The renderer's cull paths on a CUDA device, where `gather_lanes` runs GATHER_LANES real threads
per view: every path must build the same candidate buffer and draw the same bytes."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps import load_road_map
from pictura.render import CameraRig, Renderer
from pictura.render.demo import spawn_snapshot
from pictura.sim.snapshot import WorldLayout

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("cand_capacity", [2048, 40])
def test_cuda_gather_paths_build_the_same_buffer_and_images(cand_capacity):
    road_map = load_road_map("procedural:seed=0")
    layout = WorldLayout.uniform([0, 0], 24, [len(road_map.light_position)])
    boxes = np.concatenate([spawn_snapshot(road_map, 24, 24, seed=w) for w in range(2)])[None]
    lights = np.random.default_rng(0).integers(0, 3, (1, layout.light_count)).astype(np.int32)
    requests = np.stack([np.zeros(48, np.int32), np.arange(48, dtype=np.int32)], 1)
    got = {}
    for way in ("views", "lanes"):
        r = Renderer([road_map], layout, CameraRig(width=64, height=36), device="cuda", list_capacity=24)
        r._cand_capacity = cand_capacity
        r._gather = way
        images = r.render_numpy(boxes, lights, requests)
        views = len(requests) * r.num_cameras
        n = r._cand_count.numpy()[:views]
        cand = r._cand_ref.numpy()[:views]
        got[way] = (images, n, [cand[v, : min(n[v], cand_capacity)] for v in range(views)], r._list_ref.numpy()[:views])
    ref_images, ref_n, ref_cand, ref_list = got["views"]
    assert ref_n.max() > 24  # the lists truncate
    images, n, cand, lists = got["lanes"]
    assert np.array_equal(n, ref_n)
    assert all(np.array_equal(a, b) for a, b in zip(cand, ref_cand, strict=True))
    assert np.array_equal(lists, ref_list)
    assert np.array_equal(images, ref_images)


@pytest.mark.parametrize("bin_mode", [2, 0])
def test_cuda_warp_binning_sets_the_same_bits_as_solo_binning(bin_mode):
    # `binning.WarpBinning` on CUDA: entries of more than `_shared_bin_tiles` tiles are binned by
    # their whole warp. `SoloBinning` (every entry binned by its own thread) is the reference:
    # the tile masks must be the same words, whoever sets each bit (at 0 tiles every entry
    # shares; mode 0, every tile, makes each entry large).
    road_map = load_road_map("procedural:seed=0")
    layout = WorldLayout.uniform([0, 0], 24, [len(road_map.light_position)])
    boxes = np.concatenate([spawn_snapshot(road_map, 24, 24, seed=w) for w in range(2)])[None]
    lights = np.zeros((1, layout.light_count), np.int32)
    requests = np.stack([np.zeros(48, np.int32), np.arange(48, dtype=np.int32)], 1)
    masks = {}
    for binning in ("solo", 8, 0):
        r = Renderer([road_map], layout, CameraRig(width=96, height=54), device="cuda", list_capacity=40)
        r._bin_mode = bin_mode
        r._warp_binning = binning != "solo"
        r._shared_bin_tiles = 0 if binning == "solo" else binning
        assert r._binning() == ("solo" if binning == "solo" else "warp")
        r.render_numpy(boxes, lights, requests)
        masks[binning] = r._mask.numpy()[: len(requests) * r.num_cameras]
    assert masks["solo"].any()
    assert np.array_equal(masks[8], masks["solo"])
    assert np.array_equal(masks[0], masks["solo"])


@pytest.mark.parametrize("far", [0.6, 120.0])
@pytest.mark.parametrize("capacity", [5, 96])
def test_cuda_ranking_is_the_stable_sort(capacity, far):
    # `rank_lists` on real warps: rounds of 32 candidates, `__match_any_sync` groups, the warp scan.
    from tests.render.test_cull_paths import check_ranking_ties

    check_ranking_ties(capacity, far, "cuda")


def test_cuda_silhouette_coverage_is_deterministic_and_its_bins_drop_nothing():
    # The third coverage mode's own kernels on CUDA: two renders give the same bytes, and so do
    # tight bins (mode 2) and every entry in every tile (mode 0).
    road_map = load_road_map("procedural:seed=0")
    layout = WorldLayout.uniform([0], 24, [len(road_map.light_position)])
    boxes = spawn_snapshot(road_map, 24, 24, seed=3)[None]
    lights = np.zeros((1, layout.light_count), np.int32)
    requests = np.stack([np.zeros(24, np.int32), np.arange(24, dtype=np.int32)], 1)
    images = []
    for bin_mode in (2, 2, 0):
        r = Renderer([road_map], layout, CameraRig(width=96, height=54), device="cuda", coverage="silhouette")
        r._bin_mode = bin_mode
        images.append(r.render_numpy(boxes, lights, requests))
    assert images[0].any()
    assert np.array_equal(images[1], images[0])
    assert np.array_equal(images[2], images[0])
