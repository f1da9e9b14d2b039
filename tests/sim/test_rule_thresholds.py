"""Each event rule on both sides of every threshold it has (REFERENCE.md "World rules",
"Reward terms", App. C.1): red light (10 m, 45 deg, 1.5x stop line), off-road (the box's
edge against a road edge), collision (|dz| < 4 m) and its speed term, the evaluation goal
radius, at fault (0.2 m/s, struck from behind the rear bumper).

Every scenario first asserts, from a NumPy reconstruction of the step, that the rule under test
is actually consulted (the bumper does cross the line, the boxes do overlap, ...), so a
threshold that moves cannot hide behind a scenario that never reaches it. Agents that are not
part of a scenario sit far apart on the road, so the other rules stay silent."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pictura.eval.metrics import collision_at_fault
from pictura.maps.roadmap import AGENT_PEDESTRIAN, AGENT_VEHICLE, LIGHT_RED
from pictura.sim import EVENTS, REWARD_TERMS, reset, step
from pictura.sim.features import (
    ACTION_COAST,
    COND_CENTER_BIAS,
    COND_COLLISION,
    COND_COMFORT,
    COND_DELTA_GOAL,
    COND_LANE_ALIGN,
    COND_LANE_CENTER,
    COND_OVERSPEED,
    COND_REVERSE,
    COND_TIMESTEP,
    COND_V_GOAL,
    COND_VEL_ALIGN,
    COND_VELOCITY,
)

from .conftest import (
    loop_map,
    make_world,
    np_box_corners,
    np_boxes_overlap_pairs,
    np_segments_intersect,
    set_slots,
    straight_map,
    vehicle_config,
    without_edges,
)

COLLISION, OFFROAD, RED, GOAL = (EVENTS.index(e) for e in ("collision", "offroad", "red_light", "goal"))
STOP_LANE = 4  # straight_map: lane chunk x -10..0 ends at the stop line x = 0, y -15..-5
STOP_A, STOP_B = np.array([0.0, -15.0]), np.array([0.0, -5.0])
STOP_MID = 0.5 * (STOP_A + STOP_B)


def _one_agent_step(
    x, y, heading, speed, length=4.0, width=2.0, lane=STOP_LANE, light=LIGHT_RED, accel_long=0.0, accel_lat=0.0,
    steering=0.0, z=0.0, **config,
):  # fmt: skip
    """A vehicle on the straight road posed by hand, stepped once with zero jerk. A second one
    stands still far behind it, and the early reset waits for every agent to halt, so the world
    is not respawned (over the recorded poses) when the first one's infraction halts it."""
    cfg = vehicle_config(agents_per_world=(2, 2), episode_length=1000, early_reset_halted_fraction=1.0, **config)
    model, s0, s1, ctl = make_world([straight_map()], [0], 2, cfg)
    reset(model, s0, 0)
    set_slots(
        s0, valid=[1, 1], halted=[0, 0], pos=[[x, y, z], [-45.0, -10.0, 0.0]], heading=[heading, 0.0],
        speed=[speed, 0.0], accel_long=[accel_long, 0.0], accel_lat=[accel_lat, 0.0], steering=[steering, 0.0],
        length=[length, 4.0], width=[width, 2.0], lane=[lane, 0], light_state=[light],
    )  # fmt: skip
    ctl.action.assign(np.full(2, ACTION_COAST, np.int32))
    step(model, s0, ctl, s1)
    assert s1.world_reset.numpy()[0] == 0 and not s1.events.numpy()[1].any()
    return s0, s1


def _rear_path(s1, length):
    """The rear-bumper midpoint before and after the step (NumPy, from the recorded poses)."""
    p0, p1 = s1.prev_pos.numpy()[0, :2].astype(np.float64), s1.pos.numpy()[0, :2].astype(np.float64)
    h0, h1 = float(s1.prev_heading.numpy()[0]), float(s1.heading.numpy()[0])
    rear0 = p0 - 0.5 * length * np.array([math.cos(h0), math.sin(h0)])
    rear1 = p1 - 0.5 * length * np.array([math.cos(h1), math.sin(h1)])
    return rear0, rear1, p1


def _crosses_line(rear0, rear1, scale):
    a = STOP_MID + (STOP_A - STOP_MID) * scale
    b = STOP_MID + (STOP_B - STOP_MID) * scale
    return bool(np_segments_intersect(rear0, rear1, a, b))


