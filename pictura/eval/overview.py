"""Top-down overview of one world: map, agents, the ego's camera frusta, goals, lights, infractions.

Drawn with Pillow (a few ms per frame, so a video of hundreds of frames stays cheap): the
picture is a square window of ``2 * radius`` metres centred on the ego (or on ``center``),
x to the right and y up. Used by ``python -m pictura video`` and the probe pictures.

Colours: vehicles blue, pedestrians orange, cyclists green, parked cars grey, the ego magenta
with its frusta; lights and the stop lines they govern in their LIGHT_* colour; goal waypoints
as numbered yellow dots; agents with an infraction this step get a red cross.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw

from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE, RoadMap
from pictura.sim.slot_table import split_slot_table
from pictura.sim.snapshot import BOX_INVALID, BOX_ROW_FLOATS, BoxView, WorldLayout

BACKGROUND = (244, 241, 234)
KIND_COLOR = {AGENT_VEHICLE: (52, 101, 164), AGENT_PEDESTRIAN: (245, 121, 0), AGENT_CYCLIST: (78, 154, 6)}
PARKED_COLOR = (136, 138, 133)
EGO_COLOR = (200, 30, 200)
LIGHT_RGB = ((220, 30, 30), (240, 190, 0), (40, 170, 40), (120, 120, 120))
"""Indexed by LIGHT_RED, LIGHT_YELLOW, LIGHT_GREEN, LIGHT_OFF."""
INFRACTION_COLOR = (230, 0, 0)
GOAL_COLOR = (235, 200, 0)
FRUSTUM_RANGE = 25.0
"""Length (m) of the drawn camera frustum edges."""


def slot_ranges(layout: WorldLayout, slot_table: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(slot_world, world_slot_start, world_slot_count) of one snapshot: its ``slot_table`` row
    (S + 2W,), or the layout's own arrays (fixed worlds only: a packed layout's change at every
    block reset)."""
    row = layout.fixed_slot_table("world_rows")[0] if slot_table is None else slot_table
    return split_slot_table(row, layout.num_slots, layout.num_worlds)


def world_rows(layout: WorldLayout, world: int, slot_table: np.ndarray | None = None) -> np.ndarray:
    """Snapshot rows of world ``world``: its agent slots (per ``slot_table``, see `slot_ranges`),
    then its parked cars. (n,) int64."""
    _, starts, counts = slot_ranges(layout, slot_table)
    if not 0 <= world < layout.num_worlds:
        raise ValueError(f"world {world} outside 0..{layout.num_worlds - 1}")
    start, count = int(starts[world]), int(counts[world])
    parked = layout.world_parked_start(world)
    return np.concatenate([np.arange(start, start + count), np.arange(parked, parked + layout.parked_per_world)])


def world_lights(layout: WorldLayout, light_state: np.ndarray, world: int, light_count: int) -> np.ndarray:
    """World ``world``'s slice of the flat ``light_state`` (light_count,) int32."""
    start = int(layout.world_light_start[world])
    return np.asarray(light_state)[start : start + light_count]


class _View:
    """World metres -> picture pixels for a square window."""

    def __init__(self, center: tuple[float, float], radius: float, size: int):
        self.cx, self.cy, self.radius, self.size = float(center[0]), float(center[1]), float(radius), int(size)
        self.ppm = size / (2.0 * radius)

    def __call__(self, xy: np.ndarray) -> np.ndarray:
        xy = np.asarray(xy, np.float64).reshape(-1, 2)
        u = (xy[:, 0] - self.cx) * self.ppm + 0.5 * self.size
        v = (self.cy - xy[:, 1]) * self.ppm + 0.5 * self.size
        return np.stack([u, v], axis=1)


def box_polygon(row: np.ndarray) -> np.ndarray:
    """(4, 2) world corners (m) of a snapshot row's footprint, counter-clockwise."""
    box = BoxView(row[:BOX_ROW_FLOATS])
    c, s = math.cos(float(box.heading)), math.sin(float(box.heading))
    hl, hw = 0.5 * float(box.length), 0.5 * float(box.width)
    local = np.array([[hl, hw], [-hl, hw], [-hl, -hw], [hl, -hw]])
    rot = np.array([[c, -s], [s, c]])
    return local @ rot.T + np.asarray(box.xy, np.float64)


def _segments(draw: ImageDraw.ImageDraw, view: _View, seg: np.ndarray, fill, width: int) -> None:
    """Draw (n, 2, >=2) segments, skipping those entirely outside the window."""
    if len(seg) == 0:
        return
    a, b = view(seg[:, 0, :2]), view(seg[:, 1, :2])
    lo, hi = -view.size * 0.1, view.size * 1.1
    keep = ~(
        ((a[:, 0] < lo) & (b[:, 0] < lo)) | ((a[:, 0] > hi) & (b[:, 0] > hi))
        | ((a[:, 1] < lo) & (b[:, 1] < lo)) | ((a[:, 1] > hi) & (b[:, 1] > hi))
    )
    for p, q in zip(a[keep], b[keep], strict=True):
        draw.line([tuple(p), tuple(q)], fill=fill, width=width)


