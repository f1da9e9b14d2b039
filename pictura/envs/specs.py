"""The env's TensorDict layout around its observation: validity, world ids, per-term rewards and
events, the action and the done flags. `DrivingEnv` and the test suite's fake env
(`tests/modules/fake_env.py`) both set their specs here, so the fake cannot drift from it."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torchrl.data import Categorical, Composite, Unbounded, UnboundedDiscrete
from torchrl.data.tensor_specs import ContinuousBox
from torchrl.envs import EnvBase


class _DtypeBox(ContinuousBox):
    """A `ContinuousBox` whose bounds are one value each, broadcast to ``shape`` on access
    (expanded views: no memory per element). torchrl's own boxes hold full-size ``low`` and
    ``high`` tensors, which for an env's pixels is the size of an observation, twice."""

    def __init__(self, low: torch.Tensor, high: torch.Tensor, shape: torch.Size, device=None) -> None:
        self._low, self._high, self._shape, self.device, self._batch_size = low, high, torch.Size(shape), device, None

    @property
    def low(self) -> torch.Tensor:
        return self._low.expand(self._shape)

    @property
    def high(self) -> torch.Tensor:
        return self._high.expand(self._shape)

    @property
    def batch_size(self):
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value) -> None:
        self._batch_size = None if value is None else torch.Size(value)

    def to(self, dest) -> _DtypeBox:
        return _DtypeBox(self._low.to(dest), self._high.to(dest), self._shape, self._low.to(dest).device)

    def clone(self) -> _DtypeBox:
        return _DtypeBox(self._low.clone(), self._high.clone(), self._shape, self.device)

    def unbind(self, dim: int = 0):
        shape = self._shape[:dim] + self._shape[dim + 1 :]
        return tuple(_DtypeBox(self._low, self._high, shape, self.device) for _ in range(self._shape[dim]))


class _KeepClass(type(UnboundedDiscrete)):
    """torchrl's `Unbounded` metaclass turns every instance into `UnboundedContinuous` or
    `UnboundedDiscrete`; `PixelSpec` stays itself (so its clones and expansions stay compact)."""

    def __call__(cls, *args, **kwargs):
        return type.__call__(cls, *args, **kwargs)


class PixelSpec(UnboundedDiscrete, metaclass=_KeepClass):
    """Camera pixels: uint8 of ``shape``, bounds the dtype's own 0..255, i.e. what
    ``Bounded(0, 255, dtype=torch.uint8)`` states. `Bounded` and `Unbounded` build two
    full-size bound tensors (and `Bounded` compares them element by element whenever a
    `Composite` takes it): at 20,480 slots of four 96x54 cameras that is 1.3 GB each. Here the
    bounds are two scalars; ``rand``, ``zero``, ``is_in`` (shape and dtype: every uint8 value
    is in range), ``clone``, ``expand`` and indexing are `Unbounded`'s."""

    def __init__(self, shape: torch.Size | Sequence[int], device=None, dtype: torch.dtype = torch.uint8, **kwargs):
        if dtype != torch.uint8:
            raise ValueError(f"PixelSpec holds uint8 pixels, got dtype {dtype}")
        shape = torch.Size([shape] if isinstance(shape, int) else shape)
        device = torch.device("cpu") if device is None else torch.device(device)
        box = _DtypeBox(
            torch.zeros((), dtype=torch.uint8, device=device), torch.full((), 255, dtype=torch.uint8, device=device),
            shape, device,
        )
        kwargs.pop("domain", None)
        super(Unbounded, self).__init__(shape=shape, space=box, device=device, dtype=torch.uint8, domain="discrete")
        self.encode = self._encode_eager

    def to(self, dest) -> PixelSpec:
        if isinstance(dest, torch.dtype):
            if dest != torch.uint8:
                return Unbounded(shape=self.shape, device=self.device, dtype=dest)
            return self
        if dest is None or torch.device(dest) == self.device:
            return self
        return PixelSpec(self.shape, device=dest)

    def clone(self) -> PixelSpec:
        return PixelSpec(self.shape, device=self.device)


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
