"""`RoadMap` and `Scenario`: the static road scene every layer above reads.

Everything is NumPy, struct-of-arrays, metres and radians, in the map's own frame
(x east, y north, z up). Polylines are stored CSR-style: ``*_points`` holds the points of
all polylines back to back and ``*_offsets`` (length count + 1) says where each begins,
so polyline ``i`` is ``points[offsets[i]:offsets[i + 1]]``.

Lane centrelines point in the direction of travel and are chunked into pieces of at most
``MAX_LANE_CHUNK_M``; the lane graph links chunks (a chunk's successors are the chunks a
vehicle may drive onto from its end, across lane sections and junctions).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

MAX_LANE_CHUNK_M = 10.0
"""Longest lane centreline chunk (m): the paper's maps are pre-chunked to <= 10 m."""

# Traffic-light states, shared by sim (writes them), render (colours) and observations.
LIGHT_RED, LIGHT_YELLOW, LIGHT_GREEN, LIGHT_OFF = 0, 1, 2, 3

# Painted ground markings (lane lines). Road edges are kept apart: they drive off-road.
MARKING_LANE_DIVIDER, MARKING_CENTRE_LINE = 0, 1

# Sign kinds keep the OpenDRIVE signal type numbers.
SIGN_STOP, SIGN_YIELD = 206, 205

# Agent types (shared by sim, render, observations).
AGENT_VEHICLE, AGENT_PEDESTRIAN, AGENT_CYCLIST = 0, 1, 2


