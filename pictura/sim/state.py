"""`State` (what changes every step) and `Control` (the actions), as Warp arrays.

Both are plain Python objects whose array attributes are mirrored in a `wp.struct` (``.data``)
that the kernels take, so a kernel signature reads ``(model, state_in, control, state_out)``.
Assigning a new array to an attribute keeps the mirror in sync.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import warp as wp

from pictura.sim.features import (
    CONDITIONING_WIDTH,
    EGO_AUX_WIDTH,
    EGO_WIDTH,
    GOAL_FEATURES,
    NUM_ACTIONS,
    NUM_EVENTS,
    NUM_GOALS,
    NUM_REWARD_TERMS,
)
from pictura.sim.lanes import GOAL_WALK_TRIES
from pictura.sim.snapshot import BOX_ROW_FLOATS

if TYPE_CHECKING:
    from pictura.sim.model import Model


@wp.struct
class StateData:
    """The kernel view of `State` (same names; see `State` for shapes and units)."""

    pos: wp.array(dtype=wp.vec3)
    heading: wp.array(dtype=float)
    speed: wp.array(dtype=float)
    accel_long: wp.array(dtype=float)
    accel_lat: wp.array(dtype=float)
    jerk_long: wp.array(dtype=float)
    jerk_lat: wp.array(dtype=float)
    steering: wp.array(dtype=float)
    length: wp.array(dtype=float)
    width: wp.array(dtype=float)
    height: wp.array(dtype=float)
    kind: wp.array(dtype=wp.int32)
    valid: wp.array(dtype=wp.int32)
    halted: wp.array(dtype=wp.int32)
    lane: wp.array(dtype=wp.int32)
    lane_offset: wp.array(dtype=float)
    lane_heading_error: wp.array(dtype=float)
    goal: wp.array2d(dtype=wp.vec3)
    goal_index: wp.array(dtype=wp.int32)
    path_seg: wp.array(dtype=wp.int32)
    conditioning: wp.array2d(dtype=float)
    prev_pos: wp.array(dtype=wp.vec3)
    prev_heading: wp.array(dtype=float)
    sweep_circle: wp.array(dtype=wp.vec4)
    distance: wp.array(dtype=float)
    reward: wp.array(dtype=float)
    reward_terms: wp.array2d(dtype=float)
    events: wp.array2d(dtype=wp.int32)
    terminated: wp.array(dtype=wp.int32)
    truncated: wp.array(dtype=wp.int32)
    active: wp.array(dtype=wp.int32)
    world_step: wp.array(dtype=wp.int32)
    world_episode: wp.array(dtype=wp.int32)
    world_seed: wp.array(dtype=wp.int32)
    world_reset: wp.array(dtype=wp.int32)
    world_agent_count: wp.array(dtype=wp.int32)
    world_active_count: wp.array(dtype=wp.int32)
    world_valid_count: wp.array(dtype=wp.int32)
    world_halted_count: wp.array(dtype=wp.int32)
    world_slot_start: wp.array(dtype=wp.int32)
    world_slot_count: wp.array(dtype=wp.int32)
    slot_world: wp.array(dtype=wp.int32)
    junction_green: wp.array(dtype=float)
    junction_yellow: wp.array(dtype=float)
    junction_red: wp.array(dtype=float)
    junction_offset: wp.array(dtype=float)
    junction_mode: wp.array(dtype=wp.int32)
    light_off: wp.array(dtype=wp.int32)
    light_state: wp.array(dtype=wp.int32)
    agent_box: wp.array2d(dtype=float)
    obs_ego: wp.array2d(dtype=float)
    obs_ego_aux: wp.array2d(dtype=float)
    obs_goals: wp.array2d(dtype=float)
    obs_conditioning: wp.array2d(dtype=float)
    final_agent_box: wp.array2d(dtype=float)
    final_light_state: wp.array(dtype=wp.int32)
    final_obs_ego: wp.array2d(dtype=float)
    final_obs_ego_aux: wp.array2d(dtype=float)
    final_obs_goals: wp.array2d(dtype=float)
    final_obs_conditioning: wp.array2d(dtype=float)
    final_speed: wp.array(dtype=float)
    final_slot_world: wp.array(dtype=wp.int32)
    final_world_slot_start: wp.array(dtype=wp.int32)
    final_world_slot_count: wp.array(dtype=wp.int32)
    goal_key: wp.array(dtype=wp.int32)
    goal_stream: wp.array(dtype=wp.int32)
    goal_try: wp.array3d(dtype=wp.vec3)
    goal_try_ok: wp.array2d(dtype=wp.int32)
    spawn_static_ok: wp.array2d(dtype=wp.int32)
    spawn_next: wp.array(dtype=wp.int32)
    spawn_placed_round: wp.array(dtype=wp.int32)
    spawn_conflict: wp.array(dtype=wp.int32)
    spawn_pose: wp.array2d(dtype=wp.vec4)
    spawn_motion: wp.array2d(dtype=wp.vec4)
    spawn_attempt: wp.array2d(dtype=wp.int32)


class _Mirrored:
    """Keeps ``self.data`` (a wp.struct) pointing at the same arrays as the attributes."""

    data: object
    _struct_fields: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value) -> None:
        object.__setattr__(self, name, value)
        if name != "data" and "data" in self.__dict__ and name in self._struct_fields:
            setattr(self.data, name, value)


class State(_Mirrored):
    """Everything that changes per step. S slots, W worlds, Jw world junctions, Tw world lights.

    Per slot:
      pos (S,) vec3 m (box bottom centre); heading (S,) rad; speed (S,) m/s signed;
      accel_long, accel_lat (S,) m/s^2; jerk_long, jerk_lat (S,) m/s^3 (last step's);
      steering (S,) rad; length, width, height (S,) m; kind (S,) AGENT_*;
      valid (S,) int 0/1: slot populated this episode; halted (S,) int 0/1: had an infraction,
      stays in place as an obstacle; lane (S,) current lane id (global, -1 = none);
      lane_offset (S,) m signed lateral offset from the lane centre (left negative);
      lane_heading_error (S,) rad heading minus lane heading, wrapped to [-pi, pi];
      goal (S, 3) vec3 m: the current set of waypoints; goal_index (S,) next one to reach
      (3 = set done, waiting for a lane to draw the next set); path_seg (S,) pedestrians: the
      pedestrian-path segment (global id) of the last waypoint, where the next set starts;
      conditioning (S, CONDITIONING_WIDTH) raw Table 2 values then the type one-hot;
      prev_pos (S,) vec3 m, prev_heading (S,) rad: pose before this step (swept tests);
      sweep_circle (S,) vec4: collision broad phase of this step's sweep, x, y m of the
      mid-step centre, z m (current), radius m (circumradius + half the move; -1: invalid);
      distance (S,) m driven this episode.
    Per step outputs (per slot):
      reward (S,); reward_terms (S, NUM_REWARD_TERMS) in `REWARD_TERMS` order;
      events (S, NUM_EVENTS) int 0/1 in `EVENTS` order; terminated (S,) int: infraction this
      step; truncated (S,) int: world reset this step and the slot was active and not
      terminated; active (S,) int: valid and not halted after this step's resets.
    Per world:
      world_step (W,) steps since the world's reset; world_episode (W,) resets since `reset`;
      world_seed (W,) int32 RNG key; world_reset (W,) 1 if the world was reset this step;
      world_agent_count (W,) agents drawn at the last reset (some may have found no spawn);
      world_active_count (W,) slots valid and not halted after this step (slot utilisation);
      world_valid_count, world_halted_count (W,) valid / halted slots after this step's rules
      (before its resets: the early-reset decision).
    Slot ranges (this episode's; a static `WorldLayout` keeps its own arrays for good, a packed
    one redraws a block's at the block's reset, `pack_records_kernel`):
      world_slot_start, world_slot_count (W,): world w's agents live in slots start .. start +
      count; slot_world (S,): the world whose range holds the slot; a slot of a packed block
      outside every range (the block's unused tail) belongs to the block's first world record,
      so its reset flag and map lookups stay valid, and is never valid. The three are views
      into slot_table (S + 2 W,) (`pictura.sim.slot_table`), so the snapshot copies one array.
    Traffic lights:
      junction_green/yellow/red (Jw,) s phase durations; junction_offset (Jw,) s;
      junction_mode (Jw,) 0 cycling, 1 off, 2 always green; light_off (Tw,) int 0/1;
      light_state (Tw,) int32 LIGHT_* (`snapshot.py`).
    Snapshot and observations (written at the end of every step and reset):
      agent_box (S + P, BOX_ROW_FLOATS) per `snapshot.py`: S slot rows (invalid slots: zeros, kind
      BOX_INVALID) then P = W x parked_per_world parked-car rows (kind AGENT_VEHICLE; a car
      that found no place: zeros, kind BOX_INVALID), redrawn at each world reset;
      obs_ego (S, EGO_WIDTH); obs_ego_aux (S, EGO_AUX_WIDTH);
      obs_goals (S, GOAL_FEATURES): (x, y) / 600 m of the 3 waypoints in the ego frame, from the
      next one on (the last one repeats once passed); obs_conditioning (S, CONDITIONING_WIDTH)
      in [-1, 1].
    Before this step's world resets (truncation bootstrap; equal to the arrays above in worlds
    that did not reset this step, and after `reset`):
      final_agent_box (S + P, BOX_ROW_FLOATS); final_light_state (Tw,); final_obs_ego (S, EGO_WIDTH);
      final_obs_ego_aux (S, EGO_AUX_WIDTH); final_obs_goals (S, GOAL_FEATURES);
      final_slot_table (S + 2 W,) with its views final_slot_world, final_world_slot_start,
      final_world_slot_count (a block reset redraws the ranges);
      final_obs_conditioning (S, CONDITIONING_WIDTH); final_speed (S,) (the privileged
      vectorized observation's partner speeds).
    Goal-set requests (`pictura.sim.goals`; taken within the step that makes them), T =
    GOAL_WALK_TRIES:
      goal_key (S,) RNG key; goal_stream (S,) first RNG stream, -1: no request;
      goal_try (S, T, 3) vec3 m: the waypoints of each walk try; goal_try_ok (S, T) int 0/1.
    Scratch of the masked resets (`pictura.sim.spawn`; meaningful only inside the `step` or
    `reset` that wrote it, for rows of worlds that reset there), B = S + P snapshot rows, A =
    spawn_attempts:
      spawn_static_ok (B, A) int 1 / 0 / -1: try passed the static tests (road edges, walls, stop
      lines) / failed / not tested yet;
      spawn_next (B,) next try to scan; spawn_placed_round (B,) round that accepted the row (or
      a large value); spawn_conflict (B,) 1 when a higher-ranked proposal of the round overlaps
      the row's (`spawn_conflict_kernel`, read and cleared by the round); spawn_pose (2, B)
      vec4 x, y, z m, heading rad and spawn_motion (2, B) vec4 speed m/s, length, width,
      circumradius m (radius < 0: no proposal) of each row's proposal, double-buffered by
      round parity; spawn_attempt (2, B) the proposal's try.
    """

    def __init__(self, model: Model):
        S, W = model.num_slots, model.num_worlds
        Jw, Tw = model.junction_count, model.light_count
        d = model.device
        self._struct_fields = frozenset(StateData.vars)
        self.data = StateData()
        shapes = {
            "goal": (S, NUM_GOALS),
            "conditioning": (S, CONDITIONING_WIDTH),
            "reward_terms": (S, NUM_REWARD_TERMS),
            "events": (S, NUM_EVENTS),
            "agent_box": (model.layout.box_count, BOX_ROW_FLOATS),
            "obs_ego": (S, EGO_WIDTH),
            "obs_ego_aux": (S, EGO_AUX_WIDTH),
            "obs_goals": (S, GOAL_FEATURES),
            "obs_conditioning": (S, CONDITIONING_WIDTH),
            "final_light_state": (Tw,),
            "goal_try": (S, GOAL_WALK_TRIES, NUM_GOALS),
            "goal_try_ok": (S, GOAL_WALK_TRIES),
            "spawn_static_ok": (model.layout.box_count, model.config.spawn_attempts),
            "spawn_pose": (2, model.layout.box_count),
            "spawn_motion": (2, model.layout.box_count),
            "spawn_attempt": (2, model.layout.box_count),
        }
        for name in ("agent_box", "obs_ego", "obs_ego_aux", "obs_goals", "obs_conditioning"):
            shapes["final_" + name] = shapes[name]
        table_parts = ("slot_world", "world_slot_start", "world_slot_count")
        views = {prefix + part for prefix in ("", "final_") for part in table_parts}
        for name, var in StateData.vars.items():
            if name in views:
                continue  # views into slot_table / final_slot_table, set below
            if name.startswith("world_"):
                shape = (W,)
            elif name.startswith("junction_"):
                shape = (Jw,)
            elif name.startswith("light_"):
                shape = (Tw,)
            elif name in ("spawn_next", "spawn_placed_round", "spawn_conflict"):
                shape = (model.layout.box_count,)
            else:
                shape = shapes.get(name, (S,))
            setattr(self, name, wp.zeros(shape, dtype=var.type.dtype, device=d))
        self.goal_stream.fill_(-1)  # no goal-set request
        for prefix in ("", "final_"):
            # one contiguous table per snapshot, its three parts as views (kernels see the parts)
            table = wp.array(model.layout.slot_table()[0], dtype=wp.int32, device=d)
            setattr(self, prefix + "slot_table", table)
            for part, view in zip(table_parts, (table[:S], table[S : S + W], table[S + W :]), strict=True):
                setattr(self, prefix + part, view)
        self.device = d

    def assign(self, other: State) -> None:
        """Copy every array of ``other`` into this state (same model)."""
        for name in StateData.vars:
            wp.copy(getattr(self, name), getattr(other, name))

    def numpy(self) -> dict[str, np.ndarray]:
        """Host copies of every array (tests, debugging; syncs the device)."""
        return {name: getattr(self, name).numpy() for name in StateData.vars}


@wp.struct
class ControlData:
    action: wp.array(dtype=wp.int32)


class Control(_Mirrored):
    """Actions: action (S,) int32 in 0..NUM_ACTIONS-1 (ignored for inactive slots)."""

    def __init__(self, model: Model):
        self._struct_fields = frozenset(ControlData.vars)
        self.data = ControlData()
        self.action = wp.zeros(model.num_slots, dtype=wp.int32, device=model.device)

    def validate(self) -> None:
        """Raise ``ValueError`` if any action is outside 0..NUM_ACTIONS-1 (syncs the device;
        for tests and debugging: `step` never checks, and reads an out-of-range id as
        undefined jerk bins)."""
        a = self.action.numpy()
        bad = np.flatnonzero((a < 0) | (a >= NUM_ACTIONS))
        if len(bad):
            raise ValueError(f"Control.action[{bad[0]}] = {a[bad[0]]} is outside 0..{NUM_ACTIONS - 1}")
