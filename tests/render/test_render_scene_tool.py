"""`python -m pictura render`: scene JSON -> PNG mosaic + raw views."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from pictura.tools.render_scene import EXAMPLE_SCENE, main, mosaic, scene_from_json


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
