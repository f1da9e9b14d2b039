"""Log replay in the simulator (`pictura.sim.replay`): replayed poses, removal on arrival,
collisions with replayed agents, the episode cap, determinism, no lights.

References are the Scenario arrays themselves and hand-written NumPy rules, never output of
the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps import Scenario, load
from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE, LIGHT_OFF
from pictura.sim import EVENTS, SimConfig, build_model, reset, step
from pictura.sim.replay import SLOT_CONTROLLED, SLOT_EMPTY, SLOT_REPLAYED, ReplayLog
from pictura.sim.snapshot import BOX_INVALID, BoxView, WorldLayout
from tests.data import data_path
from tests.sim.conftest import DEVICE, np_point_polyline_distance, set_slots, straight_map

E_GOAL, E_COLLISION, E_RED = (EVENTS.index(e) for e in ("goal", "collision", "red_light"))
KEEP = 7  # action: zero longitudinal and lateral jerk
T = 91


def scenario(tracks: list[dict], road_map=None, scenario_id: str = "synthetic") -> Scenario:
    """A Scenario from per-track dicts: type, position (T, 3) or a constant (3,), heading,
    velocity (2,), size (3,), valid (T,) bool (all valid by default)."""
    n = len(tracks)
    pos = np.zeros((n, T, 3), np.float32)
    heading = np.zeros((n, T), np.float32)
    vel = np.zeros((n, T, 2), np.float32)
    valid = np.ones((n, T), bool)
    for i, tr in enumerate(tracks):
        pos[i] = np.broadcast_to(np.asarray(tr["position"], np.float32), (T, 3))
        heading[i] = tr.get("heading", 0.0)
        vel[i] = np.asarray(tr.get("velocity", (0.0, 0.0)), np.float32)
        if "valid" in tr:
            valid[i] = tr["valid"]
    return Scenario(
        road_map=road_map or straight_map(),
        scenario_id=scenario_id,
        dt=0.1,
        track_id=np.arange(n, dtype=np.int64),
        track_type=np.asarray([tr.get("type", AGENT_VEHICLE) for tr in tracks], np.int32),
        track_position=pos,
        track_heading=heading,
        track_velocity=vel,
        track_size=np.asarray([tr.get("size", (4.0, 2.0, 1.5)) for tr in tracks], np.float32),
        track_valid=valid,
    )


def replay_world(scenes, controlled, slots, episode_length=600, present=None):
    config = SimConfig(eval=True, episode_length=episode_length, parked_per_world=0, agents_per_world=(1, 1))
    present = present or [np.ones(len(s.track_id), bool) for s in scenes]
    log = ReplayLog.from_scenarios(scenes, present, controlled, slots)
    maps = [s.road_map for s in scenes]
    layout = WorldLayout.uniform(np.arange(len(scenes)), slots, [len(m.light_position) for m in maps], 0)
    model = build_model(maps, layout, config, DEVICE, replay=log)
    return model, log, model.state(), model.state(), model.control()


def np_first_run(valid: np.ndarray) -> np.ndarray:
    """Per row: True from the first valid step up to (not including) the next invalid one."""
    out = np.zeros_like(valid, bool)
    for i, row in enumerate(valid):
        t = 0
        while t < len(row) and not row[t]:
            t += 1
        while t < len(row) and row[t]:
            out[i, t] = True
            t += 1
    return out


def host(state) -> dict[str, np.ndarray]:
    """Host copies (``State.numpy`` views the memory of CPU arrays, which later steps reuse)."""
    return {k: v.copy() for k, v in state.numpy().items()}


def run(model, s0, s1, control, steps, actions=KEEP, seed=0, record=None):
    reset(model, s0, seed)
    if record is not None:
        record.append(host(s0))
    for _ in range(steps):
        control.action.assign(np.broadcast_to(np.asarray(actions, np.int32), (model.num_slots,)).copy())
        step(model, s0, control, s1)
        s0, s1 = s1, s0
        if record is not None:
            record.append(host(s0))
    return s0


def womd_file(name: str):
    return data_path("womd", "gpudrive_json", name)


def test_replayed_tracks_follow_their_logs_exactly():
    """Every replayed slot shows its logged pose of step t at world step t (float32 equal) while
    its first valid run lasts, and is invalid otherwise (never coming back)."""
    valid_gap = np.ones(T, bool)
    valid_gap[:3] = False  # appears at step 3
    valid_gap[20:25] = False  # gone at 20, logged again at 25 but must not come back
    t = np.arange(T, dtype=np.float32)
    moving = np.stack([-40.0 + 0.7 * t, -10.0 + 0.01 * t, np.zeros(T)], 1)
    ped_valid = np.arange(T) < 60
    sc = scenario(
        [
            {"position": (-45.0, -4.0, 0.0), "velocity": (0.0, 0.0)},  # controlled, parked at rest
            {"position": moving, "heading": 0.3, "velocity": (7.0, 0.1), "valid": valid_gap},
            {
                "position": (10.0, -2.0, 0.0),
                "type": AGENT_PEDESTRIAN,
                "size": (0.5, 0.5, 1.8),
                "valid": ped_valid,
            },
            {"position": (20.0, -18.0, 0.0), "type": AGENT_CYCLIST, "size": (1.8, 0.6, 1.7)},
        ]
    )
    sc.track_position[0, -1] = (45.0, -4.0, 0.0)  # the controlled vehicle's goal, far away
    ctrl = np.array([True, False, False, False])
    model, log, s0, s1, c = replay_world([sc], [ctrl], slots=6)
    assert log.slot_mode.tolist() == [
        SLOT_CONTROLLED,
        SLOT_REPLAYED,
        SLOT_REPLAYED,
        SLOT_REPLAYED,
        SLOT_EMPTY,
        SLOT_EMPTY,
    ]
    hist = []
    run(model, s0, s1, c, 95, record=hist)
    expect_valid = np_first_run(sc.track_valid)
    for k, track in enumerate((1, 2, 3)):
        slot = 1 + k
        for step_t, st in enumerate(hist):
            box = BoxView(st["agent_box"][slot])
            on = step_t < T and expect_valid[track, step_t]
            assert bool(st["valid"][slot]) == on, (track, step_t)
            assert st["active"][slot] == 0  # the policy never drives a replayed slot
            if on:
                np.testing.assert_array_equal(box.xyz, sc.track_position[track, step_t])
                assert box.heading == sc.track_heading[track, step_t]
                np.testing.assert_array_equal(box.size, sc.track_size[track])
                assert box.kind == float(sc.track_type[track])
                assert st["events"][slot].sum() == 0 and st["reward"][slot] == 0.0
                # the distance it covered: its logged path since it appeared
                first = int(np.argmax(expect_valid[track]))
                path = np.diff(sc.track_position[track, first : step_t + 1].astype(np.float64), axis=0)
                np.testing.assert_allclose(st["distance"][slot], np.linalg.norm(path, axis=1).sum(), atol=1e-3)
            else:
                assert box.kind == BOX_INVALID
    assert all(BoxView(st["agent_box"][4:]).kind.tolist() == [BOX_INVALID] * 2 for st in hist)
    # the controlled vehicle stays put (zero jerk, logged speed 0) and is never replayed
    np.testing.assert_allclose(hist[-1]["agent_box"][0, :2], [-45.0, -4.0], atol=1e-5)
    assert hist[-1]["active"][0] == 1


def test_controlled_vehicle_on_its_goal_is_removed_and_counts_a_goal():
    """Final logged position 1 m from the start: within the 2 m radius at the first step."""
    path = np.tile(np.array([[-20.0, -10.0, 0.0]], np.float32), (T, 1))
    path[-1] = (-19.0, -10.0, 0.0)
    far = np.tile(np.array([[-40.0, -10.0, 0.0]], np.float32), (T, 1))
    far[-1] = (40.0, -10.0, 0.0)  # 80 m away: not reached
    sc = scenario([{"position": path}, {"position": far, "velocity": (0.0, 0.0)}])
    sc.track_position[1, :, 1] = -3.0
    sc.track_position[1, -1, 1] = -3.0
    model, log, s0, s1, c = replay_world([sc], [np.array([True, True])], slots=2)
    hist = []
    run(model, s0, s1, c, 3, record=hist)
    goal_col = np.asarray(hist[0]["goal"][0])
    np.testing.assert_array_equal(goal_col, np.tile(sc.track_position[0, -1], (3, 1)))
    assert hist[1]["events"][0, E_GOAL] == 1
    assert hist[1]["valid"][0] == 0 and hist[1]["active"][0] == 0
    assert BoxView(hist[1]["agent_box"][0]).kind == BOX_INVALID
    assert hist[1]["reward"][0] > 0.5  # the goal term (+1) dominates the per-step terms
    assert hist[1]["events"][1, E_GOAL] == 0 and hist[1]["valid"][1] == 1
    assert all(h["events"][0].sum() == 0 for h in hist[2:])  # gone for good
    assert hist[1]["world_active_count"][0] == 1


def test_replayed_agent_in_the_path_triggers_the_collision():
    """A controlled car at rest at x = -20; a logged car drives through it along the lane.
    The controlled one collides on the step the logged box first overlaps (NumPy SAT on the
    logged pose); the replayed one has no event and keeps following its log."""
    t = np.arange(T, dtype=np.float32)
    logged = np.stack([-40.0 + 2.0 * t, np.full(T, -10.0), np.zeros(T)], 1)
    sc = scenario([{"position": (-20.0, -10.0, 0.0)}, {"position": logged, "velocity": (20.0, 0.0)}])
    sc.track_position[0, -1] = (40.0, -10.0, 0.0)  # its goal, far away
    model, _, s0, s1, c = replay_world([sc], [np.array([True, False])], slots=2)
    hist = []
    run(model, s0, s1, c, 12, record=hist)
    # axis-aligned 4 x 2 boxes on one line: overlap once the centres are closer than 4 m
    first = next(k for k in range(T) if abs(logged[k, 0] - (-20.0)) < 4.0)
    for k in range(1, 12):
        assert hist[k]["events"][0, E_COLLISION] == int(k == first), k
        assert hist[k]["events"][1].sum() == 0
        np.testing.assert_array_equal(hist[k]["agent_box"][1, :3], logged[k])
    assert hist[first]["halted"][0] == 1


def test_episode_cap_restores_the_logged_start_and_lights_stay_off():
    """600 steps: replayed agents are gone after the log (91 steps), the controlled vehicle
    drives on; the world resets on step 600 exactly, back to the logged step 0."""
    sc = scenario(
        [
            {"position": (-45.0, -10.0, 0.0)},
            {"position": (-30.0, -3.0, 0.0), "heading": 0.5},
        ]
    )
    sc.track_position[0, -1] = (45.0, -10.0, 0.0)  # goal 90 m away, never reached at rest
    model, _, s0, s1, c = replay_world([sc], [np.array([True, False])], slots=2)
    reset(model, s0, 0)
    assert (s0.light_state.numpy() == LIGHT_OFF).all()
    for k in range(1, 601):
        step(model, s0, c, s1)
        s0, s1 = s1, s0
        if k in (90, 91, 599, 600):
            st = s0.numpy()
            assert st["world_reset"][0] == int(k == 600), k
            assert st["valid"][0] == 1
            assert st["valid"][1] == int(k == 90 or k == 600), k
            assert (st["light_state"] == LIGHT_OFF).all()
    st = s0.numpy()
    assert st["world_step"][0] == 0 and st["truncated"][0] == 1 and st["truncated"][1] == 0
    np.testing.assert_array_equal(st["agent_box"][:2, :3], sc.track_position[:, 0])


def test_no_red_light_and_no_early_reset_in_replay():
    """The straight map's stop line at x = 0 has a light; a controlled car crossing it at speed
    gets no red-light event (lights are off), and a halted car alone does not reset the world."""
    sc = scenario(
        [
            {"position": (-8.0, -10.0, 0.0), "velocity": (15.0, 0.0)},
            {"position": (-40.0, -3.0, 0.0), "velocity": (0.0, 0.0)},
        ]
    )
    sc.track_position[:, -1, 0] += 80.0
    model, _, s0, s1, c = replay_world([sc], [np.array([True, True])], slots=2)
    hist = []
    run(model, s0, s1, c, 10, record=hist)
    assert sum(h["events"][0, E_RED] for h in hist) == 0
    assert hist[-1]["pos"][0][0] > 5.0
    # halt one of two controlled cars: no early reset follows
    set_slots(s0, halted=[0, 1])
    reset_seen = []
    for _ in range(5):
        step(model, s0, c, s1)
        s0, s1 = s1, s0
        reset_seen.append(int(s0.world_reset.numpy()[0]))
    assert reset_seen == [0] * 5


def test_replay_is_deterministic_and_seeds_only_the_conditioning():
    sc = scenario([{"position": (-45.0, -10.0, 0.0), "velocity": (5.0, 0.0)}, {"position": (0.0, -3.0, 0.0)}])
    sc.track_position[0, -1, 0] = 40.0
    model, _, s0, s1, c = replay_world([sc], [np.array([True, False])], slots=2)
    actions = np.random.default_rng(3).integers(0, 12, size=2)
    a, b, d = [], [], []
    run(model, s0, s1, c, 20, actions=actions, seed=5, record=a)
    run(model, s0, s1, c, 20, actions=actions, seed=5, record=b)
    run(model, s0, s1, c, 0, seed=6, record=d)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x["agent_box"], y["agent_box"])
        np.testing.assert_array_equal(x["reward"], y["reward"])
    # another seed: same logged start, other Table 2 draws
    np.testing.assert_array_equal(a[0]["agent_box"], d[0]["agent_box"])
    assert not np.array_equal(a[0]["conditioning"][0], d[0]["conditioning"][0])


def test_bad_replay_input_is_rejected_by_name():
    valid = np.ones(T, bool)
    valid[0] = False
    sc = scenario([{"position": (0.0, -10.0, 0.0), "valid": valid}, {"position": (5.0, -10.0, 0.0)}])
    with pytest.raises(ValueError, match="invalid at step 0"):
        ReplayLog.from_scenarios([sc], [np.ones(2, bool)], [np.array([True, False])], 2)
    with pytest.raises(ValueError, match="slots_per_world"):
        ReplayLog.from_scenarios([sc], [np.ones(2, bool)], [np.zeros(2, bool)], 1)
    with pytest.raises(ValueError, match="not present"):
        ReplayLog.from_scenarios([sc], [np.array([False, True])], [np.array([True, False])], 2)
    sc.track_size[1, 0] = 0.0
    with pytest.raises(ValueError, match=r"track_size\[1\]"):
        ReplayLog.from_scenarios([sc], [np.ones(2, bool)], [np.zeros(2, bool)], 2)
    sc.track_size[1, 0] = 4.0
    log = ReplayLog.from_scenarios([sc], [np.ones(2, bool)], [np.zeros(2, bool)], 2)
    config = SimConfig(eval=True, parked_per_world=32, agents_per_world=(1, 1))
    layout = WorldLayout.uniform([0], 2, [1], 32)
    with pytest.raises(ValueError, match="parked_per_world"):
        build_model([sc.road_map], layout, config, DEVICE, replay=log)


def test_real_womd_scene_replays_its_logged_poses():
    """Every track of a real WOMD scene replayed: agent boxes equal the file's arrays."""
    sc = load(str(womd_file("tfrecord-00000-of-01000_325.json")))
    users = np.isin(sc.track_type, (AGENT_VEHICLE, AGENT_PEDESTRIAN, AGENT_CYCLIST))
    model, _, s0, s1, c = replay_world(
        [sc], [np.zeros(len(users), bool)], slots=int(users.sum()), present=[users]
    )
    hist = []
    run(model, s0, s1, c, T, record=hist)
    rows = np.flatnonzero(users)
    expect_valid = np_first_run(sc.track_valid[rows])
    for step_t in range(T):
        st = hist[step_t]
        np.testing.assert_array_equal(st["valid"].astype(bool), expect_valid[:, step_t])
        on = expect_valid[:, step_t]
        np.testing.assert_array_equal(st["agent_box"][on, :3], sc.track_position[rows[on], step_t])
        np.testing.assert_array_equal(st["agent_box"][on, 3], sc.track_heading[rows[on], step_t])
    assert hist[T]["valid"].sum() == 0  # the log has ended


