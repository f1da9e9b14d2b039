"""The vectorized observation reads each step's slot ranges from the slot table (CPU Warp).

Reference: a packed layout whose table puts the worlds' agents at given slots must give every
agent exactly the entity sets that a static layout (`WorldLayout.uniform`, its own slots)
gives the same agent; the static layout is checked against a NumPy reference in
test_vectorized_observation.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import warp as wp

from pictura.envs.observations import VectorizedObservation
from pictura.maps.roadmap import LIGHT_GREEN, LIGHT_OFF, LIGHT_RED, LIGHT_YELLOW
from pictura.sim.snapshot import BOX_INVALID, BOX_ROW_FLOATS, BoxView, WorldLayout, box_row
from tests.envs.test_vectorized_observation import hand_map

wp.config.log_level = wp.LOG_WARNING  # no start-up banner or module-load lines (INFO)

SHIFT = np.array([1000.0, 500.0, 0.0], np.float32)
"""Map 1 is map 0 moved by SHIFT, so a world on the wrong map would see nothing."""
WORLD_MAP = [0, 0, 1, 0]
"""Blocks of two worlds: block 0 holds worlds 0 and 1, both on map 0 with agents at overlapping
places (partners from the wrong slot range would show); block 1 holds worlds 2 (map 1) and 3
(map 0, a slot given to the wrong world would see the wrong map)."""
BLOCK_SLOTS, WORLDS_PER_BLOCK, STATIC_SLOTS = 8, 2, 5
LIGHTS = torch.tensor(
    [LIGHT_RED, LIGHT_GREEN, LIGHT_YELLOW, LIGHT_RED, LIGHT_GREEN, LIGHT_OFF, LIGHT_YELLOW, LIGHT_GREEN], dtype=torch.int32
)
"""Two lights per world, a different pair in every world."""

# Per world: agents as (x, y, heading, speed) in map-local metres, rad, m/s.
AGENTS = [
    [(0.7, -1.75, 0.0, 5.0), (15.2, 1.75, np.pi, 3.0), (31.3, -1.75, 0.1, 8.0)],
    [(2.4, -1.75, 0.0, 1.0), (20.8, -1.75, 0.05, 2.0), (44.1, 1.75, np.pi, 6.5), (60.3, -30.0, 0.0, 4.0)],
    [(5.5, 1.75, np.pi, 7.0), (9.9, -1.75, 0.0, 0.5), (27.0, -1.75, 0.0, 9.0), (118.0, 1.75, np.pi, 2.5),
     (140.2, -1.75, 0.2, 3.3)],
    [(5.1, -1.75, 0.0, 2.2), (22.9, 1.75, np.pi, 4.4)],
]  # fmt: skip
# The next step after a reset of block 0: its records drew 2 and 5 agents, so the ranges moved.
AGENTS_NEXT = [
    [(3.0, -1.75, 0.0, 5.5), (17.5, 1.75, np.pi, 3.5)],
    [(1.1, -1.75, 0.0, 1.5), (12.6, 1.75, np.pi, 2.5), (25.4, -1.75, 0.0, 3.0), (48.0, 1.75, np.pi, 6.0),
     (90.5, -1.75, 0.0, 7.5)],
    [(x + 2.0, y, h, v) for x, y, h, v in AGENTS[2]],
    [(x + 1.5, y, h, v) for x, y, h, v in AGENTS[3]],
]  # fmt: skip


def maps() -> list:
    first, second = hand_map(), hand_map()
    for name in ("lane_points", "road_edge_points", "stop_line_points", "light_position", "wall_points", "junction_center"):
        setattr(second, name, getattr(second, name) + SHIFT)
    return [first, second]


def static_layout() -> WorldLayout:
    return WorldLayout.uniform(WORLD_MAP, STATIC_SLOTS, [2, 2])


def packed_layout() -> WorldLayout:
    return WorldLayout.packed(WORLD_MAP, BLOCK_SLOTS, WORLDS_PER_BLOCK, [2, 2])


def static_slots(agents) -> list[list[int]]:
    """Slot of every agent in the static layout: world w's k-th agent at w * STATIC_SLOTS + k."""
    return [[w * STATIC_SLOTS + k for k in range(len(a))] for w, a in enumerate(agents)]


