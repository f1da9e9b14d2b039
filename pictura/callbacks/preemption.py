"""`PreemptionCheckpoint`: a resumable ``last.ckpt`` when the run is stopped, and every N minutes.

SIGINT (Ctrl-C), SIGTERM (``kill``, a cluster's preemption notice) and, under SLURM with
Lightning's auto-requeue, the requeue signal (SIGUSR1) only set a flag: the PPO iteration in
flight finishes, then the callback writes ``checkpoints/last.ckpt`` (the same file and content
as `ModelCheckpoint`'s: weights, AdamW, LR schedule, every rank's worlds mid-episode and the
random numbers), prints where it is and how to resume, and exits with 128 + the signal number
(130 for Ctrl-C, 143 for SIGTERM) without the end-of-fit evaluation and video. The checkpoint lies
between two iterations, so ``--ckpt_path`` resumes exactly where the run stopped. A second
Ctrl-C aborts at once, without a checkpoint. Under SLURM the requeue signal saves Lightning's
``hpc_ckpt_N.ckpt`` at the same boundary and requeues the job (Lightning's own handler, which
would save mid-iteration, is replaced); the requeued job resumes from it by itself. Under DDP
a signal to any rank stops every rank at the same boundary (one small collective per iteration).

``every_minutes`` also writes ``last.ckpt`` at the first iteration boundary after that many
minutes since the last save, so a job killed without notice loses at most that much.

`pictura.modules.cli` adds one (``every_minutes=0``) to every ``fit`` whose config has none.
Once training is over (during the end-of-fit evaluation) a signal acts at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import torch
from lightning.fabric.plugins.environments import SLURMEnvironment
from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.distributed import ReduceOp


class PreemptionCheckpoint(Callback):
    """Save a resumable ``last.ckpt`` on SIGINT / SIGTERM (and SLURM's requeue signal) at the
    end of the PPO iteration in flight, then stop; and every ``every_minutes`` minutes.

    Args:
        every_minutes: minutes between periodic saves of ``last.ckpt`` (0: only on signals).
    """

    def __init__(self, every_minutes: float = 0.0):
        if not every_minutes >= 0:
            raise ValueError(f"every_minutes must be >= 0, got {every_minutes}")
        self.every_minutes = float(every_minutes)
        self.received: int | None = None  # the signal that stopped the run
        self.saved: str | None = None
        self._last_save = time.monotonic()
        self._fitting = False
        self.started = False  # whether the training loop began (its first iteration)

    # ---- signals -----------------------------------------------------------------------------
    def _signals(self, trainer: Trainer) -> list[int]:
        numbers = [signal.SIGINT, signal.SIGTERM]
        environment = trainer._accelerator_connector.cluster_environment
        if isinstance(environment, SLURMEnvironment) and environment.auto_requeue and environment.requeue_signal:
            numbers.append(environment.requeue_signal)
        return numbers

    def _handle(self, signum: int, frame) -> None:
        if not self._fitting:  # outside fit (Lightning restores handlers in its own order)
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if signum == signal.SIGINT and self.received == signal.SIGINT:
            raise KeyboardInterrupt  # a second Ctrl-C: stop now, without a checkpoint
        if self.received is None or signum == signal.SIGINT:
            self.received = signum
        print(
            f"\nreceived {signal.Signals(signum).name}: saving a checkpoint at the end of this iteration "
            "(Ctrl-C again to abort without one)",
            file=sys.stderr,
            flush=True,
        )

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        # After Lightning installed its own handlers (`Trainer._run`), which it puts back to
        # what they were before fit when fit ends: ours replace them for the training loop.
        self._last_save = time.monotonic()
        self.started = True
        if threading.current_thread() is not threading.main_thread():
            return
        self._fitting = True
        for signum in self._signals(trainer):
            signal.signal(signum, self._handle)

    def teardown(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        self._fitting = False

    # ---- saving ------------------------------------------------------------------------------
    @staticmethod
    def last_path(trainer: Trainer) -> str:
        """``last.ckpt`` in the `ModelCheckpoint`'s folder, else ``<log dir>/checkpoints``."""
        callback = trainer.checkpoint_callback
        if isinstance(callback, ModelCheckpoint) and callback.dirpath:
            return os.path.join(callback.dirpath, callback.CHECKPOINT_NAME_LAST + callback.FILE_EXTENSION)
        return os.path.join(trainer.log_dir or trainer.default_root_dir, "checkpoints", "last.ckpt")

    def on_train_batch_end(self, trainer: Trainer, pl_module: LightningModule, outputs, batch, batch_idx) -> None:
        due = self.every_minutes > 0 and time.monotonic() - self._last_save >= 60 * self.every_minutes
        signum, due = self.received or 0, int(due)
        if trainer.world_size > 1:
            # every rank saves together (the checkpoint gathers every rank's worlds): a signal to
            # any rank stops them all, and rank 0's clock decides the periodic saves
            flags = torch.tensor([signum, due if trainer.is_global_zero else 0], device=pl_module.device)
            signum, due = (int(v) for v in trainer.strategy.reduce(flags, reduce_op=ReduceOp.MAX).tolist())
            self.received = signum or None
        if not signum and not due:
            return
        environment = trainer._accelerator_connector.cluster_environment
        if isinstance(environment, SLURMEnvironment) and signum == environment.requeue_signal:
            # Lightning's requeue at the iteration boundary: hpc_ckpt_N.ckpt, which the requeued
            # job resumes from by itself, then ``scontrol requeue``
            self.saved = trainer._checkpoint_connector.hpc_save_path(trainer.default_root_dir)
            trainer._signal_connector._slurm_sigusr_handler_fn(signum, None)
        else:
            self.saved = self.last_path(trainer)
            trainer.save_checkpoint(self.saved, weights_only=False)
        self._last_save = time.monotonic()
        if not signum:
            return
        print(
            f"stopped by {signal.Signals(signum).name} after iteration {int(getattr(pl_module, 'iteration', 0))}: "
            f"saved {self.saved}; resume with --ckpt_path {self.saved}",
            file=sys.stderr,
            flush=True,
        )
        # Leave now, skipping the end-of-fit work (evaluation sweeps, videos): Lightning tears
        # down (loggers flushed) and passes the exit on, with the code a shell gives a process
        # that this signal ended.
        raise SystemExit(128 + signum)

    def on_train_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        # training is over (the one endless epoch ends with the run) and checkpointed by
        # `ModelCheckpoint`: a signal during the end-of-fit work acts at once
        self._fitting = False
