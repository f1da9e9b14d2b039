"""Oriented-box collision: the SAT function on hand-built and random pairs against a NumPy
polygon-overlap test, the swept test against dense time sampling, and the collision rule
inside `step`."""

from __future__ import annotations

import numpy as np

from pictura.maps.roadmap import AGENT_PEDESTRIAN
from pictura.sim import EVENTS, REWARD_TERMS, reset, step
from pictura.sim.features import COND_COLLISION
from pictura.sim.step import boxes_overlap, swept_boxes_overlap

from .conftest import (
    loop_map,
    make_world,
    np_box_corners,
    np_boxes_overlap_pairs,
    np_polygons_overlap,
    set_slots,
    vehicle_config,
    without_edges,
    wrap,
)


def _reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array(
        [np_polygons_overlap(np_box_corners(*ra), np_box_corners(*rb)) for ra, rb in zip(a, b, strict=True)]
    )


def test_hand_built_pairs():
    r2 = np.sqrt(2.0)
    cases = [
        # (box a, box b, overlap?)  box = x, y, heading, length, width
        ((0, 0, 0, 4, 2), (4.001, 0, 0, 4, 2), False),  # end to end, 1 mm apart
        ((0, 0, 0, 4, 2), (3.999, 0, 0, 4, 2), True),  # 1 mm of penetration
        ((0, 0, 0, 4, 2), (0, 2.01, 0, 4, 2), False),  # side by side
        ((0, 0, 0, 4, 2), (10, 10, 1, 4, 2), False),  # far apart
        ((0, 0, 0, 4, 2), (2 + r2 - 0.01, 0, np.pi / 4, 2, 2), True),  # 45 deg corner pokes in
        ((0, 0, 0, 4, 2), (2 + r2 + 0.01, 0, np.pi / 4, 2, 2), False),  # 45 deg corner just clear
        ((0, 0, 0.3, 10, 5), (0.5, 0.2, 1.0, 1, 1), True),  # containment
        ((0, 0, np.pi / 2, 4, 2), (0, 2.5, np.pi / 2, 4, 2), True),  # rotated, overlapping ends
    ]
    a = np.array([c[0] for c in cases], float)
    b = np.array([c[1] for c in cases], float)
    expected = np.array([c[2] for c in cases])
    assert np.array_equal(_reference(a, b), expected)  # the reference agrees with the hand labels
    assert np.array_equal(boxes_overlap(a, b), expected)
    assert np.array_equal(boxes_overlap(b, a), expected)  # symmetric


def test_random_pairs_match_polygon_reference():
    rng = np.random.default_rng(0)
    n = 4000
    a = np.column_stack(
        [
            rng.uniform(-5, 5, n),
            rng.uniform(-5, 5, n),
            rng.uniform(-np.pi, np.pi, n),
            rng.uniform(0.8, 7, n),
            rng.uniform(0.8, 2.7, n),
        ]
    )
    b = np.column_stack(
        [
            rng.uniform(-5, 5, n),
            rng.uniform(-5, 5, n),
            rng.uniform(-np.pi, np.pi, n),
            rng.uniform(0.8, 7, n),
            rng.uniform(0.8, 2.7, n),
        ]
    )
    ref = _reference(a, b)
    # drop pairs within 1e-4 m of touching, where float32 and float64 may legitimately differ
    grown = _reference(a * [1, 1, 1, 1, 1] + [0, 0, 0, 2e-4, 2e-4], b)
    shrunk = _reference(a - [0, 0, 0, 2e-4, 2e-4], b)
    clear = grown == shrunk
    got = boxes_overlap(a, b)
    assert clear.sum() > 0.99 * n
    assert 0.1 * n < ref.sum() < 0.9 * n  # both outcomes well represented
    assert np.array_equal(got[clear], ref[clear])


def _three_agent_world():
    cfg = vehicle_config(agents_per_world=(3, 3), episode_length=1000, offroad_centre=False)
    model, s0, s1, ctl = make_world([without_edges(loop_map())], [0], 3, cfg)
    reset(model, s0, 0)
    ctl.action.assign(np.full(3, 7, np.int32))  # zero jerk: agents at rest stay put
    zeros = np.zeros(3)
    set_slots(
        s0,
        valid=[1, 1, 1],
        halted=[0, 0, 0],
        speed=zeros,
        accel_long=zeros,
        accel_lat=zeros,
        steering=zeros,
        heading=zeros,
        length=[4, 4, 4],
        width=[2, 2, 2],
    )
    return model, s0, s1, ctl


