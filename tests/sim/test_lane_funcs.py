"""The lane queries of `pictura.sim.lanes` (`associate_lane`, `lane_station`, `lane_point`,
`lane_speed_limit`) against a float64 NumPy scan of every lane segment of the loop map, at random
poses on and beside the road: the lane every rule and observation reads, its signed offset
(left of the direction of travel negative) and heading error, the station along it."""

from __future__ import annotations

import numpy as np
import warp as wp

from pictura.sim.lanes import (
    associate_lane,
    lane_point,
    lane_speed_limit,
    lane_station,
)
from pictura.sim.model_data import ModelData

from .conftest import DEVICE, loop_map, make_world, vehicle_config


@wp.kernel
def _lanes_kernel(
    model: ModelData,
    pos: wp.array(dtype=wp.vec3),
    heading: wp.array(dtype=float),
    current: wp.array(dtype=int),
    out_lane: wp.array(dtype=int),
    out_f: wp.array2d(dtype=float),
):
    i = wp.tid()
    lane, offset, err = associate_lane(model, 0, pos[i], heading[i], current[i])
    out_lane[i] = lane
    out_f[i, 0] = offset
    out_f[i, 1] = err
    out_f[i, 5] = lane_speed_limit(model, lane)
    if lane >= 0:
        station = lane_station(model, lane, pos[i])
        p = lane_point(model, lane, station)
        out_f[i, 2] = station
        out_f[i, 3] = p[0]
        out_f[i, 4] = p[1]


def _np_scores(road, p: np.ndarray, z: float, heading: float, current: int):
    """Per lane: (score, offset, heading error, station, closest point) of its best segment."""
    out = {}
    for lane in range(road.lane_count):
        pts = road.lane_points[road.lane_offsets[lane] : road.lane_offsets[lane + 1]].astype(np.float64)
        along = 0.0
        best = None
        for a, b in zip(pts[:-1], pts[1:], strict=True):
            ab = b[:2] - a[:2]
            length = np.linalg.norm(ab)
            t = np.clip(np.dot(p - a[:2], ab) / length**2, 0.0, 1.0)
            foot = a[:2] + t * ab
            dist = np.linalg.norm(p - foot)
            if dist < 3.0 * road.lane_width[lane] and abs(z - (a[2] + t * (b[2] - a[2]))) < 4.0:
                err = (heading - np.arctan2(ab[1], ab[0]) + np.pi) % (2 * np.pi) - np.pi
                score = (
                    0.7 * dist / 4.0 + 0.3 * abs(err) / np.pi - (0.05 if lane == current else 0.0)
                )  # REFERENCE.md
                u = ab / length
                offset = -(u[0] * (p[1] - a[1]) - u[1] * (p[0] - a[0]))  # left of travel negative
                if best is None or score < best[0]:
                    best = (score, offset, err, along + t * length, foot)
            along += length
        if best is not None:
            out[lane] = best
    return out


def _np_station(road, lane: int, p: np.ndarray):
    """(distance along ``lane`` of its point nearest ``p``, that point)."""
    pts = road.lane_points[road.lane_offsets[lane] : road.lane_offsets[lane + 1]].astype(np.float64)[:, :2]
    best, along, out = np.inf, 0.0, None
    for a, b in zip(pts[:-1], pts[1:], strict=True):
        ab = b - a
        length = np.linalg.norm(ab)
        t = np.clip(np.dot(p - a, ab) / length**2, 0.0, 1.0)
        dist = np.linalg.norm(p - (a + t * ab))
        if dist < best:
            best, out = dist, (along + t * length, a + t * ab)
        along += length
    return out


def test_association_offset_station_and_point_match_a_full_scan():
    road = loop_map()
    model, *_ = make_world([road], [0], 1, vehicle_config(agents_per_world=(1, 1)))
    rng = np.random.default_rng(4)
    n = 300
    # random points of the lanes, moved sideways and turned
    lane = rng.integers(0, road.lane_count, n)
    k = road.lane_offsets[lane] + rng.integers(0, 3, n)
    a, b = road.lane_points[k].astype(np.float64), road.lane_points[k + 1].astype(np.float64)
    t = rng.random(n)
    d = b[:, :2] - a[:, :2]
    base = np.arctan2(d[:, 1], d[:, 0])
    side = rng.uniform(-6.0, 6.0, n)
    p = a[:, :2] + t[:, None] * d + side[:, None] * np.stack([-np.sin(base), np.cos(base)], 1)
    heading = base + rng.uniform(-2.0, 2.0, n)
    current = np.where(rng.random(n) < 0.5, lane, -1)
    pos = np.column_stack([p, np.zeros(n)]).astype(np.float32)
    heading = heading.astype(np.float32)

    out_lane = wp.zeros(n, dtype=int, device=DEVICE)
    out_f = wp.zeros((n, 6), dtype=float, device=DEVICE)
    wp.launch(
        _lanes_kernel, dim=n, device=DEVICE,
        inputs=[model.data, wp.array(pos, dtype=wp.vec3, device=DEVICE), wp.array(heading, dtype=float, device=DEVICE),
                wp.array(current.astype(np.int32), dtype=int, device=DEVICE), out_lane, out_f],
    )  # fmt: skip
    got_lane, got = out_lane.numpy(), out_f.numpy()

    compared = lefts = rights = 0
    for i in range(n):
        scores = _np_scores(road, pos[i, :2].astype(np.float64), 0.0, float(heading[i]), int(current[i]))
        if not scores:
            assert got_lane[i] == -1
            assert got[i, 5] == 15.0
            continue
        ranked = sorted(scores, key=lambda j: scores[j][0])
        if len(ranked) > 1 and scores[ranked[1]][0] - scores[ranked[0]][0] < 1e-3:
            continue  # a tie within float32 rounding
        best = ranked[0]
        score, offset, err, _, _ = scores[best]
        assert got_lane[i] == best, i
        np.testing.assert_allclose(got[i, 0], offset, atol=2e-3)
        np.testing.assert_allclose(got[i, 1], err, atol=2e-3)
        station, foot = _np_station(road, best, pos[i, :2].astype(np.float64))
        np.testing.assert_allclose(got[i, 2], station, atol=5e-3)
        np.testing.assert_allclose(got[i, 3:5], foot, atol=5e-3)
        limit = road.lane_speed_limit[best] if road.lane_speed_limit[best] > 0 else 15.0
        np.testing.assert_allclose(got[i, 5], limit, rtol=1e-6)
        compared += 1
        lefts += offset < -0.5
        rights += offset > 0.5
    assert compared > 0.8 * n and lefts > 20 and rights > 20
