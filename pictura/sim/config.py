"""`SimConfig`: every rule constant of the simulator that a config file may change.

Defaults are the paper's training values (Table 5, REFERENCE.md "World rules"). Per-agent
conditioning is one table, `CONDITIONING_TABLE` (Table 2), read by the reset sampler, the
reward kernels and the observation normaliser.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pictura.sim.features import CONDITIONING_NAMES

DIST_UNIFORM, DIST_FIXED, DIST_UMIX = 0, 1, 2
"""Conditioning distribution kinds: U(low, high); fixed at low (= high); U_mix(low, high) draws
U(low, 1) or U(1, high) with probability 1/2 each."""
_DIST_KINDS = {"uniform": DIST_UNIFORM, "fixed": DIST_FIXED, "umix": DIST_UMIX}


@dataclass(frozen=True)
class Coefficient:
    """One row of Table 2: ``name``, sampling range ``[low, high]`` and distribution ``kind``."""

    name: str
    low: float
    high: float
    kind: str  # "uniform" | "fixed" | "umix"

    @property
    def kind_id(self) -> int:
        return _DIST_KINDS[self.kind]


CONDITIONING_TABLE: tuple[Coefficient, ...] = (
    Coefficient("delta_goal", 2.0, 12.0, "uniform"),  # goal radius, m
    Coefficient("v_goal", 0.0, 20.0, "uniform"),  # m/s, the third waypoint pays only below it
    Coefficient("alpha_collision", 0.0, 3.0, "uniform"),
    Coefficient("alpha_offroad", 0.0, 3.0, "uniform"),
    Coefficient("alpha_stop_line", 0.0, 1.0, "uniform"),
    Coefficient("alpha_comfort", 0.0, 0.1, "uniform"),
    Coefficient("alpha_lane_align", 2.5e-4, 2.5e-2, "uniform"),
    Coefficient("alpha_vel_align", 0.0, 1.0, "uniform"),
    Coefficient("alpha_lane_center", 2.5e-4, 7.5e-3, "uniform"),
    Coefficient("alpha_center_bias", -0.5, 0.5, "uniform"),  # m
    Coefficient("alpha_velocity", 2.5e-3, 2.5e-3, "fixed"),
    Coefficient("alpha_reverse", 2.5e-4, 7.5e-3, "uniform"),
    Coefficient("alpha_overspeed", 0.0, 1.0, "uniform"),
    Coefficient("alpha_timestep", 2.5e-5, 2.5e-5, "fixed"),
    Coefficient("c_throttle", 0.8, 1.25, "umix"),
    Coefficient("c_steer", 0.8, 1.25, "umix"),
    Coefficient("c_acc", 2.0 / 3.0, 1.5, "umix"),
)
"""Table 2 of the paper, in `pictura.sim.features.CONDITIONING_NAMES` order."""


_ROW_FIELDS = ("low", "high", "kind")


def conditioning_table(overrides: Mapping[str, Mapping[str, Any]] | None = None) -> tuple[Coefficient, ...]:
    """Table 2 with the rows named in ``overrides`` changed field by field.

    ``overrides`` maps a coefficient name to the fields it changes, e.g.
    ``{"alpha_collision": {"low": 0.5, "high": 2.0}}``; unnamed rows and fields keep Table 2.
    A name or field that does not exist is an error naming it (and the nearest valid name).
    """
    rows = {c.name: c for c in CONDITIONING_TABLE}
    for name, fields in (overrides or {}).items():
        if name not in rows:
            near = difflib.get_close_matches(str(name), CONDITIONING_NAMES, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(
                f"SimConfig.conditioning: unknown coefficient {name!r}{hint}; names: {', '.join(CONDITIONING_NAMES)}"
            )
        if not isinstance(fields, Mapping):
            raise ValueError(
                f"SimConfig.conditioning[{name!r}] must map fields {_ROW_FIELDS} to values, got {fields!r}"
            )
        unknown = sorted(set(fields) - set(_ROW_FIELDS))
        if unknown:
            raise ValueError(f"SimConfig.conditioning[{name!r}]: unknown field(s) {unknown}; fields: {_ROW_FIELDS}")
        try:
            typed = {k: (str(v) if k == "kind" else float(v)) for k, v in fields.items()}
        except (TypeError, ValueError) as err:
            raise ValueError(f"SimConfig.conditioning[{name!r}]: low and high must be numbers ({err})") from None
        rows[name] = replace(rows[name], **typed)
    return tuple(rows[name] for name in CONDITIONING_NAMES)


def _check_range(name: str, value: tuple[float, float], low: float | None = None) -> None:
    if len(value) != 2:
        raise ValueError(f"SimConfig.{name} must be a (low, high) pair, got {value!r}")
    lo, hi = value
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"SimConfig.{name} must be finite, got {value!r}")
    if lo > hi:
        raise ValueError(f"SimConfig.{name} is inverted: low {lo} > high {hi}")
    if low is not None and lo < low:
        raise ValueError(f"SimConfig.{name} must be >= {low}, got {value!r}")


@dataclass
class SimConfig:
    """Simulator rules. Times in s, lengths in m, speeds in m/s, angles in degrees."""

    dt: float = 0.1
    episode_length: int = 1280  # steps per world episode
    early_reset_halted_fraction: float = 0.4  # reset a world once this share of its agents halted
    agents_per_world: tuple[int, int] = (1, 120)  # inclusive U{lo, hi} per world reset
    v_max: float = 40.0  # forward speed cap (eval protocol: 20)
    v_min: float = -2.0  # reverse speed cap
    goal_waypoints: int = 3
    goal_spacing_m: tuple[float, float] = (20.0, 200.0)
    max_goal_turn_deg: float = 60.0
    spawn_attempts: int = 30
    spawn_forecast_s: float = 1.0  # constant-velocity look-ahead of the spawn overlap test
    vehicle_length: tuple[float, float] = (0.8, 7.0)  # training sizes; width is drawn <= length
    vehicle_width: tuple[float, float] = (0.8, 2.7)
    eval_vehicle_length: tuple[float, float] = (2.0, 5.5)
    eval_vehicle_width: tuple[float, float] = (1.5, 2.5)
    vehicle_height: float = 1.5
    eval_goal_radius: float = 2.0
    # Traffic lights (training): phase durations in s.
    light_green_s: tuple[float, float] = (1.0, 10.0)
    light_yellow_s: tuple[float, float] = (1.5, 2.25)
    light_red_s: tuple[float, float] = (0.3, 10.0)
    light_all_off_p: float = 0.2
    light_off_p: float = 0.2
    light_always_green_p: float = 0.05
    eval_light_s: tuple[float, float, float] = (10.0, 3.0, 2.0)  # green, yellow, red
    eval_v_max: float = 20.0  # forward speed cap in eval (replaces v_max when eval)
    # Agent types: the share of each world's agents drawn as pedestrians / cyclists
    # (the rest are vehicles), their sizes and limits. Pedestrians and cyclists keep their sizes
    # in eval.
    pedestrian_fraction: float = 0.1
    cyclist_fraction: float = 0.1
    pedestrian_length: tuple[float, float] = (0.4, 0.8)
    pedestrian_width: tuple[float, float] = (0.4, 0.8)
    pedestrian_height: float = 1.8
    pedestrian_v_max: float = 2.5  # m/s
    pedestrian_accel_max: float = 1.5  # m/s^2, forward (x c_acc); braking keeps -5
    pedestrian_goal_radius: float = 0.5  # m, caps delta_goal for pedestrians
    pedestrian_goal_spacing_m: tuple[float, float] = (5.0, 40.0)  # along sidewalks
    cyclist_length: tuple[float, float] = (1.6, 2.0)
    cyclist_width: tuple[float, float] = (0.5, 0.8)
    cyclist_height: float = 1.7
    cyclist_v_max: float = 8.0  # m/s
    cyclist_accel_max: float = 2.0  # m/s^2, forward (x c_acc)
    # Parked cars: static obstacles in their own snapshot rows (not agent slots).
    parked_per_world: int = 32
    parked_length: tuple[float, float] = (3.5, 5.5)
    parked_width: tuple[float, float] = (1.6, 2.2)
    parked_height: float = 1.5
    spawn_speed_fraction: float = 0.5  # initial speed ~ U(0, this x lane speed limit)
    eval: bool = False  # eval sizes, eval light timings, goal radius eval_goal_radius, eval_v_max
    # App. C.1's second off-road test, the centre off the drivable map (lanes widened by half a
    # lane width each side; `pictura.sim.events.centre_on_drivable_map`); False only for tests
    # of other rules on open ground
    offroad_centre: bool = True
    collision_speed_weight: float = 0.1  # the collision penalty is -(alpha_collision + this x |v|)
    # Table 2 (`CONDITIONING_TABLE`), or changes to some of its rows by name:
    #   conditioning: {alpha_collision: {low: 0.5, high: 2.0}}
    # or every row in order (a list of {name, low, high, kind}). A None default, not the table's
    # instances, is what lets config files override other fields (jsonargparse cannot serialise them).
    conditioning: tuple[Coefficient, ...] | dict[str, dict[str, float | str]] | None = None

    def __post_init__(self) -> None:
        if self.conditioning is None or isinstance(self.conditioning, Mapping):
            rows = conditioning_table(self.conditioning)
        else:  # a whole table: lists and dicts from a config file -> the frozen table rows
            rows = tuple(c if isinstance(c, Coefficient) else Coefficient(**c) for c in self.conditioning)
        object.__setattr__(self, "conditioning", rows)

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first impossible field."""
        if not (self.dt > 0 and math.isfinite(self.dt)):
            raise ValueError(f"SimConfig.dt must be > 0, got {self.dt}")
        if self.episode_length < 1:
            raise ValueError(f"SimConfig.episode_length must be >= 1, got {self.episode_length}")
        if not 0.0 < self.early_reset_halted_fraction <= 1.0:
            raise ValueError(
                f"SimConfig.early_reset_halted_fraction must be in (0, 1], got {self.early_reset_halted_fraction}"
            )
        lo, hi = self.agents_per_world
        if lo < 1:
            raise ValueError(f"SimConfig.agents_per_world low must be >= 1 (zero agents), got {lo}")
        if lo > hi:
            raise ValueError(f"SimConfig.agents_per_world is inverted: {self.agents_per_world}")
        if self.v_max <= 0:
            raise ValueError(f"SimConfig.v_max must be > 0, got {self.v_max}")
        if self.v_min > 0:
            raise ValueError(f"SimConfig.v_min must be <= 0, got {self.v_min}")
        if self.goal_waypoints != 3:
            raise ValueError(
                f"SimConfig.goal_waypoints must be 3 (the observation width), got {self.goal_waypoints}"
            )
        _check_range("goal_spacing_m", self.goal_spacing_m, low=0.0)
        if self.goal_spacing_m[1] <= 0:
            raise ValueError(
                f"SimConfig.goal_spacing_m must allow a positive spacing, got {self.goal_spacing_m}"
            )
        if not 0.0 < self.max_goal_turn_deg <= 180.0:
            raise ValueError(f"SimConfig.max_goal_turn_deg must be in (0, 180], got {self.max_goal_turn_deg}")
        if self.spawn_attempts < 1:
            raise ValueError(f"SimConfig.spawn_attempts must be >= 1, got {self.spawn_attempts}")
        if self.spawn_forecast_s < 0:
            raise ValueError(f"SimConfig.spawn_forecast_s must be >= 0, got {self.spawn_forecast_s}")
        for name in ("vehicle_length", "vehicle_width", "eval_vehicle_length", "eval_vehicle_width"):
            _check_range(name, getattr(self, name), low=0.0)
            if getattr(self, name)[0] <= 0:
                raise ValueError(f"SimConfig.{name} must be > 0, got {getattr(self, name)}")
        if self.vehicle_width[0] > self.vehicle_length[1]:
            raise ValueError(
                "SimConfig.vehicle_width: smallest width exceeds the largest length (W <= L impossible)"
            )
        if self.vehicle_height <= 0:
            raise ValueError(f"SimConfig.vehicle_height must be > 0, got {self.vehicle_height}")
        if self.eval_goal_radius <= 0:
            raise ValueError(f"SimConfig.eval_goal_radius must be > 0, got {self.eval_goal_radius}")
        for name in ("light_green_s", "light_yellow_s", "light_red_s"):
            _check_range(name, getattr(self, name), low=0.0)
        if self.light_green_s[0] + self.light_yellow_s[0] + self.light_red_s[0] <= 0:
            raise ValueError("SimConfig.light_green_s: a light cycle must have positive length")
        if len(self.eval_light_s) != 3 or min(self.eval_light_s) < 0 or sum(self.eval_light_s) <= 0:
            raise ValueError(
                f"SimConfig.eval_light_s must be 3 non-negative durations, got {self.eval_light_s}"
            )
        for name in ("light_all_off_p", "light_off_p", "light_always_green_p"):
            p = getattr(self, name)
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"SimConfig.{name} must be a probability in [0, 1], got {p}")
        if not 0 < self.eval_v_max <= self.v_max:
            raise ValueError(
                f"SimConfig.eval_v_max must be in (0, v_max={self.v_max}], got {self.eval_v_max}"
            )
        for name in ("pedestrian_fraction", "cyclist_fraction"):
            p = getattr(self, name)
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"SimConfig.{name} must be a fraction in [0, 1], got {p}")
        if self.pedestrian_fraction + self.cyclist_fraction > 1.0:
            raise ValueError(
                "SimConfig.pedestrian_fraction + cyclist_fraction must be <= 1, got "
                f"{self.pedestrian_fraction} + {self.cyclist_fraction}"
            )
        for name in (
            "pedestrian_length",
            "pedestrian_width",
            "cyclist_length",
            "cyclist_width",
            "parked_length",
            "parked_width",
            "pedestrian_goal_spacing_m",
        ):
            _check_range(name, getattr(self, name), low=0.0)
            if getattr(self, name)[0] <= 0:
                raise ValueError(f"SimConfig.{name} must be > 0, got {getattr(self, name)}")
        for name in (
            "pedestrian_height",
            "cyclist_height",
            "parked_height",
            "pedestrian_v_max",
            "cyclist_v_max",
            "pedestrian_accel_max",
            "cyclist_accel_max",
            "pedestrian_goal_radius",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"SimConfig.{name} must be > 0, got {getattr(self, name)}")
        if self.parked_per_world < 0:
            raise ValueError(f"SimConfig.parked_per_world must be >= 0, got {self.parked_per_world}")
        if not (self.collision_speed_weight >= 0 and math.isfinite(self.collision_speed_weight)):
            raise ValueError(
                f"SimConfig.collision_speed_weight must be finite and >= 0, got {self.collision_speed_weight}"
            )
        if not 0.0 <= self.spawn_speed_fraction <= 1.0:
            raise ValueError(
                f"SimConfig.spawn_speed_fraction must be in [0, 1], got {self.spawn_speed_fraction}"
            )
        names = tuple(c.name for c in self.conditioning)
        if names != CONDITIONING_NAMES:
            raise ValueError(f"SimConfig.conditioning must list {CONDITIONING_NAMES} in order, got {names}")
        for c in self.conditioning:
            if c.kind not in _DIST_KINDS:
                raise ValueError(
                    f"SimConfig.conditioning[{c.name!r}].kind must be one of {tuple(_DIST_KINDS)}"
                )
            _check_range(f"conditioning[{c.name!r}]", (c.low, c.high))
            if c.kind == "fixed" and c.low != c.high:
                raise ValueError(f"SimConfig.conditioning[{c.name!r}] is fixed but low != high")
            if c.kind == "umix" and not (0.0 < c.low <= 1.0 <= c.high):
                raise ValueError(f"SimConfig.conditioning[{c.name!r}] U_mix needs 0 < low <= 1 <= high")
        # every coefficient but the centre bias (a signed offset, m) is a non-negative weight,
        # radius, speed or scale: a negative one would flip a penalty into a reward
        for name in CONDITIONING_NAMES:
            if name == "alpha_center_bias":
                continue
            c = self.conditioning[CONDITIONING_NAMES.index(name)]
            if c.low < 0:
                raise ValueError(f"SimConfig.conditioning[{name!r}] must be non-negative, got low {c.low}")
