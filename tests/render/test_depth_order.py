"""Depth order at a box's edge: a near car whose side is under a pixel wide on screen, in front
of a larger box 1.5 m behind it, against the exact visible-area fraction (NumPy clipping).

At the near car's silhouette edge the pixel-centre ray can pass beside the car; its fragment's
depth must still put it in front of the box behind (`fragments.box_depth`), so each edge pixel
shows the near car's share of the pixel and the far box's the rest. The share is read from the
renders themselves: the near car alone over black and over white gives its coverage a and its
colour C_n, the far box alone its colour C_f, and the pixel of both is a C_n + (1 - a) C_f
when the near car is in front (C_f alone when it is drawn behind).
"""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps.roadmap import AGENT_PEDESTRIAN, AGENT_VEHICLE
from tests.render.conftest import box_corners, boxes, front_silhouette, polygon_pixel_area
from tests.render.test_rasterizer import EGO, front_renderer, render_one

W, H = 96, 54
WITHIN = 0.02
NEAR_CARS = [  # x, y, z, heading, length, width, height: the right side 0.54-0.59 px wide on screen
    (8.0, 1.2, 0.0, 0.013, 4.5, 2.0, 1.5),
    (8.0, 1.212, 0.0, 0.015, 4.5, 2.0, 1.5),
    (12.0, 1.856, 0.0, 0.09, 4.5, 2.0, 1.5),
    (16.0, 2.45, 0.0, 0.065, 4.5, 2.0, 1.5),
]


def far_box(near) -> tuple[float, ...]:
    """A box 2 m deep and 8 m wide whose front face lies 1.5 m behind the near car's farthest
    corner, shifted towards the image centre so that it fills the pixels around the car's side."""
    front = box_corners(*near[:7])[:, 0].max() + 1.5
    return (front + 1.0, near[1] - 1.0, 0.0, 0.0, 2.0, 8.0, 3.0)


def renders(rows: dict, level: float) -> np.ndarray:
    r = front_renderer(width=W, height=H, sky=(level,) * 3, ground=(level,) * 3)
    return render_one(r, boxes(8, {0: EGO, **rows}))[0].astype(np.float64) / 255.0


@pytest.mark.parametrize("near", NEAR_CARS)
def test_a_thin_sided_car_stays_in_front_of_the_box_behind_it(near):
    far = far_box(near)
    assert box_corners(*far[:7])[:, 0].min() - box_corners(*near[:7])[:, 0].max() == pytest.approx(1.5)
    near_row, far_row = {1: (*near, AGENT_VEHICLE)}, {2: (*far, AGENT_PEDESTRIAN)}
    both = renders({**near_row, **far_row}, 0.0)
    near_black, near_white = renders(near_row, 0.0), renders(near_row, 1.0)
    far_alone = renders(far_row, 0.0)
    coverage = 1.0 - (near_white - near_black).mean(-1)
    r = front_renderer(width=W, height=H)
    near_hull = front_silhouette(r.rig.focal, r.rig.principal, near)
    far_hull = front_silhouette(r.rig.focal, r.rig.principal, far)
    x0, y0 = np.floor(near_hull.min(0)).astype(int)
    x1, y1 = np.ceil(near_hull.max(0)).astype(int)
    errors = []
    for y in range(max(y0, 0), min(y1, H)):
        for x in range(max(x0, 0), min(x1, W)):
            exact = polygon_pixel_area(near_hull, x, y)  # all of it visible: the car is in front
            if not 0.0 < exact < 1.0 or polygon_pixel_area(far_hull, x, y) < 1.0 or coverage[y, x] < 0.1:
                continue  # an edge pixel of the car over the far box, with enough car to read its colour
            near_color, far_color = near_black[y, x] / coverage[y, x], far_alone[y, x]
            step = near_color - far_color
            share = (both[y, x] - far_color) @ step / (step @ step)
            errors.append(abs(share - exact))
    assert len(errors) >= 5
    assert max(errors) <= WITHIN
