"""Every `wp.func` of `pictura.sim.geometry` against an independent float64 NumPy reference, on
random inputs: the primitives the collision, off-road, red-light and goal rules are built from.

The references use other algorithms than the kernels (parametric intersection instead of
orientation signs, Liang-Barsky clipping instead of separating axes, dense sampling of the move
instead of the swept hull), so a bug shared by both is unlikely. Where a reference samples, a
case counts only when the answer is the same with both boxes grown and shrunk by a margin, so a
grazing contact cannot make the comparison flaky.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from pictura.sim import geometry as g

DEVICE = "cpu"
N = 4000


@wp.kernel
def _primitives_kernel(
    box: wp.array2d(dtype=float),  # cx, cy, heading, half length, half width, angle to wrap
    seg: wp.array2d(dtype=float),  # a, b (segment 1), q, r (segment 2)
    out_i: wp.array2d(dtype=int),
    out_f: wp.array2d(dtype=float),
):
    i = wp.tid()
    c = wp.vec2(box[i, 0], box[i, 1])
    h = box[i, 2]
    hl = box[i, 3]
    hw = box[i, 4]
    a = wp.vec2(seg[i, 0], seg[i, 1])
    b = wp.vec2(seg[i, 2], seg[i, 3])
    q = wp.vec2(seg[i, 4], seg[i, 5])
    r = wp.vec2(seg[i, 6], seg[i, 7])
    if g.point_in_box(a, c, h, hl, hw):
        out_i[i, 0] = 1
    if g.segments_intersect(a, b, q, r):
        out_i[i, 1] = 1
    if g.box_hits_segment(c, h, hl, hw, a, b):
        out_i[i, 2] = 1
    out_f[i, 0] = g.point_segment_distance(q, a, b)
    out_f[i, 1] = g.segments_distance(a, b, q, r)
    out_f[i, 2] = g.wrap_angle(box[i, 5])
    for k in range(4):
        corner = g.box_corner(c, h, hl, hw, k)
        out_f[i, 3 + 2 * k] = corner[0]
        out_f[i, 4 + 2 * k] = corner[1]
    hl2, hw2, radius = g.box_half_extents(2.0 * hl, 2.0 * hw)
    out_f[i, 11] = hl2
    out_f[i, 12] = hw2
    out_f[i, 13] = radius


@wp.kernel
def _pairs_kernel(
    pair: wp.array2d(dtype=float),  # A: x0 y0 h0 x1 y1 h1 l w; B: x0 y0 h0 x1 y1 h1 l w
    seg: wp.array2d(dtype=float),
    out_i: wp.array2d(dtype=int),
):
    i = wp.tid()
    ca0 = wp.vec2(pair[i, 0], pair[i, 1])
    ca1 = wp.vec2(pair[i, 3], pair[i, 4])
    cb0 = wp.vec2(pair[i, 8], pair[i, 9])
    cb1 = wp.vec2(pair[i, 11], pair[i, 12])
    la = pair[i, 6]
    wa = pair[i, 7]
    lb = pair[i, 14]
    wb = pair[i, 15]
    if g.boxes_overlap(ca1, pair[i, 5], la, wa, cb1, pair[i, 13], lb, wb):
        out_i[i, 0] = 1
    # B translating (A still, both at their pose-0 headings)
    if g.translating_boxes_overlap(cb0 - ca0, cb1 - ca0, pair[i, 2], la, wa, pair[i, 10], lb, wb):
        out_i[i, 1] = 1
    if g.swept_boxes_overlap(
        ca0, pair[i, 2], ca1, pair[i, 5], la, wa, cb0, pair[i, 10], cb1, pair[i, 13], lb, wb
    ):
        out_i[i, 2] = 1
    a = wp.vec2(seg[i, 0], seg[i, 1])
    b = wp.vec2(seg[i, 2], seg[i, 3])
    if g.swept_box_hits_segment(ca0, pair[i, 2], ca1, pair[i, 5], 0.5 * la, 0.5 * wa, a, b):
        out_i[i, 3] = 1


# ---- NumPy references ------------------------------------------------------------------------


def _local(p: np.ndarray, c: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Points (N, 2) in the frame of boxes at ``c`` (N, 2) heading ``h`` (N,)."""
    d = p - c
    ch, sh = np.cos(h), np.sin(h)
    return np.stack([ch * d[:, 0] + sh * d[:, 1], -sh * d[:, 0] + ch * d[:, 1]], axis=1)


