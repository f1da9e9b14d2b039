"""Stage 2, rank: each view's ``K`` nearest candidates, in order (`rank_lists`).

The same list a stable bounded insertion sort by (bound, gather order) builds, from a bucket
sort by distance in shared memory (one CUDA warp per view) instead of O(K) shifts in global
memory.
"""

# Warp needs `x = int(0)` / `float(0.0)` to declare a local it mutates in a loop (a bare
# literal becomes a constant), hence UP018 is off in this file.
# ruff: noqa: UP018

from __future__ import annotations

import warp as wp

from pictura.render.array_io import (
    load_vec4i,
)
from pictura.render.common import (
    warp_lane,
    warp_lanes,
    warp_match,
    warp_read_int,
    warp_scan,
)
from pictura.render.tuning import MODULE_OPTIONS

wp.set_module_options(MODULE_OPTIONS)


@wp.func
def below4(b: wp.vec4i, key: int) -> int:
    """How many of the 4 values of ``b`` lie below ``key``."""
    return wp.where(b[0] < key, 1, 0) + wp.where(b[1] < key, 1, 0) + wp.where(b[2] < key, 1, 0) + wp.where(b[3] < key, 1, 0)


@wp.func
def count_below(
    bits4: wp.array(dtype=wp.vec4i), q0: int, q1: int, key: int, rank: int, capacity: int
) -> int:
    """``rank`` plus the number of values below ``key`` in the blocks ``bits4[q0:q1]`` of 4, or
    any count >= ``capacity`` once it gets there (the caller drops such a candidate)."""
    r = rank
    q = q0
    # One index (and address) per 4 values; one exit test per two blocks, so their two loads
    # are in flight together: the rank only grows, so stopping after a pair of blocks instead
    # of after the exact compare keeps the result.
    while q + 1 < q1 and r < capacity:
        b = load_vec4i(bits4, q)
        c = load_vec4i(bits4, q + 1)
        r += below4(b, key) + below4(c, key)
        q += 2
    if q < q1 and r < capacity:
        r += below4(load_vec4i(bits4, q), key)
    return r


RANK_BUCKETS = 64
"""Distance buckets per view of `rank_lists`: bucket b holds the bounds in [b, b + 1) x far /
RANK_BUCKETS (the last also those beyond ``far``)."""


_RANK_BUCKETS = wp.constant(RANK_BUCKETS)


RANK_SHARED_KEYS = 512
"""`rank_lists` sorts a view with at most this many candidates in shared memory (the pinned scene:
171 on average, p95 429); a view with more counts each candidate's rank over the whole buffer
in global memory (`count_below`)."""


_RANK_SHARED_KEYS = wp.constant(RANK_SHARED_KEYS)


_RANK_BUCKET_SLOTS = wp.constant(RANK_BUCKETS + 1)  # and a spare (`rank_lists`)


_RANK_KEY_SLOTS = wp.constant(RANK_SHARED_KEYS + 1)


RANK_LANES = 32
"""Threads per view of `rank_lists`: one CUDA warp, whose lanes group by `warp_match` and
prefix-sum by `warp_scan`."""


@wp.func
def rank_bucket(bound: float, scale: float) -> int:
    """The bucket of a candidate bound (>= 0): ``scale`` = RANK_BUCKETS / far. Non-decreasing in
    the bound, so every candidate of a lower bucket has a lower bound, and equal bounds share
    one bucket."""
    return wp.min(int(bound * scale), _RANK_BUCKETS - 1)


@wp.func
def group_first_slot(b: int, same: wp.uint32, below: wp.uint32) -> int:
    """Where the first lane of a `warp_match` group (``same``; ``below`` = the lanes before this
    one) adds the group's size in `rank_lists`' per-bucket tiles: its bucket ``b``; every other
    lane, and a lane with no candidate (b < 0), the spare slot RANK_BUCKETS."""
    return wp.where(b >= 0 and (same & below) == wp.uint32(0), b, _RANK_BUCKETS)


