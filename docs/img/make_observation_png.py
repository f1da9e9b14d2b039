"""Draw one agent's vectorized observation on the procedural town: docs/img/vectorized_observation.png.

    python docs/img/make_observation_png.py [out.png]

Left: the world top-down with the agent's window. Right: the observation decoded back from the
tensors in the ego frame (x forward, up the page), i.e. exactly what the policy receives.
"""

from __future__ import annotations

import dataclasses
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import warp as wp  # noqa: E402
from matplotlib.patches import Polygon  # noqa: E402

from pictura.envs.observations import VectorizedObservation  # noqa: E402
from pictura.maps import load_road_map  # noqa: E402
from pictura.sim import SimConfig, build_model, reset, step  # noqa: E402
from pictura.sim.snapshot import WorldLayout  # noqa: E402

LIGHT_COLOURS = ("tab:red", "gold", "tab:green", "0.6")


def box_corners(x, y, h, length, width):
    c, s = np.cos(h), np.sin(h)
    local = np.array([[1, 1], [1, -1], [-1, -1], [-1, 1]]) * [length / 2, width / 2]
    return np.stack([x + c * local[:, 0] - s * local[:, 1], y + s * local[:, 0] + c * local[:, 1]], axis=1)


def main() -> None:
    out_path = sys.argv[1] if len(sys.argv) > 1 else "docs/img/vectorized_observation.png"
    wp.config.log_level = wp.LOG_WARNING  # no start-up banner or module-load lines (INFO)
    road_map = load_road_map("procedural:seed=0")
    layout = WorldLayout.uniform([0], 120, [len(road_map.light_position)])
    model = build_model([road_map], layout, dataclasses.replace(SimConfig(), agents_per_world=(110, 120)), "cpu")
    state, nxt, control = model.state(), model.state(), model.control()
    reset(model, state, 3)
    control.action.fill_(7)  # coast
    for _ in range(20):
        step(model, state, control, nxt)
        state, nxt = nxt, state
    obs = VectorizedObservation([road_map], layout, "cpu")
    box, light, speed = (wp.to_torch(a) for a in (state.agent_box, state.light_state, state.speed))
    out = {k: v.numpy() for k, v in obs.build(box, light, speed).items()}
    ego = int(np.argmax(out["partners_mask"].sum(1) * 100 + out["traffic_mask"].sum(1)))
    b = box.numpy()
    x0, y0, h0 = b[ego, 0], b[ego, 1], b[ego, 3]
    c, s = np.cos(h0), np.sin(h0)

    def to_world(p):
        p = np.asarray(p) * 200.0
        return np.stack([x0 + c * p[..., 0] - s * p[..., 1], y0 + s * p[..., 0] + c * p[..., 1]], axis=-1)

    fig, (ax, axe) = plt.subplots(1, 2, figsize=(14, 6.2), gridspec_kw={"width_ratios": [1.6, 1]})
    for seg in road_map.lane_segments()[0]:
        ax.plot(seg[:, 0], seg[:, 1], color="0.85", lw=0.6)
    for seg in road_map.road_edge_segments():
        ax.plot(seg[:, 0], seg[:, 1], color="0.55", lw=0.8)
    for w in road_map.wall_points:
        ax.plot(w[:, 0], w[:, 1], color="saddlebrown", lw=0.8, alpha=0.4)
    window = to_world(np.array([[-60, -50], [200, -50], [200, 50], [-60, 50]]) / 200.0)
    ax.add_patch(Polygon(window, closed=True, fill=False, ls="--", ec="k", lw=1.2))
    lanes = out["lanes"][ego][out["lanes_mask"][ego]]
    for ln in lanes:
        mid, half, d = ln[:2], ln[2] * 10 / 200, ln[3:5]
        p = to_world(np.stack([mid - d * half, mid + d * half]))
        ax.plot(p[:, 0], p[:, 1], color="tab:blue", lw=1.6)
    bounds = out["boundaries"][ego][out["boundaries_mask"][ego]]
    for bd in bounds:
        mid, half, d = bd[:2], bd[2] * 10 / 200, bd[3:5]
        p = to_world(np.stack([mid - d * half, mid + d * half]))
        ax.plot(p[:, 0], p[:, 1], color="saddlebrown" if bd[5] > 0.5 else "k", lw=2.0)
    for tr in out["traffic"][ego][out["traffic_mask"][ego]]:
        p = to_world(tr[:4].reshape(2, 2))
        ax.plot(p[:, 0], p[:, 1], color=LIGHT_COLOURS[int(np.argmax(tr[4:]))], lw=3.5)
    same_world = np.flatnonzero(b[:, 7] >= 0)
    for j in same_world:
        face = "tab:orange" if j == ego else "none"
        ax.add_patch(Polygon(box_corners(b[j, 0], b[j, 1], b[j, 3], b[j, 4], b[j, 5]), fc=face, ec="0.4", lw=0.6))
    for p in out["partners"][ego][out["partners_mask"][ego]]:
        rel = p[:2] * 200
        corners = box_corners(rel[0], rel[1], np.arctan2(p[5], p[4]), p[2] * 10, p[3] * 5) / 200.0
        ax.add_patch(Polygon(to_world(corners), fc="tab:purple", ec="k", lw=0.6))
    lo, hi = window.min(0) - 15, window.max(0) + 15
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_aspect("equal")
    ax.set_title(f"world (procedural:seed=0): slot {ego} and its window")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")

    # Ego frame: forward is up (plot -y_ego on the horizontal axis so left stays left).
    def ego_xy(p):
        p = np.asarray(p) * 200.0
        return -p[..., 1], p[..., 0]

    for ln in lanes:
        mid, half, d = ln[:2], ln[2] * 10 / 200, ln[3:5]
        u, v = ego_xy(np.stack([mid - d * half, mid + d * half]))
        axe.plot(u, v, color="tab:blue", lw=1.6)
        axe.annotate("", xy=(u[1], v[1]), xytext=(u[0], v[0]), arrowprops=dict(arrowstyle="->", color="tab:blue", lw=0.8))
    for bd in bounds:
        mid, half, d = bd[:2], bd[2] * 10 / 200, bd[3:5]
        u, v = ego_xy(np.stack([mid - d * half, mid + d * half]))
        axe.plot(u, v, color="saddlebrown" if bd[5] > 0.5 else "k", lw=2.0)
    for tr in out["traffic"][ego][out["traffic_mask"][ego]]:
        u, v = ego_xy(tr[:4].reshape(2, 2))
        axe.plot(u, v, color=LIGHT_COLOURS[int(np.argmax(tr[4:]))], lw=3.5)
    for k, p in enumerate(out["partners"][ego][out["partners_mask"][ego]]):
        rel = p[:2] * 200
        corners = box_corners(rel[0], rel[1], np.arctan2(p[5], p[4]), p[2] * 10, p[3] * 5) / 200.0
        u, v = ego_xy(corners)
        axe.add_patch(Polygon(np.stack([u, v], 1), fc="tab:purple", ec="k", lw=0.6))
        axe.text(-rel[1] + 3, rel[0] + 3, str(k), fontsize=7)
    axe.add_patch(Polygon(np.stack(ego_xy(box_corners(0, 0, 0, b[ego, 4], b[ego, 5]) / 200.0), 1), fc="tab:orange"))
    axe.add_patch(Polygon([[50, -60], [50, 200], [-50, 200], [-50, -60]], closed=True, fill=False, ls="--", ec="k"))
    axe.set_xlim(-70, 70)
    axe.set_ylim(-70, 210)
    axe.set_aspect("equal")
    axe.set_title(
        f"decoded observation (ego frame): {len(lanes)} lanes, {len(bounds)} boundaries,\n"
        f"{int(out['partners_mask'][ego].sum())} partners (numbered nearest first), "
        f"{int(out['traffic_mask'][ego].sum())} stop lines"
    )
    axe.set_xlabel("left <-  lateral (m)  -> right")
    axe.set_ylabel("forward (m)")
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    print(out_path)


if __name__ == "__main__":
    main()