def test_womd_vehicle_starting_far_from_every_road_is_offroad():
    """App. C.1's centre test on a real WOMD scene: the controlled vehicle nearest a lane
    centreline (NumPy) is not off-road after one step; the same scene with that vehicle's whole
    log moved 2 km away from the map (no road edge anywhere near) counts it off-road."""
    from dataclasses import replace

    sc = load(str(womd_file("tfrecord-00000-of-01000_325.json")))
    start, last = sc.track_position[:, 0], sc.goal_position
    controlled = (sc.track_type == AGENT_VEHICLE) & sc.track_valid[:, 0]
    controlled &= np.nan_to_num(np.linalg.norm((last - start)[:, :2], axis=1), nan=0.0) > 2.0
    seg = sc.road_map.lane_segments()[0][:, :, :2]
    on_lane = np.array([np_point_polyline_distance(p[None, :2], seg)[0] for p in start])
    rows = np.flatnonzero(controlled)
    pick = rows[np.argmin(on_lane[rows])]
    assert on_lane[pick] < 1.0  # the reference: it starts on a lane
    moved_pos = sc.track_position.copy()
    moved_pos[pick, :, 0] += 2000.0
    far = replace(sc, track_position=moved_pos, scenario_id="far")
    slots = int(controlled.sum())
    model, _, s0, s1, c = replay_world([sc, far], [controlled, controlled], slots, present=[controlled, controlled])
    st = run(model, s0, s1, c, 1).numpy()
    slot = int(np.flatnonzero(rows == pick)[0])  # controlled tracks take the slots in track order
    offroad = st["events"][:, EVENTS.index("offroad")]
    assert offroad[slot] == 0 and offroad[slots + slot] == 1
    assert st["terminated"][slots + slot] == 1


def test_goal_position_is_each_track_last_valid_position():
    """`Scenario.goal_position` against a loop: the last valid step's position, with gaps before
    it, valid only at step 0, and NaN for a track never valid."""
    rng = np.random.default_rng(3)
    valid = [np.ones(T, bool), np.zeros(T, bool), np.zeros(T, bool), rng.random(T) < 0.5]
    valid[2][0] = True
    sc = scenario([{"position": rng.normal(size=(T, 3)) * 50, "valid": v} for v in valid])
    for i, v in enumerate(valid):
        idx = [t for t in range(T) if v[t]]
        if idx:
            np.testing.assert_array_equal(sc.goal_position[i], sc.track_position[i, idx[-1]])
        else:
            assert np.isnan(sc.goal_position[i]).all()
