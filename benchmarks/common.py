"""Pieces the benchmark scripts share: which towns to run on, and how to time a call."""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable

import warp as wp

from pictura.maps.sources import CARLA_TOWNS, data_root


def town_sources() -> list[str]:
    """The 8 CARLA towns when the data root holds them, else 8 procedural towns."""
    try:
        root = data_root()
    except FileNotFoundError:
        root = None
    if root is not None and all((root / "carla" / f"{t}.xodr").exists() for t in CARLA_TOWNS):
        return [f"carla:{t}" for t in CARLA_TOWNS]
    return [f"procedural:seed={s}" for s in range(8)]


def median_seconds(fn: Callable[[], object], repeats: int, device, warmup: int = 0) -> float:
    """Median seconds of ``fn`` over ``repeats`` calls after ``warmup`` untimed ones; CUDA
    events on a torch CUDA ``device``, wall time otherwise."""
    import torch

    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        if torch.device(device).type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1000)
        else:
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def peak_mem_gib(device: wp.context.Device) -> float:
    """Warp's memory-pool high-water mark on a GPU; the process's peak resident set on the CPU."""
    if device.is_cuda:
        return wp.get_mempool_used_mem_high(device) / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB
