"""``evaluate --protocol womd`` on a folder as real WOMD data comes: a Waymo-named shard of several
scenarios, GPUDrive JSONs with and without object ids, and a broken file. Every good scene is
evaluated, the broken one is named in ``meta.skipped``; ``--resume`` replays only the missing
batches; two shards of the batches merge into the single-process result."""

from __future__ import annotations

import copy
import json
import shutil
import struct
from pathlib import Path

import pytest
import torch

from pictura.envs.observations import VectorizedObservationConfig
from pictura.eval import protocols
from pictura.eval.metrics import C_EPISODES
from pictura.eval.policies import constant_policy
from pictura.eval.protocols import merge_womd_batches, replay_env_builder, run_womd, womd_sources
from pictura.maps.womd.index import with_scenario_id
from pictura.tools.evaluate import main
from tests.eval.test_womd_protocol import _json_files, _reference_controlled, _womd_dir
from tests.maps.test_womd_index import _frame

OBS = VectorizedObservationConfig(max_lanes=16, max_boundaries=16, subdivide_long_segments=5.0)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("womd_folder")
    blob = (_womd_dir() / "tfrecord" / "motion_data_one_scenario.tfrecord").read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    record = blob[12 : 12 + n]
    shard = root / "validation" / "validation.tfrecord-00000-of-00150"
    shard.parent.mkdir()
    shard.write_bytes(b"".join(_frame(with_scenario_id(record, f"shard-{i}")) for i in range(3)))
    json_a, json_b = _json_files()[:2]
    shutil.copy(json_a, root / json_a.name)
    doc = json.loads(json_b.read_text())
    no_ids = copy.deepcopy(doc)
    for obj in no_ids["objects"]:
        del obj["id"]
    (root / "no_ids.json").write_text(json.dumps(no_ids))
    (root / "broken.tfrecord").write_bytes(blob[: len(blob) // 2])  # truncated mid-record
    return root


def _scene_episodes(folder: Path) -> dict[str, int]:
    """Controlled vehicles per good scene, from the raw JSON (plain loop) and the shard's record."""
    from pictura.eval.protocols import womd_controllable
    from pictura.maps import load

    shard_scene = load(str(_womd_dir() / "tfrecord" / "motion_data_one_scenario.tfrecord"))
    out = {f"shard-{i}": int(womd_controllable(shard_scene).sum()) for i in range(3)}
    for path in sorted(folder.glob("*.json")):
        out[path.name] = len(_reference_controlled(_json_files()[1] if path.name == "no_ids.json" else path))
    return out


def test_folder_with_a_broken_file_evaluates_every_good_scene(folder, tmp_path, capsys):
    out = tmp_path / "womd.json"
    main(["--policy", "constant:7", "--protocol", "womd", "--data", str(folder), "--densities", "1",
          "--steps", "2", "--worlds-per-batch", "2", "--resolution", "16x9", "--json", str(out), "--no-progress"])
    data = json.loads(out.read_text())
    meta = data["meta"]
    expected = _scene_episodes(folder)
    assert meta["scenes"] == {"1.0": sum(1 for v in expected.values() if v)}
    assert meta["scenes_indexed"] == 5 and meta["scene_files"] == 4
    assert [(Path(s["file"]).name, s["record"]) for s in meta["skipped"]] == [("broken.tfrecord", 0)]
    assert "truncated" in meta["skipped"][0]["reason"]
    assert "womd: skipped" in capsys.readouterr().err
    rows = data["scenario_counters"]["constant:7"]["1.0"]
    # scene order: index order (sorted paths: broken, no_ids, tfrecord-...json, validation/shard x 3)
    assert [r[C_EPISODES] for r in rows] == [
        expected[k] for k in ("no_ids.json", _json_files()[0].name, "shard-0", "shard-1", "shard-2") if expected[k]
    ]
    assert not out.with_name(out.name + ".partial.jsonl").exists()  # removed once the JSON is written
    with pytest.raises(SystemExit, match="broken.tfrecord"):
        main(["--policy", "constant:7", "--protocol", "womd", "--data", str(folder), "--densities", "1",
              "--steps", "2", "--strict", "--json", str(tmp_path / "strict.json"), "--no-progress"])


def test_resume_plays_only_missing_batches(folder, tmp_path, monkeypatch):
    args = ["--policy", "constant:7", "--protocol", "womd", "--data", str(folder), "--densities", "1",
            "--steps", "2", "--worlds-per-batch", "2", "--resolution", "16x9", "--no-progress"]
    full = tmp_path / "full.json"
    main([*args, "--json", str(full)])
    # an interrupted run: its partial file holds the header and the first batch only
    out = tmp_path / "resumed.json"
    monkeypatch.setattr("pictura.tools.evaluate.PartialResults.finish", lambda self: self.file.close())
    main([*args, "--json", str(out)])
    partial = out.with_name(out.name + ".partial.jsonl")
    partial.write_text("\n".join(partial.read_text().splitlines()[:2]) + "\n")
    monkeypatch.undo()
    played = []
    real = protocols.rollout_scenarios
    monkeypatch.setattr(protocols, "rollout_scenarios", lambda *a, **k: (played.append(1), real(*a, **k))[1])
    main([*args, "--json", str(out), "--resume"])
    assert len(played) == 2  # 3 batches of 2 sources; the first was done
    assert json.loads(out.read_text())["results"] == json.loads(full.read_text())["results"]
    assert json.loads(out.read_text())["scenario_counters"] == json.loads(full.read_text())["scenario_counters"]
    with pytest.raises(SystemExit, match="other settings"):
        partial.write_text(json.dumps({"settings": {"steps": 99}}) + "\n")
        main([*args, "--json", str(out), "--resume"])


def test_two_shards_merge_into_the_single_process_result(folder):
    index = womd_sources(folder)

    def run(shard):
        return run_womd(replay_env_builder(observation=OBS), lambda env: constant_policy(7), index, 1.0, steps=2,
                        scenes_per_batch=2, shard=shard, warn=lambda line: None)

    single = run((0, 1))
    parts = [run((r, 2)) for r in (0, 1)]
    assert {b.index for b in parts[0].batches} == {0, 2} and {b.index for b in parts[1].batches} == {1}
    merged = merge_womd_batches(parts[1].batches + parts[0].batches, 1.0, 2)
    assert merged.scenes == single.scenes
    assert torch.equal(merged.counters, single.counters)
    assert torch.equal(merged.scenario_sums, single.scenario_sums)
