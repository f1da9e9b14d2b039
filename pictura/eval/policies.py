"""Policies under evaluation: random, constant action, or a PPO checkpoint (argmax actions, or
actions sampled from its categorical with a seeded generator).

A checkpoint carries the config it was trained with (``hyper_parameters``: the env and policy
as ``class_path`` + ``init_args``, as LightningCLI saves them, or factories when built in
Python). The evaluation env keeps the checkpoint's observation settings (camera rig,
vectorized layout) and replaces only what the protocol fixes (maps, worlds, agents, rules).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDictBase
from torch import nn

from pictura.sim import NUM_ACTIONS

if TYPE_CHECKING:  # imported where a checkpoint is read: pictura.modules loads Lightning and TorchRL
    from pictura.modules.gae import ReturnNormalizer


def _generator_per_device(seed: int) -> Callable[[torch.device], torch.Generator]:
    """``get(device)``: one generator per device, seeded with ``seed`` on first use."""
    generators: dict[torch.device, torch.Generator] = {}

    def get(dev: torch.device) -> torch.Generator:
        if dev not in generators:
            generators[dev] = torch.Generator(device=dev).manual_seed(seed)
        return generators[dev]

    return get


def random_policy(seed: int = 0) -> Callable[[TensorDictBase], torch.Tensor]:
    """Uniform random actions (seeded generator on the observation's device)."""
    generator = _generator_per_device(seed)

    def act(observation: TensorDictBase) -> torch.Tensor:
        dev = observation.device or torch.device("cpu")
        n = observation.batch_size[0]
        return torch.randint(0, NUM_ACTIONS, (n,), generator=generator(dev), device=dev)

    return act


def constant_policy(action: int) -> Callable[[TensorDictBase], torch.Tensor]:
    """The same action for every agent at every step (e.g. 7 = coast)."""
    if not 0 <= action < NUM_ACTIONS:
        raise ValueError(f"constant action must be in 0..{NUM_ACTIONS - 1}, got {action}")

    def act(observation: TensorDictBase) -> torch.Tensor:
        n = observation.batch_size[0]
        return torch.full((n,), action, dtype=torch.int64, device=observation.device)

    return act


def argmax_policy(network: nn.Module) -> Callable[[TensorDictBase], torch.Tensor]:
    """Greedy actions of an actor-critic ``network(observation) -> (logits, value)``."""

    @torch.no_grad()
    def act(observation: TensorDictBase) -> torch.Tensor:
        logits, _ = network(observation)
        return logits.argmax(-1)

    return act


def sampled_policy(network: nn.Module, seed: int = 0) -> Callable[[TensorDictBase], torch.Tensor]:
    """Actions drawn from an actor-critic's categorical ``softmax(logits)``: the stochastic policy
    PPO trains. A seeded generator per device makes a sweep repeatable."""
    generator = _generator_per_device(seed)

    @torch.no_grad()
    def act(observation: TensorDictBase) -> torch.Tensor:
        logits, _ = network(observation)
        probs = torch.softmax(logits.float(), dim=-1)
        return torch.multinomial(probs, 1, generator=generator(logits.device)).squeeze(-1)

    return act


def _import(class_path: str):
    module, _, name = class_path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"checkpoint names class_path {class_path!r}, which cannot be imported: {err}") from err


def instantiate(value):
    """Recursively build ``{"class_path", "init_args"}`` dicts (jsonargparse layout)."""
    if isinstance(value, dict) and "class_path" in value:
        kwargs = {k: instantiate(v) for k, v in (value.get("init_args") or {}).items()}
        return _import(value["class_path"])(**kwargs)
    if isinstance(value, dict):
        return {k: instantiate(v) for k, v in value.items()}
    if isinstance(value, list):
        return [instantiate(v) for v in value]
    return value


def factory(config, what: str) -> Callable:
    """A factory from a checkpoint's ``env`` / ``policy`` hyper-parameter: a class config dict
    becomes a partial of its class with the instantiated ``init_args``; a callable is kept."""
    if isinstance(config, dict) and "class_path" in config:
        kwargs = {k: instantiate(v) for k, v in (config.get("init_args") or {}).items()}
        return functools.partial(_import(config["class_path"]), **kwargs)
    if callable(config):
        return config
    raise ValueError(f"checkpoint hyper_parameters[{what!r}] is neither a class config nor a factory: {config!r}")


