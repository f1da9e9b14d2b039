"""Builds the lanes, lane graph, curbs, signals and furniture of a `Town` and packs a `RoadMap`."""

from __future__ import annotations

import math

import numpy as np

from pictura.maps.procedural.geometry import (
    ARC_STEP_M,
    bezier,
    chunk_polyline,
    corner_loop,
    dashes,
    pack_xy,
    polar_blend,
    rot90,
    xyz,
)
from pictura.maps.procedural.town import (
    ARM_DIRS,
    ARM_E,
    ARM_N,
    ARM_W,
    CROSSWALK_WIDTH_M,
    LIGHT_HEIGHT_M,
    PARKING_SPOT_LENGTH_M,
    PARKING_TAPER_M,
    SIDEWALK_WIDTH_M,
    SIGN_HEIGHT_M,
    TURN_SPEED_LIMIT,
    VERGE_M,
    WALL_SETBACK_M,
    Town,
    connections,
    turn_kind,
)
from pictura.maps.roadmap import (
    MARKING_CENTRE_LINE,
    MARKING_LANE_DIVIDER,
    SIGN_YIELD,
    RoadMap,
)


class Builder:
    """Accumulates map elements as Python lists, then packs them into a `RoadMap`."""

    def __init__(self, town: Town, speed_limit: float):
        self.t = town
        self.speed_limit = speed_limit
        # Lane paths before chunking: polyline (n, 2), speed limit, junction id.
        self.paths: list[tuple[np.ndarray, float, int]] = []
        self.path_succ: list[list[int]] = []
        self.road_path_end: dict[tuple[int, int, int, int], int] = {}  # (i, j, arm, k) entry -> path
        self.road_path_start: dict[tuple[int, int, int, int], int] = {}  # (i, j, arm, k) exit -> path
        self.connector_from: dict[tuple[int, int, int, int], list[int]] = {}
        self.connector_to: dict[int, tuple[int, int, int, int]] = {}
        self.edges: list[np.ndarray] = []
        self.markings: list[np.ndarray] = []
        self.marking_kind: list[int] = []
        self.stop_lines: list[np.ndarray] = []  # (2, 2)
        self.stop_line_key: list[tuple[int, int, int, int]] = []
        self.stop_line_light: list[int] = []
        self.light_pos: list[np.ndarray] = []
        self.light_heading: list[float] = []
        self.light_junction: list[int] = []
        self.light_group: list[int] = []
        self.walls: list[np.ndarray] = []  # (2, 2)
        self.wall_height: list[float] = []
        self.sidewalks: list[np.ndarray] = []
        self.crosswalks: list[np.ndarray] = []  # (4, 2)
        self.parking: list[tuple[float, float, float]] = []  # x, y, heading
        self.extra_succ: dict[int, list[int]] = {}  # path -> successors not given by the road/connector maps
        self.signs: list[np.ndarray] = []  # (3,) yield signs at roundabout entries

    # ---- roads and junctions -------------------------------------------------------------
    def _add_path(self, poly: np.ndarray, speed: float, junction: int) -> int:
        self.paths.append((poly, speed, junction))
        self.path_succ.append([])
        return len(self.paths) - 1

    def add_roads_and_junctions(self) -> None:
        t = self.t
        for j in range(t.by + 1):
            for i in range(t.bx + 1):
                self._add_road_segments(i, j)
        for j in range(t.by + 1):
            for i in range(t.bx + 1):
                self._add_junction(i, j)
        # Link: road lane -> connectors leaving its entry; connector -> road lane at its exit.
        for key, path in self.road_path_end.items():
            self.path_succ[path] = list(self.connector_from.get(key, []))
        for path, key in self.connector_to.items():
            self.path_succ[path] = [self.road_path_start[key]]
        for path, nexts in self.extra_succ.items():
            self.path_succ[path] = nexts

    def _add_road_segments(self, i: int, j: int) -> None:
        """Road lanes and markings from junction (i, j) east and north to the next junction."""
        t = self.t
        for arm, (ni, nj) in ((ARM_E, (i + 1, j)), (ARM_N, (i, j + 1))):
            if ni > t.bx or nj > t.by or (i, j, arm) in t.removed:
                continue
            back = (arm + 2) % 4
            n = t.arm_lanes(i, j, arm)
            speed = self.speed_limit * (1.0 + 0.2 * (n - 1))
            for k in range(n):
                # Outbound from (i, j) on `arm`, arriving at (ni, nj) on its `back` arm.
                a, b = t.exit_point(i, j, arm, k), t.entry_point(ni, nj, back, k)
                p = self._add_path(np.stack([a, b]), speed, -1)
                self.road_path_start[(i, j, arm, k)] = p
                self.road_path_end[(ni, nj, back, k)] = p
                # Inbound to (i, j) from (ni, nj).
                a, b = t.exit_point(ni, nj, back, k), t.entry_point(i, j, arm, k)
                p = self._add_path(np.stack([a, b]), speed, -1)
                self.road_path_start[(ni, nj, back, k)] = p
                self.road_path_end[(i, j, arm, k)] = p
            # Markings run between the two junction entries along the road centre.
            u = ARM_DIRS[arm]
            normal = rot90(u)
            start = t.center(i, j) + u * t.entry_dist(i, j, arm)
            end = t.center(ni, nj) - u * t.entry_dist(ni, nj, back)
            self.markings.append(np.stack([start, end]))
            self.marking_kind.append(MARKING_CENTRE_LINE)
            for k in range(1, n):
                for side in (-1.0, 1.0):
                    off = side * normal * k * t.w
                    for dash in dashes(start + off, end + off):
                        self.markings.append(dash)
                        self.marking_kind.append(MARKING_LANE_DIVIDER)

    def _add_junction(self, i: int, j: int) -> None:
        t = self.t
        jid = t.node_id(i, j)
        arms = t.arms(i, j)
        c = t.center(i, j)
        if (i, j) in t.roundabout:
            self._add_roundabout(i, j)
            return
        arc_centre = None
        if (i, j) in t.corner_radius:  # both arms' lanes are concentric arcs round this point
            arc_centre = c + t.corner_radius[(i, j)] * (ARM_DIRS[arms[0]] + ARM_DIRS[arms[1]])
        for a in arms:
            exits = [b for b in arms if b != a]
            n_in = t.arm_lanes(i, j, a)
            t_in = -ARM_DIRS[a]  # direction of travel on the approach
            for b in exits:
                turn = turn_kind(a, b)
                speed = self.speed_limit if turn == "straight" else TURN_SPEED_LIMIT
                has_straight = any(turn_kind(a, e) == "straight" for e in exits)
                n_out = t.arm_lanes(i, j, b)
                for k_in, k_out in connections(n_in, n_out, turn, len(exits) == 1, has_straight):
                    p0, p2 = t.entry_point(i, j, a, k_in), t.exit_point(i, j, b, k_out)
                    if turn == "straight":
                        poly = np.stack([p0, p2])
                    elif arc_centre is not None:
                        poly = polar_blend(arc_centre, p0, p2)
                    else:
                        p1 = p0 + t_in * np.dot(p2 - p0, t_in)  # where both lanes' lines meet
                        poly = bezier(p0, p1, p2)
                    p = self._add_path(poly, speed, jid)
                    self.connector_from.setdefault((i, j, a, k_in), []).append(p)
                    self.connector_to[p] = (i, j, b, k_out)
        if not t.signalised(i, j):
            return
        for a in arms:
            u = ARM_DIRS[a]
            normal = rot90(u)
            n_in = t.arm_lanes(i, j, a)
            cross_h = t.cross_half_width(i, j, a)
            # Far-side head: across the junction, over the approach's lanes, lamp facing them.
            light = len(self.light_pos)
            self.light_pos.append(c - u * (cross_h + 2.0) + normal * (0.5 * n_in * t.w))
            self.light_heading.append(math.atan2(u[1], u[0]))
            self.light_junction.append(jid)
            self.light_group.append(0 if a in (ARM_E, ARM_W) else 1)
            for k in range(n_in):
                e = t.entry_point(i, j, a, k)
                self.stop_lines.append(np.stack([e - normal * 0.5 * t.w, e + normal * 0.5 * t.w]))
                self.stop_line_key.append((i, j, a, k))
                self.stop_line_light.append(light)
            h = n_in * t.w
            d0, d1 = cross_h + 1.0, cross_h + 1.0 + CROSSWALK_WIDTH_M
            self.crosswalks.append(
                np.stack(
                    [
                        c + u * d0 - normal * h,
                        c + u * d1 - normal * h,
                        c + u * d1 + normal * h,
                        c + u * d0 + normal * h,
                    ]
                )
            )

    def _add_roundabout(self, i: int, j: int) -> None:
        """Ring paths between attach points, entry and exit Beziers, a yield sign per entry."""
        t = self.t
        jid = t.node_id(i, j)
        ra = t.roundabout[(i, j)]
        attach: list[tuple[float, str, int, int]] = []  # (angle, "in"/"out", arm, k)
        for (arm, k), (phi, _) in ra.attach.items():
            theta = math.atan2(ARM_DIRS[arm][1], ARM_DIRS[arm][0])
            attach.append(((theta + phi) % (2 * math.pi), "in", arm, k))
            attach.append(((theta - phi) % (2 * math.pi), "out", arm, k))
        attach.sort()
        ring_paths = []
        for s, (ang, _, _, _) in enumerate(attach):
            ang_next = attach[(s + 1) % len(attach)][0]
            sweep = (ang_next - ang) % (2 * math.pi)
            n = max(2, math.ceil(sweep * ra.ring_radius / ARC_STEP_M) + 1)
            angles = ang + np.linspace(0.0, sweep, n)
            poly = ra.centre + ra.ring_radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)
            ring_paths.append(self._add_path(poly, TURN_SPEED_LIMIT, jid))
        for s, (_, kind, arm, k) in enumerate(attach):
            u = ARM_DIRS[arm]
            frame = np.stack([u, rot90(u)])  # local (along arm, left of arm) -> world rows
            phi, ctrl = ra.attach[(arm, k)]
            theta = math.atan2(u[1], u[0])
            into = ring_paths[s]  # the ring path starting at this attach point
            before = ring_paths[s - 1]  # the ring path ending here
            self.extra_succ.setdefault(before, []).append(into)
            if kind == "in":
                p0 = t.entry_point(i, j, arm, k)
                p1 = ra.centre + ctrl @ frame
                poly = bezier(p0, p1, ra.ring_point(theta + phi))
                p = self._add_path(poly, TURN_SPEED_LIMIT, jid)
                self.connector_from.setdefault((i, j, arm, k), []).append(p)
                self.extra_succ[p] = [into]
            else:
                p1 = ra.centre + (ctrl * [1.0, -1.0]) @ frame
                poly = bezier(ra.ring_point(theta - phi), p1, t.exit_point(i, j, arm, k))
                p = self._add_path(poly, TURN_SPEED_LIMIT, jid)
                self.connector_to[p] = (i, j, arm, k)
                self.extra_succ[before].append(p)
        for arm in range(4):
            u = ARM_DIRS[arm]
            side = t.arm_lanes(i, j, arm) * t.w + 0.5 * VERGE_M  # on the verge, right of the approach
            pos = ra.centre + u * ra.entry_dist[arm] + rot90(u) * side
            self.signs.append(np.array([pos[0], pos[1], SIGN_HEIGHT_M]))

    def add_roundabout_islands(self) -> None:
        for ra in self.t.roundabout.values():
            n = math.ceil(2 * math.pi * ra.island_radius / ARC_STEP_M)
            ang = np.linspace(0.0, 2 * math.pi, n + 1)
            loop = ra.centre + ra.island_radius * np.stack([np.cos(ang), np.sin(ang)], axis=1)
            loop[-1] = loop[0]
            self.edges.append(loop)

    # ---- blocks: curbs, parking, sidewalks, walls ------------------------------------------
    def add_blocks(self, parking_prob: float, parking_lane_prob: float, wall_prob: float) -> None:
        t = self.t
        for i0, j0, i1, j1 in t.blocks:
            x0 = t.x[i0] + t.lanes_v[i0] * t.w
            x1 = t.x[i1] - t.lanes_v[i1] * t.w
            y0 = t.y[j0] + t.lanes_h[j0] * t.w
            y1 = t.y[j1] - t.lanes_h[j1] * t.w
            corners = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])  # counter-clockwise
            specs = [
                t.block_corner(i0, j0),
                t.block_corner(i1, j0),
                t.block_corner(i1, j1),
                t.block_corner(i0, j1),
            ]
            self.edges.append(
                corner_loop(
                    corners,
                    specs,
                    0.0,
                    lambda p, d, s: self._parking(p, d, s, parking_prob, parking_lane_prob),
                )
            )
            self.sidewalks.append(corner_loop(corners, specs, VERGE_M + 0.5 * SIDEWALK_WIDTH_M))
            self._add_walls(corner_loop(corners, specs, WALL_SETBACK_M), wall_prob)
        # Centre lines of the ring road's curved corners (the straight ones stop at the arc ends).
        for (i, j), radius in t.corner_radius.items():
            arms = t.arms(i, j)
            c = t.center(i, j)
            u, v = ARM_DIRS[arms[0]], ARM_DIRS[arms[1]]
            self.markings.append(polar_blend(c + radius * (u + v), c + u * radius, c + v * radius))
            self.marking_kind.append(MARKING_CENTRE_LINE)

    def _parking(
        self, p: np.ndarray, d: np.ndarray, side: float, parking_prob: float, parking_lane_prob: float
    ) -> list[np.ndarray]:
        """Curb points of a parking bay or parking lane along one straight block side, or none.

        ``p`` is where the straight side starts, ``d`` its unit direction, ``side`` its length (m).
        A bay holds up to 6 spots in the middle; a parking lane runs the whole side (tapers at
        both ends). Either is ``VERGE_M`` deep, cut into the verge behind the curb.
        """
        inward = rot90(d)
        rng = self.t.rng
        n_bay = min(6, int((side - 2 * PARKING_TAPER_M - 4.0) // PARKING_SPOT_LENGTH_M))
        n_lane = int((side - 2 * PARKING_TAPER_M - 1.0) // PARKING_SPOT_LENGTH_M)
        if n_bay >= 1 and rng.random() < parking_prob:
            n_spots = n_bay
        elif n_lane >= 1 and rng.random() < parking_lane_prob:
            n_spots = n_lane
        else:
            return []
        a = 0.5 * (side - n_spots * PARKING_SPOT_LENGTH_M)
        b = a + n_spots * PARKING_SPOT_LENGTH_M
        heading = math.atan2(-d[1], -d[0])  # traffic on this side runs clockwise round the block
        for k in range(n_spots):
            centre = p + d * (a + (k + 0.5) * PARKING_SPOT_LENGTH_M) + inward * (0.5 * VERGE_M)
            self.parking.append((centre[0], centre[1], heading))
        return [
            p + d * (a - PARKING_TAPER_M),
            p + d * a + inward * VERGE_M,
            p + d * b + inward * VERGE_M,
            p + d * (b + PARKING_TAPER_M),
        ]

    def add_outer_boundary(self, wall_prob: float) -> None:
        t = self.t
        x0, x1 = t.x[0] - t.lanes_v[0] * t.w, t.x[-1] + t.lanes_v[-1] * t.w
        y0, y1 = t.y[0] - t.lanes_h[0] * t.w, t.y[-1] + t.lanes_h[-1] * t.w
        corners = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])
        n_w = float(t.lanes_v[0]) * t.w
        specs = [
            ("round", t.corner_radius[node] + n_w) if node in t.corner_radius else ("round", 0.0)
            for node in ((0, 0), (t.bx, 0), (t.bx, t.by), (0, t.by))
        ]
        self.edges.append(corner_loop(corners, specs, 0.0))
        self.sidewalks.append(corner_loop(corners, specs, -(VERGE_M + 0.5 * SIDEWALK_WIDTH_M)))
        self._add_walls(corner_loop(corners, specs, -WALL_SETBACK_M), wall_prob)

    def _add_walls(self, loop: np.ndarray, wall_prob: float) -> None:
        """Cut each side of a closed loop into 8-20 m pieces; keep each with ``wall_prob``.

        Arc corners (many short sides) go in runs: one keep/drop draw and one height per 8-20 m of
        arc, so a curved wall is not a dotted line.
        """
        rng = self.t.rng
        run_left, keep, height = 0.0, False, 0.0
        for p, q in zip(loop[:-1], loop[1:], strict=True):
            side = float(np.linalg.norm(q - p))
            if side < 1e-9:
                continue
            if side < 4.0:  # a piece of an arc
                if run_left <= 0.0:
                    run_left = rng.uniform(8.0, 20.0)
                    keep, height = rng.random() < wall_prob, float(rng.uniform(4.0, 10.0))
                run_left -= side
                if keep:
                    self.walls.append(np.stack([p, q]))
                    self.wall_height.append(height)
                continue
            run_left = 0.0
            n = max(1, int(round(side / rng.uniform(8.0, 20.0))))
            cuts = np.linspace(0.0, 1.0, n + 1)
            for a, b in zip(cuts[:-1], cuts[1:], strict=True):
                if rng.random() < wall_prob:
                    self.walls.append(np.stack([p + (q - p) * a, p + (q - p) * b]))
                    self.wall_height.append(float(rng.uniform(4.0, 10.0)))

    # ---- packing --------------------------------------------------------------------------
    def finish(self, name: str) -> RoadMap:
        # Chunk every path; chunks of one path chain, a path's last chunk takes its successors' first.
        chunk_polys: list[np.ndarray] = []
        first_chunk, last_chunk = [], []
        widths, speeds, junctions = [], [], []
        for poly, speed, junction in self.paths:
            pieces = chunk_polyline(poly)
            first_chunk.append(len(chunk_polys))
            chunk_polys += pieces
            last_chunk.append(len(chunk_polys) - 1)
            speeds += [speed] * len(pieces)
            junctions += [junction] * len(pieces)
        widths = [self.t.w] * len(chunk_polys)
        succ: list[list[int]] = [[c + 1] for c in range(len(chunk_polys))]
        for path, nexts in enumerate(self.path_succ):
            succ[last_chunk[path]] = [first_chunk[n] for n in nexts]
        lane_points, lane_offsets = pack_xy(chunk_polys)
        succ_offsets = np.zeros(len(succ) + 1, np.int32)
        succ_offsets[1:] = np.cumsum([len(s) for s in succ])
        edge_points, edge_offsets = pack_xy(self.edges)
        mark_points, mark_offsets = pack_xy(self.markings)
        sw_points, sw_offsets = pack_xy(self.sidewalks)
        stop = np.array(self.stop_lines).reshape(-1, 2, 2)
        walls = np.array(self.walls).reshape(-1, 2, 2)
        cross = np.array(self.crosswalks).reshape(-1, 4, 2)
        lights = np.array(self.light_pos).reshape(-1, 2)
        parking = np.array(self.parking).reshape(-1, 3)
        t = self.t
        centres = np.array([t.center(i, j) for j in range(t.by + 1) for i in range(t.bx + 1)])
        return RoadMap(
            name=name,
            lane_points=lane_points,
            lane_offsets=lane_offsets,
            lane_width=np.asarray(widths, np.float32),
            lane_speed_limit=np.asarray(speeds, np.float32),
            lane_junction=np.asarray(junctions, np.int32),
            lane_successor_offsets=succ_offsets,
            lane_successors=np.asarray([s for ss in succ for s in ss], np.int32),
            road_edge_points=edge_points,
            road_edge_offsets=edge_offsets,
            marking_points=mark_points,
            marking_offsets=mark_offsets,
            marking_kind=np.asarray(self.marking_kind, np.int32),
            stop_line_points=np.concatenate([stop, np.zeros((len(stop), 2, 1))], axis=2).astype(np.float32),
            stop_line_lane=np.asarray(
                [last_chunk[self.road_path_end[k]] for k in self.stop_line_key], np.int32
            ),
            stop_line_light=np.asarray(self.stop_line_light, np.int32),
            light_position=np.concatenate([lights, np.full((len(lights), 1), LIGHT_HEIGHT_M)], axis=1).astype(
                np.float32
            ),
            light_heading=np.asarray(self.light_heading, np.float32),
            light_junction=np.asarray(self.light_junction, np.int32),
            light_group=np.asarray(self.light_group, np.int32),
            junction_center=xyz(centres).astype(np.float32),
            wall_points=np.concatenate([walls, np.zeros((len(walls), 2, 1))], axis=2).astype(np.float32),
            wall_height=np.asarray(self.wall_height, np.float32),
            sidewalk_points=sw_points,
            sidewalk_offsets=sw_offsets,
            crosswalk_points=np.concatenate([cross, np.zeros((len(cross), 4, 1))], axis=2).astype(np.float32),
            parking_spots=np.concatenate(
                [parking[:, :2], np.zeros((len(parking), 1)), parking[:, 2:]], axis=1
            ).astype(np.float32),
            sign_position=np.array(self.signs, np.float32).reshape(-1, 3),
            sign_kind=np.full(len(self.signs), SIGN_YIELD, np.int32),
        )
