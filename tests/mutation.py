"""Mutation check: plant small, realistic bugs one at a time and see whether the tests catch them.

    python -m tests.mutation                 # every mutant (tens of minutes on 2 CPU cores)
    python -m tests.mutation --list          # the mutants, no run
    python -m tests.mutation --only red_light_radius collision_speed_weight
    python -m tests.mutation --timeout 900 --json mutation.jsonl
    python -m tests.mutation --without tests/test_paper_constants.py   # the behaviour tests alone

Each mutant is one text substitution in one file of `pictura/` (a changed constant, a flipped
sign, a swapped table entry, a dropped normalisation, ...). The script copies the package, the
tests, the benchmarks and the configs into a temporary directory once, and for each mutant writes the mutated
file there, runs only the test files relevant to it (``pytest -x``, with a timeout), and puts
the file back. The working tree is never modified, whatever happens (Ctrl-C included). Warp
compiles mutated kernels into a private kernel cache whose entries start as links to the
shared cache, so unmutated modules load as compiled and the shared cache gains nothing.

A mutant is *killed* when its tests fail (or time out), *survived* when they pass. A survivor
whose ``equivalent`` note is set is explained (no behaviour change that the spec defines);
an unexplained survivor is a gap in the tests. The summary prints the kill rate and every
survivor with its explanation; the exit status is 1 when a survivor is unexplained.

Data: tests that need ``../shared/data`` find it through ``PICTURA_DATA`` (set to the checkout's
data root when it exists). Nothing here runs in CI (see docs/testing.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COPIED = ("pictura", "tests", "benchmarks", "configs", "pyproject.toml")
"""What the temporary copy holds (relative to the repository root)."""


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One planted bug: replace ``old`` (which must occur exactly once) by ``new`` in ``path``."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    kind: str  # constant | sign | table | dropped | swap | comparison
    equivalent: str = ""  # why a survivor changes no behaviour the spec defines ("" = it must die)


SIM_RULES = ("tests/sim/test_rule_thresholds.py",)
CONSTANTS = ("tests/test_paper_constants.py",)
WIRING = ("tests/modules/test_ppo_wiring.py",)
RENDER = ("tests/render/test_camera_mount.py", "tests/render/test_view_basics.py", "tests/render/test_rasterizer.py",
          "tests/render/test_render_funcs.py")

MUTANTS: tuple[Mutant, ...] = (
    # ---- sim/: event rules -----------------------------------------------------------------
    Mutant("red_light_radius", "pictura/sim/events.py", "RED_LIGHT_RADIUS_M = 10.0", "RED_LIGHT_RADIUS_M = 20.0",
           CONSTANTS + SIM_RULES + ("tests/sim/test_red_light.py",), "constant"),
    Mutant("red_light_heading", "pictura/sim/events.py", "RED_LIGHT_HEADING_RAD = 0.7853981633974483",
           "RED_LIGHT_HEADING_RAD = 1.5707963267948966", CONSTANTS + SIM_RULES + ("tests/sim/test_red_light.py",),
           "constant"),
    Mutant("stop_line_extension", "pictura/sim/events.py", "STOP_LINE_EXTENSION = 1.5", "STOP_LINE_EXTENSION = 2.0",
           CONSTANTS + SIM_RULES + ("tests/sim/test_red_light.py",), "constant"),
    Mutant("red_light_front_bumper", "pictura/sim/events.py",
           "rear1 = xy(state.pos[slot]) - wp.vec2(wp.cos(h1), wp.sin(h1)) * half",
           "rear1 = xy(state.pos[slot]) + wp.vec2(wp.cos(h1), wp.sin(h1)) * half",
           SIM_RULES + ("tests/sim/test_red_light.py",), "sign"),
    Mutant("red_light_distance_after_step", "pictura/sim/events.py",
           "near = wp.length(xy(p1) - xy(mid)) < RED_LIGHT_RADIUS_M",
           "near = wp.length(xy(p1) - xy(mid)) < RED_LIGHT_RADIUS_M * 2.0",
           SIM_RULES + ("tests/sim/test_red_light.py",), "constant"),
    Mutant("parked_car_sweep_dropped", "pictura/sim/events.py",
           "swept_boxes_overlap(p0, h0, xy(p), h, l, wd, xy(q), ho, xy(q), ho, lo, wo)",
           "swept_boxes_overlap(xy(p), h, xy(p), h, l, wd, xy(q), ho, xy(q), ho, lo, wo)",
           SIM_RULES + ("tests/sim/test_collision.py", "tests/sim/test_parked.py"), "dropped"),
    Mutant("goal_radius_strict", "pictura/sim/events.py",
           "near = point_segment_distance(xy(goal), xy(pos0), xy(pos1)) < radius",
           "near = point_segment_distance(xy(goal), xy(pos0), xy(pos1)) < 2.0 * radius",
           SIM_RULES + ("tests/sim/test_goals.py",), "constant"),
    Mutant("z_tolerance", "pictura/sim/geometry.py", "Z_TOLERANCE_M = 4.0", "Z_TOLERANCE_M = 2.0",
           CONSTANTS + SIM_RULES + ("tests/sim/test_collision.py",), "constant"),
    # ---- sim/: rewards ---------------------------------------------------------------------
    Mutant("collision_speed_weight", "pictura/sim/config.py", "collision_speed_weight: float = 0.1",
           "collision_speed_weight: float = 1.0", CONSTANTS + SIM_RULES + ("tests/sim/test_collision.py",), "constant"),
    Mutant("collision_speed_signed", "pictura/sim/rewards.py", "collision_speed_weight * wp.abs(v)",
           "collision_speed_weight * v", SIM_RULES + ("tests/sim/test_collision.py",), "dropped"),
    Mutant("offroad_coefficient_swap", "pictura/sim/rewards.py",
           "terms[TERM_OFFROAD] = -state.conditioning[slot, COND_OFFROAD]",
           "terms[TERM_OFFROAD] = -state.conditioning[slot, COND_COLLISION]",
           ("tests/sim/test_offroad.py", "tests/sim/test_rollout.py", "tests/envs/test_driving_env.py"), "swap"),
    Mutant("comfort_accel", "pictura/sim/rewards.py", "COMFORT_ACCEL = 3.0", "COMFORT_ACCEL = 4.0",
           CONSTANTS + SIM_RULES + ("tests/sim/test_rollout.py",), "constant"),
    Mutant("overspeed_margin_sign", "pictura/sim/rewards.py", "if v > speed_limit + OVERSPEED_MARGIN:",
           "if v > speed_limit - OVERSPEED_MARGIN:", SIM_RULES + ("tests/sim/test_rollout.py",), "sign"),
    Mutant("lane_center_bonus_sign", "pictura/sim/rewards.py", "CENTER_BONUS * wp.exp(-(d - 0.5))",
           "CENTER_BONUS * wp.exp(-(d + 0.5))", SIM_RULES + ("tests/sim/test_rollout.py",), "sign"),
    Mutant("velocity_threshold_dropped", "pictura/sim/rewards.py", "if v > VELOCITY_MIN:", "if v > 0.0:",
           SIM_RULES + ("tests/sim/test_rollout.py",), "dropped"),
    Mutant("align_bonus_sign", "pictura/sim/rewards.py", "ALIGN_BONUS * (1.0 - 2.0 * wp.abs(theta) / wp.pi)",
           "ALIGN_BONUS * (1.0 + 2.0 * wp.abs(theta) / wp.pi)", SIM_RULES + ("tests/sim/test_rollout.py",), "sign"),
    Mutant("centre_aligned_threshold", "pictura/sim/rewards.py", "if cos_t > CENTER_ALIGNED_COS:", "if cos_t > 0.0:",
           SIM_RULES + ("tests/sim/test_rollout.py",), "comparison"),
    # ---- sim/: tables, dynamics, lanes -----------------------------------------------------
    Mutant("table2_collision_range", "pictura/sim/config.py", 'Coefficient("alpha_collision", 0.0, 3.0, "uniform")',
           'Coefficient("alpha_collision", 0.0, 1.0, "uniform")', CONSTANTS + ("tests/sim/test_config.py",), "table"),
    Mutant("table2_c_acc_kind", "pictura/sim/config.py", 'Coefficient("c_acc", 2.0 / 3.0, 1.5, "umix")',
           'Coefficient("c_acc", 2.0 / 3.0, 1.5, "uniform")', CONSTANTS + ("tests/sim/test_config.py",), "table"),
    Mutant("light_yellow", "pictura/sim/config.py", "light_yellow_s: tuple[float, float] = (1.5, 2.25)",
           "light_yellow_s: tuple[float, float] = (1.5, 2.5)", CONSTANTS + ("tests/sim/test_lights.py",), "constant"),
    Mutant("jerk_table", "pictura/sim/features.py", "JERK_LONG = (-15.0, -4.0, 0.0, 4.0)",
           "JERK_LONG = (-15.0, -4.0, 0.0, 5.0)", CONSTANTS + ("tests/sim/test_dynamics.py",), "table"),
    Mutant("lateral_accel_limit", "pictura/sim/dynamics.py", "A_LAT_MAX = 4.0", "A_LAT_MAX = 5.0",
           CONSTANTS + ("tests/sim/test_dynamics.py",), "constant"),
    Mutant("default_speed_limit", "pictura/sim/lanes.py", "DEFAULT_SPEED_LIMIT = 15.0", "DEFAULT_SPEED_LIMIT = 20.0",
           CONSTANTS + ("tests/sim/test_observations.py",), "constant"),
    # ---- envs/ -----------------------------------------------------------------------------
    Mutant("done_drops_truncation", "pictura/envs/driving.py", 'out.set("done", terminated | truncated)',
           'out.set("done", terminated)', ("tests/envs/test_step_outputs.py", "tests/envs/test_driving_env.py"),
           "dropped"),
    Mutant("partner_speed_scale", "pictura/envs/observations.py", "SPEED_SCALE_MPS = 40.0", "SPEED_SCALE_MPS = 20.0",
           CONSTANTS + ("tests/envs/test_vectorized_observation.py",), "constant"),
    # ---- modules/ --------------------------------------------------------------------------
    Mutant("minibatch_normalisation_dropped", "pictura/modules/ppo.py",
           "mb_adv = normalize_advantage(flat_adv[mb]) if mb.numel() else flat_adv[mb]", "mb_adv = flat_adv[mb]",
           WIRING + ("tests/modules/test_ppo.py",), "dropped"),
    Mutant("loss_coefficients_swapped", "pictura/modules/ppo.py", "h.clip_coef, h.vf_coef, h.ent_coef,",
           "h.clip_coef, h.ent_coef, h.vf_coef,", WIRING + ("tests/modules/test_ppo.py",), "swap"),
    Mutant("grad_clip_doubled", "pictura/modules/ppo.py", "gradient_clip_val=h.max_grad_norm",
           "gradient_clip_val=2 * h.max_grad_norm", WIRING + ("tests/modules/test_ppo.py",), "constant"),
    Mutant("filter_threshold_default", "pictura/modules/ppo.py", "filter_threshold: float = 0.01,",
           "filter_threshold: float = 0.1,", CONSTANTS + ("tests/modules/test_ppo.py",), "constant"),
    Mutant("value_loss_half_dropped", "pictura/modules/ppo.py", "value_loss = 0.5 * mean(", "value_loss = 1.0 * mean(",
           ("tests/modules/test_ppo.py",), "dropped"),
    Mutant("returns_not_targets", "pictura/modules/ppo.py", "flat_adv, flat_ret = advantage.reshape(-1), targets.reshape(-1)",
           "flat_adv, flat_ret = advantage.reshape(-1), (targets + advantage).reshape(-1)",
           WIRING + ("tests/modules/test_ppo.py",), "dropped"),
    Mutant("filter_ema_flipped", "pictura/modules/gae.py", "(1 - coef) * running + coef * value",
           "coef * running + (1 - coef) * value", ("tests/modules/test_gae.py",), "swap"),
    Mutant("adamw_weight_decay", "pictura/modules/ppo.py", "weight_decay: float = 0.01,", "weight_decay: float = 0.0,",
           CONSTANTS + ("tests/modules/test_ppo.py",), "constant"),
    # ---- eval/ -----------------------------------------------------------------------------
    Mutant("at_fault_speed", "pictura/eval/metrics.py", "MIN_AT_FAULT_SPEED = 0.2", "MIN_AT_FAULT_SPEED = 0.4",
           CONSTANTS + SIM_RULES + ("tests/eval/test_metrics.py",), "constant"),
    Mutant("struck_from_behind_line", "pictura/eval/metrics.py", "(rel_x < -0.5 * ego.length)", "(rel_x < -0.25 * ego.length)",
           SIM_RULES + ("tests/eval/test_metrics.py",), "constant"),
    Mutant("in_domain_density", "pictura/eval/protocols.py", "IN_DOMAIN_DENSITIES = (60, 120, 150)",
           "IN_DOMAIN_DENSITIES = (60, 100, 150)", CONSTANTS + ("tests/eval/test_in_domain.py",), "table"),
    Mutant("eval_v_max", "pictura/eval/protocols.py", '"eval_v_max": 20.0,', '"eval_v_max": 40.0,',
           CONSTANTS + ("tests/eval/test_in_domain.py",), "constant"),
    # ---- render/ ---------------------------------------------------------------------------
    Mutant("front_left_yaw", "pictura/render/camera.py", 'Camera("front_left", 1.63, 0.12, 1.48, 55.0)',
           'Camera("front_left", 1.63, 0.12, 1.48, 45.0)', CONSTANTS + ("tests/render/test_camera.py",), "table"),
    Mutant("back_camera_height", "pictura/render/camera.py", 'Camera("back", -0.47, 0.02, 1.43, 180.0)',
           'Camera("back", -0.47, 0.02, 1.34, 180.0)', CONSTANTS + ("tests/render/test_camera.py",), "table"),
    Mutant("focal_scaled_by_height", "pictura/render/camera.py", "return self.focal_px * self._width / self.sensor_width",
           "return self.focal_px * self._height / self.sensor_height", CONSTANTS + ("tests/render/test_camera.py",),
           "swap"),
    # ---- maps/ -----------------------------------------------------------------------------
    Mutant("opendrive_arc_sign", "pictura/maps/opendrive/geometry.py",
           "g.y - (np.cos(th) - np.cos(g.hdg)) / k, th", "g.y + (np.cos(th) - np.cos(g.hdg)) / k, th",
           ("tests/maps/test_opendrive_geometry.py",), "sign"),
    Mutant("womd_speed_limit_units", "pictura/maps/womd/features.py", "MPH_TO_MPS = 0.44704", "MPH_TO_MPS = 1.0",
           ("tests/maps/test_womd_features.py",), "constant"),
    Mutant("womd_signal_table", "pictura/maps/womd/features.py", "4: LIGHT_RED,  # LANE_STATE_STOP",
           "4: LIGHT_YELLOW,  # LANE_STATE_STOP", ("tests/maps/test_womd_features.py", "tests/maps/test_womd_json.py"),
           "table"),
    # ---- a second set across the same directories, with each file's usual tests ------------
    Mutant("steer_rate", "pictura/sim/dynamics.py", "STEER_RATE_MAX = 0.6", "STEER_RATE_MAX = 0.8",
           CONSTANTS + ("tests/sim/test_dynamics.py",), "constant"),
    Mutant("ego_lateral_accel_scale", "pictura/sim/kernels.py", "ego_out[slot, 5] = state.accel_lat[slot] / 4.0",
           "ego_out[slot, 5] = state.accel_lat[slot] / 5.0", ("tests/sim/test_observations.py",), "constant"),
    Mutant("reverse_threshold", "pictura/sim/rewards.py", "if v < 0.0:", "if v < -0.5:",
           SIM_RULES + ("tests/sim/test_rollout.py",), "comparison"),
    Mutant("timestep_dt_dropped", "pictura/sim/rewards.py",
           "terms[TERM_TIMESTEP] = -state.conditioning[slot, COND_TIMESTEP] * dt",
           "terms[TERM_TIMESTEP] = -state.conditioning[slot, COND_TIMESTEP]", SIM_RULES + ("tests/sim/test_rollout.py",),
           "dropped"),
    Mutant("always_green_probability", "pictura/sim/config.py", "light_always_green_p: float = 0.05",
           "light_always_green_p: float = 0.5", CONSTANTS + ("tests/sim/test_lights.py",), "constant"),
    Mutant("lane_score_weights_swapped", "pictura/sim/lanes.py",
           "score = 0.7 * dist / 4.0 + 0.3 * wp.abs(err) / wp.pi", "score = 0.3 * dist / 4.0 + 0.7 * wp.abs(err) / wp.pi",
           SIM_RULES + ("tests/sim/test_observations.py", "tests/sim/test_rollout.py"), "swap"),
    Mutant("second_waypoint_needs_v_goal", "pictura/sim/kernels.py",
           "if gi < 2 or model.eval_mode != 0 or v < state_out.conditioning[slot, _C_V_GOAL]:",
           "if gi < 1 or model.eval_mode != 0 or v < state_out.conditioning[slot, _C_V_GOAL]:", SIM_RULES + ("tests/sim/test_goals.py",),
           "comparison"),
    Mutant("red_light_after_collision", "pictura/sim/kernels.py", "if offroad == 0 and collision == 0 and not pedestrian:",
           "if offroad == 0 and not pedestrian:",
           SIM_RULES + ("tests/sim/test_red_light.py", "tests/sim/test_collision.py"), "dropped"),
    Mutant("partner_speed_by_position_scale", "pictura/envs/observations.py",
           "wp.where(privileged != 0, v / _SPEED, 0.0)", "wp.where(privileged != 0, v / _POS, 0.0)",
           ("tests/envs/test_vectorized_observation.py",), "swap"),
    Mutant("surrogate_minimum", "pictura/modules/ppo.py", "surrogate = torch.maximum(", "surrogate = torch.minimum(",
           WIRING + ("tests/modules/test_ppo.py",), "swap"),
    Mutant("gae_lambda_dropped", "pictura/modules/gae.py", "carry = gamma * gae_lambda * (~cut).to(value.dtype)",
           "carry = gamma * (~cut).to(value.dtype)", ("tests/modules/test_gae.py",) + WIRING, "dropped"),
    Mutant("minibatch_count_floor", "pictura/modules/ppo.py",
           "num_minibatches = max(1, math.ceil(int(count) / self.minibatch_local))",
           "num_minibatches = max(1, int(count) // self.minibatch_local)", WIRING + ("tests/modules/test_ppo.py",),
           "comparison"),
    Mutant("per_km_scale", "pictura/eval/metrics.py", '"at_fault_per_km": ("at_fault_collision", "distance_m", 1e3)',
           '"at_fault_per_km": ("at_fault_collision", "distance_m", 1e2)', ("tests/eval/test_metrics.py",), "constant"),
    Mutant("womd_min_displacement", "pictura/maps/womd/selection.py", "WOMD_MIN_DISPLACEMENT_M = 2.0",
           "WOMD_MIN_DISPLACEMENT_M = 5.0", CONSTANTS + ("tests/eval/test_womd_protocol.py",), "constant"),
    Mutant("camera_left_axis_sign", "pictura/render/cull.py", "left = wp.vec3(-wp.sin(yaw), wp.cos(yaw), 0.0)",
           "left = wp.vec3(wp.sin(yaw), -wp.cos(yaw), 0.0)", RENDER, "sign"),
    Mutant("camera_mount_sign", "pictura/render/cull.py", "agent_box[step, slot, BoxCol.X] + ch * mx - sh * my",
           "agent_box[step, slot, BoxCol.X] + ch * mx + sh * my", RENDER, "sign"),
    Mutant("opendrive_lane_offset_sign", "pictura/maps/opendrive/lanes.py",
           "[self.x - t * np.sin(self.heading), self.y + t * np.cos(self.heading), self.z]",
           "[self.x + t * np.sin(self.heading), self.y + t * np.cos(self.heading), self.z]",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py"), "sign"),
    Mutant("procedural_lane_width", "pictura/maps/procedural/__init__.py", "lane_width: float = 3.5,",
           "lane_width: float = 3.0,", ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"),
           "constant"),
    Mutant("info_terms_misnamed", "pictura/envs/driving.py",
           "{t: terms[:, i : i + 1].clone() for i, t in enumerate(REWARD_TERMS)}",
           "{t: terms[:, i : i + 1].clone() for i, t in enumerate(reversed(REWARD_TERMS))}",
           ("tests/envs/test_step_outputs.py", "tests/envs/test_driving_env.py"), "swap"),
    Mutant("stop_line_one_end_extended", "pictura/sim/events.py",
           "ea = xy(mid) + (xy(a) - xy(mid)) * extension", "ea = xy(mid) + (xy(a) - xy(mid))",
           SIM_RULES + ("tests/sim/test_red_light.py",), "dropped"),
    # ---- a third set across the same directories, with each file's usual tests -------------
    Mutant("wheelbase_fraction", "pictura/sim/dynamics.py", "WHEELBASE_FRACTION = 0.6", "WHEELBASE_FRACTION = 0.5",
           CONSTANTS + ("tests/sim/test_dynamics.py",), "constant"),
    Mutant("ego_steering_scale", "pictura/sim/kernels.py", "ego_out[slot, 3] = state.steering[slot] / 0.55",
           "ego_out[slot, 3] = state.steering[slot] / 0.6", ("tests/sim/test_observations.py",), "constant"),
    Mutant("ego_speed_limit_scale", "pictura/sim/kernels.py", "ego_out[slot, 6] = lane_speed_limit(model, lane) / 40.0",
           "ego_out[slot, 6] = lane_speed_limit(model, lane) / 20.0", ("tests/sim/test_observations.py",), "constant"),
    Mutant("goal_height_tolerance", "pictura/sim/events.py", "return near and wp.abs(goal[2] - pos1[2]) < Z_TOLERANCE_M",
           "return near and wp.abs(goal[2] - pos1[2]) < 0.5 * Z_TOLERANCE_M",
           SIM_RULES + ("tests/sim/test_goals.py",), "constant"),
    Mutant("comfort_jerk", "pictura/sim/rewards.py", "COMFORT_JERK = 5.0", "COMFORT_JERK = 7.0",
           CONSTANTS + SIM_RULES + ("tests/sim/test_rollout.py",), "constant"),
    Mutant("comfort_lateral_by_jerk_limit", "pictura/sim/rewards.py", "if wp.abs(a_lat) > COMFORT_ACCEL:",
           "if wp.abs(a_lat) > COMFORT_JERK:", SIM_RULES + ("tests/sim/test_rollout.py",), "swap"),
    Mutant("red_light_coefficient_swap", "pictura/sim/rewards.py",
           "terms[TERM_RED_LIGHT] = -state.conditioning[slot, COND_STOP_LINE] * float(red_light)",
           "terms[TERM_RED_LIGHT] = -state.conditioning[slot, COND_OFFROAD] * float(red_light)",
           SIM_RULES + ("tests/sim/test_red_light.py",), "swap"),
    Mutant("spawn_attempts", "pictura/sim/config.py", "spawn_attempts: int = 30", "spawn_attempts: int = 20",
           CONSTANTS + ("tests/sim/test_spawn.py",), "constant"),
    Mutant("gae_discount_dropped", "pictura/modules/gae.py", "delta = reward + gamma * bootstrap - value",
           "delta = reward + bootstrap - value", ("tests/modules/test_gae.py",) + WIRING, "dropped"),
    Mutant("approx_kl_form", "pictura/modules/ppo.py", '"approx_kl": mean((ratio - 1) - log_ratio).detach()',
           '"approx_kl": mean(-log_ratio).detach()', WIRING + ("tests/modules/test_ppo.py",), "dropped"),
    Mutant("clip_upper_doubled", "pictura/modules/ppo.py", "ratio.clamp(1 - clip_coef, 1 + clip_coef))",
           "ratio.clamp(1 - clip_coef, 1 + 2 * clip_coef))", WIRING + ("tests/modules/test_ppo.py",), "constant"),
    Mutant("eval_early_reset", "pictura/eval/protocols.py",
           "episode_length=steps + 1, early_reset_halted_fraction=1.0",
           "episode_length=steps + 1, early_reset_halted_fraction=0.4",
           CONSTANTS + ("tests/eval/test_in_domain.py",), "constant"),
    Mutant("observation_window_swapped", "pictura/envs/observations.py",
           "WINDOW_AHEAD_M, WINDOW_BEHIND_M, WINDOW_LATERAL_M = 200.0, 60.0, 50.0",
           "WINDOW_AHEAD_M, WINDOW_BEHIND_M, WINDOW_LATERAL_M = 200.0, 50.0, 60.0",
           CONSTANTS + ("tests/envs/test_vectorized_observation.py",), "swap"),
    Mutant("terminated_from_halted", "pictura/envs/driving.py",
           "terminated = wp.to_torch(st.terminated).bool()\n",
           "terminated = wp.to_torch(st.halted).bool()\n",
           ("tests/envs/test_step_outputs.py", "tests/envs/test_driving_env.py"), "swap"),
    Mutant("vertical_fov_by_width", "pictura/render/camera.py",
           "math.degrees(2 * math.atan(0.5 * self.sensor_height / fx)),",
           "math.degrees(2 * math.atan(0.5 * self.sensor_width / fx)),", CONSTANTS + ("tests/render/test_camera.py",),
           "swap"),
    Mutant("red_light_drawn_green", "pictura/render/palette.py", "LIGHT_COLOR[LIGHT_RED] = (1.00, 0.08, 0.08)",
           "LIGHT_COLOR[LIGHT_RED] = (0.10, 1.00, 0.35)", RENDER, "table"),
    Mutant("womd_lane_width", "pictura/maps/womd/features.py", "LANE_WIDTH_M = 3.7", "LANE_WIDTH_M = 3.0",
           ("tests/maps/test_womd_features.py", "tests/maps/test_womd_json.py"), "constant"),
    Mutant("procedural_sidewalk_width", "pictura/maps/procedural/town.py", "SIDEWALK_WIDTH_M = 3.0",
           "SIDEWALK_WIDTH_M = 2.0", ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"),
           "constant"),
    Mutant("metrics_height_tolerance", "pictura/eval/metrics.py", "Z_TOLERANCE_M = 4.0", "Z_TOLERANCE_M = 8.0",
           CONSTANTS + ("tests/eval/test_metrics.py",), "constant"),
    Mutant("opendrive_line_heading_sign", "pictura/maps/opendrive/geometry.py",
           "return g.x + ds * np.cos(g.hdg), g.y + ds * np.sin(g.hdg), np.full_like(ds, g.hdg)",
           "return g.x + ds * np.cos(g.hdg), g.y - ds * np.sin(g.hdg), np.full_like(ds, g.hdg)",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py"), "sign"),
    # ---- a fourth set across the same directories, with each file's usual tests ------------
    Mutant("umix_upper_branch", "pictura/sim/spawn.py", "value = 1.0 + (hi - 1.0) * u", "value = 1.0 + (hi - lo) * u",
           ("tests/sim/test_spawn.py", "tests/sim/test_world_spawn.py"), "swap"),
    Mutant("spawn_speed_full_limit", "pictura/sim/spawn.py",
           "speed = wp.randf(r, 0.0, model.spawn_speed_fraction * limit)", "speed = wp.randf(r, 0.0, limit)",
           ("tests/sim/test_spawn.py", "tests/sim/test_world_spawn.py"), "dropped"),
    Mutant("yellow_doubled_in_phase", "pictura/sim/traffic.py", "elif within < green + yellow:",
           "elif within < green + 2.0 * yellow:", ("tests/sim/test_lights.py", "tests/sim/test_light_modes.py"),
           "constant"),
    Mutant("single_light_off_ignored", "pictura/sim/traffic.py", "if off != 0 or mode == _MODE_OFF:",
           "if mode == _MODE_OFF:", ("tests/sim/test_lights.py", "tests/sim/test_light_modes.py"), "dropped"),
    Mutant("pedestrian_goal_radius_max", "pictura/sim/kernels.py",
           "radius = wp.min(radius, model.pedestrian_goal_radius)",
           "radius = wp.max(radius, model.pedestrian_goal_radius)",
           SIM_RULES + ("tests/sim/test_goals.py", "tests/sim/test_agent_types.py"), "swap"),
    Mutant("steer_rate_per_second", "pictura/sim/dynamics.py", "max_delta = STEER_RATE_MAX * dt",
           "max_delta = STEER_RATE_MAX", ("tests/sim/test_dynamics.py",), "dropped"),
    Mutant("spawn_speed_fraction", "pictura/sim/config.py", "spawn_speed_fraction: float = 0.5",
           "spawn_speed_fraction: float = 1.0", CONSTANTS + ("tests/sim/test_spawn.py",), "constant"),
    Mutant("traffic_one_hot_shifted", "pictura/envs/observations.py",
           "traffic_out[row, j, 4 + q] = wp.where(q == state, 1.0, 0.0)",
           "traffic_out[row, j, 4 + q] = wp.where(q == (state + 1) % 4, 1.0, 0.0)",
           ("tests/envs/test_vectorized_observation.py",), "table"),
    Mutant("entropy_sign", "pictura/modules/ppo.py", '"total": policy_loss - ent_coef * entropy_mean + vf_coef * value_loss',
           '"total": policy_loss + ent_coef * entropy_mean + vf_coef * value_loss', WIRING + ("tests/modules/test_ppo.py",),
           "sign"),
    Mutant("return_spread_floor", "pictura/modules/gae.py", ".clamp(min=self.min_std**2).sqrt()",
           ".clamp(min=self.min_std).sqrt()", ("tests/modules/test_gae.py",), "constant"),
    Mutant("piece_share_dropped", "pictura/modules/ppo.py",
           "share = real_piece.numel() * self.trainer.world_size / total", "share = float(self.trainer.world_size)",
           WIRING + ("tests/modules/test_ppo.py",), "dropped"),
    Mutant("masked_max_fill", "pictura/modules/vectorized.py",
           'pooled = torch.where(mask, x, torch.full_like(x, float("-inf"))).amax(dim=1)',
           "pooled = torch.where(mask, x, torch.zeros_like(x)).amax(dim=1)",
           ("tests/modules/test_vectorized_policy.py",), "constant"),
    Mutant("at_fault_both_rules", "pictura/eval/metrics.py", "return (v.abs() < min_speed) | struck_from_behind",
           "return (v.abs() < min_speed) & struck_from_behind", SIM_RULES + ("tests/eval/test_metrics.py",),
           "swap"),
    Mutant("womd_densities", "pictura/eval/protocols.py", "WOMD_DENSITIES = (1.0, 0.75, 0.5)",
           "WOMD_DENSITIES = (1.0, 0.5, 0.25)", CONSTANTS + ("tests/eval/test_womd_protocol.py",), "table"),
    Mutant("principal_y_by_width", "pictura/render/camera.py",
           "return cx * self._width / self.sensor_width, cy * self._height / self.sensor_height",
           "return cx * self._width / self.sensor_width, cy * self._width / self.sensor_width",
           CONSTANTS + ("tests/render/test_camera.py",), "swap"),
    Mutant("line_widths_swapped", "pictura/render/palette.py",
           "LINE_WIDTH_M = np.array([0.15, 0.15, 0.20, 0.40], np.float32)",
           "LINE_WIDTH_M = np.array([0.15, 0.15, 0.40, 0.20], np.float32)", CONSTANTS + RENDER, "table"),
    Mutant("line_half_width_dropped", "pictura/render/scene.py", "return seg, kind, 0.5 * LINE_WIDTH_M[kind]",
           "return seg, kind, LINE_WIDTH_M[kind]", RENDER, "dropped"),
    Mutant("womd_stop_point_tolerance", "pictura/maps/womd/features.py", "STOP_POINT_TOLERANCE_M = 1.0",
           "STOP_POINT_TOLERANCE_M = 0.1", ("tests/maps/test_womd_features.py", "tests/maps/test_womd_json.py"),
           "constant"),
    Mutant("opendrive_stop_line_side", "pictura/maps/opendrive/build.py",
           "xs.x[j] - t * np.sin(xs.heading[j]), xs.y[j] + t * np.cos(xs.heading[j]), np.full(2, xs.z[j])",
           "xs.x[j] + t * np.sin(xs.heading[j]), xs.y[j] + t * np.cos(xs.heading[j]), np.full(2, xs.z[j])",
           ("tests/maps/test_opendrive_junction.py", "tests/maps/test_opendrive_geometry.py"), "sign"),
    Mutant("procedural_crosswalk_width", "pictura/maps/procedural/town.py", "CROSSWALK_WIDTH_M = 3.0",
           "CROSSWALK_WIDTH_M = 4.0", ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"),
           "constant"),
    # ---- a fifth set across the same directories, with each file's usual tests -------------
    Mutant("sweep_circle_without_move", "pictura/sim/events.py",
           "radius = 0.5 * wp.sqrt(l * l + wd * wd) + 0.5 * wp.length(xy(p) - xy(p0)) + BROAD_PHASE_MARGIN_M",
           "radius = 0.5 * wp.sqrt(l * l + wd * wd) + BROAD_PHASE_MARGIN_M",
           SIM_RULES + ("tests/sim/test_collision.py",), "dropped"),
    Mutant("centre_bias_sign", "pictura/sim/rewards.py",
           "d = wp.abs(state.lane_offset[slot] - state.conditioning[slot, COND_CENTER_BIAS])",
           "d = wp.abs(state.lane_offset[slot] + state.conditioning[slot, COND_CENTER_BIAS])",
           SIM_RULES + ("tests/sim/test_rollout.py",), "sign"),
    Mutant("infraction_does_not_halt", "pictura/sim/kernels.py", "state_out.halted[slot] = 1",
           "state_out.halted[slot] = 0", SIM_RULES + ("tests/sim/test_collision.py", "tests/sim/test_rollout.py"),
           "dropped"),
    Mutant("steer_max", "pictura/sim/dynamics.py", "STEER_MAX = 0.55", "STEER_MAX = 0.6",
           CONSTANTS + ("tests/sim/test_dynamics.py",), "constant"),
    Mutant("lane_hysteresis_off", "pictura/sim/lanes.py", "SWITCH_HYSTERESIS = 0.05", "SWITCH_HYSTERESIS = 0.0",
           CONSTANTS + ("tests/sim/test_observations.py", "tests/sim/test_rollout.py"), "constant"),
    Mutant("parked_length_range", "pictura/sim/config.py", "parked_length: tuple[float, float] = (3.5, 5.5)",
           "parked_length: tuple[float, float] = (3.5, 6.5)", CONSTANTS + ("tests/sim/test_parked.py",), "constant"),
    Mutant("light_period_one_group", "pictura/sim/traffic.py", "period = turn * float(wp.max(group_count, 1))",
           "period = turn", ("tests/sim/test_lights.py", "tests/sim/test_light_modes.py"), "dropped"),
    Mutant("length_scale", "pictura/envs/observations.py", "LENGTH_SCALE_M = 10.0", "LENGTH_SCALE_M = 5.0",
           CONSTANTS + ("tests/envs/test_vectorized_observation.py",), "constant"),
    Mutant("env_reward_sign", "pictura/envs/driving.py", 'out.set("reward", wp.to_torch(st.reward).unsqueeze(-1).clone())',
           'out.set("reward", (-wp.to_torch(st.reward)).unsqueeze(-1).clone())',
           ("tests/envs/test_step_outputs.py", "tests/envs/test_driving_env.py"), "sign"),
    Mutant("advantage_not_centred", "pictura/modules/ppo.py",
           "return (advantage - advantage.mean()) / (advantage.std() + 1e-8)",
           "return advantage / (advantage.std() + 1e-8)", WIRING + ("tests/modules/test_ppo.py",), "dropped"),
    Mutant("gae_truncation_not_cut", "pictura/modules/gae.py", "cut = terminated | truncated | ~next_valid",
           "cut = terminated | ~next_valid", ("tests/modules/test_gae.py",) + WIRING, "dropped"),
    Mutant("ratio_detached", "pictura/modules/ppo.py", "ratio = log_ratio.exp()", "ratio = log_ratio.exp().detach()",
           WIRING + ("tests/modules/test_ppo.py",), "dropped"),
    Mutant("parked_car_strikes_from_behind", "pictura/eval/metrics.py",
           "excused = blameless(ego, other, found & (partner < K), speed.reshape(W, K), min_speed)",
           "excused = blameless(ego, other, found, speed.reshape(W, K), min_speed)",
           SIM_RULES + ("tests/eval/test_metrics.py",), "swap"),
    Mutant("womd_steps", "pictura/maps/womd/selection.py", "WOMD_STEPS = 600", "WOMD_STEPS = 300",
           CONSTANTS + ("tests/eval/test_womd_protocol.py",), "constant"),
    Mutant("near_clip", "pictura/render/camera.py", "near: float = 0.1,", "near: float = 1.0,",
           CONSTANTS + ("tests/render/test_camera.py",) + RENDER, "constant"),
    Mutant("sky_drawn_as_ground", "pictura/render/palette.py", "SKY = (0.55, 0.70, 0.90)", "SKY = (0.26, 0.26, 0.28)",
           RENDER, "table"),
    Mutant("camera_pitch_sign", "pictura/render/cull.py",
           "fwd = wp.vec3(wp.cos(pitch) * wp.cos(yaw), wp.cos(pitch) * wp.sin(yaw), -wp.sin(pitch))",
           "fwd = wp.vec3(wp.cos(pitch) * wp.cos(yaw), wp.cos(pitch) * wp.sin(yaw), wp.sin(pitch))", RENDER, "sign"),
    Mutant("lane_chunk_length", "pictura/maps/roadmap.py", "MAX_LANE_CHUNK_M = 10.0", "MAX_LANE_CHUNK_M = 20.0",
           ("tests/maps/test_procedural.py", "tests/maps/test_womd_features.py"), "constant"),
    Mutant("gpudrive_road_edge_offset", "pictura/maps/womd/gpudrive_json.py", "ROAD_EDGE_ID_OFFSET = 14",
           "ROAD_EDGE_ID_OFFSET = 15", ("tests/maps/test_womd_json.py",), "constant",
           equivalent="the road edge's proto type is parsed but never used: build_road_map keeps only the "
           "points of every road edge, so no RoadMap, Scenario or simulation changes"),
    Mutant("procedural_light_height", "pictura/maps/procedural/town.py", "LIGHT_HEIGHT_M = 5.5", "LIGHT_HEIGHT_M = 4.5",
           ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"), "constant"),
)  # fmt: skip

FRESH_SET: tuple[Mutant, ...] = (
    # ---- a sixth set (2026-12-06), planted before any test was written for it --------------
    Mutant("parked_height_tolerance", "pictura/sim/events.py",
           "if wp.dot(d, d) < reach * reach and wp.abs(q[2] - p[2]) < Z_TOLERANCE_M:",
           "if wp.dot(d, d) < reach * reach and wp.abs(q[2] - p[2]) < 2.0 * Z_TOLERANCE_M:",
           SIM_RULES + ("tests/sim/test_collision.py", "tests/sim/test_parked.py"), "comparison"),
    Mutant("speed_euler_not_trapezoid", "pictura/sim/dynamics.py",
           "v_new = snap_clip(v, v + 0.5 * (a_long_new + a_long) * dt, v_min, v_max)",
           "v_new = snap_clip(v, v + a_long_new * dt, v_min, v_max)", ("tests/sim/test_dynamics.py",), "dropped"),
    Mutant("arc_lateral_sign", "pictura/sim/dynamics.py", "y_new = y + s * dx + c * dy", "y_new = y + s * dx - c * dy",
           ("tests/sim/test_dynamics.py",), "sign"),
    Mutant("comfort_braking_ignored", "pictura/sim/rewards.py", "if wp.abs(a_long) > COMFORT_ACCEL:",
           "if a_long > COMFORT_ACCEL:", SIM_RULES + ("tests/sim/test_rollout.py",), "dropped"),
    Mutant("comfort_lateral_jerk_dropped", "pictura/sim/rewards.py",
           "if wp.abs(state.jerk_long[slot]) > COMFORT_JERK or wp.abs(state.jerk_lat[slot]) > COMFORT_JERK:",
           "if wp.abs(state.jerk_long[slot]) > COMFORT_JERK:", SIM_RULES + ("tests/sim/test_rollout.py",), "dropped"),
    Mutant("segment_direction_lateral_sign", "pictura/envs/observations.py", "out[row, j, 4] = -s * u[0] + c * u[1]",
           "out[row, j, 4] = s * u[0] + c * u[1]", ("tests/envs/test_vectorized_observation.py",), "sign"),
    Mutant("partner_heading_sin_sign", "pictura/envs/observations.py",
           "partners_out[row, j, 5] = wp.sin(h - heading)", "partners_out[row, j, 5] = wp.sin(heading - h)",
           ("tests/envs/test_vectorized_observation.py",), "sign"),
    Mutant("truncated_when_terminated", "pictura/envs/driving.py",
           "truncated = (reset_slot & ~terminated).unsqueeze(-1)", "truncated = reset_slot.unsqueeze(-1)",
           ("tests/envs/test_step_outputs.py", "tests/envs/test_driving_env.py"), "dropped"),
    Mutant("entropy_mean_over_actions", "pictura/modules/ppo.py",
           "entropy = -(log_probs.exp() * log_probs).sum(-1)", "entropy = -(log_probs.exp() * log_probs).mean(-1)",
           WIRING + ("tests/modules/test_ppo.py",), "dropped"),
    Mutant("next_value_not_shifted", "pictura/modules/ppo.py", 'buf["next_value"][:-1] = buf["value"][1:]',
           'buf["next_value"][:-1] = buf["value"][:-1]', ("tests/modules/test_ppo.py",) + WIRING, "swap"),
    Mutant("filter_max_signed", "pictura/modules/ppo.py",
           "max_abs = torch.where(valid, advantage.abs(), torch.zeros_like(advantage)).max()",
           "max_abs = torch.where(valid, advantage, torch.zeros_like(advantage)).max()",
           ("tests/modules/test_ppo.py",) + WIRING, "dropped"),
    Mutant("partner_by_centre_distance", "pictura/eval/metrics.py",
           "gap = torch.sqrt(dx * dx + dy * dy) - radius[:, :K, None] - radius[:, None, :]",
           "gap = torch.sqrt(dx * dx + dy * dy)", SIM_RULES + ("tests/eval/test_metrics.py",), "dropped"),
    Mutant("km_per_infraction_per_episode", "pictura/eval/metrics.py",
           '"km_per_infraction": ("distance_m", "infraction_episodes", 1e-3)',
           '"km_per_infraction": ("distance_m", "episodes", 1e-3)', ("tests/eval/test_metrics.py",), "swap"),
    Mutant("partner_halted_driving_swapped", "pictura/eval/metrics.py",
           "code = torch.where(partner_halted, 0, 1)", "code = torch.where(partner_halted, 1, 0)",
           ("tests/eval/test_metrics.py",), "table"),
    Mutant("camera_ignores_ego_height", "pictura/render/cull.py",
           "agent_box[step, slot, BoxCol.Z] + cam_extr[cam, 2],", "cam_extr[cam, 2],", RENDER, "dropped"),
    Mutant("default_principal_y_by_width", "pictura/render/camera.py", "return 0.5 * self._width, 0.5 * self._height",
           "return 0.5 * self._width, 0.5 * self._width", CONSTANTS + ("tests/render/test_camera.py",), "swap"),
    Mutant("yellow_light_drawn_red", "pictura/render/palette.py", "LIGHT_COLOR[LIGHT_YELLOW] = (1.00, 0.85, 0.10)",
           "LIGHT_COLOR[LIGHT_YELLOW] = (1.00, 0.08, 0.08)", RENDER, "table"),
    Mutant("womd_go_as_yellow", "pictura/maps/womd/features.py", "6: LIGHT_GREEN,  # LANE_STATE_GO",
           "6: LIGHT_YELLOW,  # LANE_STATE_GO", ("tests/maps/test_womd_features.py", "tests/maps/test_womd_json.py"),
           "table"),
    Mutant("opendrive_spiral_heading_half", "pictura/maps/opendrive/geometry.py",
           "np.interp(ds, u, y), k0 * ds + 0.5 * rate * ds**2", "np.interp(ds, u, y), k0 * ds + rate * ds**2",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py"), "dropped"),
    Mutant("procedural_turn_speed", "pictura/maps/procedural/town.py", "TURN_SPEED_LIMIT = 8.3", "TURN_SPEED_LIMIT = 13.9",
           ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"), "constant"),
)  # fmt: skip
"""Twenty bugs planted across the same directories and kinds *before* any test was written for
them, then run as they were (docs/testing.md, "Current result")."""
FRESH_SET_2: tuple[Mutant, ...] = (
    # sim
    Mutant("f2_goal_third_waypoint_any_speed", "pictura/sim/kernels.py",
           "if gi < 2 or model.eval_mode != 0", "if gi < 3 or model.eval_mode != 0",
           ("tests/sim/test_goals.py", "tests/sim/test_rule_thresholds.py"), "comparison"),
    Mutant("f2_lateral_jerk_sign", "pictura/sim/dynamics.py",
           "    if b == 0:\n        j = -4.0\n    elif b == 2:\n        j = 4.0",
           "    if b == 0:\n        j = 4.0\n    elif b == 2:\n        j = -4.0",
           ("tests/sim/test_dynamics.py", "tests/test_paper_constants.py"), "sign"),
    Mutant("f2_red_light_heading_signed", "pictura/sim/events.py",
           "wp.abs(err) < RED_LIGHT_HEADING_RAD", "err < RED_LIGHT_HEADING_RAD",
           ("tests/sim/test_red_light.py", "tests/sim/test_rule_thresholds.py", "tests/sim/test_lights.py"), "dropped"),
    Mutant("f2_velocity_reward_unclamped", "pictura/sim/rewards.py",
           "dt * wp.max(cos_t, 0.0)", "dt * cos_t",
           tuple(f"tests/sim/{n}.py" for n in (
               "test_agent_types", "test_collision", "test_config", "test_determinism", "test_dynamics",
               "test_final_observation", "test_geometry_funcs", "test_goals", "test_lane_funcs", "test_light_modes",
               "test_lights", "test_model_wiring", "test_observations", "test_offroad", "test_packing",
               "test_parked", "test_procedural", "test_red_light", "test_replay", "test_rollout",
               "test_rule_thresholds", "test_spawn", "test_world_rollout", "test_world_spawn")),
           "dropped"),
    # envs
    Mutant("f2_final_view_of_terminated_dropped", "pictura/envs/driving.py",
           "final_active = acting | terminated", "final_active = acting",
           ("tests/envs/test_driving_env.py", "tests/envs/test_final_record.py", "tests/envs/test_step_outputs.py",
            "tests/envs/test_torchrl_semantics.py"), "dropped"),
    Mutant("f2_partner_heading_sin_sign", "pictura/envs/observations.py",
           "partners_out[row, j, 5] = wp.sin(h - heading)", "partners_out[row, j, 5] = wp.sin(heading - h)",
           ("tests/envs/test_vectorized_observation.py", "tests/envs/test_observation_slot_table.py"), "sign"),
    Mutant("f2_stop_line_end_y_field", "pictura/envs/observations.py",
           "traffic_out[row, j, 3] = b[1] / _POS", "traffic_out[row, j, 3] = b[0] / _POS",
           ("tests/envs/test_vectorized_observation.py", "tests/envs/test_observation_slot_table.py"), "swap"),
    # modules
    Mutant("f2_gae_lambda_dropped", "pictura/modules/gae.py",
           "carry = gamma * gae_lambda * (~cut)", "carry = gamma * (~cut)",
           ("tests/modules/test_gae.py", "tests/modules/test_ppo.py"), "dropped"),
    Mutant("f2_surrogate_min_instead_of_max", "pictura/modules/ppo.py",
           "surrogate = torch.maximum(", "surrogate = torch.minimum(",
           ("tests/modules/test_ppo.py", "tests/modules/test_ppo_wiring.py"), "swap"),
    Mutant("f2_filter_keep_signed", "pictura/modules/gae.py",
           "valid & (advantage.abs() >= self.threshold * ema)", "valid & (advantage >= self.threshold * ema)",
           ("tests/modules/test_gae.py", "tests/modules/test_ppo.py", "tests/modules/test_ppo_wiring.py"), "dropped"),
    Mutant("f2_patch_stem_rows_cols_swapped", "pictura/modules/encoders.py",
           ".permute(0, 1, 3, 2, 4, 5)", ".permute(0, 1, 3, 4, 2, 5)",
           ("tests/modules/test_alberti.py", "tests/modules/test_vectorized_policy.py", "tests/modules/test_init.py"),
           "swap"),
    # eval
    Mutant("f2_infraction_counts_any_collision", "pictura/eval/metrics.py",
           "infraction = events[:, 0] | events[:, 2] | events[:, 3]",
           "infraction = events[:, 1] | events[:, 2] | events[:, 3]",
           ("tests/eval/test_metrics.py",), "swap"),
    Mutant("f2_struck_from_behind_front_half", "pictura/eval/metrics.py",
           "(rel_x < -0.5 * ego.length)", "(rel_x < 0.5 * ego.length)",
           ("tests/eval/test_metrics.py", "tests/eval/test_in_domain.py"), "sign"),
    Mutant("f2_at_fault_post_step_speed", "pictura/eval/protocols.py",
           "at_fault = collision_at_fault(collision, prev_speed,", "at_fault = collision_at_fault(collision, wp.to_torch(st.speed),",
           ("tests/eval/test_in_domain.py", "tests/eval/test_metrics.py"), "swap"),
    # render
    Mutant("f2_principal_cy_by_sensor_width", "pictura/render/camera.py",
           "cy * self._height / self.sensor_height", "cy * self._height / self.sensor_width",
           ("tests/render/test_camera.py", "tests/render/test_camera_mount.py", "tests/test_paper_constants.py"), "swap"),
    Mutant("f2_vehicle_front_back_colours_swapped", "pictura/render/palette.py",
           "    (0.55, 0.78, 1.00),  # front: light\n    (0.08, 0.16, 0.50),  # back: dark",
           "    (0.08, 0.16, 0.50),  # front: light\n    (0.55, 0.78, 1.00),  # back: dark",
           ("tests/render/test_view_basics.py", "tests/render/test_rasterizer.py", "tests/render/test_color_pack.py",
            "tests/render/test_coverage.py"), "table"),
    Mutant("f2_camera_pitch_sign", "pictura/render/cull.py",
           "wp.cos(pitch) * wp.sin(yaw), -wp.sin(pitch))", "wp.cos(pitch) * wp.sin(yaw), wp.sin(pitch))",
           ("tests/render/test_camera.py", "tests/render/test_camera_mount.py", "tests/render/test_cull_paths.py",
            "tests/render/test_view_basics.py", "tests/render/test_rasterizer.py"), "sign"),
    # maps
    Mutant("f2_opendrive_arc_y_sign", "pictura/maps/opendrive/geometry.py",
           "g.y - (np.cos(th) - np.cos(g.hdg)) / k", "g.y + (np.cos(th) - np.cos(g.hdg)) / k",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py",
            "tests/maps/test_opendrive_towns.py"), "sign"),
    Mutant("f2_opendrive_width_section_offset_dropped", "pictura/maps/opendrive/lanes.py",
           "w = cubic(s - s0, lane.width_s, lane.width_coef)", "w = cubic(s, lane.width_s, lane.width_coef)",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_towns.py",
            "tests/maps/test_opendrive_tolerance.py"), "dropped"),
    Mutant("f2_womd_speed_limit_kmh", "pictura/maps/womd/features.py",
           "MPH_TO_MPS = 0.44704", "MPH_TO_MPS = 0.27778",
           ("tests/maps/test_womd_features.py", "tests/maps/test_womd_json.py", "tests/maps/test_womd_protobuf.py"),
           "constant"),
)  # fmt: skip
"""A second set of twenty, planted across the same directories and kinds by an engineer who had
not read the tests, then run as it was (docs/testing.md, "Current result")."""
MUTANTS = MUTANTS + FRESH_SET + FRESH_SET_2

SIM_STEP = ("tests/sim/test_rule_thresholds.py", "tests/sim/test_observations.py", "tests/sim/test_rollout.py",
            "tests/sim/test_world_rollout.py")
OBS = ("tests/envs/test_vectorized_observation.py", "tests/envs/test_observation_slot_table.py",
       "tests/envs/test_driving_env.py", "tests/sim/test_observations.py")

EXPLORE_SET: tuple[Mutant, ...] = (
    # ---- a seventh set (2026-12-06), 25 planted before any test was written for it -----------
    Mutant("lane_offset_sign", "pictura/sim/lanes.py",
           "offset = -(u[0] * (p[1] - a[1]) - u[1] * (p[0] - a[0]))",
           "offset = u[0] * (p[1] - a[1]) - u[1] * (p[0] - a[0])", SIM_STEP, "sign"),
    Mutant("light_offset_one_turn", "pictura/sim/spawn.py",
           "period = float(wp.max(groups, 1)) * (green + yellow + red)", "period = green + yellow + red",
           ("tests/sim/test_lights.py", "tests/sim/test_light_modes.py", "tests/sim/test_world_spawn.py"), "dropped"),
    Mutant("spawn_on_yellow_stop_line", "pictura/sim/spawn.py", "if st == _RED or st == _YELLOW:", "if st == _RED:",
           ("tests/sim/test_spawn.py", "tests/sim/test_world_spawn.py", "tests/sim/test_lights.py"), "dropped"),
    Mutant("arc_length_euler", "pictura/sim/dynamics.py", "d = 0.5 * (v_new + v) * dt", "d = v_new * dt",
           ("tests/sim/test_dynamics.py",) + SIM_STEP, "dropped"),
    Mutant("goal_obs_lateral_sign", "pictura/sim/kernels.py",
           "goals_out[slot, 2 * k + 1] = (-s * dx + c * dy) / 600.0",
           "goals_out[slot, 2 * k + 1] = (s * dx + c * dy) / 600.0", SIM_STEP + ("tests/sim/test_goals.py",), "sign"),
    Mutant("drivable_margin", "pictura/sim/events.py", "DRIVABLE_MARGIN_LANE_WIDTHS = 0.5",
           "DRIVABLE_MARGIN_LANE_WIDTHS = 1.0", CONSTANTS + SIM_RULES + ("tests/sim/test_offroad.py",), "constant"),
    Mutant("vel_align_speed_dropped", "pictura/sim/rewards.py", "wp.min(v * cos_t, 0.0)", "wp.min(cos_t, 0.0)",
           SIM_RULES + ("tests/envs/test_step_outputs.py",), "dropped"),
    Mutant("point_in_box_width_by_length", "pictura/sim/geometry.py",
           "wp.abs(-s * d[0] + c * d[1]) < half_width", "wp.abs(-s * d[0] + c * d[1]) < half_length",
           ("tests/sim/test_geometry_funcs.py", "tests/sim/test_collision.py", "tests/sim/test_offroad.py") + SIM_RULES,
           "swap"),
    Mutant("segment_full_length", "pictura/envs/observations.py", "out[row, j, 2] = half / _LEN",
           "out[row, j, 2] = 2.0 * half / _LEN", OBS, "dropped"),
    Mutant("partner_width_by_length_scale", "pictura/envs/observations.py", "partners_out[row, j, 3] = width / _WID",
           "partners_out[row, j, 3] = width / _LEN", OBS, "swap"),
    Mutant("traffic_end_x_from_start", "pictura/envs/observations.py", "traffic_out[row, j, 2] = b[0] / _POS",
           "traffic_out[row, j, 2] = a[0] / _POS", OBS, "swap"),
    Mutant("final_obs_drops_terminated", "pictura/envs/driving.py", "final_active = acting | terminated",
           "final_active = acting", ("tests/envs/test_final_record.py", "tests/sim/test_final_observation.py",
           "tests/envs/test_driving_env.py", "tests/envs/test_step_outputs.py"), "dropped"),
    Mutant("cosine_past_total", "pictura/modules/ppo.py", "math.cos(math.pi * min(iteration, total) / total)",
           "math.cos(math.pi * iteration / total)",
           CONSTANTS + ("tests/modules/test_encoder_inputs.py", "tests/modules/test_ppo.py") + WIRING, "dropped"),
    Mutant("final_record_index_swapped", "pictura/modules/ppo.py",
           "observation_from_record(final, padded // S, padded % S)",
           "observation_from_record(final, padded % S, padded // S)",
           ("tests/modules/test_ppo.py", "tests/modules/test_real_env.py") + WIRING, "swap"),
    Mutant("return_norm_not_centred", "pictura/modules/gae.py", "return (x - self.mean) / self.std()",
           "return x / self.std()", ("tests/modules/test_gae.py", "tests/modules/test_ppo.py"), "dropped"),
    Mutant("pixels_not_scaled", "pictura/modules/encoders.py", ".float().div_(255.0)", ".float()",
           ("tests/modules/test_encoder_inputs.py", "tests/modules/test_init.py", "tests/modules/test_alberti.py", "tests/modules/test_ppo.py"), "dropped"),
    Mutant("infraction_by_any_collision", "pictura/eval/metrics.py",
           "infraction = events[:, 0] | events[:, 2] | events[:, 3]",
           "infraction = events[:, 1] | events[:, 2] | events[:, 3]", ("tests/eval/test_metrics.py", "tests/eval/test_metrics_stream.py"), "swap"),
    Mutant("red_light_counter_index", "pictura/eval/metrics.py", "rows[:, C_RED_LIGHT] = flags[:, 3]",
           "rows[:, C_RED_LIGHT] = flags[:, 2]", ("tests/eval/test_metrics.py", "tests/eval/test_metrics_stream.py"), "swap"),
    Mutant("standard_error_without_bessel", "pictura/eval/metrics.py",
           "return math.sqrt(spread / (k * (k - 1.0))) / (b / k)", "return math.sqrt(spread / (k * k)) / (b / k)",
           ("tests/eval/test_metrics.py", "tests/eval/test_metrics_stream.py", "tests/eval/test_report.py"), "dropped"),
    Mutant("cyclist_side_faces_swapped", "pictura/render/palette.py",
           "(0.22, 0.80, 0.28),\n    (0.30, 0.62, 0.45),", "(0.30, 0.62, 0.45),\n    (0.22, 0.80, 0.28),",
           CONSTANTS + RENDER, "table"),
    Mutant("depth_shade_floor_dropped", "pictura/render/common.py", "_SHADE_MIN + (1.0 - _SHADE_MIN) * wp.exp(",
           "_SHADE_MIN + wp.exp(", CONSTANTS + RENDER, "dropped"),
    Mutant("light_visibility_unnormalised", "pictura/render/common.py",
           "c = (gx * wp.cos(heading) + gy * wp.sin(heading)) / g", "c = gx * wp.cos(heading) + gy * wp.sin(heading)",
           RENDER + ("tests/render/test_cull_paths.py",), "dropped"),
    Mutant("opendrive_width_absolute_s", "pictura/maps/opendrive/lanes.py",
           "w = cubic(s - s0, lane.width_s, lane.width_coef)", "w = cubic(s, lane.width_s, lane.width_coef)",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py",
            "tests/maps/test_opendrive_towns.py"), "dropped"),
    Mutant("opendrive_kmh_inverted", "pictura/maps/opendrive/reader.py", '"km/h": 1.0 / 3.6,', '"km/h": 3.6,',
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_errors.py",
            "tests/maps/test_opendrive_towns.py"), "constant"),
    Mutant("womd_yellow_line_types", "pictura/maps/womd/features.py",
           "ROAD_LINE_YELLOW_TYPES = frozenset({4, 5, 6, 7, 8})", "ROAD_LINE_YELLOW_TYPES = frozenset({5, 6, 7, 8})",
           ("tests/maps/test_womd_features.py", "tests/maps/test_womd_json.py"), "table"),
)  # fmt: skip
"""Twenty-five bugs planted across the six directories *before* any test was written for them,
then run as they were (docs/testing.md, "Current result")."""
MUTANTS = MUTANTS + EXPLORE_SET

GAP_SET: tuple[Mutant, ...] = (
    # ---- written after the explore set, to look for unpinned families beyond its survivors -----
    Mutant("edge_margin", "pictura/sim/spawn.py", "SPAWN_EDGE_MARGIN = 1.1", "SPAWN_EDGE_MARGIN = 1.0",
           ("tests/test_paper_constants.py", "tests/sim/test_spawn.py", "tests/sim/test_world_spawn.py", "tests/sim/test_agent_types.py"), "constant"),
    Mutant("ped_flip", "pictura/sim/spawn.py", "                if wp.randf(r) < 0.5:\n                    heading = heading + wp.pi", "                if wp.randf(r) < 0.1:\n                    heading = heading + wp.pi",
           ("tests/sim/test_spawn.py", "tests/sim/test_world_spawn.py", "tests/sim/test_agent_types.py"), "constant"),
    Mutant("width_le_length", "pictura/sim/spawn.py", "width = wp.min(wp.randf(rng, wlo, wp.max(wlo, wp.min(whi, length))), length)", "width = wp.randf(rng, wlo, whi)",
           ("tests/test_paper_constants.py", "tests/sim/test_spawn.py", "tests/sim/test_world_spawn.py", "tests/sim/test_agent_types.py"), "dropped"),
    Mutant("ego_aux_cos", "pictura/sim/kernels.py", "ego_aux_out[slot, 1] = wp.cos(state.lane_heading_error[slot])", "ego_aux_out[slot, 1] = wp.sin(state.lane_heading_error[slot])",
           ("tests/test_paper_constants.py", "tests/sim/test_observations.py", "tests/envs/test_vectorized_observation.py"), "swap"),
    Mutant("ego_accel_scale", "pictura/sim/kernels.py", "ego_out[slot, 4] = state.accel_long[slot] / 5.0", "ego_out[slot, 4] = state.accel_long[slot] / 2.5",
           ("tests/test_paper_constants.py", "tests/sim/test_observations.py"), "constant"),
    Mutant("sweep_substeps", "pictura/sim/geometry.py", "SWEEP_SUBSTEPS = 4", "SWEEP_SUBSTEPS = 2",
           ("tests/sim/test_geometry_funcs.py", "tests/sim/test_offroad.py", "tests/sim/test_rule_thresholds.py"), "constant"),
    Mutant("partner_dist_scale", "pictura/envs/observations.py", "partners_out[row, j, 6] = scratch_dist[j, row] / _POS", "partners_out[row, j, 6] = scratch_dist[j, row] / _LEN",
           ("tests/envs/test_vectorized_observation.py", "tests/envs/test_observation_slot_table.py", "tests/sim/test_observations.py", "tests/envs/test_driving_env.py"), "swap"),
    Mutant("width_scale", "pictura/envs/observations.py", "WIDTH_SCALE_M = 5.0", "WIDTH_SCALE_M = 4.0",
           ("tests/test_paper_constants.py", "tests/envs/test_vectorized_observation.py", "tests/envs/test_observation_slot_table.py", "tests/sim/test_observations.py", "tests/envs/test_driving_env.py"), "constant"),
    Mutant("adv_eps", "pictura/modules/ppo.py", "return (advantage - advantage.mean()) / (advantage.std() + 1e-8)", "return (advantage - advantage.mean()) / (advantage.std() + 1e-2)",
           ("tests/modules/test_ppo.py", "tests/modules/test_ppo_wiring.py"), "constant"),
    Mutant("far", "pictura/render/camera.py", "far: float = 120.0,", "far: float = 100.0,",
           ("tests/test_paper_constants.py", "tests/render/test_camera_mount.py", "tests/render/test_view_basics.py", "tests/render/test_rasterizer.py", "tests/render/test_render_funcs.py"), "constant"),
    Mutant("far_fade", "pictura/render/common.py", "_FAR_FADE = wp.constant(0.15)", "_FAR_FADE = wp.constant(0.3)",
           ("tests/render/test_camera_mount.py", "tests/render/test_view_basics.py", "tests/render/test_rasterizer.py", "tests/render/test_render_funcs.py"), "constant"),
    Mutant("opendrive_wall_height", "pictura/maps/opendrive/build.py", "WALL_HEIGHT_M = 6.0", "WALL_HEIGHT_M = 3.0",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py", "tests/maps/test_opendrive_towns.py"), "constant"),
    Mutant("parking_spacing", "pictura/maps/opendrive/build.py", "PARKING_SPACING_M = 6.0", "PARKING_SPACING_M = 5.0",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py", "tests/maps/test_opendrive_towns.py"), "constant"),
    Mutant("curb_radius", "pictura/maps/procedural/town.py", "CURB_RADIUS_M = 5.0", "CURB_RADIUS_M = 4.0",
           ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"), "constant"),
    Mutant("verge", "pictura/maps/procedural/town.py", "VERGE_M = 2.5", "VERGE_M = 2.0",
           ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"), "constant"),
    Mutant("spot_length", "pictura/maps/procedural/town.py", "PARKING_SPOT_LENGTH_M = 6.0", "PARKING_SPOT_LENGTH_M = 5.0",
           ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"), "constant"),
    Mutant("pedestrian_size", "pictura/eval/probes.py", "PEDESTRIAN_SIZE = (0.6, 0.6, 1.75)", "PEDESTRIAN_SIZE = (0.6, 0.6, 1.5)",
           ("tests/eval/test_eval_settings.py", "tests/eval/test_probes.py"), "constant"),
    Mutant("takeover_step", "pictura/eval/takeover.py", "STEP_S = 0.1", "STEP_S = 0.2",
           ("tests/eval/test_eval_settings.py", "tests/eval/test_takeover.py"), "constant"),
    Mutant("goal_spacing", "pictura/sim/lanes.py", "step = wp.randf(state, model.goal_spacing_lo, model.goal_spacing_hi)", "step = wp.randf(state, model.goal_spacing_lo, model.goal_spacing_lo)",
           ("tests/sim/test_goals.py",), "dropped"),
    Mutant("light_radius", "pictura/render/palette.py", "LIGHT_RADIUS_M = 0.40", "LIGHT_RADIUS_M = 0.30",
           ("tests/render/test_camera_mount.py", "tests/render/test_view_basics.py", "tests/render/test_rasterizer.py", "tests/render/test_render_funcs.py"), "constant"),
    Mutant("norm_coef_range", "pictura/sim/kernels.py", "out = 2.0 * (value - lo) / (hi - lo) - 1.0", "out = (value - lo) / (hi - lo)",
           ("tests/sim/test_observations.py", "tests/sim/test_config.py", "tests/test_paper_constants.py"), "dropped"),
    Mutant("norm_umix_low", "pictura/sim/kernels.py", "out = (value - 1.0) / (1.0 - lo)", "out = (value - lo) / (1.0 - lo)",
           ("tests/sim/test_observations.py", "tests/sim/test_config.py", "tests/test_paper_constants.py"), "swap"),
    Mutant("early_reset_strict", "pictura/sim/kernels.py", "float(n_halted) >= model.early_reset_halted_fraction * float(n_valid)", "float(n_halted) > model.early_reset_halted_fraction * float(n_valid)",
           ("tests/sim/test_rule_thresholds.py", "tests/sim/test_rollout.py", "tests/sim/test_world_rollout.py", "tests/envs/test_step_outputs.py"), "comparison"),
    Mutant("takeover_left_sign", "pictura/eval/takeover.py", "-math.sin(yaw) * d[:, 0] + math.cos(yaw) * d[:, 1],  # left", "math.sin(yaw) * d[:, 0] + math.cos(yaw) * d[:, 1],  # left",
           ("tests/eval/test_takeover.py",), "sign"),
    Mutant("processed_epochs", "pictura/modules/ppo.py", "processed = max(float(keep.sum()) * h.update_epochs, 1.0)", "processed = max(float(keep.sum()), 1.0)",
           ("tests/modules/test_ppo.py", "tests/modules/test_ppo_wiring.py"), "dropped"),
    Mutant("clip_fraction_abs", "pictura/modules/ppo.py", '"clip_fraction": mean(((ratio - 1).abs() > clip_coef)', '"clip_fraction": mean(((ratio - 1) > clip_coef)',
           ("tests/modules/test_ppo.py", "tests/modules/test_ppo_wiring.py"), "dropped"),
    Mutant("wall_offset", "pictura/maps/opendrive/build.py", "WALL_OFFSET_NO_SIDEWALK_M = 3.0", "WALL_OFFSET_NO_SIDEWALK_M = 2.0",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py", "tests/maps/test_opendrive_towns.py"), "constant"),
    Mutant("light_match", "pictura/maps/opendrive/build.py", "LIGHT_MATCH_RADIUS_M = 50.0", "LIGHT_MATCH_RADIUS_M = 20.0",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py", "tests/maps/test_opendrive_towns.py", "tests/sim/test_light_modes.py"), "constant"),
    Mutant("parking_taper", "pictura/maps/procedural/town.py", "PARKING_TAPER_M = 2.0", "PARKING_TAPER_M = 1.0",
           ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"), "constant"),
    Mutant("segment_last", "pictura/envs/observations.py", "out[row, j, 5] = last", "out[row, j, 5] = 1.0 - last",
           ("tests/envs/test_vectorized_observation.py", "tests/envs/test_observation_slot_table.py", "tests/sim/test_observations.py", "tests/envs/test_driving_env.py"), "sign"),
    Mutant("metrics_radius", "pictura/eval/metrics.py", "return 0.5 * torch.sqrt(view.length * view.length + view.width * view.width)",
           "return 0.5 * (view.length + view.width)",
           ("tests/eval/test_metrics.py", "tests/eval/test_metrics_stream.py"), "dropped"),
    Mutant("ema_first", "pictura/modules/gae.py", "return torch.where(initialised, (1 - coef) * running + coef * value, value)", "return (1 - coef) * running + coef * value",
           ("tests/modules/test_gae.py", "tests/modules/test_ppo.py", "tests/modules/test_ppo_wiring.py"), "dropped"),
    Mutant("curb_gap", "pictura/sim/spawn.py", "PARKED_CURB_GAP = 0.1", "PARKED_CURB_GAP = 0.3",
           ("tests/sim/test_parked.py", "tests/sim/test_spawn.py", "tests/sim/test_world_spawn.py"), "constant"),
    Mutant("lanes_get_boundaries", "pictura/modules/vectorized.py", "self.lanes(lanes, lanes_mask),", "self.lanes(boundaries, boundaries_mask),",
           ("tests/modules/test_vectorized_policy.py", "tests/modules/test_init.py", "tests/modules/test_ppo.py"), "swap"),
    Mutant("gains_dropped", "pictura/modules/vectorized.py", 'x if self.gains[key] == 1.0 else x * getattr(self, f"{key}_scale")', "x",
           ("tests/modules/test_vectorized_policy.py", "tests/modules/test_init.py", "tests/modules/test_ppo.py"), "dropped"),
    Mutant("gumbel_sign", "pictura/modules/ppo.py", "action = (logits.float() - torch.log(-torch.log(uniform))).argmax(-1)", "action = (logits.float() + torch.log(-torch.log(uniform))).argmax(-1)",
           ("tests/modules/test_ppo.py", "tests/modules/test_ppo_wiring.py"), "sign"),
    Mutant("gpudrive_stop_caution", "pictura/maps/womd/gpudrive_json.py", '    "stop": 4,\n    "caution": 5,', '    "stop": 5,\n    "caution": 4,',
           ("tests/maps/test_womd_json.py", "tests/maps/test_womd_features.py"), "table"),
    Mutant("geojson_marking_names", "pictura/maps/geojson.py", 'MARKING_NAMES = {MARKING_LANE_DIVIDER: "lane_divider", MARKING_CENTRE_LINE: "centre_line"}', 'MARKING_NAMES = {MARKING_LANE_DIVIDER: "centre_line", MARKING_CENTRE_LINE: "lane_divider"}',
           ("tests/maps/test_geojson.py", "tests/tools/test_map_info.py", "tests/maps/test_procedural.py"), "table"),
    Mutant("gpudrive_types", "pictura/maps/womd/gpudrive_json.py", '"pedestrian": AGENT_PEDESTRIAN, "cyclist": AGENT_CYCLIST', '"pedestrian": AGENT_CYCLIST, "cyclist": AGENT_PEDESTRIAN',
           ("tests/maps/test_womd_json.py",), "table"),
    Mutant("mph", "pictura/maps/opendrive/reader.py", '"mph": 0.44704,', '"mph": 1.609,',
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py", "tests/maps/test_opendrive_towns.py"), "constant"),
    Mutant("dash", "pictura/maps/procedural/geometry.py", "DASH_ON_M, DASH_OFF_M = 3.0, 5.0", "DASH_ON_M, DASH_OFF_M = 5.0, 3.0",
           ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"), "table"),
    Mutant("multilane_speed", "pictura/maps/procedural/builder.py", "speed = self.speed_limit * (1.0 + 0.2 * (n - 1))", "speed = self.speed_limit * (1.0 + 0.1 * (n - 1))",
           ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"), "constant"),
    Mutant("procedural_wall_height", "pictura/maps/procedural/builder.py", "self.wall_height.append(float(rng.uniform(4.0, 10.0)))", "self.wall_height.append(float(rng.uniform(4.0, 6.0)))",
           ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"), "constant"),
    Mutant("wall_pieces", "pictura/maps/procedural/builder.py", "n = max(1, int(round(side / rng.uniform(8.0, 20.0))))", "n = max(1, int(round(side / rng.uniform(8.0, 40.0))))",
           ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"), "constant"),
    Mutant("wall_setback", "pictura/maps/procedural/town.py", "WALL_SETBACK_M = VERGE_M + SIDEWALK_WIDTH_M + 0.5", "WALL_SETBACK_M = VERGE_M + SIDEWALK_WIDTH_M",
           ("tests/maps/test_procedural.py", "tests/maps/test_procedural_features.py"), "dropped"),
    Mutant("line_sampling", "pictura/maps/opendrive/geometry.py", "step = 1.0 if k < 1e-6 else", "step = 2.0 if k < 1e-6 else",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py", "tests/maps/test_opendrive_towns.py", "tests/maps/test_opendrive_tolerance.py"), "constant"),
    Mutant("sag_factor", "pictura/maps/opendrive/geometry.py", "np.sqrt(8 * chord_sag_m / k)", "np.sqrt(32 * chord_sag_m / k)",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py", "tests/maps/test_opendrive_towns.py", "tests/maps/test_opendrive_tolerance.py"), "constant"),
    Mutant("simplify", "pictura/maps/opendrive/build.py", "SIMPLIFY_TOLERANCE_M = 0.01", "SIMPLIFY_TOLERANCE_M = 0.1",
           ("tests/maps/test_opendrive_geometry.py", "tests/maps/test_opendrive_junction.py", "tests/maps/test_opendrive_towns.py", "tests/maps/test_opendrive_tolerance.py"), "constant"),
    Mutant("edges_as_dividers", "pictura/render/scene.py", "kinds.append(np.full(len(eseg), LINE_ROAD_EDGE, np.int32))", "kinds.append(np.full(len(eseg), LINE_LANE_DIVIDER, np.int32))",
           ("tests/render/test_camera_mount.py", "tests/render/test_view_basics.py", "tests/render/test_rasterizer.py", "tests/render/test_render_funcs.py"), "table"),
    Mutant("stop_as_edge", "pictura/render/scene.py", "kinds.append(np.full(len(sseg), LINE_STOP_LINE, np.int32))", "kinds.append(np.full(len(sseg), LINE_ROAD_EDGE, np.int32))",
           ("tests/render/test_camera_mount.py", "tests/render/test_view_basics.py", "tests/render/test_rasterizer.py", "tests/render/test_render_funcs.py"), "table"),
    Mutant("marking_to_line", "pictura/render/palette.py", "MARKING_TO_LINE = {MARKING_LANE_DIVIDER: LINE_LANE_DIVIDER, MARKING_CENTRE_LINE: LINE_CENTRE_LINE}", "MARKING_TO_LINE = {MARKING_LANE_DIVIDER: LINE_CENTRE_LINE, MARKING_CENTRE_LINE: LINE_LANE_DIVIDER}",
           ("tests/render/test_camera_mount.py", "tests/render/test_view_basics.py", "tests/render/test_rasterizer.py", "tests/render/test_render_funcs.py"), "table"),
    Mutant("replay_next_step", "pictura/sim/replay.py", "    t = state_in.world_step[w] + 1\n    tr = model.slot_track[slot]", "    t = state_in.world_step[w]\n    tr = model.slot_track[slot]",
           ("tests/sim/test_replay.py", "tests/envs/test_replay_env.py", "tests/eval/test_womd_rollout.py"), "swap"),
    Mutant("replay_width_height", "pictura/sim/replay.py", "        state_out.width[slot] = size[1]\n        state_out.height[slot] = size[2]", "        state_out.width[slot] = size[2]\n        state_out.height[slot] = size[1]",
           ("tests/sim/test_replay.py", "tests/envs/test_replay_env.py", "tests/eval/test_womd_rollout.py"), "swap"),
    Mutant("replay_distance", "pictura/sim/replay.py", "state_out.distance[slot] = state_in.distance[slot] + wp.length(pos - state_in.pos[slot])", "state_out.distance[slot] = wp.length(pos - state_in.pos[slot])",
           ("tests/sim/test_replay.py", "tests/envs/test_replay_env.py", "tests/eval/test_womd_rollout.py"), "dropped"),
)  # fmt: skip
"""Mutants written after `EXPLORE_SET`'s tests, by reading the code for families no test pinned
(docs/testing.md, "Current result"); each survivor got a test. They measure the suite against
what it has seen, not a fresh set."""
MUTANTS = MUTANTS + GAP_SET


def _data_root() -> str | None:
    if os.environ.get("PICTURA_DATA"):
        return os.environ["PICTURA_DATA"]
    beside = REPO.parent / "shared" / "data"
    return str(beside) if beside.is_dir() else None


def _private_warp_cache(root: Path) -> Path | None:
    """A kernel cache for the mutants: links to every entry of the shared cache (so unmutated
    modules load compiled), into which mutated modules compile (so the shared one gains nothing)."""
    try:
        import warp as wp

        shared = Path(os.environ.get("WARP_CACHE_PATH") or wp.config.kernel_cache_dir or "")
    except Exception:  # warp missing or not yet initialised: let it use its default
        return None
    if not shared.is_dir():
        candidates = sorted((Path.home() / ".cache" / "warp").glob("*"))
        if not candidates:
            return None
        shared = candidates[-1]
    private = root / "warp-cache"
    private.mkdir()
    for entry in shared.iterdir():
        (private / entry.name).symlink_to(entry)
    return private


def _run_tests(copy: Path, tests: tuple[str, ...], timeout: float, env: dict) -> tuple[str, float, str]:
    """-> (outcome 'killed' | 'survived' | 'timeout' | 'error', seconds, last output lines)."""
    start = time.perf_counter()
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", *tests]
    try:
        done = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - start, ""
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
    outcome = {0: "survived", 1: "killed"}.get(done.returncode, "error")
    return outcome, time.perf_counter() - start, tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutants")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per mutant's tests (default 900)")
    parser.add_argument("--baseline", action="store_true", help="first run every listed test file unmutated")
    parser.add_argument("--json", type=Path, help="write the results as JSON lines here")
    parser.add_argument(
        "--without", nargs="+", default=(), metavar="TEST_FILE",
        help="leave these test files out of every mutant's list (e.g. tests/test_paper_constants.py, "
        "to see what the behaviour tests alone catch); a mutant left with none is not run",
    )  # fmt: skip
    args = parser.parse_args(argv)

    mutants = MUTANTS
    if args.only:
        unknown = set(args.only) - {m.name for m in MUTANTS}
        if unknown:
            parser.error(f"--only: unknown mutant(s) {sorted(unknown)}")
        mutants = tuple(m for m in MUTANTS if m.name in args.only)
    if args.without:
        dropped = set(args.without)
        mutants = tuple(
            dataclasses.replace(m, tests=tuple(t for t in m.tests if t not in dropped)) for m in mutants
        )
        mutants = tuple(m for m in mutants if m.tests)
    if args.list:
        for m in mutants:
            print(f"{m.name:34s} {m.kind:10s} {m.path}: {m.old!r} -> {m.new!r}")
        return 0
    twice = sorted({m.name for m in MUTANTS if sum(n.name == m.name for n in MUTANTS) > 1})
    if twice:
        raise SystemExit(f"mutant names must be unique (--only picks by name): {twice}")
    # a mutant whose text moved would silently test nothing: check them all before running any
    for m in mutants:
        count = (REPO / m.path).read_text().count(m.old)
        if count != 1:
            raise SystemExit(f"mutant {m.name}: {m.old!r} occurs {count} times in {m.path} (must be once)")
        for test in m.tests:
            if not (REPO / test).is_file():
                raise SystemExit(f"mutant {m.name}: test file {test} does not exist")

    with tempfile.TemporaryDirectory(prefix="pictura-mutation-") as tmp:
        root = Path(tmp)
        copy = root / "repo"
        copy.mkdir()
        for item in COPIED:
            source = REPO / item
            if source.is_dir():
                shutil.copytree(source, copy / item, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(source, copy / item)
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)  # the copy (the working directory) must shadow the checkout
        data = _data_root()
        if data:
            env["PICTURA_DATA"] = data
        where = subprocess.run(
            [sys.executable, "-c", "import pictura; print(pictura.__file__)"],
            cwd=copy, env=env, capture_output=True, text=True, check=True,
        ).stdout.strip()
        if not Path(where).is_relative_to(copy):
            raise SystemExit(f"the copy does not shadow the installed package: pictura is {where}")
        cache = _private_warp_cache(root)
        if cache is not None:
            env["WARP_CACHE_PATH"] = str(cache)

        if args.baseline:
            files = tuple(sorted({t for m in mutants for t in m.tests}))
            outcome, seconds, tail = _run_tests(copy, files, args.timeout * 4, env)
            print(f"baseline ({len(files)} files): {outcome} in {seconds:.0f} s", flush=True)
            if outcome != "survived":
                print(tail)
                return 2

        results = []
        for i, m in enumerate(mutants, 1):
            target = copy / m.path
            original = target.read_text()
            target.write_text(original.replace(m.old, m.new))
            try:
                outcome, seconds, tail = _run_tests(copy, m.tests, args.timeout, env)
            finally:
                target.write_text(original)
            results.append({"name": m.name, "path": m.path, "kind": m.kind, "outcome": outcome,
                            "seconds": round(seconds, 1), "equivalent": m.equivalent})  # fmt: skip
            print(f"[{i}/{len(mutants)}] {outcome.upper():8s} {m.name} ({m.path}, {seconds:.0f} s)", flush=True)
            if outcome == "error":
                print("    " + tail.replace("\n", "\n    "), flush=True)

    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in results))
    killed = [r for r in results if r["outcome"] in ("killed", "timeout")]
    survivors = [r for r in results if r["outcome"] == "survived"]
    errors = [r for r in results if r["outcome"] == "error"]
    scored = len(killed) + len(survivors)
    rate = len(killed) / scored if scored else float("nan")
    print(f"\nkill rate: {len(killed)}/{scored} = {100 * rate:.1f} % ({len(errors)} mutant(s) could not run)")
    unexplained = 0
    for r in survivors:
        if r["equivalent"]:
            print(f"  survived {r['name']} ({r['path']}): equivalent: {r['equivalent']}")
        else:
            unexplained += 1
            print(f"  survived {r['name']} ({r['path']}): NOT EXPLAINED, a gap in the tests")
    for r in errors:
        print(f"  error    {r['name']} ({r['path']}): pytest could not run (see above)")
    return 1 if unexplained or errors else 0


if __name__ == "__main__":
    sys.exit(main())
