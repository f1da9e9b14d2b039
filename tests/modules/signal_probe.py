"""A test callback for `test_cli`: sends a real signal to its own process as a chosen
PPO iteration starts, and records every iteration's logged ``train/`` scalars to a JSON file."""

from __future__ import annotations

import json
import os

from lightning.pytorch.callbacks import Callback


class SignalAt(Callback):
    """Sends signal ``signum`` (0: none) to this process as iteration ``at`` starts, before its
    rollout; writes ``{iteration: {tag: value}}`` to ``record`` after every iteration."""

    def __init__(self, record: str, at: int = 0, signum: int = 0):
        self.record, self.at, self.signum, self.seen = record, at, signum, {}

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self.signum and int(pl_module.iteration) + 1 == self.at:
            os.kill(os.getpid(), self.signum)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.seen[int(pl_module.iteration)] = {
            k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("train/")
        }
        with open(self.record, "w") as f:
            json.dump(self.seen, f)
