"""The evaluation settings REFERENCE.md lists ("Evaluation definitions"), each checked by what
the simulator does under `eval_sim_config`: goal radius 2 m whatever delta_goal or v_goal were
drawn, light timings green 10 s / yellow 3 s / red 2 s with no outages, vehicle sizes
L ~ U(2, 5.5), W ~ U(1.5, 2.5), v_max 20 m/s, argmax actions."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from pictura.eval.policies import argmax_policy
from pictura.eval.protocols import check_eval_settings, eval_sim_config
from pictura.maps.roadmap import AGENT_VEHICLE, LIGHT_GREEN, LIGHT_OFF, LIGHT_RED, LIGHT_YELLOW
from pictura.sim import EVENTS, SimConfig, build_model, reset, step
from pictura.sim.features import COND_DELTA_GOAL, COND_V_GOAL
from pictura.sim.snapshot import WorldLayout
from tests.sim.conftest import loop_map, set_slots, straight_map, without_edges

GOAL = EVENTS.index("goal")
KEEP = 7  # zero jerk


def _eval_model(road, worlds: int, slots: int, steps: int = 400, **base):
    sim = eval_sim_config(steps, SimConfig(agents_per_world=(slots, slots), **base))
    layout = WorldLayout.uniform([0] * worlds, slots, [len(road.light_position)], sim.parked_per_world)
    model = build_model([road], layout, sim, device="cpu")
    return model, model.state(), model.state(), model.control()


def test_eval_vehicle_sizes():
    model, s0, _, _ = _eval_model(
        loop_map(), 16, 12, pedestrian_fraction=0.0, cyclist_fraction=0.0, parked_per_world=0
    )
    reset(model, s0, 0)
    st = s0.numpy()
    veh = (st["valid"] != 0) & (st["kind"] == AGENT_VEHICLE)
    length, width = st["length"][veh], st["width"][veh]
    assert veh.sum() > 100
    assert length.min() >= 2.0 and length.max() <= 5.5 and width.min() >= 1.5 and width.max() <= 2.5
    # spread over the whole range (not the training ranges 0.8-7.0 and 0.8-2.7)
    assert length.min() < 2.5 and length.max() > 5.0 and width.min() < 1.7 and width.max() > 2.3


def test_eval_speed_cap_is_20():
    model, s0, s1, ctl = _eval_model(
        without_edges(loop_map()),
        4,
        1,
        offroad_centre=False,
        pedestrian_fraction=0.0,
        cyclist_fraction=0.0,
        parked_per_world=0,
    )
    reset(model, s0, 0)
    set_slots(s0, speed=np.full(4, 15.0), accel_long=np.zeros(4), accel_lat=np.zeros(4), steering=np.zeros(4))
    ctl.action.assign(np.full(4, 10, np.int32))  # +4 m/s^3, straight
    top = 0.0
    for _ in range(40):
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        top = max(top, float(s0.speed.numpy().max()))
    assert top == pytest.approx(20.0, abs=1e-5)


def _goal_step(goal_offset: float, delta_goal: float, v_goal: float, index: int):
    """One vehicle at 10 m/s along +x on the straight road, its waypoint ``index`` 1 m ahead
    and ``goal_offset`` m aside; returns the goal event of the step."""
    model, s0, s1, ctl = _eval_model(
        straight_map(), 1, 1, pedestrian_fraction=0.0, cyclist_fraction=0.0, parked_per_world=0
    )
    reset(model, s0, 0)
    goals = np.full((1, 3, 3), 1000.0)
    goals[0, index] = (-14.0, -10.0 + goal_offset, 0.0)
    cond = s0.conditioning.numpy()
    cond[0, COND_DELTA_GOAL] = delta_goal
    cond[0, COND_V_GOAL] = v_goal
    set_slots(
        s0,
        valid=[1],
        halted=[0],
        pos=[[-15.0, -10.0, 0.0]],
        heading=[0.0],
        speed=[10.0],
        accel_long=[0.0],
        accel_lat=[0.0],
        steering=[0.0],
        lane=[3],
        goal=goals,
        goal_index=[index],
        conditioning=cond,
    )
    ctl.action.assign(np.full(1, KEEP, np.int32))
    step(model, s0, ctl, s1)
    return int(s1.events.numpy()[0, GOAL])


def test_eval_goal_radius_is_2m_whatever_the_conditioning():
    assert _goal_step(1.9, delta_goal=0.5, v_goal=20.0, index=0) == 1  # 2 m, not delta_goal 0.5
    assert _goal_step(2.1, delta_goal=12.0, v_goal=20.0, index=0) == 0  # 2 m, not delta_goal 12
    # the third waypoint: passed at 10 m/s with v_goal 1 m/s still counts (v_goal is a training
    # reward coefficient, not part of App. C.1's goal metric)
    assert _goal_step(1.0, delta_goal=2.0, v_goal=1.0, index=2) == 1


def _runs(states: np.ndarray, value: int) -> list[int]:
    """Lengths of the runs of ``value`` that start and end inside ``states``."""
    out, n, started = [], 0, False
    for s in states:
        if s == value:
            n += 1
        else:
            if n and started:
                out.append(n)
            started, n = True, 0
    return out


def test_eval_light_timings_and_no_outages():
    model, s0, s1, ctl = _eval_model(
        straight_map(), 8, 1, steps=400, pedestrian_fraction=0.0, cyclist_fraction=0.0, parked_per_world=0
    )
    reset(model, s0, 3)
    set_slots(s0, speed=np.zeros(8), accel_long=np.zeros(8), accel_lat=np.zeros(8), steering=np.zeros(8))
    ctl.action.assign(np.full(8, KEEP, np.int32))
    seen = [s0.light_state.numpy().copy()]
    for _ in range(300):
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        seen.append(s0.light_state.numpy().copy())
    assert s0.world_episode.numpy().max() == 0  # no reset redrew a schedule
    seen = np.stack(seen, 1)  # (lights, steps)
    assert not (seen == LIGHT_OFF).any()
    for row in seen:  # one phase group: green 10 s, yellow 3 s, red 2 s at dt 0.1 s
        assert set(_runs(row, LIGHT_GREEN)) == {100}
        assert set(_runs(row, LIGHT_YELLOW)) == {30}
        assert set(_runs(row, LIGHT_RED)) == {20}


def test_protocols_refuse_other_eval_settings():
    check_eval_settings(SimConfig())
    for name, value in (
        ("eval_goal_radius", 3.0),
        ("eval_light_s", (10.0, 3.0, 3.0)),
        ("eval_vehicle_length", (0.8, 7.0)),
        ("eval_vehicle_width", (1.5, 2.0)),
        ("eval_v_max", 30.0),
    ):
        with pytest.raises(ValueError, match=name):
            eval_sim_config(10, dataclasses.replace(SimConfig(), **{name: value}))


def test_argmax_actions():
    logits = torch.tensor([[0.1, 2.0, -1.0] + [0.0] * 9, [5.0] + [0.0] * 10 + [6.0]])

    def network(observation):
        return logits, torch.zeros(2)

    act = argmax_policy(network)
    assert act(TensorDict({}, batch_size=[2])).tolist() == [1, 11]


def test_probe_and_takeover_constants_are_the_documented_ones():
    """docs/visual_tools.md: the pedestrian probe's synthetic pedestrian is 0.6 x 0.6 x 1.75 m;
    the visibility bins are exactly 0, (0, .25], (.25, .5], (.5, .75], (.75, 1]; the brake
    actions are those of negative longitudinal jerk (Table: -15, -4, 0, +4 m/s^3 for a // 3);
    the takeover tool counts time in the simulator's 0.1 s steps."""
    from pictura.eval import probes, takeover

    assert probes.PEDESTRIAN_SIZE == (0.6, 0.6, 1.75)
    edges = probes.VISIBILITY_BINS
    assert edges[0] == 0.0 and 0 < edges[1] < 1e-3 and edges[2:5] == (0.25, 0.5, 0.75) and 1.0 < edges[5] < 1.001
    assert probes.BRAKE_ACTIONS == tuple(a for a in range(12) if (-15.0, -4.0, 0.0, 4.0)[a // 3] < 0)
    assert takeover.STEP_S == SimConfig().dt == 0.1
