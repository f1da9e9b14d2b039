"""CameraRig: defaults from Table 3, intrinsics scaling, and validation errors."""

from __future__ import annotations

import math

import pytest

from pictura.render import Camera, CameraRig


def test_defaults_follow_table3():
    rig = CameraRig()
    assert [c.name for c in rig.cameras] == ["front", "front_left", "front_right", "back"]
    assert (rig.width, rig.height, rig.num_cameras) == (96, 54, 4)
    assert rig.cameras[1].yaw_deg == 55.0 and rig.cameras[3].yaw_deg == 180.0
    fov_h, fov_v = rig.fov_deg()
    assert fov_h == pytest.approx(63.7, abs=0.1) and fov_v == pytest.approx(38.5, abs=0.1)
    assert rig.focal == pytest.approx(1545.0 * 96 / 1920)
    assert rig.principal == (48.0, 27.0)


def test_resolution_and_principal_point_scale():
    rig = CameraRig(principal_point=(960.0, 560.0))
    rig.set_resolution(192, 108)
    assert rig.focal == pytest.approx(1545.0 / 10)
    assert rig.principal == pytest.approx((96.0, 56.0))


def test_cameras_from_dicts():
    rig = CameraRig(cameras=[{"name": "a", "x": 1.0, "y": 0.0, "z": 1.5, "yaw_deg": 10.0}])
    assert rig.cameras == [Camera("a", 1.0, 0.0, 1.5, 10.0)]
    assert math.isclose(rig.extrinsics()[0, 3], math.radians(10.0), rel_tol=1e-6)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"cameras": []}, "cameras"),
        ({"width": 0}, "width"),
        ({"height": 5000}, "height"),
        ({"focal_px": 0.0}, "focal_px"),
        ({"near": 5.0, "far": 5.0}, "near"),
        ({"near": -1.0}, "near"),
    ],
)
def test_validation_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        CameraRig(**kwargs)


def test_set_resolution_validates():
    rig = CameraRig()
    with pytest.raises(ValueError, match="width"):
        rig.set_resolution(4097, 10)
