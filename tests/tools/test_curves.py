"""``python -m pictura curves``: density means, table, PNG and bad input, on hand-written records."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from pictura.tools import curves


def _record(iteration, agent_steps, goals_by_density, collision=0.1):
    return {
        "iteration": iteration,
        "agent_steps": agent_steps,
        "results": {
            d: {"goals": g, "at_fault_collision": collision, "offroad": 0.2, "red_light": 0.0,
                "km_per_infraction": "inf" if d == "60" else 0.25}
            for d, g in goals_by_density.items()
        },
    }


def _write(folder, records):
    (folder / "eval").mkdir(parents=True)
    (folder / "eval" / "density_sweep.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_curves_plot_and_table_from_run_folders(tmp_path, capsys):
    run = tmp_path / "run"
    # written out of order: the reader sorts by iteration
    _write(run, [_record(3, 3_000_000, {"60": 4.0, "120": 2.0}), _record(0, 0, {"60": 1.0, "120": 0.0}, 0.5)])
    out = tmp_path / "curves.png"
    curves.main([f"alberti={run}", "--out", str(out)])
    assert out.stat().st_size > 0
    text = capsys.readouterr().out
    # means over densities, by hand: (1 + 0) / 2 and (4 + 2) / 2; collisions as percent;
    # km / infraction is infinite at density 60 (no infraction): the mean of the finite ones
    assert "| alberti | 0 | 0.0 K | 0.50 | 50.00 % | 20.00 % | 0.00 % | 0.250 |" in text
    assert "| alberti | 3 | 3.0 M | 3.00 | 10.00 % | 20.00 % | 0.00 % | 0.250 |" in text


def test_density_mean_skips_non_finite_values():
    record = {"iteration": 0, "results": {"60": {"goals": 2.0}, "120": {"goals": "inf"}, "150": {"goals": None}}}
    assert curves.density_mean(record, "goals") == 2.0
    assert math.isnan(curves.density_mean({"iteration": 0, "results": {}}, "goals"))


def test_bad_input_names_the_file(tmp_path):
    with pytest.raises(SystemExit):
        curves.main([str(tmp_path / "missing"), "--out", str(tmp_path / "x.png")])
    run = tmp_path / "bad"
    (run / "eval").mkdir(parents=True)
    (run / "eval" / "density_sweep.jsonl").write_text('{"iteration": 1}\n')
    with pytest.raises(ValueError, match=r"density_sweep.jsonl:1"):
        curves.read_sweeps(run)


def test_training_scalars_from_tensorboard_events(tmp_path, capsys):
    """--training reads what a TensorBoard writer logged, keyed by train/agent_steps."""
    from torch.utils.tensorboard import SummaryWriter

    from pictura.tools.curves import main, read_training_scalars

    run = tmp_path / "fp32"
    writer = SummaryWriter(str(run))
    for it, (steps, reward) in enumerate([(1000, -0.05), (2000, -0.04), (3000, -0.02)]):
        writer.add_scalar("train/agent_steps", steps, it)
        writer.add_scalar("train/reward/total", reward, it)
        writer.add_scalar("train/loss/entropy", 2.4 - 0.1 * it, it)
    writer.close()
    scalars = read_training_scalars(run)
    assert [x for x, _ in scalars["train/reward/total"]] == [1000, 2000, 3000]
    assert [round(y, 6) for _, y in scalars["train/reward/total"]] == [-0.05, -0.04, -0.02]
    main(["--training", f"fp32={run}", "--out", str(tmp_path / "t.png")])
    assert "-0.0500 -> -0.0200 over 3.0 K agent-steps (3 iterations)" in capsys.readouterr().out
    assert (tmp_path / "t.png").stat().st_size > 0
    with pytest.raises(FileNotFoundError, match="no TensorBoard event files"):
        read_training_scalars(tmp_path / "missing")
    # --scalars: any logged tags, one panel each; a tag the run lacks is named
    main(["--training", "--scalars", "train/loss/entropy", f"fp32={run}", "--out", str(tmp_path / "e.png")])
    assert (tmp_path / "e.png").stat().st_size > 0
    assert [round(y, 6) for _, y in read_training_scalars(run, ("train/loss/entropy",))["train/loss/entropy"]] == [
        2.4, 2.3, 2.2
    ]
    with pytest.raises(SystemExit):
        main(["--training", "--scalars", "train/grad_norm", f"fp32={run}", "--out", str(tmp_path / "g.png")])
    assert "no scalar train/grad_norm" in capsys.readouterr().err
    # an older run without the tag: warned about by name, left out of that panel only
    newer = tmp_path / "newer"
    writer = SummaryWriter(str(newer))
    for it in range(2):
        writer.add_scalar("train/agent_steps", 1000 * (it + 1), it)
        writer.add_scalar("train/grad_norm", 3.0 - it, it)
        writer.add_scalar("train/loss/entropy", 2.0, it)
    writer.close()
    scalars = {name: read_training_scalars(path, ("train/grad_norm", "train/loss/entropy"))
               for name, path in (("old", run), ("new", newer))}
    main(["--training", "--scalars", "train/grad_norm,train/loss/entropy", f"old={run}", f"new={newer}",
          "--out", str(tmp_path / "m.png")])
    assert "run 'old' has no scalar train/grad_norm" in capsys.readouterr().err
    fig = curves.plot_training(scalars, tmp_path / "m2.png", ("train/grad_norm", "train/loss/entropy"))
    points = [{line.get_label(): list(line.get_ydata()) for line in ax.get_lines()} for ax in fig.axes]
    assert points[0] == {"old": [], "new": pytest.approx([3.0, 2.0])}  # same colours in every panel
    assert len(points[1]["old"]) == 3 and len(points[1]["new"]) == 2
    with pytest.raises(SystemExit):
        main(["--training", "--scalars", "train/grad_nrom", f"old={run}", f"new={newer}", "--out", str(tmp_path / "x.png")])
    assert "no scalar train/grad_nrom in any run's TensorBoard events" in capsys.readouterr().err


def test_at_fault_panel_shows_the_share_on_halted_wrecks(tmp_path):
    records = [_record(0, 0, {"60": 0.0, "120": 0.0}, 0.2), _record(4, 8_000_000, {"60": 1.0, "120": 1.0}, 0.3)]
    for r, wrecks in zip(records, ((0.05, 0.15), (0.2, 0.1)), strict=True):
        for d, w in zip(("60", "120"), wrecks, strict=True):
            r["results"][d]["at_fault_halted"] = w
    fig = curves.plot_curves({"alberti": records}, tmp_path / "c.png")
    ax = fig.axes[curves.CURVE_METRICS.index("at_fault_collision")]
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    assert lines["alberti"] == pytest.approx([20.0, 30.0])
    assert lines["alberti: on halted wrecks"] == pytest.approx([10.0, 15.0])  # density means, percent
    # records without the breakdown (older runs) draw the total alone
    bare = curves.plot_curves({"old": [_record(0, 0, {"60": 0.0})]}, tmp_path / "d.png")
    assert [line.get_label() for line in bare.axes[1].get_lines()] == ["old"]
    # one legend below the panels: the runs, and a key for the dashed lines where there are any
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["alberti", "dashed: the part on halted wrecks"]
    assert [t.get_text() for t in bare.legends[0].get_texts()] == ["old"]
    assert not any(ax.get_legend() for ax in fig.axes)


def test_standard_errors_shade_the_curve_and_enter_the_table(tmp_path):
    """With ``<metric>_se`` in every density, the curve gets a +-1.96 SE band (the densities'
    errors combined: sqrt(sum se^2) / D) and the table's cell its half-width."""
    records = [_record(0, 0, {"60": 0.0, "120": 0.2}), _record(4, 8_000_000, {"60": 1.0, "120": 1.4})]
    for r in records:
        r["results"]["60"]["goals_se"] = 0.3
        r["results"]["120"]["goals_se"] = 0.4
    fig = curves.plot_curves({"alberti": records}, tmp_path / "c.png")
    band = fig.axes[curves.CURVE_METRICS.index("goals")].collections[0]
    (path,) = band.get_paths()
    ys = sorted({round(float(y), 6) for y in path.vertices[:, 1]})
    half = 1.96 * math.sqrt(0.3**2 + 0.4**2) / 2  # 0.49
    assert min(ys) == pytest.approx(0.1 - half) and max(ys) == pytest.approx(1.2 + half)
    table = curves.curve_table({"alberti": records})
    assert f"1.20 +- {half:.2f}" in table
    # the change from the first to the last sweep, its interval the two combined
    change_row = next(line for line in table.splitlines() if "| change |" in line)
    assert f"+1.10 +- {half * math.sqrt(2):.2f}" in change_row and "+0.00 %" in change_row
    # a metric without errors (here every other one) has no band and a bare cell
    assert not fig.axes[curves.CURVE_METRICS.index("offroad")].collections
    assert "20.00 %" in table
    # one density without its error: no band for that record
    del records[1]["results"]["120"]["goals_se"]
    assert math.isnan(curves.density_mean_se(records[1], "goals"))


