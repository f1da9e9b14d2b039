"""Counterfactual probes: occlusion fractions of hand-built scenes, removal changes only the
removed user's pixels (NumPy projection), and input-blind policies show dV = 0 (negative control)."""

import numpy as np
import pytest
import torch

from pictura.eval.probes import (
    BRAKE_ACTIONS,
    ProbedPolicy,
    aggregate_by_visibility,
    pedestrian_probe,
    record_states,
    removal_probe,
)
from pictura.maps.roadmap import AGENT_VEHICLE, RoadMap
from pictura.render import Camera, CameraRig, Renderer
from pictura.sim.snapshot import BOX_INVALID, BoxView, WorldLayout
from tests.render.conftest import boxes, fill_polygon, front_silhouette, grown_by_one_pixel

EGO = (0.0, 0.0, 0.0, 0.0, 0.8, 0.8, 1.5, AGENT_VEHICLE)
TARGET = (20.0, 0.0, 0.0, np.pi, 4.0, 2.0, 1.5, AGENT_VEHICLE)
FRONT = Camera("front", 0.0, 0.0, 1.5, 0.0)


def renderer(road_map: RoadMap, **kw) -> Renderer:
    rig = CameraRig(cameras=[FRONT], width=96, height=54)
    return Renderer([road_map], WorldLayout.uniform([0], 4, [0]), rig, **kw)


