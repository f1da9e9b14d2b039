"""Plan-view geometry and lane cross-sections on synthetic OpenDRIVE files.

References are computed here, independently of the importer: headings integrated on a very
fine grid with the trapezoid rule, and paramPoly3 curves re-parametrised by dense chord sums.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pictura.maps.opendrive import build_road_map
from pictura.maps.opendrive.geometry import geometry_pose
from pictura.maps.opendrive.reader import Geometry
from pictura.maps.roadmap import MAX_LANE_CHUNK_M

TOL_M = 0.01


def write_xodr(
    tmp_path: Path,
    geometry: str,
    length: float,
    *,
    x: float = 10.0,
    y: float = -5.0,
    hdg: float = 0.3,
    right_widths: str = '<width sOffset="0" a="3.5" b="0" c="0" d="0"/>',
    lane_offset: str = '<laneOffset s="0" a="0" b="0" c="0" d="0"/>',
    elevation: str = '<elevation s="0" a="0" b="0" c="0" d="0"/>',
    rule: str = "",
    name: str = "synthetic.xodr",
) -> Path:
    """A one-road OpenDRIVE file: one right driving lane (and a left one) over one geometry record."""
    text = f"""<?xml version="1.0"?>
<OpenDRIVE>
  <header revMajor="1" revMinor="4"/>
  <road name="r" length="{length!r}" id="1" junction="-1" {rule}>
    <type s="0" type="town"><speed max="50" unit="km/h"/></type>
    <planView>
      <geometry s="0" x="{x!r}" y="{y!r}" hdg="{hdg!r}" length="{length!r}">
        {geometry}
      </geometry>
    </planView>
    <elevationProfile>{elevation}</elevationProfile>
    <lanes>
      {lane_offset}
      <laneSection s="0">
        <left><lane id="1" type="driving"><width sOffset="0" a="3.0" b="0" c="0" d="0"/></lane></left>
        <center><lane id="0" type="none"/></center>
        <right><lane id="-1" type="driving">{right_widths}</lane></right>
      </laneSection>
    </lanes>
  </road>