def packed_slots(agents) -> list[list[int]]:
    """Slot of every agent in the packed layout: each block's records take consecutive ranges
    from the block's first slot, in record order (the packing rule)."""
    slots = []
    for w, a in enumerate(agents):
        if w % WORLDS_PER_BLOCK == 0:
            next_slot = (w // WORLDS_PER_BLOCK) * BLOCK_SLOTS
        slots.append(list(range(next_slot, next_slot + len(a))))
        next_slot += len(a)
    return slots


def packed_table(agents) -> torch.Tensor:
    """(S + 2W,) slot-table row of `packed_slots`, written out by hand: a block's unused tail
    belongs to the block's first record."""
    W = len(agents)
    S = W // WORLDS_PER_BLOCK * BLOCK_SLOTS
    slot_world = [s // BLOCK_SLOTS * WORLDS_PER_BLOCK for s in range(S)]
    starts, counts = [], []
    for w, slots in enumerate(packed_slots(agents)):
        for s in slots:
            slot_world[s] = w
        starts.append(slots[0] if slots else (w // WORLDS_PER_BLOCK) * BLOCK_SLOTS)
        counts.append(len(slots))
    return torch.tensor(slot_world + starts + counts, dtype=torch.int32)


def snapshot(agents, slots, num_slots: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(S, 8) agent boxes and (S,) speeds with world w's agents at ``slots[w]``; the rest empty."""
    box = torch.zeros(num_slots, BOX_ROW_FLOATS)
    BoxView(box).kind = BOX_INVALID
    speed = torch.zeros(num_slots)
    for w, (world_agents, world_slots) in enumerate(zip(agents, slots, strict=True)):
        shift = SHIFT if WORLD_MAP[w] == 1 else np.zeros(3, np.float32)
        for k, ((x, y, h, v), slot) in enumerate(zip(world_agents, world_slots, strict=True)):
            box[slot] = torch.tensor(
                box_row(
                    x=x + shift[0], y=y + shift[1], z=0.0, heading=h, length=4.5 + 0.1 * k, width=2.0 + 0.05 * w,
                    height=1.5, kind=0.0,
                )
            )
            speed[slot] = v
    return box, speed


def parked() -> torch.Tensor:
    """(W * 1, 8): one parked car in worlds 0 and 2, rows w * 1 (the same in both layouts)."""
    box = torch.zeros(len(WORLD_MAP), BOX_ROW_FLOATS)
    BoxView(box).kind = BOX_INVALID
    box[0] = torch.tensor(box_row(x=8.0, y=-4.0, z=0.0, heading=0.0, length=4.0, width=1.8, height=1.5, kind=0.0))
    box[2] = torch.tensor(
        box_row(x=12.0 + SHIFT[0], y=4.0 + SHIFT[1], z=0.0, heading=np.pi, length=4.2, width=1.9, height=1.5, kind=0.0)
    )
    return box


def assert_same_sets(got: dict, got_rows: list[int], want: dict, want_rows: list[int]) -> None:
    for key in want:
        assert torch.equal(got[key][got_rows], want[key][want_rows]), key


@pytest.fixture(scope="module")
def observations() -> tuple[VectorizedObservation, VectorizedObservation]:
    road_maps = maps()
    return (
        VectorizedObservation(road_maps, static_layout(), "cpu"),
        VectorizedObservation(road_maps, packed_layout(), "cpu"),
    )


def test_packed_table_gives_every_agent_its_static_sets(observations):
    static, packed = observations
    box, speed = snapshot(AGENTS, static_slots(AGENTS), static.num_slots)
    want = static.build(box, LIGHTS, speed, parked_box=parked())
    box, speed = snapshot(AGENTS, packed_slots(AGENTS), packed.num_slots)
    got = packed.build(box, LIGHTS, speed, parked_box=parked(), slot_table=packed_table(AGENTS))
    assert_same_sets(got, sum(packed_slots(AGENTS), []), want, sum(static_slots(AGENTS), []))
    # The scene is not trivial: partners from the own world only, parked cars, lanes and lights.
    assert want["partners_mask"].sum() > 0 and want["traffic_mask"].sum() > 0 and want["lanes_mask"].sum() > 0
    assert want["partners_mask"][0].sum() == 3  # world 0's 2 other agents and its parked car only
    # A block's unused tail (slots 7 and 15) is empty: empty sets.
    for key in ("partners_mask", "lanes_mask", "boundaries_mask", "traffic_mask"):
        assert not got[key][[7, 15]].any(), key


def test_build_requests_reads_the_row_of_each_request_step(observations):
    static, packed = observations
    history = [AGENTS, AGENTS_NEXT]
    box, speed, table = [], [], []
    for agents in history:
        b, v = snapshot(agents, packed_slots(agents), packed.num_slots)
        box.append(b)
        speed.append(v)
        table.append(packed_table(agents))
    assert not torch.equal(table[0], table[1])
    light = torch.stack([LIGHTS, LIGHTS.roll(1)])
    steps, slots, want_rows = [], [], []
    wants = []
    for t, agents in enumerate(history):
        b, v = snapshot(agents, static_slots(agents), static.num_slots)
        wants.append(static.build(b, light[t], v, parked_box=parked()))
        for w_packed, w_static in zip(packed_slots(agents), static_slots(agents), strict=True):
            steps += [t] * len(w_packed)
            slots += w_packed
            want_rows += [(t, s) for s in w_static]
    got = packed.build_requests(
        torch.stack(box), light, torch.stack(speed), torch.tensor(steps), torch.tensor(slots),
        parked_hist=parked()[None], slot_table=torch.stack(table),
    )  # fmt: skip
    for key in wants[0]:
        want = torch.stack([wants[t][key][s] for t, s in want_rows])
        assert torch.equal(got[key], want), key


def test_static_layout_reads_its_own_table_by_default(observations):
    static, _ = observations
    box, speed = snapshot(AGENTS, static_slots(AGENTS), static.num_slots)
    by_default = static.build(box, LIGHTS, speed)
    row = torch.from_numpy(static.layout.slot_table())
    given = static.build(box, LIGHTS, speed, slot_table=row[0])
    one_row_history = static.build(box[None].repeat(2, 1, 1), LIGHTS.repeat(2, 1), speed.repeat(2, 1), slot_table=row)
    for key in by_default:
        assert torch.equal(given[key], by_default[key]), key
        assert torch.equal(one_row_history[key][1], by_default[key]), key


def test_bad_slot_table_shapes_raise(observations):
    static, packed = observations
    width = static.num_slots + 2 * len(WORLD_MAP)
    box, speed = snapshot(AGENTS, static_slots(AGENTS), static.num_slots)
    for bad in (torch.zeros(1, width, dtype=torch.int32), torch.zeros(width + 1, dtype=torch.int32)):
        with pytest.raises(ValueError, match="slot_table"):
            static.build(box, LIGHTS, speed, slot_table=bad)
    history = (box[None].repeat(2, 1, 1), LIGHTS.repeat(2, 1), speed.repeat(2, 1), torch.zeros(1), torch.zeros(1))
    for bad in (
        torch.zeros(width, dtype=torch.int32),
        torch.zeros(3, width, dtype=torch.int32),
        torch.zeros(2, width - 1, dtype=torch.int32),
    ):
        with pytest.raises(ValueError, match="slot_table"):
            static.build_requests(*history, slot_table=bad)


def test_packed_layout_without_a_table_raises(observations):
    _, packed = observations
    box, speed = snapshot(AGENTS, packed_slots(AGENTS), packed.num_slots)
    with pytest.raises(ValueError, match="packed layout .* slot_table"):
        packed.build(box, LIGHTS, speed)
    with pytest.raises(ValueError, match="packed layout .* slot_table"):
        packed.build_requests(box[None], LIGHTS[None], speed[None], torch.zeros(1), torch.zeros(1))
