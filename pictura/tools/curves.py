"""``python -m pictura curves``: learning curves from the in-training density sweeps.

    python -m pictura curves alberti=runs/alberti/version_0 vectorized=runs/vectorized/version_0 \\
        --out docs/img/learning_curves.png
    python -m pictura curves --training fp32=runs/fp32/version_0 bf16=runs/bf16/version_0 --out train.png

Each run folder holds ``eval/density_sweep.jsonl`` (one line per `pictura.callbacks.DensitySweep`
evaluation: iteration, agent-steps trained, a summary per density); ``--actions sample`` reads
the sweeps of the sampled policy, ``eval/density_sweep_sample.jsonl``, instead. The plot has one panel per
metric (`CURVE_METRICS`: Table 1's five, per episode, and at-fault collisions per km driven), the
mean over densities against agent-steps trained, one line per run. A Markdown table of the first
and last evaluation of every run is printed. ``--metrics`` picks other panels and columns, e.g.
``at_fault_driving,at_fault_halted,at_fault_parked`` (the at-fault rate split by what was hit).

Runs named ``GROUP/MEMBER`` (e.g. ``gains/seed 0``, ``gains/seed 1``) are one arm over several
seeds: they share a colour (a marker each), and the table adds the group's pooled first and
last evaluation and its change (`pooled`), so "did the arm improve" is read over all its seeds.

``--training`` plots the training scalars of the runs' TensorBoard event files instead
(`TRAINING_SCALARS`: mean reward per agent-step, entropy, off-road, collision and goal events per agent-step;
``--scalars`` picks others, e.g. ``train/grad_norm,train/advantage/abs_p90``) against
``train/agent_steps``, e.g. to compare two precisions side by side.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from pathlib import Path

CURVE_METRICS = ("goals", "at_fault_collision", "offroad", "red_light", "km_per_infraction", "at_fault_per_km")
"""Panels, in order: what a rising curve means is more goals, fewer infractions and more
distance per infraction (the paper's five Table-1 metrics). Early policies that start moving
drive further per episode, so the per-episode rates and km / infraction can disagree; the last
panel, at-fault collisions per km driven, separates the collision hazard from that exposure."""


GROUP_SEPARATOR = "/"
"""``GROUP/MEMBER`` run names form groups (`run_groups`)."""

MEMBER_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
"""Markers of a group's members, in order (the group shares one colour)."""


TRAINING_SCALARS = (
    "train/reward/total",
    "train/loss/entropy",
    "train/event/offroad_per_agent_step",
    "train/event/collision_per_agent_step",
    "train/event/goal_per_agent_step",
)
"""Panels of ``--training``, logged by `pictura.modules.PPO` once per iteration."""


def read_event_scalars(path: str | Path, tags: set[str] | None = None) -> dict[str, dict[int, float]]:
    """``{tag: {step: value}}`` of the scalars (all, or ``tags``) in a run folder's TensorBoard
    event files (or one file)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    path = Path(path)
    files = [path] if path.is_file() else sorted(path.glob("events.out.tfevents.*"))
    if not files:
        raise FileNotFoundError(f"{path}: no TensorBoard event files (events.out.tfevents.*)")
    by_step: dict[str, dict[int, float]] = {}
    for file in files:
        events = EventAccumulator(str(file), size_guidance={"scalars": 0})
        events.Reload()
        found = set(events.Tags()["scalars"])
        for tag in found if tags is None else found & tags:
            by_step.setdefault(tag, {}).update({e.step: e.value for e in events.Scalars(tag)})
    return by_step


def read_training_scalars(
    path: str | Path, tags: tuple[str, ...] = TRAINING_SCALARS
) -> dict[str, list[tuple[float, float]]]:
    """``{tag: [(agent-steps trained, value), ...]}`` of ``tags`` from a run folder's (or one
    file's) TensorBoard events, in iteration order."""
    by_step = read_event_scalars(path, {"train/agent_steps", *tags})
    if "train/agent_steps" not in by_step:
        raise ValueError(f"{path}: no train/agent_steps scalar (not a pictura PPO run?)")
    steps = by_step.pop("train/agent_steps")
    return {
        tag: [(steps[k], v) for k, v in sorted(values.items()) if k in steps] for tag, values in by_step.items()
    }


def plot_training(
    runs: dict[str, dict[str, list[tuple[float, float]]]], path: str | Path, tags: tuple[str, ...] = TRAINING_SCALARS
):
    """One panel per tag against agent-steps trained, one line per run."""
    fig, axes = _panels(len(tags))
    for ax, tag in zip(axes, tags, strict=True):
        for name, scalars in runs.items():
            points = scalars.get(tag, [])
            ax.plot([x / 1e6 for x, _ in points], [y for _, y in points], marker=".", label=name)
        ax.set_title(tag.removeprefix("train/"), fontsize=9)
        ax.set_xlabel("agent-steps trained (M)", fontsize=8)
        ax.grid(alpha=0.3)
    return _save(fig, axes, "training scalars (one point per PPO iteration)", path)


def _panels(count: int):
    """A figure of ``count`` side-by-side panels (Agg backend unless one is already chosen)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, count, figsize=(3.4 * count, 2.9), squeeze=False)
    axes = axes[0]
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.2, top=0.86, wspace=0.35)
    return fig, axes


def _save(fig, axes, title: str, path: str | Path):
    """One legend for all panels, below them (inside a panel it hid the curves once a few runs
    were compared): the runs, as the first panel draws them, plus a key for dashed lines where a
    panel has them (`plot_curves`' share on halted wrecks). Then the title, then ``path``
    (folders made); returns ``fig``."""
    from matplotlib.lines import Line2D

    handles, labels = axes[0].get_legend_handles_labels()
    if any(line.get_linestyle() == "--" for ax in axes for line in ax.get_lines()):
        handles.append(Line2D([], [], color="grey", linestyle="--"))
        labels.append("dashed: the part on halted wrecks")
    columns = min(len(handles), 4) or 1
    rows = -(-len(handles) // columns)
    width, height = fig.get_size_inches()
    legend_in = 0.2 * rows + 0.1
    fig.set_size_inches(width, height + legend_in)
    # the panels keep their size: the old bottom margin (inches) plus the legend's rows
    fig.subplots_adjust(bottom=(0.2 * height + legend_in) / (height + legend_in), top=1.0 - 0.14 * height / (height + legend_in))
    fig.legend(handles, labels, loc="lower center", ncol=columns, fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=9)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    return fig


def read_sweeps(path: str | Path, actions: str = "argmax") -> list[dict]:
    """The records of a run folder (its sweeps with ``actions``, see `DensitySweep`) or of a
    ``density_sweep*.jsonl`` file, by iteration."""
    from pictura.eval.report import sweep_names

    path = Path(path)
    stem = sweep_names(actions)[1]
    file = path if path.is_file() else path / "eval" / f"{stem}.jsonl"
    if not file.exists():
        raise FileNotFoundError(f"{file}: no density-sweep records (train with pictura.callbacks.DensitySweep)")
    records = []
    for n, line in enumerate(file.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            record["iteration"], record["results"]  # noqa: B018 -- the fields every record needs
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise ValueError(f"{file}:{n}: not a density-sweep record ({err})") from None
        records.append(record)
    if not records:
        raise ValueError(f"{file}: empty")
    return sorted(records, key=lambda r: r["iteration"])


def _metric(summary: dict, metric: str):
    """``summary[metric]``; ``at_fault_per_km`` from the counts when a record predates it."""
    if metric == "at_fault_per_km" and metric not in summary:
        km = summary.get("distance_km")
        if isinstance(km, int | float) and km > 0 and "episodes" in summary and "at_fault_collision" in summary:
            return summary["at_fault_collision"] * summary["episodes"] / km
    return summary.get(metric)


def density_mean(record: dict, metric: str) -> float:
    """Mean of ``metric`` over the record's densities (non-finite values skipped)."""
    values = []
    for summary in record["results"].values():
        v = _metric(summary, metric)
        if isinstance(v, int | float) and math.isfinite(v):
            values.append(float(v))
    return sum(values) / len(values) if values else math.nan


def mean_se(errors: list[float]) -> float:
    """Standard error of the mean of independent estimates with standard errors ``errors``:
    sqrt(sum se^2) / n."""
    return math.sqrt(sum(e * e for e in errors)) / len(errors)


def density_mean_se(record: dict, metric: str) -> float:
    """Standard error of `density_mean` (the densities' own errors combined as independent:
    sqrt(sum se^2) / D), NaN unless every density of the record has ``<metric>_se`` (records
    from before the standard errors, or with one scenario per density, have none)."""
    errors = [summary.get(f"{metric}_se") for summary in record["results"].values()]
    if not errors or not all(isinstance(e, int | float) and math.isfinite(e) for e in errors):
        return math.nan
    return mean_se(errors)


def _paired_rows(first: dict, last: dict) -> dict | None:
    """``{density: (first rows, last rows)}`` when both records hold the same scenarios'
    per-scenario counts (`DensitySweep`'s ``scenario_counters``; `same_scenarios`) for every
    density, else None."""
    from pictura.eval.metrics import COUNTERS, same_scenarios

    a, b = first.get("scenario_counters"), last.get("scenario_counters")
    columns = list(COUNTERS)
    if not a or not b or first.get("scenario_counter_columns") != columns or last.get("scenario_counter_columns") != columns:
        return None
    if set(a) != set(b) or set(a) != set(first["results"]) or not all(same_scenarios(a[d], b[d]) for d in a):
        return None
    return {d: (a[d], b[d]) for d in a}


def density_mean_change(first: dict, last: dict, metric: str) -> tuple[float, float, bool]:
    """(change of `density_mean` from ``first`` to ``last``, its standard error, paired). When
    both records hold the same scenarios' per-scenario counts, the error is paired
    (`pictura.eval.metrics.paired_ratio_change` per density, combined over densities as
    independent); else the two records' errors combined as independent."""
    from pictura.eval.metrics import RATIOS, paired_ratio_change

    rows = _paired_rows(first, last) if metric in RATIOS else None
    if rows is not None:
        per_density = [paired_ratio_change(before, after, metric) for before, after in rows.values()]
        if all(math.isfinite(c) for c, _ in per_density):
            change = sum(c for c, _ in per_density) / len(per_density)
            se = mean_se([e for _, e in per_density])
            return change, se, True
    change = density_mean(last, metric) - density_mean(first, metric)
    return change, math.hypot(density_mean_se(first, metric), density_mean_se(last, metric)), False


def run_groups(names) -> dict[str, list[str]]:
    """``{group: member run names}`` for the groups of two or more runs named ``GROUP/MEMBER``,
    in the order the runs come."""
    groups: dict[str, list[str]] = {}
    for name in names:
        group, separator, _ = name.partition(GROUP_SEPARATOR)
        if separator:
            groups.setdefault(group, []).append(name)
    return {group: members for group, members in groups.items() if len(members) > 1}


def pooled(values: list[float], errors: list[float]) -> tuple[float, float]:
    """(mean over runs, its standard error) of one metric, one value and error per run. The
    error is the larger of two. One is the runs' mean error: `DensitySweep` evaluates every run
    on the same scenarios, so their evaluation errors are shared, not independent, and pooling
    seeds does not shrink them (NaN if a run has none). The other is the spread between the
    runs (sample std / sqrt(n)): seeds can differ by more than their evaluation noise."""
    n = len(values)
    mean = sum(values) / n
    shared = sum(errors) / n
    between = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n) if n > 1 else math.nan
    known = [e for e in (shared, between) if math.isfinite(e)]
    return mean, max(known) if known else math.nan


def _styles(names) -> dict[str, dict]:
    """Line style per run: its own colour, or its group's colour and a marker per member."""
    import matplotlib.pyplot as plt

    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    groups = run_groups(names)
    member_of = {name: (group, members.index(name)) for group, members in groups.items() for name in members}
    keys: list[str] = []  # one colour per group or ungrouped run, in order of appearance
    styles = {}
    for name in names:
        group, index = member_of.get(name, (name, 0))
        if group not in keys:
            keys.append(group)
        styles[name] = {"color": colours[keys.index(group) % len(colours)],
                        "marker": MEMBER_MARKERS[index % len(MEMBER_MARKERS)]}
    return styles


def plot_curves(runs: dict[str, list[dict]], path: str | Path, metrics: tuple[str, ...] = CURVE_METRICS):
    """One panel per metric (default `CURVE_METRICS`), x = agent-steps trained (millions; iterations when
    a record has no count), one line per run, shaded +- `pictura.eval.report.Z95` standard errors where the records
    have them (`density_mean_se`). Saves ``path``; returns the figure."""
    from pictura.eval.metrics import METRIC_LABELS
    from pictura.eval.report import Z95, display_scale, shade_interval

    fig, axes = _panels(len(metrics))
    styles = _styles(list(runs))
    by_steps = all(r.get("agent_steps") is not None for recs in runs.values() for r in recs)
    for ax, metric in zip(axes, metrics, strict=True):
        scale = display_scale(metric)
        for name, records in runs.items():
            x = [r["agent_steps"] / 1e6 if by_steps else r["iteration"] for r in records]
            y = [scale * density_mean(r, metric) for r in records]
            (line,) = ax.plot(x, y, label=name, **styles[name])
            shade_interval(ax, x, y, [Z95 * scale * density_mean_se(r, metric) for r in records], line.get_color())
            if metric != "at_fault_collision":
                continue
            # the share spent on halted wrecks (`pictura.eval.metrics.PARTNERS`), if recorded
            wrecks = [scale * density_mean(r, "at_fault_halted") for r in records]
            if any(math.isfinite(w) for w in wrecks):
                ax.plot(x, wrecks, linestyle="--", color=line.get_color(), label=f"{name}: on halted wrecks")
        ax.set_title(METRIC_LABELS[metric], fontsize=9)
        ax.set_xlabel("agent-steps trained (M)" if by_steps else "PPO iteration", fontsize=8)
        ax.grid(alpha=0.3)
    return _save(fig, axes, "in-domain evaluation during training (mean over densities)", path)


def _count(n: int) -> str:
    return f"{n / 1e6:.1f} M" if n >= 1e6 else f"{n / 1e3:.1f} K"


def curve_table(runs: dict[str, list[dict]], metrics: tuple[str, ...] = CURVE_METRICS) -> str:
    """Markdown: first and last evaluation of every run (columns: ``metrics``), density means (+- `pictura.eval.report.Z95`
    standard errors where the records have them), and the change between them: its interval
    (the two errors combined as independent) says whether the change is more than noise. Each
    group of runs (`run_groups`) adds its pooled first and last evaluations and change
    (`pooled` over its members' first and last records, and over their changes). A change's
    error is paired where both records hold per-scenario counts (`density_mean_change`)."""
    from pictura.eval.report import PERCENT_METRICS, Z95, display_scale

    def cell(value: float, se: float, metric: str, sign: str = "") -> str:
        digits = 3 if metric == "km_per_infraction" else 2  # minutes-old policies: ~0.02 km
        interval = f" +- {Z95 * se:.{digits}f}" if math.isfinite(se) else ""
        return f"{value:{sign}.{digits}f}{interval}" + (" %" if metric in PERCENT_METRICS else "")

    def row(name: str, iteration, steps, values: list[tuple[float, float]], sign: str = "") -> str:
        cells = [cell(display_scale(m) * v, display_scale(m) * se, m, sign) for m, (v, se) in zip(metrics, values, strict=True)]
        return f"| {name} | {iteration} | {steps} | " + " | ".join(cells) + " |"

    def evaluation(record: dict) -> list[tuple[float, float]]:
        return [(density_mean(record, m), density_mean_se(record, m)) for m in metrics]

    def change(records: list[dict]) -> list[tuple[float, float]]:
        nonlocal paired
        out = []
        for m in metrics:
            value, se, is_paired = density_mean_change(records[0], records[-1], m)
            paired |= is_paired
            out.append((value, se))
        return out

    def pool(per_run: list[list[tuple[float, float]]]) -> list[tuple[float, float]]:
        return [pooled([e[i][0] for e in per_run], [e[i][1] for e in per_run]) for i in range(len(metrics))]

    paired = False
    head = "| run | iteration | agent-steps | " + " | ".join(metrics) + " |"
    lines = [head, "|" + "---|" * (3 + len(metrics))]
    for name, records in runs.items():
        ends = (records[0], records[-1]) if len(records) > 1 else (records[0],)
        for r in ends:
            steps = "-" if r.get("agent_steps") is None else _count(r["agent_steps"])
            lines.append(row(name, r["iteration"], steps, evaluation(r)))
        if len(ends) == 2:
            lines.append(row(name, "change", "", change(records), "+"))
    for group, members in run_groups(runs).items():
        label = f"{group} ({len(members)} runs, pooled)"
        for end in (0, -1):
            steps = [runs[name][end].get("agent_steps") for name in members]
            mean_steps = "-" if None in steps else _count(sum(steps) / len(steps))
            lines.append(row(label, "first" if end == 0 else "last", mean_steps, pool([evaluation(runs[name][end]) for name in members])))
        # the members' own changes pooled: each already paired where its records allow
        lines.append(row(label, "change", "", pool([change(runs[name]) for name in members]), "+"))
    if paired:
        lines.append("\nChanges of runs whose records hold per-scenario counts are paired: the same scenarios, "
                     "first against last (`pictura.eval.metrics.paired_ratio_change`).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m pictura curves", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", metavar="[NAME=]RUN", help="run folder (or its density_sweep.jsonl); names GROUP/MEMBER (e.g. gains/seed0=...) "
                   "pool a group's runs in the table and share a colour")
    p.add_argument("--out", required=True, help="PNG to write")
    p.add_argument("--training", action="store_true", help="plot the training scalars of the runs' TensorBoard logs")
    p.add_argument("--scalars", help="with --training: comma-separated scalar tags, one panel each "
                   f"(default {','.join(TRAINING_SCALARS)})")
    from pictura.eval.report import SWEEP_ACTIONS

    p.add_argument("--actions", choices=SWEEP_ACTIONS, default="argmax",
                   help="which sweeps of a run folder: argmax (default) or sampled actions")
    from pictura.eval.metrics import METRIC_LABELS

    p.add_argument("--metrics", help="comma-separated sweep metrics, one panel and table column each "
                   f"(default {','.join(CURVE_METRICS)}; also {','.join(m for m in METRIC_LABELS if m not in CURVE_METRICS)})")
    args = p.parse_args(argv)
    metrics = CURVE_METRICS
    if args.metrics is not None:
        if args.training:
            p.error("--metrics is for the sweeps; with --training use --scalars")
        metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
        unknown = [m for m in metrics if m not in METRIC_LABELS]
        if unknown or not metrics:
            p.error(f"--metrics: unknown {unknown or 'none given'}; known: {', '.join(METRIC_LABELS)}")
    tags = TRAINING_SCALARS
    if args.scalars is not None:
        if not args.training:
            p.error("--scalars needs --training")
        tags = tuple(t.strip() for t in args.scalars.split(",") if t.strip())
        if not tags:
            p.error("--scalars: no tag given")
    read = (
        functools.partial(read_training_scalars, tags=tags)
        if args.training
        else functools.partial(read_sweeps, actions=args.actions)
    )
    runs: dict = {}
    for spec in args.runs:
        name, _, path = spec.rpartition("=")
        name = name or Path(path).name
        if name in runs:
            p.error(f"two runs named {name!r}: give them NAME=RUN labels")
        try:
            runs[name] = read(path)
        except (FileNotFoundError, ValueError) as err:
            p.error(str(err))
    if args.training and args.scalars is not None:
        # a tag asked for by name must be in some run (a typo is an error); an older run that
        # lacks it leaves its line out of that panel, with a warning naming the run
        for tag in tags:
            lacking = [name for name, scalars in runs.items() if tag not in scalars]
            if len(runs) == 1 and lacking:
                p.error(f"{args.runs[0].rpartition('=')[2]}: no scalar {tag} in its TensorBoard events")
            if len(lacking) == len(runs):
                p.error(f"no scalar {tag} in any run's TensorBoard events")
            for name in lacking:
                print(f"curves: warning: run {name!r} has no scalar {tag}; its panel leaves the run out",
                      file=sys.stderr)
    import matplotlib.pyplot as plt

    if args.training:
        plt.close(plot_training(runs, args.out, tags))
        for name, scalars in runs.items():
            reward = scalars.get("train/reward/total", [])
            if reward:
                print(f"{name}: reward per agent-step {reward[0][1]:.4f} -> {reward[-1][1]:.4f} "
                      f"over {_count(int(reward[-1][0]))} agent-steps ({len(reward)} iterations)")
    else:
        plt.close(plot_curves(runs, args.out, metrics))
        print(curve_table(runs, metrics))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
