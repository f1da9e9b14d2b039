"""`stored_lines_coverage` (and through it `clipped_pixel_area`, the area where two or more of a
box's silhouette lines cross a pixel) against an independent NumPy Sutherland-Hodgman clip of
the pixel square by every stored line, in float64.

The cases stress what a boundary integral could get wrong and a polygon clip cannot: lines
nearly parallel (down to 1e-8 rad) with the same and with opposite insides, coincident lines,
lines through the pixel's corners and along its axes, three lines through nearly one point,
regions that miss the pixel or fill most of it."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from pictura.render.coverage import BOX_LINES, stored_lines_coverage
from pictura.render.raster import pack_pixel

MISSING = (-1.0e6, 0.0, 0.0, 0.0)  # `store_box_lines`' line for a missing edge: inside every pixel
CORNERS = np.array([(-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)])
WITHIN = 5.0e-7  # float32 arithmetic on O(1) values; the clip itself is ~1.5e-7 off here


@wp.kernel
def coverage_kernel(lines: wp.array(dtype=wp.vec4), points: wp.array(dtype=wp.vec2i), coverage_out: wp.array(dtype=float)):
    case = wp.tid()
    p = points[case]
    coverage_out[case] = stored_lines_coverage(wp.uint64(lines.ptr), BOX_LINES * case, pack_pixel(p[0], p[1]))


def clipped_area(lines: list[tuple[float, float, float]]) -> float:
    """Area of the unit square around (0, 0) inside every line (s, gu, gv): s + gu u + gv v <= 0
    (Sutherland-Hodgman, then the shoelace sum)."""
    poly = list(CORNERS)
    for s, gu, gv in lines:
        out = []
        for i, a in enumerate(poly):
            b = poly[(i + 1) % len(poly)]
            fa, fb = s + gu * a[0] + gv * a[1], s + gu * b[0] + gv * b[1]
            if fa <= 0.0:
                out.append(a)
            if (fa <= 0.0) != (fb <= 0.0):
                out.append(a + fa / (fa - fb) * (b - a))
        poly = out
        if len(poly) < 3:
            return 0.0
    p = np.array(poly)
    return 0.5 * abs(float(np.sum(p[:, 0] * np.roll(p[:, 1], -1) - np.roll(p[:, 0], -1) * p[:, 1])))


def stored(gradient: np.ndarray, through: np.ndarray) -> tuple[float, float, float]:
    """(s, gu, gv) of the line through point ``through`` (offsets from the pixel's grid point)
    with inside against ``gradient``, scaled as `store_box_lines` scales it (larger change 1)."""
    g = gradient / np.abs(gradient).max()
    return float(-(g @ through)), float(g[0]), float(g[1])


def direction(angle: float) -> np.ndarray:
    return np.array([np.cos(angle), np.sin(angle)])


def cases(rng: np.random.Generator) -> dict[str, list[list[tuple[float, float, float]]]]:
    """Per kind, 300 pixels' lines (s, gu, gv) in offsets from the pixel's grid point."""
    def point():
        return rng.uniform(-0.5, 0.5, 2)

    def angle():
        return rng.uniform(0.0, 2.0 * np.pi)

    def tiny(lo, hi):
        return 10.0 ** -rng.uniform(lo, hi)

    out: dict[str, list] = {k: [] for k in ("random", "near_parallel", "opposite", "coincident", "corners", "fan")}
    for _ in range(300):
        out["random"].append([stored(direction(angle()), point()) for _ in range(rng.integers(2, 5))])
        a, p = angle(), point()
        out["near_parallel"].append([stored(direction(a), p), stored(direction(a + rng.choice([-1, 1]) * tiny(1, 8)), p)])
        # a sliver: the other side runs back nearly along the first, a hair away
        q = p + rng.uniform(-1e-3, 1e-3, 2)
        out["opposite"].append([stored(direction(a), p), stored(direction(a + np.pi + tiny(1, 8)), q)])
        line = stored(direction(a), p)
        twin = line if rng.random() < 0.5 else tuple(-v for v in line)  # the same line, either inside
        out["coincident"].append([line, twin] + ([stored(direction(angle()), point())] if rng.random() < 0.5 else []))
        corner = CORNERS[rng.integers(4)]
        g = direction(a) if rng.random() < 0.5 else np.round(direction(a))  # axis-aligned half the time
        g = g if g.any() else np.array([1.0, 0.0])
        out["corners"].append([stored(g, corner), stored(direction(angle()), corner if rng.random() < 0.5 else p)])
        d = tiny(2, 8)  # three lines through nearly one point, each nearly along the last
        out["fan"].append([stored(direction(a + i * d), p + (i == 2) * 1e-4 * rng.normal(size=2)) for i in range(3)])
    return out


def run(lines: np.ndarray, points: np.ndarray, device: str = "cpu") -> np.ndarray:
    """`stored_lines_coverage` of each case's BOX_LINES stored lines (cases, BOX_LINES, 4) at its
    grid point (cases, 2), on ``device``."""
    out = wp.zeros(len(points), dtype=float, device=device)
    wp.launch(
        coverage_kernel, len(points),
        [wp.array(lines.reshape(-1, 4), dtype=wp.vec4, device=device), wp.array(points, dtype=wp.vec2i, device=device), out],
        device=device,
    )  # fmt: skip
    return out.numpy()


def store(all_lines: list, rng: np.random.Generator, at: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cases' lines as stored vec4s, each in random slots of its entry's BOX_LINES (the rest
    missing), moved to grid point ``at`` (value at the grid's origin, changes per step, reach);
    the exact areas of the float32 lines they store; how many lines cross each pixel."""
    stored_lines = np.tile(np.array(MISSING, np.float32), (len(all_lines), BOX_LINES, 1))
    exact = np.zeros(len(all_lines))
    crossing = np.zeros(len(all_lines), int)
    x, y = at
    for i, lines in enumerate(all_lines):
        in_slots = []
        for (s, gu, gv), k in zip(lines, rng.choice(BOX_LINES, len(lines), replace=False), strict=True):
            stored_lines[i, k] = (s - x * gu - y * gv, gu, gv, 0.5 + 0.5 * min(abs(gu), abs(gv)))
            l0, gu32, gv32, reach = stored_lines[i, k].astype(np.float64)
            s32 = l0 + x * gu32 + y * gv32  # the stored line's own value at the pixel, exactly
            in_slots.append((s32, gu32, gv32))
            crossing[i] += abs(s32) < reach
        exact[i] = clipped_area(in_slots)
    return stored_lines, exact, crossing


@pytest.mark.parametrize("kind", ["random", "near_parallel", "opposite", "coincident", "corners", "fan"])
def test_corner_coverage_is_the_clipped_area(kind):
    rng = np.random.default_rng(47)
    all_lines = cases(rng)[kind]
    lines, exact, crossing = store(all_lines, rng, (0, 0))
    assert (crossing >= 2).sum() >= 60  # the two-or-more-lines path, not only half-planes
    got = run(lines, np.zeros((len(all_lines), 2), np.int32))
    worst = int(np.argmax(np.abs(got - exact)))
    assert abs(got[worst] - exact[worst]) <= WITHIN, (all_lines[worst], got[worst], exact[worst])


def test_corner_coverage_away_from_the_grid_origin():
    # The lines' values at the grid's origin are then large (the grid point's coordinates times
    # the changes), so the value at the pixel carries their rounding: float32 of ~100, 1e-5.
    rng = np.random.default_rng(5)
    all_lines = [lines for kind in cases(rng).values() for lines in kind]
    lines, exact, crossing = store(all_lines, rng, (61, 37))
    got = run(lines, np.tile(np.array([[61, 37]], np.int32), (len(all_lines), 1)))
    assert (crossing >= 2).sum() > 1000
    np.testing.assert_allclose(got, exact, atol=2.0e-5)


def test_corner_coverage_hand_cases():
    # A quarter: two axis lines through the pixel centre; an empty sliver between two parallel
    # lines whose insides face away; half of a strip of width 1/2 between two parallel lines.
    quarter = [(0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]
    apart = [(0.1, 1.0, 0.0), (0.1, -1.0, 0.0)]  # u <= -0.1 and u >= 0.1
    strip = [(-0.25, 1.0, 0.0), (-0.25, -1.0, 0.0)]  # |u| <= 0.25
    diamond = [(-0.5, 1.0, 1.0), (-0.5, -1.0, 1.0), (-0.5, 1.0, -1.0), (-0.5, -1.0, -1.0)]  # |u| + |v| <= 1/2
    all_lines = [quarter, apart, strip, diamond]
    lines, exact, _ = store(all_lines, np.random.default_rng(0), (0, 0))
    np.testing.assert_allclose(exact, [0.25, 0.0, 0.5, 0.5])
    np.testing.assert_allclose(run(lines, np.zeros((4, 2), np.int32)), exact, atol=WITHIN)


@pytest.mark.gpu
def test_corner_coverage_is_the_clipped_area_on_cuda():
    # The CUDA build: fast math (approximate reciprocals, a few ulp), rounding intrinsics for
    # the vertices' terms, the lines loaded through the read-only cache.
    rng = np.random.default_rng(47)
    all_lines = [lines for kind in cases(rng).values() for lines in kind]
    lines, exact, _ = store(all_lines, rng, (0, 0))
    np.testing.assert_allclose(run(lines, np.zeros((len(all_lines), 2), np.int32), "cuda"), exact, atol=4.0 * WITHIN)
