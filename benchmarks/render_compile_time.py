"""Warp compile time of the renderer's kernels, from a cold kernel cache.

    python benchmarks/render_compile_time.py --device cpu
    python benchmarks/render_compile_time.py --device cpu --tree /tmp/baseline   # another tree

Runs in a fresh process with ``WARP_CACHE_PATH`` set to an empty temporary directory, imports
``pictura.render`` of ``--tree`` (default: this one), finds every Warp module holding a kernel
of the renderer (``pictura.render.*`` modules and the kernels they build in modules of their
own), and times ``wp.load_module`` of each on ``--device``: code generation plus the C++ (CPU)
or NVRTC (CUDA) compile of every kernel and overload. Prints one JSON line: the total seconds
(wall clock, and CPU time of this process, which other load on the machine disturbs less) and
each module's wall-clock seconds. Modules load one after another, so the total is what a first render waits.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MEASURE = r"""
import importlib, json, pkgutil, sys, time
import warp as wp
wp.config.quiet = True
wp.init()
import pictura.render
names = [m.name for m in pkgutil.iter_modules(pictura.render.__path__, "pictura.render.")]
python_modules = [importlib.import_module(n) for n in names]
kernels = []
for pm in python_modules:
    for value in vars(pm).values():
        values = value.values() if isinstance(value, dict) else [value]
        for v in values:
            for k in (v if isinstance(v, tuple) else (v,)):
                if isinstance(k, wp.Kernel):
                    kernels.append(k)
modules = {}
for k in kernels:
    modules.setdefault(k.module.name, k.module)
seconds, cpu = {}, {}
for name, module in sorted(modules.items()):
    t0, c0 = time.perf_counter(), time.process_time()
    wp.load_module(module, device=sys.argv[1])
    seconds[name] = round(time.perf_counter() - t0, 2)
    cpu[name] = round(time.process_time() - c0, 2)
print(json.dumps({"name": "render_compile_time", "device": sys.argv[1], "modules": len(seconds),
                  "total_s": round(sum(seconds.values()), 2), "total_cpu_s": round(sum(cpu.values()), 2),
                  "per_module_s": seconds}))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", help="Warp device (default cpu)")
    p.add_argument("--tree", type=Path, default=ROOT, help="Pictura tree to measure (default this one)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="warp_cache_") as cache:
        env = dict(os.environ, WARP_CACHE_PATH=cache, PYTHONPATH=str(args.tree.resolve()))
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, args.device],
            cwd=args.tree,
            env=env,
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        raise SystemExit(f"measurement failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    print(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