def test_at_fault_collisions_per_km_panel_and_older_records(tmp_path):
    """The last panel: a record's own ``at_fault_per_km``, or for a record from before it, the
    episodes with an at-fault collision over the km driven, from its counts."""
    new = _record(0, 0, {"60": 1.0, "120": 1.0}, 0.2)
    new["results"]["60"]["at_fault_per_km"] = 8.0
    new["results"]["120"]["at_fault_per_km"] = 4.0
    old = _record(4, 8_000_000, {"60": 1.0, "120": 1.0}, 0.2)
    for d, (episodes, km) in zip(("60", "120"), ((100, 2.0), (300, 12.0)), strict=True):
        old["results"][d].update(episodes=episodes, distance_km=km)
    assert curves.density_mean(new, "at_fault_per_km") == pytest.approx(6.0)
    assert curves.density_mean(old, "at_fault_per_km") == pytest.approx((0.2 * 100 / 2.0 + 0.2 * 300 / 12.0) / 2)
    fig = curves.plot_curves({"run": [new, old]}, tmp_path / "c.png")
    ax = fig.axes[curves.CURVE_METRICS.index("at_fault_per_km")]
    assert ax.get_title() == "At-fault coll. / km"
    assert list(ax.get_lines()[0].get_ydata()) == pytest.approx([6.0, 7.5])
    # no distance (or no counts): no value rather than a division by zero
    old["results"]["60"]["distance_km"] = 0.0
    del old["results"]["120"]["episodes"]
    assert math.isnan(curves.density_mean(old, "at_fault_per_km"))


