"""Packed world layouts (`WorldLayout.packed`): at every block reset the block's world records
draw U{lo, hi} agent counts in order and take consecutive slot ranges while they fit. Checked
against the rule itself (NumPy, over many resets), the closed form of U{lo, hi}, a NumPy
Monte Carlo of the draw rule, the overlap reference, and hand-built scenes for what stays inside
a record (collisions, counts) and what the block shares (the early reset)."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.eval.overview import world_rows
from pictura.maps import load
from pictura.sim import EVENTS, SimConfig, build_model, reset, step
from pictura.sim.snapshot import BOX_INVALID, BOX_ROW_FLOATS, BoxView, WorldLayout

from .conftest import loop_map, np_overlapping_pairs, set_slots, vehicle_config, without_edges

LO, HI = 1, 40
BLOCK, PER_BLOCK, BLOCKS = 160, 8, 4


def _packed_model(road_maps, config, block=BLOCK, per_block=PER_BLOCK, blocks=BLOCKS):
    layout = WorldLayout.packed(
        [w % len(road_maps) for w in range(blocks * per_block)],
        block,
        per_block,
        [len(m.light_position) for m in road_maps],
        config.parked_per_world,
    )
    return build_model(road_maps, layout, config)


@pytest.fixture(scope="module")
def towns():
    return [load(f"procedural:seed={s},blocks_x=2,blocks_y=2") for s in range(4)]


def check_block_layout(model, st: dict, blocks: np.ndarray) -> None:
    """The packing rule on ``blocks`` (just reset), from the State arrays: each block's records
    hold consecutive ranges from the block's first slot, a prefix of records drew a count in
    U{lo, hi} and the rest are empty (the first empty one would not have fit: fewer than hi
    slots were left, unless every record got a range), ranges own exactly their slots and hold
    every valid agent of the record, the tail past the last range is invalid and owned by the
    block's first record."""
    lo, hi = model.config.agents_per_world
    B, K = model.layout.block_slots, model.layout.worlds_per_block
    start, count = st["world_slot_start"], st["world_slot_count"]
    valid, slot_world = st["valid"], st["slot_world"]
    for b in blocks:
        records = np.arange(b * K, (b + 1) * K)
        c = count[records]
        placed = int(np.count_nonzero(c))
        assert placed >= 1 and np.all(c[:placed] > 0) and np.all(c[placed:] == 0), c
        assert np.all((c[:placed] >= lo) & (c[:placed] <= hi)), c
        ends = b * B + np.cumsum(c)
        assert start[records[0]] == b * B
        assert np.array_equal(start[records[1:placed]], ends[: placed - 1])
        fill = int(ends[-1] - b * B)
        assert fill <= B
        if placed < K:
            assert B - fill < hi  # the first empty record drew more than was left
        np.testing.assert_array_equal(st["world_agent_count"][records], c)
        owner = np.full(B, records[0])
        for k in range(placed):
            owner[start[records[k]] - b * B : ends[k] - b * B] = records[k]
        np.testing.assert_array_equal(slot_world[b * B : (b + 1) * B], owner)
        assert not valid[b * B + fill : (b + 1) * B].any()  # the tail is empty


