"""Assemble a `RoadMap` from parsed OpenDRIVE records.

Lane pieces (one per drivable lane per lane section and travel direction) are chunked to
<= MAX_LANE_CHUNK_M and linked: chunk to chunk within a piece, then piece to piece across lane
sections, road links and junction connections. Edges, markings, stop lines, signals, walls,
sidewalks and parking come from the same cross-sections.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pictura.maps.opendrive.geometry import cubic, reference_pose
from pictura.maps.opendrive.lanes import DRIVABLE_TYPES, CrossSections, cross_sections, travels_forward
from pictura.maps.opendrive.reader import Link, OpenDrive, Road, read_document
from pictura.maps.roadmap import (
    MARKING_CENTRE_LINE,
    MARKING_LANE_DIVIDER,
    MAX_LANE_CHUNK_M,
    SIGN_STOP,
    SIGN_YIELD,
    RoadMap,
    pack_polylines,
)

LIGHT_TYPE = "1000001"
WALL_HEIGHT_M = 6.0
WALL_OFFSET_NO_SIDEWALK_M = 3.0
PARKING_SPACING_M = 6.0
SIMPLIFY_TOLERANCE_M = 0.01
"""Edges, markings, sidewalks and walls drop vertices that move the line by less than this."""
JUNCTION_EDGE_MARGIN_M = 0.3
"""A junction border closer than half a lane width minus this to another road's lane is dropped."""
LIGHT_MATCH_RADIUS_M = 50.0
"""A light with no signalReference governs the nearest free approach within this distance."""

PieceKey = tuple[str, int, int, bool]  # road id, section index, lane id, travels along +s


@dataclass
class LaneOrigin:
    """Where each lane chunk of a built map came from: (L,) road id, section index, lane id, +s flag."""

    road: list[str] = field(default_factory=list)
    section: list[int] = field(default_factory=list)
    lane_id: list[int] = field(default_factory=list)
    forward: list[bool] = field(default_factory=list)
    pieces: dict[PieceKey, tuple[int, int]] = field(default_factory=dict)  # first, last chunk


def _chunk(points: np.ndarray, width: np.ndarray) -> list[tuple[np.ndarray, float]]:
    """Split a polyline (n, 3) into pieces of equal arc length <= MAX_LANE_CHUNK_M; mean width each."""
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    arc = np.concatenate([[0.0], np.cumsum(seg)])
    n = max(1, math.ceil(arc[-1] / (MAX_LANE_CHUNK_M - 1e-3)))
    cuts = arc[-1] * np.arange(1, n) / n
    all_arc = np.unique(np.concatenate([arc, cuts]))
    pts = np.stack([np.interp(all_arc, arc, points[:, i]) for i in range(3)], axis=1)
    wid = np.interp(all_arc, arc, width)
    bounds = np.concatenate([[0], np.searchsorted(all_arc, cuts), [len(all_arc) - 1]])
    return [
        (pts[a : b + 1], float(wid[a : b + 1].mean())) for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    ]


def simplify(points: np.ndarray, tolerance: float = SIMPLIFY_TOLERANCE_M) -> np.ndarray:
    """Drop polyline vertices closer than ``tolerance`` (m) to the chord that replaces them
    (Ramer-Douglas-Peucker, in 3-D); endpoints are always kept."""
    keep = np.zeros(len(points), bool)
    keep[[0, -1]] = True
    stack = [(0, len(points) - 1)]
    while stack:
        a, b = stack.pop()
        if b - a < 2:
            continue
        chord = points[b] - points[a]
        rel = points[a + 1 : b] - points[a]
        n2 = float(chord @ chord)
        t = np.clip(rel @ chord / n2, 0, 1) if n2 > 0 else np.zeros(len(rel))
        d = np.linalg.norm(rel - t[:, None] * chord, axis=1)
        i = int(np.argmax(d))
        if d[i] > tolerance:
            keep[a + 1 + i] = True
            stack += [(a, a + 1 + i), (a + 1 + i, b)]
    return points[keep]


def _speed_at(road: Road, s: float) -> float:
    if not len(road.speed_s):
        return 0.0
    i = max(int(np.searchsorted(road.speed_s, s, side="right")) - 1, 0)
    return float(road.speed[i])


