"""Pedestrian paths: walking along sidewalk / crosswalk polylines to draw pedestrian goals.

Pedestrians do not use the lane graph. Their waypoints are points reached by walking a random
distance (``SimConfig.pedestrian_goal_spacing_m``) along the pedestrian-path segments of the map
(`Model.ped_seg_*`), turning back at the end of a polyline.
"""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0) / bool(...)

from __future__ import annotations

import warp as wp

from pictura.sim.model_data import ModelData

WALK_MAX_SEGMENTS = 64
"""Segments visited at most per waypoint (bounds the loop on tiny or degenerate polylines)."""


@wp.func
def walk_path(model: ModelData, seg: int, pos: wp.vec3, forward: int, distance: float):
    """Walk ``distance`` m from ``pos`` (on segment ``seg``) along its polyline, forward
    (a -> b) when ``forward`` != 0, bouncing at polyline ends. Returns (point, seg, forward)."""
    s = int(seg)
    fwd = int(forward)
    p = wp.vec3(pos)
    left = float(distance)
    for _it in range(WALK_MAX_SEGMENTS):
        if left > 0.0:
            end = model.ped_seg_a[s]
            if fwd != 0:
                end = model.ped_seg_b[s]
            room = wp.length(end - p)
            if room >= left:
                p = p + (end - p) * (left / room)
                left = 0.0
            else:
                left = left - room
                p = end
                nxt = model.ped_seg_prev[s]
                if fwd != 0:
                    nxt = model.ped_seg_next[s]
                if nxt < 0:
                    fwd = 1 - fwd
                else:
                    s = nxt
    return p, s, fwd


@wp.func
def sample_path_goals(model: ModelData, seg: int, pos: wp.vec3, rng: wp.uint32):
    """Three waypoints walked from ``pos`` on pedestrian segment ``seg`` in a random direction,
    successive ones U(ped_goal_lo, ped_goal_hi) m apart. Returns (g0, g1, g2, last seg, rng)."""
    state = rng
    fwd = int(0)
    if wp.randf(state) < 0.5:
        fwd = 1
    g0, s0, f0 = walk_path(model, seg, pos, fwd, wp.randf(state, model.ped_goal_lo, model.ped_goal_hi))
    g1, s1, f1 = walk_path(model, s0, g0, f0, wp.randf(state, model.ped_goal_lo, model.ped_goal_hi))
    g2, s2, f2 = walk_path(model, s1, g1, f1, wp.randf(state, model.ped_goal_lo, model.ped_goal_hi))
    return g0, g1, g2, s2, state
