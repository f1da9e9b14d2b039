"""Plan-view reference line: evaluate ``(x, y, heading)`` at road s for every geometry kind.

Closed forms for ``line`` and ``arc``; ``spiral`` (clothoid), ``poly3`` and ``paramPoly3`` are
integrated numerically on a fine grid (``_FINE_STEP_M``) and interpolated, which keeps the
error far below 1 mm for road-scale curvatures.
"""

from __future__ import annotations

import numpy as np

from pictura.maps.opendrive.reader import Geometry

_FINE_STEP_M = 0.02
"""Integration step for the numerically evaluated geometries (m)."""


def cubic(s: np.ndarray, starts: np.ndarray, coef: np.ndarray, end: float | None = None) -> np.ndarray:
    """Piecewise cubic ``a + b ds + c ds^2 + d ds^3`` with ``ds = s - start`` of the record in force.

    ``s`` (n,); ``starts`` (k,) sorted; ``coef`` (k, 4). Before the first start the first record
    applies. Stations at or past ``end`` (a lane-section end) take the record in force just
    before it: files step the lane offset exactly at a section boundary, and the closing
    cross-section belongs to the section that ends there.
    """
    idx = np.searchsorted(starts, s, side="right") - 1
    if end is not None:
        idx = np.where(s >= end, np.searchsorted(starts, s, side="left") - 1, idx)
    idx = np.clip(idx, 0, len(starts) - 1)
    ds = s - starts[idx]
    a, b, c, d = coef[idx].T
    return a + ds * (b + ds * (c + ds * d))


def cubic_slope(s: np.ndarray, starts: np.ndarray, coef: np.ndarray) -> np.ndarray:
    idx = np.clip(np.searchsorted(starts, s, side="right") - 1, 0, len(starts) - 1)
    ds = s - starts[idx]
    _, b, c, d = coef[idx].T
    return b + ds * (2 * c + 3 * d * ds)


def _fine_grid(length: float) -> np.ndarray:
    n = max(int(np.ceil(length / _FINE_STEP_M)), 8)
    return np.linspace(0.0, length, n + 1)