def _wrap(a: np.ndarray | float) -> np.ndarray | float:
    return (np.asarray(a) + np.pi) % (2 * np.pi) - np.pi


class _Builder:
    def __init__(self, doc: OpenDrive, name: str, path: Path) -> None:
        self.doc, self.name, self.path = doc, name, path
        junction_ids = set(doc.junctions) | {r.junction for r in doc.roads.values() if r.junction != "-1"}
        self.junction_index = {j: i for i, j in enumerate(sorted(junction_ids, key=_id_key))}
        self.lanes: list[np.ndarray] = []
        self.lane_width: list[float] = []
        self.lane_speed: list[float] = []
        self.lane_junction: list[int] = []
        self.origin = LaneOrigin()
        self.edges: set[tuple[int, int]] = set()
        self.road_edges: list[np.ndarray] = []
        self.junction_edges: list[tuple[str, str, np.ndarray]] = []  # junction id, road id, polyline
        self.markings: list[np.ndarray] = []
        self.marking_kind: list[int] = []
        self.sidewalks: list[np.ndarray] = []
        self.walls: list[np.ndarray] = []
        self.parking: list[np.ndarray] = []
        # Stop lines: endpoints, lane chunk, approach key (road, junction index, end s).
        self.stop_points: list[np.ndarray] = []
        self.stop_lane: list[int] = []
        self.stop_approach: list[tuple[str, int, float]] = []
        self.has_sidewalks = any(
            ln.type == "sidewalk" for r in doc.roads.values() for sc in r.sections for ln in sc.lanes.values()
        )

    # ---- per-section geometry ---------------------------------------------------------------
    def add_road(self, road: Road) -> None:
        in_junction = road.junction != "-1"
        for k, sec in enumerate(road.sections):
            xs = cross_sections(road, k, self.path)
            junction = self.junction_index.get(road.junction, -1) if in_junction else -1
            for lane_id, lane in sorted(sec.lanes.items()):
                if lane.type in DRIVABLE_TYPES:
                    fwd = travels_forward(lane_id, road.lht)
                    dirs = (fwd, not fwd) if lane.type == "bidirectional" else (fwd,)
                    for d in dirs:
                        self._add_piece(xs, lane_id, d, junction, lane.speed)
                elif lane.type == "sidewalk":
                    self.sidewalks.append(xs.points(xs.centre_t(lane_id)))
                elif lane.type == "parking" and not in_junction:
                    self._add_parking(xs, lane_id)
            self._add_borders(xs, in_junction)

    def _add_piece(
        self, xs: CrossSections, lane_id: int, fwd: bool, junction: int, lane_speed: float
    ) -> None:
        road = xs.road
        # A lane of zero width everywhere is kept, as CARLA keeps it (it has waypoints on its
        # centre line, which lies on its inner border): its chunks get the RoadMap's 1 cm floor.
        pts = xs.points(xs.centre_t(lane_id))
        width = xs.width[lane_id]
        if not fwd:
            pts, width = pts[::-1], width[::-1]
        speed = lane_speed if lane_speed > 0 else _speed_at(road, float(xs.s[len(xs.s) // 2]))
        first = len(self.lanes)
        for chunk, w in _chunk(pts, width):
            i = len(self.lanes)
            if i > first:
                self.edges.add((i - 1, i))
            self.lanes.append(chunk)
            self.lane_width.append(max(w, 1e-2))
            self.lane_speed.append(speed)
            self.lane_junction.append(junction)
            self.origin.road.append(road.id)
            self.origin.section.append(xs.section)
            self.origin.lane_id.append(lane_id)
            self.origin.forward.append(fwd)
        self.origin.pieces[(road.id, xs.section, lane_id, fwd)] = (first, len(self.lanes) - 1)
        # Stop line across the lane end where it enters a junction.
        end_link = self._end_link(road, xs.section, fwd)
        if road.junction == "-1" and end_link is not None and end_link.element_type == "junction":
            j = -1 if fwd else 0
            t = np.array([xs.inner(lane_id)[j], xs.border[lane_id][j]])
            ends = np.stack([
                xs.x[j] - t * np.sin(xs.heading[j]), xs.y[j] + t * np.cos(xs.heading[j]), np.full(2, xs.z[j])
            ], axis=1)  # fmt: skip
            self.stop_points.append(ends)
            self.stop_lane.append(len(self.lanes) - 1)
            jid = self.junction_index.get(end_link.element_id, -1)
            self.stop_approach.append((road.id, jid, float(xs.s[j])))

    @staticmethod
    def _end_link(road: Road, k: int, fwd: bool) -> Link | None:
        """The road link at the travel end of section ``k`` if that end is the road's end, else None."""
        if fwd:
            return road.successor if k == len(road.sections) - 1 else None
        return road.predecessor if k == 0 else None

    def _add_parking(self, xs: CrossSections, lane_id: int) -> None:
        centre = xs.points(xs.centre_t(lane_id))
        arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(centre, axis=0), axis=1))])
        at = np.arange(0.5 * PARKING_SPACING_M, arc[-1] - 0.5 * PARKING_SPACING_M + 1e-6, PARKING_SPACING_M)
        if not len(at):
            return
        heading = np.interp(at, arc, np.unwrap(xs.heading))
        if not travels_forward(lane_id, xs.road.lht):
            heading = heading + np.pi
        spots = np.stack([np.interp(at, arc, centre[:, i]) for i in range(3)] + [_wrap(heading)], axis=1)
        self.parking.append(spots)

    def _add_borders(self, xs: CrossSections, in_junction: bool) -> None:
        lanes = xs.road.sections[xs.section].lanes
        n_left = sum(1 for i in lanes if i > 0)
        n_right = sum(1 for i in lanes if i < 0)
        # Borders in order across the road, each with the lane id on its inner and outer side.
        for b in range(n_left, -n_right - 1, -1):
            if b > 0:
                inner, outer = b, b + 1 if b + 1 <= n_left else None
            elif b < 0:
                inner, outer = b, b - 1 if b - 1 >= -n_right else None
            else:
                inner, outer = (1 if n_left else None), (-1 if n_right else None)
            di = inner is not None and lanes[inner].type in DRIVABLE_TYPES
            do = outer is not None and lanes[outer].type in DRIVABLE_TYPES
            if di and do:
                if not in_junction:
                    opposite = b == 0 or "bidirectional" in (lanes[inner].type, lanes[outer].type)
                    self.markings.append(xs.points(xs.border[b]))
                    self.marking_kind.append(MARKING_CENTRE_LINE if opposite else MARKING_LANE_DIVIDER)
            elif di or do:
                # Inside junctions connecting roads overlap: keep borders with a real
                # non-drivable lane (shoulder, sidewalk, median, ...) beyond them, and later cut
                # away the parts lying on another connecting road's lanes.
                other = outer if di else inner
                if not in_junction:
                    self.road_edges.append(xs.points(xs.border[b]))
                elif other is not None:
                    self.junction_edges.append((xs.road.junction, xs.road.id, xs.points(xs.border[b])))
        if not in_junction:
            self._add_walls(xs, lanes, n_left, n_right)

    def _add_walls(self, xs: CrossSections, lanes: dict, n_left: int, n_right: int) -> None:
        for sign, n in ((1, n_left), (-1, n_right)):
            if n == 0:
                continue
            outer = sign * n
            if self.has_sidewalks:
                # The outer border of the outermost sidewalk on this side.
                walk = [i for i in range(sign, outer + sign, sign) if lanes[i].type == "sidewalk"]
                if not walk:
                    continue
                line = xs.points(xs.border[walk[-1]])
            else:
                line = xs.points(xs.border[outer] + sign * WALL_OFFSET_NO_SIDEWALK_M)
            line = simplify(line)
            self.walls.append(np.stack([line[:-1], line[1:]], axis=1))

    # ---- lane graph ---------------------------------------------------------------------------
    def link_pieces(self) -> None:
        roads = self.doc.roads
        pieces = self.origin.pieces
        for (rid, k, lane_id, fwd), (_, last) in list(pieces.items()):
            road = roads[rid]
            lane = road.sections[k].lanes[lane_id]
            targets: list[PieceKey] = []
            next_id = lane.successor if fwd else lane.predecessor
            inner_next = k + 1 if fwd else k - 1
            if 0 <= inner_next < len(road.sections):
                if next_id is not None:
                    targets.append((rid, inner_next, next_id, fwd))
            else:
                link = road.successor if fwd else road.predecessor
                if link is not None and link.element_type == "road" and next_id is not None:
                    other = roads.get(link.element_id)
                    if other is not None:
                        at_start = link.contact_point == "start"
                        sec = 0 if at_start else len(other.sections) - 1
                        targets.append((other.id, sec, next_id, at_start))
                elif link is not None and link.element_type == "junction":
                    for conn in self.doc.junctions.get(link.element_id, []):
                        other = roads.get(conn.connecting)
                        if conn.incoming != rid or other is None:
                            continue
                        at_start = conn.contact_point == "start"
                        sec = 0 if at_start else len(other.sections) - 1
                        targets += [
                            (other.id, sec, to, at_start) for frm, to in conn.lane_links if frm == lane_id
                        ]
            for t in targets:
                if t in pieces:
                    self.edges.add((last, pieces[t][0]))

    # ---- signals ----------------------------------------------------------------------------
    def signals(self) -> dict[str, np.ndarray]:
        roads = self.doc.roads
        lights = [s for s in self.doc.signals if s.type == LIGHT_TYPE]
        signs = [s for s in self.doc.signals if s.type in (str(SIGN_STOP), str(SIGN_YIELD))]

        def pose(sig: object) -> tuple[np.ndarray, float]:
            road = roads[sig.road]
            s = np.array([min(max(sig.s, 0.0), road.length)])
            x, y, h = reference_pose(road.geometries, s)
            z = cubic(s, road.elevation_s, road.elevation_coef)[0] + sig.z_offset
            p = np.array([x[0] - sig.t * np.sin(h[0]), y[0] + sig.t * np.cos(h[0]), z])
            return p, float(h[0])

        S = len(self.stop_lane)
        stop_light = np.full(S, -1, np.int32)
        stop_mid = np.array([p.mean(0) for p in self.stop_points]).reshape(-1, 3)
        stop_dir = np.array([self._lane_end_heading(i) for i in self.stop_lane])
        approaches: dict[tuple[str, int, float], list[int]] = {}
        for i, key in enumerate(self.stop_approach):
            approaches.setdefault(key, []).append(i)

        pos, head, junc = [], [], []
        for sig in lights:
            p, h = pose(sig)
            pos.append(p)
            head.append(h + sig.h_offset + (np.pi if sig.orientation == "-" else 0.0))
            junc.append(-1)
        light_index = {sig.id: i for i, sig in enumerate(lights)}
        stop_of_lane = {lane: i for i, lane in enumerate(self.stop_lane)}
        preds: dict[int, list[int]] = {}
        for a, b in self.edges:
            preds.setdefault(b, []).append(a)
        # 1) signalReferences on connecting roads name the lanes a light governs.
        for ref in self.doc.references:
            li = light_index.get(ref.id)
            road = roads.get(ref.road)
            if li is None or road is None:
                continue
            k = max(int(np.searchsorted([sc.s for sc in road.sections], ref.s, side="right")) - 1, 0)
            for (rid, sec, lane_id, _fwd), (first, _) in self.origin.pieces.items():
                if rid != road.id or sec != k or (ref.lanes and lane_id not in ref.lanes):
                    continue
                for p in preds.get(first, []):
                    if p in stop_of_lane:
                        stop_light[stop_of_lane[p]] = li
                        junc[li] = self.stop_approach[stop_of_lane[p]][1]
        # 2) otherwise the nearest approach (all its lanes) of the junction ahead.
        for li in range(len(lights)):
            if junc[li] >= 0 or not S:
                continue
            free = [key for key, idx in approaches.items() if np.all(stop_light[idx] < 0)] or list(approaches)
            dist = [np.linalg.norm(stop_mid[approaches[key]].mean(0) - pos[li]) for key in free]
            best = int(np.argmin(dist))
            if dist[best] <= LIGHT_MATCH_RADIUS_M:
                stop_light[approaches[free[best]]] = li
                junc[li] = free[best][1]
        # 3) a map with no light signals gets one per junction entry, far side, facing the approach.
        if not lights:
            for key, idx in approaches.items():
                if key[1] < 0:
                    continue
                mid = stop_mid[idx].mean(0)
                d = math.atan2(np.sin(stop_dir[idx]).mean(), np.cos(stop_dir[idx]).mean())
                across = self._junction_centres[key[1]] - mid
                reach = 2.0 * max(float(across[0] * math.cos(d) + across[1] * math.sin(d)), 5.0)
                pos.append(mid + np.array([reach * math.cos(d), reach * math.sin(d), 0.0]))
                head.append(d + np.pi)
                junc.append(key[1])
                stop_light[idx] = len(pos) - 1
        T = len(pos)
        # Lamps face the traffic they govern: flip the file's heading where it points away.
        heading = np.array(head, np.float64)
        group = np.zeros(T, np.int32)
        axis_ref: dict[int, float] = {}
        for li in range(T):
            governed = np.flatnonzero(stop_light == li)
            if len(governed):
                travel = math.atan2(np.sin(stop_dir[governed]).mean(), np.cos(stop_dir[governed]).mean())
                if math.cos(heading[li] - (travel + np.pi)) < 0:
                    heading[li] += np.pi
                ref = axis_ref.setdefault(junc[li], travel)
                # Opposite approaches share a group: compare directions modulo pi.
                group[li] = 0 if math.cos(2 * (travel - ref)) > 0 else 1
            elif junc[li] < 0 and len(self._junction_centres):
                junc[li] = int(np.argmin(np.linalg.norm(self._junction_centres - pos[li], axis=1)))
        sign_pos = [pose(s)[0] for s in signs]
        return {
            "stop_line_light": stop_light,
            "light_position": np.array(pos, np.float32).reshape(-1, 3),
            "light_heading": _wrap(heading).astype(np.float32),
            "light_junction": np.array(junc, np.int32),
            "light_group": group,
            "sign_position": np.array(sign_pos, np.float32).reshape(-1, 3),
            "sign_kind": np.array([int(s.type) for s in signs], np.int32),
        }

    def clip_junction_edges(self) -> None:
        """Keep the parts of junction borders that do not lie on another road's lane surface."""
        seg_by_junction: dict[int, tuple[np.ndarray, ...]] = {}
        for j in set(self.lane_junction) - {-1}:
            lanes = [i for i, lj in enumerate(self.lane_junction) if lj == j]
            seg_by_junction[j] = (
                np.concatenate([self.lanes[i][:-1] for i in lanes]),
                np.concatenate([self.lanes[i][1:] for i in lanes]),
                np.concatenate([np.full(len(self.lanes[i]) - 1, 0.5 * self.lane_width[i]) for i in lanes]),
                np.concatenate([np.full(len(self.lanes[i]) - 1, self.origin.road[i]) for i in lanes]),
            )
        for jid, rid, line in self.junction_edges:
            inside = np.zeros(len(line), bool)
            segs = seg_by_junction.get(self.junction_index[jid])
            if segs is not None:
                a, b, half, road = segs
                lo, hi = line.min(0) - 8.0, line.max(0) + 8.0
                near = (road != rid) & np.all((a >= lo) & (a <= hi), axis=1)
                a, b, half = a[near, :2], b[near, :2], half[near]
                zs = segs[0][near, 2]
                ab = b - a
                rel = line[:, None, :2] - a
                t = np.clip((rel * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-12), 0, 1)
                d = np.linalg.norm(rel - t[..., None] * ab, axis=-1)
                # On the surface: within the half width (less a margin for touching lanes), same level.
                on = (d < half - JUNCTION_EDGE_MARGIN_M) & (np.abs(line[:, None, 2] - zs) < 4.0)
                inside = on.any(1)
            keep = np.flatnonzero(~inside)
            for run in np.split(keep, np.flatnonzero(np.diff(keep) > 1) + 1):
                if len(run) >= 2:
                    self.road_edges.append(line[run])

    def crosswalks(self) -> np.ndarray:
        """(C, 4, 3) crosswalk corners: each outline's extent in its own frame, on the road surface."""
        quads = []
        for road in self.doc.roads.values():
            for cw in road.crosswalks:
                s = np.array([min(max(cw.s, 0.0), road.length)])
                x, y, h = reference_pose(road.geometries, s)
                z = cubic(s, road.elevation_s, road.elevation_coef)[0] + cw.z_offset
                ox, oy = x[0] - cw.t * np.sin(h[0]), y[0] + cw.t * np.cos(h[0])
                heading = h[0] + cw.hdg
                u = np.array([cw.u_range[0], cw.u_range[1], cw.u_range[1], cw.u_range[0]])
                v = np.array([cw.v_range[0], cw.v_range[0], cw.v_range[1], cw.v_range[1]])
                c, sn = np.cos(heading), np.sin(heading)
                quads.append(np.stack([ox + c * u - sn * v, oy + sn * u + c * v, np.full(4, z)], axis=1))
        return np.array(quads, np.float32).reshape(-1, 4, 3)

    def _lane_end_heading(self, lane: int) -> float:
        p = self.lanes[lane]
        d = p[-1] - p[-2] if len(p) >= 2 else np.zeros(3)
        return math.atan2(d[1], d[0])

    def junction_centres(self) -> np.ndarray:
        J = len(self.junction_index)
        total = np.zeros((J, 3))
        count = np.zeros(J)
        for pts, j in zip(self.lanes, self.lane_junction, strict=True):
            if j >= 0:
                total[j] += pts.sum(0)
                count[j] += len(pts)
        for jid, j in self.junction_index.items():
            if count[j] == 0:  # a junction with no drivable lane: use its roads' reference lines
                for road in self.doc.roads.values():
                    if road.junction == jid:
                        s = np.linspace(0, road.length, 5)
                        x, y, _ = reference_pose(road.geometries, s)
                        z = cubic(s, road.elevation_s, road.elevation_coef)
                        total[j] += np.stack([x, y, z], 1).sum(0)
                        count[j] += 5
        if np.any(count == 0):
            empty = [jid for jid, j in self.junction_index.items() if count[j] == 0]
            raise ValueError(f"{self.path}: junction(s) {empty} have no roads to place them")
        self._junction_centres = total / count[:, None]
        return self._junction_centres

    def road_map(self) -> RoadMap:
        for road in self.doc.roads.values():
            self.add_road(road)
        self.link_pieces()
        self.clip_junction_edges()
        centres = self.junction_centres()
        sig = self.signals()
        L = len(self.lanes)
        lane_points, lane_offsets = pack_polylines(self.lanes)
        succ: list[list[int]] = [[] for _ in range(L)]
        for a, b in sorted(self.edges):
            succ[a].append(b)
        succ_offsets = np.zeros(L + 1, np.int32)
        succ_offsets[1:] = np.cumsum([len(s) for s in succ])
        edge_points, edge_offsets = pack_polylines([simplify(p) for p in self.road_edges])
        mark_points, mark_offsets = pack_polylines([simplify(p) for p in self.markings])
        walk_points, walk_offsets = pack_polylines([simplify(p) for p in self.sidewalks])
        walls = (
            np.concatenate(self.walls).astype(np.float32) if self.walls else np.zeros((0, 2, 3), np.float32)
        )
        rm = RoadMap(
            name=self.name,
            lane_points=lane_points,
            lane_offsets=lane_offsets,
            lane_width=np.array(self.lane_width, np.float32),
            lane_speed_limit=np.array(self.lane_speed, np.float32),
            lane_junction=np.array(self.lane_junction, np.int32),
            lane_successor_offsets=succ_offsets,
            lane_successors=np.array([b for s in succ for b in s], np.int32),
            road_edge_points=edge_points,
            road_edge_offsets=edge_offsets,
            marking_points=mark_points,
            marking_offsets=mark_offsets,
            marking_kind=np.array(self.marking_kind, np.int32),
            stop_line_points=np.array(self.stop_points, np.float32).reshape(-1, 2, 3),
            stop_line_lane=np.array(self.stop_lane, np.int32),
            junction_center=centres.astype(np.float32).reshape(-1, 3),
            wall_points=walls,
            wall_height=np.full(len(walls), WALL_HEIGHT_M, np.float32),
            sidewalk_points=walk_points,
            sidewalk_offsets=walk_offsets,
            crosswalk_points=self.crosswalks(),
            parking_spots=(np.concatenate(self.parking) if self.parking else np.zeros((0, 4))).astype(
                np.float32
            ),
            **sig,
        )
        rm.validate()
        return rm


def _id_key(i: str) -> tuple[int, str]:
    try:
        return (0, f"{int(i):012d}")
    except ValueError:
        return (1, i)


def build_road_map(path: str | Path) -> tuple[RoadMap, LaneOrigin]:
    """Parse and convert ``path`` (no cache); also return each lane chunk's OpenDRIVE origin."""
    path = Path(path)
    doc = read_document(path)
    builder = _Builder(doc, path.stem, path)
    return builder.road_map(), builder.origin
