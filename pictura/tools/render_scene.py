"""``python -m pictura render``: render a hand-written scene, or one agent of a live world, to PNG.

    python -m pictura render --scene scene.json --out views.png
    python -m pictura render --example scene.json          # write a starter scene file
    python -m pictura render --map procedural:seed=0 --agent 3 --out views.png

Writes a PNG mosaic of the ego's camera views (one tile per camera, in rig order, two per row)
and, beside it, ``<out>.npy``: the raw ``(C, H, W, 3)`` uint8 views. With ``--map`` the world
is live: the simulator spawns ``--agents`` agents and ``--parked`` parked cars on the map
(`pictura.sim.reset`, seed ``--seed``), and the PNG shows a top-down overview of the world
(`pictura.eval.overview.overview_for_slot`: the agent in magenta with its camera frusta and goal
waypoints) to the right of the agent's views.

Scene JSON (metres, degrees; x east, y north, z up; every key but ``ego`` optional)::

    {
      "rig": {"width": 192, "height": 108, "far": 120.0,
              "cameras": [{"name": "front", "x": 1.66, "y": -0.01, "z": 1.49, "yaw_deg": 0}]},
      "ego": {"x": 0, "y": 0, "z": 0, "heading_deg": 0, "length": 4.5, "width": 2.0, "height": 1.5},
      "agents": [{"x": 15, "y": 3.5, "heading_deg": 10, "length": 4.5, "width": 2, "height": 1.5,
                  "type": "vehicle"}],                        # vehicle | pedestrian | cyclist
      "markings": [{"kind": "divider", "points": [[0, 1.75], [100, 1.75]]}],   # divider | centre
      "road_edges": [[[0, -7], [100, -7]]],
      "stop_lines": [[[40, -7], [40, 0]]],
      "walls": [{"points": [[0, 12], [100, 12]], "height": 4}],
      "lights": [{"position": [45, -8, 4.5], "heading_deg": 180, "state": "red"}],  # red|yellow|green|off
      "antialias": true, "supersample": 1, "coverage": "silhouette", # coverage: silhouette | exact | ramp
      "background": {"sky": [0.55, 0.7, 0.9], "ground": [0.26, 0.26, 0.28]}  # linear RGB in 0..1
    }

Points may be [x, y] (z = 0) or [x, y, z]. ``rig`` takes every `CameraRig` argument.
``background`` sets the sky (above the horizon) and the ground (below it); either key may be
left out (`pictura.render.palette` colours).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from pictura.maps.roadmap import (
    AGENT_CYCLIST,
    AGENT_PEDESTRIAN,
    AGENT_VEHICLE,
    LIGHT_GREEN,
    LIGHT_OFF,
    LIGHT_RED,
    LIGHT_YELLOW,
    MARKING_CENTRE_LINE,
    MARKING_LANE_DIVIDER,
    RoadMap,
    pack_polylines,
)
from pictura.sim.snapshot import BOX_INVALID, BOX_ROW_FLOATS, BoxView, WorldLayout, box_row

AGENT_TYPES = {"vehicle": AGENT_VEHICLE, "pedestrian": AGENT_PEDESTRIAN, "cyclist": AGENT_CYCLIST}
LIGHT_STATES = {"red": LIGHT_RED, "yellow": LIGHT_YELLOW, "green": LIGHT_GREEN, "off": LIGHT_OFF}
MARKING_KINDS = {"divider": MARKING_LANE_DIVIDER, "centre": MARKING_CENTRE_LINE, "center": MARKING_CENTRE_LINE}

EXAMPLE_SCENE = {
    "rig": {"width": 192, "height": 108},
    "ego": {"x": 0, "y": -1.75, "heading_deg": 0, "length": 4.5, "width": 2.0, "height": 1.5},
    "agents": [
        {"x": 14, "y": -1.75, "heading_deg": 0, "length": 4.6, "width": 2.0, "height": 1.5, "type": "vehicle"},
        {"x": 30, "y": 1.75, "heading_deg": 180, "length": 4.2, "width": 1.9, "height": 1.5, "type": "vehicle"},
        {"x": 24, "y": 6.0, "heading_deg": -60, "length": 1.8, "width": 0.7, "height": 1.7, "type": "cyclist"},
        {"x": 20, "y": -8.5, "heading_deg": 90, "length": 0.6, "width": 0.6, "height": 1.75, "type": "pedestrian"},
        {"x": -12, "y": -1.75, "heading_deg": 0, "length": 4.4, "width": 1.9, "height": 1.5, "type": "vehicle"},
        {"x": 9, "y": 9.0, "heading_deg": 0, "length": 4.4, "width": 1.9, "height": 1.5, "type": "vehicle"},
    ],
    "markings": [
        {"kind": "centre", "points": [[-60, 0], [45, 0]]},
        {"kind": "divider", "points": [[-60, -3.5], [45, -3.5]]},
        {"kind": "divider", "points": [[-60, 3.5], [45, 3.5]]},
    ],
    "road_edges": [[[-60, -7], [45, -7]], [[-60, 7], [45, 7]], [[59, -7], [160, -7]], [[59, 7], [160, 7]]],
    "stop_lines": [[[44, -7], [44, 0]]],
    "walls": [
        {"points": [[-60, 12], [40, 12]], "height": 6},
        {"points": [[-60, -12], [40, -12]], "height": 4},
        {"points": [[64, -12], [160, -12]], "height": 8},
    ],
    "lights": [
        {"position": [60, -8, 5], "heading_deg": 180, "state": "red"},
        {"position": [43, 8, 5], "heading_deg": 0, "state": "green"},
    ],
}


def _points(raw: list, key: str) -> np.ndarray:
    pts = np.asarray(raw, np.float64)
    if pts.ndim != 2 or pts.shape[1] not in (2, 3) or len(pts) < 2:
        raise ValueError(f"scene: {key} must be a list of >= 2 [x, y] or [x, y, z] points, got {raw!r}")
    if pts.shape[1] == 2:
        pts = np.concatenate([pts, np.zeros((len(pts), 1))], axis=1)
    return pts.astype(np.float32)


def _box(raw: dict, key: str) -> np.ndarray:
    try:
        kind = AGENT_TYPES[raw.get("type", "vehicle")]
    except KeyError:
        raise ValueError(f"scene: {key}.type {raw.get('type')!r} is not one of {sorted(AGENT_TYPES)}") from None
    vals = []
    for name in ("x", "y", "z", "heading_deg", "length", "width", "height"):
        default = {"z": 0.0, "heading_deg": 0.0, "length": 4.5, "width": 2.0, "height": 1.5}.get(name)
        v = raw.get(name, default)
        if v is None:
            raise ValueError(f"scene: {key}.{name} is required")
        vals.append(float(v))
    if min(vals[4:7]) <= 0:
        raise ValueError(f"scene: {key} length/width/height must be > 0, got {vals[4:7]}")
    x, y, z, hd, ln, wd, ht = vals
    return np.array(box_row(x=x, y=y, z=z, heading=math.radians(hd), length=ln, width=wd, height=ht, kind=kind), np.float32)


def _background(raw) -> dict:
    """The scene's ``background`` -> the `Renderer`'s ``sky`` / ``ground`` arguments, checked."""
    from pictura.render.rasterizer import background_color

    if not isinstance(raw, dict):
        raise ValueError(f"scene: background must be an object with sky and/or ground, got {raw!r}")
    unknown = sorted(set(raw) - {"sky", "ground"})
    if unknown:
        raise ValueError(f"scene: background has unknown keys {unknown}; known: ['ground', 'sky']")
    return {key: background_color(rgb, f"scene: background.{key}") for key, rgb in raw.items()}


def scene_from_json(scene: dict) -> tuple[RoadMap, np.ndarray, np.ndarray, dict]:
    """Parse a scene dict: (road map, (S, BOX_ROW_FLOATS) boxes with the ego in slot 0, light states, options)."""
    if "ego" not in scene:
        raise ValueError("scene: 'ego' is required")
    known = {"rig", "ego", "agents", "markings", "road_edges", "stop_lines", "walls", "lights", "antialias", "supersample", "coverage", "background"}
    unknown = sorted(set(scene) - known)
    if unknown:
        raise ValueError(f"scene: unknown keys {unknown}; known: {sorted(known)}")
    marks = scene.get("markings", [])
    mpts, moff = pack_polylines([_points(m["points"], f"markings[{i}].points") for i, m in enumerate(marks)])
    mkind = []
    for i, m in enumerate(marks):
        if m.get("kind", "divider") not in MARKING_KINDS:
            raise ValueError(f"scene: markings[{i}].kind {m.get('kind')!r} is not one of {sorted(MARKING_KINDS)}")
        mkind.append(MARKING_KINDS[m.get("kind", "divider")])
    epts, eoff = pack_polylines([_points(e, f"road_edges[{i}]") for i, e in enumerate(scene.get("road_edges", []))])
    stops = [_points(s, f"stop_lines[{i}]") for i, s in enumerate(scene.get("stop_lines", []))]
    if any(len(s) != 2 for s in stops):
        raise ValueError("scene: each stop line is exactly 2 points")
    walls = scene.get("walls", [])
    wall_pts = [_points(w["points"], f"walls[{i}].points") for i, w in enumerate(walls)]
    if any(len(w) != 2 for w in wall_pts):
        raise ValueError("scene: each wall is exactly 2 base points")
    lights = scene.get("lights", [])
    states = []
    for i, li in enumerate(lights):
        if li.get("state", "red") not in LIGHT_STATES:
            raise ValueError(f"scene: lights[{i}].state {li.get('state')!r} is not one of {sorted(LIGHT_STATES)}")
        states.append(LIGHT_STATES[li.get("state", "red")])
    road_map = RoadMap(
        "scene",
        marking_points=mpts,
        marking_offsets=moff,
        marking_kind=np.asarray(mkind, np.int32),
        road_edge_points=epts,
        road_edge_offsets=eoff,
        stop_line_points=np.asarray(stops, np.float32).reshape(-1, 2, 3),
        stop_line_lane=np.zeros(0, np.int32),
        wall_points=np.asarray(wall_pts, np.float32).reshape(-1, 2, 3),
        wall_height=np.asarray([float(w.get("height", 3.0)) for w in walls], np.float32),
        light_position=np.asarray([li["position"] for li in lights], np.float32).reshape(-1, 3),
        light_heading=np.radians(np.asarray([li.get("heading_deg", 0.0) for li in lights], np.float32)),
    )
    agents = scene.get("agents", [])
    boxes = np.full((1 + len(agents), BOX_ROW_FLOATS), BOX_INVALID, np.float32)
    boxes[0] = _box(scene["ego"], "ego")
    for i, a in enumerate(agents):
        boxes[1 + i] = _box(a, f"agents[{i}]")
    options = {"antialias": bool(scene.get("antialias", True)), "supersample": int(scene.get("supersample", 1))}
    if "coverage" in scene:  # else the `Renderer`'s default
        options["coverage"] = str(scene["coverage"])
    options.update(_background(scene.get("background", {})))
    return road_map, boxes, np.asarray(states, np.int32), options


def mosaic(views: np.ndarray, columns: int = 2, gap: int = 2) -> np.ndarray:
    """(C, H, W, 3) views -> one image, ``columns`` per row, white gaps."""
    C, H, W, _ = views.shape
    rows = (C + columns - 1) // columns
    out = np.full((rows * H + (rows - 1) * gap, columns * W + (columns - 1) * gap, 3), 255, np.uint8)
    for c in range(C):
        r, k = divmod(c, columns)
        out[r * (H + gap) : r * (H + gap) + H, k * (W + gap) : k * (W + gap) + W] = views[c]
    return out


def _parser() -> argparse.ArgumentParser:
    from pictura.render.kernels import COVERAGE_MODES, DEFAULT_COVERAGE

    p = argparse.ArgumentParser(prog="python -m pictura render", description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--scene", type=Path, help="hand-written scene JSON (see --example)")
    src.add_argument("--map", help="map source (e.g. procedural:seed=0, carla:Town03): a live world on it")
    src.add_argument("--example", type=Path, metavar="OUT", help="write an example scene JSON here and exit")
    p.add_argument("--out", type=Path, default=Path("views.png"), help="PNG mosaic path (default views.png)")
    p.add_argument("--width", type=int, help="override the rig width (px)")
    p.add_argument("--height", type=int, help="override the rig height (px)")
    p.add_argument("--scale", type=int, default=1, help="upscale the PNG by this factor (nearest)")
    p.add_argument("--supersample", type=int, help="rays per pixel per axis (2 = reference mode)")
    p.add_argument("--no-antialias", action="store_true", help="hard edges (1 sample, no coverage)")
    p.add_argument("--coverage", choices=sorted(COVERAGE_MODES), help=f"box-edge coverage mode (default {DEFAULT_COVERAGE})")
    p.add_argument("--agent", type=int, default=0, help="--map: slot of the agent whose views to draw (default 0)")
    p.add_argument("--agents", type=int, default=60, help="--map: agents the simulator spawns (default 60)")
    p.add_argument("--parked", type=int, default=32, help="--map: parked cars (default 32, Table 5)")
    p.add_argument("--seed", type=int, default=0, help="--map: the simulator's reset seed (default 0)")
    p.add_argument("--radius", type=float, default=40.0, help="--map: overview half-width in m (default 40)")
    p.add_argument("--device", default="cpu", help="Warp device (default cpu)")
    return p


def live_world(source: str, agents: int, parked: int, seed: int, device: str):
    """(road map, layout, agent_box (S + P, 8), light_state (L,), goals (S, G, 3)) of one world on
    ``source`` as the simulator spawns it (`pictura.sim.reset`): ``agents`` slots, ``parked``
    parked cars."""
    from pictura.maps import load_road_map
    from pictura.sim import SimConfig, build_model, reset

    if agents < 1:
        raise ValueError(f"--agents must be >= 1, got {agents}")
    if parked < 0:
        raise ValueError(f"--parked must be >= 0, got {parked}")
    road_map = load_road_map(source)
    layout = WorldLayout.uniform([0], agents, [len(road_map.light_position)], parked)
    model = build_model([road_map], layout, SimConfig(agents_per_world=(agents, agents), parked_per_world=parked), device=device)
    state = model.state()
    reset(model, state, seed=seed)
    return road_map, layout, state.agent_box.numpy(), state.light_state.numpy(), state.goal.numpy()


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    try:
        run(args)
    except (ValueError, FileNotFoundError) as err:
        raise SystemExit(f"render: {err}") from None


def run(args: argparse.Namespace) -> None:
    """The command behind `main` (errors as ``ValueError``)."""
    if args.example:
        args.example.write_text(json.dumps(EXAMPLE_SCENE, indent=2) + "\n")
        print(f"wrote {args.example}")
        return
    from PIL import Image

    from pictura.render import CameraRig, Renderer

    rig_args: dict = {}
    options = {"antialias": True, "supersample": 1}
    if args.scale < 1:
        raise ValueError(f"--scale must be >= 1, got {args.scale}")
    if args.scene:
        scene = json.loads(args.scene.read_text())
        road_map, boxes, light_state, options = scene_from_json(scene)
        rig_args = dict(scene.get("rig", {}))
        layout = WorldLayout.uniform([0], len(boxes), [len(light_state)])
        ego = 0
    else:
        road_map, layout, boxes, light_state, goals = live_world(args.map, args.agents, args.parked, args.seed, args.device)
        ego = args.agent
        if not 0 <= ego < layout.num_slots:
            raise ValueError(f"--agent {ego} outside the world's slots 0..{layout.num_slots - 1} (--agents {args.agents})")
        if BoxView(boxes[ego]).kind == BOX_INVALID:
            spawned = int(BoxView(boxes[: layout.num_slots]).valid.sum())
            raise ValueError(
                f"--agent {ego} holds no agent: the simulator spawned {spawned} of {args.agents} on {args.map!r} "
                "(pick another slot or another --seed)"
            )
    rig = CameraRig(**rig_args)
    rig.set_resolution(args.width or rig.width, args.height or rig.height)
    if args.supersample:
        options["supersample"] = args.supersample
    if args.no_antialias:
        options["antialias"] = False
    if args.coverage:
        options["coverage"] = args.coverage
    renderer = Renderer([road_map], layout, rig, device=args.device, **options)
    renderer.validate_requests(boxes[None], np.array([[0, ego]]))
    views = renderer.render_numpy(boxes[None], light_state[None], np.array([[0, ego]]))[0]
    image = mosaic(views)
    if args.scale > 1:
        image = np.repeat(np.repeat(image, args.scale, 0), args.scale, 1)
    if args.map:
        from types import SimpleNamespace

        from pictura.eval.overview import overview_for_slot, side_by_side

        world = SimpleNamespace(layout=layout, road_maps=[road_map], rig=rig)  # what overview_for_slot reads
        overview = overview_for_slot(
            world, boxes, light_state, ego, goals=goals[ego], size=max(image.shape[0], 360), radius=args.radius,
            title=f"{args.map}  slot {ego}",
        )
        image = side_by_side([image, overview], background=255)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(args.out)
    np.save(args.out.with_suffix(".npy"), views)
    names = ", ".join(c.name for c in rig.cameras)
    print(f"wrote {args.out} ({names}; {rig.width}x{rig.height}) and {args.out.with_suffix('.npy')}")


if __name__ == "__main__":
    main()
