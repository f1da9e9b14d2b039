"""What a rank saw in a DDP run, written to ``$PICTURA_DDP_PROBE`` for tests/modules/test_ddp.py.

`RecordingPPO` is `PPO` that writes every iteration's per-rank metrics beside their mean over
the ranks; `SaveRankWeights` writes each rank's policy weights and env size when training ends.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from lightning.pytorch.callbacks import Callback

from pictura.modules import PPO


def _probe_dir() -> Path:
    return Path(os.environ["PICTURA_DDP_PROBE"])


class RecordingPPO(PPO):
    def on_train_start(self) -> None:
        super().on_train_start()
        # what this rank's worlds look like when training starts (fresh, or restored on resume)
        start = {"agent_box_sum": float(self.env.save_state()["_box"].double().sum())}
        (_probe_dir() / f"start_rank{self.trainer.global_rank}.json").write_text(json.dumps(start))

    def minibatch_plan(self, kept_local):
        num_minibatches, totals = super().minibatch_plan(kept_local)
        name = f"plan_rank{self.trainer.global_rank}_iter{int(self.iteration) + 1}.json"
        (_probe_dir() / name).write_text(json.dumps({"kept": kept_local, "minibatches": num_minibatches}))
        return num_minibatches, totals

    def mean_over_ranks(self, metrics, seconds):
        local = {k: float(v) for k, v in metrics.items()}
        reduced, reduced_seconds = super().mean_over_ranks(metrics, seconds)
        record = {"local": local, "mean": {k: float(v) for k, v in reduced.items()}}
        name = f"metrics_rank{self.trainer.global_rank}_iter{int(self.iteration)}.json"
        (_probe_dir() / name).write_text(json.dumps(record))
        return reduced, reduced_seconds


class SaveRankWeights(Callback):
    def on_train_end(self, trainer, pl_module) -> None:
        rank = trainer.global_rank
        weights = {k: v.detach().cpu().clone() for k, v in pl_module.policy.state_dict().items()}
        torch.save(weights, _probe_dir() / f"weights_rank{rank}.pt")
        info = {"num_slots": pl_module.env.num_slots, "global_step": trainer.global_step,
                "iteration": int(pl_module.iteration)}
        if pl_module.return_norm is not None:
            info["return_norm"] = [float(pl_module.return_norm.mean), float(pl_module.return_norm.std())]
        (_probe_dir() / f"rank{rank}.json").write_text(json.dumps(info))
