"""The procedural town against independent references (NumPy geometry, graph search)."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from pictura.maps import load
from pictura.maps.procedural import chunk_polyline, generate
from pictura.maps.roadmap import MARKING_LANE_DIVIDER, MAX_LANE_CHUNK_M, RoadMap

TOWNS = {
    "default": {},
    "small_seed7": {"seed": 7, "blocks_x": 2, "blocks_y": 3},
    "wide_lanes": {"seed": 3, "blocks_x": 3, "blocks_y": 2, "four_lane_prob": 1.0, "lane_width": 4.0},
    "one_row": {"seed": 1, "blocks_x": 3, "blocks_y": 1},
    "merged_irregular": {"seed": 4, "blocks_x": 4, "blocks_y": 3, "merge_prob": 1.0, "irregularity": 0.4},
    # Every newer feature forced on: 3-lane roads, curved corners, roundabouts, parking lanes.
    "all_features": {
        "seed": 19,
        "blocks_x": 4,
        "blocks_y": 3,
        "four_lane_prob": 0.7,
        "six_lane_prob": 0.5,
        "curve_prob": 1.0,
        "roundabouts": 2,
        "roundabout_prob": 1.0,
        "parking_lane_prob": 1.0,
    },
}


@pytest.fixture(scope="module", params=list(TOWNS), ids=list(TOWNS))
def town(request) -> RoadMap:
    return generate(**TOWNS[request.param])


def _point_segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(P, 2) points x (S, 2) segments -> (P, S) distances (m)."""
    ab = b - a
    t = np.einsum("psk,sk->ps", p[:, None, :] - a[None], ab) / np.maximum((ab * ab).sum(-1), 1e-12)
    closest = a[None] + np.clip(t, 0.0, 1.0)[..., None] * ab[None]
    return np.linalg.norm(p[:, None, :] - closest, axis=-1)


def _min_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray, cutoff: float) -> float:
    """min over points (P, 2) and segments (S, 2) of the distance, or ``cutoff`` if none is nearer.

    Only points inside each segment's bounding box grown by ``cutoff`` are measured (points sorted
    by x), which keeps big towns fast without changing the answer below the cutoff.
    """
    order = np.argsort(p[:, 0])
    ps = p[order]
    lo = np.searchsorted(ps[:, 0], np.minimum(a[:, 0], b[:, 0]) - cutoff, "left")
    hi = np.searchsorted(ps[:, 0], np.maximum(a[:, 0], b[:, 0]) + cutoff, "right")
    best = cutoff
    for s in np.flatnonzero(hi > lo):
        q = ps[lo[s] : hi[s]]
        q = q[(q[:, 1] >= min(a[s, 1], b[s, 1]) - cutoff) & (q[:, 1] <= max(a[s, 1], b[s, 1]) + cutoff)]
        if len(q):
            best = min(best, float(_point_segment_distance(q, a[s : s + 1], b[s : s + 1]).min()))
    return best


def _lane_samples(m: RoadMap, per_segment: int = 5) -> np.ndarray:
    """Points along every lane centreline segment (ends and interior), (N, 2)."""
    seg, _ = m.lane_segments()
    t = np.linspace(0.0, 1.0, per_segment)[None, :, None]
    return (seg[:, None, 0, :2] * (1 - t) + seg[:, None, 1, :2] * t).reshape(-1, 2).astype(np.float64)


def _reach(succ: list[list[int]], start: int) -> set[int]:
    seen, queue = {start}, deque([start])
    while queue:
        for n in succ[queue.popleft()]:
            if n not in seen:
                seen.add(n)
                queue.append(n)
    return seen


def test_lane_chunks_are_at_most_10_m(town: RoadMap) -> None:
    for i in range(town.lane_count):
        pts = town.lane(i).astype(np.float64)
        assert len(pts) >= 2
        length = np.linalg.norm(np.diff(pts, axis=0), axis=1).sum()
        assert 0.0 < length <= MAX_LANE_CHUNK_M + 1e-4, (i, length)


def test_successors_are_continuous_and_never_dead_end(town: RoadMap) -> None:
    for i in range(town.lane_count):
        succ = town.successors(i)
        assert len(succ) >= 1, f"lane {i} is a dead end"
        end = town.lane(i)[-1].astype(np.float64)
        for s in succ:
            assert np.linalg.norm(town.lane(int(s))[0] - end) <= 1e-4, (i, int(s))


def test_lane_graph_is_strongly_connected(town: RoadMap) -> None:
    L = town.lane_count
    succ = [[int(s) for s in town.successors(i)] for i in range(L)]
    pred: list[list[int]] = [[] for _ in range(L)]
    for i, ss in enumerate(succ):
        for s in ss:
            pred[s].append(i)
    assert len(_reach(succ, 0)) == L, "some lanes cannot be reached from lane 0"
    assert len(_reach(pred, 0)) == L, "some lanes cannot reach lane 0"


