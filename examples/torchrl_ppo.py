"""PPO on Pictura's `DrivingEnv` with TorchRL's stock pieces: `Collector`, `GAE`, `ClipPPOLoss`.

    python examples/torchrl_ppo.py                        # a tiny CPU run (seconds)
    python examples/torchrl_ppo.py --device cuda --num-worlds 64 --slots-per-world 64 \\
        --rollout-steps 64 --iterations 200 --minibatch 8192

The vectorized (privileged) agent of the paper trains here, self-play over the env's flat pool
of agent slots. What is Pictura-specific is small and marked:

- the batch holds every slot, also slots without an acting agent (empty, halted after an
  infraction, the unused tail of a packed block); the env's ``valid`` mask says which act, and
  only valid frames enter the loss;
- the env follows TorchRL's masked-reset contract (docs/training.md, "The env under TorchRL"):
  ``("next", "observation")`` of a done step is the ended episode's last observation, so GAE
  bootstraps a truncated episode from its true final state;
- state values are computed once per rollout on the flattened frames (a policy takes a flat
  batch of slots), then `GAE` runs on them without a value network of its own.

Pictura's own trainer (``python -m pictura fit``, `pictura.modules.PPO`) does the same maths
with its own loop; docs/training.md says why (re-rendered pixels, the advantage filter).
"""

from __future__ import annotations

import argparse
import time

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.modules import ProbabilisticActor
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value import GAE

from pictura.envs import DrivingEnv
from pictura.envs.observations import VectorizedObservationConfig
from pictura.modules.vectorized import VectorizedPolicy
from pictura.sim import NUM_ACTIONS, SimConfig


class ActorCritic(nn.Module):
    """A Pictura policy (``forward(observation) -> (logits, value)``) in TorchRL's layout:
    ``logits`` (B, A) and ``state_value`` (B, 1)."""

    def __init__(self, policy: nn.Module):
        super().__init__()
        self.policy = policy

    def forward(self, observation: TensorDict) -> tuple[torch.Tensor, torch.Tensor]:
        logits, value = self.policy(observation)
        return logits, value.unsqueeze(-1)


def make_env(args: argparse.Namespace) -> DrivingEnv:
    return DrivingEnv(
        device=args.device, seed=args.seed, maps=[args.map], num_worlds=args.num_worlds,
        slots_per_world=args.slots_per_world, agents_per_world=(max(1, args.slots_per_world // 2), args.slots_per_world),
        observation=VectorizedObservationConfig(variant="privileged"),
        sim=SimConfig(episode_length=args.episode_length), validate_actions=False,
    )  # fmt: skip


def make_modules(env: DrivingEnv, args: argparse.Namespace) -> tuple[ProbabilisticActor, TensorDictModule]:
    """The actor (samples ``action``, writes its ``action_log_prob``) and the critic
    (``state_value``), sharing one network."""
    policy = VectorizedPolicy(
        env.observation_spec, NUM_ACTIONS, group_width=args.width, trunk_width=4 * args.width,
        trunk_layers=2,
    ).to(env.device)  # fmt: skip
    network = TensorDictModule(ActorCritic(policy), in_keys=["observation"], out_keys=["logits", "state_value"])
    actor = ProbabilisticActor(
        network, in_keys=["logits"], out_keys=["action"], distribution_class=torch.distributions.Categorical,
        return_log_prob=True,
    )  # fmt: skip
    return actor, network


@torch.no_grad()
def add_state_values(data: TensorDict, critic: TensorDictModule) -> TensorDict:
    """``state_value`` and ``("next", "state_value")`` of a (S, T) rollout, the critic run on
    its flattened frames (root and next observations)."""
    for prefix in ((), ("next",)):
        frames = data.get((*prefix, "observation")).reshape(-1)
        value = critic(TensorDict({"observation": frames}, batch_size=frames.batch_size))["state_value"]
        data.set((*prefix, "state_value"), value.reshape(*data.batch_size, 1))
    return data


def torchrl_advantages(data: TensorDict, critic: TensorDictModule, gamma: float, lmbda: float) -> TensorDict:
    """TorchRL's `GAE` on a (S, T) rollout from the `Collector`: writes ``advantage`` and
    ``value_target``."""
    add_state_values(data, critic)
    return GAE(gamma=gamma, lmbda=lmbda, value_network=None)(data)


def train(args: argparse.Namespace) -> list[dict[str, float]]:
    torch.manual_seed(args.seed)
    env = make_env(args)
    actor, critic = make_modules(env, args)
    frames = env.num_slots * args.rollout_steps
    collector = Collector(
        env, actor, frames_per_batch=frames, total_frames=frames * args.iterations, device=env.device,
        auto_register_policy_transforms=False,  # a feed-forward policy: no InitTracker needed
    )  # fmt: skip
    loss_module = ClipPPOLoss(
        actor, critic, clip_epsilon=0.2, entropy_coeff=args.ent_coef, critic_coeff=0.5, loss_critic_type="l2",
        normalize_advantage=True,
    )  # fmt: skip
    optimizer = torch.optim.AdamW(loss_module.parameters(), lr=args.lr)
    history = []
    for iteration, data in enumerate(collector, start=1):
        wall = time.perf_counter()
        data = torchrl_advantages(data, critic, args.gamma, args.gae_lambda)
        # only frames of slots with an acting agent are trained on
        valid = data["valid"].reshape(-1)
        frames = data.reshape(-1)[valid]
        losses = {}
        for _epoch in range(args.epochs):
            for index in torch.randperm(frames.shape[0], device=frames.device).split(args.minibatch):
                loss = loss_module(frames[index])
                total = loss["loss_objective"] + loss["loss_critic"] + loss["loss_entropy"]
                optimizer.zero_grad(set_to_none=True)
                total.backward()
                nn.utils.clip_grad_norm_(loss_module.parameters(), args.max_grad_norm)
                optimizer.step()
                losses = {k: float(v.detach()) for k, v in loss.items() if k.startswith("loss_")}
        collector.update_policy_weights_()
        stats = {
            "iteration": iteration,
            "valid_fraction": float(valid.float().mean()),
            "reward_per_agent_step": float(data["next", "reward"].reshape(-1)[valid].mean()),
            "done_per_agent_step": float(data["next", "done"].reshape(-1)[valid].float().mean()),
            "update_s": time.perf_counter() - wall,
            **losses,
        }
        history.append(stats)
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in stats.items()), flush=True)
    collector.shutdown()
    return history


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--map", default="procedural:seed=0,blocks_x=2,blocks_y=2")
    parser.add_argument("--num-worlds", type=int, default=2)
    parser.add_argument("--slots-per-world", type=int, default=8)
    parser.add_argument("--episode-length", type=int, default=1280)
    parser.add_argument("--rollout-steps", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--minibatch", type=int, default=64)
    parser.add_argument("--width", type=int, default=16, help="group width (trunk: 4x)")
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--gamma", type=float, default=0.999)
    parser.add_argument("--gae-lambda", type=float, default=0.95)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    parser.add_argument("--max-grad-norm", type=float, default=0.5)
    return parser.parse_args(argv)


if __name__ == "__main__":
    train(parse_args())