def _clip_hits(a: np.ndarray, b: np.ndarray, hl: np.ndarray, hw: np.ndarray) -> np.ndarray:
    """Liang-Barsky: does local segment ab (N, 2) meet the rectangle [-hl, hl] x [-hw, hw]?"""
    t0 = np.zeros(len(a))
    t1 = np.ones(len(a))
    d = b - a
    for axis, half in ((0, hl), (1, hw)):
        for sign in (-1.0, 1.0):
            p = sign * d[:, axis]
            q = half - sign * a[:, axis]
            with np.errstate(divide="ignore", invalid="ignore"):
                t = q / p
            parallel = p == 0
            t0 = np.where(~parallel & (p < 0), np.maximum(t0, t), t0)
            t1 = np.where(~parallel & (p > 0), np.minimum(t1, t), t1)
            t1 = np.where(parallel & (q < 0), -1.0, t1)
    return t0 <= t1


def _corners(c: np.ndarray, h: np.ndarray, hl: np.ndarray, hw: np.ndarray) -> np.ndarray:
    """(N, 4, 2) corners, counter-clockwise from front-left."""
    fx = np.stack([hl, -hl, -hl, hl], axis=1)
    fy = np.stack([hw, hw, -hw, -hw], axis=1)
    ch, sh = np.cos(h)[:, None], np.sin(h)[:, None]
    return np.stack([c[:, :1] + ch * fx - sh * fy, c[:, 1:] + sh * fx + ch * fy], axis=2)


def _np_overlap(ca, ha, la, wa, cb, hb, lb, wb) -> np.ndarray:
    """Do boxes (full length, width) overlap: an edge of B meets A, or B's centre is inside A."""
    corners = _corners(cb, hb, 0.5 * lb, 0.5 * wb)
    hit = np.all(np.abs(_local(cb, ca, ha)) < np.stack([0.5 * la, 0.5 * wa], axis=1), axis=1)
    hit |= np.all(np.abs(_local(ca, cb, hb)) < np.stack([0.5 * lb, 0.5 * wb], axis=1), axis=1)
    for k in range(4):
        p, q = corners[:, k], corners[:, (k + 1) % 4]
        hit |= _clip_hits(_local(p, ca, ha), _local(q, ca, ha), 0.5 * la, 0.5 * wa)
    return hit


def _np_point_segment(p, a, b) -> np.ndarray:
    ab = b - a
    t = np.clip(np.sum((p - a) * ab, axis=1) / np.sum(ab * ab, axis=1), 0.0, 1.0)
    return np.linalg.norm(p - (a + ab * t[:, None]), axis=1)


def _run(kernel, inputs: list[np.ndarray], ints: int, floats: int = 0):
    n = len(inputs[0])
    arrays = [wp.array(x.astype(np.float32), dtype=float, device=DEVICE) for x in inputs]
    out_i = wp.zeros((n, ints), dtype=int, device=DEVICE)
    outs = [out_i]
    if floats:
        outs.append(wp.zeros((n, floats), dtype=float, device=DEVICE))
    wp.launch(kernel, dim=n, inputs=arrays + outs, device=DEVICE)
    return [o.numpy() for o in outs]


def _random_primitives(rng: np.random.Generator):
    box = np.column_stack(
        [
            rng.uniform(-3, 3, (N, 2)),
            rng.uniform(-np.pi, np.pi, N),
            rng.uniform(0.3, 3.0, N),
            rng.uniform(0.2, 1.5, N),
            rng.uniform(-20, 20, N),
        ]
    )
    seg = rng.uniform(-5, 5, (N, 8))
    # round to float32 first, so both sides see the same inputs
    return box.astype(np.float32).astype(np.float64), seg.astype(np.float32).astype(np.float64)


