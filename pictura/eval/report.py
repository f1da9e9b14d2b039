"""Tables, JSON and plots of evaluation results.

A result set is ``{policy name: {density label: summary}}`` where a summary is
`pictura.eval.metrics.summarize`'s dict. The table has one row per density and one column
per (metric, policy), as Table 1 of the paper.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pictura.eval.metrics import METRIC_LABELS, METRICS, PARTNERS, paired_ratio_change, same_scenarios

SWEEP_ACTIONS = ("argmax", "sample")
"""How a `pictura.callbacks.DensitySweep` picks actions: greedy, or sampled from the policy."""


def sweep_names(actions: str) -> tuple[str, str]:
    """(TensorBoard tag prefix, file stem) of the sweeps with ``actions``: the argmax sweep keeps
    the historical ``eval`` / ``density_sweep``, the others add their name."""
    if actions not in SWEEP_ACTIONS:
        raise ValueError(f"actions must be one of {SWEEP_ACTIONS}, got {actions!r}")
    if actions == "argmax":
        return "eval", "density_sweep"
    return f"eval_{actions}", f"density_sweep_{actions}"

Results = dict[str, dict[str, dict[str, float]]]

PERCENT_METRICS = ("at_fault_collision", "offroad", "red_light", *(f"at_fault_{p}" for p in PARTNERS))
"""The per-episode rates, shown as percentages."""


def display_scale(metric: str) -> float:
    """The factor ``metric`` is shown at: 100 for `PERCENT_METRICS`, else 1."""
    return 100.0 if metric in PERCENT_METRICS else 1.0


def display_digits(metric: str) -> int:
    """Decimals ``metric`` is shown with in the evaluation tables: 1 for the `PERCENT_METRICS`
    (in percent), else 2."""
    return 1 if metric in PERCENT_METRICS else 2


Z95 = 1.96
"""Half-width of a reported interval in standard errors (95 % for a normal estimate)."""


def shade_interval(ax, x, y, halves, color) -> None:
    """Shade ``y`` +- ``halves`` on matplotlib axes ``ax`` in the line's ``color``, when any
    half-width is positive; a NaN half leaves a gap at its point."""
    if any(math.isfinite(h) and h > 0.0 for h in halves):
        lower = [v - h for v, h in zip(y, halves, strict=True)]
        upper = [v + h for v, h in zip(y, halves, strict=True)]
        ax.fill_between(x, lower, upper, color=color, alpha=0.15, linewidth=0)


def format_value(metric: str, value: float, se: float | None = None) -> str:
    """Rates as percentages (1 decimal), goals with 2 decimals, km per infraction with 2; with a
    standard error ``se``, ``value +- Z95 se`` (`pictura.eval.metrics.summarize`'s ``<metric>_se``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return "inf"
    scale, digits = display_scale(metric), display_digits(metric)
    text = f"{scale * value:.{digits}f}"
    if isinstance(se, int | float) and math.isfinite(se):
        text += f" +- {Z95 * scale * se:.{digits}f}"
    return text


def format_table(results: Results, title: str | None = None) -> str:
    """A Markdown table: rows = densities, columns = metric (x policy when several); a value
    with a standard error in its summary shows its 95 % interval's half-width (``+-``)."""
    policies = list(results)
    if not policies:
        raise ValueError("no results to tabulate")
    densities: list[str] = []
    for per_density in results.values():
        densities += [d for d in per_density if d not in densities]
    header = ["Density"]
    for metric in METRICS:
        for policy in policies:
            label = METRIC_LABELS[metric]
            header.append(label if len(policies) == 1 else f"{label} [{policy}]")
    rows = [header, ["---"] * len(header)]
    for density in densities:
        row = [density]
        for metric in METRICS:
            for policy in policies:
                summary = results[policy].get(density)
                row.append(format_value(metric, summary[metric], summary.get(f"{metric}_se")) if summary else "-")
        rows.append(row)
    lines = ["| " + " | ".join(r) + " |" for r in rows]
    if title:
        lines.insert(0, title)
    return "\n".join(lines)


def format_change(metric: str, change: float, se: float) -> str:
    """A signed difference in `format_value`'s units, ``+- Z95 se`` when the error is finite."""
    if not math.isfinite(change):
        return "n/a"
    scale, digits = display_scale(metric), display_digits(metric)
    text = f"{scale * change:+.{digits}f}"
    return text + (f" +- {Z95 * scale * se:.{digits}f}" if math.isfinite(se) else "")


def paired_difference_table(per_scenario: dict[str, dict[str, list]], baseline: str | None = None) -> str:
    """Markdown: each policy's metrics minus ``baseline``'s (default: the first policy), per
    density, on the same scenarios, with paired intervals (`pictura.eval.metrics.paired_ratio_change`):
    what makes a scenario hard for both cancels, so a difference is tested more sharply than by
    the two intervals of `format_table`. ``per_scenario``: ``{policy: {density: (K, COUNTERS)
    rows}}``. A density whose scenarios differ between the two (`same_scenarios`) shows "-"."""
    policies = list(per_scenario)
    baseline = policies[0] if baseline is None else baseline
    if baseline not in per_scenario:
        raise ValueError(f"baseline {baseline!r} is not one of the policies {policies}")
    header = ["Policy - " + baseline, "Density", *(METRIC_LABELS[m] for m in METRICS)]
    rows = [header, ["---"] * len(header)]
    for policy in policies:
        if policy == baseline:
            continue
        for density, sums in per_scenario[policy].items():
            base = per_scenario[baseline].get(density)
            if base is None or not same_scenarios(base, sums):
                rows.append([policy, density, *("-" for _ in METRICS)])
                continue
            rows.append([policy, density, *(format_change(m, *paired_ratio_change(base, sums, m)) for m in METRICS)])
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


def jsonable(value):
    """``value`` with non-finite floats made strict-JSON safe (inf -> "inf", nan -> None)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else "inf"
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def write_json(path: str | Path, results: Results, meta: dict, scenario_counters: dict | None = None) -> None:
    """``{"meta": {...}, "results": {policy: {density: summary}}}``, plus, when given,
    ``"scenario_counters": {policy: {density: rows}}`` (every scenario's `COUNTERS` sums, for
    paired comparisons); ``inf`` is written as the string "inf" and ``nan`` as null (strict JSON)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"meta": meta, "results": results}
    if scenario_counters is not None:
        data["scenario_counters"] = scenario_counters
    path.write_text(json.dumps(jsonable(data), indent=2, allow_nan=False) + "\n")


