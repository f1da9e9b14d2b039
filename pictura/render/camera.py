"""The ego-mounted camera rig: per-camera extrinsics plus shared pinhole intrinsics.

Frames: the ego frame has x forward, y left, z up (m), origin at the box bottom centre; a
camera's yaw turns it about z (positive = to the left) and its pitch about its own y axis
(positive = nose down, the right-hand rotation about the left axis). Image pixels have u to
the right and v down, with pixel (i, j) covering [i, i + 1) x [j, j + 1).

Intrinsics are given for the physical sensor (Table 3: 1920x1080, focal 1545 px) and scaled
to the render resolution: ``focal = focal_px * width / sensor_width`` and the principal point
by ``width / sensor_width`` (x) and ``height / sensor_height`` (y).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_RESOLUTION = 4096
"""Largest accepted render width or height (px)."""


@dataclass
class Camera:
    """One camera of the rig, in the ego frame (x forward, y left, z up; m, deg)."""

    name: str
    x: float
    y: float
    z: float
    yaw_deg: float
    pitch_deg: float = 0.0


def default_cameras() -> list[Camera]:
    """The paper's Table 3 rig (nuPlan-like): front, front_left, front_right, back."""
    return [
        Camera("front", 1.66, -0.01, 1.49, 0.0),
        Camera("front_left", 1.63, 0.12, 1.48, 55.0),
        Camera("front_right", 1.62, -0.16, 1.49, -55.0),
        Camera("back", -0.47, 0.02, 1.43, 180.0),
    ]


class CameraRig:
    """Cameras sharing one set of intrinsics, rendered at ``width x height`` pixels.

    Args:
        cameras: the cameras (``Camera`` objects or dicts of its fields); None = Table 3's four.
        width, height: render resolution (px), 1..4096 each. Default 96x54 (Table 3).
        focal_px: focal length in sensor pixels (Table 3: 1545).
        sensor_width, sensor_height: the sensor the focal and principal point refer to (px).
        principal_point: (cx, cy) in sensor pixels; None = the sensor centre.
        near, far: clip distances (m) along each pixel ray; nothing nearer than ``near`` or
            beyond ``far`` is drawn (the ground and sky still fill the view). Default far: 120 m.
    """

    def __init__(
        self,
        cameras: list[Camera] | list[dict] | None = None,
        width: int = 96,
        height: int = 54,
        focal_px: float = 1545.0,
        sensor_width: int = 1920,
        sensor_height: int = 1080,
        principal_point: tuple[float, float] | None = None,
        near: float = 0.1,
        far: float = 120.0,
    ) -> None:
        if cameras is None:
            cams = default_cameras()
        else:
            cams = [c if isinstance(c, Camera) else Camera(**dict(c)) for c in cameras]
        if len(cams) == 0:
            raise ValueError("cameras: the rig needs at least one camera, got an empty list")
        names = [c.name for c in cams]
        if len(set(names)) != len(names):
            raise ValueError(f"cameras: names must be unique, got {names}")
        for c in cams:
            for key in ("x", "y", "z", "yaw_deg", "pitch_deg"):
                if not math.isfinite(float(getattr(c, key))):
                    raise ValueError(f"cameras: {c.name}.{key} must be finite, got {getattr(c, key)}")
            if abs(float(c.pitch_deg)) >= 89.0:
                raise ValueError(f"cameras: {c.name}.pitch_deg must be within (-89, 89), got {c.pitch_deg}")
        if not (focal_px > 0 and math.isfinite(focal_px)):
            raise ValueError(f"focal_px must be > 0, got {focal_px}")
        for key, val in (("sensor_width", sensor_width), ("sensor_height", sensor_height)):
            if int(val) < 1:
                raise ValueError(f"{key} must be >= 1, got {val}")
        if not (near > 0 and math.isfinite(near)):
            raise ValueError(f"near must be > 0, got {near}")
        if not (near < far):
            raise ValueError(f"near must be < far, got near={near}, far={far}")
        if principal_point is not None:
            if len(principal_point) != 2:
                raise ValueError(f"principal_point must be (cx, cy), got {principal_point}")
            principal_point = (float(principal_point[0]), float(principal_point[1]))
        self.cameras = cams
        self.focal_px = float(focal_px)
        self.sensor_width = int(sensor_width)
        self.sensor_height = int(sensor_height)
        self.principal_point = principal_point
        self.near = float(near)
        self.far = float(far)
        self._width = 0
        self._height = 0
        self.set_resolution(width, height)

    def set_resolution(self, width: int, height: int) -> None:
        """Change the render resolution (px); focal and principal point rescale with it."""
        for key, val in (("width", width), ("height", height)):
            if int(val) != val or not 1 <= int(val) <= MAX_RESOLUTION:
                raise ValueError(f"{key} must be an integer in 1..{MAX_RESOLUTION}, got {val}")
        self._width = int(width)
        self._height = int(height)

    @property
    def num_cameras(self) -> int:
        return len(self.cameras)

    @property
    def width(self) -> int:
        return self._width

    @property
    def height(self) -> int:
        return self._height

    @property
    def focal(self) -> float:
        """Focal length at the render resolution (px)."""
        return self.focal_px * self._width / self.sensor_width

    @property
    def principal(self) -> tuple[float, float]:
        """(cx, cy) at the render resolution (px)."""
        if self.principal_point is None:
            return 0.5 * self._width, 0.5 * self._height
        cx, cy = self.principal_point
        return cx * self._width / self.sensor_width, cy * self._height / self.sensor_height

    def fov_deg(self) -> tuple[float, float]:
        """Full horizontal and vertical field of view (deg) with a centred principal point."""
        fx = self.focal_px
        return (
            math.degrees(2 * math.atan(0.5 * self.sensor_width / fx)),
            math.degrees(2 * math.atan(0.5 * self.sensor_height / fx)),
        )

    def extrinsics(self) -> np.ndarray:
        """``(C, 5)`` float32: x, y, z (m, ego frame), yaw, pitch (rad) per camera."""
        return np.array(
            [[c.x, c.y, c.z, math.radians(c.yaw_deg), math.radians(c.pitch_deg)] for c in self.cameras],
            np.float32,
        )

    def __repr__(self) -> str:
        names = ", ".join(c.name for c in self.cameras)
        return f"CameraRig([{names}], {self._width}x{self._height}, focal={self.focal:.2f}px)"

