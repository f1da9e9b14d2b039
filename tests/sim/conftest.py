"""Hand-built maps and NumPy references shared by the simulator tests (device "cpu")."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from pictura.maps.roadmap import RoadMap, pack_polylines
from pictura.sim import SimConfig, build_model
from pictura.sim.snapshot import WorldLayout

DEVICE = "cpu"
LANE_WIDTH = 3.5


def _loop_path(half_x: float, half_y: float, radius: float, offset: float, u: np.ndarray) -> np.ndarray:
    """Points of a counter-clockwise rounded rectangle offset ``offset`` m to the left (inwards).

    ``u`` in [0, 8) picks the piece (even: straight side, odd: quarter arc) and the fraction.
    """
    r = radius - offset
    centres = np.array([[half_x, -half_y], [half_x, half_y], [-half_x, half_y], [-half_x, -half_y]])
    out = np.zeros((len(u), 3))
    for i, ui in enumerate(u):
        piece = int(np.floor(ui)) % 8
        f = ui - np.floor(ui)
        side = piece // 2
        if piece % 2 == 0:  # straight: from the end of the previous corner to the start of this one
            start_angle = -np.pi / 2 + side * np.pi / 2
            c0 = centres[(side - 1) % 4]
            c1 = centres[side]
            p0 = c0 + r * np.array([np.cos(start_angle), np.sin(start_angle)])
            p1 = c1 + r * np.array([np.cos(start_angle), np.sin(start_angle)])
            out[i, :2] = p0 + f * (p1 - p0)
        else:
            ang = -np.pi / 2 + side * np.pi / 2 + f * np.pi / 2
            out[i, :2] = centres[side] + r * np.array([np.cos(ang), np.sin(ang)])
    return out


def loop_map(
    half_x: float = 100.0, half_y: float = 60.0, radius: float = 30.0, name: str = "loop"
) -> RoadMap:
    """A two-lane one-way loop (counter-clockwise) with road edges, lane changes allowed at every
    chunk end, and two junctions with lights (2 and 3 phase groups) used only by the schedule."""
    chunks_per_piece = 12
    pts_per_chunk = 3
    n_chunks = 8 * chunks_per_piece
    lanes, widths = [], []
    for offset in (-LANE_WIDTH / 2, LANE_WIDTH / 2):
        for c in range(n_chunks):
            u = (c + np.linspace(0.0, 1.0, pts_per_chunk + 1)) / chunks_per_piece
            lanes.append(_loop_path(half_x, half_y, radius, offset, u).astype(np.float32))
            widths.append(LANE_WIDTH)
    lane_points, lane_offsets = pack_polylines(lanes)
    succ_lists = []
    for lane_set in range(2):
        for c in range(n_chunks):
            nxt = (c + 1) % n_chunks
            succ_lists.append([lane_set * n_chunks + nxt, (1 - lane_set) * n_chunks + nxt])
    succ_off = np.zeros(len(succ_lists) + 1, np.int32)
    succ_off[1:] = np.cumsum([len(s) for s in succ_lists])
    u_edge = np.linspace(0.0, 8.0, 8 * 24 + 1)
    edges = [
        _loop_path(half_x, half_y, radius, o, u_edge).astype(np.float32) for o in (-LANE_WIDTH, LANE_WIDTH)
    ]
    edge_points, edge_offsets = pack_polylines(edges)
    L = len(lanes)
    return RoadMap(
        name=name,
        lane_points=lane_points,
        lane_offsets=lane_offsets,
        lane_width=np.asarray(widths, np.float32),
        lane_speed_limit=np.full(L, 13.9, np.float32),
        lane_junction=np.full(L, -1, np.int32),
        lane_successor_offsets=succ_off,
        lane_successors=np.concatenate([np.asarray(s, np.int32) for s in succ_lists]),
        road_edge_points=edge_points,
        road_edge_offsets=edge_offsets,
        stop_line_points=np.zeros((0, 2, 3), np.float32),
        stop_line_lane=np.zeros(0, np.int32),
        stop_line_light=np.zeros(0, np.int32),
        light_position=np.zeros((5, 3), np.float32),
        light_heading=np.zeros(5, np.float32),
        light_junction=np.array([0, 0, 1, 1, 1], np.int32),
        light_group=np.array([0, 1, 0, 1, 2], np.int32),
        junction_center=np.zeros((2, 3), np.float32),
    )


def make_world(
    road_maps: list[RoadMap], world_map: list[int], slots_per_world: int, config: SimConfig | None = None
):
    """Model + two states + control for ``world_map`` worlds of ``slots_per_world`` slots."""
    config = config or SimConfig(agents_per_world=(1, slots_per_world))
    layout = WorldLayout.uniform(
        world_map, slots_per_world, [len(m.light_position) for m in road_maps], config.parked_per_world
    )
    model = build_model(road_maps, layout, config, device=DEVICE)
    return model, model.state(), model.state(), model.control()


# ---- NumPy references ---------------------------------------------------------------------


def np_box_corners(x: float, y: float, heading: float, length: float, width: float) -> np.ndarray:
    c, s = np.cos(heading), np.sin(heading)
    local = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]]) * np.array([length / 2, width / 2])
    return np.stack([x + c * local[:, 0] - s * local[:, 1], y + s * local[:, 0] + c * local[:, 1]], 1)


def np_polygons_overlap(p: np.ndarray, q: np.ndarray) -> bool:
    """Strict overlap of two convex polygons by separating axes over all edge normals."""
    for poly in (p, q):
        for i in range(len(poly)):
            e = poly[(i + 1) % len(poly)] - poly[i]
            n = np.array([-e[1], e[0]])
            pa, qa = p @ n, q @ n
            if pa.max() <= qa.min() or qa.max() <= pa.min():
                return False
    return True


@pytest.fixture(scope="session", autouse=True)
def _quiet_warp():
    wp.config.log_level = wp.LOG_WARNING  # no start-up banner or module-load lines (INFO)
    wp.init()


def without_edges(rm: RoadMap) -> RoadMap:
    """``rm`` with no road edges (agents can leave the road without an off-road event)."""
    from dataclasses import replace

    return replace(rm, road_edge_points=np.zeros((0, 3), np.float32), road_edge_offsets=np.zeros(1, np.int32))


def set_slots(state, **fields) -> None:
    """Overwrite whole state arrays from NumPy values (tests build hand-made situations)."""
    for name, value in fields.items():
        arr = getattr(state, name)
        host = arr.numpy()
        arr.assign(np.asarray(value, dtype=host.dtype).reshape(host.shape))


JERK_LONG = (-15.0, -4.0, 0.0, 4.0)
JERK_LAT = (-4.0, 0.0, 4.0)


def np_bicycle(
    x, y, h, v, al, at, st, length, action, ct, cs, cc, v_min=-2.0, v_max=40.0, dt=0.1, a_long_max=2.5
):
    """REFERENCE.md "Dynamics", written out in float64 NumPy, vectorised over agents."""

    def snap(old, new, lo, hi):
        return np.where(old * new < 0, 0.0, np.clip(new, lo, hi))

    jl = np.asarray(JERK_LONG)[action // 3]
    jt = np.asarray(JERK_LAT)[action % 3]
    al2 = snap(al, al + ct * jl * dt, -5.0, a_long_max * cc)
    at2 = snap(at, at + cs * jt * dt, -4.0, 4.0)
    v2 = snap(v, v + 0.5 * (al2 + al) * dt, v_min, v_max)
    wb = 0.6 * length
    k = at2 / np.maximum(np.abs(v2), 1.0) ** 2
    target = np.arctan(k * wb)
    st2 = np.clip(st + np.clip(target - st, -0.6 * dt, 0.6 * dt), -0.55, 0.55)
    k = np.tan(st2) / wb
    at3 = v2 * v2 * k
    d = 0.5 * (v2 + v) * dt
    th = d * k
    straight = (np.abs(k) < 1e-5) | (np.abs(th) < 1e-5)
    ks = np.where(straight, 1.0, k)
    dx = np.where(straight, d, np.sin(th) / ks)
    dy = np.where(straight, 0.0, (1 - np.cos(th)) / ks)
    c, s = np.cos(h), np.sin(h)
    return x + c * dx - s * dy, y + s * dx + c * dy, h + th, v2, al2, at3, st2


def wrap(a):
    return (np.asarray(a) + np.pi) % (2 * np.pi) - np.pi


def straight_map(name: str = "straight") -> RoadMap:
    """A 100 m one-lane straight road along +x between road edges at y = 0 and y = -20 (z = 0).

    One more edge segment hangs 10 m up (an overpass) across the road at x = 30. Lane chunk 4
    (x -10..0) ends at a stop line x = 0, y -15..-5, governed by light 0.
    """
    xs = np.arange(-50.0, 50.01, 10.0)
    lanes = [
        np.array([[x0, -10.0, 0.0], [x0 + 5.0, -10.0, 0.0], [x0 + 10.0, -10.0, 0.0]], np.float32)
        for x0 in xs[:-1]
    ]
    lane_points, lane_offsets = pack_polylines(lanes)
    n = len(lanes)
    succ = np.array([i + 1 for i in range(n - 1)], np.int32)
    succ_off = np.concatenate([[0], np.cumsum([1] * (n - 1) + [0])]).astype(np.int32)
    ex = np.arange(-50.0, 50.01, 5.0)
    top = np.stack([ex, np.zeros_like(ex), np.zeros_like(ex)], 1)
    bottom = np.stack([ex, np.full_like(ex, -20.0), np.zeros_like(ex)], 1)
    overpass = np.array([[30.0, 5.0, 10.0], [30.0, -25.0, 10.0]])
    edge_points, edge_offsets = pack_polylines(
        [top.astype(np.float32), bottom.astype(np.float32), overpass.astype(np.float32)]
    )
    return RoadMap(
        name=name,
        lane_points=lane_points,
        lane_offsets=lane_offsets,
        lane_width=np.full(n, 20.0, np.float32),
        lane_speed_limit=np.zeros(n, np.float32),
        lane_junction=np.full(n, -1, np.int32),
        lane_successor_offsets=succ_off,
        lane_successors=succ,
        road_edge_points=edge_points,
        road_edge_offsets=edge_offsets,
        stop_line_points=np.array([[[0.0, -15.0, 0.0], [0.0, -5.0, 0.0]]], np.float32),
        stop_line_lane=np.array([4], np.int32),
        stop_line_light=np.array([0], np.int32),
        light_position=np.array([[5.0, -16.0, 4.0]], np.float32),
        light_heading=np.array([np.pi], np.float32),
        light_junction=np.array([0], np.int32),
        light_group=np.array([0], np.int32),
        junction_center=np.array([[10.0, -10.0, 0.0]], np.float32),
    )


def np_segments_intersect(p1, p2, q1, q2) -> np.ndarray:
    """Vectorised proper-or-touching intersection of segment batches (non-collinear cases)."""

    def cross(a, b):
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]

    d1 = cross(q2 - q1, p1 - q1)
    d2 = cross(q2 - q1, p2 - q1)
    d3 = cross(p2 - p1, q1 - p1)
    d4 = cross(p2 - p1, q2 - p1)
    return (d1 * d2 <= 0) & (d3 * d4 <= 0)


def vehicle_config(**overrides) -> SimConfig:
    """The issue-2 world: vehicles only, no parked cars (tests of rules that predate types)."""
    base = dict(pedestrian_fraction=0.0, cyclist_fraction=0.0, parked_per_world=0)
    base.update(overrides)
    return SimConfig(**base)


def with_walls(rm: RoadMap, walls: np.ndarray, height: float = 3.0) -> RoadMap:
    """``rm`` plus wall base segments ``walls`` (K, 2, 3)."""
    from dataclasses import replace

    walls = np.asarray(walls, np.float32).reshape(-1, 2, 3)
    return replace(rm, wall_points=walls, wall_height=np.full(len(walls), height, np.float32))


def np_boxes_overlap_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Strict SAT overlap of box rows (x, y, heading, length, width), vectorised over pairs."""
    out = np.ones(len(a), bool)
    ua = np.stack([np.cos(a[:, 2]), np.sin(a[:, 2])], 1)
    ub = np.stack([np.cos(b[:, 2]), np.sin(b[:, 2])], 1)
    va = np.stack([-ua[:, 1], ua[:, 0]], 1)
    vb = np.stack([-ub[:, 1], ub[:, 0]], 1)
    d = b[:, :2] - a[:, :2]
    for axis in (ua, va, ub, vb):
        ra = 0.5 * a[:, 3] * np.abs((ua * axis).sum(1)) + 0.5 * a[:, 4] * np.abs((va * axis).sum(1))
        rb = 0.5 * b[:, 3] * np.abs((ub * axis).sum(1)) + 0.5 * b[:, 4] * np.abs((vb * axis).sum(1))
        out &= np.abs((d * axis).sum(1)) < ra + rb - 1e-4  # a float32 margin: touching is not overlap
    return out