@dataclass
class Checkpoint:
    """A loaded PPO checkpoint: its env and policy factories, the policy's weights and, for a
    run with ``value_normalization``, its return statistics (``return_norm``: the value head
    predicts normalised returns, and `ReturnNormalizer.denormalize` maps them back)."""

    name: str
    path: Path
    env_factory: Callable
    policy_factory: Callable
    policy_state: dict[str, torch.Tensor]
    return_norm: ReturnNormalizer | None = None

    def build_env(self, **overrides):
        """The checkpoint's env with ``overrides`` (device, seed, maps, num_worlds, ...)."""
        target = self.env_factory.func if isinstance(self.env_factory, functools.partial) else self.env_factory
        params = inspect.signature(target).parameters
        missing = [k for k in overrides if k not in params and not any(
            p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())]
        if missing:
            raise ValueError(
                f"checkpoint {self.name!r}: its env {getattr(target, '__name__', target)} takes no {missing} "
                "argument(s), which the evaluation protocol needs"
            )
        return self.env_factory(**overrides)

    def policy(self, env) -> Callable[[TensorDictBase], torch.Tensor]:
        """The argmax policy on ``env``; a `ValueError` if the checkpoint's observation layout
        differs from ``env``'s (missing keys, other widths)."""
        try:
            network = self.policy_factory(env.observation_spec, NUM_ACTIONS)
        except (ValueError, KeyError) as err:
            raise ValueError(
                f"checkpoint {self.name!r}: its policy does not fit the evaluation env's observation: {err}"
            ) from err
        expected = network.state_dict()
        problems = [f"missing {k}" for k in expected if k not in self.policy_state]
        problems += [f"unexpected {k}" for k in self.policy_state if k not in expected]
        problems += [
            f"{k}: checkpoint {tuple(v.shape)} vs evaluation {tuple(expected[k].shape)}"
            for k, v in self.policy_state.items()
            if k in expected and tuple(v.shape) != tuple(expected[k].shape)
        ]
        if problems:
            raise ValueError(
                f"checkpoint {self.name!r} ({self.path}): its observation layout differs from the evaluation "
                f"config; policy weights do not match: {'; '.join(problems[:6])}"
            )
        network.load_state_dict(self.policy_state)
        network.to(env.device).eval()
        return argmax_policy(network)


def load_checkpoint(path: str | Path, name: str | None = None) -> Checkpoint:
    """Read a `pictura.modules.PPO` Lightning checkpoint (on the CPU)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"--ckpt {str(path)!r}: no such file")
    try:
        saved = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # noqa: BLE001 - any unreadable file gets the same clear message
        raise ValueError(f"--ckpt {str(path)!r} is not a readable torch checkpoint: {err}") from err
    if not isinstance(saved, dict) or "state_dict" not in saved or "hyper_parameters" not in saved:
        raise ValueError(f"--ckpt {str(path)!r} is not a Lightning checkpoint (no state_dict / hyper_parameters)")
    hparams = saved["hyper_parameters"]
    for key in ("env", "policy"):
        if key not in hparams:
            raise ValueError(f"--ckpt {str(path)!r}: hyper_parameters have no {key!r} (not a pictura PPO checkpoint)")
    def entries(prefix: str) -> dict[str, torch.Tensor]:  # a submodule's state, its prefix stripped
        return {k[len(prefix):]: v for k, v in saved["state_dict"].items() if k.startswith(prefix)}

    state = entries("policy.")
    if not state:
        raise ValueError(f"--ckpt {str(path)!r}: state_dict holds no policy.* weights")
    norm_state = entries("return_norm.")
    return_norm = None
    if norm_state:
        from pictura.modules.gae import ReturnNormalizer

        return_norm = ReturnNormalizer()
        try:
            return_norm.load_state_dict(norm_state)
        except RuntimeError as err:
            raise ValueError(f"--ckpt {str(path)!r}: its return_norm.* statistics do not load: {err}") from err
    return Checkpoint(
        name=name or path.stem,
        path=path,
        env_factory=factory(hparams["env"], "env"),
        policy_factory=factory(hparams["policy"], "policy"),
        policy_state=state,
        return_norm=return_norm,
    )
