"""The render kernels' tuning knobs, in one place, and their Warp module options.

`RenderTuning` holds every knob with its default. The kernels are compiled with these values
when `pictura.render` is first imported (`TUNING`, from `RenderTuning.from_env`), so a knob is
changed by setting its environment variable before that import, for an A/B run for example:

    PICTURA_RASTER_BLOCK_DIM=256 python benchmarks/render_throughput.py --device cuda
    python benchmarks/render_ab.py --ref-dir . --ref-env PICTURA_RASTER_BLOCK_DIM=256

| field | environment variable | default | what it sets |
| --- | --- | --- | --- |
| fast_math | PICTURA_RENDER_FAST_MATH | 1 | CUDA fast math in every render kernel (0: exact arithmetic) |
| gather_lanes | PICTURA_GATHER_LANES | 32 | threads per view of `gather_lanes` (32: one warp, `gather_lanes_warp`) |
| gather_block_dim | PICTURA_GATHER_BLOCK_DIM | 64 | threads per block of `gather_views` |
| entry_setup_block_dim | PICTURA_ENTRY_SETUP_BLOCK_DIM | 256 | threads per block of `entry_setup` |
| entry_setup_max_registers | PICTURA_ENTRY_SETUP_MAX_REGISTERS | 0 | register cap of `entry_setup` (0: none) |
| shared_bin_tiles | PICTURA_SHARED_BIN_TILES | 8 | with `WarpBinning`, entries of more tiles are binned by their whole warp |
| raster_block_dim | PICTURA_RASTER_BLOCK_DIM | 128 | threads per block of the raster kernels |
| raster_max_registers | PICTURA_RASTER_MAX_REGISTERS | 56 | register cap of `raster_views` |
| raster_wide_max_registers | PICTURA_RASTER_WIDE_MAX_REGISTERS | 56 | register cap of `raster_views_wide` (spills in shared memory) |
| raster_bands_per_thread | PICTURA_RASTER_BANDS_PER_THREAD | 32 | bands of one view a `raster_views` thread walks |
| raster_wide_bands_per_thread | PICTURA_RASTER_WIDE_BANDS_PER_THREAD | 32 | the same for `raster_views_wide` |

The defaults are the fastest settings measured on an H200 (docs/benchmarks.md). A value that
is not an integer, or is out of range, is an error naming the variable (or the field).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields


def _register_cap_ok(x: int) -> bool:
    return 16 <= x <= 255


def _block_dim_ok(x: int) -> bool:
    return x > 0 and x % 32 == 0


REGISTER_CAP = (_register_cap_ok, "an integer in [16, 255]")
BLOCK_DIM = (_block_dim_ok, "a positive multiple of 32 (threads per block)")
BANDS_PER_THREAD = (lambda x: 1 <= x <= 32, "an integer in [1, 32] (bands one raster thread walks)")
"""At most 32: `group_occupancy` keeps a group's bands as the bits of one uint32."""


KNOBS: dict[str, tuple[str, Callable[[int], bool], str]] = {
    "fast_math": ("PICTURA_RENDER_FAST_MATH", lambda x: x in (0, 1), "0 or 1"),
    "gather_lanes": ("PICTURA_GATHER_LANES", *BLOCK_DIM),
    "gather_block_dim": ("PICTURA_GATHER_BLOCK_DIM", *BLOCK_DIM),
    "entry_setup_block_dim": ("PICTURA_ENTRY_SETUP_BLOCK_DIM", *BLOCK_DIM),
    "entry_setup_max_registers": (
        "PICTURA_ENTRY_SETUP_MAX_REGISTERS", lambda x: x == 0 or _register_cap_ok(x), "0 (no cap) or an integer in [16, 255]",
    ),
    "shared_bin_tiles": ("PICTURA_SHARED_BIN_TILES", lambda x: x >= 0, "a non-negative integer (tiles an entry bins alone)"),
    "raster_block_dim": ("PICTURA_RASTER_BLOCK_DIM", *BLOCK_DIM),
    "raster_max_registers": ("PICTURA_RASTER_MAX_REGISTERS", *REGISTER_CAP),
    "raster_wide_max_registers": ("PICTURA_RASTER_WIDE_MAX_REGISTERS", *REGISTER_CAP),
    "raster_bands_per_thread": ("PICTURA_RASTER_BANDS_PER_THREAD", *BANDS_PER_THREAD),
    "raster_wide_bands_per_thread": ("PICTURA_RASTER_WIDE_BANDS_PER_THREAD", *BANDS_PER_THREAD),
}  # fmt: skip
"""Per `RenderTuning` field: (environment variable, check, what the check requires)."""


@dataclass(frozen=True)
class RenderTuning:
    """Every tuning knob of the render kernels (the module docstring's table says what each sets)."""

    fast_math: bool = True
    gather_lanes: int = 32
    gather_block_dim: int = 64
    entry_setup_block_dim: int = 256
    entry_setup_max_registers: int = 0
    shared_bin_tiles: int = 8
    raster_block_dim: int = 128
    raster_max_registers: int = 56
    raster_wide_max_registers: int = 56
    raster_bands_per_thread: int = 32
    raster_wide_bands_per_thread: int = 32

    def __post_init__(self) -> None:
        for f in fields(self):
            _, ok, requirement = KNOBS[f.name]
            value = getattr(self, f.name)
            if not isinstance(value, int) or not ok(int(value)):
                raise ValueError(f"RenderTuning.{f.name} must be {requirement}, got {value!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RenderTuning:
        """The defaults, each overridden by its environment variable where set (`KNOBS`)."""
        environ = os.environ if environ is None else environ
        values = {}
        for f in fields(cls):
            name, ok, requirement = KNOBS[f.name]
            default = int(f.default)
            raw = environ.get(name, str(default))
            try:
                value = int(raw)
            except ValueError:
                value = None
            if value is None or not ok(value):
                raise ValueError(f"{name} must be {requirement}, got {raw!r}")
            values[f.name] = bool(value) if f.type in (bool, "bool") else value
        return cls(**values)


TUNING = RenderTuning.from_env()
"""The knobs the kernels are compiled with (read once, at import)."""

# enable_backward False: forward-only kernels, no adjoint code (halves compile time and code
# size). fast_math (CUDA only; Warp builds CPU kernels without it): approximate division,
# square root, sin/cos/exp and flush-to-zero; still deterministic per device, so re-rendered
# views equal the acting ones bit for bit. default_grid_stride False: every render kernel
# launches one thread per index, without Warp's grid-stride loop, whose 64-bit index the raster
# kept on its stack (no launch here caps its block count).
MODULE_OPTIONS = {
    "enable_backward": False,
    "fast_math": TUNING.fast_math,
    "default_grid_stride": False,
}
"""The Warp options of every render module, and of the kernels a factory builds in modules of
their own (`gather_lanes_warp`)."""
