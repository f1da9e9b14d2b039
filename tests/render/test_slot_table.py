"""The renderer reads each step's slot ranges from the slot-table history
(`pictura.sim.slot_table`): a packed layout renders exactly what a static layout holding the
same worlds renders, step by step (device "cpu")."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_VEHICLE, LIGHT_GREEN, LIGHT_RED
from pictura.render import Camera, CameraRig, Renderer
from pictura.sim.slot_table import slot_table_width
from pictura.sim.snapshot import BOX_ROW_FLOATS, WorldLayout
from tests.render.conftest import empty_map

LIGHT = dict(light_position=np.array([[14.0, 0.0, 3.0]], np.float32), light_heading=np.array([np.pi], np.float32))
WALL = dict(
    wall_points=np.array([[[30.0, -9.0, 0.0], [30.0, 9.0, 0.0]]], np.float32), wall_height=np.array([5.0], np.float32)
)
MAPS = [empty_map(**LIGHT), empty_map(**LIGHT, **WALL)]
RIG = [Camera("front", 0.0, 0.0, 1.5, 0.0), Camera("rear", -0.5, 0.0, 1.5, 180.0)]
# Four worlds in two blocks of five slots (two world records per block), one parked car each.
WORLD_MAP = [0, 1, 1, 0]
BLOCK_SLOTS, WORLDS_PER_BLOCK, PARKED = 5, 2, 1
# Agents per world at each step; at step 1 block 0 resets: world 0 shrinks to one agent and
# world 1 grows to three, so slots 1 and 2 change world between the steps.
AGENTS = [[3, 2, 2, 1], [1, 3, 2, 1]]
STATIC_SLOTS = 3  # the static reference gives every world 3 slots


def agent(world: int, k: int, step: int) -> tuple[float, ...]:
    """Agent ``k`` of ``world``: a line along x, its lateral offset, size and kind set by the
    world, so an agent drawn in a wrong world changes the image."""
    kind = AGENT_CYCLIST if (world + k) % 3 == 2 else AGENT_VEHICLE
    y = 2.5 * ((k + world) % 3 - 1) + 0.4 * step
    return (7.0 * k, y, 0.0, 0.15 * world, 3.0 + 0.5 * world, 1.6 + 0.1 * k, 1.4 + 0.1 * world, kind)


def parked(world: int) -> tuple[float, ...]:
    return (12.0, -5.0 + 2.0 * world, 0.0, 0.3, 4.5, 1.9, 1.5, AGENT_VEHICLE)


def packed_history() -> tuple[WorldLayout, np.ndarray, np.ndarray, dict]:
    """The packed layout, its agent_box and slot-table histories, and (step, world, k) -> slot."""
    lay = WorldLayout.packed(WORLD_MAP, BLOCK_SLOTS, WORLDS_PER_BLOCK, [1, 1], parked_per_world=PARKED)
    S, W = lay.num_slots, lay.num_worlds
    box = np.full((2, lay.box_count, BOX_ROW_FLOATS), -1.0, np.float32)
    table = np.zeros((2, slot_table_width(S, W)), np.int32)
    slots = {}
    for t, counts in enumerate(AGENTS):
        slot_world, start, count = table[t, :S], table[t, S : S + W], table[t, S + W :]
        for block in range(W // WORLDS_PER_BLOCK):
            first = block * WORLDS_PER_BLOCK
            nxt = block * BLOCK_SLOTS
            slot_world[nxt : nxt + BLOCK_SLOTS] = first  # the unused tail: the block's first record
            for w in range(first, first + WORLDS_PER_BLOCK):
                start[w], count[w] = nxt, counts[w]
                slot_world[nxt : nxt + counts[w]] = w
                for k in range(counts[w]):
                    box[t, nxt + k] = agent(w, k, t)
                    slots[t, w, k] = nxt + k
                nxt += counts[w]
        for w in range(W):
            box[t, lay.world_parked_start(w)] = parked(w)
    return lay, box, table, slots


def static_history() -> tuple[WorldLayout, np.ndarray, dict]:
    lay = WorldLayout.uniform(WORLD_MAP, STATIC_SLOTS, [1, 1], parked_per_world=PARKED)
    box = np.full((2, lay.box_count, BOX_ROW_FLOATS), -1.0, np.float32)
    slots = {}
    for t, counts in enumerate(AGENTS):
        for w, n in enumerate(counts):
            for k in range(n):
                box[t, w * STATIC_SLOTS + k] = agent(w, k, t)
                slots[t, w, k] = w * STATIC_SLOTS + k
            box[t, lay.world_parked_start(w)] = parked(w)
    return lay, box, slots


LIGHTS = np.array(
    [[LIGHT_RED, LIGHT_GREEN, LIGHT_RED, LIGHT_GREEN], [LIGHT_GREEN, LIGHT_RED, LIGHT_RED, LIGHT_GREEN]], np.int32
)


def renderer(lay: WorldLayout, gather: str = "lanes") -> Renderer:
    r = Renderer(MAPS, lay, CameraRig(cameras=RIG, width=32, height=18))
    r._gather = gather
    return r


@pytest.mark.parametrize("gather", ["lanes", "views"])
def test_packed_layout_renders_what_the_static_layout_of_the_same_worlds_renders(gather):
    packed, packed_box, table, packed_slot = packed_history()
    static, static_box, static_slot = static_history()
    keys = sorted(packed_slot)  # every agent of every world at both steps is an ego once
    req_packed = np.array([(t, packed_slot[t, w, k]) for t, w, k in keys], np.int32)
    req_static = np.array([(t, static_slot[t, w, k]) for t, w, k in keys], np.int32)
    pr, sr = renderer(packed, gather), renderer(static, gather)
    pr.validate_requests(packed_box, req_packed, LIGHTS, table)
    got = pr.render_numpy(packed_box, LIGHTS, req_packed, table)
    expected = sr.render_numpy(static_box, LIGHTS, req_static)
    np.testing.assert_array_equal(got, expected)
    # Each ego sees boxes of its world (the comparison is not between empty scenes): request i
    # of a history whose step i holds only request i's ego draws another picture ...
    alone = np.full((len(keys), static.box_count, BOX_ROW_FLOATS), -1.0, np.float32)
    for i, (t, slot) in enumerate(req_static):
        alone[i, slot] = static_box[t, slot]
    req_alone = np.stack([np.arange(len(keys)), req_static[:, 1]], 1).astype(np.int32)
    by_itself = sr.render_numpy(alone, LIGHTS[req_static[:, 0]], req_alone)
    assert all(not np.array_equal(expected[i], by_itself[i]) for i in range(len(keys)))
    # ... and step 1 needs its own row: with step 0's (slots 1, 2 in world 0) every step-1 view
    # of block 0 changes, and only those.
    stale = pr.render_numpy(packed_box, LIGHTS, req_packed, table[0])
    changed = (req_packed[:, 0] == 1) & (req_packed[:, 1] < BLOCK_SLOTS)
    np.testing.assert_array_equal(stale[~changed], expected[~changed])
    assert all(not np.array_equal(stale[i], expected[i]) for i in np.flatnonzero(changed))


def test_one_row_serves_every_step():
    packed, box, table, slots = packed_history()
    history = box.copy()
    history[1] = history[0]  # both steps hold step 0's world: step 0's table is right for both
    req = np.array([(t, slots[0, w, k]) for t in (0, 1) for (s, w, k) in slots if s == 0], np.int32)
    r = renderer(packed)
    tiled = r.render_numpy(history, LIGHTS, req, np.tile(table[:1], (2, 1)))
    np.testing.assert_array_equal(r.render_numpy(history, LIGHTS, req, table[:1]), tiled)
    np.testing.assert_array_equal(r.render_numpy(history, LIGHTS, req, table[0]), tiled)
    # A static layout's default is its own row, for every step.
    static, static_box, _ = static_history()
    s = renderer(static)
    req = np.array([[0, 0], [1, 0], [1, 4]], np.int32)
    default = s.render_numpy(static_box, LIGHTS, req)
    tiled = np.tile(static.slot_table(), (2, 1))
    np.testing.assert_array_equal(s.render_numpy(static_box, LIGHTS, req, tiled), default)


def test_bad_slot_tables_are_refused():
    packed, box, table, _ = packed_history()
    r = renderer(packed)
    ab = wp.array(box, dtype=wp.float32, device="cpu")
    ls = wp.array(LIGHTS, dtype=wp.int32, device="cpu")
    rq = wp.array(np.array([[0, 0]], np.int32), dtype=wp.int32, device="cpu")
    out = r.new_output(1)
    bad = {
        "None for a packed layout": None,
        "too few columns": wp.array(table[:, :-1].copy(), dtype=wp.int32, device="cpu"),
        "neither 1 nor T rows": wp.array(np.tile(table, (2, 1)), dtype=wp.int32, device="cpu"),
        "1-D": wp.array(table[0], dtype=wp.int32, device="cpu"),
        "float32": wp.array(table.astype(np.float32), dtype=wp.float32, device="cpu"),
        "NumPy": table,
    }
    for why, st in bad.items():
        with pytest.raises(ValueError, match="slot_table"):
            r.render(ab, ls, rq, out, st)
            pytest.fail(f"render accepted a slot_table that is {why}")
    with pytest.raises(ValueError, match="slot_table"):
        r.render_numpy(box, LIGHTS, np.array([[0, 0]]))
    with pytest.raises(ValueError, match="slot_table"):
        r.render_numpy(box, LIGHTS, np.array([[0, 0]]), table.astype(np.float32))
    with pytest.raises(ValueError, match="slot_table"):
        r.validate_requests(box, np.array([[0, 0]]))
    with pytest.raises(ValueError, match="slot_table"):
        r.occlusion_fraction(box[0], LIGHTS[0], 0, 1)
    with pytest.raises(ValueError, match="slot_table"):
        r.occlusion_fraction(box[0], LIGHTS[0], 0, 1, table)  # one step takes one row
    # slot 4 at step 1 is block 0's unused tail: world 0's, outside its range 0..1
    box4 = box.copy()
    box4[1, 4] = agent(0, 0, 1)
    with pytest.raises(ValueError, match="slot_table range"):
        r.validate_requests(box4, np.array([[1, 4]]), LIGHTS, table)


def test_occlusion_fraction_of_a_target_in_another_world_is_zero():
    packed, box, table, _ = packed_history()
    r = renderer(packed)
    ego = (0.0, 0.0, 0.0, 0.0, 0.8, 0.8, 1.5, AGENT_VEHICLE)
    target = (15.0, 0.0, 0.0, np.pi, 2.0, 3.0, 2.0, AGENT_VEHICLE)
    step = np.full((packed.box_count, BOX_ROW_FLOATS), -1.0, np.float32)
    step[0], step[3] = ego, target
    S = packed.num_slots
    # Step 0's table: slots 0..2 world 0, 3..4 world 1. Step 1's: slot 0 world 0, 1..3 world 1.
    assert r.occlusion_fraction(step, LIGHTS[0], 0, 3, table[0]) == 0.0
    assert r.occlusion_fraction(step, LIGHTS[0], 0, 3, table[1]) == 0.0
    shared = table[0].copy()
    shared[3:5] = 0  # slots 3, 4 in world 0: its range grows to 0..5, world 1's is empty
    shared[S : S + 2], shared[S + packed.num_worlds : S + packed.num_worlds + 2] = (0, 5), (5, 0)
    assert r.occlusion_fraction(step, LIGHTS[0], 0, 3, shared) == pytest.approx(1.0)
    # another world's parked car: 0.0 (world 1's parked row holds the target's box)
    step[3] = -1.0
    step[packed.world_parked_start(1)] = target
    assert r.occlusion_fraction(step, LIGHTS[0], 0, packed.world_parked_start(1), table[0]) == 0.0
    step[packed.world_parked_start(0)] = target
    assert r.occlusion_fraction(step, LIGHTS[0], 0, packed.world_parked_start(0), table[0]) > 0.0