def test_collision_rule_in_step():
    model, s0, s1, ctl = _three_agent_world()
    set_slots(s0, pos=[[0, 0, 0], [3, 0, 0], [50, 0, 0]])  # 0 and 1 overlap by 1 m; 2 is alone
    alpha = s0.conditioning.numpy()[:, COND_COLLISION]
    step(model, s0, ctl, s1)
    ev = s1.events.numpy()
    col = EVENTS.index("collision")
    assert ev[:, col].tolist() == [1, 1, 0]
    assert s1.terminated.numpy().tolist() == [1, 1, 0]
    terms = s1.reward_terms.numpy()
    np.testing.assert_allclose(terms[:2, REWARD_TERMS.index("collision")], -alpha[:2], rtol=1e-6)
    # 2 of 3 agents halted >= 40 %: the world resets in the same step; agent 2 is truncated
    assert s1.world_reset.numpy()[0] == 1 and s1.world_episode.numpy()[0] == 1
    assert s1.truncated.numpy().tolist() == [0, 0, 1]


def test_halted_agents_are_obstacles_and_levels_separate():
    model, s0, s1, ctl = _three_agent_world()
    # agent 1 halted earlier and overlaps agent 0; agent 2 overlaps agent 0 but 5 m higher
    set_slots(s0, pos=[[0, 0, 0], [3, 0, 0], [-3, 0, 5]], halted=[0, 1, 0])
    step(model, s0, ctl, s1)
    col = EVENTS.index("collision")
    assert s1.events.numpy()[:, col].tolist() == [1, 0, 0]


def test_fast_agents_cannot_pass_through_each_other():
    model, s0, s1, ctl = _three_agent_world()
    # head-on at 40 m/s, 1 m boxes 4 m apart: they swap places in one step, overlapping mid-step
    set_slots(
        s0,
        pos=[[-2, 0, 0], [2, 0, 0], [50, 0, 0]],
        heading=[0, np.pi, 0],
        speed=[40, 40, 0],
        length=[1, 1, 4],
        width=[1, 1, 2],
    )
    step(model, s0, ctl, s1)
    p = s1.pos.numpy()
    assert p[0, 0] > 1.5 and p[1, 0] < -1.5  # no end-of-step overlap
    assert s1.events.numpy()[:, EVENTS.index("collision")].tolist() == [1, 1, 0]


def test_collision_penalty_grows_with_speed_by_the_configured_weight():
    """REFERENCE.md: -(a_collision + 0.1 |v|); `SimConfig.collision_speed_weight` sets the 0.1."""
    for weight in (0.1, 0.7):
        cfg = vehicle_config(
            agents_per_world=(3, 3), episode_length=1000, offroad_centre=False, collision_speed_weight=weight
        )
        model, s0, s1, ctl = make_world([without_edges(loop_map())], [0], 3, cfg)
        reset(model, s0, 0)
        ctl.action.assign(np.full(3, 7, np.int32))  # zero jerk: the speed stays 5 m/s over the step
        zeros = np.zeros(3)
        set_slots(
            s0,
            valid=[1, 1, 1],
            halted=[0, 0, 0],
            pos=[[0, 0, 0], [3, 0, 0], [50, 0, 0]],  # 0 and 1 overlap by 1 m and move together
            speed=[5, 5, 5],
            accel_long=zeros,
            accel_lat=zeros,
            steering=zeros,
            heading=zeros,
            length=[4, 4, 4],
            width=[2, 2, 2],
        )
        alpha = s0.conditioning.numpy()[:, COND_COLLISION]
        step(model, s0, ctl, s1)
        assert s1.events.numpy()[:, EVENTS.index("collision")].tolist() == [1, 1, 0]
        penalty = s1.reward_terms.numpy()[:2, REWARD_TERMS.index("collision")]
        np.testing.assert_allclose(penalty, -(alpha[:2] + weight * 5.0), rtol=1e-5)