def _f32(shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(shape, np.float32)


def _i32(shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(shape, np.int32)


def _offsets() -> np.ndarray:
    return np.zeros(1, np.int32)


@dataclass
class RoadMap:
    """A road network. Shapes use L lanes, S stop lines, T lights, J junctions, etc."""

    name: str
    # Lanes: drivable centreline chunks (<= MAX_LANE_CHUNK_M each), direction of travel.
    lane_points: np.ndarray = field(default_factory=lambda: _f32((0, 3)))  # (P, 3) m
    lane_offsets: np.ndarray = field(default_factory=_offsets)  # (L + 1,)
    lane_width: np.ndarray = field(default_factory=lambda: _f32((0,)))  # (L,) m
    lane_speed_limit: np.ndarray = field(default_factory=lambda: _f32((0,)))  # (L,) m/s, 0 = none given
    lane_junction: np.ndarray = field(default_factory=lambda: _i32((0,)))  # (L,) junction id or -1
    lane_successor_offsets: np.ndarray = field(default_factory=_offsets)  # (L + 1,) CSR into lane_successors
    lane_successors: np.ndarray = field(default_factory=lambda: _i32((0,)))  # (E,) lane ids
    # Road edges: outer boundaries of the drivable area (crossing one is off-road).
    road_edge_points: np.ndarray = field(default_factory=lambda: _f32((0, 3)))  # (Q, 3) m
    road_edge_offsets: np.ndarray = field(default_factory=_offsets)  # (R + 1,)
    # Painted lane lines between lanes (rendered only; they never drive events).
    marking_points: np.ndarray = field(default_factory=lambda: _f32((0, 3)))  # (M_pts, 3) m
    marking_offsets: np.ndarray = field(default_factory=_offsets)  # (M + 1,)
    marking_kind: np.ndarray = field(default_factory=lambda: _i32((0,)))  # (M,) MARKING_*
    # Stop lines: one per approach lane at a junction entry.
    stop_line_points: np.ndarray = field(default_factory=lambda: _f32((0, 2, 3)))  # (S, 2, 3) endpoints, m
    stop_line_lane: np.ndarray = field(default_factory=lambda: _i32((0,)))  # (S,) lane chunk ending at the line
    stop_line_light: np.ndarray = field(default_factory=lambda: _i32((0,)))  # (S,) governing light or -1
    # Traffic-light heads (may hang on the far side of the junction from their stop line).
    light_position: np.ndarray = field(default_factory=lambda: _f32((0, 3)))  # (T, 3) head centre, m
    light_heading: np.ndarray = field(default_factory=lambda: _f32((0,)))  # (T,) rad, direction the lamp faces
    light_junction: np.ndarray = field(default_factory=lambda: _i32((0,)))  # (T,) junction id
    light_group: np.ndarray = field(default_factory=lambda: _i32((0,)))  # (T,) phase group within its junction
    # Junctions.
    junction_center: np.ndarray = field(default_factory=lambda: _f32((0, 3)))  # (J, 3) m
    # Walls: vertical quads standing on a base segment; opaque occluders.
    wall_points: np.ndarray = field(default_factory=lambda: _f32((0, 2, 3)))  # (Wl, 2, 3) base endpoints, m
    wall_height: np.ndarray = field(default_factory=lambda: _f32((0,)))  # (Wl,) m
    # Pedestrian space: sidewalk centrelines and crosswalk quads.
    sidewalk_points: np.ndarray = field(default_factory=lambda: _f32((0, 3)))  # (Sw_pts, 3) m
    sidewalk_offsets: np.ndarray = field(default_factory=_offsets)  # (Sw + 1,)
    crosswalk_points: np.ndarray = field(default_factory=lambda: _f32((0, 4, 3)))  # (C, 4, 3) corners, m
    # Parking spots along curbs / parking lanes: x, y, z, heading.
    parking_spots: np.ndarray = field(default_factory=lambda: _f32((0, 4)))  # (K, 4) m, m, m, rad
    # Stop / yield signs (kept; no rule is attached to them).
    sign_position: np.ndarray = field(default_factory=lambda: _f32((0, 3)))  # (G, 3) m
    sign_kind: np.ndarray = field(default_factory=lambda: _i32((0,)))  # (G,) SIGN_*

    # ---- derived views -------------------------------------------------------------------
    @property
    def lane_count(self) -> int:
        return len(self.lane_offsets) - 1

    @property
    def road_edge_count(self) -> int:
        return len(self.road_edge_offsets) - 1

    @property
    def marking_count(self) -> int:
        return len(self.marking_offsets) - 1

    def lane(self, i: int) -> np.ndarray:
        """(n, 3) points of lane chunk ``i``."""
        return self.lane_points[self.lane_offsets[i] : self.lane_offsets[i + 1]]

    def successors(self, i: int) -> np.ndarray:
        return self.lane_successors[self.lane_successor_offsets[i] : self.lane_successor_offsets[i + 1]]

    def lane_segments(self) -> tuple[np.ndarray, np.ndarray]:
        """All lane centreline segments: ``(N, 2, 3)`` endpoints and ``(N,)`` owning lane id."""
        return polyline_segments(self.lane_points, self.lane_offsets)

    def road_edge_segments(self) -> np.ndarray:
        """``(N, 2, 3)`` road-edge segment endpoints."""
        return polyline_segments(self.road_edge_points, self.road_edge_offsets)[0]

    def marking_segments(self) -> tuple[np.ndarray, np.ndarray]:
        """``(N, 2, 3)`` marking segments and ``(N,)`` their MARKING_* kind."""
        seg, owner = polyline_segments(self.marking_points, self.marking_offsets)
        return seg, self.marking_kind[owner]

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned (min, max) corners of all geometry, (3,) each, m."""
        pts = [p.reshape(-1, 3) for p in (self.lane_points, self.road_edge_points, self.wall_points) if p.size]
        allp = np.concatenate(pts) if pts else np.zeros((1, 3), np.float32)
        return allp.min(0), allp.max(0)

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first inconsistent field (shapes, offsets, ids)."""
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray) and v.dtype.kind == "f" and not np.all(np.isfinite(v)):
                raise ValueError(f"RoadMap {self.name!r}: field {f.name!r} holds NaN or inf")
        for pts, off, label in (
            (self.lane_points, self.lane_offsets, "lane"),
            (self.road_edge_points, self.road_edge_offsets, "road_edge"),
            (self.marking_points, self.marking_offsets, "marking"),
            (self.sidewalk_points, self.sidewalk_offsets, "sidewalk"),
        ):
            if off[0] != 0 or off[-1] != len(pts) or np.any(np.diff(off) < 0):
                raise ValueError(f"RoadMap {self.name!r}: {label}_offsets do not partition {label}_points")
        L = self.lane_count
        for name in ("lane_width", "lane_speed_limit", "lane_junction"):
            if len(getattr(self, name)) != L:
                raise ValueError(f"RoadMap {self.name!r}: {name} has {len(getattr(self, name))} rows, lanes: {L}")
        if np.any(self.lane_width <= 0):
            raise ValueError(f"RoadMap {self.name!r}: lane_width must be positive")
        if len(self.lane_successor_offsets) != L + 1 or self.lane_successor_offsets[-1] != len(self.lane_successors):
            raise ValueError(f"RoadMap {self.name!r}: lane_successor_offsets do not partition lane_successors")
        if len(self.lane_successors) and (self.lane_successors.min() < 0 or self.lane_successors.max() >= L):
            raise ValueError(f"RoadMap {self.name!r}: lane_successors holds an id outside 0..{L - 1}")
        if len(self.stop_line_lane) and (self.stop_line_lane.min() < 0 or self.stop_line_lane.max() >= L):
            raise ValueError(f"RoadMap {self.name!r}: stop_line_lane holds an id outside 0..{L - 1}")
        T = len(self.light_position)
        if len(self.stop_line_light) and self.stop_line_light.max() >= T:
            raise ValueError(f"RoadMap {self.name!r}: stop_line_light holds an id >= {T} lights")


@dataclass
class Scenario:
    """A `RoadMap` plus logged road users (e.g. a Waymo Open Motion scene) for log replay.

    N tracks over T steps at ``dt`` seconds. Invalid samples have ``track_valid == False``
    and their state is undefined (readers write zeros).
    """

    road_map: RoadMap
    scenario_id: str
    dt: float  # s
    track_id: np.ndarray  # (N,) int64
    track_type: np.ndarray  # (N,) int32 AGENT_* (other kinds mapped to -1)
    track_position: np.ndarray  # (N, T, 3) float32 m
    track_heading: np.ndarray  # (N, T) float32 rad
    track_velocity: np.ndarray  # (N, T, 2) float32 m/s
    track_size: np.ndarray  # (N, 3) float32 length, width, height, m
    track_valid: np.ndarray  # (N, T) bool
    sdc_index: int = -1
    tracks_to_predict: np.ndarray = field(default_factory=lambda: _i32((0,)))  # (K,) track rows
    # Logged light states: (T, Ls) LIGHT_* per step for each logged signal lane, and its lane id.
    light_lane: np.ndarray = field(default_factory=lambda: _i32((0,)))  # (Ls,)
    light_state_log: np.ndarray = field(default_factory=lambda: _i32((0, 0)))  # (T, Ls)

    @property
    def goal_position(self) -> np.ndarray:
        """(N, 3) last valid logged position of each track (its goal), NaN if never valid."""
        valid = np.asarray(self.track_valid, bool)
        out = np.full((len(self.track_id), 3), np.nan, np.float32)
        if valid.size == 0:
            return out
        last = valid.shape[1] - 1 - np.argmax(valid[:, ::-1], axis=1)  # the last True of each row
        seen = valid.any(axis=1)
        out[seen] = self.track_position[np.flatnonzero(seen), last[seen]]
        return out


def polyline_segments(points: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split CSR polylines into ``(N, 2, 3)`` segments and ``(N,)`` owner polyline ids."""
    counts = np.diff(offsets)
    seg_counts = np.maximum(counts - 1, 0)
    owner = np.repeat(np.arange(len(counts), dtype=np.int32), seg_counts)
    if len(owner) == 0:
        return np.zeros((0, 2, 3), np.float32), owner
    starts = np.repeat(offsets[:-1], seg_counts) + (
        np.arange(len(owner)) - np.repeat(np.cumsum(seg_counts) - seg_counts, seg_counts)
    )
    seg = np.stack([points[starts], points[starts + 1]], axis=1).astype(np.float32)
    return seg, owner


def pack_polylines(polylines: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """List of ``(n_i, 3)`` arrays -> (points, offsets) CSR pair."""
    offsets = np.zeros(len(polylines) + 1, np.int32)
    offsets[1:] = np.cumsum([len(p) for p in polylines])
    points = np.concatenate(polylines).astype(np.float32) if polylines else np.zeros((0, 3), np.float32)
    return points, offsets
