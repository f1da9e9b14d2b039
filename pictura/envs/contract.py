"""`TrainingEnv`: what `pictura.modules.PPO` and its callbacks need from an env, beyond
TorchRL's ``reset`` / ``step``.

`pictura.envs.DrivingEnv` is the implementation; tests' ``FakeDrivingEnv`` is a small one. A
rollout keeps each step's compact world snapshot instead of its images and re-renders the
pixels of every minibatch from them, bootstraps truncated transitions from the observation
before the reset (rebuilt from `final_record`), and a resumed run restores every world
mid-episode (`save_state` / `restore_state`).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Literal, Protocol

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Composite, TensorSpec


class PhaseTimer(Protocol):
    """Times named phases of work (PPO's `PhaseClock`): ``with timer.phase(name): ...``, which
    may repeat (the spans add up)."""

    def phase(self, name: str) -> AbstractContextManager[None]: ...


class TrainingEnv(Protocol):
    """A batched multi-agent env that PPO trains on: ``num_slots`` agent slots, every one
    observed and acting at every step (``valid`` says which hold an acting agent)."""

    device: torch.device
    observation_spec: Composite
    action_spec: TensorSpec  # categorical: ``action_spec.n`` actions
    validate_actions: bool  # PPO turns the per-step host check of the actions off
    share_pixel_buffer: bool  # PPO consumes each step's pixels before the next step
    next_observation: Literal["final", "reset"]  # PPO steps on from ``td["next"]``: "reset"
    phase_clock: PhaseTimer | None  # PPO's clock: the env times its acting renders as "rollout_render"

    @property
    def num_slots(self) -> int: ...

    def reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase: ...

    def step(self, tensordict: TensorDictBase) -> TensorDictBase: ...

    def set_seed(self, seed: int | None = None, *args, **kwargs): ...

    def snapshot(self) -> dict[str, torch.Tensor]:
        """The compact state the current observation was rendered from (stackable over steps)."""
        ...

    def render_history(
        self, history: Mapping[str, torch.Tensor], steps: torch.Tensor, slots: torch.Tensor
    ) -> torch.Tensor:
        """Pixels of (step, slot) pairs of a stacked `snapshot` history, as rendered while acting."""
        ...

    def final_record(self) -> dict[str, torch.Tensor]:
        """What the observation before this step's world resets is built from."""
        ...

    def observation_from_record(
        self, record: dict[str, torch.Tensor], steps: torch.Tensor, slots: torch.Tensor
    ) -> TensorDict:
        """The observations of (step, slot) pairs of stacked `final_record` dicts."""
        ...

    def save_state(self) -> dict[str, torch.Tensor]:
        """Everything needed to continue every world exactly where it is."""
        ...

    def restore_state(self, saved: dict[str, torch.Tensor]) -> TensorDictBase:
        """Undo to a `save_state`; returns the observation to step on from."""
        ...

    def set_resolution(self, width: int, height: int) -> None:
        """Render at another resolution from the next render on."""
        ...
