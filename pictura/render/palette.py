"""Colours and sizes of everything the rasterizer draws (one source of truth for kernels and docs).

All colours are linear RGB in [0, 1]; the kernels quantise to uint8 at the end.
"""

from __future__ import annotations

import numpy as np

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

SKY = (0.55, 0.70, 0.90)
GROUND = (0.26, 0.26, 0.28)
WALL = (0.62, 0.50, 0.42)

# Cuboid faces in the box frame, in this order (the kernels index by it).
FACE_FRONT, FACE_BACK, FACE_LEFT, FACE_RIGHT, FACE_TOP, FACE_BOTTOM = range(6)
NUM_FACES = 6

AGENT_FACE_COLOR = np.zeros((3, NUM_FACES, 3), np.float32)
"""``(agent kind, face, rgb)``: each kind one hue, each face its own shade of it."""
AGENT_FACE_COLOR[AGENT_VEHICLE] = [
    (0.55, 0.78, 1.00),  # front: light
    (0.08, 0.16, 0.50),  # back: dark
    (0.22, 0.45, 0.92),  # left
    (0.30, 0.32, 0.78),  # right (purple-shifted so left/right differ)
    (0.80, 0.88, 1.00),  # top
    (0.05, 0.08, 0.25),  # bottom
]
AGENT_FACE_COLOR[AGENT_PEDESTRIAN] = [
    (1.00, 0.82, 0.45),
    (0.55, 0.28, 0.04),
    (0.95, 0.55, 0.12),
    (0.85, 0.40, 0.20),
    (1.00, 0.92, 0.72),
    (0.30, 0.15, 0.02),
]
AGENT_FACE_COLOR[AGENT_CYCLIST] = [
    (0.62, 1.00, 0.62),
    (0.08, 0.42, 0.12),
    (0.22, 0.80, 0.28),
    (0.30, 0.62, 0.45),
    (0.82, 1.00, 0.82),
    (0.04, 0.20, 0.06),
]

# Ground polylines: the kind index the kernels use for colour and width.
LINE_LANE_DIVIDER, LINE_CENTRE_LINE, LINE_ROAD_EDGE, LINE_STOP_LINE = 0, 1, 2, 3
LINE_COLOR = np.array(
    [
        (0.92, 0.92, 0.92),  # lane divider: white
        (0.95, 0.78, 0.10),  # centre line: yellow
        (0.62, 0.62, 0.66),  # road edge: pale grey
        (1.00, 1.00, 1.00),  # stop line: bright white
    ],
    np.float32,
)
LINE_WIDTH_M = np.array([0.15, 0.15, 0.20, 0.40], np.float32)
"""Painted width of each line kind (m); fixed in metres, so it shrinks with depth on screen."""
MARKING_TO_LINE = {MARKING_LANE_DIVIDER: LINE_LANE_DIVIDER, MARKING_CENTRE_LINE: LINE_CENTRE_LINE}

LIGHT_COLOR = np.zeros((4, 3), np.float32)
LIGHT_COLOR[LIGHT_RED] = (1.00, 0.08, 0.08)
LIGHT_COLOR[LIGHT_YELLOW] = (1.00, 0.85, 0.10)
LIGHT_COLOR[LIGHT_GREEN] = (0.10, 1.00, 0.35)
LIGHT_COLOR[LIGHT_OFF] = (0.12, 0.12, 0.12)
LIGHT_RADIUS_M = 0.40
"""Radius of a traffic-light disk (m)."""
LIGHT_FULL_DEG = 45.0
LIGHT_CUTOFF_DEG = 75.0
"""A light is fully visible from within ``LIGHT_FULL_DEG`` of the direction it faces, fades
smoothly to invisible at ``LIGHT_CUTOFF_DEG``, and is culled beyond (it serves one approach)."""

SHADE_MIN = 0.45
SHADE_DISTANCE_M = 50.0
"""Depth-aware brightness of cuboids and walls: ``SHADE_MIN + (1 - SHADE_MIN) exp(-t / SHADE_DISTANCE_M)``."""


def to_uint8(rgb: tuple[float, float, float]) -> np.ndarray:
    """The uint8 value the kernels write for a flat colour (round half up)."""
    return np.floor(np.clip(np.asarray(rgb, np.float32), 0, 1) * 255.0 + 0.5).astype(np.uint8)
