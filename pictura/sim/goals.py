"""Goal sets drawn in parallel: a rule or a spawn *requests* a set for a slot, then
``goal_walk_kernel`` runs all `GOAL_WALK_TRIES` random walks of every requesting slot at once
(one thread per (slot, try)) and the next observation pass *takes* the first try whose chords
turn little enough (else the last), the same rule as drawing the tries one after another, but
without one thread walking up to 8 x 3 waypoints across the lane graph. Pedestrians' single
walk along the pedestrian paths runs in the same pass (its first try), off the rules' and the
spawn rounds' critical path.

A request carries its RNG key and first stream (try t draws from stream + t), so the rules and
the spawns keep separate streams. ``goal_stream`` < 0: no request.
"""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0) / bool(...)

from __future__ import annotations

import warp as wp

from pictura.maps.roadmap import AGENT_PEDESTRIAN
from pictura.sim.lanes import GOAL_WALK_TRIES, goal_walk, lane_station
from pictura.sim.model_data import ModelData
from pictura.sim.paths import sample_path_goals
from pictura.sim.state import StateData

NO_GOAL_REQUEST = -1
"""``State.goal_stream`` of a slot without a pending request."""

_TRIES = wp.constant(GOAL_WALK_TRIES)
_PEDESTRIAN = wp.constant(AGENT_PEDESTRIAN)


@wp.func
def request_goal_set(state: StateData, slot: int, key: int, stream: int):
    """Ask for a new goal set of ``slot`` from its lane, position and heading (drawn from RNG
    ``key``, streams ``stream`` .. ``stream + GOAL_WALK_TRIES - 1``); ``goal_index`` is 3
    (waiting) until `take_goal_set`."""
    state.goal_key[slot] = key
    state.goal_stream[slot] = stream
    state.goal_index[slot] = 3


@wp.func
def goal_set_try(model: ModelData, state: StateData, slot: int, t: int):
    """Try ``t`` of ``slot``'s requested goal set, into ``goal_try`` / ``goal_try_ok``.

    Pedestrians have a single try (t = 0): a walk along the pedestrian paths from the last
    waypoint (``goal[slot, 2]``) on segment ``path_seg``, which becomes the segment of the new
    last waypoint."""
    stream = state.goal_stream[slot]
    if stream < 0:
        return
    rng = wp.rand_init(state.goal_key[slot], stream + t)
    g0 = wp.vec3(0.0, 0.0, 0.0)
    g1 = wp.vec3(0.0, 0.0, 0.0)
    g2 = wp.vec3(0.0, 0.0, 0.0)
    ok = bool(True)
    if state.kind[slot] == _PEDESTRIAN:
        if t != 0:
            return
        g0, g1, g2, last, rng = sample_path_goals(model, state.path_seg[slot], state.goal[slot, 2], rng)
        state.path_seg[slot] = last
    else:
        lane = state.lane[slot]
        pos = state.pos[slot]
        g0, g1, g2, ok = goal_walk(model, lane, lane_station(model, lane, pos), pos, state.heading[slot], rng)
    state.goal_try[slot, t, 0] = g0
    state.goal_try[slot, t, 1] = g1
    state.goal_try[slot, t, 2] = g2
    state.goal_try_ok[slot, t] = wp.where(ok, 1, 0)


@wp.func
def take_goal_set(state: StateData, slot: int):
    """Complete ``slot``'s pending request: the first try that is ok, else the last (a
    pedestrian's single try is always ok)."""
    if state.goal_stream[slot] < 0:
        return
    pick = int(_TRIES - 1)
    for k in range(_TRIES):
        t = _TRIES - 1 - k
        if state.goal_try_ok[slot, t] != 0:
            pick = t
    for g in range(3):
        state.goal[slot, g] = state.goal_try[slot, pick, g]
    state.goal_index[slot] = 0
    state.goal_stream[slot] = NO_GOAL_REQUEST
