"""Generalized advantage estimation, Gigaflow's advantage filter and the optional running
normalisation of the value targets.

All run on the device over a whole rollout, with no host synchronisation.
"""

from __future__ import annotations

import torch
from torch import nn


def generalized_advantage(
    reward: torch.Tensor,
    value: torch.Tensor,
    next_value: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    next_valid: torch.Tensor,
    gamma: float,
    gae_lambda: float,
    truncated_value: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE over a rollout of T steps and S slots; returns ``(advantage, return)``, both (T, S).

    Args:
        reward: (T, S) reward of the transition t -> t+1.
        value: (T, S) V(o_t) under the acting policy.
        next_value: (T, S) V(o_{t+1}) of the observation the env returned after step t (for the
            last step, the bootstrap value of the final observation).
        terminated: (T, S) bool, the agent's episode ended by an infraction: no bootstrap.
        truncated: (T, S) bool, the agent's world was reset. The env auto-resets inside `step`,
            so o_{t+1} already belongs to the *new* episode and V(o_{t+1}) must not be used.
            If ``truncated_value`` (T, S) is given (the value of the pre-reset observation) the
            step bootstraps from it; otherwise the truncation is treated as terminal (the
            usual approximation; the episode cap is long, 1280 steps, so its bias is small).
        next_valid: (T, S) bool, slot t+1 still holds an agent the policy acts for. A slot that
            becomes empty without a done flag is also treated as terminal.
        gamma, gae_lambda: discount and GAE lambda.

    The recursion never crosses a terminated or truncated step or an invalid next slot:
        A_t = delta_t + gamma * lambda * (1 - cut_t) * A_{t+1},
        delta_t = r_t + gamma * bootstrap_t - V(o_t).
    """
    cut = terminated | truncated | ~next_valid
    bootstrap = torch.where(cut, torch.zeros_like(next_value), next_value)
    if truncated_value is not None:
        bootstrap = torch.where(truncated & ~terminated, truncated_value, bootstrap)
    delta = reward + gamma * bootstrap - value
    carry = gamma * gae_lambda * (~cut).to(value.dtype)
    advantage = torch.empty_like(value)
    running = torch.zeros_like(value[0])
    for t in range(value.shape[0] - 1, -1, -1):
        running = delta[t] + carry[t] * running
        advantage[t] = running
    return advantage, advantage + value


def rollout_ema(running: torch.Tensor, value: torch.Tensor, initialised: torch.Tensor, coef: float) -> torch.Tensor:
    """One step of an EMA across rollouts, ``(1 - coef) running + coef value``; the first
    rollout (``initialised`` False) sets it to ``value``. No host synchronisation."""
    return torch.where(initialised, (1 - coef) * running + coef * value, value)


class AdvantageFilter(nn.Module):
    """Gigaflow's advantage filter: keep transitions with |A| >= threshold * EMA(max |A|).

    The EMA of the per-rollout maximum |A| over valid transitions is a buffer, so it is saved
    in checkpoints. Update rule (per rollout): ``ema <- (1 - c) * ema + c * max|A|`` with
    ``c = ema_coef`` (0.25); the first rollout initialises it to its own max. The keep mask of
    a rollout uses the EMA *after* including that rollout.

    Args:
        threshold: fraction of the running max below which a transition is dropped (0.01).
        ema_coef: EMA coefficient across rollouts (0.25).
    """

    def __init__(self, threshold: float = 0.01, ema_coef: float = 0.25):
        super().__init__()
        if threshold < 0:
            raise ValueError(f"advantage filter threshold must be >= 0, got {threshold}")
        if not 0 < ema_coef <= 1:
            raise ValueError(f"advantage filter ema_coef must be in (0, 1], got {ema_coef}")
        self.threshold, self.ema_coef = threshold, ema_coef
        self.register_buffer("max_abs_ema", torch.tensor(0.0))
        self.register_buffer("initialised", torch.tensor(False))

    def forward(self, advantage: torch.Tensor, valid: torch.Tensor, max_abs: torch.Tensor | None = None) -> torch.Tensor:
        """advantage, valid (T, S) -> keep mask (T, S) bool (always a subset of ``valid``).

        ``max_abs``: the rollout's max |A| if already reduced across ranks (DDP); by default
        the local max over valid transitions.
        """
        if max_abs is None:
            max_abs = torch.where(valid, advantage.abs(), torch.zeros_like(advantage)).max()
        max_abs = max_abs.to(self.max_abs_ema.dtype)
        ema = rollout_ema(self.max_abs_ema, max_abs, self.initialised, self.ema_coef)
        self.max_abs_ema.copy_(ema)
        self.initialised.fill_(True)
        return valid & (advantage.abs() >= self.threshold * ema)


class ReturnNormalizer(nn.Module):
    """Running mean and spread of the value targets, for a value head that predicts them
    normalised (`PPO` with ``value_normalization``; not part of Table 5).

    Per rollout, over its valid transitions: ``mean <- (1 - c) mean + c batch_mean`` and the
    same for the mean square, with ``c = ema_coef``; the first rollout initialises both. The
    spread is ``sqrt(mean_sq - mean^2)``, at least ``min_std``. The statistics are buffers, so
    they are saved in checkpoints. Why: with gamma 0.999 the returns' spread grew ~9x within
    minutes of training, and the value loss and the gradient norm with it, so the value
    regression likely steers the shared trunk (docs/results.md).

    Args:
        ema_coef: EMA coefficient across rollouts (0.25, as the advantage filter's).
        min_std: floor of the spread (the targets of a constant return stay finite).
    """

    def __init__(self, ema_coef: float = 0.25, min_std: float = 1e-2):
        super().__init__()
        if not 0 < ema_coef <= 1:
            raise ValueError(f"value normalisation ema_coef must be in (0, 1], got {ema_coef}")
        if min_std <= 0:
            raise ValueError(f"value normalisation min_std must be > 0, got {min_std}")
        self.ema_coef, self.min_std = ema_coef, min_std
        self.register_buffer("mean", torch.tensor(0.0))
        self.register_buffer("mean_sq", torch.tensor(1.0))
        self.register_buffer("initialised", torch.tensor(False))

    def update(self, returns: torch.Tensor, valid: torch.Tensor, reduce=None) -> None:
        """Fold one rollout's ``returns`` (T, S) over ``valid`` (T, S) bool into the statistics.

        ``reduce``: sums a (3,) tensor across ranks (DDP), so every rank keeps the same
        statistics. A rollout with no valid transition leaves them as they were.
        """
        weight = valid.to(torch.float32)
        r = returns.to(torch.float32)
        sums = torch.stack([weight.sum(), (r * weight).sum(), (r * r * weight).sum()])
        if reduce is not None:
            sums = reduce(sums)
        count = sums[0].clamp(min=1.0)
        batch_mean, batch_sq = sums[1] / count, sums[2] / count
        mean = rollout_ema(self.mean, batch_mean, self.initialised, self.ema_coef)
        mean_sq = rollout_ema(self.mean_sq, batch_sq, self.initialised, self.ema_coef)
        seen = sums[0] > 0
        self.mean.copy_(torch.where(seen, mean, self.mean))
        self.mean_sq.copy_(torch.where(seen, mean_sq, self.mean_sq))
        self.initialised.copy_(self.initialised | seen)

    def std(self) -> torch.Tensor:
        return (self.mean_sq - self.mean * self.mean).clamp(min=self.min_std**2).sqrt()

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std()

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.std() + self.mean
