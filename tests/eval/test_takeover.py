"""Blind-corner takeovers (Fig. 9): the other agents follow their recorded trajectories whatever
the ego does (log replay), and a hidden vehicle is occluded inside the field of view, not out of
every camera's view (the renderer on an empty map is the reference of the field of view)."""

from __future__ import annotations

import math

import numpy as np
import torch

from pictura.eval import takeover
from pictura.eval.probes import ProbedPolicy
from pictura.maps.roadmap import AGENT_VEHICLE, RoadMap
from pictura.render import CameraRig, Renderer
from pictura.sim.snapshot import BoxView, WorldLayout


def test_partners_follow_their_recorded_trajectories():
    from pictura.envs import DrivingEnv

    env = DrivingEnv(seed=2, maps=["procedural:seed=0"], num_worlds=1, slots_per_world=7, agents_per_world=(6, 6),
                     rig=CameraRig(width=16, height=9), validate_actions=False)
    rec = takeover.record(env, ProbedPolicy.baseline("constant:9"), 16)
    ego = int(rec.valid[4].nonzero()[0][0])
    case = takeover.Case(ego=ego, start=4, reveal=8, hidden=False)
    horizon = 10
    td = env.restore_state(rec.states[case.start])
    others = [s for s in range(env.num_slots) if s != ego]
    ego_moved = False
    with takeover.partners_replayed(env, rec, case, horizon):
        for k in range(horizon):
            action = torch.full((env.num_slots,), 7, dtype=torch.int64)
            action[ego] = 0  # hard braking, where the recording accelerated
            td.set("action", action)
            td = env.step(td)["next"]
            box = env.snapshot()["agent_box"].cpu().numpy()
            expected = rec.agent_box[case.start + k + 1]
            got, want = BoxView(box), BoxView(expected)
            for a, b in ((got.xyz, want.xyz), (got.heading, want.heading), (got.size, want.size)):
                np.testing.assert_array_equal(a[others], b[others])
            ego_moved |= not np.array_equal(box[ego, :2], expected[ego, :2])
    assert ego_moved  # the ego did drive differently
    # self-play again afterwards: the same rewind and actions repeat the recording
    td = env.restore_state(rec.states[case.start])
    td.set("action", torch.as_tensor(rec.action[case.start]))
    env.step(td)
    np.testing.assert_array_equal(env.snapshot()["agent_box"].cpu().numpy(), rec.agent_box[case.start + 1])


def test_field_of_view_agrees_with_the_renderer_on_an_empty_map():
    """With nothing to occlude, the renderer sees a target (visible fraction > 0) exactly when it
    is in a camera's view: every seen target is `in_field_of_view`, and at most a few in view by
    a sliver thinner than a pixel are not seen."""
    rig = CameraRig(width=96, height=54)
    renderer = Renderer([RoadMap("empty")], WorldLayout.uniform([0], 2, [0]), rig)
    rng = np.random.default_rng(0)
    ego = np.array([0.0, 0.0, 0.0, 0.0, 4.5, 1.9, 1.5, AGENT_VEHICLE], np.float32)
    seen, in_view = [], []
    for _ in range(150):
        r, a = rng.uniform(4, 60), rng.uniform(-math.pi, math.pi)
        target = np.array([r * math.cos(a), r * math.sin(a), 0.0, rng.uniform(-math.pi, math.pi), 4.5, 1.9, 1.5,
                           AGENT_VEHICLE], np.float32)
        scene = np.stack([ego, target])
        seen.append(renderer.occlusion_fraction(scene, np.zeros(0, np.int32), 0, 1) > 0)
        in_view.append(takeover.in_field_of_view(rig, ego, target))
    seen, in_view = np.array(seen), np.array(in_view)
    assert 0.3 < seen.mean() < 0.95  # both outcomes (the rig leaves gaps at the sides)
    assert not (seen & ~in_view).any()
    assert (in_view & ~seen).sum() <= 3
    # a target beside the ego, between the front-left and back cameras' views: out of view
    side = np.array([-3.0, 15.0, 0.0, 0.0, 2.0, 1.0, 1.5, AGENT_VEHICLE], np.float32)
    assert not takeover.in_field_of_view(rig, ego, side)


def test_hidden_cases_are_occluded_in_view_and_report_their_visibility():
    from pictura.envs import DrivingEnv

    env = DrivingEnv(seed=3, maps=["procedural:seed=0"], num_worlds=1, slots_per_world=9, agents_per_world=(8, 8),
                     rig=CameraRig(width=32, height=18), validate_actions=False)
    rec = takeover.record(env, ProbedPolicy.baseline("constant:9"), 60)
    cases = takeover.find_cases(env, rec, horizon=10, reveal_window=20, every=2, max_cases=3)
    assert any(c.hidden for c in cases)  # this seed's drive has one
    for c in (c for c in cases if c.hidden):
        box = rec.agent_box[c.start]
        assert BoxView(box[c.vehicle]).kind == AGENT_VEHICLE
        assert takeover.in_field_of_view(env.renderer.rig, box[c.ego], box[c.vehicle])
        assert len(c.visible) == c.reveal - c.start + 1
        assert all(f == 0.0 for f in c.visible[:-1]) and c.visible[-1] > 0.0
