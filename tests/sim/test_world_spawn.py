"""Spawn rules over many resets (REFERENCE.md): no overlap, a clear 1 s constant-velocity
forecast, not touching a road edge / wall, not on a red or yellow stop line; plus slot
utilisation bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps import load
from pictura.maps.roadmap import AGENT_PEDESTRIAN, LIGHT_RED, LIGHT_YELLOW
from pictura.sim import SimConfig, build_model, reset, slot_utilisation, step
from pictura.sim.snapshot import BoxView, WorldLayout

from .conftest import np_box_corners, np_boxes_overlap_pairs, np_segments_intersect


def overlapping_pairs(boxes: np.ndarray, z: np.ndarray) -> np.ndarray:
    """(K, 2) index pairs of box rows (x, y, heading, length, width) that overlap, |dz| < 4 m."""
    i, j = np.triu_indices(len(boxes), 1)
    r = 0.5 * np.hypot(boxes[:, 3], boxes[:, 4])
    keep = (np.abs(z[i] - z[j]) < 4.0) & (np.linalg.norm(boxes[i, :2] - boxes[j, :2], axis=1) < r[i] + r[j])
    i, j = i[keep], j[keep]
    hit = np_boxes_overlap_pairs(boxes[i].astype(np.float64), boxes[j].astype(np.float64))
    return np.stack([i[hit], j[hit]], 1)


def _box_touches_segments(box: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Which segments (K, 2, 2) touch which boxes (N, 5) rows (x, y, heading, length, width):
    (N, K) bool (an edge crossing or the segment's start inside the box)."""
    box = np.atleast_2d(box)
    corners = np.stack([np_box_corners(*b) for b in box])  # (N, 4, 2)
    hit = np.zeros((len(box), len(seg)), bool)
    for k in range(4):
        p1 = np.broadcast_to(corners[:, None, k], (len(box), len(seg), 2))
        p2 = np.broadcast_to(corners[:, None, (k + 1) % 4], (len(box), len(seg), 2))
        hit |= np_segments_intersect(p1, p2, seg[None, :, 0], seg[None, :, 1])
    d = seg[None, :, 0] - box[:, None, :2]
    u = np.stack([np.cos(box[:, 2]), np.sin(box[:, 2])], 1)[:, None]
    along = np.abs((d * u).sum(-1))
    across = np.abs(d[..., 1] * u[..., 0] - d[..., 0] * u[..., 1])
    inside = (along < box[:, None, 3] / 2) & (across < box[:, None, 4] / 2)
    return hit | inside


@pytest.fixture(scope="module")
def towns():
    return [load(f"procedural:seed={s},blocks_x=2,blocks_y=2") for s in range(4)]


def _model(towns, worlds, slots, cfg):
    lay = WorldLayout.uniform(
        [w % len(towns) for w in range(worlds)],
        slots,
        [len(m.light_position) for m in towns],
        cfg.parked_per_world,
    )
    return build_model(towns, lay, cfg)


