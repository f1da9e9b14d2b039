"""Blind-corner takeovers (paper Sec. 5.2, Fig. 9): does the ego slow down *before* a hidden
crossing vehicle comes into view?

1. Record: drive ``recorder`` on a one-world env from a seeded reset for ``steps`` steps,
   keeping every step's snapshot, speeds, world clock and every slot's action.
2. Pick start states (every ``every`` steps): an ego within ``junction_radius`` m of a junction
   centre. It is a *hidden* case when an oncoming or crossing vehicle (heading more than 45 deg
   from the ego's) within ``vehicle_radius`` m is *occluded*: inside the field of view of one
   of the ego's cameras (`in_field_of_view`) with visible fraction 0
   (`Renderer.occlusion_fraction`), and becomes visible within ``reveal_window`` steps; a
   *control* case when no vehicle within ``vehicle_radius`` m is hidden-then-revealed. A
   vehicle merely outside every camera's view is not hidden. Reveal time = first visible step
   (control cases use the start time + ``reveal_window`` / 2 as their reference). Each hidden
   case keeps its vehicle's visible fraction at every step from the start to the reveal
   (``Case.visible``).
3. Take over: rewind to the recorded simulator state of the start step (`DrivingEnv.save_state`),
   then for ``horizon`` steps the tested policy drives the ego while every other agent is
   replayed from the recording (the simulator's log replay, `pictura.sim.replay`: each takes
   its recorded pose of every step whatever the ego does, and stays collidable). As the paper:
   "all other agents continue along their recorded trajectories".

The result is ego speed (m/s) vs time relative to reveal (s), per case, for each tested policy.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch
import warp as wp

from pictura.eval.metrics import mean_standard_error
from pictura.sim.model_data import SLOT_REPLAYED, SLOT_SELF_PLAY
from pictura.sim.snapshot import BOX_INVALID, BoxView

STEP_S = 0.1
"""Simulator step (s)."""


@dataclass
class Recording:
    """A recorded drive: T steps of snapshots, speeds, world clocks and actions, and the seed."""

    seed: int
    agent_box: np.ndarray  # (T, S + P, 8)
    light_state: np.ndarray  # (T, L) int32
    action: np.ndarray  # (T, S) int64, the action taken after snapshot t
    valid: np.ndarray  # (T, S) bool
    states: list = field(default_factory=list)  # env.save_state() before each step's action
    speed: np.ndarray | None = None  # (T, S) m/s at snapshot t
    world_step: np.ndarray | None = None  # (T,) world 0's clock at snapshot t


@dataclass
class Case:
    """One takeover start: ego slot, start step, reveal step (hidden) or reference (control);
    ``visible``: the hidden vehicle's visible fraction at each step from start to reveal."""

    ego: int
    start: int
    reveal: int
    hidden: bool
    vehicle: int = -1
    visible: list[float] = field(default_factory=list)
    speeds: dict[str, list[float]] = field(default_factory=dict)