def draw_overview(
    road_map: RoadMap,
    agent_box: np.ndarray,
    light_state: np.ndarray | None = None,
    ego: int | None = None,
    *,
    parked: np.ndarray | None = None,
    goals: np.ndarray | None = None,
    infractions: np.ndarray | None = None,
    camera_extrinsics: np.ndarray | None = None,
    camera_hfov_deg: float = 63.7,
    size: int = 360,
    radius: float = 50.0,
    center: tuple[float, float] | None = None,
    title: str | None = None,
) -> np.ndarray:
    """Top-down picture of one world. Returns (size, size, 3) uint8.

    Args:
        road_map: the world's map.
        agent_box: (n, BOX_ROW_FLOATS) snapshot rows of this world (`world_rows`); kind -1 rows skipped.
        light_state: (road_map lights,) LIGHT_* of this world, or None (lights drawn grey).
        ego: row of ``agent_box`` to highlight (frusta, goals), or None.
        parked: (n,) bool, rows that are parked cars (drawn grey); None = none.
        goals: (G, 2 or 3) the ego's goal waypoints (m, world frame), drawn numbered.
        infractions: (n,) bool, rows with an infraction this step (red cross).
        camera_extrinsics: (C, 5) `CameraRig.extrinsics()` (ego frame x, y, z m, yaw, pitch rad).
        camera_hfov_deg: horizontal field of view of every camera (deg).
        size: picture edge (px).
        radius: half the window edge (m).
        center: window centre (m); None = the ego's position, or the map's centre without ego.
        title: text in the top-left corner.
    """
    boxes = np.asarray(agent_box, np.float32)
    if boxes.ndim != 2 or boxes.shape[1] < BOX_ROW_FLOATS:
        raise ValueError(f"agent_box must be (n, {BOX_ROW_FLOATS}), got {boxes.shape}")
    rows = BoxView(boxes[:, :BOX_ROW_FLOATS])
    if size < 16:
        raise ValueError(f"size must be >= 16 px, got {size}")
    if not radius > 0:
        raise ValueError(f"radius must be > 0 m, got {radius}")
    n = len(boxes)
    if ego is not None and not (0 <= ego < n and rows.kind[ego] != BOX_INVALID):
        raise ValueError(f"ego {ego} is not a valid row of agent_box")
    for key, arr in (("parked", parked), ("infractions", infractions)):
        if arr is not None and np.asarray(arr).shape != (n,):
            raise ValueError(f"{key} must have shape ({n},), got {np.asarray(arr).shape}")
    if light_state is not None and len(light_state) != len(road_map.light_position):
        raise ValueError(
            f"light_state has {len(light_state)} entries, the map has {len(road_map.light_position)} lights"
        )
    if center is None:
        if ego is not None:
            center = (float(rows.x[ego]), float(rows.y[ego]))
        else:
            lo, hi = road_map.bounds()
            center = (0.5 * float(lo[0] + hi[0]), 0.5 * float(lo[1] + hi[1]))
    view = _View(center, radius, size)
    image = Image.new("RGB", (size, size), BACKGROUND)
    draw = ImageDraw.Draw(image)
    thick = max(1, round(view.ppm * 0.25))

    # map: lanes under edges under walls; stop lines in their light's colour
    lane_seg, _ = road_map.lane_segments()
    _segments(draw, view, lane_seg, (170, 195, 235), 1)
    _segments(draw, view, road_map.road_edge_segments(), (40, 40, 40), 1)
    _segments(draw, view, road_map.wall_points, (139, 58, 58), max(2, thick))
    lights = np.full(len(road_map.light_position), 3, np.int64) if light_state is None else np.asarray(light_state)
    for i, seg in enumerate(road_map.stop_line_points):
        li = int(road_map.stop_line_light[i])
        colour = LIGHT_RGB[int(lights[li])] if 0 <= li < len(lights) else (90, 90, 90)
        _segments(draw, view, seg[None], colour, max(2, thick))
    if len(road_map.light_position):
        r = max(2.0, 0.8 * view.ppm)
        for p, state in zip(view(road_map.light_position[:, :2]), lights, strict=True):
            draw.ellipse([p[0] - r, p[1] - r, p[0] + r, p[1] + r], fill=LIGHT_RGB[int(state)], outline=(0, 0, 0))

    # agents
    for i in range(n):
        kind = rows.kind[i]
        if kind == BOX_INVALID:
            continue
        corners = view(box_polygon(boxes[i]))
        if i == ego:
            fill = EGO_COLOR
        elif parked is not None and parked[i]:
            fill = PARKED_COLOR
        else:
            fill = KIND_COLOR.get(int(kind), (0, 0, 0))
        draw.polygon([tuple(p) for p in corners], fill=fill, outline=(0, 0, 0))
        nose = view(box_polygon(boxes[i])[[0, 3]].mean(0))[0]
        centre = view(rows.xy[i])[0]
        draw.line([tuple(centre), tuple(nose)], fill=(255, 255, 255), width=1)

    if ego is not None:
        ex, ey, eh = float(rows.x[ego]), float(rows.y[ego]), float(rows.heading[ego])
        if camera_extrinsics is not None:
            half = math.radians(camera_hfov_deg) / 2
            ce, se = math.cos(eh), math.sin(eh)
            for cam in np.asarray(camera_extrinsics, np.float64):
                px, py = ex + ce * cam[0] - se * cam[1], ey + se * cam[0] + ce * cam[1]
                yaw = eh + cam[3]
                rays = [(px + FRUSTUM_RANGE * math.cos(yaw + d), py + FRUSTUM_RANGE * math.sin(yaw + d)) for d in (-half, half)]
                pts = view(np.array([rays[0], (px, py), rays[1]]))
                draw.line([tuple(p) for p in pts], fill=EGO_COLOR, width=1)
        if goals is not None:
            for k, p in enumerate(view(np.asarray(goals, np.float64)[:, :2])):
                r = max(3.0, 1.2 * view.ppm)
                draw.ellipse([p[0] - r, p[1] - r, p[0] + r, p[1] + r], fill=GOAL_COLOR, outline=(0, 0, 0))
                draw.text((p[0] + r + 1, p[1] - r), str(k + 1), fill=(0, 0, 0))

    if infractions is not None:
        r = max(4.0, 1.5 * view.ppm)
        for i in np.flatnonzero(np.asarray(infractions)):
            if rows.kind[i] == BOX_INVALID:
                continue
            p = view(rows.xy[i])[0]
            draw.line([p[0] - r, p[1] - r, p[0] + r, p[1] + r], fill=INFRACTION_COLOR, width=2)
            draw.line([p[0] - r, p[1] + r, p[0] + r, p[1] - r], fill=INFRACTION_COLOR, width=2)

    # scale bar: 10 m
    bar = 10.0 * view.ppm
    draw.line([6, size - 8, 6 + bar, size - 8], fill=(0, 0, 0), width=2)
    draw.text((8 + bar, size - 14), "10 m", fill=(0, 0, 0))
    if title:
        draw.text((4, 2), title, fill=(0, 0, 0))
    return np.asarray(image)