def test_brake_actions_are_the_negative_jerk_bins():
    from pictura.sim.features import JERK_LONG

    assert BRAKE_ACTIONS == tuple(a for a in range(12) if JERK_LONG[a // 3] < 0)


def test_occlusion_fraction_behind_a_wall_is_zero_and_alone_is_one():
    wall = RoadMap("wall", wall_points=np.array([[[10.0, -10.0, 0.0], [10.0, 10.0, 0.0]]], np.float32),
                   wall_height=np.array([5.0], np.float32))
    ls = np.zeros(0, np.int32)
    scene = boxes(4, {0: EGO, 1: TARGET})[0]
    assert renderer(wall).occlusion_fraction(scene, ls, 0, 1) == 0.0
    assert renderer(RoadMap("empty")).occlusion_fraction(scene, ls, 0, 1) == pytest.approx(1.0, abs=1 / 255)


def test_removing_a_user_changes_only_the_pixels_it_covers():
    r = renderer(RoadMap("empty"), antialias=False)
    other = (30.0, -6.0, 0.0, 0.3, 4.0, 2.0, 1.5, AGENT_VEHICLE)
    present = boxes(4, {0: EGO, 1: TARGET, 2: other})
    absent = present.copy()
    BoxView(absent[0, 1]).kind = BOX_INVALID
    ls = np.zeros((1, 0), np.int32)
    with_it = r.render_numpy(present, ls, np.array([[0, 0]]))[0, 0].astype(int)
    without = r.render_numpy(absent, ls, np.array([[0, 0]]))[0, 0].astype(int)
    changed = np.any(with_it != without, axis=-1)
    # NumPy reference: the target's silhouette, grown by one pixel for edge rounding.
    mask = fill_polygon(front_silhouette(r.rig.focal, r.rig.principal, TARGET), 96, 54)
    grown = grown_by_one_pixel(mask)
    assert changed.any()
    assert not (changed & ~grown).any()
    assert changed[mask].mean() > 0.9


@pytest.fixture(scope="module")
def env_and_states():
    from pictura.envs import DrivingEnv

    env = DrivingEnv(maps=["procedural:seed=0"], num_worlds=1, slots_per_world=7, agents_per_world=(6, 6),
                     rig=CameraRig(width=32, height=18), validate_actions=False)
    states = record_states(env, ProbedPolicy.baseline("constant:7"), count=2, warmup=4, stride=3)
    return env, states


@pytest.mark.parametrize("spec", ["constant:7", "random"])
def test_input_blind_policy_shows_no_effect(env_and_states, spec):
    env, states = env_and_states
    policy = ProbedPolicy.baseline(spec)
    records = removal_probe(env, policy, states, radius=60.0, max_egos=2)
    assert records, "the recorded states should have road users near the egos"
    assert all(r["dV"] == 0.0 and r["dP_brake"] == 0.0 for r in records)
    assert all(0.0 <= r["visible"] <= 1.0 for r in records)


def test_pixel_reading_policy_reacts_to_visible_users(env_and_states):
    """Positive control: value = mean pixel brightness; removing a visible user changes it."""
    env, states = env_and_states

    def network(obs):
        v = obs["pixels"].float().mean(dim=(1, 2, 3, 4))
        return torch.zeros(v.shape[0], 12), v

    records = removal_probe(env, ProbedPolicy("pixels", network), states, radius=60.0, max_egos=2)
    visible = [r for r in records if r["visible"] > 0.05]
    assert visible and any(abs(r["dV"]) > 0 for r in visible)


def test_pedestrian_sweep_of_a_blind_policy_is_flat(env_and_states):
    env, states = env_and_states
    sweep = pedestrian_probe(env, ProbedPolicy.baseline("constant:7"), states, positions=5, max_distance=60.0)
    if sweep is None:
        pytest.skip("no vehicle ahead of an ego in the recorded states")
    assert len(sweep["offset"]) == len(sweep["dV"]) == len(sweep["visible"]) == 5
    assert sweep["dV"] == [0.0] * 5 and sweep["dP_brake"] == [0.0] * 5


def test_aggregate_by_visibility_averages_per_scene_first():
    """Fig. 8a: per bin, each scene's removals are averaged, then the scenes (hand means)."""
    records = [
        {"state": 0, "visible": 0.0, "dV": 1.0, "dP_brake": 0.0},
        {"state": 0, "visible": 0.0, "dV": -3.0, "dP_brake": 0.2},
        {"state": 0, "visible": 0.0, "dV": 2.0, "dP_brake": 0.1},
        {"state": 1, "visible": 0.0, "dV": 4.0, "dP_brake": -0.3},
        {"state": 1, "visible": 0.6, "dV": 2.0, "dP_brake": -0.1},
        {"state": 2, "visible": 1.0, "dV": 4.0, "dP_brake": 0.5},
    ]
    bins = aggregate_by_visibility(records)
    assert [b["count"] for b in bins] == [4, 0, 0, 1, 1]
    assert [b["scenes"] for b in bins] == [2, 0, 0, 1, 1]
    # bin 0: scene 0 dV mean 0 (|dV| 2), scene 1 dV 4 (|dV| 4): means over scenes 2 and 3,
    # not over the four removals (1.0 and 2.5)
    assert bins[0]["dV_mean"] == pytest.approx(2.0) and bins[0]["abs_dV_mean"] == pytest.approx(3.0)
    assert bins[0]["dP_brake_mean"] == pytest.approx(-0.1) and bins[0]["abs_dP_brake_mean"] == pytest.approx(0.2)
    assert bins[1]["dV_mean"] is None
    assert bins[4]["dP_brake_mean"] == pytest.approx(0.5)
    # standard errors over scenes: sd of the scene means / sqrt(scenes) (dV: 0, 4 -> sd 2 sqrt 2)
    assert bins[0]["dV_se"] == pytest.approx(2.0) and bins[0]["abs_dV_se"] == pytest.approx(1.0)
    assert bins[0]["dP_brake_se"] == pytest.approx(0.2)
    assert bins[4]["dV_se"] is None  # one scene: no spread


def test_baseline_specs_are_checked():
    with pytest.raises(ValueError, match="constant"):
        ProbedPolicy.baseline("constant:12")
    with pytest.raises(ValueError, match="random"):
        ProbedPolicy.baseline("greedy")


def test_vectorized_policy_is_probed_through_its_entity_sets():
    """A vectorized env rebuilds the partner set: removing any user (hidden or not) changes a
    policy that sums its partner features, and a removed user vanishes from the set."""
    from pictura.envs import DrivingEnv
    from pictura.envs.observations import VectorizedObservationConfig

    env = DrivingEnv(maps=["procedural:seed=0"], num_worlds=1, slots_per_world=7, agents_per_world=(6, 6),
                     rig=CameraRig(width=16, height=9), validate_actions=False,
                     observation=VectorizedObservationConfig())
    states = record_states(env, ProbedPolicy.baseline("constant:7"), count=1, warmup=4, stride=3)

    def network(obs):
        count = obs["partners_mask"].float().sum(-1)
        return torch.zeros(count.shape[0], 12), count

    policy = ProbedPolicy("partners", network)
    records = removal_probe(env, policy, states, radius=60.0, max_egos=2)
    assert records
    # dV = V(o) - V(o'), o' without the user: removing one user drops the partner count by one
    # (or leaves it, beyond the set's range), so dV is +1 ...
    assert all(r["dV"] in (1.0, 0.0) for r in records)
    # ... whether the cameras could see it or not: the entity set is privileged
    assert any(r["dV"] == 1.0 and r["visible"] == 0.0 for r in records)
    # the pedestrian sweep has the same sign: o holds the pedestrian, o' does not
    sweep = pedestrian_probe(env, policy, states, positions=3, half_span=2.0)
    assert sweep is not None and set(sweep["dV"]) <= {0.0, 1.0} and 1.0 in sweep["dV"]


def test_a_value_normalised_checkpoint_reports_values_in_return_units(tmp_path):
    """A run trained with ``value_normalization`` saves its return statistics; the probes map
    its value head back with them (value x spread + mean), so dV keeps the units of returns."""
    from pictura.eval.policies import load_checkpoint
    from tests.tools.test_evaluate import _checkpoint

    plain = _checkpoint(tmp_path / "plain.ckpt", ego_width=7)
    saved = torch.load(plain, map_location="cpu", weights_only=False)
    mean, std = 2.0, 3.0
    saved["state_dict"] |= {
        "return_norm.mean": torch.tensor(mean), "return_norm.mean_sq": torch.tensor(mean**2 + std**2),
        "return_norm.initialised": torch.tensor(True),
    }  # fmt: skip
    torch.save(saved, tmp_path / "normalised.ckpt")
    ckpt_plain, ckpt_norm = load_checkpoint(plain), load_checkpoint(tmp_path / "normalised.ckpt")
    assert ckpt_plain.return_norm is None and ckpt_norm.return_norm is not None
    env = ckpt_norm.build_env(device="cpu")
    obs = env.reset()["observation"]
    brake_plain, value_plain = ProbedPolicy.from_checkpoint(ckpt_plain, env).evaluate(obs)
    brake_norm, value_norm = ProbedPolicy.from_checkpoint(ckpt_norm, env).evaluate(obs)
    assert torch.equal(brake_norm, brake_plain)
    np.testing.assert_allclose(value_norm.numpy(), value_plain.numpy() * std + mean, rtol=1e-6, atol=1e-6)

    del saved["state_dict"]["return_norm.mean_sq"]
    torch.save(saved, tmp_path / "broken.ckpt")
    with pytest.raises(ValueError, match="return_norm"):
        load_checkpoint(tmp_path / "broken.ckpt")