</OpenDRIVE>
"""
    path = tmp_path / name
    path.write_text(text)
    return path


def integrate_heading(x0: float, y0: float, heading, length: float, n: int = 400_000):
    """Dense reference: positions (n+1, 2) and headings along arc length by the trapezoid rule."""
    s = np.linspace(0.0, length, n + 1)
    th = heading(s)
    ds = np.diff(s)
    x = x0 + np.concatenate([[0.0], np.cumsum(0.5 * ds * (np.cos(th[1:]) + np.cos(th[:-1])))])
    y = y0 + np.concatenate([[0.0], np.cumsum(0.5 * ds * (np.sin(th[1:]) + np.sin(th[:-1])))])
    return s, np.stack([x, y], 1), th


def lane_points(path: Path, lane_id: int = -1) -> np.ndarray:
    rm, origin = build_road_map(path)
    chunks = [rm.lane(i) for i in range(rm.lane_count) if origin.lane_id[i] == lane_id]
    assert all(np.linalg.norm(np.diff(c, axis=0), axis=1).sum() <= MAX_LANE_CHUNK_M + 1e-6 for c in chunks)
    return np.concatenate(chunks)


def nearest_distance(points: np.ndarray, curve: np.ndarray) -> np.ndarray:
    """Distance from each point (n, 2) to the nearest vertex of a dense curve (m, 2)."""
    out = np.empty(len(points))
    for i, p in enumerate(points):
        out[i] = np.sqrt(((curve - p) ** 2).sum(1).min())
    return out


def offset_curve(xy: np.ndarray, th: np.ndarray, t: float) -> np.ndarray:
    return xy + t * np.stack([-np.sin(th), np.cos(th)], 1)


@pytest.mark.parametrize("hdg", [0.3, 2.5, -1.2])
def test_line_runs_along_its_heading(hdg):
    g = Geometry(0.0, 10.0, -5.0, hdg, 30.0, "line", {}, 0)
    q = np.linspace(0, 30.0, 7)
    x, y, h = geometry_pose(g, q)
    np.testing.assert_allclose(x, 10.0 + q * np.cos(hdg), atol=1e-9)
    np.testing.assert_allclose(y, -5.0 + q * np.sin(hdg), atol=1e-9)
    np.testing.assert_allclose(h, hdg)


@pytest.mark.parametrize("curvature", [0.05, -0.12, 1e-4])
def test_arc_matches_integrated_reference(tmp_path, curvature):
    length, x0, y0, h0 = 40.0, 10.0, -5.0, 0.3
    s_ref, xy, th = integrate_heading(x0, y0, lambda s: h0 + curvature * s, length)
    g = Geometry(0.0, x0, y0, h0, length, "arc", {"curvature": curvature}, 0)
    q = np.linspace(0, length, 57)
    x, y, h = geometry_pose(g, q)
    rx, ry, rh = (np.interp(q, s_ref, v) for v in (xy[:, 0], xy[:, 1], th))
    assert np.hypot(x - rx, y - ry).max() < TOL_M
    assert np.abs(h - rh).max() < 1e-6
    # The right lane's centreline runs 1.75 m to the right of the reference line.
    pts = lane_points(write_xodr(tmp_path, f'<arc curvature="{curvature!r}"/>', length))
    assert nearest_distance(pts[:, :2], offset_curve(xy[::20], th[::20], -1.75)).max() < TOL_M
    assert np.hypot(*(pts[-1, :2] - offset_curve(xy[-1:], th[-1:], -1.75)[0])) < TOL_M


@pytest.mark.parametrize(("k0", "k1"), [(0.0, 0.08), (0.1, -0.05), (-0.02, -0.2)])
def test_spiral_matches_integrated_reference(tmp_path, k0, k1):
    length, x0, y0, h0 = 35.0, -3.0, 7.0, -1.1
    rate = (k1 - k0) / length
    s_ref, xy, th = integrate_heading(x0, y0, lambda s: h0 + k0 * s + 0.5 * rate * s**2, length)
    g = Geometry(0.0, x0, y0, h0, length, "spiral", {"curvStart": k0, "curvEnd": k1}, 0)
    q = np.linspace(0, length, 71)
    x, y, h = geometry_pose(g, q)
    rx, ry, rh = (np.interp(q, s_ref, v) for v in (xy[:, 0], xy[:, 1], th))
    assert np.hypot(x - rx, y - ry).max() < TOL_M
    assert np.abs(h - rh).max() < 1e-4
    pts = lane_points(
        write_xodr(tmp_path, f'<spiral curvStart="{k0!r}" curvEnd="{k1!r}"/>', length, x=x0, y=y0, hdg=h0)
    )
    assert nearest_distance(pts[:, :2], offset_curve(xy[::20], th[::20], -1.75)).max() < TOL_M


def dense_param_curve(cu, cv, p_max, x0, y0, h0, n=400_000):
    p = np.linspace(0.0, p_max, n + 1)
    u = cu[0] + cu[1] * p + cu[2] * p**2 + cu[3] * p**3
    v = cv[0] + cv[1] * p + cv[2] * p**2 + cv[3] * p**3
    xy = np.stack([x0 + np.cos(h0) * u - np.sin(h0) * v, y0 + np.sin(h0) * u + np.cos(h0) * v], 1)
    arc = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(xy, axis=0).T))])
    return arc, xy


@pytest.mark.parametrize("p_range", ["normalized", "arcLength"])
def test_param_poly3_matches_dense_reference(tmp_path, p_range):
    x0, y0, h0 = 2.0, 1.0, 0.7
    # A gentle S-bend; the record length is the curve's true arc length.
    cu_n, cv_n = [0.0, 30.0, 0.0, 0.0], [0.0, 0.0, 6.0, -4.0]
    arc_n, _ = dense_param_curve(cu_n, cv_n, 1.0, x0, y0, h0)
    length = float(arc_n[-1])
    if p_range == "normalized":
        cu, cv, p_max = cu_n, cv_n, 1.0
    else:  # the same curve with p in [0, length]
        scale = [1.0, 1 / length, 1 / length**2, 1 / length**3]
        cu = [c * f for c, f in zip(cu_n, scale, strict=True)]
        cv = [c * f for c, f in zip(cv_n, scale, strict=True)]
        p_max = length
    arc, xy = dense_param_curve(cu, cv, p_max, x0, y0, h0)
    params = (
        dict(zip(("aU", "bU", "cU", "dU"), cu, strict=True))
        | dict(zip(("aV", "bV", "cV", "dV"), cv, strict=True))
        | {"pRange": p_range}
    )
    g = Geometry(0.0, x0, y0, h0, length, "paramPoly3", params, 0)
    q = np.linspace(0, length, 41)
    x, y, _ = geometry_pose(g, q)
    ref = np.stack([np.interp(q, arc, xy[:, 0]), np.interp(q, arc, xy[:, 1])], 1)
    assert np.hypot(x - ref[:, 0], y - ref[:, 1]).max() < TOL_M
    attrs = " ".join(f'{k}="{v!r}"' for k, v in params.items() if k != "pRange")
    path = write_xodr(tmp_path, f'<paramPoly3 {attrs} pRange="{p_range}"/>', length, x=x0, y=y0, hdg=h0)
    rm, origin = build_road_map(path)
    left = np.concatenate([rm.lane(i) for i in range(rm.lane_count) if origin.lane_id[i] == 1])
    # Left lane (id 1) runs against s: it starts at the reference's end, 1.5 m to its left.
    assert np.hypot(*(left[0, :2] - ref[-1])) == pytest.approx(1.5, abs=TOL_M)
    assert np.hypot(*(left[-1, :2] - ref[0])) == pytest.approx(1.5, abs=TOL_M)


def test_poly3_follows_its_cubic(tmp_path):
    a, b, c, d = 0.0, 0.0, 0.01, -0.0002
    g = Geometry(0.0, 0.0, 0.0, 0.0, 30.0, "poly3", dict(zip("abcd", (a, b, c, d), strict=True)), 0)
    x, y, h = geometry_pose(g, np.linspace(0, 30.0, 31))
    # Points lie on v = poly(u) in the start frame (here the world frame) ...
    assert np.abs(y - (a + b * x + c * x**2 + d * x**3)).max() < 1e-3
    # ... and are spaced by arc length: dense chord sum along the cubic.
    u = np.linspace(0, 30, 300_001)
    arc = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(u), np.diff(a + b * u + c * u**2 + d * u**3)))])
    assert np.abs(np.interp(x, u, arc) - np.linspace(0, 30.0, 31)).max() < TOL_M


def test_widths_offset_and_elevation_on_a_straight_road(tmp_path):
    # Two width records: 3 m for 10 m, then widening by 0.1 m per m; lane offset 0.5 m left.
    widths = '<width sOffset="0" a="3.0" b="0" c="0" d="0"/><width sOffset="10" a="3.0" b="0.1" c="0" d="0"/>'
    path = write_xodr(
        tmp_path, "<line/>", 30.0, x=0.0, y=0.0, hdg=0.0, right_widths=widths,
        lane_offset='<laneOffset s="0" a="0.5" b="0" c="0" d="0"/>',
        elevation='<elevation s="0" a="2.0" b="0.1" c="0" d="0"/>',
    )  # fmt: skip
    pts = lane_points(path)
    x = pts[:, 0]
    w = np.where(x < 10, 3.0, 3.0 + 0.1 * (x - 10))
    np.testing.assert_allclose(pts[:, 1], 0.5 - w / 2, atol=1e-4)
    np.testing.assert_allclose(pts[:, 2], 2.0 + 0.1 * x, atol=1e-4)
    rm, _ = build_road_map(path)
    assert rm.lane_speed_limit == pytest.approx(50 / 3.6)


def test_left_hand_traffic_reverses_lanes(tmp_path):
    path = write_xodr(tmp_path, "<line/>", 20.0, x=0.0, y=0.0, hdg=0.0, rule='rule="LHT"')
    right = lane_points(path, -1)
    assert right[0, 0] == pytest.approx(20.0) and right[-1, 0] == pytest.approx(0.0)
    rm, origin = build_road_map(path)
    chunks = [i for i in range(rm.lane_count) if origin.lane_id[i] == -1]
    # Chunks follow each other in the lane graph along the direction of travel.
    assert all(b in rm.successors(a) for a, b in zip(chunks[:-1], chunks[1:], strict=True))


def test_simplify_keeps_every_vertex_within_tolerance():
    from pictura.maps.opendrive.build import simplify

    rng = np.random.default_rng(0)
    s = np.linspace(0, 60, 241)
    line = np.stack([s, np.where(s < 30, 0.0, 0.02 * (s - 30) ** 2) + rng.normal(0, 0.002, len(s)), 0 * s], 1)
    out = simplify(line, 0.01)
    assert len(out) < len(line) // 3
    assert np.array_equal(out[0], line[0]) and np.array_equal(out[-1], line[-1])
    # Distance from each original vertex to the simplified polyline (point-to-segment, brute force).
    a, b = out[:-1], out[1:]
    ab = b - a
    t = np.clip(((line[:, None] - a) * ab).sum(-1) / (ab * ab).sum(-1), 0, 1)
    d = np.linalg.norm(line[:, None] - (a + t[..., None] * ab), axis=-1).min(1)
    assert d.max() <= 0.01 + 1e-9


def test_parking_lane_spots_every_6_m_on_its_centre(tmp_path):
    """docs/opendrive.md: a parking lane (outside junctions) gets a spot every 6 m along its
    centre, heading the side's travel direction; here a 2.5 m parking lane right of a 3.5 m
    driving lane on a 40 m straight road at heading 0.3."""
    h, length = 0.3, 40.0
    text = f"""<?xml version="1.0"?>
