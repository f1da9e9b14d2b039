"""`DrivingEnv` under TorchRL's own rollout: on a done step ``("next", ...)`` holds the ended
episode's last observation and the following root the new episode's first; done flags per
slot; ``StepCounter`` truncation restarts worlds; masked resets touch only the flagged worlds.

The references are rollouts built by hand: a twin env whose episodes are long enough not to
reset (the observation the ended episode would have gone on with), and a twin whose episodes
end at the same step inside the simulator (the new episode's first observation)."""

from __future__ import annotations

import pytest
import torch
import warp as wp
from tensordict import TensorDict
from torchrl.envs import StepCounter, TransformedEnv

from pictura.envs import DrivingEnv
from pictura.envs.observations import VectorizedObservationConfig
from pictura.render import CameraRig
from pictura.sim import SimConfig

MAP = "procedural:seed=0,blocks_x=2,blocks_y=2"
EPISODE = 4


def _env(episode_length: int, observation=None, block_slots: int = 0, **kwargs) -> DrivingEnv:
    return DrivingEnv(
        seed=3, maps=[MAP], num_worlds=2, slots_per_world=10, agents_per_world=(6, 10),
        rig=CameraRig(width=24, height=14), observation=observation, block_slots=block_slots, worlds_per_block=3,
        sim=SimConfig(episode_length=episode_length, early_reset_halted_fraction=1.0), **kwargs,
    )  # fmt: skip


def _hand_rollout(env: DrivingEnv, actions: torch.Tensor) -> list[TensorDict]:
    """``td["next"]`` of every step, stepped on directly (no TorchRL reset in between)."""
    td, out = env.reset(), []
    for action in actions:
        td = env.step(td.set("action", action.clone()))["next"]
        out.append(td.clone())
    return out


def _assert_observations_equal(a: TensorDict, b: TensorDict, slots: torch.Tensor) -> None:
    assert set(a.keys()) == set(b.keys())
    for key in a.keys():
        assert torch.equal(a[key][slots], b[key][slots]), key


@pytest.mark.parametrize(
    "observation, block_slots",
    [(None, 0), (VectorizedObservationConfig(variant="privileged"), 20)],
    ids=["pixels-fixed", "vectorized-packed"],
)
def test_next_holds_the_final_observation_and_the_root_the_new_episode(observation, block_slots):
    env = _env(EPISODE, observation, block_slots)
    torch.manual_seed(0)
    rollout = env.rollout(EPISODE + 2, break_when_any_done=False)  # (S, T): TorchRL's stack
    actions = rollout["action"].T
    # the ended episodes as they would have gone on, and the new ones as the simulator starts them
    going_on = _hand_rollout(_env(10 * EPISODE, observation, block_slots), actions)
    restarted = _hand_rollout(_env(EPISODE, observation, block_slots, next_observation="reset"), actions)
    last = EPISODE - 1
    nxt = rollout["next"][:, last]
    acting = going_on[last]["valid"]
    assert acting.sum() >= 6  # agents whose episode the world reset cut short
    # done per slot: every slot of a resetting world; truncated unless its agent terminated
    terminated = going_on[last]["terminated"].squeeze(-1)
    assert torch.equal(nxt["terminated"].squeeze(-1), terminated)
    assert torch.equal(nxt["truncated"].squeeze(-1), ~terminated)
    assert nxt["done"].all()
    assert not rollout["next", "done"][:, :last].any()
    # ("next", ...) of the done step: the last observation of the ended episode
    _assert_observations_equal(nxt["observation"], going_on[last]["observation"], acting)
    assert torch.equal(nxt["valid"], acting | terminated)
    # the next root: the new episode's first observation, not the final one
    root = rollout[:, last + 1]
    _assert_observations_equal(root["observation"], restarted[last]["observation"], torch.ones_like(acting))
    assert torch.equal(root["valid"], restarted[last]["valid"])
    assert torch.equal(root["world_id"], restarted[last]["world_id"])
    key = "pixels" if observation is None else "partners"
    both = acting & root["valid"]
    assert both.any()
    assert not torch.equal(root["observation", key][both], nxt["observation", key][both])
    # steps without a reset: next and the following root are one observation
    _assert_observations_equal(rollout["next", "observation"][:, 0], rollout["observation"][:, 1], torch.ones_like(acting))


