"""`RoadMap` -> GeoJSON and summary statistics (for ``python -m pictura map-info``).

Coordinates stay in the map's own metric frame (x east, y north, z up, m): GeoJSON is used as a
convenient container for GIS viewers and scripts, not as WGS84 longitude/latitude.
"""

from __future__ import annotations

import numpy as np

from pictura.maps.roadmap import MARKING_CENTRE_LINE, MARKING_LANE_DIVIDER, RoadMap

MARKING_NAMES = {MARKING_LANE_DIVIDER: "lane_divider", MARKING_CENTRE_LINE: "centre_line"}

FEATURE_KINDS = (
    "lane",
    "road_edge",
    "marking",
    "stop_line",
    "traffic_light",
    "wall",
    "junction",
    "sidewalk",
    "crosswalk",
    "parking_spot",
)


def _coords(points: np.ndarray) -> list[list[float]]:
    return [[round(float(v), 4) for v in p] for p in np.asarray(points, np.float64)]


def _feature(geometry_type: str, coordinates: list, **properties: object) -> dict:
    return {
        "type": "Feature",
        "geometry": {"type": geometry_type, "coordinates": coordinates},
        "properties": properties,
    }


def _polylines(points: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    return [points[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]


def road_map_to_geojson(road_map: RoadMap) -> dict:
    """A GeoJSON ``FeatureCollection``; every feature's ``properties.kind`` is one of `FEATURE_KINDS`."""
    m = road_map
    features: list[dict] = []
    for i, pts in enumerate(_polylines(m.lane_points, m.lane_offsets)):
        features.append(
            _feature(
                "LineString",
                _coords(pts),
                kind="lane",
                id=i,
                width=float(m.lane_width[i]),
                speed_limit=float(m.lane_speed_limit[i]),
                junction=int(m.lane_junction[i]),
                successors=[int(s) for s in m.successors(i)],
            )
        )
    for i, pts in enumerate(_polylines(m.road_edge_points, m.road_edge_offsets)):
        features.append(_feature("LineString", _coords(pts), kind="road_edge", id=i))
    for i, pts in enumerate(_polylines(m.marking_points, m.marking_offsets)):
        k = int(m.marking_kind[i])
        features.append(
            _feature("LineString", _coords(pts), kind="marking", id=i, marking=MARKING_NAMES.get(k, k))
        )
    for i, pts in enumerate(m.stop_line_points):
        features.append(
            _feature(
                "LineString",
                _coords(pts),
                kind="stop_line",
                id=i,
                lane=int(m.stop_line_lane[i]),
                light=int(m.stop_line_light[i]),
            )
        )
    for i, pos in enumerate(m.light_position):
        features.append(
            _feature(
                "Point",
                _coords(pos[None])[0],
                kind="traffic_light",
                id=i,
                heading=float(m.light_heading[i]),
                junction=int(m.light_junction[i]),
                group=int(m.light_group[i]),
            )
        )
    for i, pts in enumerate(m.wall_points):
        features.append(
            _feature("LineString", _coords(pts), kind="wall", id=i, height=float(m.wall_height[i]))
        )
    for i, c in enumerate(m.junction_center):
        features.append(_feature("Point", _coords(c[None])[0], kind="junction", id=i))
    for i, pts in enumerate(_polylines(m.sidewalk_points, m.sidewalk_offsets)):
        features.append(_feature("LineString", _coords(pts), kind="sidewalk", id=i))
    for i, quad in enumerate(m.crosswalk_points):
        ring = np.concatenate([quad, quad[:1]])
        features.append(_feature("Polygon", [_coords(ring)], kind="crosswalk", id=i))
    for i, spot in enumerate(m.parking_spots):
        features.append(
            _feature("Point", _coords(spot[None, :3])[0], kind="parking_spot", id=i, heading=float(spot[3]))
        )
    for i, pos in enumerate(m.sign_position):
        features.append(_feature("Point", _coords(pos[None])[0], kind="sign", id=i, sign=int(m.sign_kind[i])))
    return {"type": "FeatureCollection", "name": m.name, "features": features}


def _polyline_length(points: np.ndarray, offsets: np.ndarray) -> float:
    if len(points) < 2:
        return 0.0
    seg = np.linalg.norm(np.diff(points.astype(np.float64), axis=0), axis=1)
    # Drop the jumps between consecutive polylines (segment i joins polyline ends when i+1 starts one).
    starts = offsets[1:-1]
    joins = starts[(starts > 0) & (starts < len(points))] - 1
    seg[joins] = 0.0
    return float(seg.sum())


def map_statistics(road_map: RoadMap) -> dict:
    """Counts, lengths (m) and bounds of a map, JSON-serialisable."""
    m = road_map
    lo, hi = m.bounds()
    wall_len = float(np.linalg.norm(np.diff(m.wall_points.astype(np.float64), axis=1)[:, 0], axis=-1).sum())
    kinds = np.asarray(m.marking_kind)
    return {
        "name": m.name,
        "lanes": int(m.lane_count),
        "lane_length_m": round(_polyline_length(m.lane_points, m.lane_offsets), 3),
        "lane_successor_links": int(len(m.lane_successors)),
        "junction_lanes": int(np.count_nonzero(m.lane_junction >= 0)),
        "road_edges": int(m.road_edge_count),
        "road_edge_length_m": round(_polyline_length(m.road_edge_points, m.road_edge_offsets), 3),
        "junctions": int(len(m.junction_center)),
        "traffic_lights": int(len(m.light_position)),
        "stop_lines": int(len(m.stop_line_points)),
        "walls": int(len(m.wall_points)),
        "wall_length_m": round(wall_len, 3),
        "markings": int(m.marking_count),
        "lane_dividers": int(np.count_nonzero(kinds == MARKING_LANE_DIVIDER)),
        "centre_lines": int(np.count_nonzero(kinds == MARKING_CENTRE_LINE)),
        "sidewalks": int(len(m.sidewalk_offsets) - 1),
        "crosswalks": int(len(m.crosswalk_points)),
        "parking_spots": int(len(m.parking_spots)),
        "signs": int(len(m.sign_position)),
        "bounds": {
            "min": [round(float(v), 3) for v in lo],
            "max": [round(float(v), 3) for v in hi],
            "size_m": [round(float(v), 3) for v in (hi - lo)],
        },
    }
