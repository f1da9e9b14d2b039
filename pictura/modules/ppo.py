"""`PPO`: self-play PPO as a LightningModule (paper Table 5), CleanRL-style.

One `training_step` is one PPO iteration, read top to bottom:
    1. rollout ``rollout_steps`` steps of every agent slot on the device (no host sync per step),
       keeping the compact world snapshot of every step instead of its images;
    2. GAE (terminated and truncated kept apart; a truncated transition bootstraps from the value
       of its pre-reset observation, rebuilt from the rollout's `final_record` history);
    3. Gigaflow advantage filter (drop |A| < 0.01 x EMA of max |A|);
    4. ``update_epochs`` passes over shuffled minibatches of the kept transitions; each minibatch
       re-renders its own pixels from the snapshot history (`env.render_history`), in
       ``chunk_size`` pieces with gradient accumulation when it does not fit in memory;
    5. one cosine learning-rate step; logging.

Manual optimisation: every minibatch is one ``optimizer.step()``, so Lightning's ``global_step``
(and ``trainer.max_steps``) counts gradient steps. ``max_iterations`` counts PPO iterations
and also sets the length of the cosine schedule.

Sizes are global: with N ranks (DDP), each rank builds its env with ``num_worlds / N`` worlds
(the env factory's ``num_worlds`` keyword is split) and uses ``minibatch_size / N`` samples of
each minibatch; gradients are averaged by DDP.
"""

from __future__ import annotations

import functools
import inspect
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from lightning.pytorch.utilities import rank_zero_info, rank_zero_warn
from tensordict import TensorDict
from torch import nn
from torch.utils.data import DataLoader, IterableDataset
from torchrl.data import Composite
from torchrl.envs import EnvBase

from pictura.envs.contract import TrainingEnv
from pictura.modules.gae import AdvantageFilter, ReturnNormalizer, generalized_advantage

RESUME_KEY = "pictura_resume"
"""Checkpoint entry with every rank's env state (`DrivingEnv.save_state`) and RNG states."""

SHAPE_BUCKET_ROWS = 1024
"""Policy batches of variable size are padded to a multiple of this many rows on the GPU."""

EnvFactory = Callable[[str, int], EnvBase]
"""``env(device, seed)`` -> a TorchRL env that is also a `TrainingEnv`; in a config:
``class_path`` + ``init_args`` of the env, without ``device`` and ``seed`` (PPO fills them in
`setup`). The return type stays ``EnvBase``: jsonargparse builds the partial only for a
``class_path`` that subclasses it, and no class subclasses a protocol it merely satisfies."""
PolicyFactory = Callable[[Composite, int], nn.Module]
"""``policy(observation_spec, num_actions) -> nn.Module`` with ``forward(td) -> (logits, value)``."""



def cosine_factor(iteration: int, total: int) -> float:
    """The cosine schedule's share of the base learning rate at ``iteration`` of ``total``."""
    return 0.5 * (1.0 + math.cos(math.pi * min(iteration, total) / total))


POLICY_ARGUMENTS = ("observation_spec", "num_actions")
"""What `PPO.setup` builds a policy class with: ``policy(observation_spec, num_actions)``."""


def check_policy_factory(policy: PolicyFactory) -> None:
    """Refuse a policy class (or a partial of one) that cannot be a `PolicyFactory`: not an
    ``nn.Module``, or a constructor without `POLICY_ARGUMENTS`. Plain callables pass unchecked."""
    # a functools.partial of the class, or jsonargparse's partial(instantiator, cls, **init_args)
    candidates = [getattr(policy, "func", policy), *getattr(policy, "args", ())]
    cls = next((c for c in candidates if inspect.isclass(c)), None)
    if cls is None:
        return
    name = f"{cls.__module__}.{cls.__qualname__}"
    if not issubclass(cls, nn.Module):
        raise ValueError(f"policy: {name} is not a torch.nn.Module (a policy's forward(td) returns (logits, value))")
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return
    missing = [arg for arg in POLICY_ARGUMENTS if arg not in parameters]
    if missing:
        raise ValueError(
            f"policy: {name} lacks the constructor argument(s) {', '.join(missing)}: a policy class is built as "
            "policy(observation_spec, num_actions, **init_args) and its forward(td) returns (logits, value), "
            "e.g. pictura.modules.AlbertiPolicy"
        )


def ppo_loss(
    logits: torch.Tensor,
    value: torch.Tensor,
    action: torch.Tensor,
    old_logprob: torch.Tensor,
    advantage: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip_coef: float = 0.2,
    vf_coef: float = 0.5,
    ent_coef: float = 0.01,
) -> dict[str, torch.Tensor]:
    """Clipped-surrogate PPO loss over a batch of B transitions (means over ``mask``).

    Args:
        logits (B, A), value (B,): the current policy's outputs.
        action (B,) int64, old_logprob (B,): what the acting policy did and its log-probability.
        advantage (B,): already normalised; returns (B,): GAE returns (value targets).
        mask (B,) bool: transitions that count (invalid or filtered ones are False).
    Returns:
        dict of scalars: ``total = policy - ent_coef * entropy + vf_coef * value``, with
        ``value = 0.5 * mean((V - R)^2)`` (no value clipping), ``approx_kl`` ((r - 1) - log r),
        ``clip_fraction``.
    """
    weight = mask.to(logits.dtype)
    count = weight.sum().clamp(min=1.0)

    def mean(x: torch.Tensor) -> torch.Tensor:
        return (x * weight).sum() / count

    log_probs = F.log_softmax(logits.float(), dim=-1)
    logprob = log_probs.gather(-1, action.unsqueeze(-1)).squeeze(-1)
    entropy = -(log_probs.exp() * log_probs).sum(-1)
    log_ratio = logprob - old_logprob
    ratio = log_ratio.exp()
    surrogate = torch.maximum(-advantage * ratio, -advantage * ratio.clamp(1 - clip_coef, 1 + clip_coef))
    policy_loss = mean(surrogate)
    value_loss = 0.5 * mean((value.float() - returns) ** 2)
    entropy_mean = mean(entropy)
    return {
        "policy": policy_loss,
        "value": value_loss,
        "entropy": entropy_mean,
        "total": policy_loss - ent_coef * entropy_mean + vf_coef * value_loss,
        "approx_kl": mean((ratio - 1) - log_ratio).detach(),
        "clip_fraction": mean(((ratio - 1).abs() > clip_coef).to(logits.dtype)).detach(),
    }