@wp.kernel
def rank_lists(
    cand_ref: wp.array2d(dtype=wp.int32),
    cand_bound: wp.array2d(dtype=wp.float32),
    # the launch's bounds again, flattened (``cand_cap`` per view, a multiple of 4) and read as
    # int32 in blocks of 4, for a view past RANK_SHARED_KEYS candidates (`count_below`)
    cand_bits4: wp.array(dtype=wp.vec4i),
    cand_count: wp.array(dtype=wp.int32),
    scale: float,
    capacity: int,
    view_base: int,
    list_ref_out: wp.array2d(dtype=wp.int32),
    list_bound_out: wp.array2d(dtype=wp.float32),
):
    """A block of RANK_LANES (one warp) per view (`wp.launch_tiled`): each candidate j goes to its
    rank by (bound, j), the ``capacity`` first kept.

    The order is exactly the stable bounded insertion sort's (ties keep gather order), so the
    list is the same as `list_insert` builds. A view that overflowed the buffer ranks the buffer
    (its first ``cand_cap`` candidates in gather order: the sort's state at that point);
    `gather_views` mode 1 inserts the rest.

    A view of at most RANK_SHARED_KEYS candidates is bucket-sorted in shared memory, in rounds
    of a candidate per lane: count the candidates of each distance bucket (`rank_bucket`; the
    lanes of a round that share a bucket are one `warp_match` group), prefix-sum the counts,
    then write each bound into its bucket's run, in gather order within the run. A candidate's
    rank is its bucket's start plus the bounds of its own run that come before it: about 500
    compares per view on the pinned scene instead of the 31,000 of counting over the whole
    buffer, and no global memory between the steps. A run
    starting at or past ``capacity`` holds only candidates ranked out: skipped. A larger view
    counts each candidate's rank over the whole buffer in global memory: the candidates before
    it with a bound <= its own, those after it with a smaller one (`count_below`, blocks of 4).
    """
    view, lane = wp.tid()
    threads = wp.block_dim()  # RANK_LANES; 1 on the CPU, which runs a block as one thread
    lanes = warp_lanes()
    below = (wp.uint32(1) << wp.uint32(warp_lane())) - wp.uint32(1)  # the lanes before this one
    cand_cap = cand_ref.shape[1]
    v = view_base + view
    n = wp.min(cand_count[v], cand_cap)
    # Shared tiles. Writing an element ends in a block barrier, which every lane must reach, so
    # the lanes with nothing to write write to the spare last element instead.
    count = wp.tile_zeros(shape=_RANK_BUCKET_SLOTS, dtype=wp.int32, storage="shared")
    start = wp.tile_zeros(shape=_RANK_BUCKET_SLOTS, dtype=wp.int32, storage="shared")
    fill = wp.tile_zeros(shape=_RANK_BUCKET_SLOTS, dtype=wp.int32, storage="shared")
    keys = wp.tile_zeros(shape=_RANK_KEY_SLOTS, dtype=wp.int32, storage="shared")
    order = wp.tile_zeros(shape=_RANK_KEY_SLOTS, dtype=wp.int32, storage="shared")
    if n <= _RANK_SHARED_KEYS:  # the same for the whole block
        rounds = (n + threads - 1) / threads
        for r in range(rounds):
            j = r * threads + lane
            b = int(-1)
            if j < n:
                b = rank_bucket(cand_bound[v, j], scale)
            same = warp_match(lanes, b)
            at = group_first_slot(b, same, below)
            count[at] = count[at] + wp.bit_count(same)
        carry = int(0)
        for b0 in range(0, _RANK_BUCKETS, threads):
            c = count[b0 + lane]
            upto = warp_scan(lanes, c)
            start[b0 + lane] = carry + upto - c
            carry += warp_read_int(lanes, upto, threads - 1)
        for r in range(rounds):
            j = r * threads + lane
            b = int(-1)
            bound = float(0.0)
            if j < n:
                bound = cand_bound[v, j]
                b = rank_bucket(bound, scale)
            same = warp_match(lanes, b)
            p = _RANK_SHARED_KEYS
            if b >= 0:
                p = start[b] + fill[b] + wp.bit_count(same & below)
            keys[p] = wp.cast(bound, wp.int32)
            order[p] = j
            at = group_first_slot(b, same, below)
            fill[at] = fill[at] + wp.bit_count(same)
        # Runs are in bucket order: once a position's run starts at capacity, so do the later ones.
        p = lane
        while p < n:
            key = keys[p]
            b = rank_bucket(wp.cast(key, wp.float32), scale)
            rank = start[b]
            if rank >= capacity:
                break
            for q in range(rank, rank + count[b]):
                if q != p:
                    rank += wp.where(keys[q] < key + wp.where(q < p, 1, 0), 1, 0)
            if rank < capacity:
                list_ref_out[v, rank] = cand_ref[v, order[p]]
                list_bound_out[v, rank] = wp.cast(key, wp.float32)
            p += threads
    else:
        row = view * cand_cap
        full = n / 4  # whole blocks of 4 candidates
        for j in range(lane, n, threads):
            key = wp.cast(cand_bound[v, j], wp.int32)
            jq = j / 4
            rank = count_below(cand_bits4, row / 4, row / 4 + jq, key + 1, 0, capacity)
            rank = count_below(cand_bits4, row / 4 + jq + 1, row / 4 + full, key, rank, capacity)
            # j's own block, and the last partial block when j lies before it
            for e in range(4):
                i = 4 * jq + e
                if i < n and i != j:
                    rank += wp.where(wp.cast(cand_bound[v, i], wp.int32) < key + wp.where(i < j, 1, 0), 1, 0)
            if jq < full:
                for i in range(4 * full, n):
                    rank += wp.where(wp.cast(cand_bound[v, i], wp.int32) < key, 1, 0)
            if rank < capacity:
                list_ref_out[v, rank] = cand_ref[v, j]
                list_bound_out[v, rank] = cand_bound[v, j]