def test_primitives_match_numpy():
    rng = np.random.default_rng(1)
    box, seg = _random_primitives(rng)
    out_i, out_f = _run(_primitives_kernel, [box, seg], ints=3, floats=14)
    c, h, hl, hw = box[:, :2], box[:, 2], box[:, 3], box[:, 4]
    a, b, q, r = seg[:, 0:2], seg[:, 2:4], seg[:, 4:6], seg[:, 6:8]

    local_a = _local(a, c, h)
    inside = (np.abs(local_a[:, 0]) < hl) & (np.abs(local_a[:, 1]) < hw)
    # boxes are long and narrow in both orders, so a half-length / half-width mix-up shows
    assert np.mean(inside != (out_i[:, 0] == 1)) == 0.0, "point_in_box"
    assert 0.03 < inside.mean() < 0.5

    # parametric intersection: a + t (b - a) = q + u (r - q), t, u in [0, 1]
    d1, d2 = b - a, r - q
    den = d1[:, 0] * (-d2[:, 1]) - d1[:, 1] * (-d2[:, 0])
    rhs = q - a
    t = (rhs[:, 0] * (-d2[:, 1]) - rhs[:, 1] * (-d2[:, 0])) / den
    u = (d1[:, 0] * rhs[:, 1] - d1[:, 1] * rhs[:, 0]) / den
    crossing = (t >= 0) & (t <= 1) & (u >= 0) & (u <= 1)
    robust = (np.minimum(np.abs(t - 0.5), np.abs(u - 0.5)) < 0.499) | ~crossing
    robust &= np.minimum.reduce([np.abs(t), np.abs(t - 1), np.abs(u), np.abs(u - 1)]) > 1e-4
    assert np.array_equal(crossing[robust], out_i[robust, 1] == 1), "segments_intersect"
    assert 0.1 < crossing.mean() < 0.9

    hits = _clip_hits(local_a, _local(b, c, h), hl, hw)
    assert np.array_equal(hits, out_i[:, 2] == 1), "box_hits_segment"
    assert 0.1 < hits.mean() < 0.9

    np.testing.assert_allclose(out_f[:, 0], _np_point_segment(q, a, b), atol=2e-5, rtol=1e-5)
    # the distance of two segments by dense sampling of both (0 where they cross)
    s = np.linspace(0.0, 1.0, 401)
    pa = a[:, None, :] + s[None, :, None] * d1[:, None, :]
    pq = q[:, None, :] + s[None, :, None] * d2[:, None, :]
    dense = np.array([np.min(np.linalg.norm(pa[i][:, None] - pq[i][None], axis=2)) for i in range(300)])
    step = np.maximum(np.linalg.norm(d1[:300], axis=1), np.linalg.norm(d2[:300], axis=1)) / 400
    assert np.all(out_f[:300, 1] <= dense + 1e-4) and np.all(out_f[:300, 1] >= dense - step - 1e-4)
    assert np.all(out_f[crossing & robust, 1] == 0.0)

    wrapped = (box[:, 5] + np.pi) % (2 * np.pi) - np.pi
    np.testing.assert_allclose(out_f[:, 2], wrapped, atol=1e-5)
    assert np.all((out_f[:, 2] >= -np.pi) & (out_f[:, 2] < np.pi + 1e-6))

    # corners counter-clockwise from front-left: front-left, rear-left, rear-right, front-right
    ch, sh = np.cos(h), np.sin(h)
    fwd, left = np.stack([ch, sh], 1), np.stack([-sh, ch], 1)
    for k, (fx, fy) in enumerate(((1, 1), (-1, 1), (-1, -1), (1, -1))):
        want = c + fwd * (fx * hl)[:, None] + left * (fy * hw)[:, None]
        np.testing.assert_allclose(
            out_f[:, 3 + 2 * k : 5 + 2 * k], want, atol=1e-4, err_msg=f"box_corner {k}"
        )
    np.testing.assert_allclose(out_f[:, 11], hl, rtol=1e-6)
    np.testing.assert_allclose(out_f[:, 12], hw, rtol=1e-6)
    np.testing.assert_allclose(out_f[:, 13], np.hypot(hl, hw), rtol=1e-6)


def _random_pairs(rng: np.random.Generator, turn: float):
    def pose(n):
        p0 = rng.uniform(-4, 4, (n, 2))
        h0 = rng.uniform(-np.pi, np.pi, n)
        p1 = p0 + rng.uniform(-3, 3, (n, 2))
        h1 = h0 + rng.uniform(-turn, turn, n)
        size = np.column_stack([rng.uniform(1.0, 5.0, n), rng.uniform(0.2, 2.0, n)])
        return np.column_stack([p0, h0, p1, h1, size])

    pair = np.column_stack([pose(N), pose(N)]).astype(np.float32).astype(np.float64)
    seg = rng.uniform(-6, 6, (N, 4)).astype(np.float32).astype(np.float64)
    return pair, seg


def _sampled_overlap(pair: np.ndarray, grow: float, turning: bool, steps: int = 161) -> np.ndarray:
    """Overlap at any of ``steps`` poses along the move (A still at pose 0 unless ``turning``)."""
    hit = np.zeros(len(pair), bool)
    for t in np.linspace(0.0, 1.0, steps):
        if turning:
            ca = pair[:, 0:2] + t * (pair[:, 3:5] - pair[:, 0:2])
            ha = pair[:, 2] + t * (pair[:, 5] - pair[:, 2])
            hb = pair[:, 10] + t * (pair[:, 13] - pair[:, 10])
        else:
            ca, ha, hb = pair[:, 0:2], pair[:, 2], pair[:, 10]
        cb = pair[:, 8:10] + t * (pair[:, 11:13] - pair[:, 8:10])
        hit |= _np_overlap(
            ca, ha, pair[:, 6] + grow, pair[:, 7] + grow, cb, hb, pair[:, 14] + grow, pair[:, 15] + grow
        )
    return hit


