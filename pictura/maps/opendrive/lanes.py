"""Lane-section cross-sections: the reference line sampled along s and every lane's borders.

A lane's border offsets ``t`` (m, left positive) come from ``laneOffset`` plus the cumulative
widths of the lanes between it and the centre lane (id 0). Points are ``reference + t * normal``
at the reference elevation (superelevation is not applied).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from pictura.maps.opendrive.geometry import cubic, reference_pose, sample_stations
from pictura.maps.opendrive.reader import LaneSection, Road

DRIVABLE_TYPES = frozenset(
    {"driving", "bidirectional", "entry", "exit", "onRamp", "offRamp", "connectingRamp"}
)
"""Lane types a vehicle may drive on (``entry``..``connectingRamp`` are OpenDRIVE 1.4 driving
subtypes; ``bidirectional`` is driven both ways). CARLA's waypoints cover ``driving`` only
(its ``LaneType.Driving`` bit); docs/opendrive.md compares the two."""

NEGATIVE_WIDTH_TOLERANCE_M = 0.05
"""A lane's width cubic may dip below zero where the lane tapers out (fit overshoot, e.g.
-0.006 m at the end of a road that CARLA loads): dips down to this are clamped to 0 with a
`NegativeWidthWarning` naming road, lane and s; deeper ones are an error (a mis-authored
width, not a taper). CARLA itself never checks widths."""


WIDTH_NOISE_M = 1e-3
"""Dips down to this are cubic-fit noise (Town07 has a sub-millimetre one): clamped without a warning."""


class NegativeWidthWarning(UserWarning):
    """A lane width cubic dipped below zero by at most `NEGATIVE_WIDTH_TOLERANCE_M`; clamped to 0."""


@dataclass
class CrossSections:
    """One lane section sampled at n stations.

    s (n,) m; x, y, z (n,) m; heading (n,) rad; ``border[k]`` (n,) outer-border offset t of lane k
    (``border[0]`` is the centre lane: the lane offset); ``width[k]`` (n,) m.
    """

    road: Road
    section: int
    s: np.ndarray
    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    heading: np.ndarray
    border: dict[int, np.ndarray]
    width: dict[int, np.ndarray]

    def points(self, t: np.ndarray) -> np.ndarray:
        """(n, 3) points at lateral offsets ``t`` (n,) m."""
        return np.stack(
            [self.x - t * np.sin(self.heading), self.y + t * np.cos(self.heading), self.z], axis=1
        )

    def inner(self, lane_id: int) -> np.ndarray:
        return self.border[lane_id - 1] if lane_id > 0 else self.border[lane_id + 1]

    def centre_t(self, lane_id: int) -> np.ndarray:
        return 0.5 * (self.inner(lane_id) + self.border[lane_id])


def section_range(road: Road, k: int) -> tuple[float, float]:
    s0 = road.sections[k].s
    s1 = road.sections[k + 1].s if k + 1 < len(road.sections) else road.length
    return s0, s1


def cross_sections(road: Road, k: int, path: object) -> CrossSections:
    """Sample lane section ``k`` of ``road``; ``ValueError`` for gaps in lane ids or negative widths."""
    sec: LaneSection = road.sections[k]
    s0, s1 = section_range(road, k)
    s = sample_stations(road.geometries, s0, s1)
    x, y, h = reference_pose(road.geometries, s)
    end = s1 if k + 1 < len(road.sections) else None
    z = cubic(s, road.elevation_s, road.elevation_coef, end)
    border = {0: cubic(s, road.offset_s, road.offset_coef, end)}
    width: dict[int, np.ndarray] = {}
    for sign in (1, -1):
        ids = sorted((i for i in sec.lanes if i * sign > 0), key=abs)
        for n, lane_id in enumerate(ids, start=1):
            lane = sec.lanes[lane_id]
            if lane_id != sign * n:
                raise ValueError(
                    f"{path}: road {road.id}, <laneSection> at line {sec.line}: lane ids skip {sign * n} (found {lane_id})"
                )
            w = cubic(s - s0, lane.width_s, lane.width_coef)
            if w.min() < -WIDTH_NOISE_M:
                at = float(s[np.argmin(w)])
                where = (f"{path}: road {road.id}, <lane> at line {lane.line}: lane {lane_id} width "
                         f"{w.min():.3f} m is negative at s={at:.2f}")
                if w.min() < -NEGATIVE_WIDTH_TOLERANCE_M:
                    raise ValueError(f"{where} (beyond the {NEGATIVE_WIDTH_TOLERANCE_M} m taper tolerance)")
                warnings.warn(f"{where}: clamped to 0 (a taper's fit overshoot)", NegativeWidthWarning, stacklevel=2)
            w = np.maximum(w, 0.0)
            width[lane_id] = w
            border[lane_id] = border[lane_id - sign] + sign * w
    return CrossSections(road, k, s, x, y, z, h, border, width)


def travels_forward(lane_id: int, lht: bool) -> bool:
    """True when traffic on ``lane_id`` runs along increasing s (right lanes in right-hand traffic)."""
    return (lane_id < 0) != lht
