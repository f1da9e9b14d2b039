"""``python -m pictura map-info``: statistics, GeoJSON and PNG output, clear errors."""

from __future__ import annotations

import json
import struct
import subprocess
import sys

import numpy as np
import pytest

from pictura.maps import load_road_map
from pictura.maps.geojson import FEATURE_KINDS
from pictura.tools.map_info import main

SOURCE = "procedural:seed=0,blocks_x=2,blocks_y=2"
STAT_KEYS = (
    "lanes",
    "lane_length_m",
    "road_edge_length_m",
    "junctions",
    "traffic_lights",
    "stop_lines",
    "walls",
    "wall_length_m",
    "markings",
    "parking_spots",
    "signs",
    "bounds",
)


def _length(points: np.ndarray) -> float:
    """Length of one polyline by an explicit loop (independent of the tool's vectorised sum)."""
    return sum(float(np.linalg.norm(points[k + 1] - points[k])) for k in range(len(points) - 1))


def test_json_statistics_match_the_map(capsys, tmp_path) -> None:
    main([SOURCE, "--json"])
    stats = json.loads(capsys.readouterr().out)
    assert set(STAT_KEYS) <= set(stats)
    m = load_road_map(SOURCE)
    assert stats["lanes"] == m.lane_count
    assert stats["junctions"] == 9
    assert stats["traffic_lights"] == len(m.light_position) > 0
    assert stats["stop_lines"] == len(m.stop_line_points) > 0
    lane_len = sum(_length(m.lane(i).astype(np.float64)) for i in range(m.lane_count))
    assert stats["lane_length_m"] == pytest.approx(lane_len, abs=0.01)
    edge_len = sum(
        _length(m.road_edge_points[m.road_edge_offsets[i] : m.road_edge_offsets[i + 1]].astype(np.float64))
        for i in range(m.road_edge_count)
    )
    assert stats["road_edge_length_m"] == pytest.approx(edge_len, abs=0.01)
    wall_len = sum(_length(w.astype(np.float64)) for w in m.wall_points)
    assert stats["wall_length_m"] == pytest.approx(wall_len, abs=0.01)
    all_pts = np.concatenate([m.lane_points, m.road_edge_points, m.wall_points.reshape(-1, 3)])
    np.testing.assert_allclose(stats["bounds"]["min"], all_pts.min(0), atol=1e-3)
    np.testing.assert_allclose(stats["bounds"]["max"], all_pts.max(0), atol=1e-3)


def test_table_geojson_and_png(capsys, tmp_path) -> None:
    geo, png = tmp_path / "town.geojson", tmp_path / "town.png"
    main([SOURCE, "--geojson", str(geo), "--png", str(png), "--dpi", "40"])
    table = capsys.readouterr().out
    assert "lanes" in table and "traffic_lights" in table
    collection = json.loads(geo.read_text())
    assert collection["type"] == "FeatureCollection"
    kinds = [f["properties"]["kind"] for f in collection["features"]]
    assert set(FEATURE_KINDS) <= set(kinds)
    m = load_road_map(SOURCE)
    assert kinds.count("lane") == m.lane_count
    assert kinds.count("traffic_light") == len(m.light_position)
    assert kinds.count("parking_spot") == len(m.parking_spots)
    for f in collection["features"]:
        assert f["type"] == "Feature" and f["geometry"]["type"] in ("Point", "LineString", "Polygon")
    # A lane feature carries its successors; its first point matches the map.
    lane0 = next(f for f in collection["features"] if f["properties"]["kind"] == "lane")
    assert lane0["properties"]["successors"] == m.successors(0).tolist()
    np.testing.assert_allclose(lane0["geometry"]["coordinates"][0], m.lane(0)[0], atol=1e-3)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_source_exits_with_a_clear_message() -> None:
    with pytest.raises(SystemExit) as err:
        main(["nowhere:Town99"])
    assert isinstance(err.value.code, str) and "nowhere:Town99" in err.value.code
    with pytest.raises(SystemExit) as err:
        main(["procedural:seed=0,colour=red"])
    assert "colour" in err.value.code


def test_command_line_entry_point() -> None:
    ok = subprocess.run(
        [sys.executable, "-m", "pictura", "map-info", "procedural:seed=1,blocks_x=1,blocks_y=1", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(ok.stdout)["junctions"] == 4
    bad = subprocess.run(
        [sys.executable, "-m", "pictura", "map-info", "carla:Town99"], capture_output=True, text=True
    )
    assert bad.returncode != 0
    assert "carla:Town99" in bad.stderr and "Traceback" not in bad.stderr
    helped = subprocess.run(
        [sys.executable, "-m", "pictura", "map-info", "--help"], capture_output=True, text=True
    )
    assert helped.returncode == 0 and "--geojson" in helped.stdout


def test_waymo_shard_counts_its_scenarios_and_describes_one(capsys, tmp_path, monkeypatch) -> None:
    from pictura.maps.womd.index import with_scenario_id
    from tests.data import data_path
    from tests.maps.test_womd_index import _frame

    monkeypatch.setenv("PICTURA_CACHE", str(tmp_path / "cache"))
    blob = data_path("womd", "tfrecord", "motion_data_one_scenario.tfrecord").read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    shard = tmp_path / "validation.tfrecord-00003-of-00150"
    shard.write_bytes(b"".join(_frame(with_scenario_id(blob[12 : 12 + n], f"s{i}")) for i in range(3)))
    main([str(shard), "--json", "--record", "2"])
    stats = json.loads(capsys.readouterr().out)
    assert (stats["scenarios_in_file"], stats["record"], stats["scenario_id"], stats["tracks"]) == (3, 2, "s2", 83)
    assert stats["lanes"] == load_road_map(str(shard)).lane_count
    with pytest.raises(SystemExit, match=r"--record 3: not a readable scenario of this file \(3 readable"):
        main([str(shard), "--record", "3"])