def test_pooled_error_is_the_larger_of_shared_noise_and_seed_spread():
    # seeds 2 apart with small errors: the spread between them, sqrt(((-2)^2 + 2^2) / 1 / 2) = 2
    assert curves.pooled([10.0, 14.0], [1.0, 1.0]) == pytest.approx((12.0, 2.0))
    # seeds alike, each evaluation +-3 on the same scenarios: pooling does not shrink it
    assert curves.pooled([12.0, 12.2], [3.0, 3.0]) == pytest.approx((12.1, 3.0))
    mean, se = curves.pooled([1.0, 3.0], [math.nan, 1.0])  # one run without errors: the spread
    assert (mean, se) == pytest.approx((2.0, 1.0))


def test_runs_named_group_slash_member_share_a_colour_and_a_pooled_row(tmp_path, capsys):
    """``arm/seed N`` runs: one colour and a marker each on the plot, and the table's pooled
    first, last and change rows (by hand from the records: `pooled` over the members)."""
    assert curves.run_groups(["a/1", "b", "a/2", "c/1"]) == {"a": ["a/1", "a/2"]}  # c/1 is alone
    records = {}
    for name, last_goals, se in (("arm/seed 0", 1.0, 0.1), ("arm/seed 1", 2.0, 0.3)):
        first, last = _record(0, 0, {"60": 0.0, "120": 0.0}), _record(5, 10_000_000, {"60": last_goals, "120": last_goals})
        for r in (first, last):
            for summary in r["results"].values():
                summary["goals_se"] = se * math.sqrt(2)  # density mean: sqrt(2 se^2 * 2) / 2 = se
        run = tmp_path / name.replace("/", "_").replace(" ", "_")
        _write(run, [first, last])
        records[name] = run
    out = tmp_path / "c.png"
    curves.main([f"{name}={run}" for name, run in records.items()] + [f"solo={records['arm/seed 0']}", "--out", str(out)])
    table = capsys.readouterr().out
    fig = curves.plot_curves({name: curves.read_sweeps(run) for name, run in records.items()} | {"solo": curves.read_sweeps(records["arm/seed 0"])}, out)
    lines = fig.axes[0].get_lines()
    assert lines[0].get_color() == lines[1].get_color() != lines[2].get_color()
    assert lines[0].get_marker() != lines[1].get_marker()
    # goals: last 1.0 +- 0.1 and 2.0 +- 0.3 -> mean 1.5, error max((0.1 + 0.3) / 2, spread 0.5) = 0.5;
    # first 0 +- 0.1 / 0.3 -> 0 +- 0.2; the change pools the runs' own changes, 1.0 +- hypot(0.1, 0.1)
    # and 2.0 +- hypot(0.3, 0.3): 1.5 +- max(their mean error 0.28, spread 0.5)
    rows = {line.split(" | ")[1]: line for line in table.splitlines() if line.startswith("| arm (2 runs, pooled)")}
    assert set(rows) == {"first", "last", "change"}
    assert "| 10.0 M | 1.50 +- 0.98 |" in rows["last"]  # 1.96 x 0.5
    assert "| 0.0 K | 0.00 +- 0.39 |" in rows["first"]  # 1.96 x 0.2
    assert "+1.50 +- 0.98" in rows["change"]
    assert "solo (" not in table


