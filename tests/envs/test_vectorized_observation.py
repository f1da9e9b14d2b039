"""Vectorized observations against a NumPy reference on hand-built scenes (CPU Warp)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import warp as wp

from pictura.envs.observations import (
    BOUNDARY_WALL,
    MIN_SEGMENT_M,
    PARTNER_WIDTH,
    SEGMENT_WIDTH,
    TRAFFIC_WIDTH,
    VectorizedObservation,
    VectorizedObservationConfig,
    chain_segments,
    polyline_pieces,
)
from pictura.maps.roadmap import LIGHT_GREEN, LIGHT_OFF, LIGHT_RED, LIGHT_YELLOW, RoadMap, pack_polylines
from pictura.sim.snapshot import BOX_INVALID, BOX_ROW_FLOATS, BoxView, WorldLayout, box_row
from tests.data import data_path

wp.config.log_level = wp.LOG_WARNING  # no start-up banner or module-load lines (INFO)

# ---- the scene --------------------------------------------------------------------------------


def _line(x0, y0, x1, y1, step=10.0):
    n = max(1, int(round(np.hypot(x1 - x0, y1 - y0) / step)))
    t = np.linspace(0.0, 1.0, n + 1)
    return np.stack([x0 + (x1 - x0) * t, y0 + (y1 - y0) * t, np.zeros_like(t)], axis=1).astype(np.float32)


def hand_map() -> RoadMap:
    """A straight two-lane road along x (10 m chunks), edges at y = +-5, a far-away lane, a
    single 100 m lane segment, a curved road edge sampled every ~1 m, a 6 m wall in two chained
    quads across the road, a lone 12 m wall, three stop lines (lights 0, 1 and none)."""
    lanes = [
        _line(-120, -1.75, 320, -1.75),  # eastbound (chunked every 10 m)
        _line(320, 1.75, -120, 1.75),  # westbound
        _line(0, 400, 50, 400),  # far away: never in a window near the road
        np.array([[0, -30, 0], [100, -30, 0]], np.float32),  # one 100 m segment (WOMD-like)
    ]
    lane_points, lane_offsets = pack_polylines(lanes)
    angle = np.linspace(0.0, np.pi / 2, 25)
    curve = np.stack([130 + 15 * np.cos(angle), -40 + 15 * np.sin(angle), np.zeros(25)], axis=1).astype(np.float32)
    edges = [_line(-120, -5, 320, -5), _line(-120, 5, 320, 5), curve]
    edge_points, edge_offsets = pack_polylines(edges)
    return RoadMap(
        name="hand",
        lane_points=lane_points,
        lane_offsets=lane_offsets,
        lane_width=np.array([3.5, 3.0, 3.5, 4.0], np.float32),
        lane_speed_limit=np.zeros(4, np.float32),
        lane_junction=np.full(4, -1, np.int32),
        lane_successor_offsets=np.zeros(5, np.int32),
        road_edge_points=edge_points,
        road_edge_offsets=edge_offsets,
        stop_line_points=np.array(
            [[[50, -3.5, 0], [50, 0, 0]], [[120, 0, 0], [120, 3.5, 0]], [[150, -3.5, 0], [150, 0, 0]]], np.float32
        ),
        stop_line_lane=np.array([0, 1, 0], np.int32),
        stop_line_light=np.array([0, 1, -1], np.int32),
        light_position=np.array([[55, -6, 5], [115, 6, 5]], np.float32),
        light_heading=np.array([np.pi, 0.0], np.float32),
        light_junction=np.zeros(2, np.int32),
        light_group=np.array([0, 1], np.int32),
        junction_center=np.array([[85, 0, 0]], np.float32),
        wall_points=np.array([[[10, -3, 0], [10, 0, 0]], [[10, 0, 0], [10, 3, 0]], [[60, 8, 0], [60, 20, 0]]], np.float32),
        wall_height=np.array([2.5, 2.5, 2.5], np.float32),
    )


def layout(road_map: RoadMap, worlds: int = 2, slots: int = 4) -> WorldLayout:
    return WorldLayout.uniform([0] * worlds, slots, [len(road_map.light_position)])


def boxes(rows: list[tuple[float, float, float]], slots: int, length=4.5, width=2.0) -> torch.Tensor:
    """(slots, 8) snapshot boxes: rows of (x, y, heading); the remaining slots empty."""
    out = torch.zeros(slots, BOX_ROW_FLOATS)
    BoxView(out).kind = BOX_INVALID
    for i, (x, y, h) in enumerate(rows):
        out[i] = torch.tensor(
            box_row(x=x, y=y, z=0.0, heading=h, length=length + 0.1 * i, width=width + 0.05 * i, height=1.5, kind=0.0)
        )
    return out


# ---- an independent NumPy reference -------------------------------------------------------------


def _ego(p, origin, heading):
    d = np.asarray(p, np.float64) - origin
    c, s = np.cos(heading), np.sin(heading)
    return np.array([c * d[0] + s * d[1], -s * d[0] + c * d[1]])


def _inside(q):
    return -60.0 <= q[0] <= 200.0 and abs(q[1]) <= 50.0


def _point_at(pts, target):
    """The point at arc length ``target`` along polyline ``pts`` (walk the segments)."""
    walked = 0.0
    for k in range(len(pts) - 1):
        step = np.linalg.norm(pts[k + 1] - pts[k])
        if walked + step >= target - 1e-9 or k == len(pts) - 2:
            t = 0.0 if step == 0 else min(1.0, max(0.0, (target - walked) / step))
            return pts[k] + (pts[k + 1] - pts[k]) * t
        walked += step
    return pts[-1]


def _pieces(pts, span):
    """Chords of the equal arc-length pieces (<= span) of one polyline (plain loop)."""
    pts = np.asarray(pts, np.float64)[:, :2]
    total = sum(np.linalg.norm(pts[k + 1] - pts[k]) for k in range(len(pts) - 1))
    n = max(1, int(np.ceil(total / span - 1e-6)))
    ends = [_point_at(pts, total * k / n) for k in range(n + 1)]
    return list(zip(ends[:-1], ends[1:], strict=True))


def _segment_rows(road_map, include_walls, span):
    """(a, b, last-column value) of every lane and boundary piece, in packing order."""
    span = 10.0 if span is None else span
    lanes, bounds = [], []
    for i in range(road_map.lane_count):
        lanes += [(a, b, road_map.lane_width[i] / 5.0) for a, b in _pieces(road_map.lane(i), span)]
    for i in range(road_map.road_edge_count):
        pts = road_map.road_edge_points[road_map.road_edge_offsets[i] : road_map.road_edge_offsets[i + 1]]
        bounds += [(a, b, 0.0) for a, b in _pieces(pts, span)]
    if include_walls:
        runs = [[road_map.wall_points[0, 0], road_map.wall_points[0, 1]]]
        for w in road_map.wall_points[1:]:
            if np.allclose(w[0], runs[-1][-1]):
                runs[-1].append(w[1])
            else:
                runs.append([w[0], w[1]])
        for run in runs:
            bounds += [(a, b, 1.0) for a, b in _pieces(np.array(run), span)]
    return lanes, bounds


def reference(road_map, lay, box, light, speed, privileged=True, caps=(16, 80, 80, 10), include_walls=True, span=None):
    """Loop-over-everything reference of every slot's observation (numpy dict). ``road_map``:
    one RoadMap, or the list ``lay.world_map`` indexes."""
    road_maps = road_map if isinstance(road_map, list) else [road_map]
    box, light, speed = box.numpy().astype(np.float64), light.numpy(), speed.numpy()
    view = BoxView(box)
    S = len(box)
    P, NL, NB, NT = caps
    out = {
        "partners": np.zeros((S, P, PARTNER_WIDTH)),
        "partners_aux": np.zeros((S, P, 1)),
        "partners_mask": np.zeros((S, P), bool),
        "lanes": np.zeros((S, NL, SEGMENT_WIDTH)),
        "lanes_mask": np.zeros((S, NL), bool),
        "boundaries": np.zeros((S, NB, SEGMENT_WIDTH)),
        "boundaries_mask": np.zeros((S, NB), bool),
        "traffic": np.zeros((S, NT, TRAFFIC_WIDTH)),
        "traffic_mask": np.zeros((S, NT), bool),
    }
    segment_rows = [_segment_rows(m, include_walls, span) for m in road_maps]
    for i in range(S):
        if view.kind[i] < 0:
            continue
        o, h = view.xy[i], view.heading[i]
        w = lay.slot_world[i]
        road_map = road_maps[lay.world_map[w]]
        lanes, bounds = segment_rows[lay.world_map[w]]
        cands = []
        for j in range(S):
            if j != i and view.kind[j] >= 0 and lay.slot_world[j] == w:
                q = _ego(view.xy[j], o, h)
                if _inside(q):
                    cands.append((np.linalg.norm(q), j, q))
        for k, (d, j, q) in enumerate(sorted(cands, key=lambda c: (c[0], c[1]))[:P]):
            rh = view.heading[j] - h
            out["partners"][i, k] = [
                q[0] / 200, q[1] / 200, view.length[j] / 10, view.width[j] / 5, np.cos(rh), np.sin(rh), d / 200
            ]
            out["partners_aux"][i, k, 0] = speed[j] / 40 if privileged else 0.0
            out["partners_mask"][i, k] = True
        for name, rows, cap in (("lanes", lanes, NL), ("boundaries", bounds, NB)):
            cands = []
            for idx, (a, b, last) in enumerate(rows):
                mid = _ego((a + b) / 2, o, h)
                if _inside(mid):
                    cands.append((np.linalg.norm(mid), idx, mid, a, b, last))
            for k, (_, _, mid, a, b, last) in enumerate(sorted(cands, key=lambda c: (c[0], c[1]))[:cap]):
                u = (b - a) / np.linalg.norm(b - a)
                ang = np.arctan2(u[1], u[0]) - h
                out[name][i, k] = [mid[0] / 200, mid[1] / 200, np.linalg.norm(b - a) / 2 / 10, np.cos(ang), np.sin(ang), last]
                out[f"{name}_mask"][i, k] = True
        cands = []
        for idx, line in enumerate(road_map.stop_line_points):
            mid = _ego((line[0, :2] + line[1, :2]) / 2, o, h)
            if _inside(mid):
                cands.append((np.linalg.norm(mid), idx))
        for k, (_, idx) in enumerate(sorted(cands)[:NT]):
            line = road_map.stop_line_points[idx]
            a, b = _ego(line[0, :2], o, h), _ego(line[1, :2], o, h)
            lt = road_map.stop_line_light[idx]
            state = LIGHT_OFF if lt < 0 else light[lay.world_light_start[w] + lt]
            out["traffic"][i, k, :4] = [a[0] / 200, a[1] / 200, b[0] / 200, b[1] / 200]
            out["traffic"][i, k, 4 + state] = 1.0
            out["traffic_mask"][i, k] = True
    return out


def assert_matches(got: dict, want: dict):
    for key, value in want.items():
        g = got[key].numpy()
        if value.dtype == bool:
            np.testing.assert_array_equal(g, value, err_msg=key)
        else:
            np.testing.assert_allclose(g, value, atol=2e-5, err_msg=key)


@pytest.fixture(scope="module")
def scene():
    road_map = hand_map()
    lay = layout(road_map)
    # world 0: slots 0-3; world 1: slots 4-7 (slot 7 empty). Positions avoid exact distance
    # ties with the 10 m lane chunks, so the float32 kernel and the float64 loop sort alike.
    box = torch.cat(
        [
            boxes([(0.7, -1.75, 0.0), (31.3, -1.75, 0.1), (15.2, 1.75, np.pi), (-40.6, -1.75, 0.05)], 4),
            boxes([(100.45, 1.75, np.pi), (5.3, -1.75, 0.0), (80.1, 30, 2.0)], 4),
        ]
    )
    light = torch.tensor([LIGHT_RED, LIGHT_GREEN, LIGHT_YELLOW, LIGHT_OFF], dtype=torch.int32)
    speed = torch.tensor([10.0, -1.5, 7.0, 3.0, 12.0, 0.5, 2.0, 0.0])
    return road_map, lay, box, light, speed


# ---- tests ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("caps", [(16, 80, 80, 10), (2, 7, 5, 1)])
def test_matches_numpy_reference(scene, caps):
    road_map, lay, box, light, speed = scene
    obs = VectorizedObservation([road_map], lay, "cpu", "privileged", *caps)
    got = obs.build(box, light, speed)
    want = reference(road_map, lay, box, light, speed, True, caps)
    assert_matches(got, want)
    assert got["lanes_mask"][0].sum() == min(caps[1], int(want["lanes_mask"][0].sum()))
    assert not got["partners_mask"][7].any() and not got["lanes_mask"][7].any()  # empty slot


def test_map_far_from_the_origin_matches_reference_on_a_grid_of_its_own_size(scene):
    """A WOMD scene lies kilometres from (0, 0): the observation grid spans the map's pieces,
    not the origin, and the sets still match the reference (the hand scene moved by 7.5 km)."""
    import dataclasses

    road_map, lay, box, light, speed = scene
    shift = np.array([-7500.0, -6500.0, 0.0], np.float32)
    far = dataclasses.replace(
        road_map,
        lane_points=road_map.lane_points + shift,
        road_edge_points=road_map.road_edge_points + shift,
        stop_line_points=road_map.stop_line_points + shift,
        light_position=road_map.light_position + shift,
        junction_center=road_map.junction_center + shift,
        wall_points=road_map.wall_points + shift,
    )
    far_box = box.clone()
    far_box[:, 0] += float(shift[0])
    far_box[:, 1] += float(shift[1])
    obs = VectorizedObservation([far], lay, "cpu", "privileged")
    near = VectorizedObservation([road_map], lay, "cpu", "privileged")  # the hand map holds (0, 0)
    assert int(obs.map_cell_start.numpy()[-1]) == int(near.map_cell_start.numpy()[-1]) < 1000
    got = obs.build(far_box, light, speed)
    want = reference(far, lay, far_box, light, speed, True, (16, 80, 80, 10))
    for key, value in want.items():  # positions are float32 at 7.5 km: ~1 mm
        if value.dtype == bool:
            np.testing.assert_array_equal(got[key].numpy(), value, err_msg=key)
        else:
            np.testing.assert_allclose(got[key].numpy(), value, atol=2e-5, err_msg=key)


def scattered_map(rng: np.random.Generator, lattice: bool) -> RoadMap:
    """Far more lanes, road edges, walls and stop lines than the set capacities take, scattered
    over 400 x 240 m as short pieces (1 to 9 m: one piece each), some lanes, edges and stop
    lines duplicated (equal distances: ties broken by id). With ``lattice`` every endpoint sits
    on a 0.5 m lattice, so from a lattice point at heading 0 every float32 distance is exact
    and the many equal distances stay equal."""

    def pieces(n):
        mid = rng.uniform([-150.0, -120.0], [250.0, 120.0], (n, 2))
        angle = rng.uniform(0.0, 2 * np.pi, n)
        half = rng.uniform(1.0, 4.5, n)[:, None] * np.stack([np.cos(angle), np.sin(angle)], axis=1)
        seg = np.stack([mid - half, mid + half], axis=1)
        if lattice:
            seg = np.round(seg * 2.0) / 2.0
        return np.concatenate([seg, np.zeros((n, 2, 1))], axis=2).astype(np.float32)

    lanes, edges, stops = pieces(700), pieces(500), pieces(60)
    lanes, edges, stops = (np.concatenate([x, x[::25]]) for x in (lanes, edges, stops))
    lane_points, lane_offsets = pack_polylines(list(lanes))
    edge_points, edge_offsets = pack_polylines(list(edges))
    L, K = len(lanes), len(stops)
    return RoadMap(
        name="scattered",
        lane_points=lane_points,
        lane_offsets=lane_offsets,
        lane_width=rng.uniform(2.5, 4.0, L).astype(np.float32),
        lane_speed_limit=np.zeros(L, np.float32),
        lane_junction=np.full(L, -1, np.int32),
        lane_successor_offsets=np.zeros(L + 1, np.int32),
        road_edge_points=edge_points,
        road_edge_offsets=edge_offsets,
        stop_line_points=stops,
        stop_line_lane=rng.integers(0, L, K).astype(np.int32),
        stop_line_light=rng.integers(-1, 4, K).astype(np.int32),
        light_position=np.zeros((4, 3), np.float32),
        light_heading=np.zeros(4, np.float32),
        light_junction=np.zeros(4, np.int32),
        light_group=np.arange(4, dtype=np.int32),
        junction_center=np.zeros((1, 3), np.float32),
        wall_points=pieces(40),
        wall_height=np.full(40, 2.5, np.float32),
    )


def window_candidates(road_map: RoadMap, segment_rows, box: np.ndarray, slot: int) -> dict[str, np.ndarray]:
    """Per set, the float64 distances of the candidates in ``slot``'s window (one world;
    ``segment_rows`` from `_segment_rows`), and ``"margin"``: how close any candidate of any set
    comes to the window's border (m)."""
    view = BoxView(box)
    o, h = view.xy[slot].astype(np.float64), float(view.heading[slot])
    lanes, bounds = segment_rows
    points = {
        "partners": [view.xy[j] for j in range(len(box)) if j != slot and view.kind[j] >= 0],
        "lanes": [(a + b) / 2 for a, b, _ in lanes],
        "boundaries": [(a + b) / 2 for a, b, _ in bounds],
        "traffic": [(line[0, :2] + line[1, :2]) / 2 for line in road_map.stop_line_points],
    }
    out, margin = {}, np.inf
    for key, pts in points.items():
        q = np.array([_ego(p, o, h) for p in pts])
        border = np.minimum.reduce([np.abs(q[:, 0] + 60.0), np.abs(q[:, 0] - 200.0), np.abs(np.abs(q[:, 1]) - 50.0)])
        margin = min(margin, border.min())
        out[key] = np.linalg.norm(q[[_inside(x) for x in q]], axis=1)
    out["margin"] = np.array(margin)
    return out


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("caps", [(16, 80, 80, 10), (5, 33, 17, 3)])
@pytest.mark.parametrize("lattice", [True, False], ids=["lattice-heading0", "anywhere-rotated"])
def test_more_candidates_than_capacity_match_numpy_reference(caps, lattice, device):
    """Every set overflows its capacity: the kept members, their order (ties by id) and values
    match the reference. Off the lattice, float32 and float64 may order near-equal distances
    differently, so only slots whose candidates are all 1 mm apart (or exactly equal: duplicated
    pieces) and 1 mm off the window's border are compared."""
    rng = np.random.default_rng(7 if lattice else 8)
    road_map = scattered_map(rng, lattice)
    lay = layout(road_map, worlds=1, slots=64)
    xy = rng.uniform([-60.0, -50.0], [180.0, 50.0], (48, 2))
    heading = np.zeros(48) if lattice else rng.uniform(-np.pi, np.pi, 48)
    if lattice:
        xy = np.round(xy * 2.0) / 2.0
    box = boxes([(x, y, h) for (x, y), h in zip(xy, heading, strict=True)], 64)
    light = torch.tensor([LIGHT_RED, LIGHT_YELLOW, LIGHT_GREEN, LIGHT_OFF], dtype=torch.int32)
    speed = torch.linspace(-2.0, 20.0, 64)
    obs = VectorizedObservation([road_map], lay, device, "privileged", *caps)
    got = {k: v.cpu() for k, v in obs.build(box.to(device), light.to(device), speed.to(device)).items()}
    want = reference(road_map, lay, box, light, speed, True, caps)

    probed, overflowing = [], dict.fromkeys(("partners", "lanes", "boundaries", "traffic"), 0)
    segment_rows = _segment_rows(road_map, True, None)
    for slot in range(48):
        cands = window_candidates(road_map, segment_rows, box.numpy(), slot)
        gaps = [np.diff(np.sort(cands[key])) for key in overflowing]
        if lattice or (cands["margin"] > 1e-3 and all(np.all((g == 0) | (g > 1e-3)) for g in gaps)):
            probed.append(slot)
            for key, cap in zip(overflowing, caps, strict=True):
                overflowing[key] += len(cands[key]) > cap
    assert len(probed) >= (48 if lattice else 12)
    assert all(n >= len(probed) // 2 for n in overflowing.values()), overflowing
    assert_matches({k: v[probed] for k, v in got.items()}, {k: v[probed] for k, v in want.items()})
    assert not got["lanes_mask"][48:].any()  # empty slots


def test_nearest_partner_first_and_worlds_apart(scene):
    road_map, lay, box, light, speed = scene
    out = VectorizedObservation([road_map], lay, "cpu").build(box, light, speed)
    # Slot 0 at x=0.7: slot 2 (~15 m) is nearer than slot 1 (30.6 m) and slot 3 (41.3 m behind).
    dist = out["partners"][0, :3, 6] * 200
    np.testing.assert_allclose(dist.numpy(), [np.hypot(14.5, 3.5), 30.6, 41.3], atol=1e-4)
    assert out["partners_mask"][0].tolist()[:4] == [True, True, True, False]
    # Slot 5 (world 1) sits 4.6 m from slot 0 but in another world: never a partner.
    assert out["partners_mask"][0].sum() == 3
    x = out["partners"][4, :, 0][out["partners_mask"][4]] * 200
    assert torch.all(x > 0)  # slot 4 faces west: both partners lie west of it, i.e. ahead
    # Slot 6 (35 m away, off the road) comes before slot 5 (95 m down the road).
    dist = out["partners"][4, :2, 6].numpy() * 200
    np.testing.assert_allclose(dist, [np.hypot(20.35, 28.25), np.hypot(95.15, 3.5)], atol=1e-3)


def test_partner_behind_a_wall_is_present(scene):
    road_map, lay, box, light, speed = scene
    out = VectorizedObservation([road_map], lay, "cpu", include_walls=True).build(box, light, speed)
    # The wall stands at x=10 across the road, between slot 0 (x=0.7) and slot 2 (x=15.2).
    walls = out["boundaries"][0][out["boundaries_mask"][0]]
    assert (walls[:, 5] == BOUNDARY_WALL).sum() == 3  # the chained 6 m wall + the 12 m one in 2 pieces
    np.testing.assert_allclose(walls[walls[:, 5] == BOUNDARY_WALL][0, :2].numpy(), [9.3 / 200, 1.75 / 200], atol=1e-6)
    assert out["partners_mask"][0, 0] and abs(out["partners"][0, 0, 0].item() * 200 - 14.5) < 1e-4
    no_walls = VectorizedObservation([road_map], lay, "cpu", include_walls=False).build(box, light, speed)
    assert not (no_walls["boundaries"][0][no_walls["boundaries_mask"][0]][:, 5] == BOUNDARY_WALL).any()


def test_blind_variant_zeroes_speed_and_ego_aux(scene):
    road_map, lay, box, light, speed = scene
    priv = VectorizedObservation([road_map], lay, "cpu", "privileged")
    blind = VectorizedObservation([road_map], lay, "cpu", "blind")
    a, b = priv.build(box, light, speed), blind.build(box, light, speed)
    assert a["partners_aux"].abs().sum() > 0
    assert torch.equal(b["partners_aux"], torch.zeros_like(b["partners_aux"]))
    for key in ("partners", "partners_mask", "lanes", "boundaries", "traffic", "traffic_mask"):
        assert torch.equal(a[key], b[key]), key
    ego_aux = torch.tensor([[0.3, 0.9], [-1.0, 0.5]])
    assert torch.equal(priv.ego_aux(ego_aux), ego_aux)
    assert torch.equal(blind.ego_aux(ego_aux), torch.zeros(2, 2))
    assert_matches(b, reference(road_map, lay, box, light, speed, privileged=False))


def test_window_excludes_what_lies_outside():
    road_map = hand_map()
    lay = layout(road_map, worlds=1, slots=8)
    inside = [(199.0, 0.0), (-59.0, 0.0), (0.0, 49.0), (0.0, -49.0)]
    outside = [(201.0, 0.0), (-61.0, 0.0), (0.0, 51.0)]
    box = boxes([(0.0, 0.0, 0.0)] + [(x, y, 0.0) for x, y in inside + outside], 8)
    out = VectorizedObservation([road_map], lay, "cpu").build(box, torch.zeros(2, dtype=torch.int32), torch.zeros(8))
    kept = out["partners"][0][out["partners_mask"][0]][:, :2] * 200
    assert sorted(map(tuple, kept.round().tolist())) == sorted(inside)
    for key in ("lanes", "boundaries", "traffic"):
        mids = out[key][0][out[f"{key}_mask"][0]]
        if key == "traffic":
            mids = (mids[:, 0:2] + mids[:, 2:4]) / 2
        x, y = mids[:, 0] * 200, mids[:, 1] * 200
        assert torch.all((x >= -60) & (x <= 200) & (y.abs() <= 50)), key
    # The lane at y=400 never shows; the stop line 150 m ahead (no light) reads "off".
    traffic = out["traffic"][0][out["traffic_mask"][0]]
    assert traffic.shape[0] == 3
    far = traffic[traffic[:, 0] * 200 > 140][0]
    assert far[4:].tolist() == [0, 0, 0, 1]
    near = traffic[(traffic[:, 0] * 200 - 50).abs() < 1e-3][0]
    assert near[4:].tolist() == [1, 0, 0, 0]  # light 0 is red (0)


def test_subdivision_splits_a_100m_segment_into_20_pieces():
    seg = np.array([[0, -30, 0], [100, -30, 0]], np.float32)
    pieces, owner = polyline_pieces(seg, np.array([0, 2]), 5.0)
    assert pieces.shape == (20, 2, 2) and np.all(owner == 0)
    np.testing.assert_allclose(np.linalg.norm(pieces[:, 1] - pieces[:, 0], axis=1), 5.0, atol=1e-5)
    np.testing.assert_allclose(pieces[:, 0, 0], np.arange(0, 100, 5), atol=1e-5)
    road_map = hand_map()
    lay = layout(road_map, worlds=1, slots=1)
    coarse = VectorizedObservation([road_map], lay, "cpu")
    fine = VectorizedObservation([road_map], lay, "cpu", subdivide_long_segments=5.0)
    # Native 10 m: 44 + 44 + 5 + 10 pieces; at 5 m every one of them splits in two.
    assert coarse.map_segment_counts[0]["lane"] == 103
    assert fine.map_segment_counts[0]["lane"] == 206
    box = boxes([(50.8, -25.3, 0.0)], 1)
    args = (box, torch.zeros(2, dtype=torch.int32), torch.zeros(1))
    out = fine.build(*args)
    lanes = out["lanes"][0][out["lanes_mask"][0]]
    assert torch.all(lanes[:, 2] <= 0.25 + 1e-6)  # half-length / 10 of a <= 5 m piece
    wide = lanes[(lanes[:, 5] - 4.0 / 5).abs() < 1e-6]  # the 4 m wide lane: the split segment
    assert wide.shape[0] == 20
    assert_matches(out, reference(road_map, lay, *args, span=5.0))


def test_history_rebuild_equals_acting_observation(scene):
    road_map, lay, box, light, speed = scene
    obs = VectorizedObservation([road_map], lay, "cpu")
    T = 3
    box_hist = torch.stack([box + torch.tensor([3.0 * t, 0, 0, 0.05 * t, 0, 0, 0, 0]) * (box[:, 7:] >= 0) for t in range(T)])
    light_hist = torch.stack([light.roll(t) for t in range(T)])
    speed_hist = torch.stack([speed * (t + 1) for t in range(T)])
    per_step = [obs.build(box_hist[t], light_hist[t], speed_hist[t]) for t in range(T)]
    stacked = obs.build(box_hist, light_hist, speed_hist)
    steps = torch.tensor([2, 0, 1, 2, 0])
    slots = torch.tensor([0, 4, 6, 7, 1])
    requested = obs.build_requests(box_hist, light_hist, speed_hist, steps, slots)
    for key in per_step[0]:
        assert torch.equal(stacked[key], torch.stack([p[key] for p in per_step])), key
        assert torch.equal(requested[key], stacked[key][steps, slots]), key


def test_parked_cars_join_the_partner_set_with_zero_speed(scene):
    road_map, lay, box, light, speed = scene
    obs = VectorizedObservation([road_map], lay, "cpu")
    parked = torch.zeros(2 * 2, 8)
    parked[:, 7] = -1.0
    parked[0] = torch.tensor([8.0, -4.0, 0.0, 0.0, 4.0, 1.8, 1.5, 0.0])  # world 0, 7.6 m from slot 0
    out = obs.build(box, light, speed, parked_box=parked)
    assert out["partners_mask"][0].sum() == 4
    np.testing.assert_allclose(out["partners"][0, 0, :2].numpy(), [7.3 / 200, -2.25 / 200], atol=1e-6)
    assert out["partners_aux"][0, 0, 0] == 0.0
    assert out["partners_mask"][4].sum() == 2  # world 1 has no parked car


def test_spec_and_config():
    road_map = hand_map()
    lay = layout(road_map)
    obs = VectorizedObservationConfig(variant="blind", max_lanes=12).build([road_map], lay, "cpu")
    spec = obs.spec(lay.num_slots, "cpu")
    out = obs.build(boxes([(0, 0, 0)], 8), torch.zeros(4, dtype=torch.int32), torch.zeros(8))
    for key, value in out.items():
        assert spec[key].shape == value.shape and spec[key].dtype == value.dtype, key
        assert spec[key].is_in(value), key
    assert spec["ego_aux"].shape == (8, 2) and spec["lanes"].shape == (8, 12, 6)


def test_clear_errors():
    road_map = hand_map()
    lay = layout(road_map)
    with pytest.raises(ValueError, match="max_lanes"):
        VectorizedObservation([road_map], lay, "cpu", max_lanes=-1)
    with pytest.raises(ValueError, match="variant"):
        VectorizedObservation([road_map], lay, "cpu", variant="oracle")
    with pytest.raises(ValueError, match="subdivide_long_segments"):
        VectorizedObservation([road_map], lay, "cpu", subdivide_long_segments=0.0)
    with pytest.raises(ValueError, match="world_light_start"):
        VectorizedObservation([road_map], WorldLayout.uniform([0], 4, [5]), "cpu")
    obs = VectorizedObservation([road_map], lay, "cpu")
    with pytest.raises(ValueError, match="agent_box"):
        obs.build(torch.zeros(7, 8), torch.zeros(2, dtype=torch.int32), torch.zeros(7))
    with pytest.raises(ValueError, match="light_state"):
        obs.build(torch.zeros(8, 8), torch.zeros(3, dtype=torch.int32), torch.zeros(8))


def test_pieces_merge_fine_polylines_and_chain_walls():
    # A quarter circle sampled every ~1 m (23.6 m of arc) -> 3 chords whose ends sit on the arc
    # at equal arc length.
    angle = np.linspace(0.0, np.pi / 2, 25)
    arc = np.stack([15 * np.cos(angle), 15 * np.sin(angle), 0 * angle], axis=1).astype(np.float32)
    pieces, owner = polyline_pieces(arc, np.array([0, 25]), 10.0)
    assert pieces.shape == (3, 2, 2) and np.all(owner == 0)
    for a, b in zip(pieces, _pieces(arc, 10.0), strict=True):
        np.testing.assert_allclose(a, np.stack(b), atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(pieces.reshape(-1, 2), axis=1), 15.0, atol=0.02)
    walls = hand_map().wall_points
    points, offsets = chain_segments(walls)
    assert offsets.tolist() == [0, 3, 5]
    np.testing.assert_allclose(points[:3, :2], [[10, -3], [10, 0], [10, 3]])


def test_two_maps_with_different_light_counts():
    first = hand_map()
    second = hand_map()
    shift = np.array([1000.0, 500.0, 0.0], np.float32)
    for name in ("lane_points", "road_edge_points", "stop_line_points", "light_position", "wall_points", "junction_center"):
        setattr(second, name, getattr(second, name) + shift)
    second.light_position = np.concatenate([second.light_position, second.light_position[:1]])
    second.light_heading = np.zeros(3, np.float32)
    second.light_junction = np.zeros(3, np.int32)
    second.light_group = np.array([0, 1, 2], np.int32)
    second.stop_line_light = np.array([2, 0, -1], np.int32)
    lay = WorldLayout.uniform([1, 0, 1], 3, [2, 3])
    rows = [(0.7, -1.75, 0.0), (31.3, -1.75, 0.1), (15.2, 1.75, np.pi)]
    box = torch.cat([boxes([(x + 1000, y + 500, h) for x, y, h in rows], 3), boxes(rows, 3), boxes(rows[:2], 3)])
    box[6:, :2] += torch.tensor([1000.0, 500.0])
    light = torch.tensor([0, 1, 2, 2, 0, 1, 2, 0], dtype=torch.int32)
    speed = torch.arange(9, dtype=torch.float32)
    obs = VectorizedObservation([first, second], lay, "cpu")
    got = obs.build(box, light, speed)
    assert_matches(got, reference([first, second], lay, box, light, speed))
    # World 0 plays map 1, whose first stop line follows its light 2: world light 0 + 2 (green).
    assert got["traffic_mask"][0].sum() == 3 and got["traffic"][0, 0, 4:].tolist() == [0, 0, 1, 0]


def _pieces_loop(points, offsets, span):
    """`polyline_pieces` by its definition, one polyline at a time: arc length, ceil(s / span)
    equal pieces, the chord of each (np.interp at the piece ends)."""
    pieces, owner = [], []
    for i in range(len(offsets) - 1):
        p = np.asarray(points[offsets[i] : offsets[i + 1], :2], np.float64)
        if len(p) < 2:
            continue
        arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(p, axis=0), axis=1))])
        if arc[-1] < MIN_SEGMENT_M:
            continue
        n = max(1, math.ceil(arc[-1] / span - 1e-6))
        at = np.linspace(0.0, arc[-1], n + 1)
        q = np.stack([np.interp(at, arc, p[:, 0]), np.interp(at, arc, p[:, 1])], axis=1)
        pieces += [np.stack([q[:-1], q[1:]], axis=1)]
        owner += [np.full(n, i)]
    return np.concatenate(pieces).astype(np.float32), np.concatenate(owner)