def plot_metrics(results: Results, path: str | Path | None = None):
    """One panel per metric, metric vs density, one line per policy (with +- 1.96 SE bars where
    the summaries have standard errors). Saves a PNG when ``path`` is given; returns the
    matplotlib figure (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(METRICS), figsize=(3.2 * len(METRICS), 2.8))
    fig.subplots_adjust(left=0.04, right=0.99, bottom=0.2, top=0.88, wspace=0.3)
    for ax, metric in zip(axes, METRICS, strict=True):
        for policy, per_density in results.items():
            labels = list(per_density)
            scale = display_scale(metric)
            values, halves = [], []
            for d in labels:
                v = per_density[d][metric]
                values.append(math.nan if v is None or not math.isfinite(v) else scale * v)
                se = per_density[d].get(f"{metric}_se")
                halves.append(Z95 * scale * se if isinstance(se, int | float) and math.isfinite(se) else 0.0)
            if any(halves):  # 95 % intervals where the summaries have standard errors
                ax.errorbar(range(len(labels)), values, yerr=halves, marker="o", capsize=3, label=policy)
            else:
                ax.plot(range(len(labels)), values, marker="o", label=policy)
            ax.set_xticks(range(len(labels)), labels)
        ax.set_title(METRIC_LABELS[metric], fontsize=9)
        ax.set_xlabel("agents per world", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=100)
    return fig
