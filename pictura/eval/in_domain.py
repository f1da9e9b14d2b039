"""The in-domain evaluation of a policy during training (App. C.2): every density's scenarios
played with one action function, counters reduced over the DDP ranks.

`pictura.callbacks.DensitySweep` runs it during ``fit`` and as the whole of ``validate`` /
``test``; ``python -m pictura evaluate`` (`pictura.tools.evaluate`) is the stand-alone command.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from pictura.eval.metrics import all_gather_rows, all_reduce_counters, summarize
from pictura.eval.protocols import ScenarioProgress, run_density


@torch.no_grad()
def evaluate_densities(
    env_for: Callable[[int], object],
    act: Callable,
    densities: Sequence[int],
    scenarios: int,
    steps: int,
    seed: int,
    label: str,
    show_progress: bool = False,
) -> tuple[dict[str, dict[str, float]], dict[str, list[list[float]]]]:
    """Play ``scenarios`` scenarios of ``steps`` steps at every density with ``act``.

    Args:
        env_for: ``env_for(density)`` -> this rank's evaluation env at that density.
        act: the action function (`pictura.eval.policies.argmax_policy` and the like).
        scenarios: this rank's scenarios per density; seed: this rank's base seed.
        label: the progress bar's name (``"<label> @ <density> agents"``).
    Returns:
        ``{density: summary}`` of the counters summed over ranks (every rank gets the global
        one), and ``{density: every scenario's counter sums}`` gathered from all ranks.
        Collectives under DDP: every rank must call it with the same densities.
    """
    summaries: dict[str, dict[str, float]] = {}
    per_scenario: dict[str, list[list[float]]] = {}
    for density in densities:
        env = env_for(density)
        progress = ScenarioProgress(scenarios, f"{label} @ {density} agents", show_progress)
        rows: list[torch.Tensor] = []
        counters = run_density(env, act, scenarios, steps, seed, progress=progress, scenario_sums=rows)
        progress.close()
        summaries[str(density)] = summarize(all_reduce_counters(counters))
        per_scenario[str(density)] = all_gather_rows(torch.cat(rows)).cpu().tolist()
    return summaries, per_scenario