# ---- red light -------------------------------------------------------------------------------
@pytest.mark.parametrize(("length", "violates"), [(18.0, True), (20.0, False)])
def test_red_light_needs_the_agent_within_10_m_of_the_stop_line_midpoint(length, violates):
    # a long vehicle puts its centre ~length/2 past the line while its rear bumper crosses it
    x0 = 0.5 * length - 0.5  # rear bumper from x = -0.5 to +0.5 at 10 m/s
    _, s1 = _one_agent_step(x0, -10.0, 0.0, 10.0, length=length)
    rear0, rear1, p1 = _rear_path(s1, length)
    assert _crosses_line(rear0, rear1, 1.0)  # the bumper crosses the line itself
    distance = float(np.linalg.norm(p1 - STOP_MID))
    assert (distance < 10.0) == violates and abs(distance - 10.0) > 0.3
    assert s1.events.numpy()[0, OFFROAD] == 0
    assert s1.events.numpy()[0, RED] == int(violates)


@pytest.mark.parametrize(("heading_deg", "violates"), [(40.0, True), (50.0, False), (-40.0, True), (-50.0, False)])
def test_red_light_needs_the_heading_within_45_deg_of_the_lane(heading_deg, violates):
    """Both ways: the window is |heading error| < 45 deg, so a car turned clockwise (or driving
    the wrong way) across the line is no violation either."""
    h = math.radians(heading_deg)
    _, s1 = _one_agent_step(2.0 * math.cos(h) - 0.3, -10.0, h, 10.0)  # rear bumper at x = -0.3
    rear0, rear1, p1 = _rear_path(s1, 4.0)
    assert _crosses_line(rear0, rear1, 1.0)
    assert float(np.linalg.norm(p1 - STOP_MID)) < 10.0
    assert abs(float(s1.heading.numpy()[0]) - h) < 1e-5  # the lane runs along +x
    assert s1.events.numpy()[0, OFFROAD] == 0
    assert s1.events.numpy()[0, RED] == int(violates)


@pytest.mark.parametrize(("y", "violates"), [(-3.0, True), (-2.0, False), (-16.9, True), (-17.8, False)])
def test_red_light_stop_line_is_extended_exactly_1_5_times(y, violates):
    _, s1 = _one_agent_step(1.5, y, 0.0, 10.0)  # rear bumper from x = -0.5 to +0.5
    rear0, rear1, p1 = _rear_path(s1, 4.0)
    assert not _crosses_line(rear0, rear1, 1.0)  # beyond the printed line's ends ...
    assert _crosses_line(rear0, rear1, 1.5) == violates  # ... only the 1.5x extension can catch it
    assert _crosses_line(rear0, rear1, 1.6)  # (a longer extension would catch both)
    assert float(np.linalg.norm(p1 - STOP_MID)) < 10.0
    assert s1.events.numpy()[0, OFFROAD] == 0
    assert s1.events.numpy()[0, RED] == int(violates)


# ---- reward terms with a threshold ----------------------------------------------------------
def _terms_on_the_open_road(speed, accel_long=0.0, y=-10.0, heading=0.0, accel_lat=0.0):
    """Reward terms of a vehicle driving on the lane, far from the stop line and the edges
    (the straight road's lanes carry no speed limit: the 15 m/s default applies). A lateral
    acceleration comes with the steering angle that holds it (a_lat = v^2 tan(delta) / wheelbase)."""
    steering = math.atan(accel_lat * 2.4 / max(speed * speed, 1.0))  # wheelbase 0.6 x 4 m
    s0, s1 = _one_agent_step(
        -35.0, y, heading, speed, lane=1, accel_long=accel_long, accel_lat=accel_lat, steering=steering
    )
    assert not s1.events.numpy()[0, [COLLISION, OFFROAD, RED]].any()
    assert s1.lane.numpy()[0] >= 0
    if heading == 0.0 and accel_lat == 0.0:
        assert abs(float(s1.lane_heading_error.numpy()[0])) < 1e-4
    return s1, dict(zip(REWARD_TERMS, s1.reward_terms.numpy()[0].astype(np.float64), strict=True)), s0


@pytest.mark.parametrize(("speed", "fires"), [(16.9, False), (17.1, True)])
def test_overspeed_fires_2_m_s_over_the_default_limit_of_15(speed, fires):
    s1, terms, _ = _terms_on_the_open_road(speed)
    assert float(s1.speed.numpy()[0]) == pytest.approx(speed, abs=1e-5)  # zero jerk keeps the speed
    assert (terms["overspeed"] < 0) == fires


