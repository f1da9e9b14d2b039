"""Pedestrians and cyclists: type fractions, per-type sizes and Table 2 draws (moments over
10^5 draws), per-type dynamics limits, pedestrian spawns and goals on pedestrian paths,
pedestrian rules (no off-road / red light, walls are collisions) and reward terms."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps import load
from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE
from pictura.sim import CONDITIONING_TABLE, REWARD_TERMS, SimConfig, reset, step
from pictura.sim.builder import pedestrian_paths
from pictura.sim.features import COND_ACC, COND_DELTA_GOAL, COND_STEER, COND_THROTTLE, COND_TYPE
from pictura.sim.snapshot import WorldLayout

from .conftest import (
    make_world,
    np_bicycle,
    np_point_polyline_distance,
    set_slots,
    straight_map,
    vehicle_config,
    with_walls,
)

PED_KEEPS = {"delta_goal", "v_goal", "alpha_collision", "c_throttle", "c_steer", "c_acc"}


@pytest.fixture(scope="module")
def small_towns():
    return [load(f"procedural:seed={s},blocks_x=2,blocks_y=2") for s in range(4)]


@pytest.fixture(scope="module")
def draws(small_towns):
    """About 10^5 spawned agents (256 worlds x 20 agents x 20 resets, low density so nearly
    every draw finds a place and the placed ones are an unbiased sample)."""
    from pictura.sim import build_model

    cfg = SimConfig(agents_per_world=(20, 20), parked_per_world=0)
    W = 256
    layout = WorldLayout.uniform([w % 4 for w in range(W)], 20, [len(m.light_position) for m in small_towns])
    model = build_model(small_towns, layout, cfg, device="cpu")
    s = model.state()
    out = {
        k: []
        for k in (
            "kind",
            "length",
            "width",
            "height",
            "conditioning",
            "pos",
            "world",
            "goal",
            "speed",
            "lane",
            "heading",
        )
    }
    for seed in range(20):
        reset(model, s, seed)
        st = s.numpy()
        ok = st["valid"] == 1
        for k in out:
            if k == "world":
                out[k].append(model.layout.slot_world[ok] % 4)
            else:
                out[k].append(st[k][ok])
    out = {k: np.concatenate(v) for k, v in out.items()}
    out["drawn"] = W * 20 * 20
    limits = model.lane_speed_limit.numpy()
    out["lane_limit"] = np.where(out["lane"] >= 0, limits[np.maximum(out["lane"], 0)], 15.0)
    out["lane_limit"] = np.where(out["lane_limit"] > 0, out["lane_limit"], 15.0)
    return out


def test_type_fractions_and_sizes(draws):
    kind = draws["kind"]
    n = len(kind)
    assert n > 0.98 * draws["drawn"]  # nearly every draw was placed
    assert n >= 100_000
    for k, p in ((AGENT_PEDESTRIAN, 0.1), (AGENT_CYCLIST, 0.1), (AGENT_VEHICLE, 0.8)):
        frac = np.mean(kind == k)
        assert abs(frac - p) < 5 * np.sqrt(p * (1 - p) / n) + 0.005, (k, frac)
    L, Wd, H = draws["length"], draws["width"], draws["height"]
    for k, (llo, lhi), (wlo, whi), h in (
        (AGENT_PEDESTRIAN, (0.4, 0.8), (0.4, 0.8), 1.8),
        (AGENT_CYCLIST, (1.6, 2.0), (0.5, 0.8), 1.7),
    ):
        m = kind == k
        for x, lo, hi in ((L[m], llo, lhi), (Wd[m], wlo, whi)):
            assert x.min() >= lo - 1e-6 and x.max() <= hi + 1e-6
            se = (hi - lo) / np.sqrt(12 * len(x))
            assert abs(x.mean() - 0.5 * (lo + hi)) < 5 * se
            assert abs(x.var() / ((hi - lo) ** 2 / 12) - 1) < 0.05
        np.testing.assert_allclose(H[m], h, rtol=1e-6)
    m = kind == AGENT_VEHICLE
    assert L[m].min() >= 0.8 and L[m].max() <= 7.0 and np.all(Wd[m] <= L[m]) and Wd[m].min() >= 0.8
    np.testing.assert_allclose(H[m], 1.5)


def test_table2_moments_and_pedestrian_zeroing(draws):
    cond = draws["conditioning"]
    kind = draws["kind"]
    onehot = cond[:, COND_TYPE : COND_TYPE + 3]
    np.testing.assert_array_equal(onehot.argmax(1), kind)
    np.testing.assert_array_equal(onehot.sum(1), 1)
    drivers = kind != AGENT_PEDESTRIAN
    peds = kind == AGENT_PEDESTRIAN
    for c, coef in enumerate(CONDITIONING_TABLE):
        x = cond[drivers, c].astype(np.float64)
        assert x.min() >= coef.low - 1e-6 and x.max() <= coef.high + 1e-6, coef.name
        if coef.kind == "uniform":
            se = (coef.high - coef.low) / np.sqrt(12 * len(x))
            assert abs(x.mean() - 0.5 * (coef.low + coef.high)) < 5 * se, coef.name
            assert abs(x.var() / ((coef.high - coef.low) ** 2 / 12) - 1) < 0.03, coef.name
        elif coef.kind == "fixed":
            np.testing.assert_allclose(x, coef.low, rtol=1e-6)
        else:  # U_mix: U(lo, 1) or U(1, hi) with probability 1/2 each
            below = x < 1.0
            assert abs(below.mean() - 0.5) < 0.01, coef.name
            assert abs(x[below].mean() - 0.5 * (coef.low + 1)) < 0.01, coef.name
            assert abs(x[~below].mean() - 0.5 * (1 + coef.high)) < 0.01, coef.name
        p = cond[peds, c]
        if coef.name == "delta_goal":
            # min(draw, 0.5): every Table 2 draw is >= 2 m, so pedestrians all get 0.5 m
            np.testing.assert_allclose(p, min(0.5, coef.low))
        elif coef.name in PED_KEEPS:
            assert p.min() >= coef.low - 1e-6 and p.max() <= coef.high + 1e-6, coef.name
        else:
            assert np.all(p == 0), coef.name


def test_pedestrians_spawn_and_aim_on_paths_and_drivers_on_lanes(draws, small_towns):
    kind, pos, world, goal = draws["kind"], draws["pos"], draws["world"], draws["goal"]
    for m, rm in enumerate(small_towns):
        a, b, _, _ = pedestrian_paths(rm)
        paths = np.stack([a[:, :2], b[:, :2]], 1).astype(np.float64)
        lanes = rm.lane_segments()[0][:, :, :2].astype(np.float64)
        peds = (kind == AGENT_PEDESTRIAN) & (world == m)
        drivers = (kind != AGENT_PEDESTRIAN) & (world == m)
        assert peds.sum() > 100 and drivers.sum() > 100
        assert np.all(np_point_polyline_distance(pos[peds, :2].astype(np.float64)[:500], paths) < 1e-3)
        for g in range(3):
            d = np_point_polyline_distance(goal[peds, g, :2].astype(np.float64)[:500], paths)
            assert np.all(d < 1e-2)
        assert np.all(np_point_polyline_distance(pos[drivers, :2].astype(np.float64)[:500], lanes) < 1e-3)
    # spawn speeds: U(0, 0.5 x limit), limit capped by the type's v_max
    v = draws["speed"]
    assert v.min() >= 0
    assert v[kind == AGENT_PEDESTRIAN].max() <= 0.5 * 2.5 + 1e-5
    assert v[kind == AGENT_CYCLIST].max() <= 0.5 * 8.0 + 1e-5
    veh = kind == AGENT_VEHICLE
    assert np.all(v[veh] <= 0.5 * draws["lane_limit"][veh] + 1e-5)
    assert v[veh].max() > 0.4 * draws["lane_limit"][veh].max()


def _nearest_direction(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Heading of the segment ab (K, 2) nearest each point of ``p`` (N, 2)."""
    ab = b - a
    t = np.clip(np.einsum("nkd,kd->nk", p[:, None] - a[None], ab) / np.sum(ab * ab, 1), 0, 1)
    d = np.linalg.norm(p[:, None] - (a[None] + t[..., None] * ab[None]), axis=2)
    k = np.argmin(d, axis=1)
    return np.arctan2(ab[k, 1], ab[k, 0])