def test_polyline_pieces_match_a_loop_over_polylines():
    """All polylines at once equal the per-polyline definition: the real WOMD sample's lanes
    and road edges (hundreds of polylines), and degenerate ones (one point, a repeated point,
    shorter than MIN_SEGMENT_M, empty) between ordinary ones."""
    from pictura.maps import load

    scene = load(str(sorted(data_path("womd", "tfrecord", directory=True).glob("*.tfrecord"))[0]))
    rm = scene.road_map
    odd = np.array([[0, 0, 0], [3, 4, 0], [3, 4, 0], [9, 4, 0], [50, 50, 0], [1, 1, 0], [1, 1, 0],
                    [0, 0, 0], [0.001, 0, 0], [-5, 2, 0], [20, 2, 0], [20, 30, 0]], np.float64)
    odd_offsets = np.array([0, 4, 5, 5, 7, 9, 12])
    for points, offsets in ((rm.lane_points, rm.lane_offsets), (rm.road_edge_points, rm.road_edge_offsets),
                            (odd, odd_offsets)):
        for span in (5.0, 2.5, 10.0):
            got, got_owner = polyline_pieces(points, offsets, span)
            want, want_owner = _pieces_loop(points, offsets, span)
            np.testing.assert_array_equal(got_owner, want_owner)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)
    assert polyline_pieces(np.zeros((0, 3)), np.array([0]), 5.0)[0].shape == (0, 2, 2)
