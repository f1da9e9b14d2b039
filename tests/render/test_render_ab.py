"""`benchmarks/render_ab.py`'s image comparison and its error for a bad baseline revision."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.render_ab import export_ref, image_diff


def test_image_diff_counts_pixels_not_channels():
    a = np.zeros((2, 3, 4, 3), np.uint8)
    b = a.copy()
    b[0, 0, 0] = (1, 1, 0)  # one pixel, two channels, by one level
    b[1, 2, 3, 2] = 7  # one pixel by seven levels
    d = image_diff(a, b)
    assert d["pixels_compared"] == 24
    assert d["pixels_changed"] == pytest.approx(2 / 24, abs=1e-6)
    assert d["pixels_changed_by_more_than_1"] == pytest.approx(1 / 24, abs=1e-6)
    assert d["max_level_diff"] == 7
    assert image_diff(a, a[:1])["pixels_compared"] == 0  # shapes differ: nothing compared


def test_a_bad_revision_is_named(tmp_path):
    with pytest.raises(SystemExit, match="--ref no-such-revision"):
        export_ref("no-such-revision", tmp_path)


def test_env_pairs_parse_and_a_malformed_one_is_named():
    from benchmarks.render_ab import parse_env

    assert parse_env(["A=1", "B=x=y"], "--env") == {"A": "1", "B": "x=y"}
    with pytest.raises(SystemExit, match="--ref-env takes KEY=VALUE, got 'NOVALUE'"):
        parse_env(["NOVALUE"], "--ref-env")


def test_a_relative_data_root_reaches_both_runs_whole(tmp_path, monkeypatch):
    # Each run's working directory is its own tree: PICTURA_DATA=.data would name another folder
    # there, and the pinned scene silently fell back to the procedural town in one run only.
    from benchmarks.render_ab import run_env

    (tmp_path / ".data").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PICTURA_DATA", ".data")
    env = run_env({"X": "1"}, tmp_path / "tree")
    assert env["PICTURA_DATA"] == str(tmp_path / ".data")
    assert env["X"] == "1" and env["PYTHONPATH"].startswith(str(tmp_path / "tree"))


def test_runs_on_different_scenes_are_not_compared():
    from benchmarks.render_ab import scene_mismatch

    line = {"scene": "pinned", "map": "Town10HD", "agents": 20400, "requests": 20400, "cameras": 4}
    assert scene_mismatch(line, dict(line)) is None
    got = scene_mismatch(line, dict(line, map="procedural"))
    assert got == "map: 'Town10HD' vs 'procedural'"
