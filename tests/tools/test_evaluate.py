"""``python -m pictura evaluate`` end to end on a tiny procedural map on the CPU, and its errors."""

from __future__ import annotations

import json

import pytest
import torch
from torchrl.data import Bounded, Composite, Unbounded

from pictura.eval.metrics import COUNTERS, METRICS, paired_ratio_change, same_scenarios
from pictura.modules import AlbertiPolicy
from pictura.sim import CONDITIONING_WIDTH, EGO_WIDTH
from pictura.tools.evaluate import main

TINY = ["--maps", "procedural:seed=0", "--densities", "6", "10", "--scenarios", "3", "--worlds-per-batch", "2",
        "--steps", "10", "--resolution", "16x9", "--no-progress"]
POLICY_ARGS = {"group_width": 8, "trunk_width": 16, "trunk_layers": 1, "conv_channels": [4, 4, 4, 8, 8],
               "conv_strides": [2, 1, 1, 1, 1], "queries_per_camera": 2, "attention_heads": 2, "camera_width": 8}


def _spec(ego_width: int, width: int = 16, height: int = 9) -> Composite:
    S = 2
    return Composite(
        observation=Composite(
            pixels=Bounded(0, 255, shape=(S, 4, height, width, 3), dtype=torch.uint8),
            ego=Unbounded(shape=(S, ego_width)),
            conditioning=Unbounded(shape=(S, CONDITIONING_WIDTH)),
            goals=Unbounded(shape=(S, 3, 2)),
            shape=(S,),
        ),
        shape=(S,),
    )


def _checkpoint(path, ego_width: int, **env_args):
    """A checkpoint as LightningCLI writes it: class configs in hyper_parameters (``env_args``:
    more env init_args, e.g. the training env's slot blocks)."""
    torch.manual_seed(0)
    policy = AlbertiPolicy(_spec(ego_width), 12, **POLICY_ARGS)
    torch.save(
        {
            "state_dict": {f"policy.{k}": v for k, v in policy.state_dict().items()} | {"iteration": torch.tensor(3)},
            "hyper_parameters": {
                "env": {
                    "class_path": "pictura.envs.DrivingEnv",
                    "init_args": {
                        "maps": ["procedural:seed=0"], "num_worlds": 4, "slots_per_world": 8,
                        "agents_per_world": [1, 8],
                        "rig": {"class_path": "pictura.render.CameraRig", "init_args": {"width": 16, "height": 9}},
                        **env_args,
                    },
                },
                "policy": {"class_path": "pictura.modules.AlbertiPolicy", "init_args": POLICY_ARGS},
                "seed": 0,
            },
        },
        path,
    )
    return path


def test_random_policy_end_to_end(tmp_path, capsys):
    out = tmp_path / "eval.json"
    png = tmp_path / "eval.png"
    main(["--policy", "random", *TINY, "--json", str(out), "--png", str(png)])
    printed = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert set(data["results"]) == {"random"}
    assert data["meta"]["protocol"] == "in-domain" and data["meta"]["densities"] == [6, 10]
    for per_density in data["results"].values():
        assert set(per_density) == {"6", "10"}
        for summary in per_density.values():
            assert set(METRICS) <= set(summary)
            assert 0 < summary["episodes"] <= 3 * 10
            for rate in ("at_fault_collision", "offroad", "red_light"):
                assert 0.0 <= summary[rate] <= 1.0
            if summary["infraction_episodes"]:
                assert summary["km_per_infraction"] == pytest.approx(
                    summary["distance_km"] / summary["infraction_episodes"]
                )
    # the table: a header, a rule and one row per density, a column per (metric, policy)
    rows = [line for line in printed.splitlines() if line.startswith("|")]
    assert len(rows) == 4 and rows[2].startswith("| 6 |") and rows[3].startswith("| 10 |")
    assert rows[0].count("|") == 1 + 1 + len(METRICS)
    # three scenarios per density: standard errors, and the table's 95 % half-widths
    six = data["results"]["random"]["6"]
    assert six["scenarios"] == 3 and six["at_fault_collision_se"] >= 0.0 and six["goals_se"] >= 0.0
    cells = [c.strip() for c in rows[2].split("|")[1:-1]]
    assert cells[1 + METRICS.index("goals")] == f"{six['goals']:.2f} +- {1.96 * six['goals_se']:.2f}"
    assert png.stat().st_size > 0


