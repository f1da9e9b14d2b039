"""Packed zero-shot WOMD batches: each scene's world is exactly its kept road users
(`WorldLayout.sized`), and a batch of scenes of different sizes scores every scene as that
scene alone in its own env does (the reference: a loop over single-scene envs)."""

from __future__ import annotations

import numpy as np
import torch

from pictura.envs.observations import VectorizedObservationConfig
from pictura.envs.replay import ReplayDrivingEnv
from pictura.eval.metrics import C_AT_FAULT, C_EPISODES, C_OFFROAD, C_PARTNER, COUNTERS
from pictura.eval.protocols import replay_env_builder, run_womd_densities
from pictura.maps import load
from pictura.sim import SimConfig
from pictura.sim.config import CONDITIONING_TABLE
from tests.data import data_path
from tests.eval.test_womd_protocol import _json_files

OBS = VectorizedObservationConfig(max_lanes=16, max_boundaries=16, subdivide_long_segments=5.0)
STEPS = 60


def _scenes() -> list:
    """The WOMD samples: GPUDrive JSONs and the tfrecord scene (83 tracks), of different sizes."""
    tfrecord = sorted(data_path("womd", "tfrecord", directory=True).glob("*.tfrecord"))
    return [load(str(p)) for p in [*_json_files(), *tfrecord]]


def _fixed_conditioning() -> SimConfig:
    """Every Table 2 coefficient fixed at its lower bound. A controlled vehicle's draws are keyed
    by its world's index in the env; fixed, they are the same wherever its scene plays."""
    return SimConfig(conditioning={c.name: {"low": c.low, "high": c.low, "kind": "fixed"} for c in CONDITIONING_TABLE})


def _speed_policy(observation) -> torch.Tensor:
    """Deterministic and per agent, from the observation: vehicles longer than 4.6 m brake
    (action 1) and stay put; the others go full throttle with a left swerve below 8 m/s, then
    hold (action 7). They leave the road, hit each other and the standing ones (blameless)."""
    speed = observation["ego"][:, 0] * 40.0
    length = observation["ego"][:, 1] * 10.0
    return torch.where(length > 4.6, 1, torch.where(speed < 8.0, 11, 7)).to(torch.int64)


def test_world_sizes_are_the_kept_road_users():
    scenes = _scenes()
    env = ReplayDrivingEnv(scenes, density=0.75, observation=OBS, seed=0)
    kept = [int(s.present.sum()) for s in env.selections]
    assert len(set(kept)) > 1  # the samples differ in size
    np.testing.assert_array_equal(env.layout.world_slot_count, kept)
    np.testing.assert_array_equal(env.layout.world_slot_start, np.concatenate([[0], np.cumsum(kept)[:-1]]))
    assert env.num_slots == sum(kept) < env.num_worlds * max(kept)
    # the uniform capacity is still there on request
    wide = ReplayDrivingEnv(scenes, density=0.75, observation=OBS, seed=0, slots_per_world=max(kept) + 2)
    assert wide.num_slots == wide.num_worlds * (max(kept) + 2)


def test_packed_batch_scores_each_scene_as_alone():
    scenes = _scenes()
    densities = (1.0, 0.5)
    common = dict(steps=STEPS, base_sim=_fixed_conditioning(), seed=3)
    build = replay_env_builder(observation=OBS, validate_actions=False)
    batched = run_womd_densities(
        build, lambda env: _speed_policy, scenes, densities, scenes_per_batch=len(scenes), **common
    )
    for density in densities:
        rows = []
        for scene in scenes:  # the reference: every scene in an env of its own
            alone = run_womd_densities(build, lambda env: _speed_policy, [scene], [density], scenes_per_batch=1, **common)
            rows.append(alone[density].scenario_sums)
        reference = torch.cat(rows)
        got = batched[density].scenario_sums
        assert got.shape == reference.shape == (len(reference), len(COUNTERS)) and len(reference) >= 3
        torch.testing.assert_close(got, reference, rtol=1e-9, atol=1e-6)
    # not vacuous: at full density episodes end off-road and in at-fault collisions with
    # agents both halted and driving (the collision partner is read across the padded worlds)
    total = batched[1.0].counters
    assert total[C_EPISODES] > 10 and total[C_AT_FAULT] > 0 and total[C_OFFROAD] > 0
    assert total[C_PARTNER] > 0 and total[C_PARTNER + 1] > 0  # at_fault_halted, at_fault_driving


