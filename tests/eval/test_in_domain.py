"""The in-domain rollout on the real simulator against a NumPy loop over the recorded states."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pictura.envs import DrivingEnv
from pictura.eval.metrics import ALL_COUNTERS, COUNTERS, MOMENTS, PARTNERS, EpisodeMetrics, summarize
from pictura.eval.policies import random_policy
from pictura.eval.protocols import build_in_domain_env, eval_sim_config, rollout_scenarios, run_density
from pictura.render import CameraRig
from pictura.sim.snapshot import BoxView

STEPS = 60


def build(**kwargs):
    return DrivingEnv(rig=CameraRig(width=8, height=5), validate_actions=False, **kwargs)


@pytest.fixture(scope="module")
def env():
    return build_in_domain_env(build, 16, 2, STEPS, ["procedural:seed=0"], seed=5)


def host_copy(env) -> dict[str, np.ndarray]:
    # on the CPU, Warp's .numpy() is a view of the (double-buffered) state: copy it
    return {k: v.copy() for k, v in env.state.numpy().items()}


def _at_fault_reference(s, boxes, speed, world, K, S, P):
    """Loop version of App. C.1's rule (see `collision_at_fault`): (at fault, partner row or None)."""
    v = float(speed[s])
    rows = list(range(world * K, world * K + K)) + list(range(S + world * P, S + world * P + P))
    b = BoxView(boxes)
    x, y, z, h, L, Wd = (float(field[s]) for field in (b.x, b.y, b.z, b.heading, b.length, b.width))
    best, partner = math.inf, None
    for r in rows:
        if r == s or b.kind[r] < 0 or abs(b.z[r] - z) >= 4.0:
            continue
        gap = math.hypot(b.x[r] - x, b.y[r] - y) - 0.5 * math.hypot(L, Wd) - 0.5 * math.hypot(b.length[r], b.width[r])
        if gap < best:
            best, partner = gap, r
    if abs(v) < 0.2:
        return False, partner
    if partner is None or partner >= S:
        return True, partner
    rel_x = math.cos(h) * (b.x[partner] - x) + math.sin(h) * (b.y[partner] - y)
    return not (rel_x < -0.5 * L and v >= 0), partner


