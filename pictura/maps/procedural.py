"""The embedded procedural town: a seeded grid of blocks with signalised junctions.

``generate(seed=0, blocks_x=4, blocks_y=4, ...)`` builds a `RoadMap` with no download, so every
layer above runs out of the box (``procedural:seed=0,blocks_x=3`` through `pictura.maps.load`).

Layout (x east, y north, z = 0 everywhere, right-hand traffic):

- Road lines sit on a grid, ``block_size`` apart: vertical roads at ``x = i * block_size``
  (``i = 0..blocks_x``), horizontal roads at ``y = j * block_size``. The outer lines form a ring
  road, so the town has 4-way junctions inside, T-junctions on the border and L-bends in the
  corners, and every lane can be driven forever.
- Each road line is two-way with 1 or 2 lanes per direction (seeded per line).
- Every grid node is a junction. Its approaches end ``CURB_RADIUS_M`` before the crossing road's
  edge; lanes through the junction are quadratic Bezier turns (tangent to both roads) or straight
  lines. 4-way and T junctions are signalised: one stop line per approach lane, one light head per
  approach hung on the far side of the junction, facing the approaching drivers.
- Each block is bounded by a closed curb loop (rounded corners, optional parking bays cut into the
  verge); behind the curb come a verge (parking), a sidewalk and a wall line with random gaps.
"""

from __future__ import annotations

import math

import numpy as np

from pictura.maps.roadmap import (
    MARKING_CENTRE_LINE,
    MARKING_LANE_DIVIDER,
    MAX_LANE_CHUNK_M,
    RoadMap,
)

CURB_RADIUS_M = 5.0
"""Block corner radius (m); also how far a junction's approaches stop short of the crossing road."""
VERGE_M = 2.5
"""Strip between curb and sidewalk (m); parking bays are cut into it."""
SIDEWALK_WIDTH_M = 3.0
WALL_SETBACK_M = VERGE_M + SIDEWALK_WIDTH_M + 0.5
"""Distance (m) from the curb to the wall line behind the sidewalk."""
PARKING_SPOT_LENGTH_M = 6.0
PARKING_TAPER_M = 2.0
LIGHT_HEIGHT_M = 5.5
CROSSWALK_WIDTH_M = 3.0
DASH_ON_M, DASH_OFF_M = 3.0, 5.0
TURN_SPEED_LIMIT = 8.3  # m/s, through-junction turns
BEZIER_POINTS = 13

# Arm directions of a junction (unit vector pointing from the centre out along the arm).
ARM_DIRS = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])  # E, N, W, S
ARM_E, ARM_N, ARM_W, ARM_S = range(4)

_INT_KEYS = {"seed": (0, 2**32 - 1), "blocks_x": (1, 64), "blocks_y": (1, 64)}
_FLOAT_KEYS = {
    "block_size": (40.0, 1000.0),
    "lane_width": (2.5, 5.0),
    "four_lane_prob": (0.0, 1.0),
    "parking_prob": (0.0, 1.0),
    "wall_prob": (0.0, 1.0),
    "speed_limit": (1.0, 40.0),
    "irregularity": (0.0, 0.4),
    "merge_prob": (0.0, 1.0),
}