<OpenDRIVE>
  <header revMajor="1" revMinor="4"/>
  <road name="r" length="{length}" id="1" junction="-1">
    <planView><geometry s="0" x="10.0" y="-5.0" hdg="{h}" length="{length}"><line/></geometry></planView>
    <lanes>
      <laneSection s="0">
        <left><lane id="1" type="driving"><width sOffset="0" a="3.0" b="0" c="0" d="0"/></lane></left>
        <center><lane id="0" type="none"/></center>
        <right>
          <lane id="-1" type="driving"><width sOffset="0" a="3.5" b="0" c="0" d="0"/></lane>
          <lane id="-2" type="parking"><width sOffset="0" a="2.5" b="0" c="0" d="0"/></lane>
        </right>
      </laneSection>
    </lanes>
  </road>
</OpenDRIVE>
"""
    path = tmp_path / "parking.xodr"
    path.write_text(text)
    rm, _ = build_road_map(path)
    spots = rm.parking_spots.astype(np.float64)
    assert len(spots) == int(length // 6.0)
    u, left = np.array([np.cos(h), np.sin(h)]), np.array([-np.sin(h), np.cos(h)])
    rel = spots[:, :2] - np.array([10.0, -5.0])
    np.testing.assert_allclose(rel @ left, -(3.5 + 1.25), atol=1e-3)  # the parking lane's centre
    s = np.sort(rel @ u)
    np.testing.assert_allclose(np.diff(s), 6.0, atol=1e-3)
    assert s[0] >= 0 and s[-1] <= length
    np.testing.assert_allclose(spots[:, 3], h, atol=1e-4)


def test_walls_3_m_outside_the_outermost_lanes_without_sidewalks(tmp_path):
    """docs/opendrive.md: a map with no sidewalk lane gets walls 3 m outside the outermost lane
    of each side, `wall_height` 6 m: here lanes of 3 m (left) and 3.5 m (right) on a road at
    heading 0.3."""
    h = 0.3
    rm, _ = build_road_map(write_xodr(tmp_path, "<line/>", 30.0, x=10.0, y=-5.0, hdg=h))
    walls = rm.wall_points.astype(np.float64)
    assert walls.shape == (2, 2, 3)
    left = np.array([-np.sin(h), np.cos(h)])
    offsets = sorted(float(o) for o in ((walls[:, :, :2] - np.array([10.0, -5.0])) @ left).mean(axis=1))
    np.testing.assert_allclose(offsets, [-(3.5 + 3.0), 3.0 + 3.0], atol=1e-3)
    np.testing.assert_allclose(rm.wall_height, 6.0)


def test_lanes_sampled_at_most_1_m_apart_and_edges_within_1_cm_of_the_kerb(tmp_path):
    """docs/opendrive.md: lanes are sampled at most 1 m apart (closer on curves, so a chord sags
    less than 2 cm); road edges are then simplified to within 1 cm. On a straight road the
    lane's points are <= 1 m apart; on a 60 m arc of radius 40 m (heading 0.3 at (10, -5),
    curving left) the stations of the reference line are, and every
    road-edge vertex and every edge segment's midpoint lies within 1 cm (+ the 1 m chords' 3 mm
    sag) of the kerb's true circle, 3.5 m outside the reference line."""
    straight = lane_points(write_xodr(tmp_path, "<line/>", 30.0, name="line.xodr"))
    assert np.linalg.norm(np.diff(straight[:, :2], axis=0), axis=1).max() <= 1.0 + 1e-6
    k, h0, x0, y0 = 0.025, 0.3, 10.0, -5.0
    path = write_xodr(tmp_path, f'<arc curvature="{k!r}"/>', 60.0, x=x0, y=y0, hdg=h0)
    pts = lane_points(path)  # the right lane, 1.75 m outside the reference line: 1 m there
    assert np.linalg.norm(np.diff(pts[:, :2], axis=0), axis=1).max() <= (1 + 1.75 * k) + 1e-4
    rm, _ = build_road_map(path)
    centre = np.array([x0 - np.sin(h0) / k, y0 + np.cos(h0) / k])
    kerbs = []
    for i in range(rm.road_edge_count):
        p = rm.road_edge_points[rm.road_edge_offsets[i] : rm.road_edge_offsets[i + 1], :2].astype(np.float64)
        r = np.linalg.norm(p - centre, axis=1)
        if abs(r.mean() - (1 / k + 3.5)) < 0.5:  # the right kerb (the left one is 3 m inside)
            mids = 0.5 * (p[1:] + p[:-1])
            kerbs.append(np.abs(np.concatenate([r, np.linalg.norm(mids - centre, axis=1)]) - (1 / k + 3.5)))
    assert len(kerbs) == 1 and len(kerbs[0]) > 10
    assert kerbs[0].max() < 0.01 + 0.004