def test_rollout_counters_match_a_numpy_loop_over_the_states(env):
    states = []
    inner = random_policy(seed=1)

    def recording(observation):
        states.append(host_copy(env))  # the state this action is chosen in
        return inner(observation)

    S, W = env.num_slots, env.num_worlds
    K = S // W
    metrics = EpisodeMetrics(env.num_slots, scenario=torch.arange(S) // K)  # a world is a scenario
    env.set_seed(11)
    rollout_scenarios(env, recording, STEPS, metrics)
    metrics.close_scenarios()
    states.append(host_copy(env))
    P = (states[0]["agent_box"].shape[0] - S) // W
    dt = env.sim_config.dt

    per_world = [dict.fromkeys(COUNTERS, 0.0) for _ in range(W)]
    live = [True] * W
    counted = [bool(states[0]["active"][s]) and states[0]["kind"][s] == 0 for s in range(S)]
    for s in range(S):
        per_world[s // K]["episodes"] += counted[s]
    infracted = [False] * S
    for t in range(1, len(states)):
        prev, cur = states[t - 1], states[t]
        for s in range(S):
            if not counted[s]:
                continue
            w = s // K
            reset = bool(cur["world_reset"][w])
            per_world[w]["distance_m"] += abs(prev["speed"][s]) * dt if reset else max(cur["distance"][s] - prev["distance"][s], 0.0)
            collision, offroad, red, goal = (int(e) for e in cur["events"][s])
            per_world[w]["goals"] += goal
            boxes = prev["agent_box"] if reset else cur["agent_box"]
            if collision:
                per_world[w]["collision"] += 1
                at_fault, partner = _at_fault_reference(s, boxes, prev["speed"], w, K, S, P)
                if at_fault:
                    per_world[w]["at_fault_collision"] += 1
                    infracted[s] = True
                    if partner is None:
                        per_world[w]["at_fault_other"] += 1
                    elif partner >= S:
                        per_world[w]["at_fault_parked"] += 1
                    elif prev["halted"][partner]:
                        per_world[w]["at_fault_halted"] += 1
                    else:
                        per_world[w]["at_fault_driving"] += 1
            if offroad:
                per_world[w]["offroad"] += 1
                infracted[s] = True
            if red:
                per_world[w]["red_light"] += 1
                infracted[s] = True
        for w in range(W):
            live[w] = live[w] and not cur["world_reset"][w]
        counted = [counted[s] and bool(cur["active"][s]) and live[s // K] for s in range(S)]
    for s in range(S):
        per_world[s // K]["infraction_episodes"] += infracted[s]
    ref = {key: sum(world[key] for world in per_world) for key in COUNTERS}

    got = dict(zip(ALL_COUNTERS, metrics.counters.tolist(), strict=True))
    assert ref["episodes"] > 0 and ref["distance_m"] > 0
    assert ref["at_fault_collision"] > 0 and sum(ref[f"at_fault_{p}"] for p in PARTNERS) == ref["at_fault_collision"]
    for key in COUNTERS:
        assert got[key] == pytest.approx(ref[key], rel=1e-5, abs=1e-3), key
    # the scenario moments: sums over the worlds that had an episode
    played = [world for world in per_world if world["episodes"] > 0]
    assert got["scenarios"] == len(played) == W
    for key in MOMENTS[1:]:
        a, b = key.split("*")
        # (squares double the float32 reference distances' relative rounding)
        assert got[key] == pytest.approx(sum(world[a] * world[b] for world in played), rel=1e-4, abs=1e-3), key
    # and the standard errors they give, against the spread of the per-world values (delta method)
    out = summarize(metrics.counters)
    for metric, num, den, scale, rel in (
        ("at_fault_collision", "at_fault_collision", "episodes", 1.0, 1e-6),
        ("offroad", "offroad", "episodes", 1.0, 1e-6),
        ("goals", "goals", "episodes", 1.0, 1e-6),
        ("at_fault_per_km", "at_fault_collision", "distance_m", 1e3, 1e-4),  # float32 reference distances
    ):
        a = np.array([world[num] for world in played])
        n = np.array([world[den] for world in played])
        r = a.sum() / n.sum()
        se = np.sqrt(np.sum((a - r * n) ** 2) / (W * (W - 1))) / n.mean()
        assert out[metric] == pytest.approx(r * scale, rel=rel), metric
        assert out[f"{metric}_se"] == pytest.approx(se * scale, rel=rel, abs=1e-12), metric


def test_eval_rules_and_batches(env):
    cfg = env.sim_config
    assert cfg.eval and cfg.v_max == 20.0 and cfg.episode_length == STEPS + 1
    assert cfg.early_reset_halted_fraction == 1.0
    # 3 scenarios on a 2-world env: two batches, the second uses one world
    rows = []
    counters = run_density(env, random_policy(2), 3, 10, seed=3, scenario_sums=rows)
    assert counters.shape == (len(ALL_COUNTERS),) and counters[0] > 0
    assert counters[len(COUNTERS)] == 3  # three scenarios played (two batches)
    # each batch's per-scenario sums: 2 then 1 rows, adding up to the counters
    assert [r.shape for r in rows] == [(2, len(COUNTERS)), (1, len(COUNTERS))]
    assert torch.allclose(torch.cat(rows).sum(0), counters[: len(COUNTERS)])
    with pytest.raises(ValueError, match="episode_length"):
        run_density(env, random_policy(2), 1, STEPS + 1)
    with pytest.raises(ValueError, match="steps"):
        eval_sim_config(0)


def test_constant_action_policy_is_deterministic(env):
    from pictura.eval.policies import constant_policy

    a = run_density(env, constant_policy(7), 2, 15, seed=4)
    b = run_density(env, constant_policy(7), 2, 15, seed=4)
    assert torch.equal(a, b)
    assert np.isfinite(a.numpy()).all()


def test_default_maps_fall_back_to_procedural_towns_without_carla(tmp_path, monkeypatch):
    from pictura.eval.protocols import default_maps

    monkeypatch.setenv("PICTURA_DATA", str(tmp_path))  # a data root without carla/
    maps, note = default_maps()
    assert maps == [f"procedural:seed={i}" for i in range(8)] and "procedural" in note
    carla = tmp_path / "carla"
    carla.mkdir()
    for town in ("Town01", "Town02", "Town03", "Town04", "Town05", "Town06", "Town07", "Town10HD"):
        (carla / f"{town}.xodr").write_text("")
    maps, note = default_maps()
    assert maps[0] == "carla:Town01" and maps[-1] == "carla:Town10HD" and len(maps) == 8
