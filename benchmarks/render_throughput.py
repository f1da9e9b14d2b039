"""Rasterizer throughput over the resolution sweep (one JSON line per resolution).

    python benchmarks/render_throughput.py --device cuda            # H200: the numbers in docs
    python benchmarks/render_throughput.py --device cpu --worlds 1 --agents 16 --iters 1

Scene: ``--worlds`` copies of the procedural town (``procedural:seed=0``; a built-in synthetic
grid if that source is unavailable), ``--agents`` demo agents per world placed on lanes; every
agent is an ego, all C cameras of the default rig (Table 3). One agent-step = one ego's C views.
Timing covers `Renderer.render` only (cull + raster), after one warm-up call, with a device
synchronisation before and after the timed loop.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import warp as wp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pictura.maps.roadmap import RoadMap, pack_polylines  # noqa: E402
from pictura.render import CameraRig, Renderer  # noqa: E402
from pictura.render.demo import spawn_snapshot  # noqa: E402
from pictura.sim.snapshot import WorldLayout  # noqa: E402

RESOLUTIONS = ((32, 18), (64, 36), (96, 54), (192, 108), (384, 216))


def synthetic_town(blocks: int = 4, block: float = 80.0) -> RoadMap:
    """Fallback scene: a grid of two-way 4-lane roads with walls around every block."""
    lanes, marks, kinds, edges, walls = [], [], [], [], []
    span = np.arange(0.0, blocks * block + 1e-3, 10.0)
    for i in range(blocks + 1):
        c = i * block
        for axis in (0, 1):

            def pts(off: float, reverse: bool = False, c=c, axis=axis) -> np.ndarray:
                p = np.stack([span, np.full_like(span, c + off), np.zeros_like(span)], 1)
                p = p[:, [1, 0, 2]] if axis == 0 else p
                return p[::-1] if reverse else p

            for off in (-5.25, -1.75):
                lanes.append(pts(off))
            for off in (1.75, 5.25):
                lanes.append(pts(off, reverse=True))
            marks += [pts(0.0), pts(-3.5), pts(3.5)]
            kinds += [1, 0, 0]
            edges += [pts(-7.0), pts(7.0)]
    for i in range(blocks):
        for j in range(blocks):
            x0, x1, y0, y1 = i * block + 12, (i + 1) * block - 12, j * block + 12, (j + 1) * block - 12
            corners = [(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)]
            walls += [[[*corners[k], 0.0], [*corners[k + 1], 0.0]] for k in range(4)]
    lp, lo = pack_polylines(lanes)
    mp, mo = pack_polylines(marks)
    ep, eo = pack_polylines(edges)
    n = len(lo) - 1
    return RoadMap(
        "synthetic",
        lane_points=lp,
        lane_offsets=lo,
        lane_width=np.full(n, 3.5, np.float32),
        lane_speed_limit=np.zeros(n, np.float32),
        lane_junction=np.full(n, -1, np.int32),
        lane_successor_offsets=np.zeros(n + 1, np.int32),
        marking_points=mp,
        marking_offsets=mo,
        marking_kind=np.asarray(kinds, np.int32),
        road_edge_points=ep,
        road_edge_offsets=eo,
        wall_points=np.asarray(walls, np.float32),
        wall_height=np.full(len(walls), 6.0, np.float32),
    )


def load_scene(source: str) -> RoadMap:
    try:
        from pictura.maps import load_road_map

        return load_road_map(source)
    except (ImportError, ModuleNotFoundError) as err:
        print(f"# {source} unavailable ({err}); using the synthetic grid town", file=sys.stderr)
        return synthetic_town()


def peak_mem_gib(device: wp.context.Device) -> float:
    if device.is_cuda:
        return wp.get_mempool_used_mem_high(device) / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="Warp device: cuda | cpu (default cuda)")
    p.add_argument("--map", default="procedural:seed=0", help="map source (default procedural:seed=0)")
    p.add_argument("--worlds", type=int, default=170, help="worlds (default 170, ~20 K agents)")
    p.add_argument("--agents", type=int, default=120, help="agents per world (default 120)")
    p.add_argument("--iters", type=int, default=10, help="timed render calls per resolution")
    p.add_argument("--chunk", type=int, default=8192, help="requests per kernel pass")
    p.add_argument("--capacity", type=int, default=96, help="primitives kept per view")
    p.add_argument("--supersample", type=int, default=1, help="rays per pixel per axis")
    p.add_argument("--resolutions", default=",".join(f"{w}x{h}" for w, h in RESOLUTIONS))
    args = p.parse_args(argv)

    wp.init()
    device = wp.get_device(args.device)
    road_map = load_scene(args.map)
    layout = WorldLayout.uniform([0] * args.worlds, args.agents, [len(road_map.light_position)])
    boxes = np.concatenate([spawn_snapshot(road_map, args.agents, args.agents, seed=w) for w in range(args.worlds)])
    rng = np.random.default_rng(0)
    lights = rng.integers(0, 3, (1, layout.light_count)).astype(np.int32)
    requests = np.stack([np.zeros(len(boxes), np.int32), np.arange(len(boxes), dtype=np.int32)], 1)
    agent_box = wp.array(boxes[None], dtype=wp.float32, device=device)
    light_state = wp.array(lights, dtype=wp.int32, device=device)
    req = wp.array(requests, dtype=wp.int32, device=device)
    rig = CameraRig()
    renderer = Renderer(
        [road_map], layout, rig, device=args.device, list_capacity=args.capacity,
        chunk_size=args.chunk, supersample=args.supersample,
    )  # fmt: skip
    for res in args.resolutions.split(","):
        w, h = (int(x) for x in res.split("x"))
        rig.set_resolution(w, h)
        out = renderer.new_output(len(requests))
        renderer.render(agent_box, light_state, req, out)  # warm-up (and compile)
        wp.synchronize_device(device)
        t0 = time.perf_counter()
        for _ in range(args.iters):
            renderer.render(agent_box, light_state, req, out)
        wp.synchronize_device(device)
        dt = (time.perf_counter() - t0) / args.iters
        counts = renderer._list_count.numpy()[: min(len(requests), args.chunk) * rig.num_cameras]
        print(
            json.dumps(
                {
                    "name": "render_throughput",
                    "device": str(device),
                    "gpu": device.name if device.is_cuda else None,
                    "resolution": f"{w}x{h}",
                    "cameras": rig.num_cameras,
                    "agents": len(requests),
                    "agents_per_world": args.agents,
                    "agent_steps_per_s": len(requests) / dt,
                    "images_per_s": len(requests) * rig.num_cameras / dt,
                    "peak_mem_gib": round(peak_mem_gib(device), 3),
                    "primitives_per_view_mean": float(counts.mean()),
                    "primitives_per_view_max": int(counts.max()),
                    "list_capacity": args.capacity,
                    "supersample": args.supersample,
                    "map": road_map.name,
                    "date": time.strftime("%Y-%m-%d"),
                }
            ),
            flush=True,
        )
        del out


if __name__ == "__main__":
    main()
