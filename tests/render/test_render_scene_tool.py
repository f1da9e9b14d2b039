"""`python -m pictura render`: scene JSON -> PNG mosaic + raw views."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from pictura.eval.overview import EGO_COLOR
from pictura.sim.snapshot import BoxView
from pictura.tools.render_scene import EXAMPLE_SCENE, live_world, main, mosaic, scene_from_json


def test_scene_json_round_trip(tmp_path):
    scene = tmp_path / "scene.json"
    main(["--example", str(scene)])
    out = tmp_path / "views.png"
    main(["--scene", str(scene), "--out", str(out), "--width", "48", "--height", "27"])
    views = np.load(out.with_suffix(".npy"))
    assert views.shape == (4, 27, 48, 3) and views.dtype == np.uint8
    png = np.asarray(Image.open(out))
    np.testing.assert_array_equal(png, mosaic(views))
    assert len(np.unique(views.reshape(-1, 3), axis=0)) > 10  # something besides ground and sky


def test_coverage_mode_from_the_scene_or_the_flag(tmp_path):
    # Both modes draw the example; they differ only where boxes have edges (a few pixels), and
    # an unknown mode stops the tool with a message that names the field.
    scene = json.loads(json.dumps(EXAMPLE_SCENE))
    path = tmp_path / "scene.json"
    views = {}
    for mode in ("ramp", "exact"):
        scene["coverage"] = mode
        path.write_text(json.dumps(scene))
        main(["--scene", str(path), "--out", str(tmp_path / f"{mode}.png"), "--width", "96", "--height", "54"])
        views[mode] = np.load(tmp_path / f"{mode}.npy").astype(int)
    changed = (np.abs(views["exact"] - views["ramp"]).max(-1) > 0).mean()
    assert 0.0 < changed < 0.05
    scene["coverage"] = "ramp"
    path.write_text(json.dumps(scene))
    main(["--scene", str(path), "--coverage", "exact", "--out", str(tmp_path / "flag.png"), "--width", "96", "--height", "54"])
    np.testing.assert_array_equal(np.load(tmp_path / "flag.npy"), views["exact"])
    scene["coverage"] = "analytic"
    path.write_text(json.dumps(scene))
    with pytest.raises(SystemExit, match="coverage"):
        main(["--scene", str(path), "--out", str(tmp_path / "bad.png")])


def test_scene_errors_name_the_field():
    bad = json.loads(json.dumps(EXAMPLE_SCENE))
    bad["agents"][0]["type"] = "tank"
    with pytest.raises(ValueError, match=r"agents\[0\]\.type"):
        scene_from_json(bad)
    bad = json.loads(json.dumps(EXAMPLE_SCENE))
    bad["lights"][0]["state"] = "blue"
    with pytest.raises(ValueError, match=r"lights\[0\]\.state"):
        scene_from_json(bad)
    with pytest.raises(ValueError, match="ego"):
        scene_from_json({"agents": []})


def test_map_renders_one_agent_of_a_live_world_beside_an_overview(tmp_path):
    """``--map SOURCE --agent N``: the simulator spawns the world (agents and parked cars), the
    .npy holds slot N's views, and the PNG puts the world's overview right of the mosaic."""
    source = "procedural:seed=0"
    _, layout, boxes, _, _ = live_world(source, agents=12, parked=5, seed=0, device="cpu")
    assert layout.num_slots == 12 and len(boxes) == 12 + 5
    assert BoxView(boxes[12:]).valid.sum() == 5  # the parked cars
    views = {}
    for agent in (0, 3):
        out = tmp_path / f"agent{agent}.png"
        main(["--map", source, "--agents", "12", "--parked", "5", "--agent", str(agent), "--out", str(out), "--width", "48", "--height", "27"])
        views[agent] = np.load(out.with_suffix(".npy"))
        png = np.asarray(Image.open(out))
        tiles = mosaic(views[agent])
        np.testing.assert_array_equal(png[: tiles.shape[0], : tiles.shape[1]], tiles)
        overview = png[:, tiles.shape[1] :]
        assert overview.shape[1] >= 360  # the overview panel, beside the mosaic
        assert np.all(overview == np.array(EGO_COLOR, np.uint8), axis=-1).sum() > 10  # the agent, in magenta
    assert views[0].shape == (4, 27, 48, 3)
    assert not np.array_equal(views[0], views[3])  # two agents, two different views


def test_map_agent_errors_name_the_option(tmp_path):
    out = str(tmp_path / "v.png")
    with pytest.raises(SystemExit, match="--agent 12 outside"):
        main(["--map", "procedural:seed=0", "--agents", "12", "--agent", "12", "--out", out])
    with pytest.raises(SystemExit, match="--agents must be >= 1"):
        main(["--map", "procedural:seed=0", "--agents", "0", "--out", out])


def test_scene_sets_its_own_background(tmp_path):
    """``background``: the sky fills the rows above the horizon and the ground those below, as
    8-bit rounds of the given linear colours; a bad colour stops the tool naming the field."""
    sky, ground = [0.2, 0.4, 0.8], [1.0, 0.6, 0.0]  # whole 8-bit levels: 51, 102, 204 and 255, 153, 0
    scene = {"rig": {"cameras": [{"name": "front", "x": 0, "y": 0, "z": 1.5, "yaw_deg": 0}]}, "ego": {"x": 0, "y": 0},
             "background": {"sky": sky, "ground": ground}}  # fmt: skip
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(scene))
    main(["--scene", str(path), "--out", str(tmp_path / "bg.png"), "--width", "32", "--height", "18"])
    view = np.load(tmp_path / "bg.npy")[0]
    np.testing.assert_array_equal(view[0], np.tile(np.round(np.array(sky) * 255), (32, 1)))
    np.testing.assert_array_equal(view[-1], np.tile(np.round(np.array(ground) * 255), (32, 1)))
    for bad, field in (({"sky": [0.1, 0.2]}, "background.sky"), ({"ground": [0, 0, 1.5]}, "background.ground"),
                       ({"sea": [0, 0, 1]}, "unknown keys")):  # fmt: skip
        scene["background"] = bad
        path.write_text(json.dumps(scene))
        with pytest.raises(SystemExit, match=field):
            main(["--scene", str(path), "--out", str(tmp_path / "bad.png")])
