"""``python -m pictura map-info SOURCE [--json] [--geojson OUT] [--png OUT]``.

Loads any map source (``procedural:seed=0``, ``carla:Town01``, a ``.xodr``/``.tfrecord``/``.json``
path, Waymo's ``validation.tfrecord-00000-of-00150``), prints its statistics, and optionally writes
GeoJSON and a top-down PNG. A WOMD file's statistics also say how many scenarios it holds;
``--record N`` picks the one described (default 0).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from pictura.maps import load_road_map
from pictura.maps.geojson import map_statistics, road_map_to_geojson
from pictura.maps.roadmap import MARKING_CENTRE_LINE, RoadMap, polyline_segments
from pictura.maps.womd.index import read_scene, scan_tfrecord
from pictura.maps.womd.tfrecord import womd_file_kind


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pictura map-info",
        description="Print statistics of a map source; optionally write GeoJSON and a top-down PNG.",
    )
    p.add_argument("source", help="map source: procedural:seed=N[,key=value...], carla:TownNN, or a path")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--geojson", type=Path, metavar="OUT", help="write a GeoJSON FeatureCollection here")
    p.add_argument("--png", type=Path, metavar="OUT", help="write a top-down picture of the map here")
    p.add_argument(
        "--record", type=int, default=0, metavar="N",
        help="WOMD .tfrecord files: describe scenario N of the file (0-based, default 0)",
    )
    p.add_argument("--dpi", type=int, default=150, help="PNG resolution (dots per inch, default 150)")
    p.add_argument(
        "--crop",
        type=float,
        nargs=4,
        metavar=("X0", "Y0", "X1", "Y1"),
        help="draw only this window of the map (m) in the PNG, e.g. to zoom on a junction",
    )
    return p


def main(argv: list[str]) -> None:
    args = _parser().parse_args(argv)
    try:
        road_map, scenario_stats = _load(args.source, args.record)
    except (ValueError, OSError, ImportError) as err:
        # A bad source is a user error: one clear line naming it, no traceback.
        raise SystemExit(f"map-info: cannot load map source {args.source!r}: {err}") from None
    stats = {**scenario_stats, **map_statistics(road_map)}
    if args.json:
        print(json.dumps(stats))
    else:
        print(_table(stats))
    if args.geojson:
        args.geojson.parent.mkdir(parents=True, exist_ok=True)
        args.geojson.write_text(json.dumps(road_map_to_geojson(road_map)))
        print(f"wrote {args.geojson}", file=sys.stderr)
    if args.png:
        args.png.parent.mkdir(parents=True, exist_ok=True)
        draw_map_png(road_map, args.png, dpi=args.dpi, crop=args.crop)
        print(f"wrote {args.png}", file=sys.stderr)


def _load(source: str, record: int) -> tuple[RoadMap, dict]:
    """(the road map, scenario statistics): for a WOMD TFRecord, how many scenarios the file
    holds, which one is described and its id and track count; {} for other sources."""
    if womd_file_kind(source) != "tfrecord" or source.startswith(("procedural", "carla:")):
        if record != 0:
            raise ValueError("--record applies to WOMD .tfrecord files only")
        return load_road_map(source), {}
    scenes, bad = scan_tfrecord(source)
    by_record = {s.record: s for s in scenes}
    if record not in by_record:
        problem = next((f": {b.reason}" for b in bad if b.record == record), "")
        raise ValueError(
            f"--record {record}: not a readable scenario of this file ({len(scenes)} readable, "
            f"{len(bad)} bad){problem}"
        )
    scenario = read_scene(by_record[record])
    stats = {"scenarios_in_file": len(scenes), "bad_records": len(bad), "record": record,
             "scenario_id": scenario.scenario_id, "tracks": len(scenario.track_id)}
    return scenario.road_map, stats


def _table(stats: dict) -> str:
    rows = []
    for key, value in stats.items():
        if key == "bounds":
            lo, hi, size = value["min"], value["max"], value["size_m"]
            value = f"min {lo}  max {hi}  size {size}"
        rows.append(f"{key:<22} {value}")
    return "\n".join(rows)


def draw_map_png(
    road_map: RoadMap, out: Path, dpi: int = 150, crop: tuple[float, float, float, float] | None = None
) -> None:
    """Top-down picture: lanes, road edges, markings, stop lines, lights, walls, parking.

    ``crop`` = (x0, y0, x1, y1) in m limits the picture to that window.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection, PolyCollection

    m = road_map
    lo, hi = m.bounds()
    if crop is not None:
        x0, y0, x1, y1 = crop
        if not (x1 > x0 and y1 > y0):
            raise ValueError(f"--crop needs X0 < X1 and Y0 < Y1, got {list(crop)}")
        lo, hi = np.array([x0, y0, 0.0]), np.array([x1, y1, 0.0])
    size = np.maximum(hi[:2] - lo[:2], 1.0)
    scale = 10.0 / float(size.max())
    fig, ax = plt.subplots(figsize=(max(size[0] * scale, 3.0), max(size[1] * scale, 3.0)))
    ax.set_facecolor("#f4f1ea")

    def lines(seg: np.ndarray, **kw: object) -> None:
        if len(seg):
            ax.add_collection(LineCollection(seg[:, :, :2], **kw))

    if len(m.crosswalk_points):
        ax.add_collection(PolyCollection(m.crosswalk_points[:, :, :2], facecolor="#d8d8d8", edgecolor="none"))
    lines(polyline_segments(m.sidewalk_points, m.sidewalk_offsets)[0], colors="#c9b99a", linewidths=1.5)
    lane_seg, lane_owner = m.lane_segments()
    in_junction = m.lane_junction[lane_owner] >= 0 if len(lane_owner) else np.zeros(0, bool)
    lines(lane_seg[~in_junction], colors="#5b8bd9", linewidths=0.6, label="lanes")
    lines(lane_seg[in_junction], colors="#a5bfe8", linewidths=0.4, label="junction lanes")
    mark_seg, mark_kind = m.marking_segments()
    lines(mark_seg[mark_kind == MARKING_CENTRE_LINE], colors="#e0a800", linewidths=0.7, label="centre line")
    lines(mark_seg[mark_kind != MARKING_CENTRE_LINE], colors="#999999", linewidths=0.5, label="lane divider")
    lines(m.road_edge_segments(), colors="black", linewidths=0.9, label="road edge")
    lines(m.wall_points, colors="#8b3a3a", linewidths=2.0, label="walls")
    lines(m.stop_line_points, colors="#d62728", linewidths=1.2, label="stop lines")
    if len(m.light_position):
        colours = np.where(m.light_group == 0, "#2ca02c", "#9467bd")
        ax.scatter(m.light_position[:, 0], m.light_position[:, 1], s=10, c=colours, zorder=5, label="lights")
        ax.quiver(
            m.light_position[:, 0],
            m.light_position[:, 1],
            np.cos(m.light_heading),
            np.sin(m.light_heading),
            color=colours,
            scale=60,
            width=0.002,
            zorder=5,
        )
    if len(m.parking_spots):
        ax.scatter(
            m.parking_spots[:, 0], m.parking_spots[:, 1], s=6, marker="s", c="#ff7f0e", label="parking"
        )
    if len(m.junction_center):
        ax.scatter(
            m.junction_center[:, 0], m.junction_center[:, 1], s=4, c="#444444", marker="x", label="junctions"
        )
    pad = 0.0 if crop is not None else 5.0
    ax.set_xlim(lo[0] - pad, hi[0] + pad)
    ax.set_ylim(lo[1] - pad, hi[1] + pad)
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(m.name, fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    fig.savefig(out, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
