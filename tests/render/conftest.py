"""Shared scene builders for the rasterizer tests (NumPy only; device "cpu")."""

from __future__ import annotations

import numpy as np

from pictura.maps.roadmap import RoadMap
from pictura.sim.snapshot import BOX_ROW_FLOATS, WorldLayout


def empty_map(**fields) -> RoadMap:
    return RoadMap("test", **fields)


def boxes(slots: int, rows: dict[int, tuple[float, ...]], steps: int = 1) -> np.ndarray:
    """(steps, slots, BOX_ROW_FLOATS) history, every step the same; unlisted slots empty (-1)."""
    out = np.full((steps, slots, BOX_ROW_FLOATS), -1.0, np.float32)
    for s, row in rows.items():
        out[:, s] = row
    return out


def layout(worlds: int, slots_per_world: int, lights: int = 0) -> WorldLayout:
    return WorldLayout.uniform([0] * worlds, slots_per_world, [lights])


def project(points: np.ndarray, cam_pos: np.ndarray, yaw: float, focal: float, cx: float, cy: float) -> np.ndarray:
    """Pinhole projection of world points (n, 3) for a level camera with world yaw (rad)."""
    fwd = np.array([np.cos(yaw), np.sin(yaw), 0.0])
    left = np.array([-np.sin(yaw), np.cos(yaw), 0.0])
    up = np.array([0.0, 0.0, 1.0])
    rel = points - cam_pos
    x, y, z = rel @ fwd, rel @ left, rel @ up
    assert np.all(x > 0), "test geometry must lie in front of the camera"
    return np.stack([cx - focal * y / x, cy - focal * z / x], axis=1)


def box_corners(x: float, y: float, z: float, heading: float, length: float, width: float, height: float) -> np.ndarray:
    """(8, 3) world corners of a box with bottom centre (x, y, z)."""
    c, s = np.cos(heading), np.sin(heading)
    out = []
    for lx in (-0.5, 0.5):
        for ly in (-0.5, 0.5):
            for lz in (0.0, 1.0):
                px, py = lx * length, ly * width
                out.append([x + c * px - s * py, y + s * px + c * py, z + lz * height])
    return np.array(out)


def convex_hull(points: np.ndarray) -> np.ndarray:
    """Andrew's monotone chain, counter-clockwise (in x-right, y-up sense)."""
    pts = sorted(map(tuple, points))

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def front_silhouette(focal: float, principal: tuple[float, float], box) -> np.ndarray:
    """Convex hull (n, 2), in pixels, of ``box`` (x, y, z, heading, length, width, height, ...)
    as seen by a level camera at (0, 0, 1.5) m facing +x with ``focal`` and ``principal``: the
    front camera of an ego at the origin in the render tests."""
    cx, cy = principal
    return convex_hull(project(box_corners(*box[:7]), np.array([0.0, 0.0, 1.5]), 0.0, focal, cx, cy))


def grown_by_one_pixel(mask: np.ndarray) -> np.ndarray:
    """``mask`` (H, W) bool with every pixel next to a set one (8-neighbourhood) set too."""
    grown = mask.copy()
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            grown |= np.roll(np.roll(mask, dy, 0), dx, 1)
    return grown


def fill_polygon(hull: np.ndarray, width: int, height: int) -> np.ndarray:
    """(H, W) bool: pixel centres inside the convex polygon."""
    u, v = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
    inside = np.ones((height, width), bool)
    n = len(hull)
    signs = []
    for i in range(n):
        a, b = hull[i], hull[(i + 1) % n]
        signs.append((b[0] - a[0]) * (v - a[1]) - (b[1] - a[1]) * (u - a[0]))
    signs = np.stack(signs)
    inside = np.all(signs >= 0, axis=0) | np.all(signs <= 0, axis=0)
    return inside


def polygon_pixel_area(poly: np.ndarray, x0: int, y0: int) -> float:
    """Exact area of the convex polygon ``poly`` (n, 2) inside pixel [x0, x0 + 1] x [y0, y0 + 1]:
    the polygon clipped by the pixel's four sides (Sutherland-Hodgman), then the shoelace sum."""
    pts = [tuple(p) for p in poly]
    for nx, ny, c in ((1.0, 0.0, -x0), (-1.0, 0.0, x0 + 1.0), (0.0, 1.0, -y0), (0.0, -1.0, y0 + 1.0)):
        kept = []  # the part with nx x + ny y + c >= 0
        for i, p in enumerate(pts):
            q = pts[(i + 1) % len(pts)]
            fp, fq = nx * p[0] + ny * p[1] + c, nx * q[0] + ny * q[1] + c
            if fp >= 0:
                kept.append(p)
            if (fp >= 0) != (fq >= 0):
                a = fp / (fp - fq)
                kept.append((p[0] + a * (q[0] - p[0]), p[1] + a * (q[1] - p[1])))
        pts = kept
        if not pts:
            return 0.0
    return 0.5 * abs(sum(p[0] * q[1] - q[0] * p[1] for p, q in zip(pts, pts[1:] + pts[:1], strict=True)))