def np_overlapping_pairs(boxes: np.ndarray, group: np.ndarray, z: np.ndarray) -> np.ndarray:
    """(K, 2) index pairs of rows in the same ``group`` and |dz| < 4 m whose boxes overlap."""
    i, j = np.triu_indices(len(boxes), 1)
    keep = (group[i] == group[j]) & (np.abs(z[i] - z[j]) < 4.0)
    r = 0.5 * np.hypot(boxes[:, 3], boxes[:, 4])
    keep &= np.linalg.norm(boxes[i, :2] - boxes[j, :2], axis=1) < r[i] + r[j]
    i, j = i[keep], j[keep]
    hit = np_boxes_overlap_pairs(boxes[i], boxes[j])
    return np.stack([i[hit], j[hit]], 1)


def np_point_polyline_distance(p: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Distance (m, xy) from each point ``p`` (N, 2) to the nearest segment of ``seg`` (K, 2, 2)."""
    a, b = seg[:, 0], seg[:, 1]
    ab = b - a
    den = np.maximum((ab**2).sum(-1), 1e-12)
    t = np.clip(((p[:, None] - a) * ab).sum(-1) / den, 0, 1)
    return np.linalg.norm(a + ab * t[..., None] - p[:, None], axis=-1).min(1)


def crossing_map(name: str = "crossing") -> RoadMap:
    """A four-way crossing at the origin: two-way roads along x and y (one 3.5 m lane each way,
    right-hand traffic, road edges at +-3.5 m), approaches from +-40 m, the junction square
    |x|, |y| < 3.5 m crossed by four straight connectors and one right turn (eastbound ->
    southbound), all in junction 0."""
    w = LANE_WIDTH
    h = LANE_WIDTH / 2

    def line(p0, p1, n=3):
        t = np.linspace(0.0, 1.0, n)[:, None]
        return (np.asarray(p0, float) * (1 - t) + np.asarray(p1, float) * t).astype(np.float32)

    # (start, end) of each direction's approach, connector and exit, along its travel
    dirs = {
        "east": ((-40, -h), (-w, -h), (w, -h), (40, -h)),
        "west": ((40, h), (w, h), (-w, h), (-40, h)),
        "north": ((h, -40), (h, -w), (h, w), (h, 40)),
        "south": ((-h, 40), (-h, w), (-h, -w), (-h, -40)),
    }
    lanes, junction = [], []
    for a, b, c, d in dirs.values():
        lanes += [line((*a, 0), (*b, 0)), line((*b, 0), (*c, 0)), line((*c, 0), (*d, 0))]
        junction += [-1, 0, -1]
    theta = np.linspace(np.pi / 2, 0.0, 5)  # the right turn: a quarter circle about (-w, -w)
    turn = np.stack([-w + (w - h) * np.cos(theta), -w + (w - h) * np.sin(theta), 0 * theta], 1)
    lanes.append(turn.astype(np.float32))
    junction.append(0)
    succ = [[1], [2], [], [4], [5], [], [7], [8], [], [10], [11], [], [11]]
    succ[0] = [1, 12]
    lane_points, lane_offsets = pack_polylines(lanes)
    succ_off = np.concatenate([[0], np.cumsum([len(s) for s in succ])]).astype(np.int32)
    corners = []
    for sx in (1, -1):
        for sy in (1, -1):
            corners.append(
                np.array([[40 * sx, w * sy, 0], [w * sx, w * sy, 0], [w * sx, 40 * sy, 0]], np.float32)
            )
    edge_points, edge_offsets = pack_polylines(corners)
    n = len(lanes)
    return RoadMap(
        name=name,
        lane_points=lane_points,
        lane_offsets=lane_offsets,
        lane_width=np.full(n, w, np.float32),
        lane_speed_limit=np.zeros(n, np.float32),
        lane_junction=np.asarray(junction, np.int32),
        lane_successor_offsets=succ_off,
        lane_successors=np.concatenate([np.asarray(s, np.int32) for s in succ]),
        road_edge_points=edge_points,
        road_edge_offsets=edge_offsets,
        junction_center=np.zeros((1, 3), np.float32),
    )


def two_lane_stop_map(name: str = "two_lane_stop") -> RoadMap:
    """Two 4 m lanes along +x (A at y = -12, B at y = -8; road edges y = -14 and -6), 10 m
    chunks from x = -30 to 30. Chunk 2 of each lane (x -10..0) ends at a stop line at x = 0
    across its own lane only: A's (y -14..-10) governed by light 0, B's (y -10..-6) by light 1."""
    xs = np.arange(-30.0, 30.01, 10.0)
    lanes = []
    for y in (-12.0, -8.0):
        lanes += [np.array([[x0, y, 0.0], [x0 + 5.0, y, 0.0], [x0 + 10.0, y, 0.0]], np.float32) for x0 in xs[:-1]]
    per = len(xs) - 1
    succ = [[i + 1] if i % per < per - 1 else [] for i in range(2 * per)]
    lane_points, lane_offsets = pack_polylines(lanes)
    succ_off = np.concatenate([[0], np.cumsum([len(s) for s in succ])]).astype(np.int32)
    ex = np.arange(-30.0, 30.01, 5.0)
    edges = [np.stack([ex, np.full_like(ex, y), np.zeros_like(ex)], 1).astype(np.float32) for y in (-14.0, -6.0)]
    edge_points, edge_offsets = pack_polylines(edges)
    n = len(lanes)
    return RoadMap(
        name=name,
        lane_points=lane_points,
        lane_offsets=lane_offsets,
        lane_width=np.full(n, 4.0, np.float32),
        lane_speed_limit=np.zeros(n, np.float32),
        lane_junction=np.full(n, -1, np.int32),
        lane_successor_offsets=succ_off,
        lane_successors=np.concatenate([np.asarray(s, np.int32) for s in succ]),
        road_edge_points=edge_points,
        road_edge_offsets=edge_offsets,
        stop_line_points=np.array(
            [[[0.0, -14.0, 0.0], [0.0, -10.0, 0.0]], [[0.0, -10.0, 0.0], [0.0, -6.0, 0.0]]], np.float32
        ),
        stop_line_lane=np.array([2, per + 2], np.int32),
        stop_line_light=np.array([0, 1], np.int32),
        light_position=np.array([[5.0, -15.0, 4.0], [5.0, -5.0, 4.0]], np.float32),
        light_heading=np.full(2, np.pi, np.float32),
        light_junction=np.zeros(2, np.int32),
        light_group=np.array([0, 1], np.int32),
        junction_center=np.array([[10.0, -10.0, 0.0]], np.float32),
    )