@pytest.mark.parametrize(("speed", "pays"), [(2.4, False), (2.6, True)])
def test_velocity_reward_needs_more_than_2_5_m_s(speed, pays):
    _, terms, _ = _terms_on_the_open_road(speed)
    assert terms["velocity"] == pytest.approx(2.5e-3 * 0.1 if pays else 0.0, rel=1e-5)  # fixed alpha x dt


@pytest.mark.parametrize(("accel", "uncomfortable"), [(-2.9, False), (-3.1, True)])
def test_comfort_counts_braking_harder_than_3_m_s2(accel, uncomfortable):
    s1, terms, _ = _terms_on_the_open_road(10.0, accel_long=accel)
    assert float(s1.accel_long.numpy()[0]) == pytest.approx(accel, abs=1e-5)
    assert (terms["comfort"] < 0) == uncomfortable


@pytest.mark.parametrize(
    ("dy", "heading_deg", "aligned"),
    [(0.0, 0.0, True), (1.2, 0.0, True), (-2.5, 0.0, True), (1.0, 55.0, True), (1.0, 65.0, False)],
)
def test_lane_centre_and_align_terms_follow_their_closed_forms(dy, heading_deg, aligned):
    s1, terms, s0 = _terms_on_the_open_road(5.0, y=-10.0 + dy, heading=math.radians(heading_deg))
    cond = s0.conditioning.numpy()[0].astype(np.float64)
    theta = float(s1.lane_heading_error.numpy()[0])
    offset = float(s1.lane_offset.numpy()[0])
    y1 = float(s1.pos.numpy()[0, 1])
    assert abs(offset) == pytest.approx(abs(y1 + 10.0), abs=1e-3)  # lateral distance to the centre
    assert abs(theta) == pytest.approx(math.radians(heading_deg), abs=1e-4)
    assert (math.cos(theta) > 0.5) == aligned  # the side of the 60-degree threshold
    d = abs(offset - cond[COND_CENTER_BIAS])
    dt, v = 0.1, 5.0
    centre = -cond[COND_LANE_CENTER] * dt * (float(aligned) * d - 0.05 * math.exp(-(d - 0.5)))
    align = cond[COND_LANE_ALIGN] * dt * (
        min(math.cos(theta), 0.0)
        + cond[COND_VEL_ALIGN] * min(v * math.cos(theta), 0.0)
        + 0.0025 * (1 - 2 * abs(theta) / math.pi)
    )
    assert terms["lane_center"] == pytest.approx(centre, rel=1e-4, abs=1e-9)
    assert terms["lane_align"] == pytest.approx(align, rel=1e-4, abs=1e-9)


def _shaped_terms_reference(s0, s1, dt=0.1, speed_limit=15.0):
    """REFERENCE.md "Reward terms" for the eight shaped terms, from the step's outcome (speed,
    accelerations, jerks, lane offset and heading error) and the agent's Table 2 coefficients."""
    a = s0.conditioning.numpy()[0].astype(np.float64)
    v = float(s1.speed.numpy()[0])
    a_long, a_lat = float(s1.accel_long.numpy()[0]), float(s1.accel_lat.numpy()[0])
    j_long, j_lat = float(s1.jerk_long.numpy()[0]), float(s1.jerk_lat.numpy()[0])
    theta, x = float(s1.lane_heading_error.numpy()[0]), float(s1.lane_offset.numpy()[0])
    d = abs(x - a[COND_CENTER_BIAS])
    cos_t = math.cos(theta)
    discomfort = float(abs(a_long) > 3) + float(abs(a_lat) > 3) + float(abs(j_long) > 5 or abs(j_lat) > 5)
    return {
        "comfort": -a[COND_COMFORT] * discomfort,
        "lane_align": a[COND_LANE_ALIGN] * dt * (
            min(cos_t, 0.0) + a[COND_VEL_ALIGN] * min(v * cos_t, 0.0) + 0.0025 * (1 - 2 * abs(theta) / math.pi)
        ),
        "lane_center": -a[COND_LANE_CENTER] * dt * (float(cos_t > 0.5) * d - 0.05 * math.exp(-(d - 0.5))),
        "velocity": a[COND_VELOCITY] * dt * max(cos_t, 0.0) * float(v > 2.5),
        "overspeed": -a[COND_OVERSPEED] * float(v > speed_limit + 2.0),
        "reverse": -a[COND_REVERSE] * dt * float(v < 0.0),
        "timestep": -a[COND_TIMESTEP] * dt * float(abs(v) > 0 or abs(a_long) > 0 or abs(a_lat) > 0),
    }


