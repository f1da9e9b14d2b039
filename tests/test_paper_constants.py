"""Every number the paper (Tables 2-5, App. C) and REFERENCE.md fix, asserted against a literal
copy of its table, all rows and fields. The behaviour behind them is tested elsewhere (against
NumPy references); this file pins the numbers, so a constant that drifts fails here by name."""

from __future__ import annotations

import dataclasses
import inspect
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

# ---- Table 3: camera rig ----------------------------------------------------------------------
TABLE3_EXTRINSICS = {  # name: (x, y, z, yaw deg), ego frame x forward, y left, z up
    "front": (1.66, -0.01, 1.49, 0.0),
    "front_left": (1.63, 0.12, 1.48, 55.0),
    "front_right": (1.62, -0.16, 1.49, -55.0),
    "back": (-0.47, 0.02, 1.43, 180.0),
}
TABLE3_SENSOR = (1920, 1080)
TABLE3_FOCAL_PX = 1545.0
TABLE3_FOV_DEG = (63.7, 38.5)
TABLE3_RENDER = (96, 54)


def test_table3_camera_rig_every_camera_and_the_intrinsics():
    from pictura.render.camera import CameraRig

    rig = CameraRig()
    assert [c.name for c in rig.cameras] == list(TABLE3_EXTRINSICS)
    for cam in rig.cameras:
        assert (cam.x, cam.y, cam.z, cam.yaw_deg) == TABLE3_EXTRINSICS[cam.name], cam.name
        assert cam.pitch_deg == 0.0, cam.name
    expected = [[x, y, z, math.radians(yaw), 0.0] for x, y, z, yaw in TABLE3_EXTRINSICS.values()]
    np.testing.assert_allclose(rig.extrinsics(), expected, atol=1e-6)
    assert (rig.sensor_width, rig.sensor_height) == TABLE3_SENSOR
    assert rig.focal_px == TABLE3_FOCAL_PX
    assert (rig.width, rig.height) == TABLE3_RENDER
    assert rig.fov_deg() == pytest.approx(TABLE3_FOV_DEG, abs=0.05)
    # the focal scales with the render width; the default principal point is the image centre
    assert rig.focal == pytest.approx(TABLE3_FOCAL_PX * 96 / 1920)
    assert rig.principal == (48.0, 27.0)
    square = CameraRig(width=64, height=64)  # not 16:9: the focal follows the width
    assert square.focal == pytest.approx(TABLE3_FOCAL_PX * 64 / 1920)
    # nuPlan's own calibration (cx 960, cy 560 on the sensor) scales axis by axis
    nuplan = CameraRig(width=64, height=64, principal_point=(960.0, 560.0))
    assert nuplan.principal == pytest.approx((960.0 * 64 / 1920, 560.0 * 64 / 1080))


# ---- Actions and dynamics (REFERENCE.md "Dynamics") -----------------------------------------
JERK_LONG = (-15.0, -4.0, 0.0, 4.0)
JERK_LAT = (-4.0, 0.0, 4.0)


def test_action_table_and_dynamics_limits():
    from pictura.sim import dynamics, features

    assert features.NUM_ACTIONS == 12
    assert features.JERK_LONG == JERK_LONG and features.JERK_LAT == JERK_LAT
    assert features.ACTION_COAST == 2 * 3 + 1  # j_long 0, j_lat 0
    assert (dynamics.A_LONG_MIN, dynamics.A_LONG_MAX, dynamics.A_LAT_MAX) == (-5.0, 2.5, 4.0)
    assert (dynamics.STEER_RATE_MAX, dynamics.STEER_MAX) == (0.6, 0.55)
    assert dynamics.WHEELBASE_FRACTION == 0.6
    assert dynamics.STRAIGHT_EPS == 1e-5


