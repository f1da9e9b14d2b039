"""The one x-axis of a run's TensorBoard scalars and images: PPO iterations completed."""

from __future__ import annotations


def logging_step(trainer, pl_module) -> int:
    """The step every ``train/``, ``perf/`` and ``eval/`` scalar and every image is logged at:
    the PPO iterations completed (`PPO.iteration`), or the trainer's ``global_step`` for a
    module that does not count them."""
    return int(getattr(pl_module, "iteration", trainer.global_step))
