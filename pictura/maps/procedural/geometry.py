"""Plane geometry for the procedural town: chunking, curves, arcs, shaped loops. (n, 2) arrays in m."""

from __future__ import annotations

import math

import numpy as np

from pictura.maps.roadmap import MAX_LANE_CHUNK_M

BEZIER_POINTS = 13
ARC_STEP_M = 1.5
"""Longest chord (m) of sampled arcs (curb corners, ring-road corners, roundabout ring)."""
DASH_ON_M, DASH_OFF_M = 3.0, 5.0


def rot90(v: np.ndarray) -> np.ndarray:
    """Rotate 2-D vector(s) by +90 degrees (to the left)."""
    return np.stack([-v[..., 1], v[..., 0]], axis=-1)


def xyz(p2: np.ndarray) -> np.ndarray:
    """(n, 2) -> (n, 3) with z = 0."""
    p2 = np.atleast_2d(p2)
    return np.concatenate([p2, np.zeros((len(p2), 1))], axis=1)


def chunk_polyline(points: np.ndarray, max_len: float = MAX_LANE_CHUNK_M) -> list[np.ndarray]:
    """Cut an ``(n, d)`` polyline into equal-arclength pieces no longer than ``max_len`` (m).

    Consecutive pieces share their cut point exactly, so the lane graph is continuous.
    """
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    total = cum[-1]
    if total <= 0.0:
        raise ValueError("chunk_polyline: polyline has zero length")
    n = max(1, math.ceil(total / max_len - 1e-9))
    if len(points) == 2:  # straight lanes (most of a town): evenly spaced cut points
        cut_points = points[0] + np.linspace(0.0, 1.0, n + 1)[:, None] * (points[1] - points[0])
        cut_points[-1] = points[-1]
        return list(np.stack([cut_points[:-1], cut_points[1:]], axis=1))
    cuts = np.linspace(0.0, total, n + 1)
    cut_points = np.stack([np.interp(cuts, cum, points[:, d]) for d in range(points.shape[1])], axis=1)
    cut_points[0], cut_points[-1] = points[0], points[-1]
    pieces = []
    for i in range(n):
        inner = (cum > cuts[i] + 1e-9) & (cum < cuts[i + 1] - 1e-9)
        pieces.append(np.concatenate([cut_points[i : i + 1], points[inner], cut_points[i + 1 : i + 2]]))
    return pieces


def bezier(p0: np.ndarray, p1: np.ndarray, p2: np.ndarray, n: int = BEZIER_POINTS) -> np.ndarray:
    t = np.linspace(0.0, 1.0, n)[:, None]
    return (1 - t) ** 2 * p0 + 2 * (1 - t) * t * p1 + t**2 * p2