def _spiral_local(g: Geometry, ds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clothoid in its start frame: heading ``k0 u + (k1 - k0) u^2 / (2 L)``, integrated chord by chord."""
    k0, k1 = float(g.params["curvStart"]), float(g.params["curvEnd"])
    rate = (k1 - k0) / g.length if g.length > 0 else 0.0
    u = _fine_grid(g.length)
    mid = 0.5 * (u[1:] + u[:-1])
    step = np.diff(u)
    # Heading at each step's midpoint: second-order accurate chord directions.
    th_mid = k0 * mid + 0.5 * rate * mid**2
    x = np.concatenate([[0.0], np.cumsum(step * np.cos(th_mid))])
    y = np.concatenate([[0.0], np.cumsum(step * np.sin(th_mid))])
    return np.interp(ds, u, x), np.interp(ds, u, y), k0 * ds + 0.5 * rate * ds**2


def _curve_by_arclength(
    g: Geometry, p: np.ndarray, uv: np.ndarray, duv: np.ndarray, ds: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Evaluate a parametric local curve sampled at ``p`` (n,) -> ``uv``/``duv`` (2, n) at arc lengths ``ds``."""
    seg = np.hypot(np.diff(uv[0]), np.diff(uv[1]))
    arc = np.concatenate([[0.0], np.cumsum(seg)])
    # The record's length is the arc length of the curve; map ds onto the curve's own arc length.
    target = ds * (arc[-1] / g.length) if g.length > 0 else ds
    pq = np.interp(target, arc, p)
    u = np.interp(pq, p, uv[0])
    v = np.interp(pq, p, uv[1])
    th = np.arctan2(np.interp(pq, p, duv[1]), np.interp(pq, p, duv[0]))
    return u, v, th


def _poly3_local(g: Geometry, ds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b, c, d = (float(g.params[k]) for k in "abcd")
    p = _fine_grid(g.length)  # u <= s, so u in [0, length] covers the record
    uv = np.stack([p, a + p * (b + p * (c + p * d))])
    duv = np.stack([np.ones_like(p), b + p * (2 * c + 3 * d * p)])
    # Trim the grid at the record's arc length so the mapping covers exactly [0, length].
    seg = np.hypot(np.diff(uv[0]), np.diff(uv[1]))
    arc = np.concatenate([[0.0], np.cumsum(seg)])
    p_end = np.interp(g.length, arc, p)
    p = np.linspace(0.0, p_end, len(p))
    uv = np.stack([p, a + p * (b + p * (c + p * d))])
    duv = np.stack([np.ones_like(p), b + p * (2 * c + 3 * d * p)])
    return _curve_by_arclength(g, p, uv, duv, ds)


def _param_poly3_local(g: Geometry, ds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cu = [float(g.params[k]) for k in ("aU", "bU", "cU", "dU")]
    cv = [float(g.params[k]) for k in ("aV", "bV", "cV", "dV")]
    p_max = 1.0 if g.params["pRange"] == "normalized" else g.length
    n = max(int(np.ceil(g.length / _FINE_STEP_M)), 8)
    p = np.linspace(0.0, p_max, n + 1)

    def val(c: list[float]) -> np.ndarray:
        return c[0] + p * (c[1] + p * (c[2] + p * c[3]))

    def der(c: list[float]) -> np.ndarray:
        return c[1] + p * (2 * c[2] + 3 * c[3] * p)

    return _curve_by_arclength(g, p, np.stack([val(cu), val(cv)]), np.stack([der(cu), der(cv)]), ds)


def geometry_pose(g: Geometry, ds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """World ``x, y`` (m) and heading (rad) at offsets ``ds`` (n,) in [0, length] along record ``g``."""
    if g.kind == "line":
        return g.x + ds * np.cos(g.hdg), g.y + ds * np.sin(g.hdg), np.full_like(ds, g.hdg)
    if g.kind == "arc":
        k = float(g.params["curvature"])
        th = g.hdg + k * ds
        if abs(k) < 1e-12:
            return g.x + ds * np.cos(g.hdg), g.y + ds * np.sin(g.hdg), th
        return g.x + (np.sin(th) - np.sin(g.hdg)) / k, g.y - (np.cos(th) - np.cos(g.hdg)) / k, th
    local = {"spiral": _spiral_local, "poly3": _poly3_local, "paramPoly3": _param_poly3_local}[g.kind]
    u, v, th = local(g, ds)
    c, s = np.cos(g.hdg), np.sin(g.hdg)
    return g.x + c * u - s * v, g.y + s * u + c * v, g.hdg + th


def reference_pose(geoms: list[Geometry], s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reference-line ``x, y, heading`` at road s (n,) across the road's sorted plan-view records."""
    starts = np.array([g.s for g in geoms])
    idx = np.clip(np.searchsorted(starts, s, side="right") - 1, 0, len(geoms) - 1)
    x, y, h = np.empty_like(s), np.empty_like(s), np.empty_like(s)
    for i in np.unique(idx):
        sel = idx == i
        g = geoms[i]
        x[sel], y[sel], h[sel] = geometry_pose(g, np.clip(s[sel] - g.s, 0.0, g.length))
    return x, y, h


def sample_stations(geoms: list[Geometry], s0: float, s1: float, chord_sag_m: float = 0.02) -> np.ndarray:
    """Road s values covering [s0, s1]: at most 1 m apart, closer on tight curves so a chord sags
    less than ``chord_sag_m`` at the reference line; record boundaries included."""
    out = [np.array([s0, s1])]
    for g in geoms:
        a, b = max(g.s, s0), min(g.s + g.length, s1)
        if b <= a:
            continue
        if g.kind == "arc":
            k = abs(float(g.params["curvature"]))
        elif g.kind == "spiral":
            k = max(abs(float(g.params["curvStart"])), abs(float(g.params["curvEnd"])))
        elif g.kind == "line":
            k = 0.0
        else:
            k = 0.2  # polynomials: no cheap bound, sample densely
        step = 1.0 if k < 1e-6 else float(np.clip(np.sqrt(8 * chord_sag_m / k), 0.2, 1.0))
        out.append(np.linspace(a, b, int(np.ceil((b - a) / step)) + 1))
    return np.unique(np.concatenate(out))
