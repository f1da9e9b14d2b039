"""Draw the WOMD sample record top-down: docs/img/womd_scene.png.

    python docs/img/make_womd_png.py [path/to/file.tfrecord|.json] [out.png]

Defaults to the sample record under the data root (``$PICTURA_DATA`` or ../shared/data).
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from pictura.maps import data_root, load  # noqa: E402
from pictura.maps.roadmap import MARKING_CENTRE_LINE, Scenario  # noqa: E402

TYPE_STYLE = {0: ("tab:blue", "vehicle"), 1: ("tab:green", "pedestrian"), 2: ("tab:purple", "cyclist")}


def main() -> None:
    src = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else data_root() / "womd/tfrecord/motion_data_one_scenario.tfrecord"
    )
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).with_name("womd_scene.png")
    scenario = load(str(src))
    assert isinstance(scenario, Scenario)
    rm = scenario.road_map
    fig, ax = plt.subplots(figsize=(11.5, 8.5), dpi=100)
    for i in range(rm.lane_count):
        p = rm.lane(i)
        ax.plot(p[:, 0], p[:, 1], color="0.7", lw=0.8, zorder=1)
        ax.plot(p[0, 0], p[0, 1], ".", color="0.55", ms=2, zorder=1)  # chunk boundaries
    for seg in rm.road_edge_segments():
        ax.plot(seg[:, 0], seg[:, 1], color="black", lw=1.2, zorder=2)
    segs, kinds = rm.marking_segments()
    for seg, kind in zip(segs, kinds, strict=True):
        colour = "goldenrod" if kind == MARKING_CENTRE_LINE else "0.35"
        ax.plot(
            seg[:, 0],
            seg[:, 1],
            color=colour,
            lw=0.9,
            ls="-" if kind == MARKING_CENTRE_LINE else "--",
            zorder=2,
        )
    for quad in rm.crosswalk_points:
        q = np.vstack([quad, quad[:1]])
        ax.fill(q[:, 0], q[:, 1], color="tab:cyan", alpha=0.35, zorder=2)
    for line in rm.stop_line_points:
        ax.plot(line[:, 0], line[:, 1], color="red", lw=2.0, zorder=3)
    ax.plot(
        rm.sign_position[:, 0],
        rm.sign_position[:, 1],
        "h",
        color="darkred",
        ms=7,
        zorder=4,
        label="stop sign",
    )
    for i in range(len(scenario.track_id)):
        valid = scenario.track_valid[i]
        if not valid.any():
            continue
        colour, _ = TYPE_STYLE.get(int(scenario.track_type[i]), ("tab:gray", "other"))
        p = scenario.track_position[i, valid]
        lw = 2.5 if i == scenario.sdc_index else 1.2
        ax.plot(p[:, 0], p[:, 1], color="tab:orange" if i == scenario.sdc_index else colour, lw=lw, zorder=5)
        ax.plot(p[-1, 0], p[-1, 1], "o", color=colour, ms=3, zorder=5)
        if i == scenario.sdc_index:  # it may not move at all: mark where it starts
            ax.plot(p[0, 0], p[0, 1], "*", color="tab:orange", ms=14, mec="black", zorder=6)
    for colour, label in TYPE_STYLE.values():
        ax.plot([], [], color=colour, label=f"{label} track (dot: goal)")
    ax.plot([], [], "*-", color="tab:orange", lw=2.5, ms=10, label="self-driving car (star: start)")
    ax.plot([], [], color="0.7", label="lane chunks (<= 10 m)")
    ax.plot([], [], color="black", label="road edge")
    ax.plot([], [], color="goldenrod", label="centre line (yellow)")
    ax.plot([], [], color="0.35", ls="--", label="lane divider (white)")
    ax.plot([], [], color="red", lw=2, label="stop line")
    ax.set_aspect("equal")
    ax.set_title(
        f"WOMD scenario {scenario.scenario_id}: {len(scenario.track_id)} tracks, {rm.lane_count} lane chunks"
    )
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    print(out)


if __name__ == "__main__":
    main()
