"""A camera mounted off the ego's centre line, with its own yaw, on an ego that is itself turned
and away from the origin: the drawn box matches the NumPy projection from the camera's world
pose (ego pose composed with the rig's extrinsics, REFERENCE.md Table 3 conventions: x forward,
y left, yaw about z)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pictura.maps.roadmap import AGENT_VEHICLE
from pictura.render import Camera, CameraRig, Renderer
from tests.render.conftest import box_corners, boxes, convex_hull, empty_map, fill_polygon, layout, project
from tests.render.test_rasterizer import is_background, render_one

EGO_X, EGO_Y, EGO_HEADING = 3.0, -2.0, 0.7


@pytest.mark.parametrize(("mount_y", "mount_yaw_deg"), [(0.8, 0.0), (-0.8, 30.0), (0.5, -55.0)])
def test_off_centre_camera_on_a_turned_ego_sees_what_its_world_pose_projects(mount_y, mount_yaw_deg):
    camera = Camera("mounted", 1.2, mount_y, 1.5, mount_yaw_deg)
    rig = CameraRig(cameras=[camera], width=96, height=54)
    renderer = Renderer([empty_map()], layout(1, 8), rig, antialias=False)
    c, s = math.cos(EGO_HEADING), math.sin(EGO_HEADING)
    cam_pos = np.array([EGO_X + c * 1.2 - s * mount_y, EGO_Y + s * 1.2 + c * mount_y, 1.5])
    cam_yaw = EGO_HEADING + math.radians(mount_yaw_deg)
    # a box 12 m ahead of the camera and 1.5 m to its left, turned, so an error in the mount's
    # lateral offset or its yaw moves or turns the silhouette by several pixels
    ahead = cam_pos[:2] + 12.0 * np.array([math.cos(cam_yaw), math.sin(cam_yaw)])
    ahead += 1.5 * np.array([-math.sin(cam_yaw), math.cos(cam_yaw)])
    target = (ahead[0], ahead[1], 0.0, cam_yaw + 0.4, 4.5, 2.0, 1.6, AGENT_VEHICLE)
    ego = (EGO_X, EGO_Y, 0.0, EGO_HEADING, 0.8, 0.8, 1.5, AGENT_VEHICLE)
    img = render_one(renderer, boxes(8, {0: ego, 1: target}))[0]
    hull = convex_hull(project(box_corners(*target[:7]), cam_pos, cam_yaw, rig.focal, *rig.principal))
    expected = fill_polygon(hull, 96, 54)
    drawn = ~is_background(img)
    iou = (drawn & expected).sum() / (drawn | expected).sum()
    assert expected.sum() > 50 and iou >= 0.95


def test_the_camera_rides_at_the_ego_height_plus_its_mount():
    # ego and target on a deck 6 m up: the camera sits 1.5 m above the ego (7.5 m), so the target
    # 12 m ahead projects as from 1.5 m, not from 1.5 m above the ground under the deck
    camera = Camera("mounted", 0.0, 0.0, 1.5, 0.0)
    rig = CameraRig(cameras=[camera], width=96, height=54)
    renderer = Renderer([empty_map()], layout(1, 8), rig, antialias=False)
    deck = 6.0
    target = (12.0, 0.0, deck, 0.3, 4.5, 2.0, 1.6, AGENT_VEHICLE)
    ego = (0.0, 0.0, deck, 0.0, 0.8, 0.8, 1.5, AGENT_VEHICLE)
    img = render_one(renderer, boxes(8, {0: ego, 1: target}))[0]
    cam_pos = np.array([0.0, 0.0, deck + 1.5])
    hull = convex_hull(project(box_corners(*target[:7]), cam_pos, 0.0, rig.focal, *rig.principal))
    expected = fill_polygon(hull, 96, 54)
    drawn = ~is_background(img)
    iou = (drawn & expected).sum() / (drawn | expected).sum()
    assert expected.sum() > 50 and iou >= 0.95
