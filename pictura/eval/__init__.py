"""pictura.eval: the paper's driving metrics and evaluation protocols (App. C).

- `metrics`: `EpisodeMetrics` (on-device accumulator), `collision_at_fault`, `collision_partner`,
  `all_reduce_counters`, `summarize`, `METRICS`, `COUNTERS` / `ALL_COUNTERS` (with the scenario
  `MOMENTS` behind the standard errors), `PARTNERS`;
- `protocols`: in-domain (`run_in_domain`, `run_density`, `eval_sim_config`) and the WOMD scene
  selection (`womd_selection`, `womd_scenes`; rollouts need log replay, `run_womd` raises);
- `in_domain`: `evaluate_densities`, the sweep over densities that `pictura.callbacks.DensitySweep`
  runs during training and as ``validate`` / ``test``;
- `policies`: random / constant baselines, `load_checkpoint` (argmax policy of a PPO checkpoint);
- `report`: the Table-1-style table, JSON and the metrics-vs-density plot.

``python -m pictura evaluate`` (`pictura.tools.evaluate`) is the command line.
"""

from pictura.eval.metrics import (
    ALL_COUNTERS,
    COUNTERS,
    METRICS,
    PARTNERS,
    EpisodeMetrics,
    all_reduce_counters,
    collision_at_fault,
    collision_partner,
    summarize,
)

__all__ = [
    "ALL_COUNTERS",
    "COUNTERS",
    "METRICS",
    "PARTNERS",
    "EpisodeMetrics",
    "all_reduce_counters",
    "collision_at_fault",
    "collision_partner",
    "summarize",
]
