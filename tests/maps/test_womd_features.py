"""RoadMap construction helpers against closed-form geometry."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps.roadmap import (
    LIGHT_GREEN,
    LIGHT_OFF,
    LIGHT_RED,
    LIGHT_YELLOW,
    MARKING_CENTRE_LINE,
    MARKING_LANE_DIVIDER,
    MAX_LANE_CHUNK_M,
)
from pictura.maps.womd.features import (
    SIGNAL_STATE_TO_LIGHT,
    Lane,
    MapFeatures,
    Polyline,
    SignalLog,
    build_road_map,
    chunk_polyline,
    crosswalk_quad,
)


def _length(p: np.ndarray) -> float:
    return float(np.linalg.norm(np.diff(p, axis=0), axis=1).sum())


@pytest.mark.parametrize("total", [0.0, 3.0, 10.0, 10.5, 37.2])
def test_chunk_polyline_equal_pieces_cover_the_line(total):
    x = np.concatenate([np.linspace(0.0, total, 8), [total]])  # repeated last vertex too
    pts = np.stack([x, np.zeros_like(x), 0.1 * x], axis=1)
    pieces = chunk_polyline(pts)
    length = total * np.sqrt(1.01)  # arc length in 3-D: the lane climbs 0.1 m per metre
    expected = max(1, int(np.ceil(length / MAX_LANE_CHUNK_M - 1e-9)))
    assert len(pieces) == expected
    for p in pieces:
        assert _length(p) == pytest.approx(length / expected, abs=1e-9)
        assert _length(p) <= MAX_LANE_CHUNK_M + 1e-9
        np.testing.assert_allclose(p[:, 2], 0.1 * p[:, 0])  # z interpolated with x
    for a, b in zip(pieces[:-1], pieces[1:], strict=True):
        np.testing.assert_array_equal(a[-1], b[0])
    np.testing.assert_array_equal(pieces[0][0], pts[0])
    np.testing.assert_array_equal(pieces[-1][-1], pts[-1])


def test_chunk_polyline_splits_a_long_single_segment():
    pts = np.array([[0.0, 0.0, 0.0], [0.0, 25.0, 0.0]])
    pieces = chunk_polyline(pts)
    assert [p[:, 1].tolist() for p in pieces] == [[0.0, 25 / 3], [25 / 3, 50 / 3], [50 / 3, 25.0]]


def test_crosswalk_quad_oriented_bounding_rectangle():
    a = np.deg2rad(30.0)
    u, v = np.array([np.cos(a), np.sin(a)]), np.array([-np.sin(a), np.cos(a)])
    corners = [5 * u * i + 2 * v * j for i, j in ((0, 0), (1, 0), (1, 1), (0, 1))]
    # 6 points: the 4 corners plus two points on the long edges
    poly = np.array([corners[0], 2.5 * u, corners[1], corners[2], 2.5 * u + 2 * v, corners[3]])
    poly = np.concatenate([poly, np.full((6, 1), 1.5)], axis=1)
    quad = crosswalk_quad(poly, "test")
    assert quad.shape == (4, 3)
    np.testing.assert_allclose(quad[:, 2], 1.5)
    # same corner set (any order), area 10
    for c in corners:
        assert np.min(np.linalg.norm(quad[:, :2] - c, axis=1)) < 1e-9
    four = poly[[0, 2, 3, 5]]
    np.testing.assert_array_equal(crosswalk_quad(four, "test"), four)  # 4 points kept as is


def test_lane_graph_chunks_link_to_exit_lanes():
    straight = np.array([[0.0, 0.0, 0.0], [25.0, 0.0, 0.0]])
    left = np.array([[25.0, 0.0, 0.0], [25.0, 8.0, 0.0]])
    right = np.array([[25.0, 0.0, 0.0], [25.0, -12.0, 0.0]])
    feats = MapFeatures(
        lanes=[
            Lane(7, 2, 30.0, straight, exit_lanes=[8, 9]),
            Lane(8, 2, 0.0, left, entry_lanes=[7]),
            Lane(9, 2, 0.0, right, entry_lanes=[7]),
        ]
    )
    rm, chunks = build_road_map("t", feats)
    assert chunks == {7: (0, 3), 8: (3, 4), 9: (4, 6)}
    assert [rm.successors(i).tolist() for i in range(rm.lane_count)] == [[1], [2], [3, 4], [], [5], []]
    np.testing.assert_allclose(rm.lane_speed_limit[:3], 30.0 * 0.44704, rtol=1e-6)
    assert np.all(rm.lane_width == np.float32(3.7))
    with pytest.raises(ValueError, match="exit lane 99"):
        build_road_map("t", MapFeatures(lanes=[Lane(1, 2, 0.0, straight, exit_lanes=[99])]))


@pytest.mark.parametrize(("gap", "on_approach"), [(0.5, True), (1.5, False)])
def test_signal_stop_line_goes_on_the_approach_lane_ending_within_1_m(gap, on_approach):
    # the logged stop point sits ``gap`` m past the end of approach lane 7, on controlled lane 8:
    # within 1 m the stop line belongs to the approach's last chunk, else to lane 8's first
    approach = np.array([[0.0, 0.0, 0.0], [25.0, 0.0, 0.0]])
    controlled = np.array([[25.0, 0.0, 0.0], [45.0, 0.0, 0.0]])
    feats = MapFeatures(
        lanes=[Lane(7, 2, 0.0, approach, exit_lanes=[8]), Lane(8, 2, 0.0, controlled, entry_lanes=[7])]
    )
    signals = SignalLog(lane_ids=[8], stop_points=np.array([[25.0 + gap, 0.0, 0.0]]), states=np.zeros((1, 1), np.int32))
    rm, chunks = build_road_map("t", feats, signals)
    assert len(rm.stop_line_lane) == 1
    expected = chunks[7][1] - 1 if on_approach else chunks[8][0]
    assert rm.stop_line_lane[0] == expected


# map.proto RoadLine.RoadLineType, literally: the yellow ones are the centre lines
ROAD_LINE_TYPES = {
    0: "TYPE_UNKNOWN", 1: "TYPE_BROKEN_SINGLE_WHITE", 2: "TYPE_SOLID_SINGLE_WHITE", 3: "TYPE_SOLID_DOUBLE_WHITE",
    4: "TYPE_BROKEN_SINGLE_YELLOW", 5: "TYPE_BROKEN_DOUBLE_YELLOW", 6: "TYPE_SOLID_SINGLE_YELLOW",
    7: "TYPE_SOLID_DOUBLE_YELLOW", 8: "TYPE_PASSING_DOUBLE_YELLOW",
}  # fmt: skip
# map.proto TrafficSignalLaneState.State, literally: arrows count as their colour, flashing
# stop as a stop and flashing caution as a caution
SIGNAL_STATES = {
    0: ("LANE_STATE_UNKNOWN", LIGHT_OFF), 1: ("LANE_STATE_ARROW_STOP", LIGHT_RED),
    2: ("LANE_STATE_ARROW_CAUTION", LIGHT_YELLOW), 3: ("LANE_STATE_ARROW_GO", LIGHT_GREEN),
    4: ("LANE_STATE_STOP", LIGHT_RED), 5: ("LANE_STATE_CAUTION", LIGHT_YELLOW), 6: ("LANE_STATE_GO", LIGHT_GREEN),
    7: ("LANE_STATE_FLASHING_STOP", LIGHT_RED), 8: ("LANE_STATE_FLASHING_CAUTION", LIGHT_YELLOW),
}  # fmt: skip


def test_every_road_line_type_gets_its_marking_and_every_signal_state_its_light():
    straight = np.array([[0.0, 0.0, 0.0], [25.0, 0.0, 0.0]])
    lines = [Polyline(100 + k, k, straight + [0.0, 2.0 + k, 0.0]) for k in ROAD_LINE_TYPES]
    rm, _ = build_road_map("t", MapFeatures(lanes=[Lane(7, 2, 0.0, straight)], road_lines=lines))
    want = [MARKING_CENTRE_LINE if "YELLOW" in name else MARKING_LANE_DIVIDER for name in ROAD_LINE_TYPES.values()]
    assert rm.marking_kind.tolist() == want
    assert {k: SIGNAL_STATE_TO_LIGHT[k] for k in SIGNAL_STATES} == {k: light for k, (_, light) in SIGNAL_STATES.items()}
    assert set(SIGNAL_STATE_TO_LIGHT) == set(SIGNAL_STATES)