def record(env, recorder, steps: int) -> Recording:
    """Drive ``recorder`` (a `ProbedPolicy`) for ``steps`` steps from ``env.reset()``."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    td = env.reset()
    boxes, lights, actions, valids, states, speeds, clocks = [], [], [], [], [], [], []
    for _ in range(steps):
        states.append(env.save_state())
        snap = env.snapshot()
        box, light = snap["agent_box"], snap["light_state"]
        action = recorder.act(td["observation"])
        boxes.append(box.cpu().numpy())
        lights.append(light.cpu().numpy())
        actions.append(action.cpu().numpy())
        valids.append(td["valid"].cpu().numpy())
        speeds.append(env.state.speed.numpy().copy())
        clocks.append(int(env.state.world_step.numpy()[0]))
        td.set("action", action)
        td = env.step(td)["next"]
    return Recording(
        env._seed, np.stack(boxes), np.stack(lights), np.stack(actions), np.stack(valids), states,
        np.stack(speeds), np.asarray(clocks),
    )


_BOX_EDGES = [(a, b) for a in range(8) for b in range(a + 1, 8) if bin(a ^ b).count("1") == 1]
"""The 12 edges of a box whose corner k has bits (x side, y side, z side)."""


def in_field_of_view(rig, ego_box: np.ndarray, target_box: np.ndarray) -> bool:
    """Is any part of ``target_box`` (a snapshot row) inside the view of one of ``rig``'s
    cameras on the ego (``ego_box``), occluders ignored? Pinhole projection of the box clipped
    to each camera's near plane (its 8 corners in front, plus where its 12 edges cross the
    plane): in view when the projection's extent overlaps the image and part of the box lies
    before the far plane."""
    ego, target = BoxView(ego_box), BoxView(target_box)
    c, sn = math.cos(ego.heading), math.sin(ego.heading)
    hl, hw = 0.5 * target.length, 0.5 * target.width
    tc, ts = math.cos(target.heading), math.sin(target.heading)
    corners = []
    for k in range(8):
        fx, fy = (hl if k & 1 else -hl), (hw if k & 2 else -hw)
        wx = target.x + tc * fx - ts * fy - ego.x
        wy = target.y + ts * fx + tc * fy - ego.y
        z = target.z + (target.height if k & 4 else 0.0) - ego.z
        corners.append((c * wx + sn * wy, -sn * wx + c * wy, z))
    pts = np.asarray(corners, np.float64)  # ego frame: x forward, y left, z up
    cx, cy = rig.principal
    for cam in rig.cameras:
        yaw, pitch = math.radians(cam.yaw_deg), math.radians(cam.pitch_deg)
        d = pts - (cam.x, cam.y, cam.z)
        x1 = math.cos(yaw) * d[:, 0] + math.sin(yaw) * d[:, 1]
        cam_pts = np.stack(
            [
                math.cos(pitch) * x1 + math.sin(pitch) * d[:, 2],  # depth
                -math.sin(yaw) * d[:, 0] + math.cos(yaw) * d[:, 1],  # left
                -math.sin(pitch) * x1 + math.cos(pitch) * d[:, 2],  # up
            ],
            1,
        )
        depth = cam_pts[:, 0]
        if depth.min() >= rig.far or depth.max() <= rig.near:
            continue
        front = [cam_pts[k] for k in range(8) if depth[k] > rig.near]
        for a, b in _BOX_EDGES:
            if (depth[a] > rig.near) != (depth[b] > rig.near):
                t = (rig.near - depth[a]) / (depth[b] - depth[a])
                front.append(cam_pts[a] + t * (cam_pts[b] - cam_pts[a]))
        q = np.asarray(front)
        u = cx - rig.focal * q[:, 1] / q[:, 0]
        v = cy - rig.focal * q[:, 2] / q[:, 0]
        if u.max() >= 0 and u.min() <= rig.width and v.max() >= 0 and v.min() <= rig.height:
            return True
    return False


def find_cases(
    env, rec: Recording, junction_radius: float = 40.0, vehicle_radius: float = 60.0, reveal_window: int = 30,
    every: int = 5, horizon: int = 40, max_cases: int = 4,
) -> list[Case]:
    """Hidden and control start states (at most ``max_cases`` of each) of world 0. Starts whose
    world resets within the takeover (the clock does not run on) are skipped."""
    road_map, layout = env.road_maps[0], env.layout
    junctions = np.asarray(road_map.junction_center, np.float64)[:, :2]
    rig = env.renderer.rig
    T = len(rec.agent_box)
    hidden, control = [], []
    for t in range(0, T - max(horizon, reveal_window), every):
        if rec.world_step is not None and rec.world_step[t + horizon] - rec.world_step[t] != horizon:
            continue
        box = rec.agent_box[t]
        view = BoxView(box)
        for ego in np.flatnonzero(rec.valid[t]):
            if not len(junctions) or len(hidden) >= max_cases and len(control) >= max_cases:
                break
            ex, ey, eh = view.x[ego], view.y[ego], view.heading[ego]
            if np.hypot(junctions[:, 0] - ex, junctions[:, 1] - ey).min() > junction_radius:
                continue
            revealed = None
            for v in range(layout.box_count):
                if v == ego or view.kind[v] != 0 or v >= layout.num_slots:
                    continue  # moving vehicles only: parked cars never cross
                if math.hypot(view.x[v] - ex, view.y[v] - ey) > vehicle_radius:
                    continue
                if math.cos(view.heading[v] - eh) > math.cos(math.pi / 4):
                    continue  # same direction: a leader or follower, not a crossing threat
                if not in_field_of_view(rig, box[ego], box[v]):
                    continue  # out of every camera's view is not occluded
                visible = [env.renderer.occlusion_fraction(box, rec.light_state[t], int(ego), v)]
                if visible[0] > 0:
                    continue
                for k in range(t + 1, t + reveal_window + 1):
                    kind = BoxView(rec.agent_box[k]).kind
                    if kind[v] == BOX_INVALID or kind[ego] == BOX_INVALID:
                        break
                    visible.append(env.renderer.occlusion_fraction(rec.agent_box[k], rec.light_state[k], int(ego), v))
                    if visible[-1] > 0:
                        revealed = (v, k, visible)
                        break
                if revealed:
                    break
            if revealed and len(hidden) < max_cases:
                hidden.append(Case(int(ego), t, revealed[1], True, revealed[0], [float(f) for f in revealed[2]]))
            elif revealed is None and len(control) < max_cases:
                control.append(Case(int(ego), t, t + reveal_window // 2, False))
    return hidden + control


@contextmanager
def partners_replayed(env, rec: Recording, case: Case, horizon: int) -> Iterator[None]:
    """Within the block every slot of ``env`` but ``case.ego`` is a replayed log of ``rec``
    from ``case.start`` on (its recorded pose, speed and size of each step; invalid where the
    recording has it invalid): the simulator's log replay (`pictura.sim.replay`), so the
    others follow their recorded trajectories whatever the ego does. ``env``'s current world
    clock must be the recording's at ``case.start`` (rewind first). Restores self-play after."""
    if rec.speed is None or rec.world_step is None:
        raise ValueError("partners_replayed needs a Recording with speed and world_step (record())")
    model, data = env.model, env.model.data
    S = env.layout.num_slots
    w0 = int(rec.world_step[case.start])
    if int(env.state.world_step.numpy()[0]) != w0:
        raise ValueError(f"env's world clock is not the recording's at step {case.start} ({w0}): rewind first")
    steps = w0 + horizon + 1
    pos = np.zeros((S, steps, 3), np.float32)
    heading = np.zeros((S, steps), np.float32)
    speed = np.zeros((S, steps), np.float32)
    valid = np.zeros((S, steps), np.int32)
    size = np.zeros((S, 3), np.float32)
    kind = np.zeros(S, np.int32)
    for k in range(min(horizon + 1, len(rec.agent_box) - case.start)):
        box = BoxView(rec.agent_box[case.start + k, :S])
        on = box.valid
        j = w0 + k
        pos[on, j] = box.xyz[on]
        heading[on, j] = box.heading[on]
        speed[on, j] = rec.speed[case.start + k, on]
        valid[on, j] = 1
        first = on & (size[:, 0] == 0)
        size[first] = box.size[first]
        kind[first] = box.kind[first].astype(np.int32)
    mode = np.full(S, SLOT_REPLAYED, np.int32)
    mode[case.ego] = SLOT_SELF_PLAY
    track = np.arange(S, dtype=np.int32)
    track[case.ego] = -1
    names = ("slot_mode", "slot_track", "track_pos", "track_heading", "track_speed", "track_valid", "track_size",
             "track_kind", "track_steps")
    saved = {name: getattr(data, name) for name in names}
    device = model.device
    data.slot_mode = wp.array(mode, dtype=wp.int32, device=device)
    data.slot_track = wp.array(track, dtype=wp.int32, device=device)
    data.track_pos = wp.array(pos, dtype=wp.vec3, device=device)
    data.track_heading = wp.array(heading, dtype=float, device=device)
    data.track_speed = wp.array(speed, dtype=float, device=device)
    data.track_valid = wp.array(valid, dtype=wp.int32, device=device)
    data.track_size = wp.array(size, dtype=wp.vec3, device=device)
    data.track_kind = wp.array(kind, dtype=wp.int32, device=device)
    data.track_steps = steps
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(data, name, value)


