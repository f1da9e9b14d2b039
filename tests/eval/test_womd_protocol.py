"""Zero-shot WOMD scene selection on the real WOMD files (the rollout needs log replay)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pictura.eval.protocols import womd_scenes, womd_sources
from pictura.maps import load
from pictura.maps.womd.selection import womd_controllable, womd_selection
from tests.data import data_path


def _womd_dir() -> Path:
    return data_path("womd", directory=True)


def _json_files() -> list[Path]:
    return sorted((_womd_dir() / "gpudrive_json").glob("*.json"))


def _reference_controlled(path: Path) -> set[str]:
    """Controlled track ids straight from the GPUDrive JSON, by a plain loop: vehicles valid at
    t=0 whose last valid position is > 2 m (xy) from their first."""
    data = json.loads(path.read_text())
    out = set()
    for obj in data["objects"]:
        if obj["type"] != "vehicle" or not obj["valid"][0]:
            continue
        last = max(i for i, v in enumerate(obj["valid"]) if v)
        p0, p1 = obj["position"][0], obj["position"][last]
        if math.hypot(p1["x"] - p0["x"], p1["y"] - p0["y"]) > 2.0:
            out.add(str(obj["id"]))
    return out


def test_controlled_vehicles_match_the_raw_json():
    files = _json_files()
    assert files, "no GPUDrive JSON samples"
    for path in files:
        scenario = load(str(path))
        ids = {str(i) for i in scenario.track_id[womd_controllable(scenario)]}
        assert ids == _reference_controlled(path), path.name


def test_thinning_keeps_the_fraction_is_seeded_and_nested_in_present():
    scenario = load(str(_json_files()[2]))
    users = int((np.isin(scenario.track_type, (0, 1, 2)) & scenario.track_valid.any(1)).sum())
    for density in (1.0, 0.75, 0.5):
        a = womd_selection(scenario, density, seed=3)
        b = womd_selection(scenario, density, seed=3)
        assert a.present.sum() == round(density * users)
        assert np.array_equal(a.present, b.present) and np.array_equal(a.controlled, b.controlled)
        assert not (a.controlled & ~a.present).any()
    full = womd_selection(scenario, 1.0)
    assert np.array_equal(full.controlled, womd_controllable(scenario))
    assert not np.array_equal(womd_selection(scenario, 0.5, seed=0).present, womd_selection(scenario, 0.5, seed=1).present)


def test_tfrecord_scene_controlled_set():
    path = _womd_dir() / "tfrecord" / "motion_data_one_scenario.tfrecord"
    scenario = load(str(path))
    start = scenario.track_position[:, 0, :2]
    expected = []
    for i in range(len(scenario.track_id)):  # loop reference over the loaded tracks
        valid = np.flatnonzero(scenario.track_valid[i])
        if scenario.track_type[i] == 0 and scenario.track_valid[i, 0] and len(valid):
            end = scenario.track_position[i, valid[-1], :2]
            expected.append(float(np.hypot(*(end - start[i]))) > 2.0)
        else:
            expected.append(False)
    assert womd_controllable(scenario).tolist() == expected
    assert sum(expected) > 0


def test_scenes_without_controlled_vehicles_are_skipped():
    files = _json_files()
    # at 100% every sample scene has a controlled vehicle
    assert len(list(womd_scenes(files, 1.0))) == len(files)
    # a density that keeps nobody leaves no controlled vehicle: every scene is skipped
    tiny = 0.01
    kept = list(womd_scenes(files, tiny))
    for _scenario, selection in kept:
        assert selection.controlled.any()
    assert len(kept) < len(files)


def test_bad_density_and_empty_folder_are_clear(tmp_path):
    scenario = load(str(_json_files()[0]))
    with pytest.raises(ValueError, match="density"):
        womd_selection(scenario, 0.0)
    with pytest.raises(FileNotFoundError, match="holds no WOMD"):
        womd_sources(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such file, folder or glob"):
        womd_sources(tmp_path / "nope")
