"""`benchmarks/render_registers.py`: parsing `ptxas -v` output, and (with a CUDA toolkit's
ptxas on PATH) one run over the render module."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.render_registers import parse_ptxas

# ptxas 13.0's report for two Warp kernels (the format the parser reads), with the lines it
# prints between them
PTXAS_SAMPLE = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'raster_views_c0a1e7e8_cuda_kernel_forward' for 'sm_90'
ptxas info    : Function properties for raster_views_c0a1e7e8_cuda_kernel_forward
    48 bytes stack frame, 80 bytes spill stores, 92 bytes spill loads
ptxas info    : Used 48 registers, used 0 barriers, 48 bytes cumulative stack size, 1024 bytes smem
ptxas info    : Compile time = 74.755 ms
ptxas info    : Function properties for wp_helper
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'view_rays_1a2b3c4d_cuda_kernel_forward' for 'sm_90'
ptxas info    : Function properties for view_rays_1a2b3c4d_cuda_kernel_forward
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 30 registers, used 0 barriers, 368 bytes cmem[0]
"""


def test_ptxas_report_parses_per_kernel():
    rows = parse_ptxas(PTXAS_SAMPLE)
    assert rows == [
        {"kernel": "raster_views", "arch": "sm_90", "stack_bytes": 48, "spill_store_bytes": 80,
         "spill_load_bytes": 92, "registers": 48, "smem_bytes": 1024},
        {"kernel": "view_rays", "arch": "sm_90", "stack_bytes": 0, "spill_store_bytes": 0,
         "spill_load_bytes": 0, "registers": 30},
    ]  # fmt: skip


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs a CUDA toolkit's ptxas on PATH")
def test_script_reports_the_raster_at_its_register_cap():
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "render_registers.py"), "--kernels", "raster_views[ramp],view_rays"],
        capture_output=True, text=True, check=True, cwd=root,
    )  # fmt: skip
    rows = {r["kernel"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert set(rows) == {"raster_views[ramp]", "view_rays"}
    from pictura.render.raster import RASTER_MAX_REGISTERS

    assert rows["raster_views[ramp]"]["registers"] <= RASTER_MAX_REGISTERS
