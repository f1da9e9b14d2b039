"""The 8 CARLA towns, each built once per session from the real `.xodr` (cache bypassed).

Expected counts come from the data README and from an independent ElementTree pass over
the same file; lane-graph edges are checked against the file's own link records.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from pictura.maps import CARLA_TOWNS
from pictura.maps.opendrive import build_road_map
from pictura.maps.roadmap import MAX_LANE_CHUNK_M, SIGN_STOP, SIGN_YIELD
from tests.data import data_path

# From /work/shared/data/README.md: lights (type 1000001), stop / yield signs, junctions.
README = {
    "Town01": (36, 0, 0, 12),
    "Town02": (24, 0, 0, 8),
    "Town03": (0, 0, 0, 34),
    "Town04": (43, 0, 0, 27),
    "Town05": (0, 0, 0, 21),
    "Town06": (19, 0, 0, 23),
    "Town07": (17, 19, 20, 31),
    "Town10HD": (17, 3, 1, 9),
}
DRIVABLE = {"driving", "bidirectional"}
MAX_GAP_M = 0.05


def _town_path(town: str) -> Path:
    return data_path("carla", f"{town}.xodr")


@pytest.fixture(scope="session")
def towns() -> dict:
    return {}


@pytest.fixture
def town(request, towns):
    name = request.param
    if name not in towns:
        path = _town_path(name)
        towns[name] = (path, *build_road_map(path), ET.parse(path).getroot())
    return towns[name]


def _lane_types(section: ET.Element) -> dict[int, str]:
    return {int(ln.get("id")): ln.get("type") for ln in section.iter("lane")}


def _expected_edges(root: ET.Element) -> list[tuple[tuple, tuple]]:
    """Lane-to-lane transitions the file declares across roads and through junctions (RHT only)."""
    roads = {r.get("id"): r for r in root.iter("road")}

    def sections(r):
        return r.find("lanes").findall("laneSection")

    def drivable(r, sec_index, lane_id):
        return _lane_types(sections(r)[sec_index]).get(lane_id) in DRIVABLE

    out = []
    # Junction connections: incoming lane (travelling into the junction) -> connecting lane.
    for j in root.iter("junction"):
        for c in j.findall("connection"):
            inc, con = roads[c.get("incomingRoad")], roads[c.get("connectingRoad")]
            at_start = c.get("contactPoint", "start") == "start"
            csec = 0 if at_start else len(sections(con)) - 1
            link = inc.find("link")
            for ll in c.findall("laneLink"):
                frm, to = int(ll.get("from")), int(ll.get("to"))
                succ = link.find("successor")
                enters_at_end = succ is not None and succ.get("elementId") == j.get("id") and frm < 0
                pred = link.find("predecessor")
                enters_at_start = pred is not None and pred.get("elementId") == j.get("id") and frm > 0
                if not (enters_at_end or enters_at_start):
                    continue  # a lane leaving the junction: covered by the connecting road's own link
                isec = len(sections(inc)) - 1 if enters_at_end else 0
                if (to < 0) != at_start or not drivable(inc, isec, frm) or not drivable(con, csec, to):
                    continue
                out.append(((inc.get("id"), isec, frm, frm < 0), (con.get("id"), csec, to, to < 0)))
    # Road-to-road links at a road's travel end.
    for r in roads.values():
        link = r.find("link")
        secs = sections(r)
        for kind, sec_index in (("successor", len(secs) - 1), ("predecessor", 0)):
            el = link.find(kind) if link is not None else None
            if el is None or el.get("elementType") != "road":
                continue
            other = roads[el.get("elementId")]
            at_start = el.get("contactPoint") == "start"
            osec = 0 if at_start else len(sections(other)) - 1
            for ln in secs[sec_index].iter("lane"):
                lid = int(ln.get("id"))
                if lid == 0 or (lid < 0) != (kind == "successor") or ln.get("type") not in DRIVABLE:
                    continue
                nxt = ln.find(f"link/{kind}")
                if nxt is None:
                    continue
                to = int(nxt.get("id"))
                if (to < 0) == at_start and drivable(other, osec, to):
                    out.append(((r.get("id"), sec_index, lid, lid < 0), (other.get("id"), osec, to, to < 0)))
    return out


def _junction_entries(root: ET.Element) -> int:
    count = 0
    for r in root.iter("road"):
        link = r.find("link")
        if r.get("junction") != "-1" or link is None:
            continue
        secs = r.find("lanes").findall("laneSection")
        for kind, sec, sign in (("successor", secs[-1], -1), ("predecessor", secs[0], 1)):
            el = link.find(kind)
            if el is None or el.get("elementType") != "junction":
                continue
            count += any(
                int(ln.get("id")) * sign > 0 and ln.get("type") in DRIVABLE for ln in sec.iter("lane")
            )
    return count


@pytest.mark.parametrize("town", CARLA_TOWNS, indirect=True)
def test_counts_match_the_file(town):
    path, rm, _, root = town
    lights, stops, yields, junctions = README[path.stem]
    signals = list(root.iter("signal"))
    assert sum(s.get("type") == "1000001" for s in signals) == lights
    if lights:
        assert len(rm.light_position) == lights
    else:  # synthesised: one per junction entry (a road end with drivable lanes heading into a junction)
        assert len(rm.light_position) == _junction_entries(root)
        assert np.all(rm.stop_line_light >= 0)
    assert len(rm.junction_center) == junctions == len(list(root.iter("junction")))
    assert len(rm.crosswalk_points) == sum(o.get("type") == "crosswalk" for o in root.iter("object"))
    assert int(np.sum(rm.sign_kind == SIGN_STOP)) == stops
    assert int(np.sum(rm.sign_kind == SIGN_YIELD)) == yields
    rm.validate()


@pytest.mark.parametrize("town", CARLA_TOWNS, indirect=True)
def test_lanes_are_chunked_and_continuous(town):
    path, rm, _, _ = town
    seg, owner = rm.lane_segments()
    length = np.linalg.norm(seg[:, 1] - seg[:, 0], axis=-1)
    per_lane = np.bincount(owner, weights=length, minlength=rm.lane_count)
    assert per_lane.max() <= MAX_LANE_CHUNK_M + 1e-4
    gaps = [
        np.linalg.norm(rm.lane(i)[-1] - rm.lane(j)[0]) for i in range(rm.lane_count) for j in rm.successors(i)
    ]
    assert len(gaps) >= rm.lane_count - 100  # nearly every chunk continues somewhere
    assert max(gaps) <= MAX_GAP_M
    print(f"{path.stem}: {per_lane.sum() / 1000:.2f} km of lanes, {len(rm.junction_center)} junctions, "
          f"{len(rm.light_position)} lights")  # fmt: skip


@pytest.mark.parametrize("town", CARLA_TOWNS, indirect=True)
def test_lane_graph_accounts_for_link_records(town):
    _, rm, origin, root = town
    expected = _expected_edges(root)
    assert expected
    for src, dst in expected:
        assert src in origin.pieces, f"missing lane piece {src}"
        assert dst in origin.pieces, f"missing lane piece {dst}"
        last, first = origin.pieces[src][1], origin.pieces[dst][0]
        assert first in rm.successors(last), f"no lane-graph edge {src} -> {dst}"


@pytest.mark.parametrize("town", CARLA_TOWNS, indirect=True)
def test_stop_lines_lights_and_walls(town):
    path, rm, _, _ = town
    T = len(rm.light_position)
    # Stop lines cross the end of their lane, about one lane width long.
    ends = rm.lane_points[rm.lane_offsets[1:][rm.stop_line_lane] - 1]
    mid = rm.stop_line_points.mean(1)
    assert np.linalg.norm(ends - mid, axis=1).max() < 0.05
    span = np.linalg.norm(rm.stop_line_points[:, 1] - rm.stop_line_points[:, 0], axis=1)
    np.testing.assert_allclose(span, rm.lane_width[rm.stop_line_lane], rtol=0.35)
    # Every light governs at least one stop line of its own junction (or of none, when unmatched).
    governed = np.bincount(rm.stop_line_light[rm.stop_line_light >= 0], minlength=T)
    assert np.mean(governed > 0) > 0.9
    assert np.all((rm.light_junction >= 0) & (rm.light_junction < len(rm.junction_center)))
    assert set(np.unique(rm.light_group)) <= {0, 1}
    assert len(rm.wall_points) > 0 and np.all(rm.wall_height > 0)
    if path.stem != "Town06":
        assert rm.sidewalk_offsets[-1] > 0
    # Several towns have overpasses: elevation is kept.
    if path.stem in ("Town03", "Town04", "Town05"):
        assert np.ptp(rm.lane_points[:, 2]) > 5.0
