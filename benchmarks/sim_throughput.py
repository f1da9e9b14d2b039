"""Simulator throughput: env step without rendering (one JSON line).

    python benchmarks/sim_throughput.py --device cuda           # H200: target >= 20 M agent-steps/s
    python benchmarks/sim_throughput.py --device cpu --slots 1024 --steps 20 --block-slots 1024 --worlds-per-block 24
    python benchmarks/sim_throughput.py --device cpu --slots 2048 --steps 200 --block-slots 0  # fixed worlds

Scene: ``--slots`` (20,480) agent slots packed as the training configs pack them, in blocks of
``--block-slots`` (4,096) slots each holding up to ``--worlds-per-block`` (96) variable-size
worlds (`WorldLayout.packed`; ``--block-slots 0``: fixed worlds of ``--slots-per-world`` (128)
slots), over 8 towns: ``carla:Town01..Town10HD`` when the data root exists, else 8 procedural seeds.
Default `SimConfig` (agents ~U{1, 120} per world, 10 % pedestrians, 10 % cyclists, 32 parked
cars per world). Actions are uniform random, drawn on the device. Only *active* agent-steps
(valid and not halted before the step) count. Timing covers ``--steps`` calls of
`pictura.sim.step` (on CUDA captured in a graph of two steps, so buffers swap inside it) after a
warm-up, with device synchronisation before and after; world resets happen inside `step` as
in training.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import warp as wp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import peak_mem_gib, town_sources  # noqa: E402
from benchmarks.kernel_profile import profile_kernels  # noqa: E402
from pictura.maps import load_road_map  # noqa: E402
from pictura.sim import SimConfig, build_model, reset, step  # noqa: E402
from pictura.sim.snapshot import WorldLayout  # noqa: E402


@wp.kernel
def random_actions_kernel(seed: int, counter: wp.array(dtype=wp.int32), action_out: wp.array(dtype=wp.int32)):
    """Uniform random actions in 0..11, a new draw per call (``counter`` is bumped by thread 0)."""
    tid = wp.tid()
    rng = wp.rand_init(seed + counter[0] * 7919, tid)
    action_out[tid] = wp.randi(rng, 0, 12)


@wp.kernel
def count_active_kernel(
    active: wp.array(dtype=wp.int32), counter: wp.array(dtype=wp.int32), total_out: wp.array(dtype=wp.int64)
):
    """Adds the active slots (agent-steps about to be simulated) to ``total_out[0]``."""
    tid = wp.tid()
    if active[tid] != 0:
        wp.atomic_add(total_out, 0, wp.int64(1))
    if tid == 0:
        wp.atomic_add(counter, 0, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--slots", type=int, default=20_480)
    ap.add_argument("--slots-per-world", type=int, default=128)
    ap.add_argument("--block-slots", type=int, default=4096, help="pack the slots in blocks of N (0: fixed worlds)")
    ap.add_argument("--worlds-per-block", type=int, default=96)
    ap.add_argument("--early-reset-halted-fraction", type=float, default=SimConfig.early_reset_halted_fraction)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-graph", action="store_true", help="launch kernels directly (no CUDA graph)")
    ap.add_argument("--profile", type=int, default=0, help="also time each kernel over this many steps")
    args = ap.parse_args()
    per_world = args.block_slots or args.slots_per_world
    if args.slots % per_world:
        raise SystemExit(f"--slots {args.slots} must be a multiple of {per_world} (slots per world or block)")

    wp.config.log_level = wp.LOG_WARNING  # no start-up banner or module-load lines (INFO)
    wp.init()
    device = wp.get_device(args.device)
    sources = town_sources()
    maps = [load_road_map(s) for s in sources]
    cfg = SimConfig(early_reset_halted_fraction=args.early_reset_halted_fraction)
    lights = [len(m.light_position) for m in maps]
    if args.block_slots:
        worlds = args.slots // args.block_slots * args.worlds_per_block
        layout = WorldLayout.packed(
            [w % len(maps) for w in range(worlds)], args.block_slots, args.worlds_per_block, lights,
            parked_per_world=cfg.parked_per_world,
        )
    else:
        worlds = args.slots // args.slots_per_world
        layout = WorldLayout.uniform(
            [w % len(maps) for w in range(worlds)], args.slots_per_world, lights, parked_per_world=cfg.parked_per_world
        )
    with wp.ScopedDevice(device):
        model = build_model(maps, layout, cfg, device=str(device))
        s0, s1, ctl = model.state(), model.state(), model.control()
        reset(model, s0, args.seed)
        counter = wp.zeros(1, dtype=wp.int32)
        total = wp.zeros(1, dtype=wp.int64)
        S = model.num_slots

        def one(state_in, state_out):
            wp.launch(random_actions_kernel, S, inputs=[args.seed, counter], outputs=[ctl.action])
            wp.launch(count_active_kernel, S, inputs=[state_in.active, counter], outputs=[total])
            step(model, state_in, ctl, state_out)

        def pair():
            one(s0, s1)
            one(s1, s0)

        for _ in range((args.warmup + 1) // 2):
            pair()
        graph = None
        if device.is_cuda and not args.no_graph:
            with wp.ScopedCapture() as cap:
                pair()
            graph = cap.graph
        wp.synchronize_device(device)
        total.zero_()
        pairs = max(args.steps // 2, 1)
        t0 = time.perf_counter()
        for _ in range(pairs):
            if graph is not None:
                wp.capture_launch(graph)
            else:
                pair()
        wp.synchronize_device(device)
        dt = time.perf_counter() - t0
        agent_steps = int(total.numpy()[0])
        if args.profile:
            resets = []

            def profiled_pair():
                pair()
                resets.append(int(s0.world_reset.numpy().sum()))

            profile_kernels("sim", profiled_pair, repeats=max(args.profile // 2, 1))
            profile_kernels("sim_full_reset", lambda: reset(model, s0, args.seed + 1))
            print(json.dumps({"name": "sim_resets", "worlds_reset_per_step_pair_sample": resets}), flush=True)
    steps = 2 * pairs
    print(
        json.dumps(
            {
                "name": "sim_throughput",
                "device": str(device),
                "gpu": device.name if device.is_cuda else None,
                "resolution": None,
                "agents": S,
                "worlds": worlds,
                "block_slots": args.block_slots,
                "worlds_per_block": args.worlds_per_block if args.block_slots else None,
                "early_reset_halted_fraction": cfg.early_reset_halted_fraction,
                "maps": sources,
                "steps": steps,
                "agent_steps_per_s": agent_steps / dt,
                "slot_steps_per_s": S * steps / dt,
                "peak_mem_gib": round(peak_mem_gib(device), 3),
                "utilisation": agent_steps / (S * steps),
                "date": time.strftime("%Y-%m-%d"),
            }
        )
    )


if __name__ == "__main__":
    main()
