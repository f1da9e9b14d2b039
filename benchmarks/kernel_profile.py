"""Per-kernel device time of a block of work (``--profile`` of the benchmark scripts).

Warp's activity timing (CUDA events around every launch) shows where a step or a render call
spends its time; the sums are printed as one JSON line so runs on the GPU host can be compared.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable

import warp as wp


def profile_kernels(name: str, work: Callable[[], None], repeats: int = 1, **extra) -> dict:
    """Run ``work`` ``repeats`` times under Warp's kernel timing; print and return per-kernel
    milliseconds per repeat (sorted, largest first) and their share of the total."""
    wp.timing_begin(cuda_filter=wp.TIMING_KERNEL)
    for _ in range(repeats):
        work()
    results = wp.timing_end()
    per_kernel: dict[str, float] = defaultdict(float)
    launches: dict[str, int] = defaultdict(int)
    for r in results:
        key = r.name.split("forward kernel ")[-1].strip()
        per_kernel[key] += r.elapsed / repeats
        launches[key] += 1
    total = sum(per_kernel.values())
    rows = sorted(per_kernel.items(), key=lambda kv: -kv[1])
    line = {
        "name": f"{name}_profile",
        "repeats": repeats,
        "total_ms": round(total, 4),
        "kernels": [
            {
                "kernel": k,
                "ms": round(v, 4),
                "share": round(v / max(total, 1e-12), 4),
                "launches": launches[k] // repeats,
            }
            for k, v in rows
        ],
        **extra,
    }
    print(json.dumps(line), flush=True)
    return line
