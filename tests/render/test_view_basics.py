"""What every view shows by default (docs/renderer.md "What is drawn"): plain blue sky above the
horizon, plain grey ground below it, and anything from 0.1 m in front of the camera on."""

from __future__ import annotations

import numpy as np

from pictura.maps.roadmap import AGENT_VEHICLE
from tests.render.conftest import boxes
from tests.render.test_rasterizer import EGO, front_renderer, is_background, render_one


def test_sky_is_blue_above_the_horizon_and_the_ground_grey_below():
    img = render_one(front_renderer(), boxes(8, {0: EGO}))[0].astype(int)
    sky, ground = img[0].reshape(-1, 3), img[-1].reshape(-1, 3)
    assert np.all(sky == sky[0]) and np.all(ground == ground[0])  # plain: one colour each
    r, g, b = sky[0]
    assert b > r + 40 and b > g  # blue
    assert np.ptp(ground[0]) <= 10 and 30 < ground[0].mean() < 200  # a mid grey


def test_a_box_half_a_metre_in_front_of_the_camera_is_drawn():
    # the camera sits at the ego's origin, 1.5 m up, facing +x; the box spans x 0.5 .. 0.8 m
    near_box = (0.65, 0.0, 0.0, 0.0, 0.3, 3.0, 3.0, AGENT_VEHICLE)
    img = render_one(front_renderer(), boxes(8, {0: EGO, 1: near_box}))[0]
    assert not is_background(img)[27, 48]  # the view's centre is the box
