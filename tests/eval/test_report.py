"""`pictura.eval.report`'s paired difference table, on hand-made per-scenario counts."""

from __future__ import annotations

import pytest

from pictura.eval.metrics import COUNTERS, METRICS
from pictura.eval.report import paired_difference_table


def _rows(episodes, offroad):
    rows = []
    for n, o in zip(episodes, offroad, strict=True):
        row = [0.0] * len(COUNTERS)
        row[COUNTERS.index("episodes")] = n
        row[COUNTERS.index("offroad")] = o
        rows.append(row)
    return rows


def test_each_policy_minus_the_first_on_the_same_scenarios():
    per_scenario = {
        "a": {"60": _rows([10, 10], [5, 3]), "120": _rows([20, 10], [10, 5])},
        "b": {"60": _rows([10, 10], [4, 2]), "120": _rows([20, 11], [10, 5])},  # 120: another scenario
    }
    table = paired_difference_table(per_scenario)
    lines = table.splitlines()
    assert lines[0].startswith("| Policy - a | Density |") and len(lines) == 4
    cells = [c.strip() for c in lines[2].split("|")[1:-1]]
    # off-road 8/20 -> 6/20: -10.0 points; each scenario drops by exactly 1 of 10, so the paired
    # influences differ by the same amount in both and the error is 0
    assert cells[:2] == ["b", "60"] and cells[2 + METRICS.index("offroad")] == "-10.0 +- 0.0"
    assert cells[2 + METRICS.index("km_per_infraction")] == "n/a"  # no distance, no infraction
    assert lines[3].split("|")[3].strip() == "-"  # density 120's scenarios differ: not paired
    with pytest.raises(ValueError, match="baseline"):
        paired_difference_table(per_scenario, baseline="c")
