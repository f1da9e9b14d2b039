"""Masked resets: spawns never overlap, sit on lanes inside the road edges, and draw sizes,
counts and conditioning from the configured ranges."""

from __future__ import annotations

import numpy as np

from pictura.sim import CONDITIONING_TABLE, reset, step
from pictura.sim.features import COND_TYPE, NUM_COEFFICIENTS

from .conftest import (
    loop_map,
    make_world,
    np_box_corners,
    np_polygons_overlap,
    np_segments_intersect,
    vehicle_config,
)


def test_spawns_are_disjoint_on_road_and_in_range():
    road = loop_map()
    cfg = vehicle_config(agents_per_world=(40, 60))
    model, s0, s1, ctl = make_world([road], [0, 0, 0], 60, cfg)
    edges = road.road_edge_segments()[:, :, :2].astype(np.float64)
    lane_seg, _ = road.lane_segments()
    placed = 0
    fastest = 0.0
    for seed in range(8):
        reset(model, s0, seed)
        st = s0.numpy()
        counts = st["world_agent_count"]
        assert np.all((counts >= 40) & (counts <= 60))
        valid = st["valid"].reshape(3, 60)
        assert np.all(valid.sum(1) <= counts)
        for w in range(3):
            # slots fill in order: only the first `count` slots may hold agents
            assert valid[w, counts[w] :].sum() == 0
        ok = st["valid"] == 1
        placed += ok.sum()
        L, Wd = st["length"][ok], st["width"][ok]
        assert np.all((L >= 0.8) & (L <= 7.0) & (Wd >= 0.8) & (Wd <= 2.7) & (Wd <= L))
        assert np.all(st["height"][ok] == 1.5)
        # initial speed ~ U(0, spawn_speed_fraction 0.5 x the lane's 13.9 m/s limit)
        speed = st["speed"][ok]
        assert np.all((speed >= 0.0) & (speed <= 0.5 * 13.9 + 1e-4))
        fastest = max(fastest, float(speed.max()))
        cond = st["conditioning"][ok]
        for c, coef in enumerate(CONDITIONING_TABLE):
            assert np.all(cond[:, c] >= coef.low - 1e-6) and np.all(cond[:, c] <= coef.high + 1e-6), coef.name
        assert np.all(cond[:, COND_TYPE] == 1) and np.all(cond[:, COND_TYPE + 1 :] == 0)
        assert cond.shape[1] == NUM_COEFFICIENTS + 3
        boxes = [
            np_box_corners(p[0], p[1], h, l, w)
            for p, h, l, w in zip(st["pos"][ok], st["heading"][ok], L, Wd, strict=True)
        ]
        world = st["pos"][ok][:, 0] * 0 + np.nonzero(ok)[0] // 60
        centres = st["pos"][ok][:, :2]
        radius = 0.5 * np.hypot(L, Wd)
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                if world[i] == world[j] and np.linalg.norm(centres[i] - centres[j]) < radius[i] + radius[j]:
                    assert not np_polygons_overlap(boxes[i], boxes[j]), (seed, i, j)
            # no box edge crosses a road edge
            c = boxes[i]
            for k in range(4):
                p1 = np.broadcast_to(c[k], edges[:, 0].shape)
                p2 = np.broadcast_to(c[(k + 1) % 4], edges[:, 0].shape)
                assert not np.any(np_segments_intersect(p1, p2, edges[:, 0], edges[:, 1]))
        # spawned on a lane centreline, heading along it
        p = st["pos"][ok][:, :2].astype(np.float64)
        a, b = lane_seg[:, 0, :2], lane_seg[:, 1, :2]
        ab = b - a
        t = np.clip(((p[:, None] - a) * ab).sum(-1) / (ab**2).sum(-1), 0, 1)
        dist = np.linalg.norm(a + ab * t[..., None] - p[:, None], axis=-1)
        nearest = dist.argmin(1)
        assert np.all(dist.min(1) < 1e-3)
        seg_heading = np.arctan2(ab[nearest, 1], ab[nearest, 0])
        err = (st["heading"][ok] - seg_heading + np.pi) % (2 * np.pi) - np.pi
        assert np.all(np.abs(err) < 1e-3)
    assert placed > 8 * 3 * 30  # most agents found a place
    assert fastest > 0.95 * 0.5 * 13.9  # the whole range is drawn


def test_dense_request_leaves_unplaced_slots_invalid():
    # 120 agents of up to 7 m on a small loop cannot all fit: the rest stay invalid, none overlap
    road = loop_map(half_x=20, half_y=10, radius=10)
    cfg = vehicle_config(agents_per_world=(120, 120), spawn_attempts=5)
    model, s0, s1, ctl = make_world([road], [0], 120, cfg)
    reset(model, s0, 1)
    st = s0.numpy()
    ok = st["valid"] == 1
    assert 0 < ok.sum() < 120
    assert np.all(st["agent_box"][~ok, 7] == -1.0) and np.all(st["active"][~ok] == 0)
    boxes = [
        np_box_corners(p[0], p[1], h, l, w)
        for p, h, l, w in zip(
            st["pos"][ok], st["heading"][ok], st["length"][ok], st["width"][ok], strict=True
        )
    ]
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            assert not np_polygons_overlap(boxes[i], boxes[j])
    # stepping a crowded world keeps working
    step(model, s0, ctl, s1)