def test_box_pairs_match_numpy():
    rng = np.random.default_rng(2)
    pair, seg = _random_pairs(rng, turn=0.3)
    out = _run(_pairs_kernel, [pair, seg], ints=4)[0]

    end = _np_overlap(
        pair[:, 3:5],
        pair[:, 5],
        pair[:, 6],
        pair[:, 7],
        pair[:, 11:13],
        pair[:, 13],
        pair[:, 14],
        pair[:, 15],
    )
    assert np.array_equal(end, out[:, 0] == 1), "boxes_overlap"
    assert 0.1 < end.mean() < 0.9

    # margins exceed both the sampling step and the swept test's heading tolerance (0.02 m)
    for col, turning, margin in ((1, False, 0.05), (2, True, 0.15)):
        lo, hi = _sampled_overlap(pair, -margin, turning), _sampled_overlap(pair, margin, turning)
        sure = lo == hi
        assert sure.mean() > 0.8
        assert np.array_equal(lo[sure], out[sure, col] == 1), ("translating", "swept")[col - 1]
        assert 0.2 < lo[sure].mean() < 0.9

    # the swept box against a segment: corners of 161 poses joined by segments between poses
    def swept_hits(grow: float) -> np.ndarray:
        hit = np.zeros(N, bool)
        a, b = seg[:, 0:2], seg[:, 2:4]
        for t in np.linspace(0.0, 1.0, 161):
            ca = pair[:, 0:2] + t * (pair[:, 3:5] - pair[:, 0:2])
            ha = pair[:, 2] + t * (pair[:, 5] - pair[:, 2])
            hit |= _clip_hits(
                _local(a, ca, ha), _local(b, ca, ha), 0.5 * pair[:, 6] + grow, 0.5 * pair[:, 7] + grow
            )
        return hit

    lo, hi = swept_hits(-0.15), swept_hits(0.15)
    sure = lo == hi
    assert sure.mean() > 0.8
    assert np.array_equal(lo[sure], out[sure, 3] == 1), "swept_box_hits_segment"
    assert 0.2 < lo[sure].mean() < 0.9


def test_a_box_turning_up_to_half_a_turn_never_steps_over_an_edge():
    """`swept_box_hits_segment`'s interpolated poses are enough for a box to turn through
    ~180 deg in one step: every road-edge-like segment (4-10 m) that the true sweep reaches
    0.2 m deep is hit."""
    rng = np.random.default_rng(5)
    n = N
    pair = np.zeros((n, 16))
    pair[:, 0:2] = rng.uniform(-1, 1, (n, 2))
    pair[:, 2] = rng.uniform(-np.pi, np.pi, n)
    pair[:, 3:5] = pair[:, 0:2] + rng.uniform(-1.5, 1.5, (n, 2))
    pair[:, 5] = pair[:, 2] + rng.choice([-1, 1], n) * rng.uniform(1.5, 3.0, n)
    pair[:, 6], pair[:, 7] = rng.uniform(3.0, 5.5, n), rng.uniform(1.5, 2.2, n)
    pair[:, 8:10] = 50.0  # box B far away (unused)
    pair[:, 11:13] = 50.0
    pair[:, 14:16] = 1.0
    mid = rng.uniform(-4, 4, (n, 2))
    angle = rng.uniform(-np.pi, np.pi, n)
    half = rng.uniform(2.0, 5.0, n)[:, None] * np.stack([np.cos(angle), np.sin(angle)], 1)
    seg = np.column_stack([mid - half, mid + half])
    pair, seg = pair.astype(np.float32).astype(np.float64), seg.astype(np.float32).astype(np.float64)
    out = _run(_pairs_kernel, [pair, seg], ints=4)[0]

    deep = np.zeros(n, bool)
    a, b = seg[:, 0:2], seg[:, 2:4]
    for t in np.linspace(0.0, 1.0, 361):
        c = pair[:, 0:2] + t * (pair[:, 3:5] - pair[:, 0:2])
        h = pair[:, 2] + t * (pair[:, 5] - pair[:, 2])
        deep |= _clip_hits(_local(a, c, h), _local(b, c, h), 0.5 * pair[:, 6] - 0.2, 0.5 * pair[:, 7] - 0.2)
    ends = np.zeros(n, bool)
    for c, h in ((pair[:, 0:2], pair[:, 2]), (pair[:, 3:5], pair[:, 5])):
        ends |= _clip_hits(_local(a, c, h), _local(b, c, h), 0.5 * pair[:, 6], 0.5 * pair[:, 7])
    # the cases only the turn between the end poses reaches
    between = deep & ~ends
    assert between.sum() > 100
    assert np.all(out[deep, 3] == 1), f"{np.sum(out[deep, 3] == 0)} of {deep.sum()} deep contacts missed"