# ---- Table 2: conditioning ------------------------------------------------------------------
TABLE2 = (  # name, low, high, distribution
    ("delta_goal", 2.0, 12.0, "uniform"),
    ("v_goal", 0.0, 20.0, "uniform"),
    ("alpha_collision", 0.0, 3.0, "uniform"),
    ("alpha_offroad", 0.0, 3.0, "uniform"),
    ("alpha_stop_line", 0.0, 1.0, "uniform"),
    ("alpha_comfort", 0.0, 0.1, "uniform"),
    ("alpha_lane_align", 2.5e-4, 2.5e-2, "uniform"),
    ("alpha_vel_align", 0.0, 1.0, "uniform"),
    ("alpha_lane_center", 2.5e-4, 7.5e-3, "uniform"),
    ("alpha_center_bias", -0.5, 0.5, "uniform"),
    ("alpha_velocity", 2.5e-3, 2.5e-3, "fixed"),
    ("alpha_reverse", 2.5e-4, 7.5e-3, "uniform"),
    ("alpha_overspeed", 0.0, 1.0, "uniform"),
    ("alpha_timestep", 2.5e-5, 2.5e-5, "fixed"),
    ("c_throttle", 0.8, 1.25, "umix"),
    ("c_steer", 0.8, 1.25, "umix"),
    ("c_acc", 2.0 / 3.0, 1.5, "umix"),
)


def test_table2_every_coefficient_range_and_distribution():
    from pictura.sim.config import CONDITIONING_TABLE, SimConfig
    from pictura.sim.features import CONDITIONING_NAMES, CONDITIONING_WIDTH, NUM_COEFFICIENTS

    rows = tuple((c.name, c.low, c.high, c.kind) for c in CONDITIONING_TABLE)
    assert rows == TABLE2
    assert tuple(c.name for c in SimConfig().conditioning) == CONDITIONING_NAMES == tuple(r[0] for r in TABLE2)
    assert NUM_COEFFICIENTS == 17 and CONDITIONING_WIDTH == 17 + 3  # + agent type one-hot


# ---- Reward terms (REFERENCE.md "Reward terms") -------------------------------------------
REWARD_TERMS = (
    "goal", "collision", "offroad", "red_light", "comfort", "lane_align", "lane_center",
    "velocity", "overspeed", "reverse", "timestep",
)  # fmt: skip


def test_reward_term_constants():
    from pictura.sim import SimConfig, features, lanes, rewards

    assert set(features.REWARD_TERMS) == set(REWARD_TERMS) and len(features.REWARD_TERMS) == 11
    assert SimConfig().collision_speed_weight == 0.1
    assert (rewards.COMFORT_ACCEL, rewards.COMFORT_JERK) == (3.0, 5.0)
    assert rewards.ALIGN_BONUS == 0.0025
    assert (rewards.CENTER_ALIGNED_COS, rewards.CENTER_BONUS) == (0.5, 0.05)
    assert rewards.VELOCITY_MIN == 2.5
    assert rewards.OVERSPEED_MARGIN == 2.0
    assert lanes.DEFAULT_SPEED_LIMIT == 15.0


# ---- World rules (REFERENCE.md "World rules", App. C.1) ---------------------------------------


def test_world_rule_thresholds():
    from pictura.eval import metrics
    from pictura.sim import events, geometry, lanes, spawn

    assert events.RED_LIGHT_RADIUS_M == 10.0
    assert events.RED_LIGHT_HEADING_RAD == pytest.approx(math.radians(45.0), abs=1e-15)
    assert events.STOP_LINE_EXTENSION == 1.5
    assert geometry.Z_TOLERANCE_M == 4.0 and metrics.Z_TOLERANCE_M == 4.0
    assert metrics.MIN_AT_FAULT_SPEED == 0.2
    assert (lanes.ASSOCIATION_WIDTHS, lanes.SWITCH_HYSTERESIS) == (3.0, 0.05)
    assert spawn.SPAWN_EDGE_MARGIN == 1.1


# ---- Table 5 (environment) and the world rules' SimConfig defaults -------------------------
SIM_DEFAULTS = dict(
    dt=0.1,
    episode_length=1280,
    early_reset_halted_fraction=0.4,
    agents_per_world=(1, 120),
    v_max=40.0,
    v_min=-2.0,
    goal_waypoints=3,
    goal_spacing_m=(20.0, 200.0),
    max_goal_turn_deg=60.0,
    spawn_attempts=30,
    spawn_forecast_s=1.0,
    vehicle_length=(0.8, 7.0),
    vehicle_width=(0.8, 2.7),
    eval_vehicle_length=(2.0, 5.5),
    eval_vehicle_width=(1.5, 2.5),
    vehicle_height=1.5,
    eval_goal_radius=2.0,
    light_green_s=(1.0, 10.0),
    light_yellow_s=(1.5, 2.25),
    light_red_s=(0.3, 10.0),
    light_all_off_p=0.2,
    light_off_p=0.2,
    light_always_green_p=0.05,
    eval_light_s=(10.0, 3.0, 2.0),
    eval_v_max=20.0,
    pedestrian_fraction=0.1,
    cyclist_fraction=0.1,
    pedestrian_v_max=2.5,
    pedestrian_goal_radius=0.5,
    cyclist_v_max=8.0,
    parked_per_world=32,
    eval=False,
)


