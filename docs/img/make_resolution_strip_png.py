"""docs/img/render_resolution_strip.png: the example scene's front view (`python -m pictura
render --example`) at 32x18, 64x36, 96x54, 192x108 and 384x216 (columns), each shown at 384x216
with nearest-neighbour upscaling; rows: hard 1-sample edges (``antialias=False``), analytic
coverage (the default, ``coverage="silhouette"``), and plain 2x2 supersampling (``supersample=2,
antialias=False``, the paper's like-for-like baseline).

    python docs/img/make_resolution_strip_png.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.render_throughput import RESOLUTIONS  # noqa: E402  (the issue's sweep)
from pictura.render import CameraRig, Renderer  # noqa: E402
from pictura.sim.snapshot import WorldLayout  # noqa: E402
from pictura.tools.render_scene import EXAMPLE_SCENE, scene_from_json  # noqa: E402

ROWS = ({"antialias": False}, {}, {"supersample": 2, "antialias": False})
GAP = 4  # white pixels between tiles


def front_view(scene: tuple, width: int, height: int, options: dict) -> np.ndarray:
    """(height, width, 3) uint8: the front camera (the rig's first) of ``scene``, the road map,
    boxes, light states and layout of the example."""
    road_map, boxes, light_state, layout = scene
    rig = CameraRig(**EXAMPLE_SCENE.get("rig", {}))
    rig.set_resolution(width, height)
    renderer = Renderer([road_map], layout, rig, device="cpu", **options)
    return renderer.render_numpy(boxes[None], light_state[None], np.array([[0, 0]]))[0, 0]


def main() -> None:
    road_map, boxes, light_state, _ = scene_from_json(EXAMPLE_SCENE)
    scene = (road_map, boxes, light_state, WorldLayout.uniform([0], len(boxes), [len(light_state)]))
    full_w, full_h = RESOLUTIONS[-1]
    out = np.full((len(ROWS) * (full_h + GAP) - GAP, len(RESOLUTIONS) * (full_w + GAP) - GAP, 3), 255, np.uint8)
    for r, options in enumerate(ROWS):
        for c, (w, h) in enumerate(RESOLUTIONS):
            view = front_view(scene, w, h, options)
            tile = np.repeat(np.repeat(view, full_h // h, 0), full_w // w, 1)
            y, x = r * (full_h + GAP), c * (full_w + GAP)
            out[y : y + full_h, x : x + full_w] = tile
    path = Path(__file__).with_name("render_resolution_strip.png")
    Image.fromarray(out).save(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
