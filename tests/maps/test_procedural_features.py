"""Newer procedural-town features against independent checks: lane counts read back from the
geometry, circle fits of curved corners, parking lanes against the curbs, roundabout graph search."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from pictura.maps import load
from pictura.maps.procedural import generate
from pictura.maps.roadmap import MARKING_LANE_DIVIDER, SIGN_YIELD, RoadMap

W = 3.5  # default lane width (m)


def _lanes_across(m: RoadMap, mid: np.ndarray, along: np.ndarray, reach: float = 15.0) -> tuple[int, int]:
    """Lane segments crossing the line through ``mid`` perpendicular to ``along``: (forward, backward)."""
    seg, _ = m.lane_segments()
    a, b = seg[:, 0, :2].astype(np.float64) - mid, seg[:, 1, :2].astype(np.float64) - mid
    sa, sb = a @ along, b @ along
    crossing = (sa < 0.0) != (sb < 0.0)
    t = sa[crossing] / (sa[crossing] - sb[crossing])
    hit = a[crossing] + t[:, None] * (b[crossing] - a[crossing])
    normal = np.array([-along[1], along[0]])
    near = np.abs(hit @ normal) < reach
    forward = ((b - a)[crossing][near] @ along) > 0.0
    return int(forward.sum()), int((~forward).sum())


def _edge_distance(m: RoadMap, p: np.ndarray) -> np.ndarray:
    """Distance (m) from points (P, 2) to the nearest road-edge segment, (P,)."""
    e = m.road_edge_segments()[:, :, :2].astype(np.float64)
    a, ab = e[:, 0], e[:, 1] - e[:, 0]
    t = np.clip(
        np.einsum("psk,sk->ps", p[:, None] - a[None], ab) / np.maximum((ab * ab).sum(-1), 1e-12), 0, 1
    )
    return np.linalg.norm(p[:, None] - (a[None] + t[..., None] * ab[None]), axis=-1).min(1)


def _road_lane_counts(m: RoadMap, bx: int, by: int) -> list[tuple[int, int, float]]:
    """(forward, backward, curb-to-centre distance) at the middle of every grid road segment."""
    c = m.junction_center[:, :2].astype(np.float64).reshape(by + 1, bx + 1, 2)
    out = []
    for j in range(by + 1):
        for i in range(bx + 1):
            for di, dj in ((1, 0), (0, 1)):
                if i + di > bx or j + dj > by:
                    continue
                p, q = c[j, i], c[j + dj, i + di]
                along = (q - p) / np.linalg.norm(q - p)
                mid = 0.5 * (p + q)
                fwd, back = _lanes_across(m, mid, along)
                out.append((fwd, back, float(_edge_distance(m, mid[None])[0])))
    return out


def test_lane_counts_per_road_read_back_from_geometry() -> None:
    seen = set()
    for seed in range(4):
        m = generate(
            seed=seed, blocks_x=3, blocks_y=3, merge_prob=0.0, parking_prob=0.0, parking_lane_prob=0.0
        )
        for fwd, back, curb in _road_lane_counts(m, 3, 3):
            # Two-way roads, the same count each way, 1..3 lanes, curbs exactly n lanes out.
            assert fwd == back and 1 <= fwd <= 3, (seed, fwd, back)
            assert curb == pytest.approx(fwd * W, abs=1e-3), (seed, fwd, curb)
            seen.add(fwd)
    assert seen == {1, 2, 3}
    capped = generate(
        seed=0, blocks_x=3, blocks_y=3, merge_prob=0.0, max_lanes_per_direction=2, four_lane_prob=1.0
    )
    assert {f for f, _, _ in _road_lane_counts(capped, 3, 3)} == {2}
    single = generate(seed=0, blocks_x=3, blocks_y=3, merge_prob=0.0, max_lanes_per_direction=1)
    assert {f for f, _, _ in _road_lane_counts(single, 3, 3)} == {1}


def _fit_circle(p: np.ndarray) -> tuple[np.ndarray, float]:
    """Algebraic (Kasa) least-squares circle through points (n, 2): centre, radius."""
    A = np.column_stack([2 * p[:, 0], 2 * p[:, 1], np.ones(len(p))])
    sol = np.linalg.lstsq(A, (p**2).sum(1), rcond=None)[0]
    centre = sol[:2]
    return centre, float(np.sqrt(sol[2] + centre @ centre))


def test_curved_corners_are_large_concentric_arcs_tangent_to_the_roads() -> None:
    bx, by = 3, 2
    m = generate(seed=5, blocks_x=bx, blocks_y=by, curve_prob=1.0)
    c = m.junction_center[:, :2].astype(np.float64).reshape(by + 1, bx + 1, 2)
    corners = [c[0, 0], c[0, -1], c[-1, -1], c[-1, 0]]
    # The centre line round each corner: a marking polyline that is not straight.
    arcs = []
    for k in range(m.marking_count):
        pts = m.marking_points[m.marking_offsets[k] : m.marking_offsets[k + 1], :2].astype(np.float64)
        if len(pts) > 2:
            arcs.append(pts)
    assert len(arcs) == 4
    outer = m.road_edge_points[m.road_edge_offsets[-2] : m.road_edge_offsets[-1], :2].astype(np.float64)
    n_w = c[0, 0, 0] - outer[:, 0].min()  # ring-road half width (m)
    for pts in arcs:
        centre, radius = _fit_circle(pts)
        np.testing.assert_allclose(np.linalg.norm(pts - centre, axis=1), radius, atol=1e-3)
        corner = min(corners, key=lambda q: np.linalg.norm(q - pts.mean(0)))
        # Tangent to both road centre lines: the centre is R from each of them.
        np.testing.assert_allclose(np.abs(centre - corner), radius, atol=1e-3)
        assert radius >= 15.0
        # The outer boundary follows a concentric arc n lanes further out.
        d = np.linalg.norm(outer - centre, axis=1)
        assert np.sum(np.abs(d - (radius + n_w)) < 1e-3) >= 5
        # All lanes of that corner stay inside the ring road's annulus, half a lane from its curbs.
        jid = int(np.argmin(np.linalg.norm(m.junction_center[:, :2] - corner, axis=1)))
        lane_pts = np.concatenate([m.lane(i)[:, :2] for i in np.flatnonzero(m.lane_junction == jid)])
        r = np.linalg.norm(lane_pts.astype(np.float64) - centre, axis=1)
        # (chunk cut points lie on chords of the sampled arcs: a few mm inside them)
        assert r.min() >= radius - n_w + 0.5 * W - 0.02 and r.max() <= radius + n_w - 0.5 * W + 0.02


def test_curved_corner_lanes_turn_smoothly() -> None:
    m = generate(seed=5, blocks_x=3, blocks_y=2, curve_prob=1.0)
    corners = {0, 3, 8, 11}  # node ids of the town corners in a 3x2 grid
    for i in np.flatnonzero(np.isin(m.lane_junction, list(corners))):
        pts = m.lane(int(i))[:, :2].astype(np.float64)
        for s in m.successors(int(i)):
            pts_next = m.lane(int(s))[:, :2].astype(np.float64)
            path = np.concatenate([pts, pts_next[1:]])
            d = np.diff(path, axis=0)
            heading = np.arctan2(d[:, 1], d[:, 0])
            turn = np.abs((np.diff(heading) + np.pi) % (2 * np.pi) - np.pi)
            assert turn.max() < np.radians(8.0), (int(i), np.degrees(turn.max()))


def test_parking_lanes_line_whole_block_sides_off_the_drivable_lanes() -> None:
    none = generate(seed=2, parking_prob=0.0, parking_lane_prob=0.0)
    assert len(none.parking_spots) == 0
    m = generate(seed=2, parking_prob=0.0, parking_lane_prob=1.0)
    spots = m.parking_spots[:, :2].astype(np.float64)
    assert len(spots) > 0
    # Each spot sits in a 2.5 m strip behind the curb line: 1.25 m from the cut-back curb.
    np.testing.assert_allclose(_edge_distance(m, spots), 1.25, atol=1e-3)
    # A 2.5 m wide spot never overlaps a lane: centre-line distance >= half spot + half lane.
    seg, _ = m.lane_segments()
    a, b = seg[:, 0, :2].astype(np.float64), seg[:, 1, :2].astype(np.float64)
    ab = b - a
    t = np.clip(np.einsum("psk,sk->ps", spots[:, None] - a[None], ab) / (ab * ab).sum(-1), 0, 1)
    d = np.linalg.norm(spots[:, None] - (a[None] + t[..., None] * ab[None]), axis=-1).min(1)
    assert d.min() >= 1.25 + 0.5 * W - 1e-3
    # Lanes run the whole side: rows of spots 6 m apart, longer than a bay's 6 spots.
    order = np.lexsort((spots[:, 1], spots[:, 0]))
    gaps = np.linalg.norm(np.diff(spots[order], axis=0), axis=1)
    assert np.any(np.isclose(gaps, 6.0, atol=1e-3))
    run, longest = 1, 1
    for g in gaps:
        run = run + 1 if abs(g - 6.0) < 1e-3 else 1
        longest = max(longest, run)
    assert longest > 6


def _roundabout_junctions(m: RoadMap) -> list[int]:
    """Junctions with lanes but no lights whose lanes include a closed circle (found by geometry)."""
    out = []
    for jid in set(m.lane_junction.tolist()) - {-1} - set(m.light_junction.tolist()):
        centre = m.junction_center[jid, :2].astype(np.float64)
        lanes = np.flatnonzero(m.lane_junction == jid)
        radii = [np.linalg.norm(m.lane(int(i))[:, :2].astype(np.float64) - centre, axis=1) for i in lanes]
        if sum(np.ptp(r) < 1e-3 for r in radii) >= 8:
            out.append(jid)
    return out


def test_roundabouts_form_a_counter_clockwise_cycle_reachable_from_every_entry() -> None:
    m = generate(seed=19, blocks_x=4, blocks_y=3, curve_prob=0.0, roundabouts=2, roundabout_prob=1.0)
    found = _roundabout_junctions(m)
    assert len(found) == 2
    assert len(m.sign_position) == 8 and np.all(m.sign_kind == SIGN_YIELD)
    for jid in found:
        centre = m.junction_center[jid, :2].astype(np.float64)
        lanes = set(np.flatnonzero(m.lane_junction == jid).tolist())
        ring = {i for i in lanes if np.ptp(np.linalg.norm(m.lane(i)[:, :2] - centre, axis=1)) < 1e-3}
        # Following ring successors from any ring lane goes once round, counter-clockwise.
        start = min(ring)
        cur, swept, visited = start, 0.0, []
        while True:
            visited.append(cur)
            v = m.lane(cur)[:, :2].astype(np.float64) - centre
            ang = np.unwrap(np.arctan2(v[:, 1], v[:, 0]))
            assert np.all(np.diff(ang) > 0.0)
            swept += ang[-1] - ang[0]
            nxt = [int(s) for s in m.successors(cur) if int(s) in ring]
            assert len(nxt) == 1
            cur = nxt[0]
            if cur == start:
                break
        assert sorted(visited) == sorted(ring) and swept == pytest.approx(2 * np.pi, abs=1e-3)
        # Entries and exits: road lanes into / out of the junction. Every exit is reachable from
        # every entry through the junction's own lanes, and every entry goes through the ring.
        entries = [
            i
            for i in range(m.lane_count)
            if m.lane_junction[i] == -1 and lanes & set(m.successors(i).tolist())
        ]
        exits = {int(s) for i in lanes for s in m.successors(i) if m.lane_junction[s] == -1}
        assert len(entries) >= 4 and len(exits) >= 4
        for e in entries:
            seen, queue = set(), deque(int(s) for s in m.successors(e))
            while queue:
                n = queue.popleft()
                if n in seen:
                    continue
                seen.add(n)
                if n in lanes:
                    queue.extend(int(s) for s in m.successors(n))
            assert exits <= seen and ring <= seen
        # Yield, not signals: no stop lines on the entries.
        assert not set(entries) & set(m.stop_line_lane.tolist())
        # A central island: a closed road-edge circle inside the ring.
        ring_r = np.linalg.norm(m.lane(start)[0, :2] - centre)
        islands = [
            k
            for k in range(m.road_edge_count)
            if np.ptp(
                r := np.linalg.norm(
                    m.road_edge_points[m.road_edge_offsets[k] : m.road_edge_offsets[k + 1], :2] - centre,
                    axis=1,
                )
            )
            < 1e-3
            and r[0] < ring_r
        ]
        assert len(islands) == 1


def test_roundabouts_off_means_none() -> None:
    m = generate(seed=19, blocks_x=4, blocks_y=3, roundabouts=0)
    assert _roundabout_junctions(m) == [] and len(m.sign_position) == 0


def test_eight_by_eight_town_is_valid_and_connected() -> None:
    m = generate(seed=3, blocks_x=8, blocks_y=8)
    succ = [m.successors(i) for i in range(m.lane_count)]
    assert all(len(s) for s in succ)
    seen, queue = {0}, deque([0])
    while queue:
        for n in succ[queue.popleft()]:
            if int(n) not in seen:
                seen.add(int(n))
                queue.append(int(n))
    assert len(seen) == m.lane_count


@pytest.mark.parametrize(
    "source, key",
    [
        ("procedural:seed=0,max_lanes_per_direction=4", "max_lanes_per_direction"),
        ("procedural:seed=0,max_lanes_per_direction=1.5", "max_lanes_per_direction"),
        ("procedural:seed=0,six_lane_prob=-0.1", "six_lane_prob"),
        ("procedural:seed=0,parking_lane_prob=2", "parking_lane_prob"),
        ("procedural:seed=0,curve_prob=x", "curve_prob"),
        ("procedural:seed=0,roundabouts=-1", "roundabouts"),
        ("procedural:seed=0,roundabout_prob=1.1", "roundabout_prob"),
        ("procedural:seed=0,block_size=43,irregularity=0,lane_width=4", "max_lanes_per_direction"),
    ],
)
def test_new_bad_keys_raise_naming_the_key(source: str, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        load(source)


def test_block_curb_corners_are_5_m_arcs() -> None:
    """docs/maps.md: a closed curb loop around each block with a 5 m corner radius. On a grid
    town (no curved roads, no roundabouts) every bend of a road edge lies on such an arc: the
    circle through any three consecutive curb points that bend is 5 m across the corner."""
    m = generate(
        seed=1, blocks_x=3, blocks_y=3, merge_prob=0.0, parking_prob=0.0, parking_lane_prob=0.0,
        curve_prob=0.0, roundabout_prob=0.0, roundabouts=0,
    )  # fmt: skip
    radii = []
    for k in range(m.road_edge_count):
        p = m.road_edge_points[m.road_edge_offsets[k] : m.road_edge_offsets[k + 1], :2].astype(np.float64)
        for a, b, c in zip(p[:-2], p[1:-1], p[2:], strict=True):
            cross = abs((b - a)[0] * (c - a)[1] - (b - a)[1] * (c - a)[0])
            if cross > 1e-6:
                radii.append(np.linalg.norm(b - a) * np.linalg.norm(c - b) * np.linalg.norm(a - c) / (2 * cross))
    bends = np.array(radii)
    bends = bends[bends < 50.0]  # nearly straight runs of an irregular block side are not corners
    assert len(bends) > 50
    np.testing.assert_allclose(bends, 5.0, atol=0.01)


def test_parking_lanes_taper_over_2_m_at_both_ends() -> None:
    """docs/maps.md: a parking lane is a 2.5 m curbside strip with 2 m tapers at both ends: at
    each end of a row of spots the curb runs from the strip's back corner back to the curb line
    over 2 m along the side and 2.5 m across it."""
    m = generate(seed=2, parking_prob=0.0, parking_lane_prob=1.0, curve_prob=0.0, roundabouts=0)
    spots = m.parking_spots.astype(np.float64)  # x, y, z, heading
    edges = [
        m.road_edge_points[m.road_edge_offsets[k] : m.road_edge_offsets[k + 1], :2].astype(np.float64)
        for k in range(m.road_edge_count)
    ]
    # rows: spots of one heading on one line, 6 m apart
    groups: dict = {}
    for x, y, _, a in spots:
        u = np.array([np.cos(a), np.sin(a)])
        key = (round(float(u[0]), 3), round(float(u[1]), 3), round(float(-u[1] * x + u[0] * y), 1))
        groups.setdefault(key, []).append((float(u @ [x, y]), float(-u[1] * x + u[0] * y)))
    ends = []
    for (ux, uy, _), members in groups.items():
        along = np.sort([s for s, _ in members])
        offset = float(np.mean([o for _, o in members]))
        cut = np.flatnonzero(np.abs(np.diff(along) - 6.0) > 1e-3)
        for run in np.split(along, cut + 1):
            u, n = np.array([ux, uy]), np.array([-uy, ux])
            for s, outward in ((run[0] - 3.0, -1.0), (run[-1] + 3.0, 1.0)):
                ends.append((u * s + n * offset, u * outward, n))
    assert len(ends) > 20
    for point, out, n in ends:
        # the strip's back corner: the edge vertex 1.25 m across from the row's end
        hits = [(e, i) for e in edges for i in range(len(e)) if abs(np.linalg.norm(e[i] - point) - 1.25) < 1e-3]
        assert len(hits) == 1, point
        e, i = hits[0]
        for j in (i - 1, i + 1):
            if 0 <= j < len(e) and (e[j] - e[i]) @ out > 1e-3:
                d = e[j] - e[i]
                np.testing.assert_allclose([d @ out, abs(d @ n)], [2.0, 2.5], atol=1e-3)
                break
        else:
            raise AssertionError(f"no taper leaves the row's end at {point}")


def _segments(points: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = [], []
    for i in range(len(offsets) - 1):
        p = points[offsets[i] : offsets[i + 1], :2].astype(np.float64)
        a.append(p[:-1])
        b.append(p[1:])
    return np.concatenate(a), np.concatenate(b)


def test_markings_and_walls_have_their_documented_dimensions() -> None:
    """docs/maps.md: dashed lane dividers of 3 m paint and 5 m gaps; walls 6 m behind the curb,
    cut into 8-20 m pieces, 4-10 m high."""
    m = generate(seed=0, blocks_x=3, blocks_y=3, wall_prob=1.0, four_lane_prob=1.0, curve_prob=0.0, roundabouts=0)
    dashes = [
        m.marking_points[m.marking_offsets[i] : m.marking_offsets[i + 1], :2].astype(np.float64)[[0, -1]]
        for i in range(len(m.marking_offsets) - 1)
        if m.marking_kind[i] == MARKING_LANE_DIVIDER
    ]
    dashes = np.array(dashes)  # (n, 2 ends, xy)
    assert len(dashes) > 100
    np.testing.assert_allclose(np.linalg.norm(dashes[:, 1] - dashes[:, 0], axis=1), 3.0, atol=1e-3)
    u = (dashes[:, 1] - dashes[:, 0]) / 3.0
    gaps = []
    for i in range(len(dashes)):
        d = dashes[:, 0] - dashes[i, 1]  # from this dash's end to every dash's start
        along = d @ u[i]
        on_line = (np.abs(d[:, 0] * u[i, 1] - d[:, 1] * u[i, 0]) < 1e-3) & (along > 0)
        if on_line.any():
            gaps.append(along[on_line].min())
    gaps = np.array(gaps)
    assert len(gaps) > 0.5 * len(dashes)
    # within a road's run of dashes the gap is 5 m; the longer ones cross a junction
    assert np.mean(np.abs(gaps - 5.0) < 1e-3) > 0.7 and gaps.min() > 5.0 - 1e-3

    walls = m.wall_points[:, :, :2].astype(np.float64)
    a, b = _segments(m.road_edge_points, m.road_edge_offsets)
    mid = 0.5 * (walls[:, 0] + walls[:, 1])
    ab = b - a
    t = np.clip(np.einsum("nkd,kd->nk", mid[:, None] - a[None], ab) / np.sum(ab * ab, 1), 0, 1)
    to_curb = np.linalg.norm(mid[:, None] - (a[None] + t[..., None] * ab[None]), axis=2).min(1)
    assert np.mean(np.abs(to_curb - 6.0) < 1e-3) > 0.7  # block fronts (the town's rim walls differ)
    length = np.linalg.norm(walls[:, 1] - walls[:, 0], axis=1)
    straight = length[length > 4.0]  # arc pieces are short chords
    assert len(straight) > 50 and 11.0 < np.median(straight) < 16.0
    assert straight.min() > 5.0 and np.percentile(straight, 95) < 23.0
    h = m.wall_height
    assert h.min() >= 4.0 and h.max() <= 10.0 and h.min() < 5.0 and h.max() > 9.0