@pytest.mark.parametrize("shape", [(1, 2), (2, 1), (2, 2), (1, 3), (3, 1), (2, 3)])
def test_small_merged_towns_stay_strongly_connected(shape: tuple[int, int]) -> None:
    for seed in range(3):
        m = generate(seed=seed, blocks_x=shape[0], blocks_y=shape[1], merge_prob=1.0, four_lane_prob=0.5)
        succ = [[int(s) for s in m.successors(i)] for i in range(m.lane_count)]
        pred: list[list[int]] = [[] for _ in succ]
        for i, ss in enumerate(succ):
            for s in ss:
                pred[s].append(i)
        assert len(_reach(succ, 0)) == len(_reach(pred, 0)) == m.lane_count, (shape, seed)


def test_single_block_is_two_one_way_loops() -> None:
    # A 1x1 town is only the ring road: no junction lets a car turn around, so the graph is two
    # cycles (clockwise, counter-clockwise), each driveable forever.
    m = generate(seed=1, blocks_x=1, blocks_y=1)
    succ = [[int(s) for s in m.successors(i)] for i in range(m.lane_count)]
    assert all(len(s) >= 1 for s in succ)
    assert len(m.light_position) == 0 and len(m.stop_line_points) == 0
    reach = _reach(succ, 0)
    assert 0 in {n for i in reach for n in succ[i]}  # lane 0 lies on a cycle
    other = min(set(range(m.lane_count)) - reach)
    assert _reach(succ, other) == set(range(m.lane_count)) - reach


def test_lanes_keep_clear_of_road_edges(town: RoadMap) -> None:
    edges = town.road_edge_segments()[:, :, :2].astype(np.float64)
    d = _min_distance(_lane_samples(town), edges[:, 0], edges[:, 1], cutoff=1.0)
    assert d >= 1.0, f"a lane centreline comes {d:.3f} m from a road edge"


def test_lanes_inside_outer_boundary_and_flat(town: RoadMap) -> None:
    assert np.all(town.lane_points[:, 2] == 0.0)
    # The last road-edge loop is the outer boundary rectangle; every lane point is inside it.
    outer = town.road_edge_points[town.road_edge_offsets[-2] : town.road_edge_offsets[-1], :2]
    lo, hi = outer.min(0), outer.max(0)
    assert np.all(town.lane_points[:, :2] > lo) and np.all(town.lane_points[:, :2] < hi)


def test_walls_never_cross_or_touch_lanes(town: RoadMap) -> None:
    walls = town.wall_points[:, :, :2].astype(np.float64)
    assert len(walls) > 0
    d = _min_distance(_lane_samples(town), walls[:, 0], walls[:, 1], cutoff=3.0)
    assert d >= 3.0, f"a wall stands {d:.3f} m from a lane centreline"
    assert np.all((town.wall_height >= 4.0) & (town.wall_height <= 10.0))


def test_stop_lines_sit_across_their_lane_at_junction_entries(town: RoadMap) -> None:
    for s in range(len(town.stop_line_points)):
        lane = int(town.stop_line_lane[s])
        pts = town.lane(lane).astype(np.float64)
        direction = pts[-1, :2] - pts[-2, :2]
        direction /= np.linalg.norm(direction)
        a, b = town.stop_line_points[s, :, :2].astype(np.float64)
        # The line crosses the lane's end point, perpendicular to travel, one lane wide.
        assert np.linalg.norm(0.5 * (a + b) - pts[-1, :2]) <= 1e-3
        assert abs(np.dot(b - a, direction)) <= 1e-3
        assert np.linalg.norm(b - a) == pytest.approx(town.lane_width[lane], abs=1e-3)
        # It is a junction entry: the lane is a road lane and all its successors are junction lanes.
        assert town.lane_junction[lane] == -1
        succ_junctions = {int(town.lane_junction[n]) for n in town.successors(lane)}
        assert succ_junctions == {int(town.light_junction[town.stop_line_light[s]])}


def test_every_signalised_approach_lane_has_one_stop_line(town: RoadMap) -> None:
    signalised = set(town.light_junction.tolist())
    expected = {
        i
        for i in range(town.lane_count)
        if town.lane_junction[i] == -1
        and any(int(town.lane_junction[n]) in signalised for n in town.successors(i))
    }
    assert sorted(town.stop_line_lane.tolist()) == sorted(expected)


def test_lights_hang_5_5_m_high(town: RoadMap) -> None:
    assert len(town.light_position) > 0
    np.testing.assert_allclose(town.light_position[:, 2], 5.5)  # docs/maps.md


