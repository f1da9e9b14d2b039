"""Goals: reached when the waypoint lies within the radius of the swept segment; the third
waypoint pays only below v_goal; a finished set is replaced by a new walk on the lane graph,
whose jump table gives the same walk as going lane by lane."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from pictura.maps import load
from pictura.sim import EVENTS, REWARD_TERMS, reset, step
from pictura.sim.features import COND_DELTA_GOAL, COND_V_GOAL
from pictura.sim.lanes import walk_lanes
from pictura.sim.model_data import ModelData

from .conftest import DEVICE, loop_map, make_world, set_slots, vehicle_config, without_edges

GOAL = EVENTS.index("goal")


def _agent_on_lane():
    """One agent spawned on a lane of the loop, then driven straight ahead at 30 m/s."""
    cfg = vehicle_config(agents_per_world=(1, 1), episode_length=1000, offroad_centre=False)
    road = without_edges(loop_map())
    model, s0, s1, ctl = make_world([road], [0], 1, cfg)
    reset(model, s0, 5)
    set_slots(s0, speed=[30.0], accel_long=[0.0], accel_lat=[0.0], steering=[0.0])
    ctl.action.assign(np.full(1, 7, np.int32))
    pos = s0.pos.numpy()[0].astype(np.float64)
    h = float(s0.heading.numpy()[0])
    fwd, left = np.array([np.cos(h), np.sin(h), 0]), np.array([-np.sin(h), np.cos(h), 0])
    return model, s0, s1, ctl, pos, fwd, left, road


def _set_goal(s0, index: int, point: np.ndarray, radius: float, v_goal: float) -> None:
    goals = s0.goal.numpy()
    goals[0, index] = point
    cond = s0.conditioning.numpy()
    cond[0, COND_DELTA_GOAL] = radius
    cond[0, COND_V_GOAL] = v_goal
    set_slots(s0, goal=goals, goal_index=[index], conditioning=cond)


def test_waypoint_reached_through_swept_segment():
    model, s0, s1, ctl, pos, fwd, left, _ = _agent_on_lane()
    # 1.5 m ahead, 1 m aside: 1.0 m from the 3 m path, 1.8 m from both end points
    _set_goal(s0, 0, pos + 1.5 * fwd + 1.0 * left, radius=1.2, v_goal=0.0)
    step(model, s0, ctl, s1)
    assert s1.events.numpy()[0, GOAL] == 1
    assert s1.goal_index.numpy()[0] == 1
    assert s1.reward_terms.numpy()[0, REWARD_TERMS.index("goal")] == 1.0


def test_waypoint_beyond_radius_not_reached():
    model, s0, s1, ctl, pos, fwd, left, _ = _agent_on_lane()
    _set_goal(s0, 0, pos + 1.5 * fwd + 1.5 * left, radius=1.2, v_goal=0.0)
    step(model, s0, ctl, s1)
    assert s1.events.numpy()[0, GOAL] == 0 and s1.goal_index.numpy()[0] == 0


def test_final_goal_needs_low_speed_then_new_set():
    model, s0, s1, ctl, pos, fwd, left, road = _agent_on_lane()
    _set_goal(s0, 2, pos + 1.5 * fwd, radius=2.0, v_goal=5.0)  # 30 m/s > v_goal: no
    step(model, s0, ctl, s1)
    assert s1.events.numpy()[0, GOAL] == 0 and s1.goal_index.numpy()[0] == 2

    model, s0, s1, ctl, pos, fwd, left, road = _agent_on_lane()
    _set_goal(s0, 2, pos + 1.5 * fwd, radius=2.0, v_goal=35.0)
    step(model, s0, ctl, s1)
    assert s1.events.numpy()[0, GOAL] == 1
    assert s1.goal_index.numpy()[0] == 0  # a new set was drawn from the current lane
    goals = s1.goal.numpy()[0].astype(np.float64)
    here = s1.pos.numpy()[0].astype(np.float64)
    chords = np.linalg.norm(np.diff(np.vstack([here, goals]), axis=0)[:, :2], axis=1)
    assert np.all(chords <= 200.0 + 1e-3) and np.all(chords > 1.0)
    seg, _ = road.lane_segments()
    for g in goals:  # every waypoint lies on a lane centreline
        a, b = seg[:, 0, :2], seg[:, 1, :2]
        t = np.clip(np.sum((g[:2] - a) * (b - a), 1) / np.sum((b - a) ** 2, 1), 0, 1)
        assert np.min(np.linalg.norm(a + (b - a) * t[:, None] - g[:2], axis=1)) < 1e-3


@wp.func
def _walk_lane_by_lane(model: ModelData, lane: int, station: float, distance: float, rng: wp.uint32):
    """The walk without the jump table: one lane at a time, a random successor where there
    are several (the reference for `walk_lanes`)."""
    l = lane
    s = station
    remaining = distance
    state = rng
    for _ in range(100000):
        left = model.lane_length[l] - s
        if remaining <= left:
            s = s + remaining
            break
        off = model.lane_succ_offsets[l]
        n = model.lane_succ_offsets[l + 1] - off
        if n == 0:
            s = model.lane_length[l]
            break
        remaining = remaining - left
        pick = int(0)  # noqa: UP018 -- a dynamic Warp variable
        if n > 1:
            pick = wp.randi(state, 0, n)
        l = model.lane_succ[off + pick]
        s = 0.0
    return l, s, state


@wp.kernel
def _walks_kernel(
    model: ModelData,
    lane: wp.array(dtype=wp.int32),
    station: wp.array(dtype=float),
    distance: wp.array(dtype=float),
    out: wp.array2d(dtype=float),
):
    i = wp.tid()
    l1, s1, r1 = walk_lanes(model, lane[i], station[i], distance[i], wp.rand_init(11, i))
    l2, s2, r2 = _walk_lane_by_lane(model, lane[i], station[i], distance[i], wp.rand_init(11, i))
    out[i, 0] = float(l1)
    out[i, 1] = s1
    out[i, 2] = float(l2)
    out[i, 3] = s2
    out[i, 4] = wp.randf(r1) - wp.randf(r2)  # the same draws were used


@pytest.mark.parametrize("source", ["loop", "procedural:seed=2,blocks_x=2,blocks_y=2"])
def test_jump_table_walk_matches_lane_by_lane_walk(source):
    road = loop_map() if source == "loop" else load(source)
    model, *_ = make_world([road], [0], 1, vehicle_config(agents_per_world=(1, 1)))
    rng = np.random.default_rng(0)
    n = 4000
    lane = rng.integers(0, road.lane_count, n).astype(np.int32)
    length = model.lane_length.numpy()[lane]
    station = (rng.random(n) * length).astype(np.float32)
    distance = rng.uniform(0.0, 400.0, n).astype(np.float32)
    distance[:20] = 0.0
    out = wp.zeros((n, 5), dtype=float, device=DEVICE)
    wp.launch(
        _walks_kernel,
        n,
        inputs=[
            model.data,
            wp.array(lane, dtype=wp.int32, device=DEVICE),
            wp.array(station, dtype=float, device=DEVICE),
            wp.array(distance, dtype=float, device=DEVICE),
            out,
        ],
        device=DEVICE,
    )
    o = out.numpy()
    np.testing.assert_array_equal(o[:, 0], o[:, 2])
    np.testing.assert_allclose(o[:, 1], o[:, 3], atol=2e-3)
    np.testing.assert_array_equal(o[:, 4], 0.0)
    assert len(np.unique(o[:, 0])) > 0.2 * road.lane_count  # the walks went places


def test_goal_spacing_covers_its_range():
    """Each waypoint lies U(goal_spacing_m) = U(20, 200) m along the lanes from the previous one
    (the first from the agent): on the loop map's long sides the chord is that distance, on its
    30 m-radius corners a little less."""
    from pictura.sim import reset

    road = loop_map()
    model, s0, _, _ = make_world([road], [0] * 64, 4, vehicle_config(agents_per_world=(4, 4)))
    chords = []
    for seed in range(4):
        reset(model, s0, seed)
        st = s0.numpy()
        ok = st["valid"] == 1
        points = np.concatenate([st["pos"][ok][:, None, :2], st["goal"][ok][:, :, :2]], axis=1)
        chords.append(np.linalg.norm(np.diff(points, axis=1), axis=2).ravel())
    chords = np.concatenate(chords)
    assert len(chords) > 1500
    assert chords.max() <= 200.0 + 1e-3 and chords.max() > 150.0
    assert chords.min() > 15.0 and np.percentile(chords, 5) < 40.0
    # U(20, 200) spread over the range (corners shorten chords, and sets that turn more than
    # 60 deg are redrawn, which favours shorter steps)
    assert 0.3 < np.mean(chords < 110.0) < 0.85
