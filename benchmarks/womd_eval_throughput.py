"""Zero-shot WOMD evaluation throughput (one JSON line per policy, then a summary line).

    python benchmarks/womd_eval_throughput.py --device cuda                      # 2,000 records, 600 steps
    python benchmarks/womd_eval_throughput.py --device cpu --scenes 8 --steps 5 --batch 4   # a smoke run

Data: a synthetic shard of ``--scenes`` records written to a temporary folder, the WOMD sample
record of the data root (``womd/tfrecord/*.tfrecord``: 83 tracks, 199 lanes) repeated with
fresh scenario ids (so each scene thins differently), in Waymo-named files of 500 records
(``validation.tfrecord-0000K-of-0000N``). The evaluation is `run_womd` as ``python -m pictura
evaluate --protocol womd`` runs it: the index, ``--batch`` scenes per env (one world each),
scenes read ahead by ``--workers`` processes, each batch played at the ``--densities`` (the
protocol's 1, 0.75, 0.5) in turn, ``--steps`` steps, argmax actions.

Policies (untrained networks: throughput does not depend on the weights):

- ``random``: uniform random actions on the perspective env (cameras rendered, as
  ``--policy random`` does);
- ``vectorized``: `VectorizedPolicy` on the privileged vectorized observation of
  ``configs/vectorized.yaml`` with WOMD's 5 m segments (App. C.2);
- ``alberti``: `AlbertiPolicy` on 4 cameras at 96x54 (bf16 autocast on a GPU, as it trains).

Reported per policy: scenes/s (a scene played at every density counts once) and controlled
agent-steps/s (controlled vehicles x steps over the whole wall time), the wall time split into
env builds, rollouts and the rest (index, waiting for scenes, Python between batches), peak
GPU memory (torch allocator and Warp's pool), and the projection for the 44,097 validation
scenes x 600 steps at the same densities (each scene's measured share of the wall time, its
rollout share scaled to 600 steps when ``--steps`` is smaller).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from pictura.maps.sources import data_root  # noqa: E402
from pictura.maps.womd.index import SceneReader, index_womd, write_renamed_records  # noqa: E402

WOMD_VALIDATION_SCENES = 44_097
RECORDS_PER_SHARD = 500


def write_synthetic_shards(folder: Path, scenes: int) -> list[Path]:
    """``scenes`` copies of the sample record, fresh ids, in shards of `RECORDS_PER_SHARD`."""
    sample = sorted((data_root() / "womd" / "tfrecord").glob("*.tfrecord"))[0].read_bytes()
    (length,) = struct.unpack("<Q", sample[:8])
    record = sample[12 : 12 + length]
    shards = -(-scenes // RECORDS_PER_SHARD)
    paths = []
    for k in range(shards):
        ids = range(k * RECORDS_PER_SHARD, min(scenes, (k + 1) * RECORDS_PER_SHARD))
        path = folder / f"validation.tfrecord-{k:05d}-of-{shards:05d}"
        write_renamed_records(path, record, (f"synthetic-{i:06d}" for i in ids))
        paths.append(path)
    return paths


def policy_setup(kind: str, device: str):
    """(replay env builder, make_policy(env), autocast dtype or None) for one policy kind."""
    import dataclasses

    from pictura.envs.observations import VectorizedObservationConfig
    from pictura.eval.policies import argmax_policy, random_policy
    from pictura.eval.protocols import replay_env_builder
    from pictura.render import CameraRig

    rig = CameraRig(width=96, height=54)
    if kind == "random":
        return replay_env_builder(rig=rig, validate_actions=False), lambda env: random_policy(0), None
    if kind == "vectorized":
        from pictura.modules.vectorized import VectorizedPolicy

        obs = dataclasses.replace(
            VectorizedObservationConfig(variant="privileged", max_partners=16, max_lanes=80, max_boundaries=80,
                                        max_traffic=10, include_walls=True),
            subdivide_long_segments=5.0,
        )
        networks: dict = {}

        def make(env):
            key = json.dumps(sorted((k, list(v.shape)) for k, v in env.observation_spec["observation"].items()))
            if key not in networks:  # one network per observation layout (identical across batches)
                networks[key] = VectorizedPolicy(env.observation_spec, 12).to(env.device).eval()
            return argmax_policy(networks[key])

        return replay_env_builder(observation=obs, validate_actions=False), make, None
    if kind == "alberti":
        from pictura.modules.alberti import AlbertiPolicy

        networks = {}

        def make(env):
            if "net" not in networks:
                networks["net"] = AlbertiPolicy(env.observation_spec, 12).to(env.device).eval()
            return argmax_policy(networks["net"])

        dtype = torch.bfloat16 if torch.device(device).type == "cuda" else None
        return replay_env_builder(rig=rig, validate_actions=False), make, dtype
    raise ValueError(f"unknown policy {kind!r}")


def measure(kind: str, folder: Path, args) -> dict:
    from pictura.eval import protocols

    build, make_policy, autocast = policy_setup(kind, args.device)
    timings = {"build_s": 0.0, "rollout_s": 0.0, "controlled": 0}

    def timed_build(**kwargs):
        t0 = time.perf_counter()
        env = build(**kwargs)
        timings["build_s"] += time.perf_counter() - t0
        timings["controlled"] += sum(int(s.controlled.sum()) for s in env.selections)
        return env

    real_rollout = protocols.rollout_scenarios

    def timed_rollout(*a, **k):
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=autocast, enabled=autocast is not None):
            real_rollout(*a, **k)
        if torch.device(args.device).type == "cuda":
            torch.cuda.synchronize()
        timings["rollout_s"] += time.perf_counter() - t0

    if torch.device(args.device).type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    protocols.rollout_scenarios = timed_rollout
    reader = SceneReader(args.workers)
    try:
        t0 = time.perf_counter()
        index = index_womd(folder)
        index_s = time.perf_counter() - t0
        results = protocols.run_womd_densities(
            timed_build, make_policy, index.scenes, args.densities, steps=args.steps, device=args.device, seed=0,
            scenes_per_batch=args.batch, reader=reader, warn=lambda line: print(line, file=sys.stderr),
        )
        wall = time.perf_counter() - t0
        scenes = len(index.scenes)
    finally:
        protocols.rollout_scenarios = real_rollout
        reader.close()
    scenes_per_s = scenes / wall
    # a scene's share of the wall time at 600 steps: its rollout share scaled by 600 / steps,
    # the rest (index, build, reading, Python between batches) as measured
    per_scene_s = (wall - timings["rollout_s"] + timings["rollout_s"] * 600 / args.steps) / scenes
    out = {
        "policy": kind, "device": args.device, "scenes": scenes, "densities": args.densities,
        "played": {f"{d:g}": r.scenes for d, r in results.items()}, "steps": args.steps, "batch": args.batch,
        "workers": args.workers, "wall_s": round(wall, 2), "index_s": round(index_s, 2),
        "build_s": round(timings["build_s"], 2), "rollout_s": round(timings["rollout_s"], 2),
        "other_s": round(wall - index_s - timings["build_s"] - timings["rollout_s"], 2),
        "scenes_per_s": round(scenes_per_s, 3),
        "agent_steps_per_s": round(timings["controlled"] * args.steps / wall),
        "rollout_agent_steps_per_s": round(timings["controlled"] * args.steps / max(timings["rollout_s"], 1e-9)),
        "controlled_per_scene_density": round(timings["controlled"] / max(sum(r.scenes for r in results.values()), 1), 1),
        "projected_h": round(WOMD_VALIDATION_SCENES * per_scene_s / 3600, 2),
    }
    if torch.device(args.device).type == "cuda":
        import warp as wp

        out["peak_torch_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        out["peak_warp_gib"] = round(wp.get_mempool_used_mem_high(wp.get_device(args.device)) / 2**30, 2)
        out["gpu"] = torch.cuda.get_device_name()
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--scenes", type=int, default=2000, help="records in the synthetic shard (default 2,000)")
    p.add_argument("--steps", type=int, default=600, help="steps per scene (600: the protocol; gives the projection)")
    p.add_argument("--batch", type=int, default=256, help="scenes per env (evaluate's GPU default: 256)")
    p.add_argument("--workers", type=int, default=8, help="scene-reading processes (evaluate's GPU default: 8)")
    p.add_argument("--densities", nargs="+", type=float, default=[1.0, 0.75, 0.5], help="fractions kept")
    p.add_argument("--policies", nargs="+", default=["random", "vectorized", "alberti"],
                   choices=["random", "vectorized", "alberti"])
    p.add_argument("--folder", type=Path, help="keep the synthetic shard here (default: a temporary folder)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        write_synthetic_shards(folder, args.scenes)
        print(json.dumps({"wrote_scenes": args.scenes, "seconds": round(time.perf_counter() - t0, 2)}), flush=True)
        rows = []
        for kind in args.policies:
            rows.append(measure(kind, folder, args))
            print(json.dumps(rows[-1]), flush=True)
    print(json.dumps({"summary": {r["policy"]: r["projected_h"] for r in rows},
                      "projection": f"hours for {WOMD_VALIDATION_SCENES} scenes x {args.densities} x 600 steps"}))


if __name__ == "__main__":
    main()