SPREAD_QUANTILES = (0.5, 0.9, 0.99)
"""Quantiles of |A| that `spread_metrics` logs (besides the maximum)."""


def spread_metrics(advantage: torch.Tensor, returns: torch.Tensor, value: torch.Tensor) -> dict[str, torch.Tensor]:
    """Scale diagnostics of a rollout's valid transitions (1-D tensors of equal length): |A| at
    `SPREAD_QUANTILES` and its maximum, the spread of the value targets and the value
    function's RMS error. What they show: whether the advantage filter's threshold (a fraction
    of the running max |A|) follows the bulk of the advantages or a few outliers, and how large
    the value loss is against the policy loss in the shared trunk's gradient."""
    if advantage.numel() == 0:
        return {}
    magnitude = advantage.abs().float()
    q = torch.tensor(SPREAD_QUANTILES, device=magnitude.device)
    # torch.quantile refuses inputs over 2^24 elements: an evenly strided subsample stands in
    stride = -(-magnitude.numel() // 2**24)
    levels = torch.quantile(magnitude[::stride], q)
    out = {f"train/advantage/abs_p{round(100 * p)}": levels[i] for i, p in enumerate(SPREAD_QUANTILES)}
    out["train/advantage/abs_max"] = magnitude.max()
    out["train/return/mean"] = returns.float().mean()
    out["train/return/std"] = returns.float().std() if returns.numel() > 1 else torch.zeros((), device=returns.device)
    out["train/value/rms_error"] = (value.float() - returns.float()).pow(2).mean().sqrt()
    return out


def normalize_advantage(advantage: torch.Tensor) -> torch.Tensor:
    """Per-minibatch normalisation (zero mean, unit std; std of a single sample taken as 1)."""
    if advantage.numel() < 2:
        return advantage - advantage.mean()
    return (advantage - advantage.mean()) / (advantage.std() + 1e-8)


def sample_action(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Gumbel-max sample from categorical logits (B, A) -> action (B,), log-prob (B,).

    Written with plain tensor ops so it never synchronises with the host (torch.distributions
    validates its arguments on the host).
    """
    uniform = torch.rand_like(logits, dtype=torch.float32).clamp_(1e-12, 1.0)
    action = (logits.float() - torch.log(-torch.log(uniform))).argmax(-1)
    logprob = F.log_softmax(logits.float(), dim=-1).gather(-1, action.unsqueeze(-1)).squeeze(-1)
    return action, logprob


def pad_to_bucket(index: torch.Tensor, bucket: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``index`` (N,) padded to a multiple of ``bucket`` rows by repeating its first entry, and
    the (padded N,) bool mask of its real rows.

    Policy batches of a handful of recurring sizes instead of one new size per minibatch and
    rollout: cuDNN autotuning (``trainer.benchmark``) and torch.compile treat every new batch
    size as new work. Padded rows are masked out of every loss.
    """
    n = index.numel()
    size = -(-n // bucket) * bucket
    real = torch.arange(size, device=index.device) < n
    if size == n:
        return index, real
    return torch.cat([index, index[:1].expand(size - n)]), real


class _Iterations(IterableDataset):
    """A stream of iteration indices: Lightning needs a dataloader; PPO makes its own data.

    Endless by default; with ``count`` it has a length, so the progress bar shows the total
    number of iterations and an ETA.
    """

    def __init__(self, count: int | None = None):
        self.count = count

    def __iter__(self) -> Iterator[int]:
        i = 0
        while self.count is None or i < self.count:
            yield i
            i += 1

    def __len__(self) -> int:
        if self.count is None:
            raise TypeError("an endless iteration stream has no length")
        return self.count


class _IterationLoader(DataLoader):
    """The loader of `_Iterations`, resumable as far as Lightning can tell: its items are only
    indices that `training_step` ignores (the iteration counter is a module buffer, saved with
    the weights), so there is nothing to restore, and a mid-epoch resume need not warn."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        pass


class PhaseClock:
    """Wall time per phase of an iteration; on CUDA with events, so the loop never syncs.

    ``with clock.phase(name):`` brackets a phase (may repeat; the spans add up);
    ``seconds()`` syncs once.
    """

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.spans: dict[str, list] = {}

    def _now(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = self._now()
        try:
            yield
        finally:
            self.spans.setdefault(name, []).append((start, self._now()))

    def seconds(self) -> dict[str, float]:
        if self.cuda:
            torch.cuda.synchronize()
            return {k: sum(a.elapsed_time(b) for a, b in v) / 1000.0 for k, v in self.spans.items()}
        return {k: sum(b - a for a, b in v) for k, v in self.spans.items()}


class PPO(LightningModule):
    """Self-play PPO on a `DrivingEnv`-contract env (see module docstring).

    Args:
        env: env factory ``env(device, seed)`` (config: ``class_path`` + ``init_args``).
        policy: policy factory ``policy(observation_spec, num_actions)``.
        seed: base seed; rank r's env gets ``seed + 1_000_003 * r`` (+ iteration on resume).
        rollout_steps: steps per rollout (128).
        minibatch_size: transitions per gradient step, global over ranks (65,536).
        chunk_size: per-rank forward/backward piece of a minibatch (gradient accumulation);
            None = the whole per-rank minibatch at once.
        update_epochs: passes over the rollout per iteration (2).
        gamma, gae_lambda: discount (0.999) and GAE lambda (0.95).
        clip_coef, vf_coef, ent_coef: PPO clip (0.2), value (0.5) and entropy (0.01) weights.
        learning_rate, betas, eps, weight_decay: AdamW (5e-4, (0.9, 0.999), 1e-8, 0.01).
        max_grad_norm: global gradient-norm clip (0.5).
        advantage_filter: Gigaflow filter on/off; filter_threshold (0.01) and filter_ema (0.25).
        value_normalization: not in Table 5 (off): the value head predicts the returns
            normalised by their running mean and spread (`ReturnNormalizer`, EMA coefficient
            ``value_norm_ema``, 0.25); its output is mapped back for GAE, so advantages keep
            their units, and the value loss is in normalised units.
        store_images: keep the rollout's pixels instead of re-rendering (small runs only).
        compile_policy: run the policy through ``torch.compile`` with static shapes (GPU runs:
            the vectorized agent's configs turn it on, a one-off compile of ~35 s for 1.5x its
            iteration rate; Alberti's FP32 iterations gained nothing measurable).
        max_iterations: stop after this many PPO iterations and run the cosine schedule over
            them; None = schedule over ``trainer.max_steps`` gradient steps, converted to
            iterations at the nominal (unfiltered) minibatch count.
    """

    def __init__(
        self,
        env: EnvFactory,
        policy: PolicyFactory,
        seed: int = 0,
        rollout_steps: int = 128,
        minibatch_size: int = 65_536,
        chunk_size: int | None = None,
        update_epochs: int = 2,
        gamma: float = 0.999,
        gae_lambda: float = 0.95,
        clip_coef: float = 0.2,
        vf_coef: float = 0.5,
        ent_coef: float = 0.01,
        learning_rate: float = 5e-4,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
        max_grad_norm: float = 0.5,
        advantage_filter: bool = True,
        filter_threshold: float = 0.01,
        filter_ema: float = 0.25,
        value_normalization: bool = False,
        value_norm_ema: float = 0.25,
        store_images: bool = False,
        max_iterations: int | None = None,
        compile_policy: bool = False,
    ):
        super().__init__()
        for name, value in (
            ("rollout_steps", rollout_steps),
            ("minibatch_size", minibatch_size),
            ("update_epochs", update_epochs),
            ("chunk_size", 1 if chunk_size is None else chunk_size),
            ("max_iterations", 1 if max_iterations is None else max_iterations),
        ):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if not 0 <= gamma <= 1 or not 0 <= gae_lambda <= 1:
            raise ValueError(f"gamma and gae_lambda must be in [0, 1], got {gamma} and {gae_lambda}")
        # written so that NaN fails every rule
        for name, value, holds, rule in (
            ("clip_coef", clip_coef, clip_coef > 0, "> 0"),
            ("vf_coef", vf_coef, vf_coef >= 0, ">= 0"),
            ("ent_coef", ent_coef, math.isfinite(ent_coef), "finite"),
            ("learning_rate", learning_rate, learning_rate > 0, "> 0"),
            ("betas", betas, len(betas) == 2 and all(0 <= b < 1 for b in betas), "two values in [0, 1)"),
            ("eps", eps, eps > 0, "> 0"),
            ("weight_decay", weight_decay, weight_decay >= 0, ">= 0"),
            ("max_grad_norm", max_grad_norm, max_grad_norm > 0, "> 0"),
            ("filter_threshold", filter_threshold, filter_threshold >= 0, ">= 0"),
            ("filter_ema", filter_ema, 0 < filter_ema <= 1, "in (0, 1]"),
            ("value_norm_ema", value_norm_ema, 0 < value_norm_ema <= 1, "in (0, 1]"),
        ):
            if not holds or (isinstance(value, float) and not math.isfinite(value)):
                raise ValueError(f"{name} must be {rule}, got {value}")
        check_policy_factory(policy)
        self.save_hyperparameters()  # under LightningCLI: the whole model config, so ckpt_path resumes parse
        self.automatic_optimization = False
        self.env_factory, self.policy_factory = env, policy
        self.filter = AdvantageFilter(filter_threshold, filter_ema)
        # only when on, so checkpoints of runs without it keep their state_dict keys
        self.return_norm = ReturnNormalizer(value_norm_ema) if value_normalization else None
        self.register_buffer("iteration", torch.tensor(0, dtype=torch.int64))
        # valid agent-steps collected so far, summed over ranks (learning curves' x axis)
        self.register_buffer("trained_agent_steps", torch.tensor(0, dtype=torch.int64))
        self.env: TrainingEnv | None = None
        self.policy: nn.Module | None = None
        self.rollout: dict[str, torch.Tensor] | None = None  # the last rollout, read by callbacks
        # the piece being backpropagated (observation, `ppo_loss` arguments), read by callbacks
        self.piece: tuple[TensorDict, tuple] | None = None
        # scalars callbacks add during an iteration, logged with PPO's own (averaged over ranks)
        self.iteration_metrics: dict[str, torch.Tensor] = {}
        self._td: TensorDict | None = None
        self.rollout_stats: dict[str, dict[str, torch.Tensor]] = {}
        self._resume: dict | None = None  # the checkpoint's env and RNG states (on_load_checkpoint)
        self._pending_rng: dict | None = None
        # per-rank sizes; `setup` divides them by the number of ranks
        self.minibatch_local = minibatch_size
        self.chunk_local = min(chunk_size or minibatch_size, minibatch_size)
        self.batch_bucket = 1

    # ---- construction ----------------------------------------------------------------------
    def setup(self, stage: str) -> None:
        if self.env is not None:
            return
        world_size, rank = self.trainer.world_size, self.trainer.global_rank
        if self.hparams.minibatch_size % world_size:
            raise ValueError(
                f"minibatch_size={self.hparams.minibatch_size} is not divisible by the {world_size} ranks"
            )
        kwargs = {}
        if world_size > 1:
            global_worlds = getattr(self.env_factory, "keywords", {}).get("num_worlds")
            if global_worlds is None:
                raise ValueError("multi-rank runs need env.init_args.num_worlds (global) to split across ranks")
            if global_worlds % world_size:
                raise ValueError(f"env num_worlds={global_worlds} is not divisible by the {world_size} ranks")
            kwargs["num_worlds"] = global_worlds // world_size
        device = self.trainer.strategy.root_device
        try:
            self.env = self.env_factory(str(device), self.hparams.seed + 1_000_003 * rank, **kwargs)
        except ValueError as err:
            if not kwargs:
                raise
            # the env only sees its share: say where its sizes came from
            raise ValueError(
                f"{err} (each of the {world_size} ranks builds num_worlds={kwargs['num_worlds']} of the global "
                f"{global_worlds}; for packed worlds choose an env block_slots that divides a rank's slots)"
            ) from err
        self.env.validate_actions = False  # actions come from a 12-way categorical
        self.policy = self.policy_factory(self.env.observation_spec, int(self.env.action_spec.n))
        # conv weights channels_last: the views arrive NHWC (the env layout), so no transposes
        self.policy = self.policy.to(memory_format=torch.channels_last)
        # Kept outside the module tree so checkpoints hold the plain policy's weights only.
        if self.hparams.compile_policy:
            # static shapes: the padded batches recur (`pad_to_bucket`), and inductor's dynamic
            # shapes failed on the camera stem's reshape at small resolutions (32x18)
            object.__setattr__(self, "_compiled_policy", torch.compile(self.policy, dynamic=False))
        # PPO consumes each step's pixels before the next step: no per-step copy of the views.
        self.env.share_pixel_buffer = True
        # PPO steps on from td["next"] and bootstraps truncations from `final_record` in one
        # batch per rollout, so the env's next observation is the new episode's first one
        # (TorchRL's contract would render every reset slot's last views once more per step).
        self.env.next_observation = "reset"
        if device.type == "cuda":
            # cuDNN's fused attention failed its backward under bf16 autocast on an H200 at
            # 16,384-sample chunks (mha_graph.execute ... is_good()).
            torch.backends.cuda.enable_cudnn_sdp(False)
        if hasattr(self.policy, "summary"):
            rank_zero_info(self.policy.summary())
        self.minibatch_local = self.hparams.minibatch_size // world_size
        self.chunk_local = min(self.hparams.chunk_size or self.minibatch_local, self.minibatch_local)
        # On the GPU, pad the variable-size policy batches to a few recurring sizes (pad_to_bucket).
        self.batch_bucket = min(SHAPE_BUCKET_ROWS, self.chunk_local) if device.type == "cuda" else 1

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        """Refuse a checkpoint from an incompatible config with an error naming what differs
        (before Lightning's strict load would fail on the first mismatched tensor)."""
        saved = checkpoint.get("state_dict", {})
        own = self.state_dict()
        missing = sorted(set(own) - set(saved))
        unexpected = sorted(set(saved) - set(own))
        wrong = [
            f"{k}: checkpoint {tuple(saved[k].shape)}, this config {tuple(own[k].shape)}"
            for k in own
            if k in saved and tuple(saved[k].shape) != tuple(own[k].shape)
        ]
        if missing or unexpected or wrong:
            problems = wrong[:3] + [f"missing {k}" for k in missing[:3]] + [f"unexpected {k}" for k in unexpected[:3]]
            raise ValueError(
                "checkpoint does not fit this config (a different policy or observation section?): "
                + "; ".join(problems)
                + (" ..." if len(wrong) + len(missing) + len(unexpected) > len(problems) else "")
            )
        self._resume = checkpoint.get(RESUME_KEY)  # used by on_train_start

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Add every rank's env state and random-number state, so that a resumed run plays on
        exactly where this one stopped (`on_train_start`). Lightning calls this on every rank;
        rank 0 writes the file."""
        if self._td is None or not hasattr(self.env, "save_state"):
            return  # not training (yet), or an env that cannot rewind
        local = {
            "env": {k: v.cpu() for k, v in self.env.save_state().items()},
            "rng": {"cpu": torch.get_rng_state()},
        }
        if self.device.type == "cuda":
            local["rng"]["cuda"] = torch.cuda.get_rng_state(self.device)
        ranks = [local]
        if self.trainer.world_size > 1:
            ranks = [None] * self.trainer.world_size
            torch.distributed.all_gather_object(ranks, local)
        checkpoint[RESUME_KEY] = {"ranks": ranks}

    def train_dataloader(self) -> DataLoader:
        count = self.hparams.max_iterations
        return _IterationLoader(_Iterations(count), batch_size=None, num_workers=0)

    # ---- validate / test: one pass, in which the DensitySweep callbacks evaluate the policy ------
    def val_dataloader(self) -> DataLoader:
        # No validation loop inside fit (evaluation there is the DensitySweep callbacks' job):
        # an empty loader makes Lightning skip both the sanity check and the epoch-end pass.
        fitting = self._trainer is not None and self.trainer.state.fn == "fit"
        return _IterationLoader(_Iterations(0 if fitting else 1), batch_size=None, num_workers=0)

    def test_dataloader(self) -> DataLoader:
        return self.val_dataloader()

    def validation_step(self, batch, batch_idx: int) -> None:
        """Nothing: ``validate`` is one pass of the in-domain evaluation, which the
        `pictura.callbacks.DensitySweep` callbacks run and log at this step's end (the CLI adds
        a default one to a config without any)."""

    def test_step(self, batch, batch_idx: int) -> None:
        """Nothing: as `validation_step`, under ``test``."""

    def total_iterations(self) -> int:
        if self.hparams.max_iterations is not None:
            return self.hparams.max_iterations
        max_steps = self.trainer.max_steps
        if max_steps is None or max_steps < 1:
            raise ValueError("set model.max_iterations or trainer.max_steps: the cosine schedule needs a length")
        nominal = self.hparams.rollout_steps * self.env.num_slots * self.trainer.world_size
        minibatches = max(1, math.ceil(nominal / self.hparams.minibatch_size))
        return max(1, max_steps // (self.hparams.update_epochs * minibatches))

    def configure_optimizers(self):
        h = self.hparams
        optimizer = torch.optim.AdamW(
            self.policy.parameters(), lr=h.learning_rate, betas=tuple(h.betas), eps=h.eps, weight_decay=h.weight_decay
        )
        total = self.total_iterations()
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda it: cosine_factor(it, total))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    def _schedule_learning_rate(self) -> None:
        """The learning rate of the iteration about to run, on this run's schedule. A resumed run
        restores the optimizer's rate of the run it continues, which is the end of *that* run's
        schedule (0 once it finished): with a larger ``max_iterations`` the cosine is recomputed
        over the new total, so training goes on at its rate there instead of at 0."""
        scheduler = self.lr_schedulers()
        factor = cosine_factor(int(self.iteration), self.total_iterations())
        for group, base in zip(self.optimizers().param_groups, scheduler.base_lrs, strict=True):
            group["lr"] = base * factor

    def on_train_start(self) -> None:
        self._schedule_learning_rate()
        saved = self._resume_state()
        self._resume = None
        if saved is not None:
            # resumed: every world exactly where the checkpoint left it, and the random numbers
            # too (restored at the first training_step, after Lightning's own draws)
            device = self.env.device
            restored = self.env.restore_state({k: v.to(device) for k, v in saved["env"].items()})
            self._td = restored.select("observation", "valid", "world_id")
            self._pending_rng = saved["rng"]
            return
        # A fresh start, or a checkpoint without env state: a fresh seed per iteration so a
        # resumed run does not replay the episodes it already trained on.
        seed = self.hparams.seed + 1_000_003 * self.trainer.global_rank + int(self.iteration)
        self.env.set_seed(seed)
        self._td = self.env.reset()

    def _resume_state(self) -> dict | None:
        """This rank's saved env and RNG state from the checkpoint being resumed, if usable."""
        if self._resume is None or not hasattr(self.env, "restore_state"):
            return None
        ranks = self._resume["ranks"]
        if len(ranks) != self.trainer.world_size:
            rank_zero_warn(
                f"the checkpoint holds the env state of {len(ranks)} rank(s), this run has "
                f"{self.trainer.world_size}: the envs start fresh episodes instead"
            )
            return None
        return ranks[self.trainer.global_rank]

    def _restore_rng(self) -> None:
        if self._pending_rng is None:
            return
        torch.set_rng_state(self._pending_rng["cpu"])
        if self.device.type == "cuda" and "cuda" in self._pending_rng:
            torch.cuda.set_rng_state(self._pending_rng["cuda"], self.device)
        self._pending_rng = None

    @property
    def policy_forward(self) -> nn.Module:
        """The policy as called in rollouts and updates (compiled when ``compile_policy``)."""
        compiled = self.__dict__.get("_compiled_policy")  # not `or`: a compiled module has no truth value
        return self.policy if compiled is None else compiled

    @property
    def observes_pixels(self) -> bool:
        """Whether the env's observation carries camera pixels (re-rendered per minibatch)."""
        return "pixels" in self.env.observation_spec["observation"].keys()

    @property
    def vector_keys(self) -> list[str]:
        """Observation entries stored per rollout step: everything but the pixels."""
        return [k for k in self.env.observation_spec["observation"].keys() if k != "pixels"]

    @torch.no_grad()
    def set_resolution(self, width: int, height: int) -> None:
        """Render at ``width`` x ``height`` from the next rollout on (a resolution curriculum,
        between iterations). The observation that rollout starts from was rendered at the old
        size: its pixels are re-rendered at the new one from the env's current snapshot, so a
        rollout never mixes sizes."""
        self.env.set_resolution(width, height)
        td = self._td
        if td is None or ("observation", "pixels") not in td.keys(include_nested=True):
            return
        history = {key: value.unsqueeze(0) for key, value in self.env.snapshot().items()}  # one step
        slots = torch.arange(self.env.num_slots, dtype=torch.int64, device=self.env.device)
        pixels = self.env.render_history(history, torch.zeros_like(slots), slots)
        observation = td.get("observation")
        observation.del_("pixels")
        observation.set("pixels", pixels)

    # ---- the PPO iteration -------------------------------------------------------------------
    @torch.no_grad()
    def collect_rollout(self, clock: PhaseClock) -> dict[str, torch.Tensor]:
        """Step the env ``rollout_steps`` times; returns the rollout as tensors.

        Keys: ``agent_box`` (T, S + P, 8), ``light_state`` (T, L) and ``slot_table`` (T, S + 2W)
        (the snapshot history, `DrivingEnv.snapshot`);
        ``ego``, ``conditioning``, ``goals`` (T, S, ...); ``pixels`` (T, S, C, H, W, 3) only with
        ``store_images``; ``action``, ``logprob``, ``value``, ``reward``, ``next_value`` (T, S);
        ``valid``, ``terminated``, ``truncated``, ``next_valid`` (T, S) bool; ``truncated_value``
        (T, S), V of the pre-reset observation of truncated transitions (0 elsewhere).
        """
        env, T, S = self.env, self.hparams.rollout_steps, self.env.num_slots
        spec = env.observation_spec
        dev = env.device
        fields = {k: torch.empty(T, *v.shape, dtype=v.dtype, device=dev) for k, v in env.snapshot().items()}
        fields["action"] = torch.empty(T, S, dtype=torch.int64, device=dev)
        for key in self.vector_keys:
            leaf = spec["observation", key]
            fields[key] = torch.empty(T, *leaf.shape, dtype=leaf.dtype, device=dev)
        if self.hparams.store_images and self.observes_pixels:
            fields["pixels"] = torch.empty(T, *spec["observation", "pixels"].shape, dtype=torch.uint8, device=dev)
        for key in ("logprob", "value", "reward", "next_value"):
            fields[key] = torch.empty(T, S, device=dev)
        for key in ("valid", "terminated", "truncated", "next_valid"):
            fields[key] = torch.empty(T, S, dtype=torch.bool, device=dev)
        # what each step's pre-reset observation is built from (truncation bootstrap)
        final = {k: torch.empty(T, *v.shape, dtype=v.dtype, device=dev) for k, v in env.final_record().items()}
        buf = fields
        reward_terms: dict[str, torch.Tensor] = {}
        events: dict[str, torch.Tensor] = {}

        td = self._td
        env.phase_clock = clock  # the env times its rendering as "rollout_render"
        for t in range(T):
            with clock.phase("rollout_policy"):
                for key, value in env.snapshot().items():  # what this step's pixels were rendered from
                    buf[key][t] = value
                obs = td["observation"]
                for key in self.vector_keys:
                    buf[key][t] = obs[key]
                if "pixels" in fields:
                    buf["pixels"][t] = obs["pixels"]
                logits, value = self.policy_forward(obs)
                action, logprob = sample_action(logits)
                buf["action"][t], buf["logprob"][t], buf["value"][t] = action, logprob, self.state_value(value)
                buf["valid"][t] = td["valid"]

            with clock.phase("rollout_env"):
                td.set("action", action)
                td = env.step(td)
                nxt = td["next"]
                valid = buf["valid"][t].unsqueeze(-1)
                buf["reward"][t] = nxt["reward"].squeeze(-1)
                buf["terminated"][t] = nxt["terminated"].squeeze(-1)
                buf["truncated"][t] = nxt["truncated"].squeeze(-1)
                buf["next_valid"][t] = nxt["valid"]
                for key, value in env.final_record().items():
                    final[key][t] = value
                for term, r in nxt["info", "reward"].items():
                    reward_terms[term] = reward_terms.get(term, 0) + (r * valid).sum()
                for name, e in nxt["info", "event"].items():
                    events[name] = events.get(name, 0) + (e & valid).sum()
                td = nxt.select("observation", "valid", "world_id")

        with clock.phase("rollout_policy"):
            # V(o_{t+1}) for every step: the next step's value, and the final observation's.
            final_value = self.state_value(self.policy_forward(td["observation"])[1])
            buf["next_value"][:-1] = buf["value"][1:]
            buf["next_value"][-1] = final_value
            env.phase_clock = None
            buf["truncated_value"] = self.truncated_values(buf, final)
        self._td = td
        self.rollout_stats = {"reward": reward_terms, "event": events}  # sums over valid agent-steps
        return buf

    def truncated_values(self, buf: dict[str, torch.Tensor], final: dict[str, torch.Tensor]) -> torch.Tensor:
        """(T, S): V of the pre-reset observation of every truncated transition (0 elsewhere),
        re-rendered / rebuilt from the rollout's `DrivingEnv.final_record` history."""
        T, S = buf["truncated"].shape
        values = torch.zeros(T, S, device=buf["value"].device)
        cut = (buf["truncated"] & buf["valid"] & ~buf["terminated"]).reshape(-1)
        index = cut.nonzero().squeeze(-1)  # one host sync per rollout
        for piece in torch.split(index, self.chunk_local) if index.numel() else ():
            padded, _ = pad_to_bucket(piece, self.batch_bucket)
            obs = self.env.observation_from_record(final, padded // S, padded % S)
            values.view(-1)[piece] = self.state_value(self.policy_forward(obs)[1])[: piece.numel()]
        return values

    def state_value(self, head: torch.Tensor) -> torch.Tensor:
        """V(o) in reward units from the value head's output (float32): the output itself, or
        mapped back from the normalised targets with ``value_normalization``."""
        value = head.float()
        return value if self.return_norm is None else self.return_norm.denormalize(value)

    def value_targets(self, returns: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """What the value head regresses on: the returns, or with ``value_normalization`` the
        returns normalised by the running statistics once this rollout is folded in (the
        rollout's own values were mapped back with the statistics before it)."""
        if self.return_norm is None:
            return returns
        reduce = None
        trainer = self._trainer  # None outside a Trainer (tests)
        if trainer is not None and trainer.world_size > 1:
            reduce = functools.partial(trainer.strategy.reduce, reduce_op="sum")
        self.return_norm.update(returns, valid, reduce)
        return self.return_norm.normalize(returns)

    def advantages(self, buf: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """GAE + advantage filter -> (advantage (T, S), returns (T, S), keep (T, S) bool)."""
        h = self.hparams
        advantage, returns = generalized_advantage(
            buf["reward"], buf["value"], buf["next_value"], buf["terminated"], buf["truncated"],
            buf["next_valid"], h.gamma, h.gae_lambda, truncated_value=buf.get("truncated_value"),
        )
        valid = buf["valid"]
        if not h.advantage_filter:
            return advantage, returns, valid
        max_abs = torch.where(valid, advantage.abs(), torch.zeros_like(advantage)).max()
        trainer = self._trainer  # None when used outside a Trainer (tests, notebooks)
        if trainer is not None and trainer.world_size > 1:
            max_abs = trainer.strategy.reduce(max_abs.clone(), reduce_op=torch.distributed.ReduceOp.MAX)
        return advantage, returns, self.filter(advantage, valid, max_abs)

    def minibatch_plan(self, kept_local: int) -> tuple[int, list[float]]:
        """How the kept transitions split into minibatches, the same on every rank.

        Returns the number of minibatches (from the rank with the most kept transitions, so
        every rank steps the optimizer equally often) and each minibatch's size summed over
        the ranks (the denominator of its mean loss). One host sync; two collectives with DDP.
        """
        count = torch.tensor(kept_local, device=self.device)
        world_size = self.trainer.world_size if self._trainer is not None else 1
        if world_size > 1:
            count = self.trainer.strategy.reduce(count, reduce_op=torch.distributed.ReduceOp.MAX)
        num_minibatches = max(1, math.ceil(int(count) / self.minibatch_local))
        # the sizes torch.tensor_split gives: the first kept % n minibatches hold one more
        base, extra = divmod(kept_local, num_minibatches)
        sizes = torch.full((num_minibatches,), float(base), device=self.device)
        sizes[:extra] += 1
        if world_size > 1:
            sizes = self.trainer.strategy.reduce(sizes, reduce_op="sum")
        return num_minibatches, sizes.tolist()

    def minibatch_observation(self, buf: dict[str, torch.Tensor], steps: torch.Tensor, slots: torch.Tensor) -> TensorDict:
        """The observations of (step, slot) pairs, pixels re-rendered from the snapshot history."""
        obs = {key: buf[key][steps, slots] for key in self.vector_keys}
        if "pixels" in buf:
            obs["pixels"] = buf["pixels"][steps, slots]
        elif self.observes_pixels:
            obs["pixels"] = self.env.render_history(buf, steps, slots)
        return TensorDict(obs, batch_size=[steps.shape[0]])

    def training_step(self, batch, batch_idx: int):
        """One PPO iteration (the module docstring's steps 1-5)."""
        h = self.hparams
        clock = PhaseClock(self.device)
        wall = time.perf_counter()
        self._restore_rng()  # only on the first iteration after a resume

        # 1. rollout (no gradients, no host sync)
        self.rollout = None  # free the previous rollout before allocating the next
        self.policy.eval()
        buf = self.collect_rollout(clock)
        self.policy.train()
        self.rollout = buf

        # 2-3. advantages, filter
        advantage, returns, keep = self.advantages(buf)
        targets = self.value_targets(returns, buf["valid"])

        # 4. update epochs over shuffled minibatches; each re-renders its pixels
        self.iteration_metrics = {}
        sums, grad_norm = self.update(buf, advantage, targets, keep, clock)
        learning_rate = self.optimizers().param_groups[0]["lr"]  # the rate this iteration trained with
        self.lr_schedulers().step()
        self.iteration += 1

        # 5. logging (one sync)
        self.log_iteration(
            buf, advantage, returns, keep, sums, grad_norm, clock, time.perf_counter() - wall, learning_rate
        )
        if h.max_iterations is not None and int(self.iteration) >= h.max_iterations:
            self.trainer.should_stop = True

    def update(
        self, buf: dict[str, torch.Tensor], advantage: torch.Tensor, targets: torch.Tensor, keep: torch.Tensor,
        clock: PhaseClock,
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor | None]:
        """``update_epochs`` passes over shuffled minibatches of the kept transitions, one
        optimizer step per minibatch, each minibatch in ``chunk_size`` pieces with gradient
        accumulation. Returns the `ppo_loss` terms summed over the pieces (weighted by their
        samples) and the mean gradient norm before the clip (None without a step). While a
        piece's loss is backpropagated, `piece` holds its observation and `ppo_loss`
        arguments (`pictura.callbacks.GradientDiagnostics` reads them)."""
        h = self.hparams
        optimizer = self.optimizers()
        S = keep.shape[1]
        kept = keep.reshape(-1).nonzero().squeeze(-1)  # one host sync per iteration
        num_minibatches, minibatch_total = self.minibatch_plan(kept.numel())
        flat_adv, flat_ret = advantage.reshape(-1), targets.reshape(-1)
        flat_act, flat_logp = buf["action"].reshape(-1), buf["logprob"].reshape(-1)
        sums: dict[str, torch.Tensor] = {}
        grad_norms: list[torch.Tensor] = []  # one per gradient step, before the clip
        for _epoch in range(h.update_epochs):
            order = kept[torch.randperm(kept.numel(), device=kept.device)]
            for mb, total in zip(torch.tensor_split(order, num_minibatches), minibatch_total, strict=True):
                if total == 0:  # empty on every rank (tiny runs): no step anywhere
                    continue
                mb_adv = normalize_advantage(flat_adv[mb]) if mb.numel() else flat_adv[mb]
                optimizer.zero_grad(set_to_none=True)
                # (torch.split of nothing is one empty piece, not none)
                pieces = torch.split(torch.arange(mb.numel(), device=mb.device), self.chunk_local) if mb.numel() else ()
                if not pieces:  # nothing of this minibatch on this rank: its gradient share is zero
                    self.manual_backward(sum(p.sum() for p in self.policy.parameters()) * 0.0)
                for i, real_piece in enumerate(pieces):
                    piece, real = pad_to_bucket(real_piece, self.batch_bucket)
                    idx = mb[piece]
                    with clock.phase("update_render"):
                        obs = self.minibatch_observation(buf, idx // S, idx % S)
                    with clock.phase("update_optim"):
                        batch = (
                            flat_act[idx], flat_logp[idx], mb_adv[piece], flat_ret[idx], real,
                            h.clip_coef, h.vf_coef, h.ent_coef,
                        )  # fmt: skip
                        logits, value = self.policy_forward(obs)
                        losses = ppo_loss(logits, value, *batch)
                        # Pieces are weighted by their share of the global minibatch, so the accumulated
                        # gradient, averaged over ranks by DDP, is the minibatch's mean over all ranks.
                        share = real_piece.numel() * self.trainer.world_size / total
                        # DDP all-reduces once per minibatch, on its last piece: every rank then runs
                        # the same collectives in the same order, however its samples split.
                        self.piece = (obs, batch)  # for callbacks' on_before_backward
                        with optimizer.toggle_model(sync_grad=i == len(pieces) - 1):
                            self.manual_backward(losses["total"] * share)
                        self.piece = None
                        for k, v in losses.items():
                            sums[k] = sums.get(k, 0) + v.detach() * real_piece.numel()
                with clock.phase("update_optim"):
                    # the norm before clipping: how far the clip shrinks each step (no host sync)
                    grad_norms.append(
                        torch.nn.utils.get_total_norm([p.grad for p in self.policy.parameters() if p.grad is not None])
                    )
                    self.clip_gradients(optimizer, gradient_clip_val=h.max_grad_norm, gradient_clip_algorithm="norm")
                    optimizer.step()
        return sums, torch.stack(grad_norms).mean() if grad_norms else None

    def log_iteration(
        self, buf, advantage, returns, keep, sums, grad_norm: torch.Tensor | None, clock: PhaseClock, wall_s: float,
        learning_rate: float,
    ) -> None:
        h = self.hparams
        valid = buf["valid"]
        steps = valid.sum().clamp(min=1).float()
        processed = max(float(keep.sum()) * h.update_epochs, 1.0)
        metrics = {f"train/loss/{k}": v / processed for k, v in sums.items() if k not in ("approx_kl", "clip_fraction")}
        if grad_norm is not None:
            metrics["train/grad_norm"] = grad_norm.detach()
        metrics.update(self.iteration_metrics)  # the callbacks' scalars of this iteration
        metrics["train/approx_kl"] = sums.get("approx_kl", torch.tensor(0.0)) / processed
        metrics["train/clip_fraction"] = sums.get("clip_fraction", torch.tensor(0.0)) / processed
        value = buf["value"][valid]
        ret = returns[valid]
        var_ret = ret.var() if ret.numel() > 1 else torch.tensor(0.0, device=ret.device)
        metrics["train/explained_variance"] = (
            1 - (ret - value).var() / var_ret if ret.numel() > 1 else torch.tensor(0.0)
        )
        metrics["train/advantage_filter/kept_fraction"] = keep.sum() / steps
        metrics["train/advantage_filter/max_abs_ema"] = self.filter.max_abs_ema.clone()
        metrics.update(spread_metrics(advantage[valid], ret, value))
        if self.return_norm is not None:
            metrics["train/value/norm_mean"] = self.return_norm.mean.clone()
            metrics["train/value/norm_std"] = self.return_norm.std()
        metrics["train/reward/total"] = (buf["reward"] * valid).sum() / steps
        for term, total in self.rollout_stats["reward"].items():
            metrics[f"train/reward/{term}"] = total / steps
        for name, total in self.rollout_stats["event"].items():
            metrics[f"train/event/{name}_per_agent_step"] = total / steps
        metrics["train/terminated_per_agent_step"] = (buf["terminated"] & valid).sum() / steps
        metrics["train/truncated_per_agent_step"] = (buf["truncated"] & valid).sum() / steps
        metrics["train/valid_fraction"] = valid.float().mean()
        metrics["train/learning_rate"] = torch.tensor(learning_rate)
        metrics["train/iteration"] = self.iteration.float()
        seconds = clock.seconds()
        if "rollout_render" in seconds and "rollout_env" in seconds:
            seconds["rollout_env"] -= seconds["rollout_render"]  # the env span contains the render
        seconds["other"] = max(wall_s - sum(seconds.values()), 0.0)
        seconds["wall"] = wall_s
        collected = valid.sum()
        if self.trainer.world_size > 1:
            collected = self.trainer.strategy.reduce(collected, reduce_op="sum")
            metrics, seconds = self.mean_over_ranks(metrics, seconds)
        wall_s = seconds.pop("wall")
        self.trained_agent_steps += collected.to(self.trained_agent_steps)
        metrics["train/agent_steps"] = self.trained_agent_steps.float()  # including this iteration
        # Throughput counts agent-steps of valid (active) agents only, summed over ranks.
        agent_steps = float(collected)
        metrics["perf/agent_steps_per_s"] = torch.tensor(agent_steps / max(wall_s, 1e-9))
        for phase, s in seconds.items():
            metrics[f"perf/seconds/{phase}"] = torch.tensor(s)
            metrics[f"perf/agent_steps_per_s/{phase}"] = torch.tensor(agent_steps / max(s, 1e-9))
        metrics = {k: torch.as_tensor(v, dtype=torch.float32).detach().to(self.device) for k, v in metrics.items()}
        # callback_metrics for callbacks; the loggers get them at the run's one x-axis, the
        # iterations completed, as the evaluation scalars and images (`pictura.callbacks.axis`)
        self.log_dict(metrics, on_step=True, on_epoch=False, sync_dist=False, logger=False)
        if self.trainer.is_global_zero:
            values = dict(zip(metrics, torch.stack(list(metrics.values())).tolist(), strict=True))
            for logger in self.loggers:
                logger.log_metrics(values, step=int(self.iteration))
        self.log("agent_steps_per_s", metrics["perf/agent_steps_per_s"], prog_bar=True, logger=False)
        self.log("iteration", metrics["train/iteration"], prog_bar=True, logger=False)

    def mean_over_ranks(
        self, metrics: dict[str, torch.Tensor], seconds: dict[str, float]
    ) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
        """Every per-rank scalar and phase time averaged over the DDP ranks, in one collective."""
        names = list(metrics)
        values = [torch.as_tensor(metrics[k], dtype=torch.float32).to(self.device).reshape(()) for k in names]
        values += [torch.tensor(s, dtype=torch.float32, device=self.device) for s in seconds.values()]
        mean = self.trainer.strategy.reduce(torch.stack(values), reduce_op="mean").tolist()
        split = len(names)
        metrics = dict(zip(names, map(torch.tensor, mean[:split]), strict=True))
        return metrics, dict(zip(seconds, mean[split:], strict=True))
