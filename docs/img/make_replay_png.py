"""Draw a WOMD scene under log replay: docs/img/womd_replay.png.

    python docs/img/make_replay_png.py [path/to/scene.json] [out.png]

Controlled vehicles (blue) are driven by a constant "keep speed and steering" action for
STEPS steps; replayed road users (grey) follow their logs. Boxes at step 0 (outlined) and
step STEPS (filled); lines are the paths in between; x marks each controlled vehicle's goal.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import warp as wp  # noqa: E402

from pictura.envs.observations import VectorizedObservationConfig  # noqa: E402
from pictura.envs.replay import ReplayDrivingEnv  # noqa: E402
from pictura.maps import data_root  # noqa: E402
from pictura.sim.replay import SLOT_CONTROLLED, SLOT_REPLAYED  # noqa: E402

STEPS = 60
KEEP = 7  # zero longitudinal and lateral jerk


def corners(box: np.ndarray) -> np.ndarray:
    x, y, h, length, width = box[0], box[1], box[3], box[4], box[5]
    c, s = np.cos(h), np.sin(h)
    local = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1], [1, 1]]) * np.array([length / 2, width / 2])
    return np.stack([x + c * local[:, 0] - s * local[:, 1], y + s * local[:, 0] + c * local[:, 1]], 1)


def main() -> None:
    src = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else data_root() / "womd/gpudrive_json/tfrecord-00000-of-01000_325.json"
    )
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).with_name("womd_replay.png")
    env = ReplayDrivingEnv([str(src)], observation=VectorizedObservationConfig(max_lanes=8, max_boundaries=8))
    mode = env.replay_log.slot_mode
    td = env.reset()
    boxes = [wp.to_torch(env.state.agent_box).numpy().copy()]
    for _ in range(STEPS):
        td["action"] = torch.full((env.num_slots,), KEEP, dtype=torch.int64)
        td = env.step(td)["next"]
        boxes.append(wp.to_torch(env.state.agent_box).numpy().copy())
    hist = np.stack(boxes)  # (STEPS + 1, S, 8)

    rm = env.road_maps[0]
    fig, ax = plt.subplots(figsize=(8, 8), dpi=110)
    for k in range(rm.lane_count):
        p = rm.lane_points[rm.lane_offsets[k] : rm.lane_offsets[k + 1]]
        ax.plot(p[:, 0], p[:, 1], color="0.85", lw=0.6, zorder=1)
    for k in range(rm.road_edge_count):
        p = rm.road_edge_points[rm.road_edge_offsets[k] : rm.road_edge_offsets[k + 1]]
        ax.plot(p[:, 0], p[:, 1], color="0.35", lw=0.8, zorder=1)
    goal = env.replay_log.track_goal[env.replay_log.slot_track]
    shown = []
    for slot, m in enumerate(mode):
        if m not in (SLOT_CONTROLLED, SLOT_REPLAYED):
            continue
        color = "tab:blue" if m == SLOT_CONTROLLED else "0.45"
        on = hist[:, slot, 7] >= 0
        if not on.any():
            continue
        ax.plot(hist[on, slot, 0], hist[on, slot, 1], color=color, lw=1.0, zorder=2)
        if on[0]:
            c = corners(hist[0, slot])
            ax.plot(c[:, 0], c[:, 1], color=color, lw=0.8, zorder=3)
            shown.append(hist[0, slot, :2])
        last = np.flatnonzero(on)[-1]
        c = corners(hist[last, slot])
        ax.fill(c[:, 0], c[:, 1], color=color, alpha=0.8, zorder=3)
        if m == SLOT_CONTROLLED:
            ax.plot(goal[slot, 0], goal[slot, 1], "x", color="tab:red", ms=7, zorder=4)
            shown.append(goal[slot, :2])
    pts = np.asarray(shown)
    lo, hi = pts.min(0) - 25, pts.max(0) + 25
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_aspect("equal")
    ax.set_title(
        f"{env.scenario_ids[0]}: {int((mode == SLOT_CONTROLLED).sum())} controlled (blue), "
        f"{int((mode == SLOT_REPLAYED).sum())} replayed (grey); step 0 outlined, step {STEPS} filled",
        fontsize=9,
    )
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    fig.tight_layout()
    fig.savefig(out)
    print(out)


if __name__ == "__main__":
    main()
