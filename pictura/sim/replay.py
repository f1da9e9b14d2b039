"""Log replay: logged road users in the simulator (the zero-shot WOMD protocol).

A replay model (``build_model(..., replay=ReplayLog)``) gives every slot a mode (`SLOT_*` in
`pictura.sim.model_data`):

- controlled: starts at its track's logged pose of step 0 with its logged speed and size, the
  policy drives it, its single goal is the track's final logged position (radius
  ``SimConfig.eval_goal_radius``); on arrival it scores a goal event and its slot turns invalid;
- replayed: at world step t it takes its track's logged pose of step t and is never moved by
  the dynamics; it is drawn and collidable while its log is valid, from the first valid step
  until the log ends or turns invalid (it does not come back: only the first valid run of a
  log is kept); it has no events, rewards or ``active`` flag;
- empty: never populated.

A world reset (``reset``, or the episode cap ``SimConfig.episode_length``) restores the logged
state of step 0; there is no early reset, no spawning, and every traffic light is off (logged
light states stay in the `Scenario`). Which tracks are controlled or kept is the caller's
choice (`pictura.maps.womd.selection.womd_selection` implements the paper's rule).
"""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0) / bool(...)

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import warp as wp

from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE, Scenario
from pictura.sim.features import COND_TYPE, NUM_COEFFICIENTS
from pictura.sim.geometry import rng_key
from pictura.sim.model_data import SLOT_CONTROLLED, SLOT_EMPTY, SLOT_REPLAYED, SLOT_SELF_PLAY, ModelData
from pictura.sim.spawn import ATTEMPT_STRIDE, PURPOSE_AGENTS, clear_slot, sample_coefficient
from pictura.sim.state import StateData
from pictura.sim.traffic import JUNCTION_OFF

__all__ = [
    "SLOT_CONTROLLED",
    "SLOT_EMPTY",
    "SLOT_REPLAYED",
    "SLOT_SELF_PLAY",
    "ReplayLog",
    "first_valid_run",
]

_CONTROLLED = wp.constant(SLOT_CONTROLLED)
_REPLAYED = wp.constant(SLOT_REPLAYED)
_NUM_COEF = wp.constant(NUM_COEFFICIENTS)
_COND_TYPE = wp.constant(COND_TYPE)
_STRIDE = wp.constant(ATTEMPT_STRIDE)
_P_AGENTS = wp.constant(PURPOSE_AGENTS)
_MODE_OFF = wp.constant(JUNCTION_OFF)
_AGENT_KINDS = (AGENT_VEHICLE, AGENT_PEDESTRIAN, AGENT_CYCLIST)


def first_valid_run(valid: np.ndarray) -> np.ndarray:
    """``(N, T)`` bool -> ``(N, T)`` bool: only the first contiguous run of valid steps of each
    row (a replayed agent disappears when its log turns invalid and does not come back)."""
    valid = np.asarray(valid, bool)
    started = np.cumsum(valid, axis=1) > 0
    # after the first valid step, the first invalid step ends the run for good
    ended = np.cumsum(started & ~valid, axis=1) > 0
    return valid & ~ended


