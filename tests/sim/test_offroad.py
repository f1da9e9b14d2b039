"""Off-road: the swept box rule on hand-built poses around a straight road edge (y = 0, z = 0),
and App. C.1's centre test (the centre off the drivable map) on hand-built maps."""

from __future__ import annotations

import numpy as np

from pictura.sim import EVENTS, REWARD_TERMS, reset, step
from pictura.sim.features import COND_OFFROAD
from pictura.sim.step import centre_on_drivable, swept_offroad

from .conftest import (
    LANE_WIDTH,
    crossing_map,
    make_world,
    np_point_polyline_distance,
    set_slots,
    straight_map,
    vehicle_config,
)

H = np.pi / 2


def _model():
    cfg = vehicle_config(agents_per_world=(1, 1))
    return make_world([straight_map()], [0], 1, cfg)


def test_hand_built_sweeps():
    model = _model()[0]
    cases = [
        # x0, y0, z0, h0, x1, y1, z1, h1, length, width -> crosses?
        ((0, -3.0, 0, H, 0, -1.5, 0, H, 4, 2), True),  # nose pushes through the edge
        ((-10, -1.2, 0, 0, -5, -1.2, 0, 0, 4, 2), False),  # parallel, 0.2 m clear
        ((0, -1.5, 0, 0, 0, -1.5, 0, 3.0, 4.5, 1.8), True),  # U-turn swings across, ends clear
        ((0, -1.5, 0, 0, 0, -1.5, 0, 0, 4.5, 1.8), False),  # start pose of the U-turn alone
        ((0, -1.5, 0, 3.0, 0, -1.5, 0, 3.0, 4.5, 1.8), False),  # end pose of the U-turn alone
        ((0, -3.0, 0, H, 0, 3.0, 0, H, 1, 1), True),  # fast: jumps over the edge in one step
        ((0, -3.0, 4.5, H, 0, -1.5, 4.5, H, 4, 2), False),  # 4.5 m above the edge: other level
        ((0, -3.0, 3.0, H, 0, -1.5, 3.0, H, 4, 2), True),  # 3 m above: same level
        ((20, -10, 0, 0, 25, -10, 0, 0, 4, 2), False),  # mid-road
        ((28, -10, 0, 0, 32, -10, 0, 0, 4, 2), False),  # passes under the overpass edge (z 10)
        ((28, -10, 8, 0, 32, -10, 8, 0, 4, 2), True),  # ... and into it at z 8
    ]
    poses = np.array([c[0] for c in cases], float)
    expected = [c[1] for c in cases]
    assert swept_offroad(model, 0, poses).tolist() == expected


def test_offroad_rule_in_step():
    model, s0, s1, ctl = _model()
    reset(model, s0, 0)
    set_slots(
        s0,
        valid=[1],
        halted=[0],
        pos=[[0, -2.5, 0]],
        heading=[H],
        speed=[10.0],
        accel_long=[0.0],
        accel_lat=[0.0],
        steering=[0.0],
        length=[4.0],
        width=[2.0],
    )
    alpha = s0.conditioning.numpy()[0, COND_OFFROAD]
    ctl.action.assign(np.full(1, 7, np.int32))
    step(model, s0, ctl, s1)
    ev = s1.events.numpy()[0]
    assert ev[EVENTS.index("offroad")] == 1 and ev[EVENTS.index("collision")] == 0
    assert s1.terminated.numpy()[0] == 1
    np.testing.assert_allclose(s1.reward_terms.numpy()[0, REWARD_TERMS.index("offroad")], -alpha, rtol=1e-6)


def test_centre_test_matches_a_lane_distance_reference():
    """`centre_on_drivable`: a point is on the drivable map when it lies within one lane width of
    a lane centreline (the lane's polygon grown by half a lane width each side), against a NumPy
    point-to-polyline distance over the crossing's lanes."""
    road = crossing_map()
    model = make_world([road], [0], 1, vehicle_config(agents_per_world=(1, 1)))[0]
    rng = np.random.default_rng(0)
    pts = np.column_stack([rng.uniform(-45, 45, 3000), rng.uniform(-45, 45, 3000), np.zeros(3000)])
    seg = road.lane_segments()[0][:, :, :2]
    dist = np_point_polyline_distance(pts[:, :2], seg)
    clear = np.abs(dist - LANE_WIDTH) > 1e-3
    got = centre_on_drivable(model, 0, pts)
    assert 0.1 < (dist <= LANE_WIDTH).mean() < 0.9
    assert np.array_equal(got[clear], (dist <= LANE_WIDTH)[clear])
    # another level: the same points 5 m up are off the map
    assert not centre_on_drivable(model, 0, pts[:50] + [0, 0, 5.0]).any()


def test_centre_off_the_drivable_map_is_offroad():
    """App. C.1's second test in `step`: a vehicle beyond the end of the straight road and one in
    the block between the crossing's roads cross no road edge but are off-road; one inside the
    junction, and one on the straight road, are not."""
    model, s0, s1, ctl = make_world(
        [crossing_map(), straight_map()], [0, 0, 1, 1], 1, vehicle_config(agents_per_world=(1, 1))
    )
    reset(model, s0, 0)
    n = 4
    set_slots(
        s0,
        valid=np.ones(n),
        halted=np.zeros(n),
        # junction (crossing), block corner (crossing), past the road's end, on the road
        pos=[[0.5, 0.5, 0], [20, 20, 0], [80, -10, 0], [20, -10, 0]],
        heading=np.zeros(n),
        speed=np.full(n, 5.0),
        accel_long=np.zeros(n),
        accel_lat=np.zeros(n),
        steering=np.zeros(n),
        length=np.full(n, 4.0),
        width=np.full(n, 2.0),
        goal=np.full((n, 3, 3), 1000.0),
        goal_index=np.zeros(n),
    )
    ctl.action.assign(np.full(n, 7, np.int32))
    # the reference: no box crosses a road edge this step
    poses = np.column_stack([s0.pos.numpy(), np.zeros(n), s0.pos.numpy() + [0.5, 0, 0], np.zeros(n), np.full(n, 4.0), np.full(n, 2.0)])
    assert not swept_offroad(model, 0, poses[:2]).any() and not swept_offroad(model, 1, poses[2:]).any()
    step(model, s0, ctl, s1)
    assert s1.events.numpy()[:, EVENTS.index("offroad")].tolist() == [0, 1, 1, 0]
    assert s1.terminated.numpy().tolist() == [0, 1, 1, 0]