def test_spawn_headings_follow_lanes_and_pedestrians_face_either_way(draws, small_towns):
    """A driver spawns heading along its lane; a pedestrian along its path, either way with
    probability 1/2 (spawn.py, `agent_try`)."""
    kind, pos, world, heading = draws["kind"], draws["pos"], draws["world"], draws["heading"]
    forward = []
    for m, rm in enumerate(small_towns):
        a, b, _, _ = pedestrian_paths(rm)
        keep = np.linalg.norm(b[:, :2] - a[:, :2], axis=1) > 1e-3
        peds = np.flatnonzero((kind == AGENT_PEDESTRIAN) & (world == m))[:400]
        path_dir = _nearest_direction(pos[peds, :2].astype(np.float64), a[keep, :2], b[keep, :2])
        c = np.cos(heading[peds] - path_dir)
        assert np.all(np.abs(np.abs(c) - 1) < 1e-3)
        forward.append(c > 0)
        lanes = rm.lane_segments()[0][:, :, :2].astype(np.float64)
        drivers = np.flatnonzero((kind != AGENT_PEDESTRIAN) & (world == m))[:400]
        lane_dir = _nearest_direction(pos[drivers, :2].astype(np.float64), lanes[:, 0], lanes[:, 1])
        # a point on two lanes (a junction) may be nearer the other one: nearly all agree
        assert np.mean(np.cos(heading[drivers] - lane_dir) > 1 - 1e-3) > 0.9
    forward = np.concatenate(forward)
    assert abs(forward.mean() - 0.5) < 5 * np.sqrt(0.25 / forward.size)


