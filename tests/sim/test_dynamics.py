"""The bicycle update of `step` against a float64 NumPy transcription of REFERENCE.md."""

from __future__ import annotations

import numpy as np

from pictura.sim import reset, step
from pictura.sim.features import COND_ACC, COND_STEER, COND_THROTTLE

from .conftest import loop_map, make_world, np_bicycle, set_slots, vehicle_config, without_edges, wrap

W = 48  # one agent per world: no collisions, and no edges: no off-road, so nothing halts


def _setup(seed: int):
    cfg = vehicle_config(agents_per_world=(1, 1), episode_length=100_000, offroad_centre=False)
    model, s0, s1, ctl = make_world([without_edges(loop_map())], [0] * W, 1, cfg)
    reset(model, s0, seed)
    rng = np.random.default_rng(seed)
    cond = s0.conditioning.numpy()
    cond[:, COND_THROTTLE] = rng.uniform(0.8, 1.25, W)
    cond[:, COND_STEER] = rng.uniform(0.8, 1.25, W)
    cond[:, COND_ACC] = rng.uniform(2 / 3, 1.5, W)
    length = rng.uniform(0.8, 7.0, W)
    # a spread of starting states: near rest (sign-flip snapping), reversing, fast (clipping),
    # and steering at the limit
    speed = np.concatenate(
        [rng.uniform(-0.3, 0.3, W // 4), rng.uniform(-2, 0, W // 4), rng.uniform(0, 40, W // 2)]
    )
    set_slots(
        s0,
        conditioning=cond,
        length=length,
        speed=speed,
        accel_long=rng.uniform(-5, 2.5, W),
        accel_lat=rng.uniform(-4, 4, W),
        steering=rng.uniform(-0.55, 0.55, W),
        heading=rng.uniform(-np.pi, np.pi, W),
    )
    return model, s0, s1, ctl, rng


def _compare(s_in: dict, s_out: dict, action: np.ndarray) -> None:
    p = s_in["pos"].astype(np.float64)
    c = s_in["conditioning"].astype(np.float64)
    ref = np_bicycle(
        p[:, 0] * 0,
        p[:, 1] * 0,  # displacement, so float32 rounding of large coordinates cancels
        s_in["heading"].astype(np.float64),
        s_in["speed"].astype(np.float64),
        s_in["accel_long"].astype(np.float64),
        s_in["accel_lat"].astype(np.float64),
        s_in["steering"].astype(np.float64),
        s_in["length"].astype(np.float64),
        action,
        c[:, COND_THROTTLE],
        c[:, COND_STEER],
        c[:, COND_ACC],
    )
    x, y, h, v, al, at, st = ref
    q = s_out["pos"].astype(np.float64)
    np.testing.assert_allclose(q[:, 0] - p[:, 0], x, atol=1e-4)
    np.testing.assert_allclose(q[:, 1] - p[:, 1], y, atol=1e-4)
    np.testing.assert_allclose(wrap(s_out["heading"] - h), 0.0, atol=1e-4)
    np.testing.assert_allclose(s_out["speed"], v, atol=1e-4)
    np.testing.assert_allclose(s_out["accel_long"], al, atol=1e-4)
    np.testing.assert_allclose(s_out["accel_lat"], at, atol=1e-3, rtol=1e-4)
    np.testing.assert_allclose(s_out["steering"], st, atol=1e-5)
    assert np.array_equal(q[:, 2], p[:, 2])  # z is kept


def test_random_actions_match_numpy_reference():
    model, s0, s1, ctl, rng = _setup(3)
    for _ in range(60):
        action = rng.integers(0, 12, W)
        ctl.action.assign(action.astype(np.int32))
        before = s0.numpy()
        step(model, s0, ctl, s1)
        after = s1.numpy()
        assert after["halted"].sum() == 0
        _compare(before, after, action)
        s0, s1 = s1, s0


def test_special_cases():
    """Straight line, constant turn, snapping to rest, clipping and the steering rate limit."""
    model, s0, s1, ctl, rng = _setup(4)
    n = W
    speed = np.full(n, 10.0)
    speed[1] = 0.2  # hard braking from 0.2 m/s snaps to rest instead of reversing
    speed[3] = 39.99  # accelerating clips at v_max
    steering = np.zeros(n)
    # constant turn with zero lateral jerk: a_lat = 3 m/s^2 at 10 m/s holds curvature 0.03 1/m
    steering[2] = np.arctan(0.03 * 0.6 * 4.0)
    accel_lat = np.zeros(n)
    accel_lat[2] = 3.0
    accel_long = np.zeros(n)
    accel_long[1] = -5.0
    accel_long[3] = 2.5
    set_slots(
        s0, speed=speed, steering=steering, accel_lat=accel_lat, accel_long=accel_long, length=np.full(n, 4.0)
    )
    action = np.full(n, 7)  # zero jerk
    action[1] = 0  # -15 m/s^3
    action[3] = 9  # +4 m/s^3
    action[4] = 2  # +4 m/s^3 lateral from straight: steering limited to 0.06 rad per step
    ctl.action.assign(action.astype(np.int32))
    before = s0.numpy()
    step(model, s0, ctl, s1)
    after = s1.numpy()
    _compare(before, after, action)
    assert after["speed"][1] == 0.0 and after["accel_long"][1] < 0
    assert abs(after["speed"][3] - 40.0) < 1e-5
    h0 = before["heading"][0]
    dxy = after["pos"][0, :2] - before["pos"][0, :2]
    np.testing.assert_allclose(dxy, [np.cos(h0), np.sin(h0)], atol=1e-4)  # 10 m/s x 0.1 s straight
    assert abs(after["steering"][2] - steering[2]) < 1e-6
    assert abs(wrap(after["heading"][2] - before["heading"][2]) - 0.03) < 1e-5  # 1 m of arc x 0.03 1/m
    assert after["steering"][4] <= 0.06 + 1e-6
