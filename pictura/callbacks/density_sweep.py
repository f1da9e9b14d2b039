"""`DensitySweep`: the in-domain evaluation (App. C.2) during ``fit``, every N PPO iterations.

For each density it runs ``scenarios`` fresh scenarios of ``steps`` steps with argmax actions of
the current policy under the evaluation rules (`pictura.eval.protocols.eval_sim_config`),
logs ``eval/<density>/<metric>`` (the five metrics, plus ``collision`` and ``episodes``), a
plot of the metrics vs density: ``<log_dir>/eval/density_sweep_iter_XXXX.png`` and, with a
TensorBoard logger, the image ``eval/density_sweep``; every sweep also appends one JSON line
(iteration, agent-steps trained, summaries, every scenario's raw counts) to
``<log_dir>/eval/density_sweep.jsonl``, the input of ``python -m pictura curves`` (learning
curves; the sweeps replay the same scenarios, so it pairs them to test a change).

``actions="sample"`` evaluates the stochastic policy PPO trains instead (actions drawn from its
categorical, seeded): early in training the policy is close to uniform and its argmax is one
constant action for every agent, so only the sampled policy shows what has been learned. Its
outputs are named ``eval_sample/...``, ``density_sweep_sample.jsonl`` and
``density_sweep_sample_iter_XXXX.png``, so both kinds of sweep can run in one fit.

Evaluation envs come from the module's own env factory (same maps, rig and observation as
training unless ``maps`` is given), one per density, built on first use and kept. Under DDP
every rank plays ``scenarios / world_size`` scenarios (at least one) with its own seeds and the
raw counters are summed over ranks before dividing, so the logged metrics are global; every
rank runs the sweep at the same iteration (it depends only on the iteration count), which the
collective needs.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence

import torch
from lightning.pytorch import Callback, LightningModule, Trainer

from pictura.callbacks.axis import logging_step
from pictura.eval.in_domain import evaluate_densities
from pictura.eval.metrics import COUNTERS, PARTNERS
from pictura.eval.policies import argmax_policy, sampled_policy
from pictura.eval.protocols import IN_DOMAIN_DENSITIES, build_in_domain_env
from pictura.eval.report import jsonable, plot_metrics, sweep_names

LOGGED = (
    "at_fault_collision",
    "offroad",
    "red_light",
    "goals",
    "km_per_infraction",
    "at_fault_per_km",
    "collision",
    "episodes",
    *(f"at_fault_{p}" for p in PARTNERS),
)


class DensitySweep(Callback):
    """In-domain evaluation at several densities every ``every_n_iterations`` PPO iterations.

    Args:
        every_n_iterations: run after every N-th PPO iteration (0 = only at the end of fit).
        densities: agents per world (paper: 60, 120, 150).
        scenarios: scenarios per density, global over ranks (paper: 200).
        steps: steps per scenario (paper: 3000).
        worlds_per_batch: scenarios played side by side (default: all of a rank's at once).
        maps: map sources (default: the training env's ``map_sources``).
        seed: base seed of the evaluation scenarios (the same scenarios at every sweep).
        plot: write the PNG and log it as a TensorBoard image.
        at_start: also evaluate before the first iteration (iteration 0 of a learning curve).
        actions: "argmax" (greedy, the paper's evaluation) or "sample" (the stochastic policy;
            outputs named ``eval_sample``, ``density_sweep_sample``).
    """

    def __init__(
        self,
        every_n_iterations: int = 100,
        densities: Sequence[int] = IN_DOMAIN_DENSITIES,
        scenarios: int = 8,
        steps: int = 300,
        worlds_per_batch: int | None = None,
        maps: Sequence[str] | None = None,
        seed: int = 12_345,
        plot: bool = True,
        at_start: bool = False,
        actions: str = "argmax",
    ):
        if every_n_iterations < 0:
            raise ValueError(f"every_n_iterations must be >= 0, got {every_n_iterations}")
        densities = [int(d) for d in densities]
        if not densities or min(densities) < 1:
            raise ValueError(f"densities must be agents per world >= 1, got {densities}")
        for name, value in (("scenarios", scenarios), ("steps", steps), ("worlds_per_batch", worlds_per_batch or 1)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if maps is not None and len(maps) == 0:
            raise ValueError("maps must name at least one map source (or be null for the training maps)")
        self.every_n_iterations, self.densities = every_n_iterations, densities
        self.scenarios, self.steps, self.worlds_per_batch = scenarios, steps, worlds_per_batch
        self.maps, self.seed, self.plot = (list(maps) if maps else None), seed, plot
        self.tag, self.stem = sweep_names(actions)  # raises for an unknown ``actions``
        self.at_start, self.actions = at_start, actions
        self.envs: dict[int, object] = {}
        self.results: dict[int, dict[str, dict[str, float]]] = {}  # iteration -> density -> summary
        self.written: list[str] = []
        self._last_iteration = -1

    @property
    def state_key(self) -> str:
        # an argmax and a sampled sweep may run side by side in one Trainer
        return self._generate_state_key(actions=self.actions)

    def _env(self, pl_module: LightningModule, density: int, rank_scenarios: int, rank: int):
        if density not in self.envs:
            factory = pl_module.env_factory
            train_env = pl_module.env
            maps = self.maps or list(getattr(train_env, "map_sources", ()))
            base_sim = getattr(factory, "keywords", {}).get("sim")

            def build(device, seed, **kwargs):
                return factory(device, seed, **kwargs)

            env = build_in_domain_env(
                build, density, min(self.worlds_per_batch or rank_scenarios, rank_scenarios), self.steps, maps,
                str(pl_module.device), self.seed + 1_000_003 * rank, base_sim,
            )
            env.validate_actions = False
            self.envs[density] = env
        env = self.envs[density]
        rig, train_rig = getattr(env, "rig", None), getattr(pl_module.env, "rig", None)
        if rig is not None and train_rig is not None:
            # follow a resolution curriculum (the rig object may even be shared with training)
            env.set_resolution(train_rig.width, train_rig.height)
        return env

    @torch.no_grad()
    def evaluate(self, trainer: Trainer, pl_module: LightningModule) -> dict[str, dict[str, float]] | None:
        """Run the sweep now; returns ``{density: summary}`` (every rank gets the global one)."""
        iteration = logging_step(trainer, pl_module)
        if iteration == self._last_iteration or pl_module.policy is None:
            return None
        self._last_iteration = iteration
        world, rank = trainer.world_size, trainer.global_rank
        rank_scenarios = max(1, math.ceil(self.scenarios / world))
        policy = pl_module.policy
        was_training = policy.training
        policy.eval()
        act = argmax_policy(policy) if self.actions == "argmax" else sampled_policy(policy, self.seed + 7_919 * rank)
        # a bar per density under `validate` / `test`, where the sweep is the whole run (in fit it
        # would cut into Lightning's training bar)
        stage = getattr(getattr(trainer, "state", None), "fn", None)
        show = stage in ("validate", "test") and trainer.is_global_zero and getattr(trainer, "progress_bar_callback", None)
        try:
            summaries, per_scenario = evaluate_densities(
                lambda density: self._env(pl_module, density, rank_scenarios, rank), act, self.densities,
                rank_scenarios, self.steps, self.seed + 1_000_003 * rank, self.tag, bool(show),
            )
        finally:
            policy.train(was_training)
        self.results[iteration] = summaries
        metrics = self.scalars(summaries)
        log_dir = trainer.log_dir or trainer.default_root_dir  # a collective under DDP: all ranks ask
        if trainer.is_global_zero:
            for logger in trainer.loggers:
                logger.log_metrics(metrics, step=iteration)
            if self.plot:
                self._plot(trainer, summaries, log_dir, iteration)
            self._append_record(pl_module, summaries, log_dir, iteration, per_scenario)
        return summaries

    def scalars(self, summaries: dict[str, dict[str, float]]) -> dict[str, float]:
        """``{<tag>/<density>/<metric>: value}`` of a sweep's `LOGGED` metrics, finite ones only
        (km/infraction is inf without infractions: not plottable)."""
        return {
            f"{self.tag}/{d}/{name}": float(s[name])
            for d, s in summaries.items()
            for name in LOGGED
            if math.isfinite(s[name])
        }

    def _append_record(self, pl_module: LightningModule, summaries, log_dir: str, iteration: int, per_scenario=None) -> None:
        """One line of ``eval/density_sweep.jsonl``: what a learning curve is drawn from. Beside
        the summaries, ``scenario_counters`` holds every scenario's `COUNTERS` sums per density
        (columns ``scenario_counter_columns``), in the same order at every sweep: the sweeps
        replay the same scenarios, so ``curves`` pairs them to test a change."""
        trained = getattr(pl_module, "trained_agent_steps", None)
        record = {
            "iteration": iteration,
            "agent_steps": None if trained is None else int(trained),
            "densities": self.densities,
            "scenarios": self.scenarios,
            "steps": self.steps,
            "actions": self.actions,
            "results": summaries,
        }
        if per_scenario:
            record["scenario_counter_columns"] = list(COUNTERS)
            record["scenario_counters"] = per_scenario
        folder = os.path.join(log_dir, "eval")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{self.stem}.jsonl"), "a") as f:
            f.write(json.dumps(jsonable(record), allow_nan=False) + "\n")

    def _plot(self, trainer: Trainer, summaries, log_dir: str, iteration: int) -> None:
        import matplotlib.pyplot as plt
        import numpy as np
        from PIL import Image

        folder = os.path.join(log_dir, "eval")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{self.stem}_iter_{iteration:04d}.png")
        plt.close(plot_metrics({f"iter {iteration}": summaries}, path))
        self.written.append(path)
        experiment = getattr(trainer.logger, "experiment", None)
        if experiment is not None and hasattr(experiment, "add_image"):
            # the PNG just written, so the figure is drawn once
            image = np.asarray(Image.open(path).convert("RGB"))
            experiment.add_image(f"{self.tag}/density_sweep", image, iteration, dataformats="HWC")

    def on_train_start(self, trainer, pl_module) -> None:
        if self.at_start:
            self.evaluate(trainer, pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        iteration = int(getattr(pl_module, "iteration", batch_idx + 1))
        if self.every_n_iterations and iteration % self.every_n_iterations == 0:
            self.evaluate(trainer, pl_module)

    def on_train_end(self, trainer, pl_module) -> None:
        self.evaluate(trainer, pl_module)

    def log_stage(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        """``validate`` / ``test``: run the sweep once and log ``<stage>/<tag>/<density>/<metric>``,
        which Lightning prints and returns. The sweep also writes its usual plot and JSON record."""
        for name, value in self.scalars(self.evaluate(trainer, pl_module) or {}).items():
            pl_module.log(f"{stage}/{name}", value, batch_size=1)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self.log_stage(trainer, pl_module, "val")

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self.log_stage(trainer, pl_module, "test")