def take_over(env, rec: Recording, case: Case, policy, name: str, horizon: int = 40) -> list[float]:
    """Rewind ``env`` to ``case.start``, then ``policy`` drives ``case.ego`` for ``horizon``
    steps while every other agent replays its recorded trajectory (`partners_replayed`).

    Returns the ego's speed (m/s) at each of the ``horizon`` steps (also stored in ``case``)."""
    if case.start + horizon > len(rec.action):
        raise ValueError(f"horizon {horizon} runs past the recording ({len(rec.action)} steps)")
    if not rec.states:
        raise ValueError("take_over needs the recorded simulator states (record() keeps them)")
    td = env.restore_state(rec.states[case.start])
    speeds = []
    with partners_replayed(env, rec, case, horizon):
        for _ in range(horizon):
            action = torch.full((env.num_slots,), 7, dtype=torch.int64, device=env.device)  # replayed: unused
            action[case.ego] = policy.act(td["observation"])[case.ego]
            td.set("action", action)
            speeds.append(float(wp.to_torch(env.state.speed)[case.ego]))
            td = env.step(td)["next"]
    case.speeds[name] = speeds
    return speeds


def summarize(cases: list[Case], names: list[str]) -> dict:
    """Mean ego speed vs time from reveal (s), per policy, for hidden and control cases, with
    the standard error of each point (``speed_se``, the cases as units; None below two), and
    the paired difference (second minus first policy) of each case's mean speed before reveal,
    with its mean and standard error."""
    out: dict = {}
    for group, want in (("hidden", True), ("control", False)):
        sel = [c for c in cases if c.hidden == want]
        curves = {}
        for name in names:
            points: dict[float, list[float]] = {}
            for c in sel:
                for i, s in enumerate(c.speeds.get(name, [])):
                    rel = round((c.start + i - c.reveal) * STEP_S, 3)
                    points.setdefault(rel, []).append(s)
            times = sorted(points)
            curves[name] = {
                "time_from_reveal_s": times,
                "speed_mean": [float(np.mean(points[k])) for k in times],
                "speed_se": [mean_standard_error(points[k]) for k in times],
            }
        paired = []
        if len(names) == 2:
            for c in sel:
                before = c.reveal - c.start
                a, b = (np.mean(c.speeds[n][: max(before, 1)]) for n in names)
                paired.append(float(b - a))
        out[group] = {
            "cases": len(sel), "curves": curves, "paired_speed_diff_before_reveal": paired,
            "paired_speed_diff_mean": float(np.mean(paired)) if paired else None,
            "paired_speed_diff_se": mean_standard_error(paired),
        }
    return out