def test_change_is_paired_when_both_records_hold_the_same_scenarios():
    """With per-scenario counts in both records, the change's error is paired per density
    (`paired_ratio_change`, tested on its own) and combined over densities as independent;
    otherwise (or with a different scenario count) the records' errors combined."""
    from pictura.eval.metrics import COUNTERS, paired_ratio_change, scenario_moments, summarize

    rng = np.random.default_rng(3)

    def record(iteration, sums_by_density):
        results = {}
        for d, sums in sums_by_density.items():
            t = torch.tensor(sums)
            results[d] = summarize(torch.cat([t.sum(0), scenario_moments(t)]))
        return {"iteration": iteration, "agent_steps": iteration, "results": results,
                "scenario_counter_columns": list(COUNTERS),
                "scenario_counters": {d: sums.tolist() for d, sums in sums_by_density.items()}}

    def sums(k):
        out = np.zeros((k, len(COUNTERS)))
        n = rng.integers(5, 15, k).astype(float)
        out[:, COUNTERS.index("episodes")] = n
        out[:, COUNTERS.index("offroad")] = rng.binomial(n.astype(int), rng.uniform(0.1, 0.9, k))
        return out

    first = {"60": sums(8), "120": sums(8)}
    last = {d: s.copy() for d, s in first.items()}
    for s in last.values():
        s[:, COUNTERS.index("offroad")] = np.maximum(s[:, COUNTERS.index("offroad")] - 1, 0)
    a, b = record(0, first), record(5, last)
    change, se, paired = curves.density_mean_change(a, b, "offroad")
    per_density = [paired_ratio_change(first[d], last[d], "offroad") for d in ("60", "120")]
    assert paired and change == pytest.approx(sum(c for c, _ in per_density) / 2)
    assert se == pytest.approx(math.hypot(*(e for _, e in per_density)) / 2)
    # without the counts in one record, or with another scenario count: the records' own errors
    moved = {d: s.copy() for d, s in last.items()}
    moved["60"][0, COUNTERS.index("episodes")] += 1  # one scenario spawned another vehicle: not the same
    for other in ({k: v for k, v in b.items() if k != "scenario_counters"},
                  record(5, {"60": sums(7), "120": sums(8)}), record(5, moved)):
        change, se, paired = curves.density_mean_change(a, other, "offroad")
        assert not paired
        assert se == pytest.approx(math.hypot(curves.density_mean_se(a, "offroad"), curves.density_mean_se(other, "offroad")))


def test_metrics_option_picks_the_panels_and_columns(tmp_path, capsys):
    """``--metrics`` names the sweep metrics to show (here the at-fault rate split by what was
    hit); an unknown one, or one with ``--training``, is an error naming it."""
    run = tmp_path / "run"
    first, last = _record(0, 0, {"60": 1.0, "120": 0.0}), _record(3, 3_000_000, {"60": 4.0, "120": 2.0})
    for record, shares in ((first, (0.06, 0.02)), (last, (0.03, 0.01))):
        for summary in record["results"].values():
            summary["at_fault_driving"], summary["at_fault_parked"] = shares
    _write(run, [first, last])
    curves.main(["v=" + str(run), "--metrics", "at_fault_driving, at_fault_parked", "--out", str(tmp_path / "p.png")])
    text = capsys.readouterr().out
    assert "| run | iteration | agent-steps | at_fault_driving | at_fault_parked |" in text
    assert "| v | 0 | 0.0 K | 6.00 % | 2.00 % |" in text and "| v | change |  | -3.00 % | -1.00 % |" in text
    for bad, match in ((["--metrics", "at_fault_wall"], "at_fault_wall"), (["--metrics", " , "], "none given"),
                       (["--metrics", "goals", "--training"], "--scalars")):
        with pytest.raises(SystemExit):
            curves.main([str(run), "--out", str(tmp_path / "x.png"), *bad])
        assert match in capsys.readouterr().err
