"""Every `SimConfig` field reaches the kernels' `ModelData` as the field says: a config whose
fields all differ (so a swapped pair shows), built in training and in evaluation mode, read back
field by field against a transcription of docs/REFERENCE.md's meaning of each field (per-type
tables in AGENT_VEHICLE, AGENT_PEDESTRIAN, AGENT_CYCLIST order; evaluation replaces the speed cap,
the vehicle sizes and the light timings, and turns outages off)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE
from pictura.sim import SimConfig

from .conftest import loop_map, make_world

FIELDS = dict(
    dt=0.1, episode_length=901, early_reset_halted_fraction=0.35, agents_per_world=(2, 7), v_max=33.0,
    v_min=-1.5, goal_spacing_m=(21.0, 190.0), max_goal_turn_deg=50.0, spawn_attempts=27, spawn_forecast_s=1.3,
    vehicle_length=(0.9, 6.8), vehicle_width=(0.85, 2.6), eval_vehicle_length=(2.0, 5.5),
    eval_vehicle_width=(1.5, 2.5), vehicle_height=1.45, eval_goal_radius=2.0, light_green_s=(1.1, 9.0),
    light_yellow_s=(1.6, 2.2), light_red_s=(0.4, 9.5), light_all_off_p=0.15, light_off_p=0.18,
    light_always_green_p=0.06, eval_light_s=(10.0, 3.0, 2.0), eval_v_max=20.0, pedestrian_fraction=0.12,
    cyclist_fraction=0.07, pedestrian_length=(0.45, 0.75), pedestrian_width=(0.42, 0.78), pedestrian_height=1.75,
    pedestrian_v_max=2.4, pedestrian_accel_max=1.4, pedestrian_goal_radius=0.45, pedestrian_goal_spacing_m=(6.0, 35.0),
    cyclist_length=(1.65, 1.95), cyclist_width=(0.55, 0.75), cyclist_height=1.65, cyclist_v_max=7.5,
    cyclist_accel_max=1.9, parked_per_world=3, parked_length=(3.6, 5.4), parked_width=(1.7, 2.1), parked_height=1.4,
    spawn_speed_fraction=0.4, collision_speed_weight=0.15,
)  # fmt: skip


def _data(**overrides):
    cfg = SimConfig(**{**FIELDS, **overrides})
    model, *_ = make_world([loop_map()], [0, 0], 8, cfg)
    return cfg, model


@pytest.mark.parametrize("eval_mode", [False, True])
def test_every_config_field_reaches_the_model(eval_mode):
    c, model = _data(eval=eval_mode)
    d = model.data
    v_max = c.eval_v_max if eval_mode else c.v_max
    length = c.eval_vehicle_length if eval_mode else c.vehicle_length
    width = c.eval_vehicle_width if eval_mode else c.vehicle_width
    green, yellow, red = (
        [(s, s) for s in c.eval_light_s] if eval_mode else [c.light_green_s, c.light_yellow_s, c.light_red_s]
    )
    off = (0.0, 0.0, 0.0) if eval_mode else (c.light_all_off_p, c.light_off_p, c.light_always_green_p)
    want = dict(
        dt=c.dt, episode_length=c.episode_length, early_reset_halted_fraction=c.early_reset_halted_fraction,
        agents_lo=c.agents_per_world[0], agents_hi=c.agents_per_world[1], v_max=v_max, v_min=c.v_min,
        goal_spacing_lo=c.goal_spacing_m[0], goal_spacing_hi=c.goal_spacing_m[1],
        max_goal_turn_cos=math.cos(math.radians(c.max_goal_turn_deg)), spawn_attempts=c.spawn_attempts,
        spawn_forecast_s=c.spawn_forecast_s, pedestrian_fraction=c.pedestrian_fraction,
        cyclist_fraction=c.cyclist_fraction, pedestrian_goal_radius=c.pedestrian_goal_radius,
        ped_goal_lo=c.pedestrian_goal_spacing_m[0], ped_goal_hi=c.pedestrian_goal_spacing_m[1],
        parked_length_lo=c.parked_length[0], parked_length_hi=c.parked_length[1],
        parked_width_lo=c.parked_width[0], parked_width_hi=c.parked_width[1], parked_height=c.parked_height,
        spawn_speed_fraction=c.spawn_speed_fraction, eval_mode=int(eval_mode), eval_goal_radius=c.eval_goal_radius,
        collision_speed_weight=c.collision_speed_weight, parked_per_world=c.parked_per_world,
        green_lo=green[0], green_hi=green[1], yellow_lo=yellow[0], yellow_hi=yellow[1], red_lo=red[0],
        red_hi=red[1], all_off_p=off[0], off_p=off[1], always_green_p=off[2],
    )  # fmt: skip
    for name, value in want.items():
        assert getattr(d, name) == pytest.approx(value, rel=1e-6), name

    rows = {AGENT_VEHICLE: 0, AGENT_PEDESTRIAN: 1, AGENT_CYCLIST: 2}
    per_type = {
        "type_v_max": {0: v_max, 1: min(v_max, c.pedestrian_v_max), 2: min(v_max, c.cyclist_v_max)},
        "type_accel_max": {0: 2.5, 1: c.pedestrian_accel_max, 2: c.cyclist_accel_max},
        "type_length_lo": {0: length[0], 1: c.pedestrian_length[0], 2: c.cyclist_length[0]},
        "type_length_hi": {0: length[1], 1: c.pedestrian_length[1], 2: c.cyclist_length[1]},
        "type_width_lo": {0: width[0], 1: c.pedestrian_width[0], 2: c.cyclist_width[0]},
        "type_width_hi": {0: width[1], 1: c.pedestrian_width[1], 2: c.cyclist_width[1]},
        "type_height": {0: c.vehicle_height, 1: c.pedestrian_height, 2: c.cyclist_height},
    }
    for name, by_type in per_type.items():
        got = getattr(model, name).numpy()
        for kind, row in rows.items():
            assert got[kind] == pytest.approx(by_type[row], rel=1e-6), (name, kind)
    table = c.conditioning
    np.testing.assert_allclose(model.cond_low.numpy(), [r.low for r in table], rtol=1e-6)
    np.testing.assert_allclose(model.cond_high.numpy(), [r.high for r in table], rtol=1e-6)
    np.testing.assert_array_equal(model.cond_kind.numpy(), [r.kind_id for r in table])
