"""Renderer against independent NumPy geometry (projection, polygon fill) on device "cpu"."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps.roadmap import (
    AGENT_CYCLIST,
    AGENT_PEDESTRIAN,
    AGENT_VEHICLE,
    LIGHT_GREEN,
    LIGHT_RED,
    LIGHT_YELLOW,
    pack_polylines,
)
from pictura.render import Camera, CameraRig, Renderer
from pictura.render.palette import AGENT_FACE_COLOR, GROUND, LIGHT_COLOR, SKY, WALL, to_uint8
from pictura.sim.snapshot import WorldLayout
from tests.render.conftest import boxes, empty_map, fill_polygon, front_silhouette, grown_by_one_pixel, layout

FRONT = Camera("front", 0.0, 0.0, 1.5, 0.0)
EGO = (0.0, 0.0, 0.0, 0.0, 0.8, 0.8, 1.5, AGENT_VEHICLE)
BACKGROUND = {tuple(to_uint8(SKY)), tuple(to_uint8(GROUND))}


def front_renderer(road_map=None, worlds=1, slots=8, width=96, height=54, **kw) -> Renderer:
    rig = CameraRig(cameras=[FRONT], width=width, height=height)
    return Renderer([road_map or empty_map()], layout(worlds, slots), rig, **kw)


def render_one(r: Renderer, box_hist: np.ndarray, step: int = 0, slot: int = 0) -> np.ndarray:
    ls = np.zeros((box_hist.shape[0], r.layout.light_count), np.int32)
    return r.render_numpy(box_hist, ls, np.array([[step, slot]]))[0]


def is_background(img: np.ndarray) -> np.ndarray:
    flat = img.reshape(-1, 3)
    bg = np.zeros(len(flat), bool)
    for c in BACKGROUND:
        bg |= np.all(flat == np.array(c, np.uint8), axis=1)
    return bg.reshape(img.shape[:-1])


@pytest.mark.parametrize(
    "target",  # face-on, turned (an oblique side face), nearer and turned the other way, far
    [
        (12.0, 0.0, 0.0, 0.0, 4.5, 2.0, 1.6, AGENT_VEHICLE),
        (12.0, 1.5, 0.0, 0.6, 4.5, 2.0, 1.6, AGENT_VEHICLE),
        (8.0, -2.0, 0.0, 2.0, 4.5, 2.0, 1.6, AGENT_VEHICLE),
        (25.0, 3.0, 0.0, 1.2, 4.5, 2.0, 1.6, AGENT_VEHICLE),
    ],
)
def test_box_silhouette_matches_projected_hull(target):
    # issue 5: hard-edged silhouette IoU >= 0.98 at 96x54 against the NumPy projection
    r = front_renderer(antialias=False)
    img = render_one(r, boxes(8, {0: EGO, 1: target}))[0]
    expected = fill_polygon(front_silhouette(r.rig.focal, r.rig.principal, target), 96, 54)
    drawn = ~is_background(img)
    iou = (drawn & expected).sum() / (drawn | expected).sum()
    assert expected.sum() > 50 and iou >= 0.98


def test_antialiased_box_stays_within_one_pixel_of_the_hull():
    r = front_renderer()
    target = (10.0, -1.0, 0.0, -0.4, 4.0, 1.8, 1.5, AGENT_VEHICLE)
    img = render_one(r, boxes(8, {0: EGO, 1: target}))[0]
    hull = fill_polygon(front_silhouette(r.rig.focal, r.rig.principal, target), 96, 54)
    grown = grown_by_one_pixel(hull)
    drawn = ~is_background(img)
    assert drawn[hull].mean() > 0.97
    assert not np.any(drawn & ~grown)


def test_faces_have_distinct_colours():
    # Seen from the front-left above: front, left side and top all face the camera.
    cam = Camera("high", 0.0, 0.0, 4.0, 0.0, pitch_deg=20.0)
    rig = CameraRig(cameras=[cam], width=96, height=54)
    r = Renderer([empty_map()], layout(1, 4), rig, antialias=False)
    # Box ahead, turned to face the ego (heading pi) and rotated so its right side shows.
    target = (10.0, 0.0, 0.0, np.pi - 0.6, 3.0, 3.0, 1.5, AGENT_VEHICLE)
    img = render_one(r, boxes(4, {0: EGO, 1: target}))[0]
    colours = {tuple(c) for c in img[~is_background(img)].reshape(-1, 3)}
    hues = [c for c in colours if img[np.all(img == np.array(c, np.uint8), -1)].shape[0] > 10]
    assert len(hues) >= 3, f"expected >= 3 large distinct face colours, got {hues}"


def test_types_have_their_own_hue():
    for kind in (AGENT_VEHICLE, AGENT_PEDESTRIAN, AGENT_CYCLIST):
        fc = AGENT_FACE_COLOR[kind]
        assert len({tuple(np.round(c, 3)) for c in fc}) == 6
    assert not np.allclose(AGENT_FACE_COLOR[0], AGENT_FACE_COLOR[1])
    r = front_renderer(antialias=False)
    seen = []
    for kind in (AGENT_VEHICLE, AGENT_PEDESTRIAN, AGENT_CYCLIST):
        img = render_one(r, boxes(8, {0: EGO, 1: (8.0, 0.0, 0.0, np.pi, 2.0, 2.0, 2.0, kind)}))[0]
        seen.append(tuple(img[27, 48]))
    assert len(set(seen)) == 3


def test_nearer_box_occludes_farther():
    r = front_renderer(antialias=False)
    near_box = (8.0, 0.0, 0.0, np.pi, 1.0, 1.0, 1.8, AGENT_PEDESTRIAN)
    far_box = (20.0, 0.0, 0.0, np.pi, 4.5, 2.5, 3.0, AGENT_VEHICLE)
    for order in ((1, 2), (2, 1)):  # slot order must not matter
        rows = {0: EGO, order[0]: near_box, order[1]: far_box}
        img = render_one(r, boxes(8, rows))[0]
        centre = img[27, 48].astype(float)
        alone = render_one(r, boxes(8, {0: EGO, 1: near_box}))[0][27, 48]
        assert np.array_equal(img[27, 48], alone), centre
        # The far box still shows beside the near one.
        far_alone = render_one(r, boxes(8, {0: EGO, 1: far_box}))[0]
        assert np.array_equal(img[27, 41], far_alone[27, 41])


def test_lane_line_width_shrinks_with_depth():
    # One longitudinal divider 1.5 m to the right; measure its coverage-weighted width per row.
    pts, off = pack_polylines([np.array([[x, -1.5, 0.0] for x in np.arange(0.0, 101.0, 5.0)])])
    rm = empty_map(marking_points=pts, marking_offsets=off, marking_kind=np.array([0], np.int32))
    r = front_renderer(rm, width=384, height=216)
    img = render_one(r, boxes(8, {0: EGO})).astype(float)[0]
    ground = to_uint8(GROUND).astype(float)
    line = np.array([0.92, 0.92, 0.92]) * 255.0
    frac = ((img - ground) / (line - ground))[..., 0].clip(0, 1)
    f, cy = r.rig.focal, r.rig.principal[1]

    def width_at(depth: float) -> tuple[float, float]:
        row = int(cy + f * 1.5 / depth)  # row whose pixel centres see the ground near `depth`
        return frac[row].sum(), f * 1.5 / (row + 0.5 - cy)

    w1, d1 = width_at(8.0)
    w2, d2 = width_at(16.0)
    # Expected on-screen width: f * 0.15 m / depth (px); it halves when depth doubles.
    assert w1 == pytest.approx(f * 0.15 / d1, rel=0.2)
    assert w2 == pytest.approx(f * 0.15 / d2, rel=0.2)
    assert w1 / w2 == pytest.approx(d2 / d1, rel=0.15)


@pytest.mark.parametrize("y", [-1.5, 6.0])
def test_line_split_into_segments_looks_like_one_segment(y):
    # Segments of a polyline share coverage at their joints (no brighter joints, no gaps),
    # from a line beside the ego to one crossing the view obliquely towards the horizon.
    def render(step: float) -> np.ndarray:
        xs = np.arange(2.0, 122.0 + 1e-3, step)
        pts, off = pack_polylines([np.array([[x, y + 0.3 * (x - 2.0), 0.0] for x in xs])])
        rm = empty_map(marking_points=pts, marking_offsets=off, marking_kind=np.array([0], np.int32))
        return render_one(front_renderer(rm), boxes(8, {0: EGO})).astype(int)[0]

    one, many = render(120.0), render(2.5)
    assert not is_background(one.astype(np.uint8)).all()
    diff = np.abs(one - many)
    assert diff.max() <= 20 and diff.mean() < 0.05  # round caps compounded: 37 levels


def test_rerender_from_history_is_bitwise_equal():
    r = front_renderer(worlds=2, slots=4)
    rng = np.random.default_rng(0)
    hist = boxes(8, {}, steps=2)
    for t in range(2):
        for s in range(8):
            hist[t, s] = (rng.uniform(5, 30), rng.uniform(-6, 6), 0, rng.uniform(-3, 3), 4, 2, 1.5, s % 3)
    hist[:, 0, :4] = (0, 0, 0, 0)
    hist[:, 4, :4] = (0, 0, 0, 0)
    ls = np.zeros((2, 0), np.int32)
    req = np.array([[1, 0], [0, 4], [1, 4], [0, 0]])
    together = r.render_numpy(hist, ls, req)
    alone = r.render_numpy(hist[1:], ls[1:], np.array([[0, 0]]))
    assert np.array_equal(together[0], alone[0])
    assert not np.array_equal(together[0], together[3])  # the steps differ
    again = r.render_numpy(hist, ls, req)
    assert np.array_equal(together, again)
    # Chunked streaming gives the same bytes.
    r.chunk_size = 1
    assert np.array_equal(r.render_numpy(hist, ls, req), together)


def test_automatic_chunk_follows_the_scratch_budget(monkeypatch):
    """chunk_size=None: as many requests per pass as the scratch budget holds, same bytes."""
    from pictura.render import rasterizer

    r = front_renderer(worlds=2, slots=4)
    assert r.chunk_size is None and r.chunk_requests(3) == 3  # a small batch is one pass
    per_request = r.scratch_bytes_per_view() * r.num_cameras
    assert per_request > r.list_capacity * 8 + 2048 * 8  # lists + candidate buffer at least
    monkeypatch.setattr(rasterizer, "SCRATCH_MEMORY_MAX_BYTES", 300 * per_request)
    monkeypatch.setattr(rasterizer, "MIN_CHUNK_REQUESTS", 1)
    assert r.chunk_requests(10_000) == 300
    monkeypatch.setattr(rasterizer, "SCRATCH_MEMORY_MAX_BYTES", 1.5 * per_request)
    rng = np.random.default_rng(1)
    hist = boxes(8, {}, steps=1)
    for s in range(8):
        hist[0, s] = (rng.uniform(5, 30), rng.uniform(-6, 6), 0, rng.uniform(-3, 3), 4, 2, 1.5, s % 3)
    req = np.array([[0, s] for s in range(8)])
    one_at_a_time = r.render_numpy(hist, np.zeros((1, 0), np.int32), req)
    assert r.chunk_requests(8) == 1
    r.chunk_size = 8
    assert np.array_equal(r.render_numpy(hist, np.zeros((1, 0), np.int32), req), one_at_a_time)


def test_other_world_agents_and_the_ego_are_not_drawn():
    r = front_renderer(worlds=2, slots=4, antialias=False)
    other = (10.0, 0.0, 0.0, 0.0, 4.5, 2.0, 1.5, AGENT_VEHICLE)
    empty_view = render_one(r, boxes(8, {0: EGO}))
    assert is_background(empty_view).all()
    assert np.array_equal(render_one(r, boxes(8, {0: EGO, 5: other})), empty_view)  # world 1
    assert not np.array_equal(render_one(r, boxes(8, {0: EGO, 1: other})), empty_view)  # world 0
    # A chase camera behind the ego would see the ego's own (big) box if it were drawn.
    chase = CameraRig(cameras=[Camera("chase", -12.0, 0.0, 2.0, 0.0)], width=96, height=54)
    rc = Renderer([empty_map()], layout(1, 4), chase, antialias=False)
    big_ego = (0.0, 0.0, 0.0, 0.0, 4.5, 2.0, 3.0, AGENT_VEHICLE)
    assert is_background(render_one(rc, boxes(4, {0: big_ego}))).all()
    # Sanity: the same box in another slot, seen from that slot's rig, is drawn.
    assert not is_background(render_one(rc, boxes(4, {0: big_ego, 1: big_ego}), slot=1)).all()


def test_invalid_request_is_reported_by_validate_only():
    r = front_renderer()
    hist = boxes(8, {0: EGO})
    img = render_one(r, hist, slot=3)  # empty slot: no exception in the hot path, black image
    assert not img.any()
    r.validate_requests(hist, np.array([[0, 0]]), np.zeros((1, 0), np.int32))
    with pytest.raises(ValueError, match="light_state"):
        r.validate_requests(hist, np.array([[0, 0]]), np.array([[4]], np.int32))
    with pytest.raises(ValueError, match="kind == -1"):
        r.validate_requests(hist, np.array([[0, 0], [0, 3]]))
    with pytest.raises(ValueError, match="step"):
        r.validate_requests(hist, np.array([[2, 0]]))


def test_walls_occlude_and_lights_face_their_approach():
    wall = np.array([[[15.0, -5.0, 0.0], [15.0, 5.0, 0.0]]], np.float32)
    rm = empty_map(
        wall_points=wall,
        wall_height=np.array([3.0], np.float32),
        light_position=np.array([[10.0, 0.0, 5.0]], np.float32),
        light_heading=np.array([np.pi], np.float32),  # facing the ego
    )
    lay = layout(1, 4, lights=1)
    rig = CameraRig(cameras=[FRONT], width=192, height=108)
    r = Renderer([rm], lay, rig)
    behind = (25.0, 0.0, 0.0, np.pi, 4.0, 2.0, 1.5, AGENT_PEDESTRIAN)
    hist = boxes(4, {0: EGO, 1: behind})
    red = np.array([[LIGHT_RED]], np.int32)
    img = r.render_numpy(hist, red, np.array([[0, 0]]))[0, 0].astype(int)
    # The box hides fully behind the wall: the image equals the one without it ...
    no_box = r.render_numpy(boxes(4, {0: EGO}), red, np.array([[0, 0]]))[0, 0]
    assert np.array_equal(img, no_box)
    # ... while without the wall it shows.
    r_open = Renderer([empty_map()], layout(1, 4), rig)
    assert not np.array_equal(render_one(r_open, hist), render_one(r_open, boxes(4, {0: EGO})))
    is_red = (img[..., 0] > 180) & (img[..., 1] < 60) & (img[..., 2] < 60)
    assert is_red.sum() >= 2
    # The same head turned away from the ego: culled (serves another approach).
    rm.light_heading = np.array([0.0], np.float32)
    r2 = Renderer([rm], lay, rig)
    img2 = r2.render_numpy(hist, red, np.array([[0, 0]]))[0, 0].astype(int)
    assert not np.any((img2[..., 0] > 180) & (img2[..., 1] < 60) & (img2[..., 2] < 60))


def test_occlusion_fraction():
    r = front_renderer(slots=4)
    target = (20.0, 0.0, 0.0, np.pi, 2.0, 4.0, 2.0, AGENT_VEHICLE)
    # An occluder covering exactly the target's left half (y > 0) as seen from the camera.
    blocker = (10.0, 2.0, 0.0, 0.0, 0.5, 4.0, 3.0, AGENT_VEHICLE)
    ls = np.zeros(0, np.int32)
    free = boxes(4, {0: EGO, 1: target})[0]
    assert r.occlusion_fraction(free, ls, 0, 1) == pytest.approx(1.0)
    half = boxes(4, {0: EGO, 1: target, 2: blocker})[0]
    assert r.occlusion_fraction(half, ls, 0, 1) == pytest.approx(0.5, abs=0.1)
    wall = (10.0, 0.0, 0.0, 0.0, 0.5, 8.0, 4.0, AGENT_VEHICLE)
    hidden = boxes(4, {0: EGO, 1: target, 2: wall})[0]
    assert r.occlusion_fraction(hidden, ls, 0, 1) == 0.0


def test_grid_cell_size_does_not_change_the_image():
    polys = [np.array([[x, y, 0.0] for x in np.arange(-30.0, 150.0, 7.0)]) for y in (-5.0, -1.7, 1.7, 5.0)]
    pts, off = pack_polylines(polys)
    kinds = np.array([0, 0, 1, 0], np.int32)
    rm = empty_map(marking_points=pts, marking_offsets=off, marking_kind=kinds)
    hist = boxes(8, {0: (0.0, 0.0, 0.0, 0.3, 0.8, 0.8, 1.5, 0), 1: (15.0, 2.0, 0.0, 0.2, 4.0, 2.0, 1.5, 0)})
    imgs = [render_one(front_renderer(rm, cell_size=c), hist) for c in (3.0, 16.0, 500.0)]
    assert np.abs(imgs[0].astype(int) - imgs[1]).max() <= 1
    assert np.abs(imgs[0].astype(int) - imgs[2]).max() <= 1


def _line_fraction(r: Renderer) -> np.ndarray:
    img = render_one(r, boxes(8, {0: EGO})).astype(float)[0]
    ground = to_uint8(GROUND).astype(float)
    return ((img - ground) / (np.array([0.92, 0.92, 0.92]) * 255.0 - ground))[..., 0].clip(0, 1)


def test_thin_lines_fade_instead_of_breaking_at_32x18():
    # 1.2 m to the right (not 1.5 m = the camera height, whose image runs through pixel centres).
    pts, off = pack_polylines([np.array([[x, -1.2, 0.0] for x in np.arange(0.0, 201.0, 10.0)])])
    rm = empty_map(marking_points=pts, marking_offsets=off, marking_kind=np.array([0], np.int32))
    # Ground rows that see the line between ~5 m and ~77 m ahead.
    rows = range(9, 18)
    aa = _line_fraction(front_renderer(rm, width=32, height=18))
    hard = _line_fraction(front_renderer(rm, width=32, height=18, antialias=False))
    assert all(aa[row].sum() > 0.02 for row in rows)  # every row keeps a faint line
    assert any(hard[row].sum() == 0 for row in rows)  # 1-sample rendering breaks it
    # Coverage-weighted width tracks the projected width f * 0.15 / depth (px), even sub-pixel.
    f, cy = 1545.0 * 32 / 1920, 9.0
    measured = np.array([aa[row].sum() for row in rows])
    expected = np.array([f * 0.15 / (f * 1.5 / (row + 0.5 - cy)) for row in rows])
    np.testing.assert_allclose(measured, expected, rtol=0.5, atol=0.03)
    assert np.corrcoef(measured, expected)[0, 1] > 0.95


def test_supersample_reference_is_close_to_analytic_coverage():
    rm_args = dict(
        wall_points=np.array([[[8.0, 6.0, 0.0], [60.0, 3.0, 0.0]]], np.float32),
        wall_height=np.array([4.0], np.float32),
    )
    hist = boxes(8, {0: EGO, 1: (12.0, -1.0, 0.0, 0.5, 4.5, 2.0, 1.5, 0)})
    analytic = render_one(front_renderer(empty_map(**rm_args)), hist).astype(int)
    reference = render_one(front_renderer(empty_map(**rm_args), supersample=2, antialias=False), hist).astype(int)
    hard = render_one(front_renderer(empty_map(**rm_args), antialias=False), hist).astype(int)
    err_analytic = np.abs(analytic - reference).mean()
    err_hard = np.abs(hard - reference).mean()
    assert err_analytic < err_hard


def test_each_world_uses_its_own_map_and_light_states():
    light = dict(
        light_position=np.array([[12.0, 0.0, 3.0]], np.float32),
        light_heading=np.array([np.pi], np.float32),
    )
    wall = dict(wall_points=np.array([[[20.0, -9.0, 0.0], [20.0, 9.0, 0.0]]], np.float32), wall_height=np.array([5.0], np.float32))
    maps = [empty_map(**light), empty_map(**light, **wall)]
    lay = WorldLayout.uniform([0, 0, 1], 2, [1, 1])
    rig = CameraRig(cameras=[FRONT], width=96, height=54)
    r = Renderer(maps, lay, rig)
    hist = boxes(6, {0: EGO, 2: EGO, 4: EGO})
    states = np.array([[LIGHT_RED, LIGHT_GREEN, LIGHT_GREEN]], np.int32)
    img = r.render_numpy(hist, states, np.array([[0, 0], [0, 2], [0, 4]]))[:, 0].astype(int)
    red = (img[..., 0] > 180) & (img[..., 1] < 80) & (img[..., 2] < 80)
    green = (img[..., 1] > 180) & (img[..., 0] < 80) & (img[..., 2] < 120)
    assert red[0].any() and not green[0].any()  # world 0: its own light (red)
    assert green[1].any() and not red[1].any()  # world 1: same map, its own light state
    # World 2 plays on map 1: its wall shows; world 0 equals a renderer that only knows map 0.
    only_map0 = Renderer([maps[0]], WorldLayout.uniform([0], 2, [1]), rig)
    alone = only_map0.render_numpy(hist[:, :2], states[:, :1], np.array([[0, 0]]))[0, 0]
    assert np.array_equal(img[0], alone)
    wall_px = np.abs(img[2] - np.array(to_uint8(WALL), int)).max(-1) < 60
    assert wall_px.sum() > 300


def test_occlusion_fraction_counts_walls():
    # A wall whose end sits on the camera axis hides the target's right half (y < 0).
    rm = empty_map(
        wall_points=np.array([[[12.0, 0.0, 0.0], [12.0, -8.0, 0.0]]], np.float32),
        wall_height=np.array([5.0], np.float32),
    )
    r = front_renderer(rm, slots=4)
    target = (25.0, 0.0, 0.0, np.pi, 2.0, 4.0, 2.0, AGENT_VEHICLE)
    frac = r.occlusion_fraction(boxes(4, {0: EGO, 1: target})[0], np.zeros(0, np.int32), 0, 1)
    assert frac == pytest.approx(0.5, abs=0.1)


def test_each_light_state_is_drawn_in_its_own_colour():
    # docs/renderer.md: a head facing the camera shows its state's colour (red, yellow, green)
    light = dict(light_position=np.array([[12.0, 0.0, 3.0]], np.float32), light_heading=np.array([np.pi], np.float32))
    lay = WorldLayout.uniform([0, 0, 0], 2, [1, 1, 1])
    r = Renderer([empty_map(**light)], lay, CameraRig(cameras=[FRONT], width=96, height=54))
    hist = boxes(6, {0: EGO, 2: EGO, 4: EGO})
    states = np.array([[LIGHT_RED, LIGHT_YELLOW, LIGHT_GREEN]], np.int32)
    img = r.render_numpy(hist, states, np.array([[0, 0], [0, 2], [0, 4]]))[:, 0].astype(int)
    want = {"red": (1.00, 0.08, 0.08), "yellow": (1.00, 0.85, 0.10), "green": (0.10, 1.00, 0.35)}
    for i, name in enumerate(want):
        close = {k: (np.abs(img[i] - np.array(to_uint8(c), int)).max(-1) < 40).sum() for k, c in want.items()}
        assert close[name] >= 2 and all(n == 0 for k, n in close.items() if k != name), (name, close)
    assert np.allclose(LIGHT_COLOR[[LIGHT_RED, LIGHT_YELLOW, LIGHT_GREEN]], list(want.values()))