def generate(
    seed: int = 0,
    blocks_x: int = 4,
    blocks_y: int = 4,
    block_size: float = 80.0,
    lane_width: float = 3.5,
    four_lane_prob: float = 0.5,
    parking_prob: float = 0.35,
    wall_prob: float = 0.85,
    speed_limit: float = 13.9,
    irregularity: float = 0.2,
    merge_prob: float = 0.15,
    **unknown: object,
) -> RoadMap:
    """Build a seeded grid town.

    Args:
        seed: RNG seed; the same arguments always give the same map.
        blocks_x, blocks_y: number of blocks along x and y (the grid has ``blocks + 1`` road lines).
        block_size: road-line spacing (m), centre to centre.
        lane_width: width of every lane (m).
        four_lane_prob: chance a road line has 2 lanes per direction instead of 1.
        parking_prob: chance a block side gets a parking bay cut into its verge.
        wall_prob: chance each wall piece along a block front is present (the rest are gaps).
        speed_limit: speed limit of 2-lane roads (m/s); 4-lane roads get 1.2x, turns 8.3 m/s.
        irregularity: each road-line gap is ``block_size * (1 + irregularity * U(-1, 1))``.
        merge_prob: chance a block merges with its east or north neighbour (the road between them
            goes; its end junctions become T-junctions or plain road).

    Raises:
        ValueError: naming the key, for an unknown key or a value out of range.
    """
    if unknown:
        known = ", ".join([*_INT_KEYS, *_FLOAT_KEYS])
        raise ValueError(f"procedural map: unknown key(s) {', '.join(map(repr, unknown))}; known: {known}")
    _check_args(locals())
    rng = np.random.default_rng(seed)
    town = _Town(
        blocks_x,
        blocks_y,
        float(block_size),
        float(lane_width),
        rng,
        float(four_lane_prob),
        float(irregularity),
        float(merge_prob),
    )
    builder = _Builder(town, float(speed_limit))
    builder.add_roads_and_junctions()
    builder.add_blocks(float(parking_prob), float(wall_prob))
    builder.add_outer_boundary(float(wall_prob))
    road_map = builder.finish(f"procedural:seed={seed},blocks_x={blocks_x},blocks_y={blocks_y}")
    road_map.validate()
    return road_map


def _check_args(args: dict) -> None:
    for key, (lo, hi) in _INT_KEYS.items():
        v = args[key]
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise ValueError(f"procedural map: {key} must be an integer, got {v!r}")
        if not lo <= v <= hi:
            raise ValueError(f"procedural map: {key} must be in [{lo}, {hi}], got {v}")
    for key, (lo, hi) in _FLOAT_KEYS.items():
        v = args[key]
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            raise ValueError(f"procedural map: {key} must be a number, got {v!r}")
        if not (math.isfinite(v) and lo <= v <= hi):
            raise ValueError(f"procedural map: {key} must be in [{lo}, {hi}], got {v}")
    # The narrowest block must still fit its rounded curb corners and the wall line behind them.
    need = 4.0 * args["lane_width"] + 2.0 * CURB_RADIUS_M + 2.0 * WALL_SETBACK_M
    narrowest = args["block_size"] * (1.0 - args["irregularity"])
    if narrowest < need:
        raise ValueError(
            f"procedural map: block_size={args['block_size']} with irregularity={args['irregularity']} gives "
            f"{narrowest:.1f} m blocks, too small for lane_width={args['lane_width']} (need >= {need:.1f} m)"
        )


def _rot90(v: np.ndarray) -> np.ndarray:
    """Rotate 2-D vector(s) by +90 degrees (to the left)."""
    return np.stack([-v[..., 1], v[..., 0]], axis=-1)


def _xyz(p2: np.ndarray) -> np.ndarray:
    """(n, 2) -> (n, 3) with z = 0."""
    p2 = np.atleast_2d(p2)
    return np.concatenate([p2, np.zeros((len(p2), 1))], axis=1)


def chunk_polyline(points: np.ndarray, max_len: float = MAX_LANE_CHUNK_M) -> list[np.ndarray]:
    """Cut an ``(n, d)`` polyline into equal-arclength pieces no longer than ``max_len`` (m).

    Consecutive pieces share their cut point exactly, so the lane graph is continuous.
    """
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    total = cum[-1]
    if total <= 0.0:
        raise ValueError("chunk_polyline: polyline has zero length")
    n = max(1, math.ceil(total / max_len - 1e-9))
    if len(points) == 2:  # straight lanes (most of a town): evenly spaced cut points
        cut_points = points[0] + np.linspace(0.0, 1.0, n + 1)[:, None] * (points[1] - points[0])
        cut_points[-1] = points[-1]
        return list(np.stack([cut_points[:-1], cut_points[1:]], axis=1))
    cuts = np.linspace(0.0, total, n + 1)
    cut_points = np.stack([np.interp(cuts, cum, points[:, d]) for d in range(points.shape[1])], axis=1)
    cut_points[0], cut_points[-1] = points[0], points[-1]
    pieces = []
    for i in range(n):
        inner = (cum > cuts[i] + 1e-9) & (cum < cuts[i + 1] - 1e-9)
        pieces.append(np.concatenate([cut_points[i : i + 1], points[inner], cut_points[i + 1 : i + 2]]))
    return pieces


