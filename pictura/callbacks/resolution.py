"""`ResolutionCurriculum`: change the camera resolution at given global steps during ``fit``.

    callbacks:
      - class_path: pictura.callbacks.ResolutionCurriculum
        init_args:
          schedule: [[0, 48, 27], [20000, 96, 54]]   # [global_step, width, height]

Before every training batch (one PPO iteration) the callback looks up the last schedule entry
whose step is <= ``trainer.global_step`` and, if the env renders at another resolution, calls
the module's ``set_resolution(width, height)`` (`pictura.modules.PPO.set_resolution`; a module
without one: the env's). ``global_step`` counts optimizer (gradient) steps in
`pictura.modules.PPO`, not iterations. Because it depends only on ``global_step``, which every
DDP rank advances identically, all ranks switch at the same iteration without communicating;
a run resumed from a checkpoint gets the resolution its step calls for.

PPO re-renders the observation the next rollout starts from at the new resolution, so the
rollout never mixes sizes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from lightning.pytorch import Callback, LightningModule, Trainer

Schedule = Mapping[int, Sequence[int]] | Sequence[Sequence[int]]


def parse_schedule(schedule: Schedule) -> list[tuple[int, int, int]]:
    """``{step: (w, h)}`` or ``[[step, w, h], ...]`` -> sorted ``[(step, w, h)]``; a
    `ValueError` naming the bad entry otherwise."""
    if isinstance(schedule, Mapping):
        items = []
        for step, size in schedule.items():
            if len(size) != 2:
                raise ValueError(f"schedule[{step!r}] must be (width, height), got {size!r}")
            items.append((step, *size))
    else:
        items = []
        for i, entry in enumerate(schedule):
            if len(entry) != 3:
                raise ValueError(f"schedule[{i}] must be [step, width, height], got {entry!r}")
            items.append(tuple(entry))
    out = []
    for step, width, height in items:
        for name, value in (("step", step), ("width", width), ("height", height)):
            if int(value) != value:
                raise ValueError(f"schedule entry {step!r}: {name} must be an integer, got {value!r}")
        if int(step) < 0:
            raise ValueError(f"schedule entry {step!r}: step must be >= 0")
        if int(width) < 1 or int(height) < 1:
            raise ValueError(f"schedule entry {step!r}: width and height must be >= 1, got {width}x{height}")
        out.append((int(step), int(width), int(height)))
    if not out:
        raise ValueError("schedule must hold at least one entry")
    out.sort()
    steps = [s for s, _, _ in out]
    if len(set(steps)) != len(steps):
        raise ValueError(f"schedule lists a step twice: {steps}")
    return out


class ResolutionCurriculum(Callback):
    """Set the env's render resolution from a step schedule (see module docstring).

    Args:
        schedule: ``{global_step: (width, height)}`` or a list of ``[global_step, width, height]``.
            Before the first entry's step the env keeps its configured resolution.
    """

    def __init__(self, schedule: Schedule):
        self.schedule = parse_schedule(schedule)
        self.applied: list[tuple[int, int, int]] = []  # (global_step, width, height) changes made

    def resolution_at(self, global_step: int) -> tuple[int, int] | None:
        """The scheduled (width, height) at ``global_step``; None before the first entry."""
        current = None
        for step, width, height in self.schedule:
            if step <= global_step:
                current = (width, height)
        return current

    @torch.no_grad()
    def apply(self, trainer: Trainer, pl_module: LightningModule) -> bool:
        """Switch the env if the schedule says so now; True when it changed."""
        env = getattr(pl_module, "env", None)
        target = self.resolution_at(trainer.global_step)
        if env is None or target is None:
            return False
        if (env.rig.width, env.rig.height) == target:
            return False
        getattr(pl_module, "set_resolution", env.set_resolution)(*target)
        self.applied.append((trainer.global_step, *target))
        return True

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.apply(trainer, pl_module)