def pack_xy(polylines: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """List of ``(n_i, 2)`` polylines -> CSR (points ``(P, 3)`` with z = 0, offsets)."""
    offsets = np.zeros(len(polylines) + 1, np.int32)
    offsets[1:] = np.cumsum([len(p) for p in polylines])
    points = np.zeros((offsets[-1], 3), np.float32)
    if polylines:
        points[:, :2] = np.concatenate(polylines)
    return points, offsets


def dashes(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    """Dashed line from a to b: ``DASH_ON_M`` painted, ``DASH_OFF_M`` gap, centred on the span."""
    length = float(np.linalg.norm(b - a))
    period = DASH_ON_M + DASH_OFF_M
    n = int((length + DASH_OFF_M) // period)
    if n < 1:
        return []
    d = (b - a) / length
    start = 0.5 * (length - (n * period - DASH_OFF_M))
    return [
        np.stack([a + d * (start + k * period), a + d * (start + k * period + DASH_ON_M)]) for k in range(n)
    ]


def polar_blend(centre: np.ndarray, p0: np.ndarray, p2: np.ndarray) -> np.ndarray:
    """Curve from p0 to p2 round ``centre`` the short way, (n, 2) m.

    The radius eases from ``|p0 - centre|`` to ``|p2 - centre|`` with a smoothstep in angle, so
    the curve is tangent to the circle (the road direction) at both ends; equal radii give an arc.
    """
    v0, v2 = p0 - centre, p2 - centre
    r0, r2 = float(np.linalg.norm(v0)), float(np.linalg.norm(v2))
    a0 = math.atan2(v0[1], v0[0])
    sweep = (math.atan2(v2[1], v2[0]) - a0 + math.pi) % (2 * math.pi) - math.pi
    n = max(BEZIER_POINTS, math.ceil(abs(sweep) * max(r0, r2) / ARC_STEP_M) + 1)
    s = np.linspace(0.0, 1.0, n)
    r = r0 + (r2 - r0) * s * s * (3.0 - 2.0 * s)
    ang = a0 + sweep * s
    out = centre + r[:, None] * np.stack([np.cos(ang), np.sin(ang)], axis=1)
    out[0], out[-1] = p0, p2
    return out


def arc(centre: np.ndarray, radius: float, a0: float, sweep: float) -> np.ndarray:
    """Points (n, 2) on a circle from angle a0 through ``sweep`` rad, ends included."""
    n = max(7, math.ceil(abs(sweep) * radius / ARC_STEP_M) + 1)
    ang = a0 + np.linspace(0.0, sweep, n)
    return centre + radius * np.stack([np.cos(ang), np.sin(ang)], axis=1)


def corner_loop(corners: np.ndarray, specs: list, inset: float, side_points=None) -> np.ndarray:
    """Closed loop (n, 2) round a counter-clockwise rectangle with shaped corners, offset inward.

    Args:
        corners: (4, 2) rectangle corners, counter-clockwise (m).
        specs: per corner ``("round", radius)`` (a fillet inside the corner; 0 = sharp) or
            ``("cut", centre, radius)`` (the corner cut away by a circle round ``centre``).
        inset: offset (m) toward the rectangle's inside (negative: outward). Fillets keep their
            centre (radius shrinks; sharp when it reaches 0), cut circles grow by ``inset``.
        side_points: optional ``f(start, direction, length) -> list of (2,) points`` inserted
            along each straight side (parking bays).
    """
    centre_rect = corners.mean(0)
    diag = np.sign(centre_rect - corners)  # (4, 2) inward diagonal at each corner
    q = corners + diag * inset
    shapes = []  # per corner: (trim before, trim after, points)
    for c in range(4):
        d_in = q[c] - q[c - 1]
        d_in /= np.linalg.norm(d_in)
        d_out = q[(c + 1) % 4] - q[c]
        d_out /= np.linalg.norm(d_out)
        if specs[c][0] == "round":
            radius = specs[c][1] - inset if specs[c][1] > 0.0 else 0.0
            if radius <= 0.0:
                shapes.append((0.0, 0.0, [q[c]]))
                continue
            centre = corners[c] + diag[c] * specs[c][1]
            a0 = math.atan2(-rot90(d_in)[1], -rot90(d_in)[0])
            shapes.append((radius, radius, list(arc(centre, radius, a0, 0.5 * math.pi))))
        else:
            _, centre, radius = specs[c]
            radius = radius + inset
            v = q[c] - centre
            s_in = float(v @ d_in + math.sqrt((v @ d_in) ** 2 - v @ v + radius**2))
            s_out = float(-(v @ d_out) + math.sqrt((v @ d_out) ** 2 - v @ v + radius**2))
            a, b = q[c] - d_in * s_in, q[c] + d_out * s_out
            a0 = math.atan2(*(a - centre)[::-1])
            sweep = (math.atan2(*(b - centre)[::-1]) - a0 + math.pi) % (2 * math.pi) - math.pi
            shapes.append((s_in, s_out, list(arc(centre, radius, a0, sweep))))
    loop: list[np.ndarray] = []
    for c in range(4):
        loop += shapes[c][2]
        if side_points is not None:
            p, r = q[c], q[(c + 1) % 4]
            d = (r - p) / np.linalg.norm(r - p)
            start = p + d * shapes[c][1]
            loop += side_points(
                start, d, float(np.linalg.norm(r - p)) - shapes[c][1] - shapes[(c + 1) % 4][0]
            )
    loop.append(loop[0])
    return np.array(loop)
