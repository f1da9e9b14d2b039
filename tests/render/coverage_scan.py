"""Edge coverage of random box poses against the exact polygon-pixel area, per coverage mode
(issue 5; docs/renderer.md, Known limits). Run:

    python -m tests.render.coverage_scan --poses 48 --seed 1 --uniform-faces

`tests/render/test_coverage.py` checks seven hand-picked poses. This tool draws ``--poses``
vehicles at random in front of the level camera (6-20 m ahead, up to 0.45 x that to the side,
any heading), measures every edge pixel of each mode (`MODES`) as `edge_coverage_error_map`
does (2 px from the hull's corners and from the horizon left out), and prints one JSON line per
mode:
- the poses with an edge pixel more than 0.02 off;
- the share of edge pixels more than 0.02 off;
- the median, 99th percentile and largest error.

It also prints one ``worst`` line per such pose. ``--uniform-faces`` gives every face of a kind
one colour, so that a pixel straddling two faces does not confuse the measure, which reads the
coverage from the colour.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import pictura.render.rasterizer as rasterizer
from tests.render.test_coverage import EXACT_WITHIN, edge_coverage_error_map

MODES = {
    "exact": {"coverage": "exact"},
    "ramp": {"coverage": "ramp"},
    "supersample2": {"supersample": 2, "antialias": False},
}
"""The modes measured: `Renderer` options. ``supersample2`` is plain 2x2 supersampling, the
paper's like-for-like antialiasing baseline (its coverage comes in steps of 1/4)."""


def random_poses(n: int, seed: int) -> list[tuple[float, ...]]:
    """``n`` vehicle poses (x, y, z, heading, length, width, height) in front of the camera."""
    rng = np.random.default_rng(seed)
    poses = []
    for _ in range(n):
        x = rng.uniform(6.0, 20.0)
        poses.append((x, rng.uniform(-0.45, 0.45) * x, 0.0, rng.uniform(-np.pi, np.pi), 4.5, 2.0, 1.4))
    return poses


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--poses", type=int, default=48, help="random poses (default 48)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--uniform-faces", action="store_true", help="one colour for every face of a kind")
    args = p.parse_args(argv)
    if args.poses < 1:
        p.error(f"--poses must be >= 1, got {args.poses}")
    if args.uniform_faces:
        faces = rasterizer.AGENT_FACE_COLOR.copy()
        faces[:] = faces[:, :1]
        rasterizer.AGENT_FACE_COLOR = faces  # read by every Renderer built after this
    errors: dict[str, list[float]] = {m: [] for m in MODES}
    poses_off = dict.fromkeys(MODES, 0)
    measured = 0
    for pose in random_poses(args.poses, args.seed):
        maps = {m: edge_coverage_error_map(pose, **options) for m, options in MODES.items()}
        if (~np.isnan(maps["exact"])).sum() < 5:
            continue  # too few edge pixels (a box mostly out of view)
        measured += 1
        for m, error_map in maps.items():
            e = error_map[~np.isnan(error_map)]
            errors[m] += e.tolist()
            poses_off[m] += int(e.size > 0 and e.max() > EXACT_WITHIN)  # a mode may measure none
        worst = {m: round(float(np.nanmax(maps[m])), 3) for m in MODES}
        if worst["exact"] > EXACT_WITHIN:
            print(json.dumps({"name": "coverage_scan_worst", "pose": [round(v, 3) for v in pose], **worst}))
    for m in MODES:
        e = np.array(errors[m])
        row = {
            "name": "coverage_scan", "mode": m, "seed": args.seed, "uniform_faces": args.uniform_faces,
            "poses": measured, f"poses_over_{EXACT_WITHIN}": poses_off[m], "edge_pixels": len(e),
            f"edge_pixels_over_{EXACT_WITHIN}": round(float((e > EXACT_WITHIN).mean()), 4),
            "median": round(float(np.median(e)), 4), "p99": round(float(np.percentile(e, 99)), 4),
            "max": round(float(e.max()), 4),
        }  # fmt: skip
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
