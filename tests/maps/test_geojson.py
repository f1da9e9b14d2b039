"""The GeoJSON export against the `RoadMap` it comes from, feature by feature (docs/maps.md,
"--geojson"): every kind with its geometry type, its coordinates and each documented property,
the marking names written out as the docs spell them."""

from __future__ import annotations

import numpy as np

from pictura.maps import load
from pictura.maps.geojson import road_map_to_geojson
from pictura.maps.roadmap import MARKING_CENTRE_LINE, MARKING_LANE_DIVIDER

MARKING = {MARKING_LANE_DIVIDER: "lane_divider", MARKING_CENTRE_LINE: "centre_line"}


def _polylines(points, offsets):
    return [points[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]


def test_every_feature_carries_its_road_map_record():
    m = load("procedural:seed=3,blocks_x=2,blocks_y=2,parking_lane_prob=1.0")
    by_kind: dict[str, list[dict]] = {}
    for f in road_map_to_geojson(m)["features"]:
        by_kind.setdefault(f["properties"]["kind"], []).append(f)

    def coords(f):
        return np.asarray(f["geometry"]["coordinates"], np.float64)

    lanes = _polylines(m.lane_points, m.lane_offsets)
    assert len(by_kind["lane"]) == len(lanes)
    for i, f in enumerate(by_kind["lane"]):
        p = f["properties"]
        assert f["geometry"]["type"] == "LineString" and p["id"] == i
        np.testing.assert_allclose(coords(f), lanes[i], atol=1e-4)
        assert p["width"] == float(m.lane_width[i]) and p["speed_limit"] == float(m.lane_speed_limit[i])
        assert p["junction"] == int(m.lane_junction[i]) and p["successors"] == m.successors(i).tolist()

    marks = _polylines(m.marking_points, m.marking_offsets)
    assert len(by_kind["marking"]) == len(marks) and set(m.marking_kind.tolist()) == set(MARKING)
    for i, f in enumerate(by_kind["marking"]):
        np.testing.assert_allclose(coords(f), marks[i], atol=1e-4)
        assert f["properties"]["marking"] == MARKING[int(m.marking_kind[i])]

    edges = _polylines(m.road_edge_points, m.road_edge_offsets)
    assert len(by_kind["road_edge"]) == len(edges)
    for i, f in enumerate(by_kind["road_edge"]):
        np.testing.assert_allclose(coords(f), edges[i], atol=1e-4)

    assert len(by_kind["stop_line"]) == len(m.stop_line_points) > 0
    for i, f in enumerate(by_kind["stop_line"]):
        np.testing.assert_allclose(coords(f), m.stop_line_points[i], atol=1e-4)
        assert (f["properties"]["lane"], f["properties"]["light"]) == (
            int(m.stop_line_lane[i]),
            int(m.stop_line_light[i]),
        )
    assert len(by_kind["traffic_light"]) == len(m.light_position) > 0
    for i, f in enumerate(by_kind["traffic_light"]):
        p = f["properties"]
        assert f["geometry"]["type"] == "Point"
        np.testing.assert_allclose(coords(f), m.light_position[i], atol=1e-4)
        assert p["heading"] == float(m.light_heading[i])
        assert (p["junction"], p["group"]) == (int(m.light_junction[i]), int(m.light_group[i]))
    for i, f in enumerate(by_kind.get("wall", [])):
        np.testing.assert_allclose(coords(f), m.wall_points[i], atol=1e-4)
        assert f["properties"]["height"] == float(m.wall_height[i])
    assert len(by_kind["parking_spot"]) == len(m.parking_spots) > 0
    for i, f in enumerate(by_kind["parking_spot"]):
        np.testing.assert_allclose(coords(f), m.parking_spots[i, :3], atol=1e-4)
        assert f["properties"]["heading"] == float(m.parking_spots[i, 3])
    assert len(by_kind["crosswalk"]) == len(m.crosswalk_points)
    for i, f in enumerate(by_kind["crosswalk"]):
        ring = np.asarray(f["geometry"]["coordinates"][0])
        assert f["geometry"]["type"] == "Polygon"
        np.testing.assert_allclose(
            ring, np.concatenate([m.crosswalk_points[i], m.crosswalk_points[i][:1]]), atol=1e-4
        )
    assert len(by_kind["junction"]) == len(m.junction_center)
    assert len(by_kind["sidewalk"]) == len(m.sidewalk_offsets) - 1
    assert len(by_kind.get("sign", [])) == len(m.sign_position)