def _bezier(p0: np.ndarray, p1: np.ndarray, p2: np.ndarray, n: int = BEZIER_POINTS) -> np.ndarray:
    t = np.linspace(0.0, 1.0, n)[:, None]
    return (1 - t) ** 2 * p0 + 2 * (1 - t) * t * p1 + t**2 * p2


class _Town:
    """Grid geometry: road-line positions, lanes per direction, junction extents."""

    def __init__(
        self,
        bx: int,
        by: int,
        block: float,
        w: float,
        rng: np.random.Generator,
        four_p: float,
        irregularity: float,
        merge_p: float,
    ):
        self.bx, self.by, self.w, self.rng = bx, by, w, rng
        # Road lines: irregular spacing, each gap block * (1 +- irregularity).
        gaps_x = block * (1.0 + irregularity * rng.uniform(-1.0, 1.0, bx))
        gaps_y = block * (1.0 + irregularity * rng.uniform(-1.0, 1.0, by))
        self.x = np.concatenate([[0.0], np.cumsum(gaps_x)])  # (bx + 1,) m, vertical road lines
        self.y = np.concatenate([[0.0], np.cumsum(gaps_y)])  # (by + 1,) m, horizontal road lines
        self.lanes_v = np.where(rng.random(bx + 1) < four_p, 2, 1)  # lanes per direction, vertical lines
        self.lanes_h = np.where(rng.random(by + 1) < four_p, 2, 1)
        self.removed: set[tuple[int, int, int]] = set()  # (i, j, arm) of road segments merged away
        self.blocks = self._merge_blocks(merge_p)

    def _merge_blocks(self, merge_p: float) -> list[tuple[int, int, int, int]]:
        """Blocks as (i0, j0, i1, j1) grid-cell ranges: some neighbour pairs merge into one 2x1 block.

        Each cell merges at most once, so a node loses at most two opposite arms and keeps >= 2;
        border segments never go, so the ring road stays whole.
        """
        merged: set[tuple[int, int]] = set()
        blocks = []
        for j in range(self.by):
            for i in range(self.bx):
                if (i, j) in merged:
                    continue
                options = [(i + 1, j)] if i + 1 < self.bx and (i + 1, j) not in merged else []
                options += [(i, j + 1)] if j + 1 < self.by else []
                # A 2-block town keeps its only inner road: without it, no route could turn around.
                if options and self.bx * self.by > 2 and self.rng.random() < merge_p:
                    ni, nj = options[int(self.rng.integers(len(options)))]
                    merged |= {(i, j), (ni, nj)}
                    if ni > i:  # drop the vertical segment between the two cells
                        self.removed |= {(ni, j, ARM_N), (ni, j + 1, ARM_S)}
                    else:
                        self.removed |= {(i, nj, ARM_E), (i + 1, nj, ARM_W)}
                    blocks.append((i, j, ni + 1, nj + 1))
                else:
                    blocks.append((i, j, i + 1, j + 1))
        return blocks

    def node_id(self, i: int, j: int) -> int:
        return j * (self.bx + 1) + i

    def center(self, i: int, j: int) -> np.ndarray:
        return np.array([self.x[i], self.y[j]])

    def arms(self, i: int, j: int) -> list[int]:
        out = []
        if i < self.bx:
            out.append(ARM_E)
        if j < self.by:
            out.append(ARM_N)
        if i > 0:
            out.append(ARM_W)
        if j > 0:
            out.append(ARM_S)
        return [a for a in out if (i, j, a) not in self.removed]

    def arm_lanes(self, i: int, j: int, arm: int) -> int:
        """Lanes per direction on the road an arm belongs to."""
        return int(self.lanes_h[j] if arm in (ARM_E, ARM_W) else self.lanes_v[i])

    def cross_half_width(self, i: int, j: int, arm: int) -> float:
        """Half width (m) of the road crossing an arm at this junction."""
        return float(self.lanes_v[i] if arm in (ARM_E, ARM_W) else self.lanes_h[j]) * self.w

    def entry_dist(self, i: int, j: int, arm: int) -> float:
        """Distance (m) from junction centre to where lanes of this arm enter/leave it."""
        return self.cross_half_width(i, j, arm) + CURB_RADIUS_M

    def entry_point(self, i: int, j: int, arm: int, k: int) -> np.ndarray:
        """End of incoming lane k (0 = next to the centre line) on an arm, (2,) m."""
        u = ARM_DIRS[arm]
        return self.center(i, j) + u * self.entry_dist(i, j, arm) + _rot90(u) * (k + 0.5) * self.w

    def exit_point(self, i: int, j: int, arm: int, k: int) -> np.ndarray:
        """Start of outgoing lane k on an arm, (2,) m."""
        u = ARM_DIRS[arm]
        return self.center(i, j) + u * self.entry_dist(i, j, arm) - _rot90(u) * (k + 0.5) * self.w

    def signalised(self, i: int, j: int) -> bool:
        return len(self.arms(i, j)) >= 3


