"""Observation features and reward terms against NumPy transcriptions of REFERENCE.md."""

from __future__ import annotations

import numpy as np

from pictura.sim import CONDITIONING_TABLE, EVENTS, REWARD_TERMS, reset, step
from pictura.sim.features import CONDITIONING_WIDTH, EGO_AUX_WIDTH, EGO_WIDTH, GOAL_FEATURES, NUM_COEFFICIENTS

from .conftest import loop_map, make_world, vehicle_config


def _np_conditioning(raw: np.ndarray) -> np.ndarray:
    out = np.zeros_like(raw, dtype=np.float64)
    for c, coef in enumerate(CONDITIONING_TABLE):
        v = raw[:, c].astype(np.float64)
        if coef.kind == "uniform":
            out[:, c] = 2 * (v - coef.low) / (coef.high - coef.low) - 1
        elif coef.kind == "umix":
            out[:, c] = np.where(v >= 1, (v - 1) / (coef.high - 1), (v - 1) / (1 - coef.low))
    out[:, NUM_COEFFICIENTS:] = raw[:, NUM_COEFFICIENTS:]
    return out


def _np_rewards(st: dict) -> np.ndarray:
    c = {coef.name: st["conditioning"][:, i].astype(np.float64) for i, coef in enumerate(CONDITIONING_TABLE)}
    v = st["speed"].astype(np.float64)
    al, at = st["accel_long"], st["accel_lat"]
    on_lane = st["lane"] >= 0
    th = st["lane_heading_error"].astype(np.float64)
    d = np.abs(st["lane_offset"] - c["alpha_center_bias"])
    ev = st["events"]
    dt = 0.1
    limit = np.full(len(v), 15.0)  # the loop map's limit is 13.9 m/s
    limit[on_lane] = 13.9
    terms = {
        "goal": ev[:, EVENTS.index("goal")] * 1.0,
        "collision": -(c["alpha_collision"] + 0.1 * np.abs(v)) * ev[:, EVENTS.index("collision")],
        "offroad": -c["alpha_offroad"] * ev[:, EVENTS.index("offroad")],
        "red_light": -c["alpha_stop_line"] * ev[:, EVENTS.index("red_light")],
        "comfort": -c["alpha_comfort"]
        * (
            (np.abs(al) > 3) * 1.0
            + (np.abs(at) > 3)
            + ((np.abs(st["jerk_long"]) > 5) | (np.abs(st["jerk_lat"]) > 5))
        ),
        "lane_align": on_lane
        * c["alpha_lane_align"]
        * dt
        * (
            np.minimum(np.cos(th), 0)
            + c["alpha_vel_align"] * np.minimum(v * np.cos(th), 0)
            + 0.0025 * (1 - 2 * np.abs(th) / np.pi)
        ),
        "lane_center": -1.0
        * on_lane
        * c["alpha_lane_center"]
        * dt
        * ((np.cos(th) > 0.5) * d - 0.05 * np.exp(-(d - 0.5))),
        "velocity": on_lane * c["alpha_velocity"] * dt * np.maximum(np.cos(th), 0) * (v > 2.5),
        "overspeed": -c["alpha_overspeed"] * (v > limit + 2),
        "reverse": -c["alpha_reverse"] * dt * (v < 0),
        "timestep": -c["alpha_timestep"] * dt * ((v != 0) | (al != 0) | (at != 0)),
    }
    return np.stack([terms[name] for name in REWARD_TERMS], 1)


def test_observations_and_rewards_match_reference():
    road = loop_map()
    cfg = vehicle_config(agents_per_world=(10, 20), episode_length=10_000)
    model, s0, s1, ctl = make_world([road], [0, 0], 20, cfg)
    reset(model, s0, 4)
    rng = np.random.default_rng(1)
    checked = 0
    for t in range(120):
        ctl.action.assign(rng.integers(0, 12, model.num_slots).astype(np.int32))
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        if t % 20:
            continue
        st = s0.numpy()
        v = st["valid"] == 1
        assert st["obs_ego"].shape[1] == EGO_WIDTH and st["obs_ego_aux"].shape[1] == EGO_AUX_WIDTH
        assert (
            st["obs_goals"].shape[1] == GOAL_FEATURES
            and st["obs_conditioning"].shape[1] == CONDITIONING_WIDTH
        )
        limit = np.where(st["lane"] >= 0, 13.9, 15.0)
        ego = np.stack(
            [
                st["speed"] / 40,
                st["length"] / 10,
                st["width"] / 5,
                st["steering"] / 0.55,
                st["accel_long"] / 5,
                st["accel_lat"] / 4,
                limit / 40,
            ],
            1,
        )
        np.testing.assert_allclose(st["obs_ego"][v], ego[v], atol=1e-6)
        aux = np.stack([np.clip(st["lane_offset"] / 4, -1, 1), np.cos(st["lane_heading_error"])], 1)
        aux[st["lane"] < 0] = 0
        np.testing.assert_allclose(st["obs_ego_aux"][v], aux[v], atol=1e-6)
        h = st["heading"].astype(np.float64)
        for k in range(3):
            idx = np.minimum(st["goal_index"] + k, 2)
            g = st["goal"][np.arange(len(h)), idx].astype(np.float64)
            dx, dy = g[:, 0] - st["pos"][:, 0], g[:, 1] - st["pos"][:, 1]
            rel = np.stack([np.cos(h) * dx + np.sin(h) * dy, -np.sin(h) * dx + np.cos(h) * dy], 1) / 600
            np.testing.assert_allclose(st["obs_goals"][v, 2 * k : 2 * k + 2], rel[v], atol=1e-5)
        np.testing.assert_allclose(
            st["obs_conditioning"][v], _np_conditioning(st["conditioning"])[v], atol=1e-5
        )
        assert np.all(np.abs(st["obs_conditioning"][v]) <= 1 + 1e-5)
        assert np.all(st["obs_ego"][~v] == 0) and np.all(st["obs_conditioning"][~v] == 0)
        # reward terms of agents that acted this step (not reset this step)
        acted = (st["valid"] == 1) & (st["world_reset"][model.layout.slot_world] == 0)
        acted &= st["active"] == 1  # (a terminated agent's speed is zeroed after its rewards)
        np.testing.assert_allclose(st["reward_terms"][acted], _np_rewards(st)[acted], atol=1e-6, rtol=1e-5)
        checked += acted.sum()
    assert checked > 20