def test_lights_hang_on_the_far_side_facing_their_approach(town: RoadMap) -> None:
    for s in range(len(town.stop_line_points)):
        light = int(town.stop_line_light[s])
        assert light >= 0
        pts = town.lane(int(town.stop_line_lane[s])).astype(np.float64)
        travel = pts[-1, :2] - pts[-2, :2]
        travel /= np.linalg.norm(travel)
        stop_mid = town.stop_line_points[s, :, :2].astype(np.float64).mean(0)
        centre = town.junction_center[town.light_junction[light], :2].astype(np.float64)
        head = town.light_position[light, :2].astype(np.float64)
        # Beyond the junction centre along the direction of travel (far side) ...
        assert np.dot(head - stop_mid, travel) > np.dot(centre - stop_mid, travel) + 1.0
        # ... with the lamp facing back at the approaching drivers.
        lamp = np.array([np.cos(town.light_heading[light]), np.sin(town.light_heading[light])])
        assert np.dot(lamp, travel) < -0.99
        # Phase groups split the two axes.
        assert town.light_group[light] == (0 if abs(travel[0]) > 0.5 else 1)
        assert town.light_position[light, 2] > 2.0


def test_parking_spots_beside_lanes_not_on_them(town: RoadMap) -> None:
    if len(town.parking_spots) == 0:
        pytest.skip("this town drew no parking bays")
    seg, _ = town.lane_segments()
    a, b = seg[:, 0, :2].astype(np.float64), seg[:, 1, :2].astype(np.float64)
    spots = town.parking_spots.astype(np.float64)
    d = _point_segment_distance(spots[:, :2], a, b)
    assert d.min() >= 2.5, "a parking spot overlaps a driving lane"
    nearest = d.argmin(1)
    lane_dir = (b - a)[nearest]
    lane_dir /= np.linalg.norm(lane_dir, axis=1, keepdims=True)
    spot_dir = np.stack([np.cos(spots[:, 3]), np.sin(spots[:, 3])], axis=1)
    assert np.all((lane_dir * spot_dir).sum(1) > 0.99), "parked cars face against the nearest lane"
    assert np.all(spots[:, 2] == 0.0)


def test_crosswalks_and_sidewalks_exist_where_signals_do(town: RoadMap) -> None:
    assert len(town.crosswalk_points) == len(town.light_position)
    assert len(town.sidewalk_offsets) - 1 >= 2
    for quad in town.crosswalk_points[:, :, :2].astype(np.float64):
        sides = np.linalg.norm(np.roll(quad, -1, axis=0) - quad, axis=1)
        assert np.all(sides > 1.0)
        assert np.sort(sides)[:2] == pytest.approx([3.0, 3.0], abs=1e-3)  # docs/maps.md: 3 m wide


def test_sidewalk_centrelines_run_4_m_behind_the_curb() -> None:
    # docs/maps.md: sidewalks 3 m wide, their centreline 4 m behind the curb (a 2.5 m verge,
    # then half the sidewalk); measured where a sidewalk runs along a road edge
    town = generate(seed=0)
    edges = town.road_edge_segments()[:, :, :2].astype(np.float64)
    points = town.sidewalk_points[:, :2].astype(np.float64)
    behind = np.array([_point_segment_distance(p[None], edges[:, 0], edges[:, 1]).min() for p in points])
    assert np.mean(np.abs(behind - 4.0) < 0.05) > 0.9  # curved pieces are chords: a few cm in


def test_same_seed_same_map_and_seeds_differ() -> None:
    a, b, c = (
        generate(seed=5, blocks_x=3, blocks_y=3),
        generate(seed=5, blocks_x=3, blocks_y=3),
        generate(seed=6, blocks_x=3, blocks_y=3),
    )
    arrays = [k for k, v in vars(a).items() if isinstance(v, np.ndarray)]
    for k in arrays:
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)
    assert any(
        getattr(a, k).shape != getattr(c, k).shape or not np.array_equal(getattr(a, k), getattr(c, k))
        for k in arrays
    )


def test_roads_mix_two_and_four_lanes() -> None:
    assert np.count_nonzero(generate(seed=0, four_lane_prob=0.0).marking_kind == MARKING_LANE_DIVIDER) == 0
    assert np.count_nonzero(generate(seed=0, four_lane_prob=1.0).marking_kind == MARKING_LANE_DIVIDER) > 0
    # The default mix: one town holds both kinds. A 4-lane road has a dashed divider one lane
    # width beside its centre line; a 2-lane road has none.
    m = generate(seed=0)
    centre_seg, kinds = m.marking_segments()
    mid = centre_seg[kinds != MARKING_LANE_DIVIDER, :, :2].mean(1).astype(np.float64)
    div = centre_seg[kinds == MARKING_LANE_DIVIDER, :, :2].astype(np.float64)
    nearest = _point_segment_distance(mid, div[:, 0], div[:, 1]).min(1)
    four_lane = nearest < 5.0  # 3.5 m across, plus at most half a dash gap along the road
    assert four_lane.any() and not four_lane.all()
    m = generate(seed=0)
    assert np.all(m.lane_speed_limit > 0) and np.all(np.abs(m.lane_width - 3.5) < 1e-6)


