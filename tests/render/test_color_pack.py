"""The fragment buffer's packed colours (`common.pack_color` / `unpack_color`): each channel
rounds to the nearest of 2^COLOR_BITS levels, so a packed colour is within half a level of the
original (a NumPy rounding is the reference)."""

from __future__ import annotations

import numpy as np
import warp as wp

from pictura.render import common


@wp.kernel
def _round_trip(colors: wp.array(dtype=wp.vec3), packed: wp.array(dtype=wp.int32), back: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    p = common.pack_color(colors[i])
    packed[i] = p
    back[i] = common.unpack_color(p)


def test_packed_colours_round_to_the_nearest_level():
    rng = np.random.default_rng(0)
    levels = (1 << common.COLOR_BITS) - 1
    colors = np.concatenate(
        [rng.random((4096, 3)), [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.5, 0.25, 0.75]]]
    ).astype(np.float32)
    n = len(colors)
    packed = wp.zeros(n, dtype=wp.int32, device="cpu")
    back = wp.zeros(n, dtype=wp.vec3, device="cpu")
    wp.launch(_round_trip, dim=n, inputs=[wp.array(colors, dtype=wp.vec3, device="cpu")], outputs=[packed, back], device="cpu")
    want = np.floor(colors.astype(np.float64) * levels + 0.5).astype(np.int64)
    got = packed.numpy().astype(np.int64)
    channels = np.stack([(got >> (c * common.COLOR_BITS)) & levels for c in range(3)], 1)
    np.testing.assert_array_equal(channels, want)
    np.testing.assert_allclose(back.numpy(), want / levels, atol=1e-6)
    assert np.abs(back.numpy() - colors).max() <= 0.5 / levels + 1e-6
