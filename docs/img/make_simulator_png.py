"""Figure for docs/simulator.md: ``python docs/img/make_simulator_png.py`` from the repository root.

A procedural town with 120 agents (vehicles, pedestrians, cyclists) that accelerate straight
ahead for 1.2 s and then hold: those that meet a curve leave the road or hit someone and halt in
place (red). Parked cars are grey, walls brown, sidewalks light green.
"""

import matplotlib.pyplot as plt
import numpy as np
import warp as wp
from matplotlib.patches import Polygon

from pictura.maps.procedural import generate
from pictura.sim import SimConfig, build_model, reset, step
from pictura.sim.snapshot import WorldLayout

wp.config.log_level = wp.LOG_WARNING  # no start-up banner or module-load lines (INFO)


def np_box_corners(x, y, heading, length, width):
    c, s = np.cos(heading), np.sin(heading)
    local = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]]) * np.array([length / 2, width / 2])
    return np.stack([x + c * local[:, 0] - s * local[:, 1], y + s * local[:, 0] + c * local[:, 1]], 1)


road = generate(seed=3)
cfg = SimConfig(agents_per_world=(120, 120), early_reset_halted_fraction=1.0)
layout = WorldLayout.uniform([0], 120, [len(road.light_position)], cfg.parked_per_world)
model = build_model([road], layout, cfg, "cpu")
s0, s1, ctl = model.state(), model.state(), model.control()
reset(model, s0, 0)
start = s0.numpy()
trails = [start["pos"][:, :2].copy()]
for t in range(30):
    ctl.action.assign(np.full(120, 10 if t < 12 else 7, np.int32))  # speed up, then hold
    step(model, s0, ctl, s1)
    s0, s1 = s1, s0
    trails.append(s0.pos.numpy()[:, :2].copy())
st = s0.numpy()
trails = np.stack(trails)

plt.switch_backend("Agg")
fig, ax = plt.subplots(figsize=(9, 9))
for seg in road.road_edge_segments():
    ax.plot(seg[:, 0], seg[:, 1], color="0.2", lw=0.8)
for seg in road.lane_segments()[0]:
    ax.plot(seg[:, 0], seg[:, 1], color="0.8", lw=0.5, zorder=0)
for k in range(len(road.sidewalk_offsets) - 1):
    sw = road.sidewalk_points[road.sidewalk_offsets[k] : road.sidewalk_offsets[k + 1]]
    ax.plot(sw[:, 0], sw[:, 1], color="#b8e0b0", lw=1.2, zorder=0)
for wall in road.wall_points:
    ax.plot(wall[:, 0], wall[:, 1], color="#8b5a2b", lw=1.5)
for b in st["agent_box"][120:]:
    if b[7] >= 0:
        ax.add_patch(Polygon(np_box_corners(b[0], b[1], b[3], b[4], b[5]), closed=True, fc="0.6", ec="k", lw=0.3))
valid = start["valid"] == 1
for i in np.nonzero(valid)[0]:
    ax.plot(trails[:, i, 0], trails[:, i, 1], color="k", lw=0.8)
    halted = st["halted"][i] == 1 and st["world_reset"][0] == 0
    c = np_box_corners(st["pos"][i, 0], st["pos"][i, 1], st["heading"][i], st["length"][i], st["width"][i])
    active_colour = ("tab:blue", "tab:purple", "tab:orange")[int(st["kind"][i])]
    ax.add_patch(Polygon(c, closed=True, fc="tab:red" if halted else active_colour, ec="k", lw=0.4))
for i in np.nonzero(valid)[0][:6]:
    g = start["goal"][i]
    ax.plot(
        np.r_[start["pos"][i, 0], g[:, 0]], np.r_[start["pos"][i, 1], g[:, 1]], "--", color="tab:green", lw=1
    )
    ax.plot(g[:, 0], g[:, 1], "o", color="tab:green", ms=4)
ls = st["light_state"]
colors = {0: "red", 1: "gold", 2: "limegreen", 3: "0.6"}
for p, s in zip(road.light_position, ls, strict=True):
    ax.plot(p[0], p[1], "o", color=colors[int(s)], ms=5, mec="k", mew=0.4)
ax.set_aspect("equal")
ax.set_title(
    f"procedural:seed=3, {valid.sum()} agents after 30 steps (3 s): vehicles blue, pedestrians purple, cyclists "
    "orange, red halted;\nparked cars grey, walls brown, sidewalks light green; green: goal waypoints of 6 agents; "
    "dots: traffic lights",
    fontsize=9,
)
ax.set_xlabel("x (m)")
ax.set_ylabel("y (m)")
fig.tight_layout()
fig.savefig("docs/img/simulator_world.png", dpi=110)
print(st["world_episode"], valid.sum(), st["halted"].sum(), st["world_reset"], st["events"].sum(0))
