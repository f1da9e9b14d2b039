"""Parked cars: the snapshot rows after the agent slots are drawn exactly like an agent box in
the same place, only for the ego's own world, and occlude like agents."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps.roadmap import AGENT_VEHICLE
from pictura.render import Camera, CameraRig, Renderer
from pictura.sim.snapshot import BOX_WIDTH, WorldLayout
from tests.render.conftest import empty_map

FRONT = Camera("front", 0.0, 0.0, 1.5, 0.0)
EGO = (0.0, 0.0, 0.0, 0.0, 0.8, 0.8, 1.5, AGENT_VEHICLE)
CAR = (15.0, 1.0, 0.0, 0.3, 4.5, 1.9, 1.5, AGENT_VEHICLE)


def _renderer(worlds: int, slots: int, parked: int) -> Renderer:
    lay = WorldLayout.uniform([0] * worlds, slots, [0], parked_per_world=parked)
    return Renderer([empty_map()], lay, CameraRig(cameras=[FRONT], width=96, height=54))


def _render(r: Renderer, rows: dict[int, tuple], ego: int = 0) -> np.ndarray:
    box = np.full((1, r.layout.box_count, BOX_WIDTH), -1.0, np.float32)
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
        r.render_numpy(np.zeros((1, 2, BOX_WIDTH), np.float32), np.zeros((1, 0), np.int32), np.array([[0, 0]]))
    box = np.full((1, 5, BOX_WIDTH), -1.0, np.float32)
    box[0, 0] = EGO
    box[0, 3] = CAR
    with pytest.raises(ValueError, match="slot 3"):
        r.validate_requests(box, np.array([[0, 3]]))  # a parked row is never an ego
    # a parked car in front of a target agent hides it
    target = (30.0, 1.0, 0.0, 0.0, 2.0, 1.0, 1.2, AGENT_VEHICLE)
    box[0, 1] = target
    assert r.occlusion_fraction(box[0], np.zeros(0, np.int32), 0, 1) < 0.05
    assert r.occlusion_fraction(box[0], np.zeros(0, np.int32), 0, 3) == pytest.approx(1.0)
