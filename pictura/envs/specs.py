"""The env's TensorDict layout around its observation: validity, world ids, per-term rewards and
events, the action and the done flags. `DrivingEnv` and the test suite's fake env
(`tests/modules/fake_env.py`) both set their specs here, so the fake cannot drift from it."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torchrl.data import Categorical, Composite, Unbounded
from torchrl.envs import EnvBase


def set_step_specs(
    env: EnvBase, observation: Composite, num_actions: int, reward_terms: Sequence[str], events: Sequence[str]
) -> None:
    """Set ``env``'s observation, action, reward and done specs around ``observation`` (a
    `Composite` of batch shape (S,)): a categorical action of ``num_actions`` per slot, one
    (S, 1) reward, and under ``info`` every reward term (float) and event (bool) per slot."""
    S, dev = observation.shape[0], observation.device

    def value() -> Unbounded:
        return Unbounded(shape=(S, 1), dtype=torch.float32, device=dev)

    def flag() -> Categorical:
        return Categorical(2, shape=(S, 1), dtype=torch.bool, device=dev)

    env.observation_spec = Composite(
        observation=observation,
        valid=Categorical(2, shape=(S,), dtype=torch.bool, device=dev),
        world_id=Unbounded(shape=(S,), dtype=torch.int64, device=dev),
        info=Composite(
            reward=Composite({t: value() for t in reward_terms}, shape=(S,), device=dev),
            event=Composite({e: flag() for e in events}, shape=(S,), device=dev),
            shape=(S,),
            device=dev,
        ),
        shape=(S,),
        device=dev,
    )
    env.action_spec = Categorical(num_actions, shape=(S,), dtype=torch.int64, device=dev)
    env.reward_spec = value()
    env.done_spec = Composite(done=flag(), terminated=flag(), truncated=flag(), shape=(S,), device=dev)
