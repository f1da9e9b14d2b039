"""Parked cars: the snapshot rows after the agent slots are drawn exactly like an agent box in
the same place, only for the ego's own world, and occlude like agents."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps.roadmap import AGENT_VEHICLE
from pictura.render import Camera, CameraRig, Renderer
from pictura.sim.snapshot import BOX_ROW_FLOATS, WorldLayout, box_row
from tests.render.conftest import empty_map

FRONT = Camera("front", 0.0, 0.0, 1.5, 0.0)
EGO = box_row(x=0.0, y=0.0, z=0.0, heading=0.0, length=0.8, width=0.8, height=1.5, kind=AGENT_VEHICLE)
CAR = box_row(x=15.0, y=1.0, z=0.0, heading=0.3, length=4.5, width=1.9, height=1.5, kind=AGENT_VEHICLE)


def _renderer(worlds: int, slots: int, parked: int) -> Renderer:
    lay = WorldLayout.uniform([0] * worlds, slots, [0], parked_per_world=parked)
    return Renderer([empty_map()], lay, CameraRig(cameras=[FRONT], width=96, height=54))


def _render(r: Renderer, rows: dict[int, tuple], ego: int = 0) -> np.ndarray:
    box = np.full((1, r.layout.box_count, BOX_ROW_FLOATS), -1.0, np.float32)
    for k, row in rows.items():
        box[0, k] = row
    return r.render_numpy(box, np.zeros((1, 0), np.int32), np.array([[0, ego]]))[0, 0]


def test_parked_row_draws_like_an_agent_box():
    # 2 worlds x 3 slots, 2 parked rows per world: world 0's parked rows are 6, 7; world 1's 8, 9
    r = _renderer(2, 3, 2)
    as_agent = _render(r, {0: EGO, 1: CAR})
    as_parked = _render(r, {0: EGO, 7: CAR})
    empty = _render(r, {0: EGO})
    assert not np.array_equal(as_agent, empty)
    np.testing.assert_array_equal(as_parked, as_agent)
    # another world's parked car is never drawn
    np.testing.assert_array_equal(_render(r, {0: EGO, 9: CAR}), empty)
    # ... but is for an ego of that world
    np.testing.assert_array_equal(_render(r, {3: EGO, 9: CAR}, ego=3), as_agent)


def test_parked_rows_shape_checks_and_occlusion():
    r = _renderer(1, 2, 3)
    assert r.layout.box_count == 5
    with pytest.raises(ValueError, match="agent_box"):
        r.render_numpy(np.zeros((1, 2, BOX_ROW_FLOATS), np.float32), np.zeros((1, 0), np.int32), np.array([[0, 0]]))
    box = np.full((1, 5, BOX_ROW_FLOATS), -1.0, np.float32)
    box[0, 0] = EGO
    box[0, 3] = CAR
    with pytest.raises(ValueError, match="slot 3"):
        r.validate_requests(box, np.array([[0, 3]]))  # a parked row is never an ego
    # a parked car in front of a target agent hides it
    target = box_row(x=30.0, y=1.0, z=0.0, heading=0.0, length=2.0, width=1.0, height=1.2, kind=AGENT_VEHICLE)
    box[0, 1] = target
    assert r.occlusion_fraction(box[0], np.zeros(0, np.int32), 0, 1) < 0.05
    assert r.occlusion_fraction(box[0], np.zeros(0, np.int32), 0, 3) == pytest.approx(1.0)
