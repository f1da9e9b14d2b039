"""Which logged road users of a WOMD scene take part in the zero-shot protocol (App. C.2): the
controlled vehicles, and the thinning of road users to a density. Used by the replay env and
the evaluation alike, so it lives with the scenario data.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE, Scenario

WOMD_STEPS = 600
"""Steps of one zero-shot scene (App. C.2)."""
WOMD_MIN_DISPLACEMENT_M = 2.0
"""A vehicle is controlled when its final logged position is more than this from its start."""


@dataclass
class WomdSelection:
    """Which logged tracks of one scene take part at one density.

    ``present`` (N,) bool: road users kept after thinning (controlled or replayed);
    ``controlled`` (N,) bool: vehicles the policy drives (a subset of ``present``);
    ``goal`` (N, 3) m: each track's final logged position (the controlled vehicles' goal).
    """

    scenario_id: str
    density: float
    present: np.ndarray
    controlled: np.ndarray
    goal: np.ndarray


def womd_controllable(scenario: Scenario, min_displacement_m: float = WOMD_MIN_DISPLACEMENT_M) -> np.ndarray:
    """(N,) bool: vehicles valid at t=0 whose final logged position is > ``min_displacement_m``
    from their start (REFERENCE.md "Evaluation definitions")."""
    valid0 = scenario.track_valid[:, 0] if scenario.track_valid.shape[1] else np.zeros(len(scenario.track_id), bool)
    goal = scenario.goal_position
    start = scenario.track_position[:, 0, :]
    with np.errstate(invalid="ignore"):
        moved = np.linalg.norm((goal - start)[:, :2], axis=1) > min_displacement_m
    return (scenario.track_type == AGENT_VEHICLE) & valid0 & np.nan_to_num(moved, nan=0).astype(bool)


def womd_selection(scenario: Scenario, density: float, seed: int = 0) -> WomdSelection:
    """Thin the scene's road users to ``density`` (fraction kept, seeded) and pick the
    controlled vehicles among the kept ones.

    Road users are the vehicle, pedestrian and cyclist tracks valid at some step;
    ``round(density * n)`` of them are kept, uniformly without replacement by a NumPy RNG
    seeded with (``seed``, the scenario id), so a scene thins the same way every run.
    """
    if not 0.0 < density <= 1.0:
        raise ValueError(f"density must be a fraction in (0, 1], got {density}")
    kinds = np.isin(scenario.track_type, (AGENT_VEHICLE, AGENT_PEDESTRIAN, AGENT_CYCLIST))
    users = np.flatnonzero(kinds & scenario.track_valid.any(axis=1))
    keep_n = int(round(density * len(users)))
    rng = np.random.default_rng([int(seed), zlib.crc32(scenario.scenario_id.encode())])
    kept = rng.choice(users, size=keep_n, replace=False) if keep_n < len(users) else users
    present = np.zeros(len(scenario.track_id), bool)
    present[kept] = True
    controlled = present & womd_controllable(scenario)
    return WomdSelection(scenario.scenario_id, float(density), present, controlled, scenario.goal_position)
