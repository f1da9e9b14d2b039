"""A hand-written two-road junction: lane graph, stop lines, lights, walls, speed units.

Road A runs east from x=-40 to 0, the junction's connecting road C from 0 to 20, road B from
20 to 60, all on y=0 with one driving lane per direction (3.5 m) and a 2 m sidewalk each side.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pictura.maps.opendrive import build_road_map
from pictura.maps.roadmap import MARKING_CENTRE_LINE

LANES = """
      <laneSection s="0">
        <left>
          <lane id="2" type="{walk}"><width sOffset="0" a="2" b="0" c="0" d="0"/></lane>
          <lane id="1" type="driving"><link><predecessor id="1"/><successor id="1"/></link><width sOffset="0" a="3.5" b="0" c="0" d="0"/></lane>
        </left>
        <center><lane id="0" type="none"/></center>
        <right>
          <lane id="-1" type="driving"><link><predecessor id="-1"/><successor id="-1"/></link><width sOffset="0" a="3.5" b="0" c="0" d="0"/></lane>
          <lane id="-2" type="{walk}"><width sOffset="0" a="2" b="0" c="0" d="0"/></lane>
        </right>
      </laneSection>"""


def road(
    rid: str, x0: float, length: float, junction: str, link: str, signals: str = "", objects: str = ""
) -> str:
    # Junction roads carry shoulders instead of sidewalks (walls stay outside junctions).
    lanes = LANES.format(walk="shoulder" if junction != "-1" else "sidewalk")
    return f"""
  <road name="{rid}" length="{length}" id="{rid}" junction="{junction}">
    <link>{link}</link>
    <type s="0" type="town"><speed max="30" unit="mph"/></type>
    <planView><geometry s="0" x="{x0}" y="0" hdg="0" length="{length}"><line/></geometry></planView>
    <elevationProfile><elevation s="0" a="1.5" b="0" c="0" d="0"/></elevationProfile>
    <lanes><laneOffset s="0" a="0" b="0" c="0" d="0"/>{lanes}</lanes>
    <objects>{objects}</objects>
    <signals>{signals}</signals>
  </road>"""


CROSSWALK = """
      <object id="9" type="crosswalk" s="30" t="0" zOffset="0" hdg="1.5707963267948966" length="7" width="3">
        <outline>
          <cornerLocal u="3.5" v="1.5" z="0"/><cornerLocal u="-3.5" v="1.5" z="0"/>
          <cornerLocal u="-3.5" v="-1.5" z="0"/><cornerLocal u="3.5" v="-1.5" z="0"/>
        </outline>
      </object>"""


def junction_file(tmp_path: Path, signals_a: str = "", signals_c: str = "") -> Path:
    text = (
        '<?xml version="1.0"?>\n<OpenDRIVE><header revMajor="1" revMinor="4"/>'
        + road("A", -40, 40, "-1", '<successor elementType="junction" elementId="7"/>', signals_a, CROSSWALK)
        + road("B", 20, 40, "-1", '<predecessor elementType="junction" elementId="7"/>')
        + road(
            "C", 0, 20, "7",
            '<predecessor elementType="road" elementId="A" contactPoint="end"/>'
            '<successor elementType="road" elementId="B" contactPoint="start"/>',
            signals_c,
        )
        + """
  <junction id="7" name="j">
    <connection id="0" incomingRoad="A" connectingRoad="C" contactPoint="start"><laneLink from="-1" to="-1"/></connection>
    <connection id="1" incomingRoad="B" connectingRoad="C" contactPoint="end"><laneLink from="1" to="1"/></connection>
  </junction>