@pytest.mark.parametrize(
    ("speed", "accel", "dy", "heading_deg", "accel_lat"),
    [
        (10.0, 0.0, 0.0, 0.0, 0.0),  # cruising on the centre line
        (-0.3, 0.0, 0.4, 0.0, 0.0),  # reversing slowly
        (0.3, 0.0, -0.4, 0.0, 0.0),  # creeping forward
        (0.0, 0.0, 1.0, 10.0, 0.0),  # standing still
        (18.0, -4.0, -1.5, 20.0, 0.0),  # fast, braking hard, off centre and turned
        (5.0, 0.0, 2.0, 120.0, 0.0),  # against the lane (cos < 0)
        (10.0, 0.0, 0.0, 0.0, 3.5),  # turning: lateral acceleration between 3 and 5 m/s^2
        (10.0, 0.0, 0.0, 0.0, -2.5),  # turning the other way, gently
    ],
)
def test_every_shaped_reward_term_follows_its_closed_form(speed, accel, dy, heading_deg, accel_lat):
    s1, terms, s0 = _terms_on_the_open_road(
        speed, accel_long=accel, y=-10.0 + dy, heading=math.radians(heading_deg), accel_lat=accel_lat
    )
    assert float(s1.accel_lat.numpy()[0]) == pytest.approx(accel_lat, abs=0.05)
    expected = _shaped_terms_reference(s0, s1)
    assert float(s1.speed.numpy()[0]) == pytest.approx(speed + 0.1 * accel, abs=1e-4)
    for name, value in expected.items():
        assert terms[name] == pytest.approx(value, rel=1e-4, abs=1e-9), name
    assert terms["goal"] == 0.0


# ---- one infraction per agent per step: off-road, then collision, then red light ------------
def test_a_collision_on_the_red_line_counts_as_the_collision_only():
    # 0 runs the red light (rear bumper over the line) into 1, standing just past the line
    s1, _ = _pair_world([[1.5, -10, 0, 0], [5.5, -10, 0, 0], [-40, -10, 0, 0]], [10.0, 0.0, 0.0], lanes=[STOP_LANE, 5, 0])
    rear0, rear1, _ = _rear_path(s1, 4.0)
    assert _crosses_line(rear0, rear1, 1.0)  # the red-light rule's geometry holds for 0 ...
    pos = s1.pos.numpy()
    assert np_boxes_overlap_pairs(np.array([[*pos[0, :2], 0, 4, 2]]), np.array([[*pos[1, :2], 0, 4, 2]]))[0]
    events = s1.events.numpy()
    assert events[0, COLLISION] == 1 and events[0, RED] == 0  # ... but the collision comes first
    assert events[:, COLLISION].tolist() == [1, 1, 0]


def test_a_collision_while_crossing_the_road_edge_counts_as_the_off_road_only():
    s1, _ = _pair_world([[-20, -0.95, 0, 0], [-16.5, -1.5, 0, 0], [-40, -10, 0, 0]], [10.0, 0.0, 0.0], edges=True)
    pos = s1.pos.numpy()
    assert np_boxes_overlap_pairs(np.array([[*pos[0, :2], 0, 4, 2]]), np.array([[*pos[1, :2], 0, 4, 2]]))[0]
    events = s1.events.numpy()
    assert events[0, OFFROAD] == 1 and events[0, COLLISION] == 0
    assert events[1, COLLISION] == 1  # the other car was hit all the same


