"""`pictura.render.array_io` and the record accessors against NumPy indexing of the same arrays:
the vector and raw accesses must read and write exactly the elements Warp's own indexing
does, on the CPU (scalar snippets) and on CUDA (vector ones)."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from pictura.render import common
from pictura.render.array_io import (
    load_u32,
    load_vec3,
    load_vec4,
    load_vec4i,
    store_rgb,
)


@wp.kernel
def read_all(
    f4: wp.array(dtype=wp.vec4),
    i4: wp.array(dtype=wp.vec4i),
    words: wp.array(dtype=wp.uint32),
    colors: wp.array(dtype=wp.vec3),
    rec: wp.array(dtype=common.EntryRecord),
    f4_out: wp.array(dtype=wp.vec4),
    i4_out: wp.array(dtype=wp.vec4i),
    words_out: wp.array(dtype=wp.uint32),
    colors_out: wp.array(dtype=wp.vec3),
    rec_out: wp.array2d(dtype=wp.vec4),
):
    i = wp.tid()
    f4_out[i] = load_vec4(f4, i)
    i4_out[i] = load_vec4i(i4, i)
    words_out[i] = load_u32(words, i)
    colors_out[i] = load_vec3(colors, i)
    for w in range(common.RECORD_WORDS):
        rec_out[i, w] = common.record_word(rec, i, w)


@wp.kernel
def write_all(
    rgb: wp.array2d(dtype=wp.vec3ub),
    rec: wp.array2d(dtype=common.EntryRecord),
    rgb_out: wp.array2d(dtype=wp.vec3ub),
    rec_out: wp.array2d(dtype=common.EntryRecord),
):
    i = wp.tid()
    for j in range(rgb.shape[1]):
        store_rgb(rgb_out, i, j, rgb[i, j])
    for k in range(rec.shape[1]):
        e = rec[i, k]
        common.store_record(rec_out, i, k, e.r0, e.r1, e.r2, e.bound, e.r3)


def record_array(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random records as the structured dtype Warp gives `EntryRecord`."""
    dtype = common.EntryRecord.numpy_dtype()
    out = np.zeros(shape, dtype)
    for name in ("r0", "r1", "r2"):
        out[name] = rng.normal(size=(*shape, 4)).astype(np.float32)
    out["bound"] = rng.random(shape).astype(np.float32)
    out["r3"] = rng.normal(size=(*shape, 3)).astype(np.float32)
    return out


def check_array_io(device: str) -> None:
    rng = np.random.default_rng(0)
    n = 5
    f4 = rng.normal(size=(n, 4)).astype(np.float32)
    i4 = rng.integers(-(2**31), 2**31 - 1, (n, 4)).astype(np.int32)
    words = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    colors = rng.random((n, 3)).astype(np.float32)
    rgb = rng.integers(0, 256, (n, 7, 3)).astype(np.uint8)
    rec = record_array(rng, (n,))
    rec_2d = record_array(rng, (n, 3))

    def arr(x, dtype):
        return wp.array(x, dtype=dtype, device=device)

    outs = [
        wp.zeros(n, wp.vec4, device=device), wp.zeros(n, wp.vec4i, device=device),
        wp.zeros(n, wp.uint32, device=device), wp.zeros(n, wp.vec3, device=device),
        wp.zeros((n, common.RECORD_WORDS), wp.vec4, device=device),
    ]  # fmt: skip
    wp.launch(
        read_all, dim=n, device=device,
        inputs=[
            arr(f4, wp.vec4), arr(i4, wp.vec4i), arr(words, wp.uint32), arr(colors, wp.vec3),
            wp.array(rec, dtype=common.EntryRecord, device=device),
        ],
        outputs=outs,
    )  # fmt: skip
    got = [o.numpy() for o in outs]
    for want, have in zip([f4, i4, words, colors], got[:4], strict=True):
        assert np.array_equal(have, want)
    want_words = np.stack([rec["r0"], rec["r1"], rec["r2"], np.zeros((n, 4), np.float32)], 1)
    want_words[:, 3, 0] = rec["bound"]
    want_words[:, 3, 1:] = rec["r3"]
    assert np.array_equal(got[4], want_words)

    rgb_out = wp.zeros((n, 7), wp.vec3ub, device=device)
    rec_out = wp.zeros((n, 3), common.EntryRecord, device=device)
    wp.launch(
        write_all, dim=n, device=device,
        inputs=[
            arr(rgb, wp.vec3ub),
            wp.array(rec_2d, dtype=common.EntryRecord, device=device),
        ],
        outputs=[rgb_out, rec_out],
    )  # fmt: skip
    assert np.array_equal(rgb_out.numpy(), rgb)
    assert rec_out.numpy().tobytes() == rec_2d.tobytes()


def test_array_io_matches_numpy_indexing_on_cpu():
    check_array_io("cpu")


@pytest.mark.gpu
def test_array_io_matches_numpy_indexing_on_cuda():
    check_array_io("cuda")


def test_records_are_four_aligned_words():
    # `record_word` and `store_record` address a record as RECORD_WORDS 16-byte words
    assert wp.types.type_size_in_bytes(common.EntryRecord) == 16 * common.RECORD_WORDS
