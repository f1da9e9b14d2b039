"""Blind-corner takeovers (paper Sec. 5.2, Fig. 9): does the ego slow down *before* a hidden
crossing vehicle comes into view?

1. Record: drive ``recorder`` on a one-world env from a seeded reset for ``steps`` steps,
   keeping every step's snapshot and every slot's action.
2. Pick start states (every ``every`` steps): an ego within ``junction_radius`` m of a junction
   centre. It is a *hidden* case when an oncoming or crossing vehicle (heading more than 45 deg
   from the ego's) within ``vehicle_radius`` m has visible fraction 0 and becomes visible
   (`Renderer.occlusion_fraction` > 0) within ``reveal_window`` steps; a *control* case when no
   vehicle within ``vehicle_radius`` m is hidden-then-revealed. Reveal time = first visible step
   (control cases use the start time + ``reveal_window`` / 2 as their reference).
3. Take over: rewind to the recorded simulator state of the start step (`DrivingEnv.save_state`;
   equivalently, replay the recording's seed and actions: the simulator is deterministic),
   then for ``horizon`` steps the tested policy drives the ego while the
   others replay their recorded actions.

Approximation (the simulator has no log replay of agents here): the others replay their
recorded *actions* open-loop, so they follow their recorded trajectories exactly unless the
ego's different behaviour changes theirs (a collision with the ego halts them). The result is
ego speed (m/s) vs time relative to reveal (s), per case, for each tested policy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
import warp as wp

from pictura.eval.metrics import mean_standard_error
from pictura.sim.snapshot import BOX_HEADING, BOX_INVALID, BOX_KIND, BOX_X, BOX_Y

STEP_S = 0.1
"""Simulator step (s)."""


@dataclass
class Recording:
    """A recorded drive: T steps of snapshots, actions and the seed to replay it."""

    seed: int
    agent_box: np.ndarray  # (T, S + P, 8)
    light_state: np.ndarray  # (T, L) int32
    action: np.ndarray  # (T, S) int64, the action taken after snapshot t
    valid: np.ndarray  # (T, S) bool
    states: list = field(default_factory=list)  # env.save_state() before each step's action


@dataclass
class Case:
    """One takeover start: ego slot, start step, reveal step (hidden) or reference (control)."""

    ego: int
    start: int
    reveal: int
    hidden: bool
    vehicle: int = -1
    speeds: dict[str, list[float]] = field(default_factory=dict)


def record(env, recorder, steps: int) -> Recording:
    """Drive ``recorder`` (a `ProbedPolicy`) for ``steps`` steps from ``env.reset()``."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    td = env.reset()
    boxes, lights, actions, valids, states = [], [], [], [], []
    for _ in range(steps):
        states.append(env.save_state())
        snap = env.snapshot()
        box, light = snap["agent_box"], snap["light_state"]
        action = recorder.act(td["observation"])
        boxes.append(box.cpu().numpy())
        lights.append(light.cpu().numpy())
        actions.append(action.cpu().numpy())
        valids.append(td["valid"].cpu().numpy())
        td.set("action", action)
        td = env.step(td)["next"]
    return Recording(env._seed, np.stack(boxes), np.stack(lights), np.stack(actions), np.stack(valids), states)


def find_cases(
    env, rec: Recording, junction_radius: float = 40.0, vehicle_radius: float = 60.0, reveal_window: int = 30,
    every: int = 5, horizon: int = 40, max_cases: int = 4,
) -> list[Case]:
    """Hidden and control start states (at most ``max_cases`` of each) of world 0."""
    road_map, layout = env.road_maps[0], env.layout
    junctions = np.asarray(road_map.junction_center, np.float64)[:, :2]
    T = len(rec.agent_box)
    hidden, control = [], []
    for t in range(0, T - max(horizon, reveal_window), every):
        box = rec.agent_box[t]
        for ego in np.flatnonzero(rec.valid[t]):
            if not len(junctions) or len(hidden) >= max_cases and len(control) >= max_cases:
                break
            ex, ey, eh = box[ego, BOX_X], box[ego, BOX_Y], box[ego, BOX_HEADING]
            if np.hypot(junctions[:, 0] - ex, junctions[:, 1] - ey).min() > junction_radius:
                continue
            revealed = None
            for v in range(layout.box_count):
                if v == ego or box[v, BOX_KIND] != 0 or v >= layout.num_slots:
                    continue  # moving vehicles only: parked cars never cross
                if math.hypot(box[v, BOX_X] - ex, box[v, BOX_Y] - ey) > vehicle_radius:
                    continue
                if math.cos(box[v, BOX_HEADING] - eh) > math.cos(math.pi / 4):
                    continue  # same direction: a leader or follower, not a crossing threat
                if env.renderer.occlusion_fraction(box, rec.light_state[t], int(ego), v) > 0:
                    continue
                for k in range(t + 1, t + reveal_window + 1):
                    bk = rec.agent_box[k]
                    if bk[v, BOX_KIND] == BOX_INVALID or bk[ego, BOX_KIND] == BOX_INVALID:
                        break
                    if env.renderer.occlusion_fraction(bk, rec.light_state[k], int(ego), v) > 0:
                        revealed = (v, k)
                        break
                if revealed:
                    break
            if revealed and len(hidden) < max_cases:
                hidden.append(Case(int(ego), t, revealed[1], True, revealed[0]))
            elif revealed is None and len(control) < max_cases:
                control.append(Case(int(ego), t, t + reveal_window // 2, False))
    return hidden + control


def take_over(env, rec: Recording, case: Case, policy, name: str, horizon: int = 40) -> list[float]:
    """Replay ``rec`` to ``case.start``, then ``policy`` drives ``case.ego`` for ``horizon`` steps.

    Returns the ego's speed (m/s) at each of the ``horizon`` steps (also stored in ``case``)."""
    if case.start + horizon > len(rec.action):
        raise ValueError(f"horizon {horizon} runs past the recording ({len(rec.action)} steps)")
    if rec.states:
        td = env.restore_state(rec.states[case.start])  # rewind instead of replaying
    else:
        env.set_seed(rec.seed)
        td = env.reset()
        for t in range(case.start):
            td.set("action", torch.as_tensor(rec.action[t], device=env.device))
            td = env.step(td)["next"]
    speeds = []
    for t in range(case.start, case.start + horizon):
        action = torch.as_tensor(rec.action[t], device=env.device).clone()
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