# ---- off-road --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("y", "heading_deg", "crosses"),
    [(-1.05, 0.0, False), (-0.95, 0.0, True), (-3.05, 90.0, False), (-2.95, 90.0, True)],
)
def test_offroad_fires_exactly_when_the_swept_box_reaches_the_road_edge(y, heading_deg, crosses):
    # the edge y = 0; 4 x 2 m box, 1 m of travel: along the edge its side comes within 0.05 m of
    # it (or 0.05 m over it); heading into it, its front does
    h = math.radians(heading_deg)
    _, s1 = _one_agent_step(-30.0, y, h, 10.0, lane=1)
    p0, p1 = s1.prev_pos.numpy()[0, :2], s1.pos.numpy()[0, :2]
    assert np.linalg.norm(p1 - p0) == pytest.approx(1.0, abs=1e-4)
    top = max(np_box_corners(*p[:2], h, 4.0, 2.0)[:, 1].max() for p in (p0, p1))
    assert (top > 0.0) == crosses and abs(top) == pytest.approx(0.05, abs=1e-3)
    assert -20.0 < p1[1] < 0.0  # the centre stays on the road
    assert s1.events.numpy()[0, OFFROAD] == int(crosses)
    assert s1.terminated.numpy()[0] == int(crosses) and s1.halted.numpy()[0] == int(crosses)


@pytest.mark.parametrize(("z", "crosses"), [(3.5, True), (4.5, False)])
def test_offroad_counts_road_edges_within_4_m_in_height(z, crosses):
    # 0.05 m over the edge (z = 0); the centre test is off, since 4.5 m above the road the centre
    # is off the drivable map as well
    _, s1 = _one_agent_step(-30.0, -0.95, 0.0, 10.0, lane=1, z=z, offroad_centre=False)
    assert float(s1.pos.numpy()[0, 2]) == pytest.approx(z)
    assert s1.events.numpy()[0, OFFROAD] == int(crosses)


# ---- collision: the |dz| tolerance and the speed term ----------------------------------------
def _pair_world(poses, speeds, lanes=None, edges=False, sizes=None, **config):
    """Vehicles posed by hand (x, y, z, heading) with signed speeds, 4 x 2 m unless ``sizes``
    gives (length, width) rows, stepped once with zero jerk, the light red, the road edges only
    when ``edges``. No early reset (its fraction 1.0), so the halted agents stay as they are."""
    n = len(poses)
    cfg = vehicle_config(agents_per_world=(n, n), episode_length=1000, early_reset_halted_fraction=1.0, **config)
    road = straight_map() if edges else without_edges(straight_map())
    model, s0, s1, ctl = make_world([road], [0], n, cfg)
    reset(model, s0, 0)
    poses = np.asarray(poses, np.float64)
    sizes = np.tile([4.0, 2.0], (n, 1)) if sizes is None else np.asarray(sizes, np.float64)
    zeros = np.zeros(n)
    set_slots(
        s0, valid=np.ones(n), halted=zeros, pos=poses[:, :3], heading=poses[:, 3], speed=speeds,
        accel_long=zeros, accel_lat=zeros, steering=zeros, length=sizes[:, 0], width=sizes[:, 1],
        light_state=[LIGHT_RED],
    )  # fmt: skip
    if lanes is not None:
        set_slots(s0, lane=lanes)
    ctl.action.assign(np.full(n, ACTION_COAST, np.int32))
    alpha = s0.conditioning.numpy()[:, COND_COLLISION].astype(np.float64)
    step(model, s0, ctl, s1)
    return s1, alpha


@pytest.mark.parametrize(("dz", "collide"), [(3.5, True), (4.5, False)])
def test_collision_needs_the_boxes_within_4_m_in_height(dz, collide):
    s1, _ = _pair_world([[0, -10, 0, 0], [3, -10, dz, 0], [-40, -10, 0, 0]], [0.0, 0.0, 0.0])
    pos = s1.pos.numpy()
    boxes = np.array([[p[0], p[1], 0.0, 4.0, 2.0] for p in pos[:2]])
    assert np_boxes_overlap_pairs(boxes[:1], boxes[1:])[0]  # the footprints overlap in xy
    assert pos[1, 2] - pos[0, 2] == pytest.approx(dz)
    assert s1.events.numpy()[:, COLLISION].tolist() == [int(collide), int(collide), 0]