def side_by_side(panels: Sequence[np.ndarray], gap: int = 4, background: int = 0) -> np.ndarray:
    """Lay (h_i, w_i, 3) uint8 panels left to right, top-aligned, padded to the tallest."""
    if not panels:
        raise ValueError("panels must hold at least one picture")
    height = max(p.shape[0] for p in panels)
    width = sum(p.shape[1] for p in panels) + gap * (len(panels) - 1)
    out = np.full((height, width, 3), background, np.uint8)
    x = 0
    for p in panels:
        out[: p.shape[0], x : x + p.shape[1]] = p
        x += p.shape[1] + gap
    return out


def overview_for_slot(
    env,
    agent_box: np.ndarray,
    light_state: np.ndarray,
    slot: int,
    *,
    goals: np.ndarray | None = None,
    infraction_slots: np.ndarray | None = None,
    size: int = 360,
    radius: float = 40.0,
    title: str | None = None,
    slot_table: np.ndarray | None = None,
) -> np.ndarray:
    """`draw_overview` of ``slot``'s world from one full snapshot of an env (a `DrivingEnv` or
    anything with ``layout``, ``road_maps`` and ``rig``); ``slot_table`` is the snapshot's
    (S + 2W,) row (needed for packed layouts, see `slot_ranges`).

    Args:
        agent_box: (S + P, 8) one step's snapshot; light_state: (L,) the flat light states.
        slot: the agent to highlight (centre, frusta, goals).
        goals: (G, 2 or 3) its goal waypoints (m), or None.
        infraction_slots: (S,) bool, slots with an infraction this step, or None.
    """
    layout = env.layout
    world = int(slot_ranges(layout, slot_table)[0][slot])
    road_map = env.road_maps[int(layout.world_map[world])]
    rows = world_rows(layout, world, slot_table)
    parked = rows >= layout.num_slots
    infractions = None
    if infraction_slots is not None:
        infractions = np.zeros(len(rows), bool)
        infractions[~parked] = np.asarray(infraction_slots, bool)[rows[~parked]]
    rig = env.rig
    return draw_overview(
        road_map, np.asarray(agent_box)[rows],
        world_lights(layout, light_state, world, len(road_map.light_position)),
        int(np.flatnonzero(rows == slot)[0]), parked=parked, goals=goals, infractions=infractions,
        camera_extrinsics=rig.extrinsics(), camera_hfov_deg=rig.fov_deg()[0], size=size, radius=radius,
        title=title,
    )