def test_block_resets_follow_the_packing_rule_and_never_overlap(towns):
    cfg = SimConfig(agents_per_world=(LO, HI), parked_per_world=4, episode_length=6)
    model = _packed_model(towns, cfg)
    s0, s1, ctl = model.state(), model.state(), model.control()
    reset(model, s0, 3)
    rng = np.random.default_rng(0)
    S, P, W = model.num_slots, cfg.parked_per_world, model.num_worlds
    block_resets = 0
    for _ in range(40):
        st = s0.numpy()
        flags = st["world_reset"].reshape(BLOCKS, PER_BLOCK)
        # a block's records reset together and share their clock
        assert np.all(flags == flags[:, :1])
        assert np.all(st["world_step"].reshape(BLOCKS, PER_BLOCK) == st["world_step"][:: PER_BLOCK, None])
        fresh = np.flatnonzero(flags[:, 0])
        check_block_layout(model, st, fresh)
        block_resets += len(fresh)
        # no spawn overlap among the rows of one record (its slots and its parked cars)
        valid = st["valid"] == 1
        parked = st["agent_box"][S:]
        box = np.concatenate(
            [np.column_stack([st["pos"][:, :2], st["heading"], st["length"], st["width"]]), parked[:, [0, 1, 3, 4, 5]]]
        )
        z = np.concatenate([st["pos"][:, 2], parked[:, 2]])
        group = np.concatenate([st["slot_world"], np.repeat(np.arange(W), P)])
        fresh_row = np.isin(group // PER_BLOCK, fresh) & np.concatenate([valid, BoxView(parked).valid])
        rows = np.flatnonzero(fresh_row)
        assert len(np_overlapping_pairs(box[rows], group[rows], z[rows])) == 0
        # an empty record parks no cars
        empty = st["world_agent_count"] == 0
        empty_rows = parked.reshape(W, P, BOX_ROW_FLOATS)[empty & np.isin(np.arange(W) // PER_BLOCK, fresh)]
        assert np.all(BoxView(empty_rows).kind == BOX_INVALID)
        before_start, before_count = st["world_slot_start"].copy(), st["world_slot_count"].copy()
        before_table = np.concatenate([st["slot_world"], before_start, before_count])
        np.testing.assert_array_equal(s0.slot_table.numpy(), before_table)  # the parts are views
        ctl.action.assign(rng.integers(0, 12, S).astype(np.int32))
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        # the pre-reset ranges (truncation bootstrap renders with them)
        np.testing.assert_array_equal(s0.final_slot_table.numpy(), before_table)
        # blocks that did not reset keep their ranges
        kept = np.repeat(s0.world_reset.numpy().reshape(BLOCKS, PER_BLOCK)[:, 0] == 0, PER_BLOCK)
        np.testing.assert_array_equal(s0.world_slot_start.numpy()[kept], before_start[kept])
        np.testing.assert_array_equal(s0.world_slot_count.numpy()[kept], before_count[kept])
    assert block_resets >= 5 * BLOCKS  # episode_length 6 over 40 steps


def np_packing_rule(rng: np.random.Generator, blocks: int, lo: int, hi: int, slots: int, per_block: int):
    """An independent replay of the packing rule: (blocks, per_block) counts (0: no place)."""
    draws = rng.integers(lo, hi + 1, (blocks, per_block))
    fits = np.cumsum(draws, 1) <= slots  # once a record overflows every later one is cut too
    return np.where(fits, draws, 0)


def test_counts_follow_the_uniform_draw_and_the_packing_rule(towns):
    cfg = SimConfig(agents_per_world=(LO, HI), parked_per_world=0)
    model = _packed_model(towns, cfg)
    s = model.state()
    counts = []
    for seed in range(400):
        reset(model, s, seed)
        st = s.numpy()
        check_block_layout(model, st, np.arange(BLOCKS))
        counts.append(st["world_slot_count"].reshape(BLOCKS, PER_BLOCK).copy())  # ("cpu": a view)
    counts = np.concatenate(counts)  # (resets x blocks, per_block)
    # the first record of a block always fits: exactly U{lo, hi} (closed-form moments)
    first = counts[:, 0].astype(np.float64)
    n = len(first)
    mean, var = (LO + HI) / 2, ((HI - LO + 1) ** 2 - 1) / 12
    assert abs(first.mean() - mean) < 4 * np.sqrt(var / n)
    assert abs(first.var() - var) < 0.25 * var
    assert first.min() >= LO and first.max() <= HI
    # every placed count, and the block fill, against a NumPy Monte Carlo of the rule (the
    # placed counts lean a little small: the record that overflows is more often a big draw)
    ref = np_packing_rule(np.random.default_rng(0), 200_000, LO, HI, BLOCK, PER_BLOCK)
    placed, ref_placed = counts[counts > 0], ref[ref > 0]
    assert abs(placed.mean() - ref_placed.mean()) < 4 * ref_placed.std() / np.sqrt(len(placed))
    fill, ref_fill = counts.sum(1), ref.sum(1)
    assert abs(fill.mean() - ref_fill.mean()) < 4 * ref_fill.std() / np.sqrt(len(fill))
    # distinct records draw independently: the first two records' counts are uncorrelated
    both = counts[:, 1] > 0
    assert abs(np.corrcoef(counts[both, 0], counts[both, 1])[0, 1]) < 4 / np.sqrt(both.sum())


def _two_record_block(config):
    """One 8-slot block, two records on the same edgeless loop, ranges set by hand: record 0
    owns slots 0..2, record 1 slots 3..5, slots 6..7 are the tail (owned by record 0)."""
    model = _packed_model([without_edges(loop_map())], config, block=8, per_block=2, blocks=1)
    s0, s1, ctl = model.state(), model.state(), model.control()
    reset(model, s0, 0)
    zeros = np.zeros(8)
    set_slots(
        s0,
        world_slot_start=[0, 3],
        world_slot_count=[3, 3],
        world_agent_count=[3, 3],
        slot_world=[0, 0, 0, 1, 1, 1, 0, 0],
        valid=[1, 1, 1, 1, 1, 1, 0, 0],
        halted=zeros,
        speed=zeros,
        accel_long=zeros,
        accel_lat=zeros,
        steering=zeros,
        heading=zeros,
        length=np.full(8, 4.0),
        width=np.full(8, 2.0),
        kind=np.zeros(8),
    )
    ctl.action.assign(np.full(8, 7, np.int32))  # zero jerk: agents at rest stay put
    return model, s0, s1, ctl


def test_records_of_a_block_never_collide_with_or_count_each_other():
    cfg = vehicle_config(
        agents_per_world=(1, 3), episode_length=1000, early_reset_halted_fraction=1.0, offroad_centre=False
    )
    model, s0, s1, ctl = _two_record_block(cfg)
    # slot 0 (record 0) and slot 3 (record 1) stand on the same spot; slot 1 and slot 2 (both
    # record 0) overlap by 1 m; slot 4 and 5 (record 1) stand far apart
    set_slots(
        s0,
        pos=[[0, 0, 0], [100, 0, 0], [103, 0, 0], [0, 0, 0], [200, 0, 0], [300, 0, 0], [0, 0, 0], [0, 0, 0]],
    )
    step(model, s0, ctl, s1)
    col = EVENTS.index("collision")
    assert s1.events.numpy()[:, col].tolist() == [0, 1, 1, 0, 0, 0, 0, 0]
    # each record counts its own slots (the early-reset decision input)
    assert s1.world_valid_count.numpy().tolist() == [3, 3]
    assert s1.world_halted_count.numpy().tolist() == [2, 0]
    assert s1.world_active_count.numpy().tolist() == [1, 3]
    assert s1.world_reset.numpy().tolist() == [0, 0]


@pytest.mark.parametrize(("halted", "resets"), [([1, 1, 0, 0, 0, 0], True), ([1, 0, 0, 0, 0, 0], False)])
def test_the_early_reset_takes_the_block_halted_share(halted, resets):
    # record 0 alone would reset at 2 / 3 halted and at 1 / 3 (>= 0.3); the block resets only
    # once 0.3 of all its 6 agents halted: 2 / 6 yes, 1 / 6 no, and both records together
    cfg = vehicle_config(
        agents_per_world=(1, 3), episode_length=1000, early_reset_halted_fraction=0.3, offroad_centre=False
    )
    model, s0, s1, ctl = _two_record_block(cfg)
    set_slots(
        s0,
        pos=[[0, 0, 0], [20, 0, 0], [40, 0, 0], [60, 0, 0], [80, 0, 0], [100, 0, 0], [0, 0, 0], [0, 0, 0]],
        halted=halted + [0, 0],
    )
    step(model, s0, ctl, s1)
    assert s1.world_reset.numpy().tolist() == [int(resets)] * 2
    if resets:
        # the block drew new ranges; every active slot of the block that was not halted is
        # truncated, whichever record it was in
        check_block_layout(model, s1.numpy(), np.arange(1))
        assert s1.truncated.numpy()[:6].tolist() == [1 - h for h in halted]


def test_static_layouts_keep_their_slot_arrays(towns):
    cfg = SimConfig(agents_per_world=(1, 20), parked_per_world=2, episode_length=4)
    lay = WorldLayout.uniform([0, 1, 2], 24, [len(m.light_position) for m in towns], 2)
    model = build_model(towns, lay, cfg)
    s0, s1, ctl = model.state(), model.state(), model.control()
    reset(model, s0, 0)
    for _ in range(6):
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        for name in ("world_slot_start", "world_slot_count", "slot_world"):
            np.testing.assert_array_equal(getattr(s0, name).numpy(), getattr(lay, name))


def test_packed_layout_errors():
    rm = loop_map()
    lights = [len(rm.light_position)]
    with pytest.raises(ValueError, match="multiple of worlds_per_block"):
        WorldLayout.packed([0, 0, 0], 64, 2, lights)
    with pytest.raises(ValueError, match="worlds_per_block"):
        WorldLayout.packed([0, 0], 1, 2, lights)
    with pytest.raises(ValueError, match="block_slots"):
        WorldLayout.packed([0, 0], 0, 2, lights)
    layout = WorldLayout.packed([0, 0], 64, 2, lights)
    assert layout.is_packed and not WorldLayout.uniform([0], 8, lights).is_packed
    with pytest.raises(ValueError, match="exceeds the 64 slots"):
        build_model([rm], layout, vehicle_config(agents_per_world=(1, 65)))
    with pytest.raises(ValueError, match="log replay needs a static layout"):
        # refused before the log is read, so any stand-in shows it
        build_model([rm], layout, vehicle_config(agents_per_world=(1, 8)), replay=object())
    # readers of a snapshot need its slot table: the layout's arrays are only the first state
    with pytest.raises(ValueError, match="pass the snapshot's slot_table"):
        world_rows(layout, 0)



def test_packed_rollouts_repeat_bit_for_bit(towns):
    cfg = SimConfig(agents_per_world=(LO, HI), parked_per_world=2, episode_length=5)

    def rollout() -> dict:
        model = _packed_model(towns, cfg)
        s0, s1, ctl = model.state(), model.state(), model.control()
        reset(model, s0, 11)
        rng = np.random.default_rng(1)
        for _ in range(16):  # three block resets each
            ctl.action.assign(rng.integers(0, 12, model.num_slots).astype(np.int32))
            step(model, s0, ctl, s1)
            s0, s1 = s1, s0
        return {k: v.copy() for k, v in s0.numpy().items()}

    first, second = rollout(), rollout()
    for name, value in first.items():
        np.testing.assert_array_equal(value, second[name], err_msg=name)
