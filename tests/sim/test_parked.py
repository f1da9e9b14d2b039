"""Parked cars: snapshot rows after the agent slots, placed on parking spots (or beside lanes),
never overlapping, collidable, carried unchanged between resets and redrawn at each reset."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps import load
from pictura.maps.roadmap import AGENT_VEHICLE
from pictura.sim import SimConfig, build_model, reset, step
from pictura.sim.snapshot import BOX_ROW_FLOATS, BoxView, WorldLayout, box_row

from .conftest import (
    loop_map,
    make_world,
    np_box_corners,
    np_segments_intersect,
    set_slots,
    straight_map,
    vehicle_config,
    wrap,
)
from .test_world_spawn import overlapping_pairs


@pytest.fixture(scope="module")
def town():
    return load("procedural:seed=1,blocks_x=2,blocks_y=2")


def test_layout_rows_and_bad_layouts(town):
    lay = WorldLayout.uniform([0, 0, 0], 10, [len(town.light_position)], parked_per_world=4)
    assert lay.box_count == 30 + 12
    assert [lay.world_parked_start(w) for w in range(3)] == [30, 34, 38]
    with pytest.raises(ValueError, match="parked_per_world"):
        WorldLayout.uniform([0], 10, [0], parked_per_world=-1)
    with pytest.raises(ValueError, match="parked_per_world"):
        build_model([town], lay, SimConfig(agents_per_world=(1, 10)))  # config says 32


def test_parked_cars_on_spots_disjoint_and_redrawn(town):
    P = 16
    cfg = SimConfig(agents_per_world=(10, 30), parked_per_world=P, episode_length=5)
    lay = WorldLayout.uniform([0] * 8, 30, [len(town.light_position)], parked_per_world=P)
    model = build_model([town], lay, cfg)
    s0, s1, ctl = model.state(), model.state(), model.control()
    reset(model, s0, 2)
    st = s0.numpy()
    S = model.num_slots
    assert st["agent_box"].shape == (S + 8 * P, BOX_ROW_FLOATS)
    parked = BoxView(st["agent_box"][S:].reshape(8, P, BOX_ROW_FLOATS))
    ok = parked.valid
    assert np.all(parked.kind[ok] == AGENT_VEHICLE)
    assert ok.sum() > 0.9 * ok.size  # 18 spots for 16 cars: most are placed
    spots = town.parking_spots
    for w in range(8):
        boxes = BoxView(parked.rows[w][ok[w]])
        # every car sits on a parking spot, with its heading
        d = np.linalg.norm(boxes.xy[:, None] - spots[None, :, :2], axis=-1)
        k = d.argmin(1)
        assert np.all(d.min(1) < 1e-4)
        assert np.all(np.abs(wrap(boxes.heading - spots[k, 3])) < 1e-5)
        assert np.all((boxes.length >= 3.5) & (boxes.length <= 5.5) & (boxes.width >= 1.6) & (boxes.width <= 2.2))
        np.testing.assert_allclose(boxes.height, 1.5)
        # parked cars and agents never overlap each other
        valid = st["valid"].reshape(8, 30)[w] == 1
        agents = np.stack(
            [
                st["pos"].reshape(8, 30, 3)[w, :, 0],
                st["pos"].reshape(8, 30, 3)[w, :, 1],
                st["heading"].reshape(8, 30)[w],
                st["length"].reshape(8, 30)[w],
                st["width"].reshape(8, 30)[w],
            ],
            1,
        )[valid]
        footprint = np.stack([boxes.x, boxes.y, boxes.heading, boxes.length, boxes.width], 1)
        both = np.concatenate([footprint, agents])
        z = np.concatenate([boxes.z, st["pos"].reshape(8, 30, 3)[w, valid, 2]])
        assert len(overlapping_pairs(both, z)) == 0
    # carried unchanged while no world resets, redrawn at a reset (episode_length 5)
    before = st["agent_box"][S:].copy()
    for _ in range(5):
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        now = s0.agent_box.numpy()[S:]
        reset_w = s0.world_reset.numpy()
        for w in range(8):
            rows = slice(w * P, (w + 1) * P)
            if reset_w[w]:
                assert not np.array_equal(now[rows], before[rows])
            else:
                np.testing.assert_array_equal(now[rows], before[rows])
        before = now.copy()


def test_parked_fallback_beside_lanes_clear_of_edges():
    road = loop_map()
    cfg = vehicle_config(agents_per_world=(5, 10), parked_per_world=12)
    model, s0, s1, ctl = make_world([road], [0, 0], 10, cfg)
    reset(model, s0, 4)
    boxes = s0.agent_box.numpy()[model.num_slots :]
    ok = BoxView(boxes).valid
    assert ok.sum() >= 20
    edges = road.road_edge_segments()[:, :, :2].astype(np.float64)
    lane_seg, owner = road.lane_segments()
    for row in boxes[ok]:
        b = BoxView(row)
        c = np_box_corners(b.x, b.y, b.heading, b.length, b.width)
        for k in range(4):
            p1 = np.broadcast_to(c[k], edges[:, 0].shape)
            p2 = np.broadcast_to(c[(k + 1) % 4], edges[:, 0].shape)
            assert not np.any(np_segments_intersect(p1, p2, edges[:, 0], edges[:, 1]))
        # the car's right side is 0.1 m inside its lane's right boundary (centre + width/2) ...
        a, e = lane_seg[:, 0, :2], lane_seg[:, 1, :2]
        ab = e - a
        right = np.array([np.sin(b.heading), -np.cos(b.heading)])
        right_mid = b.xy + 0.5 * b.width * right
        centre = right_mid + 0.1 * right - 0.5 * road.lane_width[0] * right
        t = np.clip(((centre - a) * ab).sum(1) / (ab**2).sum(1), 0, 1)
        assert np.linalg.norm(a + ab * t[:, None] - centre, axis=1).min() < 0.05
        # ... and that boundary is the curb: the outer road edge of the loop lies 0.1 m to the right
        ab_e = edges[:, 1] - edges[:, 0]
        q = right_mid + 0.1 * right
        te = np.clip(((q - edges[:, 0]) * ab_e).sum(1) / (ab_e**2).sum(1), 0, 1)
        assert np.linalg.norm(edges[:, 0] + ab_e * te[:, None] - q, axis=1).min() < 0.05


def _parked_world(parked_z: float, x: float = 19.5, speed: float = 10.0, length: float = 3.0, parked_length=4.0):
    """An agent at ``x`` driving +x at ``speed`` toward a parked car centred at x = 22."""
    cfg = vehicle_config(agents_per_world=(1, 1), parked_per_world=1)
    model, s0, s1, ctl = make_world([straight_map()], [0], 1, cfg)
    reset(model, s0, 0)
    box = s0.agent_box.numpy()
    box[1] = box_row(x=22.0, y=-10.0, z=parked_z, heading=0.0, length=parked_length, width=2.0, height=1.5, kind=0.0)
    set_slots(
        s0,
        agent_box=box,
        valid=[1],
        halted=[0],
        pos=[[x, -10.0, 0.0]],
        heading=[0.0],
        speed=[speed],
        accel_long=[0.0],
        accel_lat=[0.0],
        steering=[0.0],
        length=[length],
        width=[1.5],
        goal=np.full((1, 3, 3), 1000.0),
        goal_index=[0],
    )
    ctl.action.assign(np.array([7], np.int32))
    step(model, s0, ctl, s1)
    return s1.numpy()


def test_hitting_a_parked_car_is_a_collision_unless_on_another_level():
    # front bumper 21 -> 22 m; the parked car's rear is at 20 m: overlap
    st = _parked_world(0.0)
    assert st["events"][0, 0] == 1 and st["terminated"][0] == 1
    st = _parked_world(10.0)  # the parked car is on an overpass 10 m up
    assert st["events"][0].tolist() == [0, 0, 0, 0]


def test_a_parked_car_counts_within_4_m_in_height():
    assert _parked_world(3.5)["events"][0, 0] == 1
    assert _parked_world(5.0)["events"][0].tolist() == [0, 0, 0, 0]


def test_a_fast_car_cannot_pass_through_a_thin_parked_car():
    """At 40 m/s a 1 m car moves 4 m in a step: from 19.0-20.0 m to 23.0-24.0 m, clear of a
    0.5 m parked box at 21.75-22.25 m at both poses; the swept test still hits it."""
    end_rear = 19.5 + 40.0 * 0.1 - 0.5  # zero jerk and acceleration: 4 m in the 0.1 s step
    assert 19.5 + 0.5 < 22.0 - 0.25 and end_rear > 22.0 + 0.25  # clear of the box at both poses
    st = _parked_world(0.0, x=19.5, speed=40.0, length=1.0, parked_length=0.5)
    assert st["events"][0, 0] == 1 and st["terminated"][0] == 1
