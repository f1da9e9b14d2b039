"""Demo snapshots for tools, docs and benchmarks: agents placed on a map's lanes (NumPy only).

Not a simulator: it only fills an ``agent_box`` snapshot so the renderer has something to draw
before `pictura.sim` runs (e.g. ``python -m pictura render --map procedural:seed=0``).
"""

from __future__ import annotations

import numpy as np

from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE, RoadMap
from pictura.sim.snapshot import BOX_INVALID, BOX_ROW_FLOATS, box_row

TYPE_SIZE = {
    AGENT_VEHICLE: ((3.8, 5.2), (1.7, 2.1), 1.5),
    AGENT_PEDESTRIAN: ((0.5, 0.7), (0.5, 0.7), 1.75),
    AGENT_CYCLIST: ((1.7, 1.9), (0.6, 0.8), 1.7),
}
"""Per agent kind: length range, width range (m), height (m)."""


def lane_poses(road_map: RoadMap, spacing: float = 9.0) -> np.ndarray:
    """``(n, 4)`` x, y, z, heading: points every ``spacing`` m along each lane chunk's start."""
    out = []
    for i in range(road_map.lane_count):
        pts = road_map.lane(i)
        if len(pts) < 2:
            continue
        seg = np.diff(pts[:, :2], axis=0)
        seg_len = np.linalg.norm(seg, axis=1)
        cum = np.concatenate([[0.0], np.cumsum(seg_len)])
        for s in np.arange(0.0, cum[-1] - 1e-3, spacing):
            k = min(np.searchsorted(cum, s, side="right") - 1, len(seg) - 1)
            if seg_len[k] < 1e-6:
                continue
            a = (s - cum[k]) / seg_len[k]
            p = pts[k] + a * (pts[k + 1] - pts[k])
            out.append([p[0], p[1], p[2], np.arctan2(seg[k, 1], seg[k, 0])])
    return np.asarray(out, np.float32).reshape(-1, 4)


def spawn_snapshot(
    road_map: RoadMap,
    slots: int,
    agents: int,
    seed: int = 0,
    ped_fraction: float = 0.1,
    cyclist_fraction: float = 0.1,
    min_gap: float = 8.0,
) -> np.ndarray:
    """``(slots, BOX_ROW_FLOATS)`` snapshot with ``agents`` boxes on distinct lane poses (rest empty)."""
    if agents > slots:
        raise ValueError(f"agents ({agents}) must be <= slots ({slots})")
    rng = np.random.default_rng(seed)
    poses = lane_poses(road_map)
    order = rng.permutation(len(poses))
    chosen: list[np.ndarray] = []
    for idx in order:
        if len(chosen) == agents:
            break
        p = poses[idx]
        if all(np.hypot(*(p[:2] - q[:2])) >= min_gap for q in chosen):
            chosen.append(p)
    if len(chosen) < agents:
        raise ValueError(f"map {road_map.name!r} has room for only {len(chosen)} agents, asked {agents}")
    box = np.full((slots, BOX_ROW_FLOATS), BOX_INVALID, np.float32)
    for s, p in enumerate(chosen):
        u = rng.uniform()
        kind = AGENT_PEDESTRIAN if u < ped_fraction else AGENT_CYCLIST if u < ped_fraction + cyclist_fraction else 0
        (l0, l1), (w0, w1), h = TYPE_SIZE[kind]
        box[s] = box_row(
            x=p[0], y=p[1], z=p[2], heading=p[3], length=rng.uniform(l0, l1), width=rng.uniform(w0, w1), height=h, kind=kind
        )
    return box