@dataclass(frozen=True)
class ReplayLog:
    """Slot modes and packed logged tracks of every world (host NumPy; `build_model` uploads).

    S slots, R packed tracks (one per controlled or replayed slot), T logged steps (the longest
    scene; shorter ones are padded invalid):
      slot_mode (S,) int32 SLOT_*; slot_track (S,) int32 packed track row, -1 when empty;
      track_position (R, T, 3) float32 m; track_heading (R, T) float32 rad;
      track_speed (R, T) float32 m/s, the logged velocity along the heading (signed);
      track_valid (R, T) bool, the first valid run of each log; track_size (R, 3) float32
      length, width, height m; track_kind (R,) int32 AGENT_*; track_goal (R, 3) float32 m,
      the last valid logged position (the goal of a controlled vehicle);
      scenario_id (W,) str, the scene of each world.
    """

    slot_mode: np.ndarray
    slot_track: np.ndarray
    track_position: np.ndarray
    track_heading: np.ndarray
    track_speed: np.ndarray
    track_valid: np.ndarray
    track_size: np.ndarray
    track_kind: np.ndarray
    track_goal: np.ndarray
    scenario_id: tuple[str, ...] = ()

    @property
    def num_tracks(self) -> int:
        return len(self.track_kind)

    @property
    def num_steps(self) -> int:
        return int(self.track_valid.shape[1])

    @staticmethod
    def from_scenarios(
        scenarios: Sequence[Scenario],
        present: Sequence[np.ndarray],
        controlled: Sequence[np.ndarray],
        slots_per_world: int | Sequence[int],
    ) -> ReplayLog:
        """One world per scenario, world w's slots right after world w - 1's: the ``controlled``
        tracks take a world's first slots (in track order), the other ``present`` ones replay
        in the next slots, the rest of the world's slots are empty.

        ``slots_per_world``: the slots of every world (an int), or of each world (W sizes: a
        `WorldLayout.sized` layout). ``present[w]``, ``controlled[w]`` (N_w,) bool masks over
        scenario w's tracks (``controlled`` must be a subset of ``present``). Raises
        ``ValueError`` naming the scene and track for a controlled track invalid at step 0, a
        kept track of no agent type, a non-positive size, more kept tracks than slots, or
        mismatched lengths.
        """
        if not (len(scenarios) == len(present) == len(controlled)):
            raise ValueError(
                f"scenarios, present and controlled must have one entry per world, got "
                f"{len(scenarios)}, {len(present)}, {len(controlled)}"
            )
        if not scenarios:
            raise ValueError("scenarios must hold at least one Scenario")
        W = len(scenarios)
        sizes = np.asarray(slots_per_world, np.int64)
        if sizes.ndim == 0:
            sizes = np.full(W, int(sizes))
        if sizes.shape != (W,):
            raise ValueError(f"slots_per_world must be an int or {W} sizes, got shape {sizes.shape}")
        if sizes.min() < 1:
            raise ValueError(f"slots_per_world must be >= 1, got {int(sizes.min())}")
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        T = max(int(s.track_valid.shape[1]) for s in scenarios)
        slot_mode = np.full(int(sizes.sum()), SLOT_EMPTY, np.int32)
        slot_track = np.full(int(sizes.sum()), -1, np.int32)
        pos, heading, speed, valid, size, kind, goal = [], [], [], [], [], [], []
        row = 0
        for w, (sc, keep, ctrl) in enumerate(zip(scenarios, present, controlled, strict=True)):
            n = len(sc.track_id)
            keep = np.asarray(keep, bool)
            ctrl = np.asarray(ctrl, bool)
            name = f"scene {sc.scenario_id!r}"
            if keep.shape != (n,) or ctrl.shape != (n,):
                raise ValueError(f"{name}: present/controlled must be ({n},) masks, got {keep.shape} and {ctrl.shape}")
            if (ctrl & ~keep).any():
                raise ValueError(f"{name}: controlled track {int(np.flatnonzero(ctrl & ~keep)[0])} is not present")
            order = np.concatenate([np.flatnonzero(ctrl), np.flatnonzero(keep & ~ctrl)])
            k = len(order)
            if k > sizes[w]:
                raise ValueError(f"{name} keeps {k} tracks but slots_per_world is {int(sizes[w])}")
            is_ctrl = ctrl[order]
            late = order[is_ctrl & ~sc.track_valid[order, 0]]
            if len(late):
                raise ValueError(f"{name}: controlled track {int(late[0])} is invalid at step 0")
            types = sc.track_type[order]
            odd = np.flatnonzero(~np.isin(types, _AGENT_KINDS))
            if len(odd):
                i = int(order[odd[0]])
                raise ValueError(f"{name}: track_type[{i}] = {int(sc.track_type[i])} is no agent type")
            dims = sc.track_size[order]
            flat = np.flatnonzero(~(np.isfinite(dims) & (dims > 0)).all(1))
            if len(flat):
                i = int(order[flat[0]])
                raise ValueError(f"{name}: track_size[{i}] = {sc.track_size[i].tolist()} must be > 0")
            t = int(sc.track_valid.shape[1])
            p = np.zeros((k, T, 3), np.float32)
            h = np.zeros((k, T), np.float32)
            v = np.zeros((k, T), np.float32)
            ok = np.zeros((k, T), bool)
            p[:, :t] = sc.track_position[order]
            h[:, :t] = sc.track_heading[order]
            ok[:, :t] = first_valid_run(sc.track_valid[order])
            vel = sc.track_velocity[order].astype(np.float64)
            v[:, :t] = vel[..., 0] * np.cos(h[:, :t]) + vel[..., 1] * np.sin(h[:, :t])
            broken = np.flatnonzero(((~np.isfinite(p).all(-1) | ~np.isfinite(h)) & ok).any(1))
            if len(broken):
                raise ValueError(f"{name}: track {int(order[broken[0]])} has a non-finite valid pose")
            pos.append(p)
            heading.append(h)
            speed.append(v)
            valid.append(ok)
            size.append(dims.astype(np.float32))
            kind.append(types.astype(np.int32))
            goal.append(np.nan_to_num(sc.goal_position[order]))
            slots = starts[w] + np.arange(k)
            slot_mode[slots] = np.where(is_ctrl, SLOT_CONTROLLED, SLOT_REPLAYED)
            slot_track[slots] = row + np.arange(k)
            row += k

        return ReplayLog(
            slot_mode=slot_mode,
            slot_track=slot_track,
            track_position=np.concatenate(pos).astype(np.float32),
            track_heading=np.concatenate(heading).astype(np.float32),
            track_speed=np.concatenate(speed).astype(np.float32),
            track_valid=np.concatenate(valid).astype(bool),
            track_size=np.concatenate(size).reshape(-1, 3).astype(np.float32),
            track_kind=np.concatenate(kind).astype(np.int32),
            track_goal=np.concatenate(goal).reshape(-1, 3).astype(np.float32),
            scenario_id=tuple(s.scenario_id for s in scenarios),
        )

    def validate(self, num_slots: int) -> None:
        """Raise ``ValueError`` naming the first field that does not fit ``num_slots`` slots."""
        R = self.num_tracks
        if self.slot_mode.shape != (num_slots,) or self.slot_track.shape != (num_slots,):
            raise ValueError(
                f"ReplayLog.slot_mode/slot_track must be ({num_slots},), got {self.slot_mode.shape} "
                f"and {self.slot_track.shape}"
            )
        if not np.isin(self.slot_mode, (SLOT_CONTROLLED, SLOT_REPLAYED, SLOT_EMPTY)).all():
            raise ValueError("ReplayLog.slot_mode holds a value other than SLOT_CONTROLLED/REPLAYED/EMPTY")
        used = self.slot_mode != SLOT_EMPTY
        if ((self.slot_track < 0) | (self.slot_track >= R))[used].any():
            raise ValueError(f"ReplayLog.slot_track holds a row outside 0..{R - 1} for a populated slot")
        T = self.num_steps
        if T < 1:
            raise ValueError("ReplayLog.track_valid must have at least one step")
        for name, shape in (
            ("track_position", (R, T, 3)),
            ("track_heading", (R, T)),
            ("track_speed", (R, T)),
            ("track_valid", (R, T)),
            ("track_size", (R, 3)),
            ("track_kind", (R,)),
            ("track_goal", (R, 3)),
        ):
            if getattr(self, name).shape != shape:
                raise ValueError(f"ReplayLog.{name} must be {shape}, got {getattr(self, name).shape}")


