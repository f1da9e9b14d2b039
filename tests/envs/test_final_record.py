"""`DrivingEnv.final_record` / `observation_from_record`: the observation a truncated slot would
have had without its world reset (PPO's truncation bootstrap), checked against a twin env whose
longer episodes do not reset at that step."""

from __future__ import annotations

import pytest
import torch

from pictura.envs import DrivingEnv
from pictura.envs.driving import stack_snapshots
from pictura.envs.observations import VectorizedObservationConfig
from pictura.render import CameraRig
from pictura.sim import NUM_ACTIONS, SimConfig

MAP = "procedural:seed=0,blocks_x=2,blocks_y=2"
RESET_AT = 5


def _env(episode_length: int, observation, block_slots: int = 0) -> DrivingEnv:
    return DrivingEnv(
        seed=3, maps=[MAP], num_worlds=2, slots_per_world=10, agents_per_world=(6, 10),
        rig=CameraRig(width=32, height=18), observation=observation,
        sim=SimConfig(episode_length=episode_length, early_reset_halted_fraction=1.0),
        block_slots=block_slots, worlds_per_block=3, next_observation="reset",
    )  # fmt: skip


@pytest.mark.parametrize("block_slots", [0, 20], ids=["fixed", "packed"])
@pytest.mark.parametrize("observation", [None, VectorizedObservationConfig(variant="privileged")], ids=["pixels", "vectorized"])
def test_final_observation_equals_the_observation_without_the_reset(observation, block_slots):
    """Packed: the block reset redraws the slot ranges, so the final record must carry the
    ranges from before it (``slot_table``) to rebuild the old worlds."""
    short, long = _env(RESET_AT, observation, block_slots), _env(10 * RESET_AT, observation, block_slots)
    gen = torch.Generator().manual_seed(0)
    td_s, td_l = short.reset(), long.reset()
    records, returned = [], []
    for _ in range(RESET_AT):
        action = torch.randint(0, NUM_ACTIONS, (short.num_slots,), generator=gen)
        td_s = short.step(td_s.set("action", action))
        td_l = long.step(td_l.set("action", action.clone()))
        records.append(short.final_record())
        returned.append(td_s["next", "observation"].clone())
        td_s, td_l = td_s["next"], td_l["next"]
    truncated = td_s["truncated"].squeeze(-1)
    assert truncated.sum() >= 4  # both worlds reset at this step
    assert not td_l["truncated"].any()
    stacked = {k: torch.stack([r[k] for r in records]) for k in records[0]}
    slots = torch.arange(short.num_slots)
    steps = torch.full_like(slots, RESET_AT - 1)
    final = short.observation_from_record(stacked, steps, slots)
    without_reset = td_l["observation"]
    reset_obs = td_s["observation"]
    assert set(final.keys()) == set(without_reset.keys())
    for key in final.keys():
        assert torch.equal(final[key], without_reset[key]), key
    # the regular observation of a truncated slot is the new episode's, not the final one
    key = "pixels" if observation is None else "partners"
    assert not torch.equal(reset_obs[key][truncated], final[key][truncated])
    # steps without a reset: the record rebuilds exactly the observation the env returned
    early = short.observation_from_record(stacked, torch.full_like(slots, 1), slots)
    for key in early.keys():
        assert torch.equal(early[key], returned[1][key]), key


def test_observation_config_given_as_a_dict_of_its_fields():
    """How a checkpoint's hyper-parameters hold it (jsonargparse saves dataclasses as dicts)."""
    env = DrivingEnv(seed=0, maps=[MAP], num_worlds=1, slots_per_world=4, agents_per_world=(2, 4),
                     observation={"variant": "blind", "max_partners": 4})
    assert not env.renders_pixels and env.vectorized.max_partners == 4 and not env.vectorized.privileged
    # host-side indices are moved to the env's device by render_history
    views = env.render_history(stack_snapshots([env.snapshot()]), torch.zeros(2, dtype=torch.int64), torch.arange(2))
    assert views.shape[:2] == (2, env.num_cameras)
