"""Town layout: road-line positions, lane counts, merged blocks, curved corners, roundabouts.

Pure layout decisions (all the seeded draws that shape the grid); `builder` turns them into lanes,
curbs and signals.
"""

from __future__ import annotations

import math

import numpy as np

from pictura.maps.procedural.geometry import rot90

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
TURN_SPEED_LIMIT = 8.3  # m/s, through-junction turns
ROUNDABOUT_ATTACH_DEG = 12.0
"""How far (deg) round the ring past the point where an approach lane's line would cross it an
entry joins the ring (exits mirror it)."""
SIGN_HEIGHT_M = 2.0

# Arm directions of a junction (unit vector pointing from the centre out along the arm).
ARM_DIRS = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])  # E, N, W, S
ARM_E, ARM_N, ARM_W, ARM_S = range(4)


class Town:
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
        max_lanes: int = 2,
        six_p: float = 0.0,
        curve_p: float = 0.0,
        roundabouts: int = 0,
        roundabout_p: float = 0.0,
    ):
        self.bx, self.by, self.w, self.rng = bx, by, w, rng
        # Road lines: irregular spacing, each gap block * (1 +- irregularity).
        gaps_x = block * (1.0 + irregularity * rng.uniform(-1.0, 1.0, bx))
        gaps_y = block * (1.0 + irregularity * rng.uniform(-1.0, 1.0, by))
        self.x = np.concatenate([[0.0], np.cumsum(gaps_x)])  # (bx + 1,) m, vertical road lines
        self.y = np.concatenate([[0.0], np.cumsum(gaps_y)])  # (by + 1,) m, horizontal road lines
        self.lanes_v = self._lane_counts(bx + 1, four_p, six_p, max_lanes)  # lanes per direction, vertical
        self.lanes_h = self._lane_counts(by + 1, four_p, six_p, max_lanes)
        # The ring road is one road: one lane count all round, so its corners can be concentric arcs.
        ring = self._lane_counts(1, four_p, six_p, max_lanes)[0]
        self.lanes_v[[0, -1]] = ring
        self.lanes_h[[0, -1]] = ring
        self.removed: set[tuple[int, int, int]] = set()  # (i, j, arm) of road segments merged away
        self.blocks = self._merge_blocks(merge_p)
        self.corner_radius = self._pick_curved_corners(curve_p)
        self.roundabout = self._pick_roundabouts(roundabouts, roundabout_p)

    def _lane_counts(self, n: int, four_p: float, six_p: float, max_lanes: int) -> np.ndarray:
        """Lanes per direction for n road lines: 2 with ``four_p``, of those 3 with ``six_p``."""
        multi = self.rng.random(n) < four_p
        three = self.rng.random(n) < six_p
        counts = np.where(multi, np.where(three & (max_lanes >= 3), 3, 2), 1)
        return np.minimum(counts, max_lanes)

    def _pick_curved_corners(self, curve_p: float) -> dict[tuple[int, int], float]:
        """Town corner node -> radius R (m) of the ring road's centre line round it.

        The inner curb (radius ``R - n * w``) takes at most half the shorter side of the corner
        block, so the block's other corner always fits.
        """
        out = {}
        n_w = float(self.lanes_v[0]) * self.w
        for i, j in ((0, 0), (self.bx, 0), (self.bx, self.by), (0, self.by)):
            gi = 0 if i == 0 else self.bx - 1
            gj = 0 if j == 0 else self.by - 1
            side_x = self.x[gi + 1] - self.x[gi] - (self.lanes_v[gi] + self.lanes_v[gi + 1]) * self.w
            side_y = self.y[gj + 1] - self.y[gj] - (self.lanes_h[gj] + self.lanes_h[gj + 1]) * self.w
            curb = self.rng.uniform(0.6, 1.0) * 0.5 * min(side_x, side_y)
            if self.rng.random() < curve_p and curb > WALL_SETBACK_M + CURB_RADIUS_M:
                out[(i, j)] = curb + n_w
        return out

    def _pick_roundabouts(self, count: int, p: float) -> dict[tuple[int, int], Roundabout]:
        """Up to ``count`` 4-way junctions (roads of <= 2 lanes per direction, not neighbours)."""
        candidates = [
            (i, j)
            for j in range(1, self.by)
            for i in range(1, self.bx)
            if len(self.arms(i, j)) == 4 and max(self.lanes_v[i], self.lanes_h[j]) <= 2
        ]
        self.rng.shuffle(candidates)
        out: dict[tuple[int, int], Roundabout] = {}
        for i, j in candidates:
            if len(out) >= count:
                break
            if self.rng.random() >= p or any(abs(i - a) + abs(j - b) <= 1 for a, b in out):
                continue
            out[(i, j)] = Roundabout(self.center(i, j), self.w, int(self.lanes_v[i]), int(self.lanes_h[j]))
        return out

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
        if (i, j) in self.corner_radius:
            return self.corner_radius[(i, j)]
        if (i, j) in self.roundabout:
            return self.roundabout[(i, j)].entry_dist[arm]
        return self.cross_half_width(i, j, arm) + CURB_RADIUS_M

    def entry_point(self, i: int, j: int, arm: int, k: int) -> np.ndarray:
        """End of incoming lane k (0 = next to the centre line) on an arm, (2,) m."""
        u = ARM_DIRS[arm]
        return self.center(i, j) + u * self.entry_dist(i, j, arm) + rot90(u) * (k + 0.5) * self.w

    def exit_point(self, i: int, j: int, arm: int, k: int) -> np.ndarray:
        """Start of outgoing lane k on an arm, (2,) m."""
        u = ARM_DIRS[arm]
        return self.center(i, j) + u * self.entry_dist(i, j, arm) - rot90(u) * (k + 0.5) * self.w

    def signalised(self, i: int, j: int) -> bool:
        return len(self.arms(i, j)) >= 3 and (i, j) not in self.roundabout

    def block_corner(self, i: int, j: int) -> tuple:
        """Curb corner of the blocks touching node (i, j): ``("round", radius)`` or ``("cut", centre, radius)``."""
        if (i, j) in self.corner_radius:
            return ("round", self.corner_radius[(i, j)] - float(self.lanes_v[i]) * self.w)
        if (i, j) in self.roundabout:
            ra = self.roundabout[(i, j)]
            return ("cut", ra.centre, ra.outer_radius)
        return ("round", CURB_RADIUS_M)