# ---- kernel functions (called from `pictura.sim.kernels`) ------------------------------------


@wp.func
def follow_log(model: ModelData, state_in: StateData, slot: int, state_out: StateData):
    """A replayed slot takes its log's pose of the step this step arrives at (world step + 1);
    invalid when the log is (``track_valid`` keeps only the first valid run)."""
    w = state_in.slot_world[slot]
    t = state_in.world_step[w] + 1
    tr = model.slot_track[slot]
    on = int(0)
    if t < model.track_steps:
        on = model.track_valid[tr, t]
    state_out.valid[slot] = on
    if on != 0:
        pos = model.track_pos[tr, t]
        size = model.track_size[tr]
        kind = model.track_kind[tr]
        # a log that starts after step 0 finds its slot cleared by the reset
        state_out.length[slot] = size[0]
        state_out.width[slot] = size[1]
        state_out.height[slot] = size[2]
        state_out.kind[slot] = kind
        state_out.conditioning[slot, _COND_TYPE + kind] = 1.0
        state_out.pos[slot] = pos
        state_out.heading[slot] = model.track_heading[tr, t]
        state_out.speed[slot] = model.track_speed[tr, t]
        if state_in.valid[slot] != 0:
            state_out.distance[slot] = state_in.distance[slot] + wp.length(pos - state_in.pos[slot])
        else:
            # appearing: no sweep from the empty slot's origin
            state_out.prev_pos[slot] = pos
            state_out.prev_heading[slot] = model.track_heading[tr, t]
            state_out.distance[slot] = 0.0


