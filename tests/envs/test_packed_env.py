"""A packed `DrivingEnv` (``block_slots`` > 0, `WorldLayout.packed`): the slot ranges change at
every block reset, so the views re-rendered from the stacked snapshots (boxes, lights and the
slot table) must equal the acting views at every step, before and after block resets, and the
observation's ``world_id`` must follow the simulator's ranges."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pictura.envs import DrivingEnv
from pictura.envs.driving import stack_snapshots
from pictura.render import CameraRig
from pictura.sim import NUM_ACTIONS, SimConfig
from pictura.sim.slot_table import split_slot_table

MAPS = ["procedural:seed=0,blocks_x=2,blocks_y=2", "procedural:seed=1,blocks_x=2,blocks_y=2"]


def _packed_env(**overrides) -> DrivingEnv:
    kwargs = dict(
        seed=5, maps=MAPS, num_worlds=2, slots_per_world=16, agents_per_world=(3, 9), block_slots=16,
        worlds_per_block=4, rig=CameraRig(width=24, height=14),
        sim=SimConfig(episode_length=3, parked_per_world=2), validate_actions=True,
        next_observation="reset",  # the acting views of PPO's loop, stepped on from td["next"]
    )  # fmt: skip
    kwargs.update(overrides)
    return DrivingEnv(**kwargs)


def test_rerendered_views_equal_the_acting_views_across_block_resets():
    env = _packed_env()
    gen = torch.Generator().manual_seed(1)
    td = env.reset()
    snapshots, pixels, valid, world_id = [], [], [], []
    for _ in range(7):  # block resets at steps 3 and 6
        snapshots.append(env.snapshot())
        pixels.append(td["observation", "pixels"].clone())
        valid.append(td["valid"].clone())
        world_id.append(td["world_id"].clone())
        td["action"] = torch.randint(0, NUM_ACTIONS, (env.num_slots,), generator=gen)
        td = env.step(td)["next"]
    history = stack_snapshots(snapshots)
    tables = history["slot_table"].numpy()
    assert len({t.tobytes() for t in tables}) >= 2  # the block resets moved the ranges
    for t, table in enumerate(tables):
        slot_world, start, count = split_slot_table(table, env.num_slots, env.num_worlds)
        # world_id is the table's owner, and every valid slot lies in its world's range
        np.testing.assert_array_equal(world_id[t].numpy(), slot_world)
        ok = valid[t].numpy()
        w = slot_world[ok]
        slots = np.flatnonzero(ok)
        assert np.all((slots >= start[w]) & (slots < start[w] + count[w]))
    steps, slots = torch.stack(valid).nonzero(as_tuple=True)
    again = env.render_history(history, steps, slots)
    assert torch.equal(again, torch.stack(pixels)[steps, slots])
    # the views are not blank: agents of other records in the same block are not in view,
    # agents of the own record may be; at least the road is drawn
    assert again.float().std() > 0


def test_packed_env_errors_name_the_field():
    with pytest.raises(ValueError, match="block_slots=24 does not divide the 32 slots"):
        _packed_env(block_slots=24)
    with pytest.raises(ValueError, match="block_slots must be >= 0"):
        _packed_env(block_slots=-1)
    with pytest.raises(ValueError, match=r"hi <= block_slots=16"):
        _packed_env(agents_per_world=(1, 17))
    with pytest.raises(ValueError, match="worlds_per_block"):
        _packed_env(worlds_per_block=0)
    env = _packed_env()
    env.reset()
    history = {k: v[None] for k, v in env.snapshot().items() if k != "slot_table"}
    with pytest.raises(ValueError, match="slot_table"):
        env.render_history(history, torch.tensor([0]), torch.tensor([0]))