def test_swept_collision_counts_once_both_agents_move_0_1_m():
    # 0 (1 x 1 m) passes through 1 (1 x 1 m, creeping 0.11 m forward) within the step: apart at
    # both ends of the step, overlapping at the mid-step poses
    poses = [[-2.5, -10, 0, 0], [0, -10, 0, 0], [-40, -10, 0, 0]]
    s1, _ = _pair_world(poses, [40.0, 1.1, 0.0], sizes=[[1, 1], [1, 1], [4, 2]])
    p0, p1 = s1.prev_pos.numpy()[:2, :2].astype(np.float64), s1.pos.numpy()[:2, :2].astype(np.float64)
    moved = np.linalg.norm(p1 - p0, axis=1)
    assert moved[0] == pytest.approx(4.0, abs=1e-4) and moved[1] == pytest.approx(0.11, abs=1e-4)
    box = lambda p: np.array([[p[0], p[1], 0.0, 1.0, 1.0]])  # noqa: E731
    assert not np_boxes_overlap_pairs(box(p0[0]), box(p0[1]))[0]
    assert not np_boxes_overlap_pairs(box(p1[0]), box(p1[1]))[0]
    mid = 0.5 * (p0 + p1)
    assert np_boxes_overlap_pairs(box(mid[0]), box(mid[1]))[0]
    assert s1.events.numpy()[:, COLLISION].tolist() == [1, 1, 0]


def test_a_fast_agent_ending_on_a_standing_one_collides():
    # 0 (1 x 1 m) covers 4 m in the step and ends overlapping 1 (standing): its mid-step pose is
    # 2.5 m from 1, so only a broad phase that covers the whole move finds the pair
    poses = [[-4, -10, 0, 0], [0.5, -10, 0, 0], [-40, -10, 0, 0]]
    s1, _ = _pair_world(poses, [40.0, 0.0, 0.0], sizes=[[1, 1], [1, 1], [4, 2]])
    p1 = s1.pos.numpy()[:2, :2].astype(np.float64)
    assert p1[0, 0] == pytest.approx(0.0, abs=1e-4)
    assert np_boxes_overlap_pairs(np.array([[*p1[0], 0, 1, 1]]), np.array([[*p1[1], 0, 1, 1]]))[0]
    assert s1.events.numpy()[:, COLLISION].tolist() == [1, 1, 0]


def test_collision_penalty_grows_with_the_speed_on_the_collision_step():
    # 0 drives at 10 m/s into 1 (standing); 2 reverses at 2 m/s into 3 (standing); 4 is alone
    poses = [[-20, -10, 0, 0], [-15.5, -10, 0, 0], [20, -10, 0, 0], [15.9, -10, 0, 0], [-45, -10, 0, 0]]
    speeds = np.array([10.0, 0.0, -2.0, 0.0, 0.0])
    s1, alpha = _pair_world(poses, speeds)
    # reference: with zero jerk and no acceleration the speed of the step is the speed before it
    pos = s1.pos.numpy().astype(np.float64)
    np.testing.assert_allclose(pos[:, 0], np.array(poses)[:, 0] + 0.1 * speeds, atol=1e-5)
    boxes = np.array([[p[0], p[1], 0.0, 4.0, 2.0] for p in pos])
    assert np_boxes_overlap_pairs(boxes[[0, 2]], boxes[[1, 3]]).tolist() == [True, True]
    assert s1.events.numpy()[:, COLLISION].tolist() == [1, 1, 1, 1, 0]
    expected = -(alpha + 0.1 * np.abs(speeds))
    expected[4] = 0.0
    terms = s1.reward_terms.numpy()[:, REWARD_TERMS.index("collision")]
    np.testing.assert_allclose(terms, expected, rtol=1e-5, atol=1e-6)
    # infractions halt: the colliders stop where they are and stay as obstacles
    assert s1.halted.numpy().tolist() == [1, 1, 1, 1, 0] and s1.terminated.numpy().tolist() == [1, 1, 1, 1, 0]
    assert np.all(s1.speed.numpy()[:4] == 0.0) and s1.valid.numpy().tolist() == [1] * 5


