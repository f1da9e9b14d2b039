"""Rasterizer throughput over the resolution sweep (one JSON line per resolution).

    PICTURA_DATA=.data python benchmarks/render_throughput.py --device cuda   # H200: docs numbers
    python benchmarks/render_throughput.py --device cpu --worlds 1 --iters 1 --resolutions 32x18
    python benchmarks/render_throughput.py --device cuda --scene training --resolutions 96x54

Pinned scene: ``--map auto`` = ``carla:Town10HD`` when the data root exists, else
``procedural:seed=0`` (a built-in synthetic grid if neither loads); ``--worlds`` worlds of
``--slots-per-world`` slots, ``--agents`` agents and ``--parked`` parked cars per world spawned
by the simulator (`pictura.sim.build_model` + `reset`; ``--spawn demo`` places them on lanes
instead), walls and lights on. Every valid agent is an ego with all C cameras of the default
rig (Table 3); one agent-step = one ego's C views. Timing covers `Renderer.render` only
(cull + raster), after one warm-up call, with a device synchronisation before and after the
timed loop. ``peak_mem_chunk_gib`` is the device-level memory (cudaMemGetInfo) a fresh
renderer takes to draw one ``--mem-chunk``-ego chunk (scene, scratch and that chunk's images).

Training batch (``--scene training``, configs/alberti.yaml): the 8 CARLA towns (``procedural:seed=0..7``
without a data root), world w on town w % 8 as `DrivingEnv` lays them out, ``--worlds`` (160)
worlds of 128 slots with U{1, ``--agents``} agents and ``--parked`` parked cars each, spawned by
the simulator; requests for the active slots only (``--requests slots``: one per slot, -1 for the
inactive ones, as the env's acting render sends them; ``--chunk 4096`` is the env's chunk).

Every run also prints one ``render_candidates`` line per resolution: per map, the views, the
frustum-culled candidates per view (mean, p99, max) and the fraction of views with more
candidates than the per-view candidate buffer holds (``over_buffer``, the views the cull must
finish another way).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import warp as wp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import peak_mem_gib, town_sources  # noqa: E402
from benchmarks.kernel_profile import profile_kernels  # noqa: E402
from pictura.maps.roadmap import RoadMap, pack_polylines  # noqa: E402
from pictura.render import CameraRig, Renderer  # noqa: E402
from pictura.render.demo import spawn_snapshot  # noqa: E402
from pictura.render.kernels import COVERAGE_MODES, DEFAULT_COVERAGE  # noqa: E402
from pictura.sim.snapshot import BoxView, WorldLayout  # noqa: E402

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


def device_used_bytes(device: wp.context.Device) -> int:
    """Device-level used memory (cudaMemGetInfo: total - free), after a synchronisation."""
    wp.synchronize_device(device)
    return int(device.total_memory - device.free_memory)


def has_carla_data() -> bool:
    try:
        from pictura.maps import data_root

        return (data_root() / "carla").is_dir()
    except FileNotFoundError:
        return False


def pick_sources(scene: str, source: str) -> list[str]:
    """Map sources of the scene: the pinned scene's one map, or the training batch's 8 towns."""
    if scene == "training":
        return town_sources()
    if source != "auto":
        return [source]
    return ["carla:Town10HD" if has_carla_data() else "procedural:seed=0"]


def spawn_scene(
    road_maps: list[RoadMap], agents: tuple[int, int], args, device: str
) -> tuple[WorldLayout, np.ndarray, np.ndarray, str]:
    """(layout, agent_box (S + P, 8), light_state (L,), how) for ``--worlds`` worlds, world w on
    map w % len(road_maps), U{agents} agents each."""
    world_map = np.arange(args.worlds) % len(road_maps)
    n_lights = [len(m.light_position) for m in road_maps]
    if args.spawn == "sim":
        try:
            from pictura.sim import SimConfig, build_model, reset

            cfg = SimConfig(agents_per_world=agents, parked_per_world=args.parked)
            layout = WorldLayout.uniform(world_map, args.slots_per_world, n_lights, args.parked)
            model = build_model(road_maps, layout, cfg, device=device)
            state = model.state()
            reset(model, state, seed=0)
            return layout, state.agent_box.numpy(), state.light_state.numpy(), "sim"
        except Exception as err:  # the demo placement is the documented fallback
            print(f"# simulator spawn failed ({err!r}); using the demo placement", file=sys.stderr)
    counts = np.random.default_rng(1).integers(agents[0], agents[1] + 1, args.worlds)
    slots = int(counts.max())
    layout = WorldLayout.uniform(world_map, slots, n_lights)
    boxes = np.concatenate(
        [
            spawn_snapshot(road_maps[m], slots, int(n), seed=w)
            for w, (m, n) in enumerate(zip(world_map, counts, strict=True))
        ]
    )
    lights = np.random.default_rng(0).integers(0, 3, layout.light_count).astype(np.int32)
    return layout, boxes, lights, "demo"


def view_stats(
    renderer: Renderer, agent_box, light_state, req: wp.array, valid: np.ndarray
) -> tuple[np.ndarray, ...]:
    """(candidates, list entries) per valid view over all chunks: the cull alone, chunk by chunk."""
    C = renderer.num_cameras
    cand, listed = [], []
    chunk = renderer.chunk_requests(req.shape[0])
    slot_table = renderer._layout_table_unless(None)
    for start in range(0, req.shape[0], chunk):
        views = min(chunk, req.shape[0] - start) * C
        renderer._cull(agent_box, light_state, req, slot_table, start, views, solo_slot=-1)
        # Copies: on the CPU `numpy()` shares the scratch the next chunk overwrites.
        cand.append(renderer._cand_count.numpy()[:views].copy())
        listed.append(renderer._list_count.numpy()[:views].copy())
    keep = np.repeat(valid, C)
    return np.concatenate(cand)[keep], np.concatenate(listed)[keep]


def candidate_report(cand: np.ndarray, view_map: np.ndarray, names: list[str], buffer: int) -> dict:
    """Per map and over all: views, candidates per view (mean, p99, max), fraction over ``buffer``."""

    def row(c: np.ndarray) -> dict:
        if len(c) == 0:
            return {"views": 0}
        return {
            "views": len(c),
            "candidates_mean": round(float(c.mean()), 1),
            "candidates_p99": round(float(np.percentile(c, 99)), 1),
            "candidates_max": int(c.max()),
            "over_buffer": round(float((c > buffer).mean()), 5),
        }

    per_map = {name: row(cand[view_map == m]) for m, name in enumerate(names)}
    return {"candidate_buffer": buffer, "all": row(cand), "per_map": per_map}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="Warp device: cuda | cpu (default cuda)")
    p.add_argument(
        "--scene", choices=("pinned", "training"), default="pinned",
        help="pinned: --map, every agent an ego (default); training: the 8 CARLA towns, U{1, --agents}",
    )  # fmt: skip
    p.add_argument(
        "--map", default="auto", help="pinned map source; auto = carla:Town10HD if present, else procedural"
    )
    p.add_argument("--worlds", type=int, help="worlds (default 170 pinned (~20 K egos), 160 training)")
    p.add_argument("--slots-per-world", type=int, default=128, help="agent slots per world (default 128)")
    p.add_argument(
        "--agents", type=int, default=120, help="agents per world (training: at most; default 120)"
    )
    p.add_argument("--parked", type=int, default=32, help="parked cars per world (default 32; sim spawn)")
    p.add_argument("--spawn", choices=("sim", "demo"), default="sim", help="scene placement (default sim)")
    p.add_argument(
        "--requests", choices=("active", "slots"), default="active",
        help="active: one per active slot (default); slots: one per slot, -1 for the others (the env)",
    )  # fmt: skip
    p.add_argument("--iters", type=int, default=10, help="timed render calls per resolution")
    p.add_argument(
        "--chunk", type=int, default=0, help="requests per kernel pass (default 0: the renderer's, sized from free memory)"
    )
    p.add_argument("--mem-chunk", type=int, default=2048, help="egos of the chunk whose memory is reported")
    p.add_argument("--capacity", type=int, default=96, help="primitives kept per view")
    p.add_argument("--supersample", type=int, default=1, help="rays per pixel per axis")
    p.add_argument(
        "--coverage", choices=sorted(COVERAGE_MODES), default=DEFAULT_COVERAGE,
        help=f"box-edge coverage mode (default {DEFAULT_COVERAGE})",
    )
    p.add_argument("--gather", choices=("auto", "lanes", "views"), default="auto", help="pass-1 cull threads (auto: lanes on CUDA, views on the CPU)")
    p.add_argument("--profile", action="store_true", help="also time each kernel of one render call")
    p.add_argument("--resolutions", default=",".join(f"{w}x{h}" for w, h in RESOLUTIONS))
    p.add_argument(
        "--save-views",
        metavar="PREFIX",
        help="also write the first --save-count egos' views to PREFIX<WxH>.npy (to compare renderer versions)",
    )
    p.add_argument("--save-count", type=int, default=512, help="egos whose views --save-views writes")
    args = p.parse_args(argv)

    wp.config.log_level = wp.LOG_WARNING  # no start-up banner or module-load lines (INFO)
    wp.init()
    device = wp.get_device(args.device)
    if args.worlds is None:
        args.worlds = 160 if args.scene == "training" else 170
    road_maps = [load_scene(source) for source in pick_sources(args.scene, args.map)]
    agents = (1, args.agents) if args.scene == "training" else (args.agents, args.agents)
    layout, boxes, lights, how = spawn_scene(road_maps, agents, args, args.device)
    slots = np.arange(layout.num_slots, dtype=np.int32)
    active = BoxView(boxes[: layout.num_slots]).valid  # just reset: every agent is active
    egos = slots[active] if args.requests == "active" else np.where(active, slots, -1).astype(np.int32)
    requests = np.stack([np.zeros(len(egos), np.int32), egos], 1)
    valid = egos >= 0
    n_egos = int(valid.sum())
    agent_box = wp.array(boxes[None], dtype=wp.float32, device=device)
    light_state = wp.array(lights.reshape(1, -1), dtype=wp.int32, device=device)
    req = wp.array(requests, dtype=wp.int32, device=device)
    rig = CameraRig()
    view_map = np.repeat(
        np.asarray(layout.world_map)[np.asarray(layout.slot_world)[egos[valid]]], rig.num_cameras
    )

    def make_renderer(chunk: int) -> Renderer:
        r = Renderer(
            road_maps, layout, rig, device=args.device, list_capacity=args.capacity,
            chunk_size=chunk or None, supersample=args.supersample, coverage=args.coverage,
        )  # fmt: skip
        if args.gather != "auto":
            r._gather = args.gather
        return r

    renderer = make_renderer(args.chunk)
    for res in args.resolutions.split(","):
        w, h = (int(x) for x in res.split("x"))
        rig.set_resolution(w, h)
        mem = None
        if device.is_cuda:
            # A fresh renderer and one chunk's output: the device memory one chunk needs.
            before = device_used_bytes(device)
            probe = make_renderer(args.mem_chunk)
            sub = req[: min(args.mem_chunk, len(requests))]
            probe_out = probe.new_output(sub.shape[0])
            probe.render(agent_box, light_state, sub, probe_out)
            mem = (device_used_bytes(device) - before) / 2**30
            del probe, probe_out, sub
        out = renderer.new_output(len(requests))
        renderer.render(agent_box, light_state, req, out)  # warm-up (and compile)
        wp.synchronize_device(device)
        t0 = time.perf_counter()
        for _ in range(args.iters):
            renderer.render(agent_box, light_state, req, out)
        wp.synchronize_device(device)
        dt = (time.perf_counter() - t0) / args.iters
        if args.save_views:
            per_ego = rig.num_cameras
            np.save(f"{args.save_views}{w}x{h}.npy", out.numpy()[: args.save_count * per_ego])
        if args.profile:
            profile_kernels(
                "render",
                lambda out=out: renderer.render(agent_box, light_state, req, out),
                resolution=f"{w}x{h}",
            )
        cand, counts = view_stats(renderer, agent_box, light_state, req, valid)
        names = [m.name for m in road_maps]
        print(
            json.dumps(
                {
                    "name": "render_throughput",
                    "device": str(device),
                    "gpu": device.name if device.is_cuda else None,
                    "resolution": f"{w}x{h}",
                    "cameras": rig.num_cameras,
                    "scene": args.scene,
                    "agents": n_egos,
                    "requests": len(requests),
                    "agents_per_world": list(agents) if args.scene == "training" else args.agents,
                    "parked_per_world": layout.parked_per_world,
                    "spawn": how,
                    "agent_steps_per_s": round(n_egos / dt),
                    "images_per_s": round(n_egos * rig.num_cameras / dt),
                    "ms_per_call": round(dt * 1e3, 3),
                    "peak_mem_chunk_gib": None if mem is None else round(mem, 3),
                    "mem_chunk": args.mem_chunk,
                    "mempool_high_gib": round(peak_mem_gib(device), 3),
                    "primitives_per_view_mean": round(float(counts.mean()), 2),
                    "primitives_per_view_p95": float(np.percentile(counts, 95)),
                    "primitives_per_view_max": int(counts.max()),
                    "list_capacity": args.capacity,
                    "chunk": renderer.chunk_requests(requests.shape[0]),
                    "supersample": args.supersample,
                    "coverage": args.coverage,
                    "map": names[0] if len(names) == 1 else names,
                    "date": time.strftime("%Y-%m-%d"),
                }
            ),
            flush=True,
        )
        report = candidate_report(cand, view_map, names, renderer._cand_capacity)
        print(json.dumps({"name": "render_candidates", "resolution": f"{w}x{h}", **report}), flush=True)
        del out


if __name__ == "__main__":
    main()