def test_table5_environment_and_world_rule_defaults():
    from pictura.sim import SimConfig

    config = SimConfig()
    assert {k: getattr(config, k) for k in SIM_DEFAULTS} == SIM_DEFAULTS


# ---- Table 5 (PPO) -------------------------------------------------------------------------
TABLE5_PPO = dict(
    rollout_steps=128,
    minibatch_size=65_536,
    update_epochs=2,
    gamma=0.999,
    gae_lambda=0.95,
    clip_coef=0.2,
    vf_coef=0.5,
    ent_coef=0.01,
    learning_rate=5e-4,
    betas=(0.9, 0.999),
    eps=1e-8,
    weight_decay=0.01,
    max_grad_norm=0.5,
    advantage_filter=True,
    filter_threshold=0.01,
    filter_ema=0.25,
    value_normalization=False,  # not in Table 5: off by default
)


def test_table5_ppo_defaults_of_the_module_and_the_filter():
    from pictura.modules.gae import AdvantageFilter
    from pictura.modules.ppo import PPO, ppo_loss

    params = inspect.signature(PPO.__init__).parameters
    assert {k: params[k].default for k in TABLE5_PPO} == TABLE5_PPO
    loss_params = inspect.signature(ppo_loss).parameters
    assert (loss_params["clip_coef"].default, loss_params["vf_coef"].default, loss_params["ent_coef"].default) == (
        0.2, 0.5, 0.01,
    )  # fmt: skip
    filt = inspect.signature(AdvantageFilter.__init__).parameters
    assert (filt["threshold"].default, filt["ema_coef"].default) == (0.01, 0.25)


def test_table5_optimizer_adamw_and_cosine_schedule():
    import torch

    from pictura.modules.ppo import PPO

    model = PPO(env=None, policy=None, max_iterations=10)
    model.policy = torch.nn.Linear(2, 2)
    configured = model.configure_optimizers()
    optimizer, scheduler = configured["optimizer"], configured["lr_scheduler"]["scheduler"]
    assert type(optimizer) is torch.optim.AdamW
    group = optimizer.param_groups[0]
    assert (group["betas"], group["eps"], group["weight_decay"]) == ((0.9, 0.999), 1e-8, 0.01)
    rates = []
    for _ in range(11):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    expected = [5e-4 * 0.5 * (1 + math.cos(math.pi * i / 10)) for i in range(11)]  # cosine over the run
    assert rates == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("config", ["alberti.yaml", "vectorized.yaml", "vectorized_blind.yaml"])
def test_table5_in_the_agent_configs(config):
    text = (REPO / "configs" / config).read_text()
    model = yaml.safe_load(text)["model"]["init_args"]
    for key, value in TABLE5_PPO.items():
        if key in model:
            got = tuple(model[key]) if isinstance(value, tuple) else model[key]
            assert got == value, f"{config}: {key}"
    env = model["env"]["init_args"]
    assert env["agents_per_world"] == [1, 120]
    # 20 envs x 1024 = 20,480 concurrent agent slots
    assert env["num_worlds"] * env["slots_per_world"] == 20_480, config
    if config == "alberti.yaml":
        assert (env["rig"]["init_args"]["width"], env["rig"]["init_args"]["height"]) == TABLE3_RENDER
        assert len(env["maps"]) == 8 and all(m.startswith("carla:") for m in env["maps"])


# ---- Table 4 --------------------------------------------------------------------------------
TABLE4_ALBERTI = dict(
    num_actions=12, group_width=64, trunk_width=512, trunk_layers=4, queries_per_camera=16, camera_width=128,
)
TABLE4_VECTORIZED = dict(num_actions=12, group_width=64, trunk_width=512, trunk_layers=4)