def test_worlds_of_their_own_sizes_are_judged_each_as_alone():
    """Worlds of 2 and 3 slots (`WorldLayout.sized`, no (W, K) grid), every slot judged by
    `PartnerSearch`, as `rollout_scenarios` judges them: each slot's fault and partner equal
    those of its world judged alone by `collision_at_fault` / `collision_partner`. World 0's ego
    (at the origin, where the search's empty fill row sits) is struck from behind: blameless,
    unless the fill row were taken for its partner."""
    from types import SimpleNamespace

    from pictura.eval.metrics import PartnerSearch, collision_at_fault, collision_partner
    from pictura.eval.protocols import equal_worlds
    from pictura.sim.snapshot import WorldLayout, box_row

    def car(x, y, heading=0.0):
        return box_row(x=x, y=y, z=0.0, heading=heading, length=4.0, width=2.0, height=1.5, kind=0.0)

    worlds = [
        [car(0.0, 0.0), car(-4.2, 0.0)],  # ego hit from behind by slot 1
        [car(100.0, 0.0), car(104.5, 0.5), car(90.0, 0.0)],  # slot 0 rear-ends slot 1
    ]
    speed = [[3.0, 6.0], [5.0, 1.0, 0.0]]
    collided = [[True, True], [True, True, False]]
    halted = [[0, 0], [0, 1, 0]]
    layout = WorldLayout.sized([0, 0], [2, 3], [0])
    assert not equal_worlds(SimpleNamespace(layout=layout))
    assert equal_worlds(SimpleNamespace(layout=WorldLayout.uniform([0, 0], 3, [0])))
    search = PartnerSearch(torch.arange(5), torch.as_tensor(layout.slot_world), num_worlds=2)
    boxes = torch.tensor([row for w in worlds for row in w], dtype=torch.float32)
    flat = {name: torch.tensor([v for w in values for v in w]) for name, values in
            (("speed", speed), ("collision", collided), ("halted", halted))}
    at_fault, partner = search.judge(flat["collision"], flat["speed"], boxes, flat["halted"])
    expect_fault, expect_partner = [], []
    for w, rows in enumerate(worlds):  # the reference: each world alone, K = its own size
        b = torch.tensor(rows, dtype=torch.float32)
        f = collision_at_fault(torch.tensor(collided[w]), torch.tensor(speed[w]), b, len(rows))
        expect_fault += f.tolist()
        expect_partner += collision_partner(f, b, torch.tensor(halted[w]), len(rows)).tolist()
    assert at_fault.tolist() == expect_fault
    assert partner.tolist() == expect_partner
    assert expect_fault[:2] == [False, True]  # struck from behind; the striker is at fault
    assert expect_fault[2] and expect_partner[2] == 0  # rear-ended a halted car


def test_policy_sees_only_the_controlled_slots():
    """In a replay env the policy is called on the controlled slots' observations only, and
    their actions reach those slots: the rows it gets are the controlled slots' own rows."""
    from pictura.eval.metrics import EpisodeMetrics
    from pictura.eval.protocols import rollout_scenarios
    from pictura.sim.replay import SLOT_CONTROLLED

    env = ReplayDrivingEnv(_scenes(), density=1.0, observation=OBS, seed=0, validate_actions=False)
    controlled = np.flatnonzero(env.replay_log.slot_mode == SLOT_CONTROLLED)
    assert 0 < len(controlled) < env.num_slots
    seen = []

    def policy(observation):
        seen.append(observation["ego"].clone())
        return _speed_policy(observation)

    rollout_scenarios(env, policy, 3, EpisodeMetrics(env.num_slots))
    assert [len(rows) for rows in seen] == [len(controlled)] * 3
    last = env.reset()["observation"]["ego"]
    torch.testing.assert_close(seen[0], last[torch.as_tensor(controlled)])  # the reset's rows, in slot order


