"""OpenDRIVE input that CARLA loads loads here too: a tapering lane whose width cubic dips a few
millimetres below zero at the road's end (clamped to 0 with a warning naming road, lane and s),
and a lane of zero width over its whole road (kept, as CARLA gives it waypoints). Lane centres
are checked against CARLA's waypoint definition on a straight road: reference point + t * left
normal, t the inner border plus half the lane's width polynomial."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pictura.maps.opendrive import build_road_map
from pictura.maps.opendrive.lanes import NEGATIVE_WIDTH_TOLERANCE_M, NegativeWidthWarning
from tests.maps.test_opendrive_geometry import write_xodr

X0, Y0, HDG = 10.0, -5.0, 0.3


def _lane_offsets(path, lane_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(s, t) of every point of the map's chunks of ``lane_id`` in the road's (s, t) frame."""
    road_map, origin = build_road_map(path)
    chunks = [i for i, lid in enumerate(origin.lane_id) if lid == lane_id]
    assert chunks, f"lane {lane_id} has no chunk"
    pts = np.concatenate([road_map.lane(i) for i in chunks])[:, :2].astype(np.float64)
    d = pts - [X0, Y0]
    s = d @ [math.cos(HDG), math.sin(HDG)]
    t = d @ [-math.sin(HDG), math.cos(HDG)]
    return s, t


def test_taper_dipping_below_zero_is_clamped_with_a_warning(tmp_path):
    length, a, end = 191.4, 3.5, -0.006
    b = (end - a) / length  # linear taper reaching -0.006 m at the road's end
    path = write_xodr(tmp_path, "<line/>", length, x=X0, y=Y0, hdg=HDG,
                      right_widths=f'<width sOffset="0" a="{a}" b="{b!r}" c="0" d="0"/>')
    with pytest.warns(NegativeWidthWarning, match=r"road 1, <lane> at line \d+: lane -1 width -0\.006 m is negative "
                      r"at s=191\.40: clamped to 0"):
        s, t = _lane_offsets(path, -1)
    carla_t = -0.5 * (a + b * s)  # CARLA: half the polynomial's width, unclamped
    assert np.abs(t - carla_t).max() < 0.01 + abs(end) / 2  # simplification tolerance + the clamp
    assert s.min() < 1.0 and s.max() > length - 1.0  # the whole road, up to its end


def test_dip_beyond_the_tolerance_is_an_error(tmp_path):
    deep = -2 * NEGATIVE_WIDTH_TOLERANCE_M
    path = write_xodr(tmp_path, "<line/>", 20.0, right_widths=f'<width sOffset="0" a="3.0" b="{(deep - 3.0) / 20.0!r}" c="0" d="0"/>')
    with pytest.raises(ValueError, match=r"lane -1 width -0\.100 m is negative at s=20\.00 \(beyond the 0\.05 m"):
        build_road_map(path)


def test_zero_width_lane_is_kept_on_its_inner_border(tmp_path):
    path = write_xodr(tmp_path, "<line/>", 40.0, x=X0, y=Y0, hdg=HDG,
                      right_widths='<width sOffset="0" a="0" b="0" c="0" d="0"/>')
    s, t = _lane_offsets(path, -1)
    assert np.abs(t).max() < 1e-3  # CARLA's waypoints: the reference line (inner border 0 + 0 / 2)
    assert s.min() < 1e-3 and s.max() > 40.0 - 1e-3