def _np_swept_reference(rows: np.ndarray, grow: float = 0.0, samples: int = 400) -> np.ndarray:
    """Dense-time reference of the swept test: both boxes interpolated (centre linear, heading
    along the shorter turn) at ``samples`` + 1 instants, SAT at each; ``grow`` m added to
    (negative: taken from) every side."""
    t = np.linspace(0.0, 1.0, samples + 1)
    out = np.zeros(len(rows), bool)
    for i, r in enumerate(rows):
        ta = wrap(r[5] - r[2])
        tb = wrap(r[13] - r[10])
        a = np.column_stack([r[0] + (r[3] - r[0]) * t, r[1] + (r[4] - r[1]) * t, r[2] + ta * t])
        b = np.column_stack([r[8] + (r[11] - r[8]) * t, r[9] + (r[12] - r[9]) * t, r[10] + tb * t])
        size_a = np.broadcast_to([r[6] + 2 * grow, r[7] + 2 * grow], (len(t), 2))
        size_b = np.broadcast_to([r[14] + 2 * grow, r[15] + 2 * grow], (len(t), 2))
        out[i] = np_boxes_overlap_pairs(np.column_stack([a, size_a]), np.column_stack([b, size_b])).any()
    return out


def test_swept_test_matches_a_dense_time_reference():
    """Random pairs moving up to 4 m per step and turning up to 0.1 rad (more than any agent at
    dt = 0.1 s): the swept test agrees with dense sampling wherever a 5 cm margin decides it."""
    rng = np.random.default_rng(1)
    n = 600
    a0 = np.column_stack([rng.uniform(-3, 3, n), rng.uniform(-3, 3, n), rng.uniform(-np.pi, np.pi, n)])
    b0 = np.column_stack([rng.uniform(-3, 3, n), rng.uniform(-3, 3, n), rng.uniform(-np.pi, np.pi, n)])

    def moved(p0):
        ang = rng.uniform(-np.pi, np.pi, n)
        d = rng.uniform(0, 4, n)
        return p0 + np.column_stack([d * np.cos(ang), d * np.sin(ang), rng.uniform(-0.1, 0.1, n)])

    size_a = np.column_stack([rng.uniform(0.4, 5.5, n), rng.uniform(0.4, 2.5, n)])
    size_b = np.column_stack([rng.uniform(0.4, 5.5, n), rng.uniform(0.4, 2.5, n)])
    rows = np.column_stack([a0, moved(a0), size_a, b0, moved(b0), size_b])
    got = swept_boxes_overlap(rows)
    grown, shrunk = _np_swept_reference(rows, 0.05), _np_swept_reference(rows, -0.05)
    clear = grown == shrunk
    assert clear.mean() > 0.9 and 0.2 < shrunk[clear].mean() < 0.8
    assert np.array_equal(got[clear], shrunk[clear])
    # many of the hits overlap at neither the start nor the end pose, only in between
    at_ends = boxes_overlap(rows[:, [3, 4, 5, 6, 7]], rows[:, [11, 12, 13, 14, 15]])
    at_ends |= boxes_overlap(rows[:, [0, 1, 2, 6, 7]], rows[:, [8, 9, 10, 14, 15]])
    assert (got & clear & ~at_ends).sum() > 10


def test_fast_car_cannot_pass_a_standing_pedestrian():
    """A 1 m car at 20 m/s moves 2 m in a step: a 0.4 m pedestrian standing between its start
    and end boxes, clear of both, is hit (the partner did not move: no mid-step pose either)."""
    model, s0, s1, ctl = _three_agent_world()
    set_slots(
        s0,
        pos=[[-1.2, 0, 0], [-0.2, 0, 0], [50, 0, 0]],
        speed=[20, 0, 0],
        kind=[0, AGENT_PEDESTRIAN, 0],
        length=[1, 0.4, 4],
        width=[1, 0.4, 2],
    )
    step(model, s0, ctl, s1)
    # the car's end box spans 0.3..1.3 (zero jerk: 2.0 m), the pedestrian's -0.4..0
    assert s1.events.numpy()[:, EVENTS.index("collision")].tolist() == [1, 1, 0]
    # the same car passing 1.5 m to the side of it: no contact
    model, s0, s1, ctl = _three_agent_world()
    set_slots(
        s0,
        pos=[[-1.2, 0, 0], [-0.2, 1.5, 0], [50, 0, 0]],
        speed=[20, 0, 0],
        kind=[0, AGENT_PEDESTRIAN, 0],
        length=[1, 0.4, 4],
        width=[1, 0.4, 2],
    )
    step(model, s0, ctl, s1)
    assert s1.events.numpy()[:, EVENTS.index("collision")].tolist() == [0, 0, 0]
