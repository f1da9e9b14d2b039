"""The renderer's per-pixel `wp.func`s against their documented closed forms (docs/renderer.md),
and every palette entry against a literal copy of the table.

depth shading ``0.45 + 0.55 exp(-t / 50 m)``; a traffic light fully visible within 45 deg of the
direction it faces and invisible from 75 deg on, whatever the distance; an edge's pixel coverage
``clamp(0.5 - sd / footprint, 0, 1)`` (a hard step without antialiasing).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import warp as wp

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
)
from pictura.render import CameraRig, Renderer, palette
from pictura.render.common import coverage, depth_shade, light_visibility
from tests.render.conftest import boxes, empty_map, layout

DEVICE = "cpu"


@wp.kernel
def _funcs_kernel(x: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    out[i, 0] = depth_shade(x[i, 0])
    light = wp.vec3(x[i, 1], x[i, 2], x[i, 3])
    cam = wp.vec3(x[i, 4], x[i, 5], x[i, 6])
    out[i, 1] = light_visibility(light, x[i, 7], cam)
    out[i, 2] = coverage(x[i, 8], x[i, 9], 1)
    out[i, 3] = coverage(x[i, 8], x[i, 9], 0)


def _run(x: np.ndarray) -> np.ndarray:
    out = wp.zeros((len(x), 4), dtype=float, device=DEVICE)
    wp.launch(
        _funcs_kernel,
        dim=len(x),
        inputs=[wp.array(x.astype(np.float32), dtype=float, device=DEVICE), out],
        device=DEVICE,
    )
    return out.numpy()


def test_shading_visibility_and_coverage_closed_forms():
    rng = np.random.default_rng(3)
    n = 2000
    t = rng.uniform(0.0, 150.0, n)
    light = np.column_stack([rng.uniform(-50, 50, (n, 2)), rng.uniform(2, 6, n)])
    # the camera at a random distance (0.5 to 100 m) and bearing from the light
    bearing = rng.uniform(-np.pi, np.pi, n)
    dist = rng.uniform(0.5, 100.0, n)
    cam = np.column_stack(
        [light[:, 0] + dist * np.cos(bearing), light[:, 1] + dist * np.sin(bearing), rng.uniform(0, 3, n)]
    )
    facing = rng.uniform(-np.pi, np.pi, n)
    sd = rng.uniform(-2.0, 2.0, n)
    footprint = rng.uniform(0.05, 1.5, n)
    x = np.column_stack([t, light, cam, facing, sd, footprint])
    x = x.astype(np.float32).astype(np.float64)
    out = _run(x)

    np.testing.assert_allclose(out[:, 0], 0.45 + 0.55 * np.exp(-x[:, 0] / 50.0), rtol=1e-5)

    # the angle between the light's facing and the direction to the camera, in xy
    off = np.degrees(
        np.abs((np.arctan2(x[:, 5] - x[:, 2], x[:, 4] - x[:, 1]) - x[:, 7] + np.pi) % (2 * np.pi) - np.pi)
    )
    cos_full, cos_cut = math.cos(math.radians(45.0)), math.cos(math.radians(75.0))
    want = np.clip((np.cos(np.radians(off)) - cos_cut) / (cos_full - cos_cut), 0.0, 1.0)
    np.testing.assert_allclose(out[:, 1], want, atol=2e-5)
    assert np.all(out[off < 44.9, 1] == 1.0) and np.all(out[off > 75.1, 1] == 0.0)
    assert ((off > 46) & (off < 74)).sum() > 100  # the fade is exercised

    np.testing.assert_allclose(out[:, 2], np.clip(0.5 - x[:, 8] / x[:, 9], 0.0, 1.0), atol=1e-6)
    np.testing.assert_array_equal(out[:, 3], (x[:, 8] <= 0).astype(float))


# A literal copy of the palette (linear RGB): a change to a colour must change this table too.
FACES = {
    AGENT_VEHICLE: [(0.55, 0.78, 1.00), (0.08, 0.16, 0.50), (0.22, 0.45, 0.92), (0.30, 0.32, 0.78), (0.80, 0.88, 1.00), (0.05, 0.08, 0.25)],
    AGENT_PEDESTRIAN: [(1.00, 0.82, 0.45), (0.55, 0.28, 0.04), (0.95, 0.55, 0.12), (0.85, 0.40, 0.20), (1.00, 0.92, 0.72), (0.30, 0.15, 0.02)],
    AGENT_CYCLIST: [(0.62, 1.00, 0.62), (0.08, 0.42, 0.12), (0.22, 0.80, 0.28), (0.30, 0.62, 0.45), (0.82, 1.00, 0.82), (0.04, 0.20, 0.06)],
}  # fmt: skip
"""front, back, left, right, top, bottom of each agent kind."""
LINES = [(0.92, 0.92, 0.92), (0.95, 0.78, 0.10), (0.62, 0.62, 0.66), (1.00, 1.00, 1.00)]
"""lane divider, centre line, road edge, stop line."""
LIGHTS = {
    LIGHT_RED: (1.00, 0.08, 0.08),
    LIGHT_YELLOW: (1.00, 0.85, 0.10),
    LIGHT_GREEN: (0.10, 1.00, 0.35),
    LIGHT_OFF: (0.12, 0.12, 0.12),
}
FLAT = {"SKY": (0.55, 0.70, 0.90), "GROUND": (0.26, 0.26, 0.28), "WALL": (0.62, 0.50, 0.42)}
SIZES = {
    "LIGHT_RADIUS_M": 0.40,
    "LIGHT_FULL_DEG": 45.0,
    "LIGHT_CUTOFF_DEG": 75.0,
    "SHADE_MIN": 0.45,
    "SHADE_DISTANCE_M": 50.0,
}


def test_palette_literal():
    faces = [
        palette.FACE_FRONT,
        palette.FACE_BACK,
        palette.FACE_LEFT,
        palette.FACE_RIGHT,
        palette.FACE_TOP,
        palette.FACE_BOTTOM,
    ]
    assert faces == list(range(6))
    for kind, rows in FACES.items():
        np.testing.assert_allclose(
            palette.AGENT_FACE_COLOR[kind], rows, atol=1e-7, err_msg=f"agent kind {kind}"
        )
    np.testing.assert_allclose(palette.LINE_COLOR, LINES, atol=1e-7)
    for state, rgb in LIGHTS.items():
        np.testing.assert_allclose(palette.LIGHT_COLOR[state], rgb, atol=1e-7, err_msg=f"light {state}")
    for name, rgb in FLAT.items():
        assert getattr(palette, name) == rgb, name
    for name, value in SIZES.items():
        assert getattr(palette, name) == value, name


def test_palette_reads_as_documented():
    """docs/renderer.md: one hue per agent type (vehicle blue, pedestrian orange, cyclist green),
    the front light and the back dark, left and right different, the top pale."""
    c = palette.AGENT_FACE_COLOR
    hue = {AGENT_VEHICLE: 2, AGENT_PEDESTRIAN: 0, AGENT_CYCLIST: 1}  # the dominant channel
    for kind, channel in hue.items():
        for face in range(6):
            assert np.argmax(c[kind, face]) == channel, (kind, face)
        assert c[kind, palette.FACE_FRONT].sum() > c[kind, palette.FACE_BACK].sum()
        assert not np.allclose(c[kind, palette.FACE_LEFT], c[kind, palette.FACE_RIGHT])
        assert c[kind, palette.FACE_TOP].min() > max(c[kind, f].min() for f in range(4))


def test_camera_rig_defaults_are_table_3_and_the_documented_clip():
    rig = CameraRig()
    assert [c.name for c in rig.cameras] == ["front", "front_left", "front_right", "back"]
    assert (rig.focal_px, rig.sensor_width, rig.sensor_height) == (1545.0, 1920, 1080)
    assert (rig.near, rig.far) == (0.1, 120.0)  # docs/renderer.md
    assert rig.principal_point is None


@pytest.mark.parametrize("distance", [60.0, 95.0, 108.0, 117.0, 125.0])
def test_a_face_fades_over_the_last_15_percent_before_far(distance):
    """A wall-sized box face-on at ``distance`` m: its colour is the palette's back face shaded
    by 0.45 + 0.55 exp(-t / 50), composited over the sky with alpha clamp((120 - t) / 18, 0, 1)
    (docs/renderer.md: geometry fades out over the last 15 % before `far`, 120 m)."""
    from tests.render.test_rasterizer import EGO, FRONT, render_one

    rig = CameraRig(cameras=[FRONT], width=96, height=54)
    renderer = Renderer([empty_map()], layout(1, 8), rig)
    # the face nearest the camera (1.5 m up at the origin, facing +x) lies ``distance`` m ahead
    wall = (distance + 0.5, 0.0, 0.0, 0.0, 1.0, 200.0, 60.0, AGENT_VEHICLE)
    img = render_one(renderer, boxes(8, {0: EGO, 1: wall}))[0].astype(float) / 255.0
    row, col = 20, 48  # above the horizon: sky behind
    focal = 1545.0 * 96 / 1920
    ray = np.array([focal, 48.0 - (col + 0.5), 27.0 - (row + 0.5)])  # principal point (48, 27)
    t = distance * np.linalg.norm(ray) / focal
    alpha = np.clip((120.0 - t) / 18.0, 0.0, 1.0)
    face = np.asarray(palette.AGENT_FACE_COLOR[AGENT_VEHICLE, palette.FACE_BACK]) * (
        0.45 + 0.55 * np.exp(-t / 50.0)
    )
    want = alpha * face + (1 - alpha) * np.asarray(palette.SKY)
    np.testing.assert_allclose(img[row, col], want, atol=2.5 / 255)


def _line_map(kind: str):
    from pictura.maps.roadmap import pack_polylines

    pts, off = pack_polylines([np.array([[6.0, -20.0, 0.0], [6.0, 20.0, 0.0]])])
    if kind in ("lane_divider", "centre_line"):
        return empty_map(marking_points=pts, marking_offsets=off, marking_kind=np.array([MARKINGS[kind]], np.int32))
    if kind == "road_edge":
        return empty_map(road_edge_points=pts, road_edge_offsets=off)
    lane, lane_off = pack_polylines([np.array([[0.0, -30.0, 0.0], [0.0, -25.0, 0.0]])])
    return empty_map(
        lane_points=lane.astype(np.float32), lane_offsets=lane_off, lane_width=np.array([3.5], np.float32),
        lane_speed_limit=np.zeros(1, np.float32), lane_junction=np.full(1, -1, np.int32),
        lane_successor_offsets=np.zeros(2, np.int32), lane_successors=np.zeros(0, np.int32),
        stop_line_points=pts.reshape(1, 2, 3).astype(np.float32), stop_line_lane=np.array([0], np.int32),
        stop_line_light=np.array([-1], np.int32),
    )  # fmt: skip


MARKINGS = {"lane_divider": MARKING_LANE_DIVIDER, "centre_line": MARKING_CENTRE_LINE}


@pytest.mark.parametrize(
    ("kind", "rgb", "width"),
    [
        ("lane_divider", (0.92, 0.92, 0.92), 0.15),
        ("centre_line", (0.95, 0.78, 0.10), 0.15),
        ("road_edge", (0.62, 0.62, 0.66), 0.20),
        ("stop_line", (1.00, 1.00, 1.00), 0.40),
    ],
)
def test_each_ground_line_is_drawn_in_its_colour_and_width(kind, rgb, width):
    """docs/renderer.md: ground lines in their kind's colour (unshaded) and painted width: a
    line across the view 6 m ahead of a camera 1.5 m up covers the image rows of its band,
    309 x 1.5 x (1 / (6 - w / 2) - 1 / (6 + w / 2)) px (focal 309 px at 384 x 216, horizon at
    row 108), in that colour where it covers a whole pixel."""
    from tests.render.test_rasterizer import EGO, FRONT, render_one

    rig = CameraRig(cameras=[FRONT], width=384, height=216)
    img = render_one(Renderer([_line_map(kind)], layout(1, 8), rig), boxes(8, {0: EGO}))[0].astype(float)
    column = img[109:, 192]  # the ground below the horizon, straight ahead
    ground = palette.to_uint8(palette.GROUND).astype(float)
    colour = palette.to_uint8(rgb).astype(float)
    channel = int(np.argmax(np.abs(colour - ground)))
    coverage = (column[:, channel] - ground[channel]) / (colour[channel] - ground[channel])
    band = 309.0 * 1.5 * (1 / (6 - width / 2) - 1 / (6 + width / 2))
    assert abs(coverage.sum() - band) < 0.3, (coverage.sum(), band)
    np.testing.assert_allclose(img[185, 192], colour, atol=1.0)  # row 185 lies inside every band
