"""`GradientDiagnostics`: the gradient norm of each term of PPO's loss, once per iteration.

Logs ``train/grad_norm/policy``, ``train/grad_norm/value`` and ``train/grad_norm/entropy``: the
norm of the gradient of each weighted term of `pictura.modules.ppo.ppo_loss`'s ``total`` (policy
surrogate, ``vf_coef`` x value loss, ``-ent_coef`` x entropy) on the iteration's first piece
(``chunk_size`` transitions of its first minibatch; ranks averaged). It shows which term steers
the shared trunk. The norms come from a separate eager forward of that piece, before the first
optimizer step, and ``torch.autograd.grad``, so the update itself is unchanged.

`pictura.modules.cli` adds one to every run whose config has none.
"""

from __future__ import annotations

import torch
from lightning.pytorch import Callback

from pictura.modules.ppo import ppo_loss

LOSS_TERMS = ("policy", "value", "entropy")
"""The terms of `ppo_loss`'s ``total`` that `loss_term_grad_norms` takes apart."""


def loss_term_grad_norms(
    losses: dict[str, torch.Tensor], parameters, vf_coef: float, ent_coef: float
) -> dict[str, torch.Tensor]:
    """The gradient norm of each weighted term of `ppo_loss`'s ``total`` with respect to
    ``parameters``: ``policy``, ``value`` (``vf_coef`` x value loss) and ``entropy``
    (``-ent_coef`` x entropy). What they show: which term steers the shared trunk, e.g. a value
    regression whose gradient outgrows the policy's. Gradients are returned, not accumulated into
    ``.grad``, so the update's own backward is unaffected."""
    params = [p for p in parameters if p.requires_grad]
    weight = {"policy": 1.0, "value": vf_coef, "entropy": -ent_coef}  # as `ppo_loss` sums them
    terms = {name: weight[name] * losses[name] for name in LOSS_TERMS}
    norms = {}
    for i, (name, term) in enumerate(terms.items()):
        if not term.requires_grad:  # nothing it depends on is trained (a frozen policy): no gradient
            norms[name] = torch.zeros((), device=term.device)
            continue
        grads = torch.autograd.grad(term, params, retain_graph=i < len(terms) - 1, allow_unused=True)
        present = [g for g in grads if g is not None]
        norms[name] = torch.nn.utils.get_total_norm(present) if present else torch.zeros((), device=term.device)
    return norms


class GradientDiagnostics(Callback):
    """Per-term gradient norms of PPO's loss on each iteration's first piece (module docstring)."""

    def __init__(self) -> None:
        self.norms: dict[str, torch.Tensor] | None = None  # this iteration's, once measured

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.norms = None

    def on_before_backward(self, trainer, pl_module, loss: torch.Tensor) -> None:
        piece = getattr(pl_module, "piece", None)  # None for a rank's zero-loss backward
        if self.norms is not None or piece is None:
            return
        obs, arguments = piece
        h = pl_module.hparams
        # the plain policy, eager: the update's (possibly compiled) graph stays as it is
        losses = ppo_loss(*pl_module.policy(obs), *arguments)
        self.norms = loss_term_grad_norms(losses, pl_module.policy.parameters(), h.vf_coef, h.ent_coef)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        # A rank without kept transitions (yet) adds zeros to the ranks' mean; a later piece
        # of the iteration replaces them.
        norms = self.norms or {term: torch.zeros((), device=pl_module.device) for term in LOSS_TERMS}
        for term, norm in norms.items():
            pl_module.iteration_metrics[f"train/grad_norm/{term}"] = norm.detach()