def test_step_counter_truncation_restarts_the_worlds_as_an_episode_end_does():
    """``StepCounter(max_steps)`` truncates every acting slot after that many steps; TorchRL's
    masked reset then restarts their worlds, into the very episode the simulator starts when
    its own episode length ends there."""
    env = TransformedEnv(_env(100), StepCounter(max_steps=EPISODE))
    torch.manual_seed(1)
    rollout = env.rollout(EPISODE + 2, break_when_any_done=False)
    last = EPISODE - 1
    acting = rollout["valid"][:, last]
    assert torch.equal(rollout["next", "truncated"][:, last].squeeze(-1) & acting, acting)
    assert torch.equal(wp.to_torch(env.base_env.state.world_episode), torch.ones(2, dtype=torch.int32))
    restarted = _hand_rollout(_env(EPISODE, next_observation="reset"), rollout["action"].T)
    root = rollout[:, last + 1]
    _assert_observations_equal(root["observation"], restarted[last]["observation"], torch.ones_like(acting))
    assert torch.equal(root["valid"], restarted[last]["valid"])
    assert torch.equal(rollout["step_count"][:, last + 1].squeeze(-1), torch.zeros_like(acting, dtype=torch.int64))


def test_masked_reset_restarts_only_the_flagged_worlds():
    env = _env(100)
    td = env.reset()
    torch.manual_seed(2)
    for _ in range(2):
        td = env.step(env.rand_action(td))["next"]
    before = {k: wp.to_torch(getattr(env.state, k)).clone() for k in ("world_episode", "world_step", "agent_box")}
    world = td["world_id"]
    valid = td["valid"].clone()
    # a slot without an acting agent (an empty one) needs nothing: nothing changes
    empty = ~valid & (world == 0)
    if empty.any():
        env.reset(td.clone().set("_reset", empty.unsqueeze(-1)))
        assert torch.equal(wp.to_torch(env.state.agent_box), before["agent_box"])
    # part of a world's acting slots: refused, naming the world
    part = valid & (world == 0)
    part[part.nonzero()[0, 0]] = False
    with pytest.raises(ValueError, match="world 0"):
        env.reset(td.clone().set("_reset", part.unsqueeze(-1)))
    # all of world 0's acting slots: world 0 starts its next episode, world 1 goes on untouched
    flagged = valid & (world == 0)
    # (TorchRL keeps the input's entries for unflagged slots, so the input carries them)
    out = env.reset(td.clone().set("_reset", flagged.unsqueeze(-1)))
    episode, step = wp.to_torch(env.state.world_episode), wp.to_torch(env.state.world_step)
    assert episode.tolist() == [1, 0] and step.tolist() == [0, 2]
    ours = (world == 1).nonzero().squeeze(-1)
    box = wp.to_torch(env.state.agent_box)
    assert torch.equal(box[ours], before["agent_box"][ours])
    _assert_observations_equal(out["observation"], td["observation"], world == 1)
    S = env.num_slots
    assert not torch.equal(box[:S][flagged], before["agent_box"][:S][flagged])
    assert not out["done"].any()


def test_pixel_spec_states_uint8_bounds_without_full_size_tensors():
    """`PixelSpec` says what ``Bounded(0, 255, dtype=uint8)`` says, but its bounds are two scalars
    broadcast to the spec's shape: no memory per element, even at a training env's size."""
    from torchrl.data import Bounded, Composite

    from pictura.envs.specs import PixelSpec

    shape = (20480, 4, 54, 96, 3)  # 1.3 GB per full-size bound tensor
    spec = PixelSpec(shape)
    low, high = spec.space.low, spec.space.high
    assert low.shape == high.shape == torch.Size(shape) and low.dtype == torch.uint8
    assert low.stride() == (0,) * 5 and high.stride() == (0,) * 5  # broadcast views
    assert int(low[7, 1, 2, 3, 0]) == 0 and int(high[-1, -1, -1, -1, -1]) == 255
    nested = Composite(observation=Composite(pixels=spec, shape=(shape[0],)), shape=(shape[0],))
    assert isinstance(nested["observation", "pixels"], PixelSpec)
    for derived in (spec.clone(), spec[:2], spec.expand(2, *shape)):
        assert isinstance(derived, PixelSpec) and derived.space.low.stride()[0] == 0
    small = PixelSpec((3, 2, 4, 5, 3))
    reference = Bounded(0, 255, shape=(3, 2, 4, 5, 3), dtype=torch.uint8)
    draws = small.rand()
    assert draws.dtype == torch.uint8 and reference.is_in(draws) and small.is_in(draws)
    assert small.is_in(reference.rand()) and small.is_in(small.zero())
    assert not small.is_in(torch.zeros(3, 2, 4, 5, 3))  # float32 is not uint8
    assert torch.equal(small.space.low, reference.space.low) and torch.equal(small.space.high, reference.space.high)