def test_checkpoint_is_evaluated_beside_a_baseline(tmp_path, capsys):
    ckpt = _checkpoint(tmp_path / "alberti.ckpt", EGO_WIDTH)
    out = tmp_path / "cmp.json"
    main(["--ckpt", f"alberti={ckpt}", "--policy", "constant:7", *TINY[:2], "--densities", "6", "--scenarios", "2",
          "--steps", "8", "--resolution", "16x9", "--no-progress", "--json", str(out)])
    data = json.loads(out.read_text())
    results = data["results"]
    assert set(results) == {"alberti", "constant:7"}
    printed = capsys.readouterr().out
    rows = [line for line in printed.splitlines() if line.startswith("|")]
    assert "[alberti]" in rows[0] and "[constant:7]" in rows[0]
    assert rows[0].count("|") == 1 + 1 + 2 * len(METRICS)
    # every scenario's counts in the JSON, adding up to the summary; the same seeds built the
    # same scenarios for both, so the difference table pairs them (paired_ratio_change)
    assert data["meta"]["scenario_counter_columns"] == list(COUNTERS)
    base, other = (data["scenario_counters"][p]["6"] for p in ("constant:7", "alberti"))  # the first policy is the base
    assert len(base) == 2 and sum(r[0] for r in other) == results["alberti"]["6"]["episodes"]
    assert same_scenarios(base, other)
    diff = printed.split("Differences on the same scenarios")[1]
    row = next(line for line in diff.splitlines() if line.startswith("| alberti | 6 |"))
    change, se = paired_ratio_change(base, other, "offroad")
    assert f"{100 * change:+.1f} +- {1.96 * 100 * se:.1f}" in row


def test_checkpoint_with_another_observation_layout_is_refused(tmp_path):
    ckpt = _checkpoint(tmp_path / "wide_ego.ckpt", EGO_WIDTH + 2)
    with pytest.raises(SystemExit, match="observation layout differs"):
        main(["--ckpt", str(ckpt), *TINY, "--json", str(tmp_path / "x.json")])


def test_unknown_protocol_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--policy", "random", "--protocol", "nuplan", "--json", str(tmp_path / "x.json")])
    assert "invalid choice: 'nuplan'" in capsys.readouterr().err


def test_empty_data_folder_is_a_clear_error(tmp_path):
    empty = tmp_path / "womd"
    empty.mkdir()
    with pytest.raises(SystemExit, match="holds no WOMD"):
        main(["--policy", "random", "--protocol", "womd", "--data", str(empty), "--json", str(tmp_path / "x.json")])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--policy", "constant:12"], "0..11"),
        (["--policy", "greedy"], "random"),
        (["--ckpt", "/nonexistent/model.ckpt"], "no such file"),
        ([], "at least one"),
        (["--policy", "random", "--scenarios", "0"], "--scenarios"),
    ],
)
def test_bad_policy_arguments(tmp_path, args, message):
    with pytest.raises(SystemExit, match=message):
        main([*args, "--json", str(tmp_path / "x.json")])


def test_default_worlds_per_batch_runs_a_density_at_once_on_a_gpu():
    from pictura.tools.evaluate import GPU_SLOTS_PER_BATCH, default_worlds_per_batch

    assert default_worlds_per_batch("cpu", 200, 150) == 8
    assert default_worlds_per_batch("cpu", 3, 150) == 3
    assert default_worlds_per_batch("cuda", 200, 150) == 200  # 30,000 slots
    assert default_worlds_per_batch("cuda:1", 1000, 150) == GPU_SLOTS_PER_BATCH // 150
    assert default_worlds_per_batch("cuda", 5, 1e6) == 1
