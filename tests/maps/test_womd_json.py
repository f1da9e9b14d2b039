"""The GPUDrive-style JSON reader on the four real files, and on broken copies of one."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from pictura.maps import load
from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE, MAX_LANE_CHUNK_M, Scenario
from pictura.maps.womd import read_gpudrive_json
from tests.data import data_path

JSON_NAMES = (
    "tfrecord-00000-of-00150_2a173b334be3d32c.json",
    "tfrecord-00000-of-01000_325.json",
    "tfrecord-00000-of-01000_4.json",
    "tfrecord-00002-of-01000_407.json",
)


def _womd_file(*parts: str) -> Path:
    """A file under <data root>/womd (`tests.data.data_path`)."""
    return data_path("womd", *parts)


def _xyz(points) -> np.ndarray:
    return np.array([[p["x"], p["y"], p["z"]] for p in points], np.float64)


@pytest.mark.parametrize("name", JSON_NAMES)
def test_json_scene_matches_its_own_arrays(name):
    path = _womd_file("gpudrive_json", name)
    doc = json.loads(path.read_text())
    scenario = load(str(path))
    assert isinstance(scenario, Scenario)
    assert scenario.scenario_id == doc["scenario_id"]
    objects = doc["objects"]
    n, steps = len(objects), len(objects[0]["position"])
    assert steps == 91
    assert scenario.track_position.shape == (n, steps, 3)
    agent = {"vehicle": AGENT_VEHICLE, "pedestrian": AGENT_PEDESTRIAN, "cyclist": AGENT_CYCLIST}
    for i, obj in enumerate(objects):
        assert scenario.track_id[i] == obj["id"]
        assert scenario.track_type[i] == agent.get(obj["type"], -1)
        np.testing.assert_array_equal(
            scenario.track_size[i], np.float32([obj["length"], obj["width"], obj["height"]])
        )
        for t in range(steps):
            p, v = obj["position"][t], obj["velocity"][t]
            valid = bool(obj["valid"][t]) and p["x"] != -10000
            assert scenario.track_valid[i, t] == valid
            if valid:
                np.testing.assert_array_equal(
                    scenario.track_position[i, t], np.float32([p["x"], p["y"], p["z"]])
                )
                np.testing.assert_array_equal(scenario.track_velocity[i, t], np.float32([v["x"], v["y"]]))
                assert scenario.track_heading[i, t] == np.float32(obj["heading"][t])
    # goals = last valid logged position = the file's own goalPosition
    goal = np.array([[o["goalPosition"]["x"], o["goalPosition"]["y"]] for o in objects])
    np.testing.assert_allclose(scenario.goal_position[:, :2], goal, atol=1e-3)

    meta = doc["metadata"]
    assert scenario.sdc_index == meta["sdc_track_index"]
    assert scenario.tracks_to_predict.tolist() == [r["track_index"] for r in meta["tracks_to_predict"]]

    roads = doc["roads"]
    rm = scenario.road_map
    rm.validate()
    count = {
        k: sum(r["type"] == k for r in roads)
        for k in ("lane", "road_edge", "road_line", "crosswalk", "stop_sign")
    }
    assert rm.road_edge_count == count["road_edge"]
    assert rm.marking_count == count["road_line"]
    assert len(rm.crosswalk_points) == count["crosswalk"]
    assert len(rm.sign_position) == count["stop_sign"]
    yellow = sum(r["type"] == "road_line" and r["map_element_id"] in range(9, 14) for r in roads)
    assert int((rm.marking_kind == 1).sum()) == yellow
    # lane chunks: at most 10 m, summing to the JSON lanes' total length, at least one per lane
    lanes = [_xyz(r["geometry"]) for r in roads if r["type"] == "lane"]
    seg, owner = rm.lane_segments()
    lengths = np.linalg.norm(seg[:, 1] - seg[:, 0], axis=1)
    assert np.bincount(owner, weights=lengths, minlength=rm.lane_count).max() <= MAX_LANE_CHUNK_M + 1e-3
    assert lengths.sum() == pytest.approx(
        sum(np.linalg.norm(np.diff(p, axis=0), axis=1).sum() for p in lanes), rel=1e-5
    )
    assert rm.lane_count >= count["lane"]
    edges = [_xyz(r["geometry"]) for r in roads if r["type"] == "road_edge"]
    np.testing.assert_array_equal(rm.road_edge_points, np.concatenate(edges).astype(np.float32))
    # every lane-graph link joins a chunk's end to the next chunk's start
    for c in range(rm.lane_count):
        for s in rm.successors(c):
            np.testing.assert_allclose(rm.lane(c)[-1], rm.lane(s)[0], atol=1e-2)
    # logged lights
    tl = doc["tl_states"]
    assert scenario.light_state_log.shape == (steps, len(tl))
    colour = {"unknown": 3, "stop": 0, "arrow_stop": 0, "caution": 1, "go": 2, "arrow_go": 2}
    for col, entry in enumerate(tl.values()):
        for state, t in zip(entry["state"], entry["time_index"], strict=True):
            assert scenario.light_state_log[t, col] == colour[state]


# ---- bad input --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_doc():
    return json.loads(_womd_file("gpudrive_json", JSON_NAMES[3]).read_text())


def _write(tmp_path: Path, doc: dict, name: str) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_missing_objects(small_doc, tmp_path):
    doc = {k: v for k, v in small_doc.items() if k != "objects"}
    path = _write(tmp_path, doc, "no_objects.json")
    with pytest.raises(ValueError, match=r"no_objects\.json: missing 'objects'"):
        read_gpudrive_json(path)


def test_inconsistent_object_arrays(small_doc, tmp_path):
    doc = copy.deepcopy(small_doc)
    doc["objects"][3]["heading"] = doc["objects"][3]["heading"][:-1]
    path = _write(tmp_path, doc, "short_heading.json")
    oid = doc["objects"][3]["id"]
    with pytest.raises(
        ValueError, match=rf"short_heading\.json: objects\[3\] \(id {oid}\): arrays of inconsistent length"
    ):
        load(str(path))


def test_objects_with_different_step_counts(small_doc, tmp_path):
    doc = copy.deepcopy(small_doc)
    for key in ("position", "velocity", "heading", "valid"):
        doc["objects"][2][key] = doc["objects"][2][key][:80]
    path = _write(tmp_path, doc, "short_object.json")
    with pytest.raises(ValueError, match=r"short_object\.json: objects\[2\] .*80 steps, objects\[0\] has 91"):
        read_gpudrive_json(path)


def test_bad_road_and_light_entries(small_doc, tmp_path):
    doc = copy.deepcopy(small_doc)
    doc["roads"][5]["type"] = "tram_line"
    with pytest.raises(ValueError, match=r"roads\[5\] .*unknown road type 'tram_line'"):
        read_gpudrive_json(_write(tmp_path, doc, "bad_road.json"))
    doc = copy.deepcopy(small_doc)
    del doc["roads"][0]["geometry"][1]["y"]
    with pytest.raises(ValueError, match=r"roads\[0\] .*geometry: every point needs numeric x, y, z"):
        read_gpudrive_json(_write(tmp_path, doc, "bad_point.json"))
    doc = copy.deepcopy(small_doc)
    doc["tl_states"] = {"999999": {"state": ["go"], "x": [0.0], "y": [0.0], "z": [0.0], "time_index": [0]}}
    with pytest.raises(ValueError, match=r"tl_states name lanes \[999999\]"):
        read_gpudrive_json(_write(tmp_path, doc, "bad_light.json"))


def test_not_json(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"objects": [')
    with pytest.raises(ValueError, match=r"broken\.json: not valid JSON"):
        read_gpudrive_json(path)


# ---- older export variants --------------------------------------------------------------------


def test_objects_without_ids_get_their_index(small_doc, tmp_path):
    doc = copy.deepcopy(small_doc)
    for obj in doc["objects"]:
        del obj["id"]
    scenario = read_gpudrive_json(_write(tmp_path, doc, "no_ids.json"))
    assert scenario.track_id.tolist() == list(range(len(doc["objects"])))
    reference = read_gpudrive_json(_write(tmp_path, small_doc, "ids.json"))
    np.testing.assert_array_equal(scenario.track_position, reference.track_position)


def test_two_dimensional_export_without_z_or_lights(small_doc, tmp_path):
    doc = copy.deepcopy(small_doc)
    for item in doc["objects"]:
        for p in item["position"]:
            del p["z"]
    for road in doc["roads"]:
        for p in road["geometry"]:
            del p["z"]
    del doc["tl_states"], doc["metadata"]
    scenario = read_gpudrive_json(_write(tmp_path, doc, "flat.json"))
    valid = scenario.track_valid
    xy = np.array([[[p["x"], p["y"]] for p in o["position"]] for o in small_doc["objects"]], np.float32)
    np.testing.assert_array_equal(scenario.track_position[..., :2][valid], xy[valid])
    assert not scenario.track_position[..., 2].any()
    assert len(scenario.light_lane) == 0 and scenario.sdc_index == -1
    mixed = copy.deepcopy(small_doc)
    for p in mixed["roads"][4]["geometry"]:
        del p["z"]
    with pytest.raises(ValueError, match=r"roads\[4\] .*geometry: points without 'z' in a file whose other"):
        read_gpudrive_json(_write(tmp_path, mixed, "mixed.json"))


def test_missing_height_is_named(small_doc, tmp_path):
    doc = copy.deepcopy(small_doc)
    del doc["objects"][1]["height"]
    with pytest.raises(ValueError, match=r"objects\[1\]: missing \['height'\]"):
        read_gpudrive_json(_write(tmp_path, doc, "no_height.json"))
