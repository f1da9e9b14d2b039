"""Registers, stack and spills of every render kernel, from `ptxas -v`, without a GPU.

    python benchmarks/render_registers.py                                  # sm_90 (H100 / H200)
    PICTURA_RASTER_MAX_REGISTERS=255 python benchmarks/render_registers.py --kernels 'raster_views[ramp]'

Warp compiles the render modules (`pictura.render.kernels.warp_modules`) to PTX with NVRTC (no
driver needed), and the CUDA toolkit's `ptxas` assembles it for ``--arch`` and reports, per
kernel, the registers used and the bytes of stack frame, spill stores and spill loads. One JSON
line per kernel. The environment's tuning knobs (docs/renderer.md, "Tuning knobs") apply, so
a register cap can be compared with another, or a code change with the last commit, in seconds
on a machine with no GPU.

The raster is bound by its register cap (docs/renderer.md, "Design decisions"): spills there
cost local-memory traffic in its walk. These static counts say where a change moves the pressure;
only a GPU run (`render_ab.py`) says what that is worth.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(sm_\d+)'")
PROPERTIES = re.compile(r"Function properties for (\w+)")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers")
SMEM = re.compile(r"(\d+) bytes smem")
WARP_SUFFIX = re.compile(r"_[0-9a-f]+_cuda_kernel_forward$")
PTX_VERSION = re.compile(r"^\.version (\d+\.\d+)", re.MULTILINE)
SUPPORTED = re.compile(r"Unsupported \.version (\d+\.\d+); current version is '(\d+\.\d+)'")


def parse_ptxas(text: str, labels: dict[str, str] | None = None) -> list[dict]:
    """`ptxas -v` output -> one dict per entry function: kernel (Warp's name, without the hash
    and suffix; or ``labels``[its mangled name], e.g. an overload's), arch, registers,
    stack_bytes, spill_store_bytes, spill_load_bytes and smem_bytes: the static shared memory
    per block, where a kernel built with `enable_cuda_smem_spilling` (`raster_views_wide`) keeps
    its spills, which the spill counts then leave out."""
    labels = labels or {}
    rows: list[dict] = []
    entry = properties_of = None  # the entry being compiled; the function the next frame line is of
    for line in text.splitlines():
        if m := ENTRY.search(line):
            entry = m.group(1)
            mangled = entry.removesuffix("_cuda_kernel_forward")
            rows.append({"kernel": labels.get(mangled, WARP_SUFFIX.sub("", entry)), "arch": m.group(2)})
        elif m := PROPERTIES.search(line):
            properties_of = m.group(1)
        elif (m := FRAME.search(line)) and rows and properties_of == entry:
            # (a device function's properties print the same line)
            rows[-1].update(stack_bytes=int(m.group(1)), spill_store_bytes=int(m.group(2)), spill_load_bytes=int(m.group(3)))
        elif (m := USED.search(line)) and rows:
            rows[-1]["registers"] = int(m.group(1))
            if m := SMEM.search(line):
                rows[-1]["smem_bytes"] = int(m.group(1))
    return rows


def module_ptx(arch: int, directory: Path) -> list[tuple[str | None, str]]:
    """The render kernels' PTX for ``arch``, as Warp's NVRTC writes it: (None, a stage module's
    PTX) per stage, and (name, PTX) for each kernel that Warp builds in a module of its own (a
    kernel factory's, e.g. `gather_lanes_warp`): `pictura.render.kernels.warp_modules`."""
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING  # keep stdout to the JSON lines
    wp.init()
    import pictura.render.kernels as kernels

    units = kernels.warp_modules()
    out = []
    for index, (name, module) in enumerate(units):
        unit_dir = directory / str(index)
        unit_dir.mkdir()
        wp.compile_aot_module(module, device=None, arch=arch, module_dir=unit_dir, use_ptx=True)
        files = sorted(unit_dir.glob("*.ptx"))
        if not files:
            raise RuntimeError(f"Warp wrote no PTX into {unit_dir}")
        out.append((name, files[0].read_bytes().replace(b"\0", b"").decode()))
    return out


def overload_labels() -> dict[str, str]:
    """Mangled name -> "kernel[mode]" (or "kernel[mode/binning]") for the overloads of
    `kernels.ENTRY_SETUP` and `kernels.RASTER_KERNELS`, which share a kernel name; call after
    `module_ptx`."""
    import pictura.render.kernels as kernels

    labels = {k.get_mangled_name(): f"{k.key}[{mode}]" for mode, group in kernels.RASTER_KERNELS.items() for k in group}
    for (mode, binning), k in kernels.ENTRY_SETUP.items():
        labels[k.get_mangled_name()] = f"{k.key}[{mode}/{binning}]"
    return labels


def run_ptxas(ptxas: str, ptx: str, arch: int, directory: Path) -> str:
    """`ptxas -v` of ``ptx``; when this ptxas is older than the NVRTC that wrote the PTX, the
    header asks for the ISA version it supports (the render kernels use nothing newer)."""
    path = directory / "render.ptx"
    for _ in range(2):
        path.write_text(ptx)
        done = subprocess.run(
            [ptxas, f"-arch=sm_{arch}", "-v", str(path), "-o", str(directory / "render.cubin")],
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            return done.stderr + done.stdout
        older = SUPPORTED.search(done.stderr)
        if older is None:
            break
        ptx = PTX_VERSION.sub(f".version {older.group(2)}", ptx, count=1)
    raise RuntimeError(f"ptxas failed:\n{done.stderr.strip()}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", type=int, default=90, help="SM architecture (default 90: H100 / H200)")
    p.add_argument("--ptxas", default=shutil.which("ptxas"), help="ptxas executable (default: the one on PATH)")
    p.add_argument("--kernels", default="", help="comma-separated kernel names to print (default: all)")
    args = p.parse_args()
    if not args.ptxas:
        p.error("no ptxas on PATH: install the CUDA toolkit, or pass --ptxas PATH")
    wanted = {k for k in args.kernels.split(",") if k}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        rows = []
        units = module_ptx(args.arch, directory)
        labels = overload_labels()
        for name, ptx in units:
            unit = parse_ptxas(run_ptxas(args.ptxas, ptx, args.arch, directory), labels)
            rows += [{**r, "kernel": name if name and len(unit) == 1 else r["kernel"]} for r in unit]
    unknown = wanted - {r["kernel"] for r in rows}
    if unknown:
        p.error(f"--kernels names no render kernel: {sorted(unknown)} (have {sorted(r['kernel'] for r in rows)})")
    for row in rows:
        if not wanted or row["kernel"] in wanted:
            print(json.dumps({"name": "render_registers", **row}), flush=True)


if __name__ == "__main__":
    main()
