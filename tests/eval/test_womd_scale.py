"""``evaluate --protocol womd`` on a folder as real WOMD data comes: a Waymo-named shard of several
scenarios, GPUDrive JSONs with and without object ids, and a broken file. Every good scene is
evaluated, the broken one is named in ``meta.skipped``; ``--resume`` replays only the missing
batches; two processes under torchrun (gloo) give the single-process result."""

from __future__ import annotations

import copy
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from pictura.eval import protocols
from pictura.eval.metrics import C_EPISODES
from pictura.maps.womd.index import with_scenario_id
from pictura.tools.evaluate import main
from tests.eval.test_womd_protocol import _json_files, _reference_controlled, _womd_dir
from tests.maps.test_womd_index import _frame


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
    from pictura.maps import load
    from pictura.maps.womd.selection import womd_controllable

    shard_scene = load(str(_womd_dir() / "tfrecord" / "motion_data_one_scenario.tfrecord"))
    out = {f"shard-{i}": int(womd_controllable(shard_scene).sum()) for i in range(3)}
    for path in sorted(folder.glob("*.json")):
        out[path.name] = len(_reference_controlled(_json_files()[1] if path.name == "no_ids.json" else path))
    return out


ARGS = ("--policy", "constant:7", "--protocol", "womd", "--densities", "1", "0.5", "--steps", "2",
        "--worlds-per-batch", "2", "--resolution", "16x9", "--no-progress")


@pytest.fixture(scope="module")
def single(folder, tmp_path_factory) -> dict:
    """The single-process evaluation of ``folder`` (batches of 2 sources: 3 batches), and the
    lines of its partial-results file (kept here; a finished run removes it)."""
    out = tmp_path_factory.mktemp("single") / "womd.json"
    partial = out.with_name(out.name + ".partial.jsonl")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("pictura.tools.evaluate.PartialResults.finish", lambda self: self.file.close())
        main([*ARGS, "--data", str(folder), "--json", str(out)])
    data = json.loads(out.read_text())
    data["partial_lines"] = partial.read_text().splitlines()
    return data


def test_folder_with_a_broken_file_evaluates_every_good_scene(folder, single, tmp_path):
    meta = single["meta"]
    expected = _scene_episodes(folder)
    assert meta["scenes"]["1.0"] == sum(1 for v in expected.values() if v)
    assert meta["scenes_indexed"] == 5 and meta["scene_files"] == 4
    assert [(Path(s["file"]).name, s["record"]) for s in meta["skipped"]] == [("broken.tfrecord", 0)]
    assert "truncated" in meta["skipped"][0]["reason"]
    rows = single["scenario_counters"]["constant:7"]["1.0"]
    # scene order: index order (sorted paths: broken, no_ids, tfrecord-...json, validation/shard x 3)
    assert [r[C_EPISODES] for r in rows] == [
        expected[k] for k in ("no_ids.json", _json_files()[0].name, "shard-0", "shard-1", "shard-2") if expected[k]
    ]
    with pytest.raises(SystemExit, match="broken.tfrecord"):
        main([*ARGS, "--data", str(folder), "--strict", "--json", str(tmp_path / "strict.json")])


def test_resume_plays_only_missing_batches(folder, single, tmp_path, monkeypatch):
    args = [*ARGS, "--data", str(folder)]
    # an interrupted run: its partial file holds the header and the first batch (both densities)
    # and half a line, cut mid-write
    out = tmp_path / "resumed.json"
    partial = out.with_name(out.name + ".partial.jsonl")
    lines = single["partial_lines"]
    partial.write_text("\n".join(lines[:3]) + "\n" + lines[3][: len(lines[3]) // 2])
    played = []
    real = protocols.rollout_scenarios
    monkeypatch.setattr(protocols, "rollout_scenarios", lambda *a, **k: (played.append(1), real(*a, **k))[1])
    with monkeypatch.context() as keep:
        keep.setattr("pictura.tools.evaluate.PartialResults.finish", lambda self: self.file.close())
        main([*args, "--json", str(out), "--resume", "--workers", "1"])  # scenes read ahead in a worker process
    assert len(played) == 4  # 3 batches of 2 sources x 2 densities; the first batch was done
    assert partial.read_text().splitlines() == lines  # the cut line replaced, every batch once
    main([*args, "--json", str(out), "--resume"])  # nothing left to play
    assert len(played) == 4
    resumed = json.loads(out.read_text())
    assert resumed["results"] == single["results"]
    assert resumed["scenario_counters"] == single["scenario_counters"]
    assert not partial.exists()  # removed once the JSON is written
    with pytest.raises(SystemExit, match="other settings"):
        partial.write_text(json.dumps({"settings": {"steps": 99}}) + "\n")
        main([*args, "--json", str(out), "--resume"])


def test_two_processes_under_torchrun_merge_into_the_single_process_result(folder, single, tmp_path):
    out = tmp_path / "two.json"
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               "-m", "pictura", "evaluate", *ARGS, "--data", str(folder), "--json", str(out)]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    two = json.loads(out.read_text())
    assert two["meta"]["processes"] == 2
    assert two["results"] == single["results"]
    assert two["scenario_counters"] == single["scenario_counters"]  # batches 0, 2 on rank 0; 1 on rank 1
    assert two["meta"]["skipped"] == single["meta"]["skipped"]
    assert done.stderr.count("womd: skipped") == 1  # rank 0 reports, once
