"""WOMD map features (format-neutral) and their conversion into a `RoadMap`.

Both readers (the ``Scenario`` protobuf and GPUDrive-style JSON) first fill a `MapFeatures`
with the raw WOMD polylines in file order, then `build_road_map` turns it into Pictura's
`RoadMap`:

- lanes: each WOMD lane centre is cut into equal chunks of at most ``MAX_LANE_CHUNK_M``; a chunk's
  successor is the next chunk of its lane, the last chunk's successors are the first chunks of
  the lane's exit lanes. Width 3.7 m (WOMD has none), speed limit mph -> m/s, no junctions.
- road edges: every road_edge feature (boundary and median).
- markings: road_line features; yellow types -> MARKING_CENTRE_LINE, white/unknown ->
  MARKING_LANE_DIVIDER.
- stop lines: where a stop sign's or a logged signal's controlled lane begins (WOMD's controlled
  lane is the one crossing the junction; its stop point is its first point), one per approach
  chunk ending there (the entry lanes' last chunks; the controlled lane's first chunk if it has
  no entry lane). No light heads: ``stop_line_light = -1``.
- crosswalks: the 4-point polygon as is, else its minimum-area oriented bounding rectangle.
- stop signs: ``sign_position`` / ``SIGN_STOP``. Speed bumps and driveways have no `RoadMap`
  counterpart and are only counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pictura.maps.roadmap import (
    LIGHT_GREEN,
    LIGHT_OFF,
    LIGHT_RED,
    LIGHT_YELLOW,
    MARKING_CENTRE_LINE,
    MARKING_LANE_DIVIDER,
    MAX_LANE_CHUNK_M,
    SIGN_STOP,
    RoadMap,
    pack_polylines,
)

LANE_WIDTH_M = 3.7
"""WOMD lanes carry no width; every lane gets this one."""
MPH_TO_MPS = 0.44704
LANE_GRAPH_TOLERANCE_M = 1e-3
"""Endpoint coincidence that links lanes when a source has no entry/exit lists (GPUDrive JSON)."""
STOP_POINT_TOLERANCE_M = 1.0
"""An entry lane counts as approaching a stop point when its end lies this close to it."""

# map.proto LaneCenter.LaneType
LANE_TYPE_UNDEFINED, LANE_TYPE_FREEWAY, LANE_TYPE_SURFACE_STREET, LANE_TYPE_BIKE_LANE = 0, 1, 2, 3
# map.proto RoadLine.RoadLineType: 4..8 are the yellow ones (centre lines), 1..3 white, 0 unknown.
ROAD_LINE_YELLOW_TYPES = frozenset({4, 5, 6, 7, 8})
ROAD_LINE_TYPE_MAX = 8
ROAD_EDGE_TYPE_MAX = 2  # RoadEdge.RoadEdgeType: unknown 0, boundary 1, median 2

# map.proto TrafficSignalLaneState.State -> LIGHT_*. Arrows count as their colour; flashing red
# is a stop, flashing yellow a caution; unknown -> off.
SIGNAL_STATE_TO_LIGHT = {
    0: LIGHT_OFF,  # LANE_STATE_UNKNOWN
    1: LIGHT_RED,  # LANE_STATE_ARROW_STOP
    2: LIGHT_YELLOW,  # LANE_STATE_ARROW_CAUTION
    3: LIGHT_GREEN,  # LANE_STATE_ARROW_GO
    4: LIGHT_RED,  # LANE_STATE_STOP
    5: LIGHT_YELLOW,  # LANE_STATE_CAUTION
    6: LIGHT_GREEN,  # LANE_STATE_GO
    7: LIGHT_RED,  # LANE_STATE_FLASHING_STOP
    8: LIGHT_YELLOW,  # LANE_STATE_FLASHING_CAUTION
}


@dataclass
class Lane:
    """One WOMD lane centre. ``polyline`` is (n, 3) float64 m in travel order."""

    id: int
    lane_type: int  # LANE_TYPE_*
    speed_limit_mph: float
    polyline: np.ndarray
    entry_lanes: list[int] = field(default_factory=list)
    exit_lanes: list[int] = field(default_factory=list)


@dataclass
class Polyline:
    """A typed WOMD polyline or polygon (road line, road edge, crosswalk, ...): (n, 3) float64 m."""

    id: int
    kind: int  # RoadLineType / RoadEdgeType; 0 where the feature has no type
    points: np.ndarray


@dataclass
class StopSign:
    id: int
    lanes: list[int]  # controlled lane feature ids (may be empty)
    position: np.ndarray  # (3,) m


@dataclass
class SignalLog:
    """Logged traffic-signal states: Ls controlled lanes over T steps."""

    lane_ids: list[int]  # (Ls,) WOMD lane feature ids
    stop_points: np.ndarray  # (Ls, 3) m, where traffic stops for that lane
    states: np.ndarray  # (T, Ls) int32 LIGHT_*; LIGHT_OFF where a step logs nothing


@dataclass
class MapFeatures:
    """All WOMD map features of one scene, in file order."""

    lanes: list[Lane] = field(default_factory=list)
    road_lines: list[Polyline] = field(default_factory=list)
    road_edges: list[Polyline] = field(default_factory=list)
    stop_signs: list[StopSign] = field(default_factory=list)
    crosswalks: list[Polyline] = field(default_factory=list)
    speed_bumps: list[Polyline] = field(default_factory=list)
    driveways: list[Polyline] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(
            len(x)
            for x in (
                self.lanes,
                self.road_lines,
                self.road_edges,
                self.stop_signs,
                self.crosswalks,
                self.speed_bumps,
                self.driveways,
            )
        )


def infer_lane_graph(lanes: list[Lane], tol: float = LANE_GRAPH_TOLERANCE_M) -> None:
    """Fill ``entry_lanes``/``exit_lanes`` in place: lane a exits to b when a's end is b's start.

    WOMD's own graph is exactly this relation (checked on the WOMD record in the tests); the
    GPUDrive JSON drops the lists, so its reader rebuilds them here.
    """
    if not lanes:
        return
    starts = np.array([lane.polyline[0, :3] for lane in lanes])
    for a in lanes:
        near = np.flatnonzero(np.linalg.norm(starts - a.polyline[-1, :3], axis=1) < tol)
        a.exit_lanes = [lanes[j].id for j in near if lanes[j].id != a.id]
    by_id = {lane.id: lane for lane in lanes}
    for lane in lanes:
        lane.entry_lanes = []
    for a in lanes:
        for b in a.exit_lanes:
            by_id[b].entry_lanes.append(a.id)


def chunk_polyline(points: np.ndarray, max_len: float = MAX_LANE_CHUNK_M) -> list[np.ndarray]:
    """Cut an (n, 3) polyline into ceil(length / max_len) equal-length pieces (>= 1).

    Cut points are interpolated on the polyline, original vertices in between are kept, so the
    pieces trace the input exactly. A one-point or zero-length lane becomes one zero-length piece.
    """
    if len(points) == 1:
        return [np.repeat(points, 2, axis=0)]
    seg_len = np.linalg.norm(np.diff(points, axis=0), axis=1)
    arc = np.concatenate([[0.0], np.cumsum(seg_len)])
    total = arc[-1]
    count = max(1, int(np.ceil(total / max_len - 1e-9)))
    if count == 1:
        return [points]
    cuts = total * np.arange(1, count) / count
    cut_points = np.stack([np.interp(cuts, arc, points[:, k]) for k in range(points.shape[1])], axis=1)
    bounds = np.concatenate([[0.0], cuts, [total]])
    ends = np.concatenate([points[:1], cut_points, points[-1:]])
    pieces = []
    for i in range(count):
        inside = (arc > bounds[i] + 1e-9) & (arc < bounds[i + 1] - 1e-9)
        pieces.append(np.concatenate([ends[i : i + 1], points[inside], ends[i + 1 : i + 2]]))
    return pieces


def crosswalk_quad(polygon: np.ndarray, where: str) -> np.ndarray:
    """(4, 3) corners: the polygon itself when it has 4 points, else its oriented bounding rectangle.

    The rectangle is the minimum-area one over the polygon's edge directions (the optimum is
    always aligned with a convex-hull edge, and every hull edge is among the polygon's chords).
    """
    if len(polygon) == 4:
        return polygon.astype(np.float64)
    if len(polygon) < 3:
        raise ValueError(f"{where}: crosswalk polygon has {len(polygon)} points, needs >= 3")
    xy = polygon[:, :2]
    best = None
    for i in range(len(xy)):
        for j in range(i + 1, len(xy)):
            d = xy[j] - xy[i]
            norm = np.hypot(*d)
            if norm < 1e-9:
                continue
            u = d / norm
            v = np.array([-u[1], u[0]])
            a, b = xy @ u, xy @ v
            area = (a.max() - a.min()) * (b.max() - b.min())
            if best is None or area < best[0]:
                best = (area, u, v, a.min(), a.max(), b.min(), b.max())
    if best is None:
        raise ValueError(f"{where}: crosswalk polygon is degenerate (all points coincide)")
    _, u, v, a0, a1, b0, b1 = best
    corners = [a0 * u + b0 * v, a1 * u + b0 * v, a1 * u + b1 * v, a0 * u + b1 * v]
    z = float(polygon[:, 2].mean())
    return np.array([[c[0], c[1], z] for c in corners])


def _stop_line(point: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """(2, 3) endpoints of a lane-wide line through ``point`` across the 2-D ``direction``."""
    d = direction[:2] / max(np.hypot(*direction[:2]), 1e-9)
    normal = np.array([-d[1], d[0], 0.0]) * (0.5 * LANE_WIDTH_M)
    return np.stack([point - normal, point + normal])


def build_road_map(
    name: str, features: MapFeatures, signals: SignalLog | None = None, where: str | None = None
) -> tuple[RoadMap, dict[int, tuple[int, int]]]:
    """Convert WOMD features into a `RoadMap` named ``name`` (see the module docstring).

    Returns the map and ``lane_chunks``: WOMD lane id -> (first chunk, end chunk + 1) in it.
    Raises ``ValueError`` prefixed with ``where`` (the file and record; default ``name``) naming
    the feature for references to lanes that do not exist.
    """
    prefix = where or name  # for error messages
    lane_chunks: dict[int, tuple[int, int]] = {}
    chunk_points: list[np.ndarray] = []
    chunk_speed: list[float] = []
    for lane in features.lanes:
        if lane.id in lane_chunks:
            raise ValueError(f"{prefix}: lane feature id {lane.id} appears twice")
        pieces = chunk_polyline(lane.polyline)
        lane_chunks[lane.id] = (len(chunk_points), len(chunk_points) + len(pieces))
        chunk_points.extend(pieces)
        chunk_speed.extend([lane.speed_limit_mph * MPH_TO_MPS] * len(pieces))
    n_chunks = len(chunk_points)

    successors: list[list[int]] = [[] for _ in range(n_chunks)]
    for lane in features.lanes:
        first, end = lane_chunks[lane.id]
        for c in range(first, end - 1):
            successors[c].append(c + 1)
        for other in lane.entry_lanes:
            if other not in lane_chunks:
                raise ValueError(f"{prefix}: lane {lane.id}: entry lane {other} is not a lane feature")
        for exit_id in lane.exit_lanes:
            if exit_id not in lane_chunks:
                raise ValueError(f"{prefix}: lane {lane.id}: exit lane {exit_id} is not a lane feature")
            successors[end - 1].append(lane_chunks[exit_id][0])
    succ_offsets = np.zeros(n_chunks + 1, np.int32)
    succ_offsets[1:] = np.cumsum([len(s) for s in successors])
    lanes_by_id = {lane.id: lane for lane in features.lanes}

    # Stop lines where controlled lanes begin; dedupe (approach chunk, point) pairs because one
    # approach lane often feeds several controlled lanes (left / straight / right).
    stop_lines: dict[tuple[int, tuple[float, float]], np.ndarray] = {}

    def add_stop(lane_id: int, point: np.ndarray, controller: str) -> None:
        if lane_id not in lanes_by_id:
            raise ValueError(f"{prefix}: {controller}: controlled lane {lane_id} is not a lane feature")
        lane = lanes_by_id[lane_id]
        # The line runs across the lane's direction at its vertex nearest the stop point.
        direction = np.array([1.0, 0.0, 0.0])  # a one-point lane has no direction of its own
        if len(lane.polyline) > 1:
            k = int(np.argmin(np.linalg.norm(lane.polyline[:, :2] - point[:2], axis=1)))
            k = min(k, len(lane.polyline) - 2)
            direction = lane.polyline[k + 1] - lane.polyline[k]
        approach = [
            lane_chunks[e][1] - 1
            for e in lane.entry_lanes
            if np.linalg.norm(chunk_points[lane_chunks[e][1] - 1][-1, :2] - point[:2])
            < STOP_POINT_TOLERANCE_M
        ]
        if not approach:
            approach = [lane_chunks[lane_id][0]]
        key_point = (round(float(point[0]), 2), round(float(point[1]), 2))
        for chunk in approach:
            stop_lines.setdefault((chunk, key_point), _stop_line(point, direction))

    for sign in features.stop_signs:
        for lane_id in sign.lanes:
            if lane_id not in lanes_by_id:
                raise ValueError(
                    f"{prefix}: stop sign {sign.id}: controlled lane {lane_id} is not a lane feature"
                )
            add_stop(lane_id, lanes_by_id[lane_id].polyline[0], f"stop sign {sign.id}")
    if signals is not None:
        for lane_id, point in zip(signals.lane_ids, signals.stop_points, strict=True):
            add_stop(lane_id, point, "traffic signal")

    lane_points, lane_offsets = pack_polylines(chunk_points)
    edge_points, edge_offsets = pack_polylines([e.points for e in features.road_edges])
    mark_points, mark_offsets = pack_polylines([m.points for m in features.road_lines])
    keys = list(stop_lines)
    road_map = RoadMap(
        name=name,
        lane_points=lane_points,
        lane_offsets=lane_offsets,
        lane_width=np.full(n_chunks, LANE_WIDTH_M, np.float32),
        lane_speed_limit=np.asarray(chunk_speed, np.float32).reshape(n_chunks),
        lane_junction=np.full(n_chunks, -1, np.int32),
        lane_successor_offsets=succ_offsets,
        lane_successors=np.asarray([s for ss in successors for s in ss], np.int32),
        road_edge_points=edge_points,
        road_edge_offsets=edge_offsets,
        marking_points=mark_points,
        marking_offsets=mark_offsets,
        marking_kind=np.array(
            [
                MARKING_CENTRE_LINE if m.kind in ROAD_LINE_YELLOW_TYPES else MARKING_LANE_DIVIDER
                for m in features.road_lines
            ],
            np.int32,
        ),
        stop_line_points=np.array([stop_lines[k] for k in keys], np.float32).reshape(len(keys), 2, 3),
        stop_line_lane=np.array([k[0] for k in keys], np.int32),
        stop_line_light=np.full(len(keys), -1, np.int32),
        crosswalk_points=np.array(
            [crosswalk_quad(c.points, f"{prefix}: crosswalk {c.id}") for c in features.crosswalks], np.float32
        ).reshape(len(features.crosswalks), 4, 3),
        sign_position=np.array([s.position for s in features.stop_signs], np.float32).reshape(-1, 3),
        sign_kind=np.full(len(features.stop_signs), SIGN_STOP, np.int32),
    )
    road_map.validate()
    return road_map, lane_chunks