class Roundabout:
    """A single-lane counter-clockwise ring at a 4-way junction (local geometry, metres).

    The ring lane runs at ``ring_radius`` round the centre, one lane width from the central island
    and from the outer curb circle. Approach lane k (offset ``y_k`` from its road's centre line)
    joins the ring at ``phi_k = asin(y_k / ring_radius) + ROUNDABOUT_ATTACH_DEG`` past its arm, on a
    quadratic Bezier tangent to both; exits mirror entries about the arm axis.
    """

    def __init__(self, centre: np.ndarray, w: float, n_v: int, n_h: int):
        self.centre = centre
        y_max = (max(n_v, n_h) - 0.5) * w
        self.ring_radius = max(2.2 * w, 2.0 * y_max)
        self.island_radius = self.ring_radius - w
        self.outer_radius = self.ring_radius + w
        r = self.ring_radius
        # (arm, k) -> (phi rad, Bezier control (2,) in the arm's frame: along it, left of it).
        self.attach: dict[tuple[int, int], tuple[float, np.ndarray]] = {}
        self.entry_dist: dict[int, float] = {}
        for arm in range(4):
            n = n_h if arm in (ARM_E, ARM_W) else n_v
            h = n * w  # half width of the arm's road; its curbs meet the outer circle here
            far = math.sqrt(self.outer_radius**2 - h**2)
            for k in range(n):
                y_k = (k + 0.5) * w
                phi = math.asin(y_k / r) + math.radians(ROUNDABOUT_ATTACH_DEG)
                # The approach line y = y_k meets the ring's tangent at phi here: the Bezier control.
                t = (y_k - r * math.sin(phi)) / math.cos(phi)
                x1 = r * math.cos(phi) - t * math.sin(phi)
                self.attach[(arm, k)] = (phi, np.array([x1, y_k]))
                far = max(far, x1)
            # Lanes stay straight past the curb kink, so they keep half a lane from it.
            self.entry_dist[arm] = far + 2.0

    def ring_point(self, angle: float) -> np.ndarray:
        return self.centre + self.ring_radius * np.array([math.cos(angle), math.sin(angle)])


def turn_kind(arm_in: int, arm_out: int) -> str:
    """Movement from an approach on ``arm_in`` to a departure on ``arm_out``."""
    delta = (arm_out - arm_in) % 4
    return {2: "straight", 1: "right", 3: "left", 0: "u"}[delta]


def connections(
    n_in: int, n_out: int, turn: str, only_exit: bool, has_straight: bool = True
) -> list[tuple[int, int]]:
    """Lane pairs (incoming k, outgoing k') for one movement, never crossing each other.

    Straight keeps the lane index. Right turns leave from the outermost lane, left turns from the
    innermost, and both may end in any lane of the new road: the lane graph has no lane-change
    links, so this is what lets a route reach every lane (the graph stays strongly connected).
    When a turn is the only way out (a corner L-bend of the ring road) every lane may end in
    every lane: otherwise the outer lane of the ring, which meets no right turn at the border
    T-junctions, could never leave the ring. Where no straight exit exists (the stem of a T), every
    lane but the outermost turns left, so middle lanes of 3-lane roads are no dead ends.
    """
    if only_exit and turn != "straight":
        return [(k_in, k_out) for k_in in range(n_in) for k_out in range(n_out)]
    if turn == "straight":
        pairs = {(k, min(k, n_out - 1)) for k in range(n_in)}
        pairs |= {(min(k, n_in - 1), k) for k in range(n_out)}
        return sorted(pairs)
    if turn == "right":
        return [(n_in - 1, k) for k in range(n_out)]
    left_lanes = range(n_in - 1) if not has_straight and n_in > 1 else [0]
    return [(k_in, k) for k_in in left_lanes for k in range(n_out)]