def test_one_env_thinned_per_density_scores_as_fresh_envs():
    """`run_womd_densities` builds a batch's env once at density 1.0 and thins it in place
    (`ReplayDrivingEnv.set_density`); the reference builds a fresh env per density (a builder
    whose envs cannot change density). Same scenes, same per-scene sums and counters, also
    when ``max_scenes`` leaves worlds of the shared env unplayed."""
    scenes = _scenes()
    densities = (1.0, 0.75, 0.5)
    common = dict(steps=40, base_sim=_fixed_conditioning(), seed=5, scenes_per_batch=len(scenes))
    build = replay_env_builder(observation=OBS, validate_actions=False)
    calls = {"shared": 0, "fresh": 0}

    def shared_build(**kwargs):
        calls["shared"] += 1
        return build(**kwargs)

    def fresh_build(**kwargs):
        calls["fresh"] += 1
        env = build(**kwargs)
        env.set_density = None  # not callable: the protocol builds each density's env itself
        return env

    for max_scenes in (None, 2):
        shared = run_womd_densities(shared_build, lambda env: _speed_policy, scenes, densities, max_scenes=max_scenes, **common)
        fresh = run_womd_densities(fresh_build, lambda env: _speed_policy, scenes, densities, max_scenes=max_scenes, **common)
        for density in densities:
            assert shared[density].scenes == fresh[density].scenes
            assert shared[density].skipped == fresh[density].skipped
            torch.testing.assert_close(shared[density].scenario_sums, fresh[density].scenario_sums, rtol=1e-9, atol=1e-6)
            torch.testing.assert_close(shared[density].counters, fresh[density].counters, rtol=1e-9, atol=1e-6)
        assert [shared[d].scenes for d in densities] == [max_scenes or len(scenes)] * len(densities)
    assert calls["shared"] == 2  # one build per run (one batch)
    assert calls["fresh"] == 2 * (1 + len(densities))  # the probe build at 1.0, then one per density


def test_set_density_matches_a_fresh_env_slot_for_slot():
    """After ``set_density(d)`` every world holds, in its first slots, the controlled then the
    replayed road users a fresh env at density d gives that scene, pointing at the same logged
    tracks; the rest of the world is empty."""
    from pictura.sim.replay import SLOT_EMPTY

    scenes = _scenes()
    env = ReplayDrivingEnv(scenes, density=1.0, observation=OBS, seed=2)
    for density in (0.5, 0.75, 1.0):
        env.set_density(density)
        log = env.replay_log
        for w, scene in enumerate(env.scenarios):
            fresh = ReplayDrivingEnv([scene], density=density, observation=OBS, seed=2)
            n = fresh.num_slots
            rows = slice(int(env.layout.world_slot_start[w]), int(env.layout.world_slot_start[w]) + int(env.layout.world_slot_count[w]))
            mode = log.slot_mode[rows]
            np.testing.assert_array_equal(mode[:n], fresh.replay_log.slot_mode)
            assert (mode[n:] == SLOT_EMPTY).all()
            track = log.slot_track[rows][:n]
            np.testing.assert_array_equal(log.track_position[track], fresh.replay_log.track_position)
            np.testing.assert_array_equal(log.track_goal[track], fresh.replay_log.track_goal)
        np.testing.assert_array_equal(env.model.slot_mode.numpy(), log.slot_mode)


def test_set_density_needs_the_road_users_built():
    """An env built at 0.5 does not hold the road users density 1.0 keeps: refused by name."""
    import pytest

    env = ReplayDrivingEnv(_scenes()[:2], density=0.5, observation=OBS, seed=0)
    with pytest.raises(ValueError, match=r"set_density\(1.0\).*built at density 0.5"):
        env.set_density(1.0)
