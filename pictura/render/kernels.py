"""The renderer's kernels by coverage mode and binning, and the names its callers use.

The render pipeline is split by stage, one module each:

1. `pictura.render.cull`: each view's camera and candidates (`gather_lanes`, `gather_views`);
2. `pictura.render.rank`: the ``K`` nearest candidates in order (`rank_lists`);
3. `pictura.render.entry_setup`: per list entry its record and screen bins (`entry_setup`,
   binning in `pictura.render.binning`);
4. `pictura.render.raster`: a thread per pixel, tracing the band's entries (`raster_views`,
   fragments in `pictura.render.fragments`, box coverage in `pictura.render.coverage`).

Shared constants and structs live in `pictura.render.common`, the tuning knobs in
`pictura.render.tuning`. No float atomics (the bins' integer OR gives the same words in any
order) and a fixed evaluation order: every image is a pure function of the snapshot, on a
given device. CUDA builds use fast math, CPU builds exact arithmetic, so the two differ in the
last bits.
"""

from __future__ import annotations

import warp as wp

from pictura.render import cull, entry_setup, rank, raster
from pictura.render.binning import (
    SoloBinning,
    WarpBinning,
)
from pictura.render.common import (
    ExactCoverage,
    RampCoverage,
    SilhouetteCoverage,
)
from pictura.render.coverage import (
    BOX_LINES,
)

COVERAGE_MODES = {"ramp": RampCoverage, "exact": ExactCoverage, "silhouette": SilhouetteCoverage}
"""`Renderer(coverage=...)`: how box edges are antialiased (the three structs' docstrings)."""


STORED_LINES = {"ramp": 0, "exact": 0, "silhouette": BOX_LINES}
"""Per coverage mode: the lines it stores per list entry (`store_box_lines`)."""


def coverage_mode(name: str, lines: wp.array | None = None, supersample: int = 1):
    """The `COVERAGE_MODES` struct ``name`` for a launch, holding ``lines`` (`STORED_LINES` per
    list entry of the launch's records, flattened) and the rays per pixel along each axis
    (their units) where the mode stores lines."""
    mode = COVERAGE_MODES[name]()
    if STORED_LINES[name]:
        mode.lines = lines.ptr
        mode.supersample = supersample
    return mode


DEFAULT_COVERAGE = "silhouette"
"""The coverage mode of `Renderer`, the env (``render_coverage``), the debug tool and the
benchmarks unless told otherwise: the most exact of the three at the speed target
(docs/renderer.md, "Coverage modes")."""


BINNINGS = {"solo": SoloBinning, "warp": WarpBinning}
"""How `entry_setup` bins its entries (the two structs' docstrings)."""


ENTRY_SETUP = {
    (name, binning): wp.overload(entry_setup.entry_setup, {"mode": mode, "binning": binning_type})
    for name, mode in COVERAGE_MODES.items()
    for binning, binning_type in BINNINGS.items()
}
"""Per (coverage mode, binning): its `entry_setup` overload."""


RASTER_KERNELS = {
    name: tuple(wp.overload(k, {"mode": mode}) for k in (raster.raster_views, raster.raster_views_wide, raster.raster_views_ss))
    for name, mode in COVERAGE_MODES.items()
}
"""Per coverage mode: its (`raster_views`, `raster_views_wide`, `raster_views_ss`) overloads."""


STAGES = (cull, rank, entry_setup, raster)
"""The pipeline's stage modules, in launch order: each holds its stage's kernels."""


def warp_modules() -> list[tuple[str | None, object]]:
    """(name, Warp module) of every module holding a render kernel: (None, the module) for each
    stage, then (kernel name, its module) for each kernel a factory builds in a module of its
    own (the gather kernels of `cull`). What a compile of the renderer's kernels builds."""
    units: list[tuple[str | None, object]] = []
    for stage in STAGES:
        module = wp.get_module(stage.__name__)
        stage_kernels = [(name, k) for name, k in vars(stage).items() if isinstance(k, wp.Kernel)]
        if any(k.module is module for _, k in stage_kernels):
            units.append((None, module))
        units += [(name, k.module) for name, k in stage_kernels if k.module is not module]
    return units
