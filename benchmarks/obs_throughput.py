"""Vectorized-observation throughput: `VectorizedObservation.build` / `build_requests` alone (one JSON line).

    python benchmarks/obs_throughput.py --device cuda          # 160 worlds x 128 slots, as in training
    python benchmarks/obs_throughput.py --device cpu           # 16 worlds, 4,096 requests

Scene: a `DrivingEnv` with the observation config of ``configs/vectorized.yaml`` (``--config``)
on the 8 CARLA towns (``carla:Town01..Town10HD``) when the data root holds them, else 8
procedural seeds; ``--worlds`` worlds of ``--slots-per-world`` slots, ~U{1, 120} agents per
world (capped at the slots). The env is stepped ``--steps`` times with uniform random actions
and every step's snapshot (boxes, parked cars, lights, speeds) is kept as a history.

Timed, each the median of ``--repeats`` calls after one warm-up (CUDA events on the GPU,
``perf_counter`` on the CPU):

- ``build``: every slot of the last step (what the env does per step);
- ``build_requests``: ``--requests`` random (step, slot) pairs of the history (a PPO minibatch).

Also reported, counted in torch over ``--sample`` random occupied slots of the last step: the
mean / p95 number of lane and boundary pieces whose midpoint lies in the slot's window (the
candidates each request sorts), and how often they exceed the set capacity.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import warp as wp
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import median_seconds, town_sources  # noqa: E402
from pictura.envs import DrivingEnv  # noqa: E402
from pictura.envs.observations import (  # noqa: E402
    WINDOW_AHEAD_M,
    WINDOW_BEHIND_M,
    WINDOW_LATERAL_M,
    VectorizedObservation,
    VectorizedObservationConfig,
)
from pictura.sim import NUM_ACTIONS  # noqa: E402
from pictura.sim.snapshot import BoxView  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def observation_config(path: Path) -> VectorizedObservationConfig:
    """The ``observation`` init_args of the env in a training config."""
    config = yaml.safe_load(path.read_text())
    env_args = config["model"]["init_args"]["env"]["init_args"]
    return VectorizedObservationConfig(**env_args["observation"]["init_args"])


def window_candidates(
    obs: VectorizedObservation, box: torch.Tensor, sample: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Per sampled slot, the number of lane / boundary pieces of its map with the midpoint in
    its window (every piece of the map tested: independent of the kernel's grid)."""
    layout = obs.layout
    counts = {"lanes": [], "boundaries": []}
    ends = {"lanes": [0], "boundaries": [0]}
    for per_map in obs.map_segment_counts:
        ends["lanes"].append(ends["lanes"][-1] + per_map["lane"])
        ends["boundaries"].append(ends["boundaries"][-1] + per_map["boundary"])
    mids = {
        "lanes": 0.5 * (wp.to_torch(obs.lane_a) + wp.to_torch(obs.lane_b)),
        "boundaries": 0.5 * (wp.to_torch(obs.boundary_a) + wp.to_torch(obs.boundary_b)),
    }
    for slot in sample.tolist():
        m = int(layout.world_map[layout.slot_world[slot]])
        origin, heading = BoxView(box).xy[slot], BoxView(box).heading[slot]
        c, s = torch.cos(heading), torch.sin(heading)
        for key in counts:
            d = mids[key][ends[key][m] : ends[key][m + 1]] - origin
            x, y = c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1]
            inside = (x >= -WINDOW_BEHIND_M) & (x <= WINDOW_AHEAD_M) & (y.abs() <= WINDOW_LATERAL_M)
            counts[key].append(int(inside.sum()))
    return {key: torch.tensor(value, dtype=torch.float64) for key, value in counts.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--worlds", type=int, default=None, help="default: 160 on cuda, 16 on cpu")
    ap.add_argument("--slots-per-world", type=int, default=128)
    ap.add_argument("--config", type=Path, default=ROOT / "configs" / "vectorized.yaml")
    ap.add_argument("--steps", type=int, default=8, help="env steps of random actions (the history)")
    ap.add_argument(
        "--requests",
        type=int,
        default=None,
        help="build_requests batch; default: 65,536 on cuda, 4,096 on cpu",
    )
    ap.add_argument("--repeats", type=int, default=None, help="timed calls; default: 20 on cuda, 3 on cpu")
    ap.add_argument("--sample", type=int, default=256, help="slots sampled for the candidate counts")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cuda = args.device == "cuda"
    worlds = args.worlds or (160 if cuda else 16)
    requests = args.requests or (65_536 if cuda else 4_096)
    repeats = args.repeats or (20 if cuda else 3)

    wp.config.log_level = wp.LOG_WARNING  # no start-up banner or module-load lines (INFO)
    torch.manual_seed(args.seed)
    sources = town_sources()
    obs_config = observation_config(args.config)
    env = DrivingEnv(
        device=args.device,
        seed=args.seed,
        maps=sources,
        num_worlds=worlds,
        slots_per_world=args.slots_per_world,
        agents_per_world=(1, min(120, args.slots_per_world)),
        observation=obs_config,
        validate_actions=False,
    )
    obs, device, S = env.vectorized, env.device, env.num_slots
    td = env.reset()
    history = {"box": [], "parked": [], "light": [], "speed": []}
    for _ in range(args.steps):
        td["action"] = torch.randint(0, NUM_ACTIONS, (S,), device=device)
        td = env.step(td)["next"]
        st = env.state
        box = wp.to_torch(st.agent_box)
        history["box"].append(box[:S].clone())
        history["parked"].append(box[S:].clone())
        history["light"].append(wp.to_torch(st.light_state).clone())
        history["speed"].append(wp.to_torch(st.speed).clone())
    box_hist, light_hist, speed_hist = (torch.stack(history[k]) for k in ("box", "light", "speed"))
    parked_hist = torch.stack(history["parked"]) if env.layout.parked_per_world else None
    parked_last = None if parked_hist is None else parked_hist[-1]

    step_out = obs.allocate((S,))
    build_s = median_seconds(
        lambda: obs.build(box_hist[-1], light_hist[-1], speed_hist[-1], step_out, parked_last),
        repeats,
        device,
        warmup=1,
    )
    steps = torch.randint(0, args.steps, (requests,), device=device)
    slots = torch.randint(0, S, (requests,), device=device)
    batch_out = obs.allocate((requests,))
    requests_s = median_seconds(
        lambda: obs.build_requests(box_hist, light_hist, speed_hist, steps, slots, batch_out, parked_hist),
        repeats,
        device,
        warmup=1,
    )

    occupied = torch.nonzero(BoxView(box_hist[-1]).kind >= 0).flatten().cpu()
    sample = occupied[torch.randperm(len(occupied))[: args.sample]]
    counts = window_candidates(obs, box_hist[-1], sample)
    capacity = {"lanes": obs.max_lanes, "boundaries": obs.max_boundaries}
    candidates = {
        key: {
            "mean": round(float(c.mean()), 1),
            "p95": round(float(c.quantile(0.95)), 1),
            "over_capacity": round(float((c > capacity[key]).double().mean()), 3),
        }
        for key, c in counts.items()
        if len(c)
    }
    active = int(wp.to_torch(env.state.active).sum())
    peak_mem_gib = None
    if cuda:  # Warp's pool (simulator state, observation scratch) plus torch's (the outputs)
        peak_bytes = wp.get_mempool_used_mem_high(obs.device) + torch.cuda.max_memory_allocated(device)
        peak_mem_gib = round(peak_bytes / 2**30, 3)
    print(
        json.dumps(
            {
                "name": "obs_throughput",
                "device": str(device),
                "gpu": torch.cuda.get_device_name(device) if cuda else None,
                "maps": sources,
                "worlds": worlds,
                "slots": S,
                "active_slots": active,
                "capacities": {
                    "partners": obs.max_partners,
                    "lanes": obs.max_lanes,
                    "boundaries": obs.max_boundaries,
                    "traffic": obs.max_traffic,
                },
                "build_ms": round(build_s * 1e3, 3),
                "build_slots_per_s": S / build_s,
                "requests": requests,
                "build_requests_ms": round(requests_s * 1e3, 3),
                "requests_per_s": requests / requests_s,
                "window_candidates": candidates,
                "peak_mem_gib": peak_mem_gib,
                "date": time.strftime("%Y-%m-%d"),
            }
        )
    )


if __name__ == "__main__":
    main()
