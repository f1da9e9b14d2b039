"""A NumPy model of a box's edge coverage on the poses of test_coverage.py, to weigh designs
for issue 5 before writing kernels (docs/renderer.md, Known limits). Run:

    python -m tests.render.coverage_model

For each pixel the model casts the pixel-centre ray of the level front camera, finds the
camera-facing faces of the box and their in-plane distances to the face edges, and turns them
into a coverage four ways:

- ``ramp``: main's in-plane ramp, 0.5 - sd / (t / focal), the same footprint in every direction;
- ``aniso``: the ramp, with the footprint measured along each edge's screen gradient (how far
  the hit point moves across that edge per pixel), which foreshortening stretches;
- ``trapezoid``: that gradient's length and direction, and the box filter of a straight edge
  crossing a square pixel at that slope (a trapezoid's integral), i.e. exact to first order;
- ``faces``: the same box filter for both edges of each of the face's axes, the strip between
  them (so a face thinner than a pixel is right too), their product per face, faces summed.

``--random N`` measures N random poses (`coverage_scan.random_poses`) instead of the test poses.

Faces add up (clipped at 1), as in `box_fragment`. It prints, per pose, the largest and mean
|coverage - exact polygon-pixel area| over the pixels test_coverage.py measures (inside the
silhouette's edge, 2 px away from its corners and the horizon).
"""

from __future__ import annotations

import argparse

import numpy as np

from pictura.render import CameraRig
from tests.render.conftest import front_silhouette, polygon_pixel_area
from tests.render.coverage_scan import random_poses
from tests.render.test_coverage import FACE_ON, TURNED, H, W
from tests.render.test_rasterizer import FRONT

CAMERA = np.array([0.0, 0.0, 1.5])
MODES = ("ramp", "aniso", "trapezoid", "faces")


def edge_trapezoid(sd: float, gradient: np.ndarray) -> float:
    """Coverage of a pixel by the inside of a straight edge: ``sd`` (m) the pixel centre's
    distance outside it, ``gradient`` (2,) how many metres ``sd`` changes per pixel along x, y."""
    norm = float(np.linalg.norm(gradient))
    inside = -sd / norm  # pixels
    a, b = sorted(np.abs(gradient) / norm, reverse=True)
    half, flat = (a + b) / 2, (a - b) / 2
    if inside >= half:
        return 1.0
    if inside <= -half:
        return 0.0
    if abs(inside) <= flat:
        return 0.5 + inside / a
    if inside > 0:
        return 1.0 - (half - inside) ** 2 / (2 * a * b)
    return (half + inside) ** 2 / (2 * a * b)


def box_coverage(pose, u: float, v: float, focal: float, principal, mode: str) -> float:
    """Coverage of pixel centre (u, v) by box ``pose`` (x, y, z, heading, length, width, height)."""
    cx, cy = principal
    ray = np.array([focal, -(u - cx), -(v - cy)])  # camera: forward +x, right -y, down -z
    length = float(np.linalg.norm(ray))
    x, y, z, heading, size_x, size_y, size_z = pose
    c, s = np.cos(heading), np.sin(heading)
    to_box = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    o = to_box @ (CAMERA - np.array([x, y, z + size_z / 2]))
    d = to_box @ (ray / length)
    per_pixel = (to_box @ np.array([0.0, -1.0, 0.0]), to_box @ np.array([0.0, 0.0, -1.0]))  # ray change per pixel
    half = np.array([size_x, size_y, size_z]) / 2
    total = 0.0
    for a in range(3):
        b, e = (k for k in range(3) if k != a)
        side = np.sign(o[a])
        if not (abs(o[a]) > half[a] and d[a] * side < 0):
            continue  # the face across axis a looks away
        t = (side * half[a] - o[a]) / d[a]
        hit = o + t * d
        sd = {k: abs(hit[k]) - half[k] for k in (b, e)}
        # the hit point's move across axis k per pixel step (the ray's length is `length` pixels)
        gradient = {k: t / length * np.array([w[k] - d[k] * w[a] / d[a] for w in per_pixel]) for k in (b, e)}
        if mode == "ramp":
            cov = np.clip(0.5 - max(sd[b], sd[e]) * focal / t, 0.0, 1.0)
        elif mode == "aniso":
            cov = np.clip(0.5 - max(sd[k] / np.linalg.norm(gradient[k]) for k in (b, e)), 0.0, 1.0)
        elif mode == "trapezoid":
            cov = min(edge_trapezoid(sd[k], gradient[k]) for k in (b, e))
        else:
            # Both edges of each in-plane axis: the strip between them covers cov(+) + cov(-) - 1
            # of the pixel (exact for a strip of parallel edges, a face thinner than a pixel
            # included); the face's area is the product of its two strips' (exact away from
            # corners), and the visible faces, which tile the silhouette, add up.
            cov = 1.0
            for k in (b, e):
                cov *= max(
                    edge_trapezoid(hit[k] - half[k], gradient[k]) + edge_trapezoid(-hit[k] - half[k], gradient[k]) - 1.0,
                    0.0,
                )
        total += cov
    return min(total, 1.0)


def main(argv: list[str] | None = None) -> None:

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--random", type=int, default=0, help="measure this many random poses instead")
    p.add_argument("--seed", type=int, default=2, help="their seed (default 2)")
    args = p.parse_args(argv)
    rig = CameraRig(cameras=[FRONT], width=W, height=H)
    focal, principal = rig.focal, rig.principal
    poses = random_poses(args.random, args.seed) if args.random else [FACE_ON, *TURNED]
    pooled: dict[str, list[float]] = {m: [] for m in MODES}
    for pose in poses:
        hull = front_silhouette(focal, principal, pose)
        errors: dict[str, list[float]] = {m: [] for m in MODES}
        for py in range(H):
            for px in range(W):
                exact = polygon_pixel_area(hull, px, py)
                u, v = px + 0.5, py + 0.5
                if not 0.0 < exact < 1.0 or abs(v - principal[1]) < 2.0:
                    continue
                if np.hypot(hull[:, 0] - u, hull[:, 1] - v).min() < 2.0:
                    continue
                for mode in MODES:
                    errors[mode].append(abs(box_coverage(pose, u, v, focal, principal, mode) - exact))
        if not errors["ramp"]:
            continue
        for m, e in errors.items():
            pooled[m] += e
        if not args.random:
            summary = ", ".join(f"{m} max {max(e):.3f} mean {np.mean(e):.4f}" for m, e in errors.items())
            print(f"pose {pose}: {len(errors['ramp'])} edge pixels; {summary}")
    if args.random:
        for m, e in pooled.items():
            e = np.array(e)
            print(f"{m}: {len(e)} edge pixels of {args.random} random poses; over 0.02: {(e > 0.02).mean():.4f}, max {e.max():.3f}")


if __name__ == "__main__":
    main()