@wp.func
def place_logged(model: ModelData, state: StateData, slot: int, tr: int):
    """Put ``slot`` at its track's logged pose, speed and size of step 0."""
    pos = model.track_pos[tr, 0]
    size = model.track_size[tr]
    kind = model.track_kind[tr]
    state.pos[slot] = pos
    state.prev_pos[slot] = pos
    state.heading[slot] = model.track_heading[tr, 0]
    state.prev_heading[slot] = model.track_heading[tr, 0]
    state.speed[slot] = model.track_speed[tr, 0]
    state.length[slot] = size[0]
    state.width[slot] = size[1]
    state.height[slot] = size[2]
    state.kind[slot] = kind
    state.valid[slot] = 1
    state.conditioning[slot, _COND_TYPE + kind] = 1.0


@wp.func
def restore_logged_world(model: ModelData, state: StateData, w: int):
    """World ``w`` back to its logged step 0: lights off, controlled vehicles at their logged
    start with Table 2 conditioning drawn as in self-play and their single goal, replayed
    agents at their logged pose (those whose log starts later appear when it does)."""
    m = model.world_map[w]
    for j in range(model.map_junction_start[m + 1] - model.map_junction_start[m]):
        wj = model.world_junction_start[w] + j
        state.junction_green[wj] = 1.0
        state.junction_yellow[wj] = 1.0
        state.junction_red[wj] = 1.0
        state.junction_offset[wj] = 0.0
        state.junction_mode[wj] = _MODE_OFF
    l0 = model.world_light_start[w]
    for k in range(model.map_light_start[m + 1] - model.map_light_start[m]):
        state.light_off[l0 + k] = 1

    key = rng_key(state.world_seed[w], _P_AGENTS, state.world_episode[w], 0)
    start = state.world_slot_start[w]
    n = int(0)
    for k in range(state.world_slot_count[w]):
        slot = start + k
        clear_slot(state, slot)
        mode = model.slot_mode[slot]
        tr = model.slot_track[slot]
        if mode == _CONTROLLED or mode == _REPLAYED:
            n += 1
            if model.track_valid[tr, 0] != 0:
                place_logged(model, state, slot, tr)
                if mode == _CONTROLLED:
                    rng = wp.rand_init(key, k * _STRIDE)
                    for c in range(_NUM_COEF):
                        value, rng = sample_coefficient(model, c, rng)
                        state.conditioning[slot, c] = value
                    goal = model.track_goal[tr]
                    for g in range(3):
                        state.goal[slot, g] = goal
    state.world_agent_count[w] = n