def test_table4_policy_defaults_and_observation_layout():
    from pictura.envs.observations import (
        LENGTH_SCALE_M,
        PARTNER_AUX_WIDTH,
        PARTNER_WIDTH,
        POSITION_SCALE_M,
        SEGMENT_WIDTH,
        SPEED_SCALE_MPS,
        TRAFFIC_WIDTH,
        WIDTH_SCALE_M,
        WINDOW_AHEAD_M,
        WINDOW_BEHIND_M,
        WINDOW_LATERAL_M,
        VectorizedObservationConfig,
    )
    from pictura.modules.alberti import AlbertiPolicy
    from pictura.modules.vectorized import VectorizedPolicy
    from pictura.sim.features import EGO_AUX_WIDTH, EGO_WIDTH, GOAL_FEATURES, NUM_GOALS

    alberti = inspect.signature(AlbertiPolicy.__init__).parameters
    assert {k: alberti[k].default for k in TABLE4_ALBERTI} == TABLE4_ALBERTI
    conv = tuple(alberti["conv_channels"].default)
    assert len(conv) == 5 and conv[-1] == 128  # 5 layers, 128 output channels
    vectorized = inspect.signature(VectorizedPolicy.__init__).parameters
    assert {k: vectorized[k].default for k in TABLE4_VECTORIZED} == TABLE4_VECTORIZED
    assert (EGO_WIDTH, EGO_AUX_WIDTH, PARTNER_WIDTH, PARTNER_AUX_WIDTH) == (7, 2, 7, 1)
    assert (SEGMENT_WIDTH, TRAFFIC_WIDTH) == (6, 8)
    assert (NUM_GOALS, GOAL_FEATURES) == (3, 6)
    caps = VectorizedObservationConfig()
    assert (caps.max_partners, caps.max_lanes, caps.max_boundaries, caps.max_traffic) == (16, 80, 80, 10)
    assert (POSITION_SCALE_M, SPEED_SCALE_MPS, LENGTH_SCALE_M, WIDTH_SCALE_M) == (200.0, 40.0, 10.0, 5.0)
    assert (WINDOW_AHEAD_M, WINDOW_BEHIND_M, WINDOW_LATERAL_M) == (200.0, 60.0, 50.0)


# ---- What docs/renderer.md promises ---------------------------------------------------------
RENDER_LINE_WIDTH_M = {"lane divider": 0.15, "centre line": 0.15, "road edge": 0.20, "stop line": 0.40}


def test_renderer_line_widths_as_documented():
    from pictura.render import palette

    kinds = {
        "lane divider": palette.LINE_LANE_DIVIDER,
        "centre line": palette.LINE_CENTRE_LINE,
        "road edge": palette.LINE_ROAD_EDGE,
        "stop line": palette.LINE_STOP_LINE,
    }
    assert {name: float(palette.LINE_WIDTH_M[k]) for name, k in kinds.items()} == pytest.approx(RENDER_LINE_WIDTH_M)
    assert (palette.LIGHT_RADIUS_M, palette.LIGHT_FULL_DEG, palette.LIGHT_CUTOFF_DEG) == (0.40, 45.0, 75.0)
    assert (palette.SHADE_MIN, palette.SHADE_DISTANCE_M) == (0.45, 50.0)


# ---- Evaluation (App. C.2, REFERENCE.md "Evaluation definitions") ---------------------------


def test_evaluation_settings():
    from pictura.eval import protocols
    from pictura.maps import CARLA_TOWNS
    from pictura.maps.womd import selection

    assert protocols.IN_DOMAIN_DENSITIES == (60, 120, 150)
    assert protocols.WOMD_DENSITIES == (1.0, 0.75, 0.5)
    assert selection.WOMD_STEPS == 600
    assert selection.WOMD_MIN_DISPLACEMENT_M == 2.0
    assert tuple(CARLA_TOWNS) == (
        "Town01", "Town02", "Town03", "Town04", "Town05", "Town06", "Town07", "Town10HD",
    )  # fmt: skip
    config = protocols.eval_sim_config(3000)
    # the in-domain scenario: 3000 steps with no episode cap and no early reset inside it
    assert config.eval is True and config.v_max == 20.0
    assert config.episode_length > 3000 and config.early_reset_halted_fraction == 1.0
    assert (config.eval_goal_radius, config.eval_light_s) == (2.0, (10.0, 3.0, 2.0))
    assert dataclasses.replace(config, eval=False).v_max == 20.0  # the cap itself, not only the flag