def _turn(arm_in: int, arm_out: int) -> str:
    """Movement from an approach on ``arm_in`` to a departure on ``arm_out``."""
    delta = (arm_out - arm_in) % 4
    return {2: "straight", 1: "right", 3: "left", 0: "u"}[delta]


def _connections(n_in: int, n_out: int, turn: str, only_exit: bool) -> list[tuple[int, int]]:
    """Lane pairs (incoming k, outgoing k') for one movement, never crossing each other.

    Straight keeps the lane index. Right turns leave from the outermost lane, left turns from the
    innermost, and both may end in any lane of the new road: the lane graph has no lane-change
    links, so this is what lets a route reach every lane (the graph stays strongly connected).
    When a turn is the only way out (a corner L-bend of the ring road) every lane may end in
    every lane: otherwise the outer lane of the ring, which meets no right turn at the border
    T-junctions, could never leave the ring.
    """
    if only_exit and turn != "straight":
        return [(k_in, k_out) for k_in in range(n_in) for k_out in range(n_out)]
    if turn == "straight":
        pairs = {(k, min(k, n_out - 1)) for k in range(n_in)}
        pairs |= {(min(k, n_in - 1), k) for k in range(n_out)}
        return sorted(pairs)
    if turn == "right":
        return [(n_in - 1, k) for k in range(n_out)]
    return [(0, k) for k in range(n_out)]


