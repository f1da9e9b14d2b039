"""The embedded procedural town: a seeded grid of blocks with signalised junctions.

``generate(seed=0, blocks_x=4, blocks_y=4, ...)`` builds a `RoadMap` with no download, so every
layer above runs out of the box (``procedural:seed=0,blocks_x=3`` through `pictura.maps.load`).

Layout (x east, y north, z = 0 everywhere, right-hand traffic):

- Road lines sit on a grid, ``block_size`` apart: vertical roads at ``x = i * block_size``
  (``i = 0..blocks_x``), horizontal roads at ``y = j * block_size``. The outer lines form a ring
  road, so the town has 4-way junctions inside, T-junctions on the border and L-bends in the
  corners, and every lane can be driven forever.
- Each road line is two-way with 1, 2 or 3 lanes per direction (seeded per line); the ring road
  has one lane count all round. Some town corners are large-radius arcs instead of L-bends.
- Every grid node is a junction. Its approaches end ``CURB_RADIUS_M`` before the crossing road's
  edge; lanes through the junction are quadratic Bezier turns (tangent to both roads) or straight
  lines. 4-way and T junctions are signalised: one stop line per approach lane, one light head per
  approach hung on the far side of the junction, facing the approaching drivers.
- Some 4-way junctions are single-lane roundabouts (counter-clockwise ring round a central island,
  no lights, a yield sign per entry).
- Each block is bounded by a closed curb loop (rounded corners, optional parking bays or
  full-length parking lanes cut into the verge); behind the curb come a verge, a sidewalk and a
  wall line with random gaps.

Modules: `town` (every seeded layout draw: road lines, lane counts, merges, curved corners,
roundabouts), `builder` (lanes, lane graph, curbs, signals, furniture, packing into a `RoadMap`),
`geometry` (chunking, curves, arcs, shaped curb loops).
"""

from __future__ import annotations

import math

import numpy as np

from pictura.maps.procedural.builder import Builder
from pictura.maps.procedural.geometry import chunk_polyline
from pictura.maps.procedural.town import CURB_RADIUS_M, WALL_SETBACK_M, Town
from pictura.maps.roadmap import RoadMap

__all__ = ["chunk_polyline", "generate"]

_INT_KEYS = {
    "seed": (0, 2**32 - 1),
    "blocks_x": (1, 64),
    "blocks_y": (1, 64),
    "max_lanes_per_direction": (1, 3),
    "roundabouts": (0, 64),
}
_FLOAT_KEYS = {
    "block_size": (40.0, 1000.0),
    "lane_width": (2.5, 5.0),
    "four_lane_prob": (0.0, 1.0),
    "parking_prob": (0.0, 1.0),
    "wall_prob": (0.0, 1.0),
    "speed_limit": (1.0, 40.0),
    "irregularity": (0.0, 0.4),
    "merge_prob": (0.0, 1.0),
    "six_lane_prob": (0.0, 1.0),
    "parking_lane_prob": (0.0, 1.0),
    "curve_prob": (0.0, 1.0),
    "roundabout_prob": (0.0, 1.0),
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
    max_lanes_per_direction: int = 3,
    six_lane_prob: float = 0.3,
    parking_lane_prob: float = 0.2,
    curve_prob: float = 0.5,
    roundabouts: int = 1,
    roundabout_prob: float = 0.6,
    **unknown: object,
) -> RoadMap:
    """Build a seeded grid town.

    Args:
        seed: RNG seed; the same arguments always give the same map.
        blocks_x, blocks_y: number of blocks along x and y (the grid has ``blocks + 1`` road lines).
        block_size: road-line spacing (m), centre to centre.
        lane_width: width of every lane (m).
        four_lane_prob: chance a road line has more than 1 lane per direction (2, or 3 with
            ``six_lane_prob``).
        parking_prob: chance a block side gets a parking bay cut into its verge.
        wall_prob: chance each wall piece along a block front is present (the rest are gaps).
        speed_limit: speed limit of 2-lane roads (m/s); 4-lane roads get 1.2x, 6-lane 1.4x, turns
            and roundabouts 8.3 m/s.
        irregularity: each road-line gap is ``block_size * (1 + irregularity * U(-1, 1))``.
        merge_prob: chance a block merges with its east or north neighbour (the road between them
            goes; its end junctions become T-junctions or plain road).
        max_lanes_per_direction: most lanes per direction on any road (1, 2 or 3).
        six_lane_prob: chance a multi-lane road line (see ``four_lane_prob``) has 3 lanes per
            direction instead of 2, when ``max_lanes_per_direction`` is 3.
        parking_lane_prob: chance a block side without a bay gets a parking lane along its whole
            length (a 2.5 m curbside strip of spots, outside the drivable lanes).
        curve_prob: chance each town corner is a large-radius arc instead of a tight L-bend.
        roundabouts: most roundabouts in the town (placed at 4-way junctions whose roads have at
            most 2 lanes per direction, never next to each other).
        roundabout_prob: chance each of those ``roundabouts`` is placed.

    Raises:
        ValueError: naming the key, for an unknown key or a value out of range.
    """
    if unknown:
        known = ", ".join([*_INT_KEYS, *_FLOAT_KEYS])
        raise ValueError(f"procedural map: unknown key(s) {', '.join(map(repr, unknown))}; known: {known}")
    _check_args(locals())
    rng = np.random.default_rng(seed)
    town = Town(
        blocks_x,
        blocks_y,
        float(block_size),
        float(lane_width),
        rng,
        float(four_lane_prob),
        float(irregularity),
        float(merge_prob),
        int(max_lanes_per_direction),
        float(six_lane_prob),
        float(curve_prob),
        int(roundabouts),
        float(roundabout_prob),
    )
    builder = Builder(town, float(speed_limit))
    builder.add_roads_and_junctions()
    builder.add_blocks(float(parking_prob), float(parking_lane_prob), float(wall_prob))
    builder.add_roundabout_islands()
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
    lanes = args["max_lanes_per_direction"] if args["four_lane_prob"] > 0.0 else 1
    need = 2.0 * lanes * args["lane_width"] + 2.0 * CURB_RADIUS_M + 2.0 * WALL_SETBACK_M
    narrowest = args["block_size"] * (1.0 - args["irregularity"])
    if narrowest < need:
        raise ValueError(
            f"procedural map: block_size={args['block_size']} with irregularity={args['irregularity']} gives "
            f"{narrowest:.1f} m blocks, too small for lane_width={args['lane_width']} with "
            f"max_lanes_per_direction={args['max_lanes_per_direction']} (need >= {need:.1f} m)"
        )
