"""`benchmarks/womd_eval_throughput.py` at a tiny size on the CPU: it runs every policy, prints
one JSON line per phase and policy as each finishes, and its projection is the arithmetic its
docstring states (recomputed here from the row's own timings)."""

from __future__ import annotations

import json

import pytest

from tests.data import data_path


def test_tiny_run_prints_a_line_per_phase_and_policy(tmp_path, capsys):
    from benchmarks.womd_eval_throughput import PROTOCOL_STEPS, WOMD_VALIDATION_SCENES, main

    data_path("womd", "tfrecord", directory=True)  # skips (fails under CI) without the data root
    rows = main(["--device", "cpu", "--scenes", "3", "--batch", "2", "--steps", "2", "--workers", "0",
                 "--densities", "1", "0.5", "--folder", str(tmp_path / "shard")])
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r.get("phase", r.get("policy")) for r in out] == ["shard", "read", "vectorized", "alberti", "random", "summary"]
    assert len(list((tmp_path / "shard").glob("validation.tfrecord-00000-of-00001"))) == 1
    read = out[1]
    assert read["scenes"] == 3
    for row in rows:
        assert row["played"] == {"1": 3, "0.5": 3}  # every synthetic scene has a controlled vehicle
        assert row["slots_per_env"] < 2 * 83  # packed: a world per scene, its kept road users only
        share = row["per_scene_s_at_600"]
        rollout = row["rollout_s"] * PROTOCOL_STEPS / row["steps"] / row["scenes"]
        slack = 0.005 * PROTOCOL_STEPS / row["steps"] / row["scenes"]  # the row's seconds are rounded to 0.01
        assert share["rollout"] == pytest.approx(rollout, abs=slack + 1e-3)
        compute = (row["build_s"] + row["other_s"]) / row["scenes"] + rollout
        want = WOMD_VALIDATION_SCENES * max(compute, read["per_scene_s"]) / 3600
        assert row["projected_h"] == pytest.approx(want, abs=WOMD_VALIDATION_SCENES * (slack + 0.01) / 3600 + 0.01)
        assert row["projected_serial_h"] >= row["projected_h"]
        assert row["bound"] in ("reading", "env build", "rollout", "rest")
    assert out[-1]["projected_h"] == {r["policy"]: r["projected_h"] for r in rows}


def test_policies_option_runs_a_subset(tmp_path, capsys):
    from benchmarks.womd_eval_throughput import main

    data_path("womd", "tfrecord", directory=True)
    rows = main(["--device", "cpu", "--scenes", "1", "--batch", "1", "--steps", "1", "--workers", "0",
                 "--densities", "1", "--policies", "random", "--folder", str(tmp_path)])
    assert [r["policy"] for r in rows] == ["random"]
