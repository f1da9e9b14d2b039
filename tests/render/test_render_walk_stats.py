"""`benchmarks/render_walk_stats.py`: its copy of the raster's walk must see what the raster draws.

The reference is `raster.raster_ids`, which walks each view's whole list (no bins, no early
stop) and names the agent nearest at each pixel centre: that agent's entry must be binned to
the pixel's band, walked there and drawing there.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.render_walk_stats import band_entry_sets, entry_bits
from pictura.maps import load_road_map
from pictura.render import CameraRig, Renderer, common, scene
from pictura.render.demo import spawn_snapshot
from pictura.sim.snapshot import WorldLayout


def test_entry_bits_unpacks_little_endian_words():
    # (views, bands, words): bit b of word w is entry 32 w + b; entries past the capacity drop
    words = np.array([[[0b101 | (1 << 31), (1 << 3) | (1 << 30)], [0, 1]]], np.uint32)
    bits = entry_bits(words, 40)
    assert bits.shape == (1, 2, 40)
    assert np.flatnonzero(bits[0, 0]).tolist() == [0, 2, 31, 35]
    assert np.flatnonzero(bits[0, 1]).tolist() == [32]


@pytest.mark.parametrize(("width", "height"), [(40, 20), (64, 36)])
def test_the_walk_copy_draws_every_agent_the_raster_shows(width, height):
    road_map = load_road_map("procedural:seed=0")
    layout = WorldLayout.uniform([0, 0], 12, [len(road_map.light_position)])
    boxes = np.concatenate([spawn_snapshot(road_map, 12, 12, seed=w) for w in range(2)])[None]
    lights = np.zeros((1, layout.light_count), np.int32)
    requests = np.stack([np.zeros(24, np.int32), np.arange(24, dtype=np.int32)], 1)
    r = Renderer([road_map], layout, CameraRig(width=width, height=height), list_capacity=48)
    r.render_numpy(boxes, lights, requests)  # leaves the ray frames
    ab, ls, rq = r._to_device(boxes, lights, requests)
    ids = r._id_buffer(ab, ls, rq, r._layout_table_unless(None), -1)  # the same lists and bins again
    views = len(requests) * r.num_cameras
    binned, walked, drawn, partial = band_entry_sets(r, views)
    assert (walked <= binned).all() and (drawn <= walked).all() and (partial <= drawn).all()
    kind = r._rec.numpy()[:views]["r2"][:, :, 3].astype(int)[:, None, :]
    assert (partial & (kind == scene.REF_AGENT)).any()  # antialiased box edges
    refs = r._list_ref.numpy()[:views]
    tiles_x = -(-width // common.TILE_PX)
    checked = 0
    for v, py, px in np.argwhere(ids >= 0):
        k = np.flatnonzero(refs[v] == ((scene.REF_AGENT << scene.REF_SHIFT) | ids[v, py, px]))
        assert len(k) == 1
        band = 2 * ((py // common.TILE_PX) * tiles_x + px // common.TILE_PX) + (py % common.TILE_PX) // (common.TILE_PX // 2)
        assert binned[v, band, k[0]] and walked[v, band, k[0]] and drawn[v, band, k[0]], (v, py, px)
        checked += 1
    assert checked > 100  # the scene shows agents


def test_walk_by_row_counts_per_band_row():
    # One view 8 px wide (one tile per row): bands 0..3 start at pixel rows 0, 4, 8, 12.
    # Entries: 0 an agent, 1 and 2 lines. Band 0 is empty; band 1 walks all three (the agent and
    # line 1 draw); band 2 walks line 2 without drawing; band 3 walks and draws line 1.
    from benchmarks.render_walk_stats import band_first_rows, walk_by_row

    assert band_first_rows(4, 8).tolist() == [0, 4, 8, 12]
    assert band_first_rows(4, 16).tolist() == [0, 4, 0, 4]  # two tiles per row
    kind = np.array([[[scene.REF_AGENT, scene.REF_LINE, scene.REF_LINE]]])
    binned = np.array([[[0, 0, 0], [1, 1, 1], [0, 0, 1], [0, 1, 0]]], bool)
    walked = binned.copy()
    drawn = np.array([[[0, 0, 0], [1, 1, 0], [0, 0, 0], [0, 1, 0]]], bool)
    rows = walk_by_row(binned, walked, drawn, kind, 8)
    assert rows["0"] == {
        "nonempty": 0.0, "walked": 0.0, "drawn": 0.0, "wasted_lines": 0.0, "share_of_walked": 0.0,
        "share_of_wasted_lines": 0.0,
    }  # fmt: skip
    assert rows["4"]["walked"] == 3.0 and rows["4"]["drawn"] == 2.0 and rows["4"]["wasted_lines"] == 1.0
    assert rows["8"]["wasted_lines"] == 1.0 and rows["8"]["share_of_wasted_lines"] == 0.5
    assert rows["12"]["share_of_walked"] == 0.2  # 1 of the 5 walked entries