def test_per_type_speed_and_acceleration_limits():
    W = 48
    cfg = vehicle_config(agents_per_world=(1, 1), episode_length=100_000, offroad_centre=False)
    from .conftest import loop_map, without_edges

    model, s0, s1, ctl = make_world([without_edges(loop_map())], [0] * W, 1, cfg)
    reset(model, s0, 3)
    rng = np.random.default_rng(3)
    kind = np.arange(W) % 3
    cond = s0.conditioning.numpy()
    cond[:, COND_THROTTLE] = rng.uniform(0.8, 1.25, W)
    cond[:, COND_STEER] = rng.uniform(0.8, 1.25, W)
    cond[:, COND_ACC] = rng.uniform(2 / 3, 1.5, W)
    v_max = np.array([40.0, 2.5, 8.0])[kind]
    set_slots(
        s0,
        kind=kind,
        conditioning=cond,
        length=rng.uniform(0.5, 5.0, W),
        speed=v_max * rng.uniform(0.9, 1.0, W),
        accel_long=rng.uniform(0, 1.5, W),
        accel_lat=rng.uniform(-1, 1, W),
        steering=rng.uniform(-0.2, 0.2, W),
    )
    for _ in range(5):
        action = rng.choice([9, 10, 11, 7], W).astype(np.int32)  # mostly accelerating
        ctl.action.assign(action)
        before = s0.numpy()
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        after = s0.numpy()
        c = before["conditioning"].astype(np.float64)
        for k in range(3):
            m = kind == k
            ref = np_bicycle(
                0 * before["speed"][m],
                0 * before["speed"][m],
                before["heading"][m].astype(np.float64),
                before["speed"][m].astype(np.float64),
                before["accel_long"][m].astype(np.float64),
                before["accel_lat"][m].astype(np.float64),
                before["steering"][m].astype(np.float64),
                before["length"][m].astype(np.float64),
                action[m],
                c[m, COND_THROTTLE],
                c[m, COND_STEER],
                c[m, COND_ACC],
                v_max=[40.0, 2.5, 8.0][k],
                a_long_max=[2.5, 1.5, 2.0][k],
            )
            np.testing.assert_allclose(after["speed"][m], ref[3], atol=1e-4)
            np.testing.assert_allclose(after["accel_long"][m], ref[4], atol=1e-4)
        assert np.all(after["speed"] <= v_max + 1e-5)


def _wall_world(kinds, xs, speeds, lengths, walls, edges=True):
    """One agent per world on `straight_map` (+ walls), heading +x at y = -10."""
    rm = with_walls(straight_map(), walls)
    if not edges:
        from .conftest import without_edges

        rm = without_edges(rm)
    n = len(kinds)
    model, s0, s1, ctl = make_world([rm], [0] * n, 1, vehicle_config(agents_per_world=(1, 1)))
    reset(model, s0, 0)
    cond = s0.conditioning.numpy()
    cond[:, COND_DELTA_GOAL] = 0.1
    set_slots(
        s0,
        kind=np.asarray(kinds),
        valid=np.ones(n),
        halted=np.zeros(n),
        pos=np.stack([np.asarray(xs, float), np.full(n, -10.0), np.zeros(n)], 1),
        heading=np.zeros(n),
        speed=np.asarray(speeds, float),
        accel_long=np.zeros(n),
        accel_lat=np.zeros(n),
        steering=np.zeros(n),
        length=np.asarray(lengths, float),
        width=np.full(n, 0.5),
        conditioning=cond,
        goal=np.full((n, 3, 3), 1000.0),
        goal_index=np.zeros(n),
    )
    ctl.action.assign(np.full(n, 7, np.int32))
    step(model, s0, ctl, s1)
    return s1.numpy()