def test_grid_junction_count() -> None:
    m = load("procedural:seed=2,blocks_x=3,blocks_y=2,merge_prob=0,roundabouts=0")
    assert len(m.junction_center) == 4 * 3
    # 4-way inside: (3-1)*(2-1) = 2; T on the border: 2*(3-1) + 2*(2-1) = 6; 4 L-bends unsignalised.
    assert len(m.light_position) == 2 * 4 + 6 * 3


def test_merged_blocks_drop_their_road() -> None:
    # No roundabouts: their central islands would add road-edge loops and remove lights.
    plain = generate(seed=4, blocks_x=4, blocks_y=3, merge_prob=0.0, irregularity=0.0, roundabouts=0)
    merged = generate(seed=4, blocks_x=4, blocks_y=3, merge_prob=1.0, irregularity=0.0, roundabouts=0)
    # One curb loop per block plus the outer boundary; merging pairs removes loops and lanes.
    assert plain.road_edge_count == 4 * 3 + 1
    n_merges = plain.road_edge_count - merged.road_edge_count
    assert n_merges >= 1
    assert merged.lane_count < plain.lane_count
    # A node that lost two opposite arms is plain road: no lights there, straight lanes only.
    assert len(merged.light_position) < len(plain.light_position)


def test_irregular_spacing_keeps_junctions_on_grid_lines() -> None:
    m = generate(seed=9, blocks_x=3, blocks_y=3, irregularity=0.4)
    c = m.junction_center[:, :2].reshape(4, 4, 2)  # row j, column i
    assert np.all(np.ptp(c[:, :, 0], axis=0) == 0.0) and np.all(np.ptp(c[:, :, 1], axis=1) == 0.0)
    gaps = np.diff(c[0, :, 0])
    assert np.all((gaps >= 80.0 * 0.6 - 1e-3) & (gaps <= 80.0 * 1.4 + 1e-3)) and np.ptp(gaps) > 1.0


@pytest.mark.parametrize(
    "source, key",
    [
        ("procedural:seed=0,foo=1", "foo"),
        ("procedural:seed=0,blocks_x=0", "blocks_x"),
        ("procedural:seed=0,blocks_y=2.5", "blocks_y"),
        ("procedural:seed=-1", "seed"),
        ("procedural:seed=0,block_size=20", "block_size"),
        ("procedural:seed=0,lane_width=0", "lane_width"),
        ("procedural:seed=0,four_lane_prob=1.5", "four_lane_prob"),
        ("procedural:seed=0,wall_prob=x", "wall_prob"),
        ("procedural:seed=0,irregularity=0.5", "irregularity"),
        ("procedural:seed=0,block_size=50,irregularity=0.4", "block_size"),
    ],
)
def test_bad_keys_raise_naming_the_key(source: str, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        load(source)


def test_chunk_polyline_matches_closed_form() -> None:
    # A 25 m straight line -> 3 pieces of 25/3 m sharing their cut points.
    pieces = chunk_polyline(np.array([[0.0, 0.0], [25.0, 0.0]]), 10.0)
    assert len(pieces) == 3
    np.testing.assert_allclose([p[0, 0] for p in pieces], [0.0, 25 / 3, 50 / 3])
    np.testing.assert_allclose([p[-1, 0] for p in pieces], [25 / 3, 50 / 3, 25.0])
    # A bent polyline keeps its corner vertex inside the piece that spans it.
    pieces = chunk_polyline(np.array([[0.0, 0.0], [6.0, 0.0], [6.0, 6.0]]), 10.0)
    assert len(pieces) == 2
    np.testing.assert_allclose(pieces[0], [[0, 0], [6, 0]], atol=1e-12)
    np.testing.assert_allclose(pieces[1], [[6, 0], [6, 6]], atol=1e-12)


def test_junction_turns_are_limited_to_8_3_m_s_and_roads_to_their_own_limit():
    # docs/maps.md: speed_limit (13.9 m/s) on 2-lane roads, 1.2x on 4-lane, 1.4x on 6-lane roads,
    # 8.3 m/s on junction turns and roundabout lanes
    m = generate(**TOWNS["all_features"])
    roads = np.array([13.9, 1.2 * 13.9, 1.4 * 13.9])
    limit = m.lane_speed_limit
    on_road = np.isclose(limit[:, None], roads[None], atol=1e-3).any(1)
    turn = np.isclose(limit, 8.3, atol=1e-3)
    assert np.all(on_road | turn)
    assert not turn[m.lane_junction < 0].any()  # only junction lanes turn
    assert turn[m.lane_junction >= 0].sum() >= 8  # and their turns do