</OpenDRIVE>"""
    )  # fmt: skip
    path = tmp_path / "junction.xodr"
    path.write_text(text)
    return path


def chain(rm, origin, rid: str, lane_id: int) -> list[int]:
    return [i for i in range(rm.lane_count) if origin.road[i] == rid and origin.lane_id[i] == lane_id]


def test_lane_graph_through_the_junction(tmp_path):
    rm, origin = build_road_map(junction_file(tmp_path))
    east = chain(rm, origin, "A", -1) + chain(rm, origin, "C", -1) + chain(rm, origin, "B", -1)
    west = chain(rm, origin, "B", 1) + chain(rm, origin, "C", 1) + chain(rm, origin, "A", 1)
    for path, direction in ((east, 1.0), (west, -1.0)):
        assert all(b in rm.successors(a) for a, b in zip(path[:-1], path[1:], strict=True))
        pts = np.concatenate([rm.lane(i) for i in path])
        assert np.all(np.diff(pts[:, 0]) * direction >= 0)  # direction of travel
        assert np.abs(pts[:, 1] + direction * 1.75).max() < 1e-6  # right-hand traffic
        np.testing.assert_allclose(pts[:, 2], 1.5)
    assert len(rm.successors(east[-1])) == 0 and len(rm.successors(west[-1])) == 0
    assert np.all(rm.lane_junction[chain(rm, origin, "C", -1)] == 0)
    assert np.all(rm.lane_junction[chain(rm, origin, "A", -1)] == -1)
    np.testing.assert_allclose(rm.lane_speed_limit, 30 * 0.44704, rtol=1e-6)
    np.testing.assert_allclose(rm.junction_center, [[10.0, 0.0, 1.5]], atol=1e-5)


def test_stop_lines_markings_edges_and_walls(tmp_path):
    rm, origin = build_road_map(junction_file(tmp_path))
    # One stop line per incoming lane: A's eastbound lane at x=0, B's westbound lane at x=20.
    order = np.argsort(rm.stop_line_points[:, 0, 0])
    lines = rm.stop_line_points[order]
    np.testing.assert_allclose(np.sort(lines[0, :, 1]), [-3.5, 0.0], atol=1e-6)
    np.testing.assert_allclose(lines[0, :, 0], 0.0, atol=1e-6)
    np.testing.assert_allclose(np.sort(lines[1, :, 1]), [0.0, 3.5], atol=1e-6)
    np.testing.assert_allclose(lines[1, :, 0], 20.0, atol=1e-6)
    assert rm.stop_line_lane[order][0] == chain(rm, origin, "A", -1)[-1]
    # Centre lines on A and B only (no paint inside the junction).
    seg, kind = rm.marking_segments()
    assert np.all(kind == MARKING_CENTRE_LINE)
    assert np.all((seg[..., 0] <= 0) | (seg[..., 0] >= 20)) and np.abs(seg[..., 1]).max() < 1e-6
    # Road edges at |y| = 3.5 (the shoulders in the junction are real lanes, so they count).
    edges = rm.road_edge_segments()
    np.testing.assert_allclose(np.abs(edges[..., 1]), 3.5, atol=1e-6)
    # Walls along the sidewalks' outer borders at |y| = 5.5, none inside the junction.
    np.testing.assert_allclose(np.abs(rm.wall_points[..., 1]), 5.5, atol=1e-6)
    assert not np.any((rm.wall_points[..., 0] > 0.01) & (rm.wall_points[..., 0] < 19.99))
    assert np.all(rm.wall_height == 6.0)
    walk = rm.sidewalk_points
    np.testing.assert_allclose(np.abs(walk[:, 1]), 4.5, atol=1e-6)
    # The crosswalk on A at s=30 turned across the road: x in [-11.5, -8.5], y in [-3.5, 3.5].
    quad = rm.crosswalk_points
    assert quad.shape == (1, 4, 3)
    np.testing.assert_allclose(quad[0, :, :2].min(0), [-11.5, -3.5], atol=1e-5)
    np.testing.assert_allclose(quad[0, :, :2].max(0), [-8.5, 3.5], atol=1e-5)
    np.testing.assert_allclose(quad[0, :, 2], 1.5)


def test_synthesised_lights_face_their_approach(tmp_path):
    rm, _ = build_road_map(junction_file(tmp_path))
    assert len(rm.light_position) == 2
    for s in range(2):
        light = rm.stop_line_light[s]
        mid = rm.stop_line_points[s].mean(0)
        pos, heading = rm.light_position[light], rm.light_heading[light]
        # Far side: across the junction centre (x=10) from the stop line, facing back at it.
        assert np.sign(pos[0] - 10.0) == -np.sign(mid[0] - 10.0)
        to_line = np.arctan2(mid[1] - pos[1], mid[0] - pos[0])
        assert np.cos(heading - to_line) > 0.9
    assert np.all(rm.light_junction == 0)
    assert len(set(rm.light_group.tolist())) == 1  # opposite approaches share a phase group


def test_signal_with_reference_governs_its_lanes(tmp_path):
    signal = (
        '<signal id="42" s="38" t="-6" zOffset="2.5" hOffset="0" orientation="+" type="1000001" '
        'dynamic="yes" country="OpenDRIVE" subtype="-1"/>'
        '<signal id="43" s="5" t="-6" zOffset="0" hOffset="0" orientation="+" type="206"/>'
    )
    ref = '<signalReference id="42" s="1" t="0" orientation="+"><validity fromLane="-1" toLane="-1"/></signalReference>'
    rm, origin = build_road_map(junction_file(tmp_path, signals_a=signal, signals_c=ref))
    assert len(rm.light_position) == 1
    np.testing.assert_allclose(rm.light_position[0], [-2.0, -6.0, 4.0], atol=1e-6)
    a_stop = int(np.flatnonzero(rm.stop_line_lane == chain(rm, origin, "A", -1)[-1])[0])
    assert rm.stop_line_light[a_stop] == 0
    assert rm.stop_line_light[1 - a_stop] == -1  # B's approach has no light
    # The lamp faces the eastbound traffic it governs.
    assert np.cos(rm.light_heading[0] - np.pi) > 0.99
    assert rm.sign_kind.tolist() == [206]
    np.testing.assert_allclose(rm.sign_position[0], [-35.0, -6.0, 1.5], atol=1e-6)


def test_missing_junction_target_is_not_an_edge(tmp_path):
    path = junction_file(tmp_path)
    path.write_text(
        path.read_text().replace('<laneLink from="-1" to="-1"/>', '<laneLink from="-1" to="-3"/>')
    )
    rm, origin = build_road_map(path)
    assert len(rm.successors(chain(rm, origin, "A", -1)[-1])) == 0


@pytest.mark.parametrize("bad", ['elementType="junction" elementId="7"', 'elementType="road" elementId="B"'])
def test_link_errors(tmp_path, bad):
    path = junction_file(tmp_path)
    text = path.read_text()
    if "road" in bad:  # a road link without a contact point
        text = text.replace('elementId="B" contactPoint="start"', 'elementId="B"')
        match = r"road C, <successor> at line \d+: contactPoint=None"
    else:
        text = text.replace('<successor elementType="junction" elementId="7"/>', '<successor elementId="7"/>')
        match = r"road A, <successor> at line \d+: missing attribute 'elementType'"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        build_road_map(path)


def test_stop_lines_turn_with_a_rotated_junction(tmp_path):
    # the same junction with every road turned by 0.5 rad about the origin: the stop lines,
    # turned back, lie where they lie in the axis-aligned file
    angle = 0.5
    c, s = np.cos(angle), np.sin(angle)
    text = junction_file(tmp_path).read_text()

    def turned(match: re.Match) -> str:
        x0 = float(match.group(1))
        return f'<geometry s="0" x="{float(x0 * c)!r}" y="{float(x0 * s)!r}" hdg="{angle!r}"'

    text = re.sub(r'<geometry s="0" x="(-?[0-9.]+)" y="0" hdg="0"', turned, text)
    path = tmp_path / "turned.xodr"
    path.write_text(text)
    rm, _ = build_road_map(path)
    back = rm.stop_line_points[:, :, :2].astype(np.float64) @ np.array([[c, -s], [s, c]])
    order = np.argsort(back[:, 0, 0])
    lines = back[order]
    np.testing.assert_allclose(np.sort(lines[0, :, 1]), [-3.5, 0.0], atol=1e-4)
    np.testing.assert_allclose(lines[0, :, 0], 0.0, atol=1e-4)
    np.testing.assert_allclose(np.sort(lines[1, :, 1]), [0.0, 3.5], atol=1e-4)
    np.testing.assert_allclose(lines[1, :, 0], 20.0, atol=1e-4)


@pytest.mark.parametrize(("t", "governs"), [(-45.0, True), (-56.0, False)])
def test_an_unreferenced_light_governs_the_nearest_approach_within_50_m(tmp_path, t, governs):
    """docs/opendrive.md: a light no reference names governs the nearest approach within 50 m
    (here road A's, its stop line at x = 0, y -3.5..0: 43-45 m or 54-56 m from the light)."""
    signal = (
        f'<signal id="42" s="38" t="{t}" zOffset="2.5" hOffset="0" orientation="+" type="1000001" '
        'dynamic="yes" country="OpenDRIVE" subtype="-1"/>'
    )
    rm, origin = build_road_map(junction_file(tmp_path, signals_a=signal))
    assert len(rm.light_position) == 1
    a_stop = int(np.flatnonzero(rm.stop_line_lane == chain(rm, origin, "A", -1)[-1])[0])
    line = rm.stop_line_points[a_stop, :, :2].astype(np.float64)
    distance = np.linalg.norm(line - rm.light_position[0, :2], axis=1)
    assert np.all(distance < 50.0) if governs else np.all(distance > 50.0)  # the case is on its side
    assert rm.stop_line_light[a_stop] == (0 if governs else -1)