class _Builder:
    """Accumulates map elements as Python lists, then packs them into a `RoadMap`."""

    def __init__(self, town: _Town, speed_limit: float):
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

    def _add_road_segments(self, i: int, j: int) -> None:
        """Road lanes and markings from junction (i, j) east and north to the next junction."""
        t = self.t
        for arm, (ni, nj) in ((ARM_E, (i + 1, j)), (ARM_N, (i, j + 1))):
            if ni > t.bx or nj > t.by or (i, j, arm) in t.removed:
                continue
            back = (arm + 2) % 4
            n = t.arm_lanes(i, j, arm)
            speed = self.speed_limit * (1.2 if n == 2 else 1.0)
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
            normal = _rot90(u)
            start = t.center(i, j) + u * t.entry_dist(i, j, arm)
            end = t.center(ni, nj) - u * t.entry_dist(ni, nj, back)
            self.markings.append(np.stack([start, end]))
            self.marking_kind.append(MARKING_CENTRE_LINE)
            if n == 2:
                for side in (-1.0, 1.0):
                    for dash in _dashes(start + side * normal * t.w, end + side * normal * t.w):
                        self.markings.append(dash)
                        self.marking_kind.append(MARKING_LANE_DIVIDER)

    def _add_junction(self, i: int, j: int) -> None:
        t = self.t
        jid = t.node_id(i, j)
        arms = t.arms(i, j)
        c = t.center(i, j)
        for a in arms:
            exits = [b for b in arms if b != a]
            n_in = t.arm_lanes(i, j, a)
            t_in = -ARM_DIRS[a]  # direction of travel on the approach
            for b in exits:
                turn = _turn(a, b)
                speed = self.speed_limit if turn == "straight" else TURN_SPEED_LIMIT
                for k_in, k_out in _connections(n_in, t.arm_lanes(i, j, b), turn, len(exits) == 1):
                    p0, p2 = t.entry_point(i, j, a, k_in), t.exit_point(i, j, b, k_out)
                    if turn == "straight":
                        poly = np.stack([p0, p2])
                    else:
                        p1 = p0 + t_in * np.dot(p2 - p0, t_in)  # where both lanes' lines meet
                        poly = _bezier(p0, p1, p2)
                    p = self._add_path(poly, speed, jid)
                    self.connector_from.setdefault((i, j, a, k_in), []).append(p)
                    self.connector_to[p] = (i, j, b, k_out)
        if not t.signalised(i, j):
            return
        for a in arms:
            u = ARM_DIRS[a]
            normal = _rot90(u)
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

    # ---- blocks: curbs, parking, sidewalks, walls ------------------------------------------
    def add_blocks(self, parking_prob: float, wall_prob: float) -> None:
        t = self.t
        for i0, j0, i1, j1 in t.blocks:
            x0 = t.x[i0] + t.lanes_v[i0] * t.w
            x1 = t.x[i1] - t.lanes_v[i1] * t.w
            y0 = t.y[j0] + t.lanes_h[j0] * t.w
            y1 = t.y[j1] - t.lanes_h[j1] * t.w
            self._add_block(x0, x1, y0, y1, parking_prob, wall_prob)

    def _add_block(
        self, x0: float, x1: float, y0: float, y1: float, parking_prob: float, wall_prob: float
    ) -> None:
        corners = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])  # counter-clockwise
        r = CURB_RADIUS_M
        loop: list[np.ndarray] = []
        for s in range(4):
            p, q = corners[s], corners[(s + 1) % 4]
            d = (q - p) / np.linalg.norm(q - p)
            inward = _rot90(d)
            side = np.linalg.norm(q - p)
            loop.append(p + d * r)
            n_spots = int((side - 2 * r - 2 * PARKING_TAPER_M - 4.0) // PARKING_SPOT_LENGTH_M)
            n_spots = min(n_spots, 6)
            if n_spots >= 1 and self.t.rng.random() < parking_prob:
                a = 0.5 * (side - n_spots * PARKING_SPOT_LENGTH_M)
                b = a + n_spots * PARKING_SPOT_LENGTH_M
                loop += [p + d * (a - PARKING_TAPER_M), p + d * a + inward * VERGE_M]
                loop += [p + d * b + inward * VERGE_M, p + d * (b + PARKING_TAPER_M)]
                heading = math.atan2(-d[1], -d[0])  # traffic on this side runs clockwise round the block
                for k in range(n_spots):
                    centre = p + d * (a + (k + 0.5) * PARKING_SPOT_LENGTH_M) + inward * (0.5 * VERGE_M)
                    self.parking.append((centre[0], centre[1], heading))
            loop.append(q - d * r)
            # Rounded corner at q, centred inside the block.
            centre = q - d * r + inward * r
            ang0 = math.atan2(-inward[1], -inward[0])
            ang = ang0 + np.linspace(0.0, 0.5 * math.pi, 7)[1:-1]
            loop += list(centre + r * np.stack([np.cos(ang), np.sin(ang)], axis=1))
        loop.append(loop[0])
        self.edges.append(np.array(loop))
        sw = VERGE_M + 0.5 * SIDEWALK_WIDTH_M
        self.sidewalks.append(_rect_loop(x0 + sw, x1 - sw, y0 + sw, y1 - sw))
        ws = WALL_SETBACK_M
        self._add_walls(_rect_loop(x0 + ws, x1 - ws, y0 + ws, y1 - ws), wall_prob)

    def add_outer_boundary(self, wall_prob: float) -> None:
        t = self.t
        x0, x1 = t.x[0] - t.lanes_v[0] * t.w, t.x[-1] + t.lanes_v[-1] * t.w
        y0, y1 = t.y[0] - t.lanes_h[0] * t.w, t.y[-1] + t.lanes_h[-1] * t.w
        self.edges.append(_rect_loop(x0, x1, y0, y1))
        sw = VERGE_M + 0.5 * SIDEWALK_WIDTH_M
        self.sidewalks.append(_rect_loop(x0 - sw, x1 + sw, y0 - sw, y1 + sw))
        ws = WALL_SETBACK_M
        self._add_walls(_rect_loop(x0 - ws, x1 + ws, y0 - ws, y1 + ws), wall_prob)

    def _add_walls(self, loop: np.ndarray, wall_prob: float) -> None:
        """Cut each side of a closed loop into 8-20 m pieces; keep each with ``wall_prob``."""
        rng = self.t.rng
        for p, q in zip(loop[:-1], loop[1:], strict=True):
            side = float(np.linalg.norm(q - p))
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
        lane_points, lane_offsets = _pack_xy(chunk_polys)
        succ_offsets = np.zeros(len(succ) + 1, np.int32)
        succ_offsets[1:] = np.cumsum([len(s) for s in succ])
        edge_points, edge_offsets = _pack_xy(self.edges)
        mark_points, mark_offsets = _pack_xy(self.markings)
        sw_points, sw_offsets = _pack_xy(self.sidewalks)
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
            junction_center=_xyz(centres).astype(np.float32),
            wall_points=np.concatenate([walls, np.zeros((len(walls), 2, 1))], axis=2).astype(np.float32),
            wall_height=np.asarray(self.wall_height, np.float32),
            sidewalk_points=sw_points,
            sidewalk_offsets=sw_offsets,
            crosswalk_points=np.concatenate([cross, np.zeros((len(cross), 4, 1))], axis=2).astype(np.float32),
            parking_spots=np.concatenate(
                [parking[:, :2], np.zeros((len(parking), 1)), parking[:, 2:]], axis=1
            ).astype(np.float32),
        )


def _pack_xy(polylines: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """List of ``(n_i, 2)`` polylines -> CSR (points ``(P, 3)`` with z = 0, offsets)."""
    offsets = np.zeros(len(polylines) + 1, np.int32)
    offsets[1:] = np.cumsum([len(p) for p in polylines])
    points = np.zeros((offsets[-1], 3), np.float32)
    if polylines:
        points[:, :2] = np.concatenate(polylines)
    return points, offsets


def _rect_loop(x0: float, x1: float, y0: float, y1: float) -> np.ndarray:
    """Closed counter-clockwise rectangle, (5, 2) m."""
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]])


def _dashes(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    """Dashed line from a to b: ``DASH_ON_M`` painted, ``DASH_OFF_M`` gap, centred on the span."""
    length = float(np.linalg.norm(b - a))
    period = DASH_ON_M + DASH_OFF_M
    n = int((length + DASH_OFF_M) // period)
    if n < 1:
        return []
    d = (b - a) / length
    start = 0.5 * (length - (n * period - DASH_OFF_M))
    return [
        np.stack([a + d * (start + k * period), a + d * (start + k * period + DASH_ON_M)]) for k in range(n)
    ]