def _batched_overlaps(boxes: np.ndarray, z: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Per world (leading axis) box rows (W, n, 5) -> (K, 3) (world, i, j) overlapping pairs
    among rows with ``ok``, |dz| < 4 m."""
    n = boxes.shape[1]
    i, j = np.triu_indices(n, 1)
    x = np.where(ok, boxes[..., 0], np.nan).astype(np.float32)  # NaN rows never pass the test
    y = boxes[..., 1].astype(np.float32)
    r = (0.5 * np.hypot(boxes[..., 3], boxes[..., 4])).astype(np.float32)
    dx = x[:, i] - x[:, j]
    dy = y[:, i] - y[:, j]
    rr = r[:, i] + r[:, j]
    near = dx * dx + dy * dy < rr * rr
    w, k = np.nonzero(near)
    keep = np.abs(z[w, i[k]] - z[w, j[k]]) < 4.0
    w, k = w[keep], k[keep]
    hit = np_boxes_overlap_pairs(boxes[w, i[k]].astype(np.float64), boxes[w, j[k]].astype(np.float64))
    return np.stack([w[hit], i[k][hit], j[k][hit]], 1)


def test_spawns_never_overlap_over_10k_resets(towns):
    # 64 worlds x 160 resets = 10,240 world resets at the default config (U{1, 120} agents of
    # all three types, 32 parked cars): no overlap now nor along the 1 s forecast
    W, R = 64, 160
    cfg = SimConfig()
    model = _model(towns, W, 120, cfg)
    s = model.state()
    S = model.num_slots
    P = cfg.parked_per_world
    placed = 0
    for seed in range(R):
        reset(model, s, seed)
        pos = s.pos.numpy().reshape(W, 120, 3)
        heading = s.heading.numpy().reshape(W, 120, 1)
        speed = s.speed.numpy().reshape(W, 120, 1)
        size = np.stack([s.length.numpy(), s.width.numpy()], 1).reshape(W, 120, 2)
        valid = s.valid.numpy().reshape(W, 120) == 1
        parked = s.agent_box.numpy()[S:].reshape(W, P, 8)
        placed += valid.sum()
        for t in (0.0, 1.0):  # now and at the end of the 1 s forecast
            xy = pos[..., :2] + t * speed * np.concatenate([np.cos(heading), np.sin(heading)], -1)
            agents = np.concatenate([xy, heading, size], -1)
            boxes = np.concatenate([agents, parked[..., [0, 1, 3, 4, 5]]], 1)
            z = np.concatenate([pos[..., 2], parked[..., 2]], 1)
            ok = np.concatenate([valid, BoxView(parked).valid], 1)
            pairs = _batched_overlaps(boxes, z, ok)
            assert len(pairs) == 0, (seed, t, pairs[:3])
    assert placed > 0.5 * W * R * 60  # U{1,120} has mean 60.5: most draws found a place


def test_spawns_avoid_red_and_yellow_stop_lines_and_edges(towns):
    W = 16
    cfg = SimConfig(agents_per_world=(100, 120))
    model = _model(towns, W, 120, cfg)
    s = model.state()
    blocked = free = 0
    for seed in range(4):
        reset(model, s, seed)
        st = s.numpy()
        lights = st["light_state"]  # after reset: the lights at t = 0
        for w in range(W):
            rm = towns[w % 4]
            l0 = model.layout.world_light_start[w]
            stop = rm.stop_line_points[:, :, :2].astype(np.float64)
            has = rm.stop_line_light >= 0
            state = np.where(has, lights[l0 + np.maximum(rm.stop_line_light, 0)], -1)
            stopping = (state == LIGHT_RED) | (state == LIGHT_YELLOW)
            edges = rm.road_edge_segments()[:, :, :2].astype(np.float64)
            walls = rm.wall_points[:, :, :2].astype(np.float64)
            rows = np.arange(w * 120, (w + 1) * 120)
            rows = rows[st["valid"][rows] == 1]
            box = np.concatenate(
                [
                    st["pos"][rows, :2],
                    st["heading"][rows, None],
                    st["length"][rows, None],
                    st["width"][rows, None],
                ],
                1,
            ).astype(np.float64)
            big = box * np.array([1, 1, 1, 1.1, 1.1])
            assert not _box_touches_segments(big, walls).any(), (seed, w)
            drivers = st["kind"][rows] != AGENT_PEDESTRIAN
            assert not _box_touches_segments(big[drivers], edges).any(), (seed, w)
            on_line = _box_touches_segments(box[drivers], stop)
            assert not (on_line & stopping[None]).any(), (seed, w)
            blocked += int((on_line & ~stopping[None]).any(1).sum())
            free += int(drivers.sum())
    assert free > 1000
    assert blocked > 0  # agents do spawn across stop lines that are green or off


def test_slot_utilisation_and_world_active_counts(towns):
    W = 8
    cfg = SimConfig(agents_per_world=(1, 120), parked_per_world=4)
    model = _model(towns, W, 120, cfg)
    s0, s1, ctl = model.state(), model.state(), model.control()
    reset(model, s0, 0)
    rng = np.random.default_rng(0)
    for _ in range(30):
        st = s0.numpy()
        active = st["valid"] * (1 - st["halted"])
        np.testing.assert_array_equal(st["world_active_count"], active.reshape(W, 120).sum(1))
        assert slot_utilisation(s0) == pytest.approx(active.mean())
        ctl.action.assign(rng.integers(0, 12, model.num_slots).astype(np.int32))
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0


def test_eval_mode_fixes_lights_sizes_and_speed(towns):
    cfg = SimConfig(eval=True, agents_per_world=(60, 60), parked_per_world=0)
    model = _model(towns, 8, 60, cfg)
    s = model.state()
    reset(model, s, 1)
    st = s.numpy()
    assert (
        np.all(st["junction_green"] == 10)
        and np.all(st["junction_yellow"] == 3)
        and np.all(st["junction_red"] == 2)
    )
    assert np.all(st["junction_mode"] == 0) and np.all(st["light_off"] == 0)
    veh = (st["valid"] == 1) & (st["kind"] == 0)
    assert st["length"][veh].min() >= 2.0 and st["length"][veh].max() <= 5.5
    assert st["width"][veh].min() >= 1.5 and st["width"][veh].max() <= 2.5
    assert model.type_v_max.numpy().tolist() == [20.0, 2.5, 8.0]
    # fixed density: (n, n) draws exactly n agents per world
    assert np.all(st["world_agent_count"] == 60)
    with pytest.raises(ValueError, match="eval_v_max"):
        SimConfig(eval=True, eval_v_max=50.0).validate()


@pytest.mark.parametrize(
    "change, field",
    [
        (dict(pedestrian_fraction=0.7, cyclist_fraction=0.5), "pedestrian_fraction"),
        (dict(cyclist_fraction=-0.1), "cyclist_fraction"),
        (dict(pedestrian_length=(0.8, 0.4)), "pedestrian_length"),
        (dict(cyclist_width=(-0.5, 0.8)), "cyclist_width"),
        (dict(parked_per_world=-1), "parked_per_world"),
        (dict(parked_length=(5.5, 3.5)), "parked_length"),
        (dict(pedestrian_v_max=0.0), "pedestrian_v_max"),
        (dict(pedestrian_goal_radius=-1.0), "pedestrian_goal_radius"),
        (dict(spawn_speed_fraction=1.5), "spawn_speed_fraction"),
        (dict(agents_per_world=(0, 10)), "agents_per_world"),
    ],
)
def test_bad_world_config_names_the_field(change, field):
    with pytest.raises(ValueError, match=field):
        SimConfig(**change).validate()


@pytest.mark.parametrize("name", ["alpha_collision", "alpha_offroad", "alpha_reverse", "alpha_timestep"])
def test_negative_penalty_coefficient_is_an_error(name):
    from dataclasses import replace

    from pictura.sim import CONDITIONING_TABLE

    table = tuple(replace(c, low=-1.0) if c.name == name else c for c in CONDITIONING_TABLE)
    if name == "alpha_timestep":  # a fixed row: low == high
        table = tuple(replace(c, low=-1.0, high=-1.0) if c.name == name else c for c in CONDITIONING_TABLE)
    with pytest.raises(ValueError, match=name):
        SimConfig(conditioning=table).validate()
    # the centre bias is a signed offset and may be negative
    SimConfig().validate()