# ---- goals: the evaluation radius ------------------------------------------------------------
def _goal_step(goal_index=0, aside=0.0, v_goal=0.0, speed=10.0, goal_z=0.0, kind=AGENT_VEHICLE, **config):
    """A vehicle passing 1 m along the road with its waypoint ``goal_index`` beside the middle
    of its path, ``aside`` m off it; the training radius (12 m) would reach it."""
    cfg = vehicle_config(agents_per_world=(1, 1), episode_length=1000, **config)
    model, s0, s1, ctl = make_world([straight_map()], [0], 1, cfg)
    reset(model, s0, 0)
    set_slots(
        s0, valid=[1], halted=[0], pos=[[-30.0, -10.0, 0.0]], heading=[0.0], speed=[speed], accel_long=[0.0],
        accel_lat=[0.0], steering=[0.0], length=[4.0], width=[2.0], goal_index=[goal_index], kind=[kind],
    )  # fmt: skip
    goals = s0.goal.numpy()
    goals[0, goal_index] = [-30.0 + 0.05 * speed, -10.0 + aside, goal_z]
    cond = s0.conditioning.numpy()
    cond[0, COND_DELTA_GOAL] = 12.0
    cond[0, COND_V_GOAL] = v_goal
    set_slots(s0, goal=goals, conditioning=cond)
    ctl.action.assign(np.full(1, ACTION_COAST, np.int32))
    step(model, s0, ctl, s1)
    p0, p1 = s1.prev_pos.numpy()[0, :2], s1.pos.numpy()[0, :2]
    assert p0[0] < goals[0, goal_index, 0] < p1[0] and abs(p1[1] + 10.0) < 1e-4  # it passes beside the goal
    assert s1.events.numpy()[0, OFFROAD] == 0
    return s0, s1


@pytest.mark.parametrize(("aside", "reached"), [(1.9, True), (2.1, False)])
def test_eval_goal_radius_is_2_m_whatever_the_training_radius(aside, reached):
    _, s1 = _goal_step(aside=aside, eval=True, v_max=20.0)
    assert s1.events.numpy()[0, GOAL] == int(reached)
    assert s1.goal_index.numpy()[0] == int(reached)


@pytest.mark.parametrize(("aside", "reached"), [(0.4, True), (0.6, False)])
def test_eval_goal_radius_of_a_pedestrian_is_capped_at_0_5_m(aside, reached):
    _, s1 = _goal_step(aside=aside, speed=2.0, kind=AGENT_PEDESTRIAN, eval=True, v_max=20.0)
    assert float(s1.speed.numpy()[0]) == pytest.approx(2.0, abs=1e-5)
    assert s1.events.numpy()[0, GOAL] == int(reached)


@pytest.mark.parametrize(("goal_z", "reached"), [(3.5, True), (4.5, False), (-3.5, True), (-4.5, False)])
def test_a_waypoint_counts_only_within_4_m_in_height(goal_z, reached):
    _, s1 = _goal_step(goal_z=goal_z)
    assert s1.events.numpy()[0, GOAL] == int(reached)


@pytest.mark.parametrize(
    ("goal_index", "v_goal", "paid"), [(2, 10.5, True), (2, 9.5, False), (0, 0.0, True), (1, 0.0, True)]
)
def test_only_the_third_waypoint_needs_a_speed_below_v_goal(goal_index, v_goal, paid):
    _, s1 = _goal_step(goal_index=goal_index, v_goal=v_goal, speed=10.0)
    assert float(s1.speed.numpy()[0]) == pytest.approx(10.0, abs=1e-5)
    assert s1.events.numpy()[0, GOAL] == int(paid)
    if goal_index < 2:
        assert s1.goal_index.numpy()[0] == goal_index + int(paid)
    else:  # paid: the set is done and a new one starts (open-ended episodes); else it waits at 2
        assert (s1.goal_index.numpy()[0] != 2) == paid


# ---- at fault (App. C.1) ---------------------------------------------------------------------
def _box(x, y, heading=0.0, length=4.0, width=2.0):
    return [x, y, 0.0, heading, length, width, 1.5, float(AGENT_VEHICLE)]


@pytest.mark.parametrize(("speed", "at_fault"), [(0.19, False), (0.21, True), (-0.19, False), (-0.21, True)])
def test_at_fault_needs_the_ego_faster_than_0_2_m_s_either_way(speed, at_fault):
    # ego 0 hits the side of 1 (standing, not behind it): only the speed threshold decides
    boxes = torch.tensor([_box(0, 0), _box(3.0, 1.5, math.pi / 2)])
    got = collision_at_fault(torch.tensor([True, False]), torch.tensor([speed, 0.0]), boxes, 2)
    assert got.tolist() == [at_fault, False]


@pytest.mark.parametrize(("partner_x", "at_fault"), [(-1.9, True), (-2.1, False)])
def test_struck_from_behind_means_the_partner_centre_behind_the_rear_bumper(partner_x, at_fault):
    # the ego (4 m long: rear bumper at x = -2) drives at 5 m/s; the partner's centre is just in
    # front of or just behind the bumper line, 2.5 m to the side (its nearest box either way)
    boxes = torch.tensor([_box(0, 0), _box(partner_x, 2.5), _box(60, 0)])
    got = collision_at_fault(torch.tensor([True, False, False]), torch.tensor([5.0, 5.0, 0.0]), boxes, 3)
    assert bool(got[0]) == at_fault


