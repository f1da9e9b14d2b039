"""`fragments.trace_ray`'s fragment buffer against the exact front-to-back composite (NumPy).

One ray along +x meets a stack of traffic-light disks that face it. A disk's fragment has the
disk's distance as depth, its angular visibility as alpha (the ray passes through its centre,
so its coverage is 1) and its record's colour, so the test sets each fragment's (t, alpha,
colour) directly in hand-built records and walks them in list order. The buffer keeps
`common.FRAGMENT_SLOTS` fragments and composites any further one behind the last slot, so
more fragments than slots must still composite exactly (up to the colours' 10-bit packing).
"""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from pictura.render import common, fragments, scene

SKY = (0.2, 0.4, 0.9)
FAR = 100.0
# 1 / 1023 per packed colour (`common.COLOR_BITS`), once per fragment and once per merge
TOLERANCE = 3e-3


@wp.kernel
def trace_one_ray(
    rec: wp.array(dtype=common.EntryRecord),
    tile_mask: wp.array(dtype=wp.uint32),
    face_color: wp.array(dtype=wp.vec3),
    misc_color: wp.array(dtype=wp.vec3),
    out: wp.array(dtype=wp.vec3),
):
    # over the sky (on_ground 0), pix 1e-3 rad, near 0.1 m, antialiased; pixel (0, 0) of the
    # sample grid (only `SilhouetteCoverage` reads it)
    out[0] = fragments.trace_ray(
        wp.vec3(1.0, 0.0, 0.0), 0, rec, 0, tile_mask, 0, 1, face_color, misc_color, 0, 1.0e-3, 0.1, FAR, 1,
        common.RampCoverage(),
    )  # fmt: skip


@wp.kernel
def packed_color_words(colors: wp.array(dtype=wp.vec3), words: wp.array(dtype=wp.float32)):
    i = wp.tid()
    words[i] = common.packed_color_word(colors[i])


def packed_color_word(color: tuple[float, float, float]) -> float:
    """A record's colour word as `entry_setup` stores it (`common.packed_color_word`)."""
    words = wp.zeros(1, dtype=wp.float32, device="cpu")
    wp.launch(packed_color_words, dim=1, inputs=[wp.array([color], dtype=wp.vec3, device="cpu")], outputs=[words])
    return float(words.numpy()[0])


def light_record(t: float, alpha: float, color: tuple[float, float, float]) -> common.EntryRecord:
    """A light disk at distance t on the +x axis, facing the camera, seen with visibility alpha
    (`entry_setup`'s light record: (p - o, n_x) (n_y, visibility, -, -) (packed colour, -, -,
    REF_LIGHT))."""
    e = common.EntryRecord()
    e.r0 = wp.vec4(t, 0.0, 0.0, -1.0)
    e.r1 = wp.vec4(0.0, alpha, 0.0, 0.0)
    e.r2 = wp.vec4(packed_color_word(color), 0.0, 0.0, float(scene.REF_LIGHT))
    e.bound = t - 0.5
    e.r3 = wp.vec3(0.0)
    return e


def traced(fragments: list[tuple[float, float, tuple[float, float, float]]]) -> np.ndarray:
    """The ray's colour with ``fragments`` (t, alpha, rgb) walked in list order."""
    rec = wp.array([light_record(*f) for f in fragments], dtype=common.EntryRecord, device="cpu")
    mask = wp.array([(1 << len(fragments)) - 1], dtype=wp.uint32, device="cpu")
    face = wp.zeros(18, dtype=wp.vec3, device="cpu")
    misc = wp.array([SKY, (0.3, 0.3, 0.3), (0.5, 0.5, 0.5)], dtype=wp.vec3, device="cpu")
    out = wp.zeros(1, dtype=wp.vec3, device="cpu")
    wp.launch(trace_one_ray, dim=1, inputs=[rec, mask, face, misc], outputs=[out], device="cpu")
    return out.numpy()[0]


def exact_composite(fragments: list[tuple[float, float, tuple[float, float, float]]]) -> np.ndarray:
    """Front-to-back 'over' of every fragment, nearest first (stable), over the sky."""
    acc, transmitted = np.zeros(3), 1.0
    for _t, alpha, color in sorted(fragments, key=lambda f: f[0]):
        acc += transmitted * alpha * np.asarray(color)
        transmitted *= 1.0 - alpha
    return acc + transmitted * np.asarray(SKY)


STACK = [
    (10.0, 0.30, (1.0, 0.0, 0.0)),
    (14.0, 0.50, (0.0, 1.0, 0.0)),
    (20.0, 0.40, (1.0, 1.0, 0.0)),
    (31.0, 0.60, (1.0, 0.5, 0.0)),
    (45.0, 0.35, (0.0, 1.0, 1.0)),
    (52.0, 0.45, (1.0, 0.0, 1.0)),
]


@pytest.mark.parametrize("count", range(1, len(STACK) + 1))
def test_fragments_in_depth_order_composite_exactly(count):
    # Up to and past the buffer's slots: the lists walk their entries nearest bound first.
    fragments = STACK[:count]
    np.testing.assert_allclose(traced(fragments), exact_composite(fragments), atol=TOLERANCE)


def test_a_far_fragment_behind_a_full_buffer_still_counts():
    # The fragment past the last slot is the only opaque-looking one: dropping it would show
    # the sky through the faint ones in front (what a buffer that drops its farthest did).
    fragments = [*STACK[:3], (60.0, 0.95, (0.0, 0.0, 0.0))]
    got = traced(fragments)
    np.testing.assert_allclose(got, exact_composite(fragments), atol=TOLERANCE)
    assert np.abs(got - exact_composite(fragments[:-1])).max() > 0.05


@pytest.mark.parametrize("seed", range(4))
def test_the_alpha_of_fragments_in_any_order_is_exact(seed):
    # Fragments may arrive out of depth order (a wall's bound lies nearer than where the ray
    # meets it); one composited behind the last slot may then be out of order, but its alpha
    # still counts: with one colour for all, any arrival order gives the exact composite.
    rng = np.random.default_rng(seed)
    depths, alphas = rng.uniform(5, 60, 7), rng.uniform(0.05, 0.6, 7)
    fragments = [(float(t), float(a), (1.0, 1.0, 1.0)) for t, a in zip(depths, alphas, strict=True)]
    order = [fragments[i] for i in rng.permutation(len(fragments))]
    np.testing.assert_allclose(traced(order), exact_composite(fragments), atol=TOLERANCE)