def test_walls_offroad_for_drivers_collision_for_pedestrians():
    # wall across the road at x = 20 (z = 0) and one on an overpass at x = 10 (z = 10)
    walls = [[[20.0, -20.0, 0.0], [20.0, 0.0, 0.0]], [[10.0, -20.0, 10.0], [10.0, 0.0, 10.0]]]
    P, V, C = AGENT_PEDESTRIAN, AGENT_VEHICLE, AGENT_CYCLIST
    # per world: kind, x, speed, length.  Rows 0-2 cross the wall at x = 20 this step, rows 3-5
    # cross the overpass wall (no event), row 6 stops short of the wall.
    kinds = [P, V, C, P, V, C, V]
    xs = [19.6, 19.0, 19.0, 9.6, 9.0, 9.0, 17.0]
    speeds = [2.5, 10.0, 8.0, 2.5, 10.0, 8.0, 5.0]
    lengths = [0.6, 1.6, 1.6, 0.6, 1.6, 1.6, 1.6]
    st = _wall_world(kinds, xs, speeds, lengths, walls, edges=False)
    ev = st["events"]
    assert ev[:, 0].tolist() == [1, 0, 0, 0, 0, 0, 0]  # collision: the pedestrian into the wall
    assert ev[:, 1].tolist() == [0, 1, 1, 0, 0, 0, 0]  # off-road: vehicle and cyclist
    assert st["terminated"].tolist() == [1, 1, 1, 0, 0, 0, 0]


def test_pedestrians_ignore_road_edges_and_red_lights():
    # A pedestrian walking across the y = 0 road edge: no event. A vehicle doing the same is off-road.
    rm = straight_map()
    model, s0, s1, ctl = make_world([rm], [0, 0], 1, vehicle_config(agents_per_world=(1, 1)))
    reset(model, s0, 0)
    set_slots(
        s0,
        kind=np.array([AGENT_PEDESTRIAN, AGENT_VEHICLE]),
        valid=np.ones(2),
        halted=np.zeros(2),
        pos=np.array([[-20.0, -0.2, 0.0], [-20.0, -1.2, 0.0]]),
        heading=np.full(2, np.pi / 2),
        speed=np.array([2.5, 10.0]),
        accel_long=np.zeros(2),
        accel_lat=np.zeros(2),
        steering=np.zeros(2),
        length=np.array([0.6, 1.6]),
        width=np.full(2, 0.5),
        goal=np.full((2, 3, 3), 1000.0),
        goal_index=np.zeros(2),
    )
    ctl.action.assign(np.full(2, 7, np.int32))
    step(model, s0, ctl, s1)
    st = s1.numpy()
    assert st["events"][0].tolist() == [0, 0, 0, 0]
    assert st["events"][1, 1] == 1


def test_pedestrian_rewards_are_goal_and_collision_only(small_towns):
    from pictura.sim import build_model

    cfg = SimConfig(
        agents_per_world=(20, 40), pedestrian_fraction=0.5, cyclist_fraction=0.2, parked_per_world=8
    )
    layout = WorldLayout.uniform([0, 1, 2, 3], 40, [len(m.light_position) for m in small_towns], 8)
    model = build_model(small_towns, layout, cfg, device="cpu")
    s0, s1, ctl = model.state(), model.state(), model.control()
    reset(model, s0, 5)
    rng = np.random.default_rng(5)
    keep = [REWARD_TERMS.index("goal"), REWARD_TERMS.index("collision")]
    others = [k for k in range(len(REWARD_TERMS)) if k not in keep]
    seen = 0
    for _ in range(150):
        ctl.action.assign(rng.integers(0, 12, model.num_slots).astype(np.int32))
        kind_before = s0.kind.numpy()
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        st = s0.numpy()
        peds = (kind_before == AGENT_PEDESTRIAN) & (st["world_reset"][model.layout.slot_world] == 0)
        peds &= st["valid"] == 1
        assert np.all(st["reward_terms"][peds][:, others] == 0)
        assert np.all(st["events"][peds, 1] == 0) and np.all(st["events"][peds, 2] == 0)
        seen += peds.sum()
    assert seen > 500