@pytest.mark.parametrize(("steering", "uncomfortable"), [(0.02, False), (0.1, True)])
def test_comfort_counts_a_lateral_jerk_over_5_m_s3(steering, uncomfortable):
    # coasting at 10 m/s on a steering angle that no lateral acceleration holds: the wheel
    # straightens by at most 0.06 rad in the step, so a_lat jumps from 0 to v^2 tan(delta) / 2.4
    # (0 from 0.02 rad, 1.67 m/s^2 from 0.1 rad): a lateral jerk of 0 or 16.7 m/s^3, while the
    # accelerations stay under 3 m/s^2 and the longitudinal jerk is 0
    s0, s1 = _one_agent_step(-35.0, -10.0, 0.0, 10.0, lane=1, steering=steering)
    a_lat, j_lat = float(s1.accel_lat.numpy()[0]), float(s1.jerk_lat.numpy()[0])
    delta = steering - min(steering, 0.06)
    assert a_lat == pytest.approx(100.0 * math.tan(delta) / 2.4, abs=1e-3)
    assert j_lat == pytest.approx(a_lat / 0.1, abs=1e-2)
    assert abs(float(s1.jerk_long.numpy()[0])) < 1e-4 and abs(float(s1.accel_long.numpy()[0])) < 1e-4
    assert abs(a_lat) < 3.0 and (abs(j_lat) > 5.0) == uncomfortable
    terms = dict(zip(REWARD_TERMS, s1.reward_terms.numpy()[0].astype(np.float64), strict=True))
    expected = -float(s0.conditioning.numpy()[0, COND_COMFORT]) * float(uncomfortable)
    assert terms["comfort"] == pytest.approx(expected, rel=1e-5, abs=1e-9)


def test_the_collision_partner_is_the_nearest_box_by_the_gap_between_circumscribed_circles():
    # ego 4 x 2 at 5 m/s; a bus 12 x 2.5 centred 9 m behind it and a 1 x 1 box 4 m ahead: by the
    # gap between circumscribed circles the bus is nearer (it struck the ego from behind: not at
    # fault), by the centres' distance the small box ahead would be (at fault)
    ego, bus, small = _box(0, 0), _box(-9.0, 0.0, length=12.0, width=2.5), _box(4.0, 0.0, length=1.0, width=1.0)
    radius = [0.5 * math.hypot(b[4], b[5]) for b in (ego, bus, small)]
    gap_bus, gap_small = 9.0 - radius[0] - radius[1], 4.0 - radius[0] - radius[2]
    assert gap_bus < gap_small  # the rule is consulted: the two orders disagree
    boxes = torch.tensor([ego, bus, small, _box(60, 0)])
    got = collision_at_fault(torch.tensor([True, False, False, False]), torch.tensor([5.0, 0.0, 0.0, 0.0]), boxes, 4)
    assert not bool(got[0])


@pytest.mark.parametrize(("halted", "resets"), [(4, False), (5, True)])
def test_early_reset_at_exactly_the_halted_fraction(halted, resets):
    """docs/simulator.md: a world resets once *at least* ``early_reset_halted_fraction`` of its
    valid agents are halted: 5 of 10 at 0.5 resets it, 4 of 10 does not."""
    cfg = vehicle_config(agents_per_world=(10, 10), early_reset_halted_fraction=0.5, episode_length=1000)
    model, s0, s1, ctl = make_world([loop_map()], [0], 10, cfg)
    reset(model, s0, 7)
    st = s0.numpy()
    assert st["valid"].sum() == 10 and st["halted"].sum() == 0
    flags = np.zeros(10, np.int32)
    flags[:halted] = 1
    set_slots(s0, halted=flags, speed=np.where(flags == 1, 0.0, st["speed"]))
    ctl.action.assign(np.full(10, 7, np.int32))  # zero jerk: nobody else halts this step
    step(model, s0, ctl, s1)
    out = s1.numpy()
    # the rule is reached: no new infraction, and the counts it reads are 10 valid, `halted` halted
    assert not out["events"][:, [EVENTS.index(e) for e in ("collision", "offroad", "red_light")]].any()
    assert out["world_reset"][0] == int(resets)
