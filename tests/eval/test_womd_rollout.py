"""Zero-shot WOMD rollouts (`run_womd`, ``--protocol womd``) on the real WOMD samples with log
replay; the reference counts come from a plain loop over the raw GPUDrive JSON."""

from __future__ import annotations

import json

import pytest
import torch

from pictura.envs.observations import VectorizedObservationConfig
from pictura.eval.metrics import ALL_COUNTERS, C_DISTANCE, C_EPISODES, COUNTERS
from pictura.eval.policies import constant_policy
from pictura.eval.protocols import replay_env_builder, run_womd
from tests.eval.test_womd_protocol import _json_files, _reference_controlled

OBS = VectorizedObservationConfig(max_lanes=16, max_boundaries=16, subdivide_long_segments=5.0)


def test_every_controlled_vehicle_is_one_episode():
    files = _json_files()
    expected = sum(len(_reference_controlled(p)) for p in files)
    result = run_womd(
        replay_env_builder(observation=OBS), lambda env: constant_policy(7), files, density=1.0, steps=12,
        scenes_per_batch=2,
    )
    assert result.scenes + result.skipped == len(files)
    assert result.scenes == sum(1 for p in files if _reference_controlled(p))
    assert result.counters.shape == (len(ALL_COUNTERS),)
    assert int(result.counters[len(COUNTERS)]) == result.scenes  # every scene a scenario of the standard errors
    assert int(result.counters[C_EPISODES]) == expected
    assert float(result.counters[C_DISTANCE]) > 0.0
    # every scene's own sums, in scene order: one row per scene, one episode per controlled vehicle
    assert result.scenario_sums.shape == (result.scenes, len(COUNTERS))
    assert result.scenario_sums[:, C_EPISODES].tolist() == [len(_reference_controlled(p)) for p in files if _reference_controlled(p)]
    assert torch.allclose(result.scenario_sums.sum(0), result.counters[: len(COUNTERS)])


def test_max_scenes_and_no_scene_left_are_clear():
    files = _json_files()
    result = run_womd(
        replay_env_builder(observation=OBS), lambda env: constant_policy(7), files, density=1.0, steps=2,
        max_scenes=1,
    )
    assert result.scenes == 1
    with pytest.raises(ValueError, match="steps"):
        run_womd(replay_env_builder(observation=OBS), lambda env: constant_policy(7), files, 1.0, steps=0)


def test_command_runs_the_womd_protocol(tmp_path):
    from pictura.tools.evaluate import main
    from tests.eval.test_womd_protocol import _womd_dir

    out = tmp_path / "womd.json"
    main(["--policy", "constant:7", "--protocol", "womd", "--data", str(_womd_dir() / "gpudrive_json"),
          "--densities", "1", "0.5", "--scenarios", "2", "--steps", "3", "--resolution", "16x9", "--json", str(out), "--no-progress"])
    data = json.loads(out.read_text())
    assert set(data["results"]["constant:7"]) == {"1.0", "0.5"}
    assert len(data["scenario_counters"]["constant:7"]["1.0"]) == 2
