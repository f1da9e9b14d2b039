"""Zero-shot WOMD evaluation throughput, and the projection for the full validation set.

    python benchmarks/womd_eval_throughput.py --device cuda                       # ~2-4 min on one H100
    python benchmarks/womd_eval_throughput.py --device cuda --policies vectorized # one policy
    python benchmarks/womd_eval_throughput.py --device cpu --scenes 2 --batch 2 --steps 2 --workers 0 --densities 1

Data: a synthetic shard of ``--scenes`` records written to a temporary folder, the WOMD sample
record of the data root (``womd/tfrecord/*.tfrecord``: 83 tracks, 199 lanes) repeated with
fresh scenario ids (so each scene thins differently), in Waymo-named files of 500 records.

One JSON line per phase, printed (flushed) as it finishes:

- ``shard``: writing the records;
- ``read``: indexing and decoding every scene with ``--workers`` processes (`SceneReader`, as
  ``evaluate`` reads ahead; ``seconds`` after the workers started, ``startup_s``), the scenes
  kept in memory for the policies;
- one line per policy of ``--policies``: a warm-up (one scene, two steps: Warp's kernel
  compilation and the network's first launches, reported as ``warmup_s``), then `run_womd` on
  the scenes in memory, ``--batch`` scenes per env (packed: each world exactly its scene's kept
  road users; one env per batch, built at density 1 and thinned to each density in place),
  each batch played at the ``--densities`` in turn for ``--steps`` steps with argmax actions.
  The wall time is split into env builds (``build_s``), rollouts (``rollout_s``,
  device-synchronised) and the rest (``other_s``: selection, thinning, Python between batches);
- ``summary``: the projections side by side.

Policies (untrained networks: throughput does not depend on the weights):

- ``random``: uniform random actions on the perspective env (cameras rendered, as
  ``--policy random`` does);
- ``vectorized``: `VectorizedPolicy` on the privileged vectorized observation of
  ``configs/vectorized.yaml`` with WOMD's 5 m segments (App. C.2);
- ``alberti``: `AlbertiPolicy` on 4 cameras at 96x54, in FP32 as ``evaluate`` runs it (``--bf16``:
  under bf16 autocast on a GPU instead).

Projection for the 44,097 validation scenes at the same densities and 600 steps: a scene's
compute share is (build + rest + rollout x 600 / steps) / scenes; its reading share is the
``read`` phase's seconds per scene (``--workers`` processes). ``evaluate`` reads the next
batches while one rolls out, so ``projected_h`` takes the larger of the two per scene (the
bound, named in ``bound``) and ``projected_serial_h`` their sum (no overlap).
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
PROTOCOL_STEPS = 600
RECORDS_PER_SHARD = 500
POLICIES = ("vectorized", "alberti", "random")


def emit(row: dict) -> None:
    print(json.dumps(row), flush=True)


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


def read_all(folder: Path, workers: int) -> tuple[list, dict]:
    """Index and decode every scene of ``folder`` in ``workers`` processes, batch by batch as
    ``evaluate`` does (0: in this process). Returns (scenes, the ``read`` row)."""
    t0 = time.perf_counter()
    index = index_womd(folder, use_cache=False)
    index_s = time.perf_counter() - t0
    reader = SceneReader(workers)
    try:
        # start the worker processes (a one-off cost of a run, not of its scenes): a scene each
        t1 = time.perf_counter()
        reader.result(reader.submit(index.scenes[: max(workers, 1)]))
        startup_s = time.perf_counter() - t1
        t1 = time.perf_counter()
        chunk = max(1, workers) * 8
        handles = [reader.submit(index.scenes[i : i + chunk]) for i in range(0, len(index.scenes), chunk)]
        scenes = [s for h in handles for s in reader.result(h)]
        seconds = index_s + time.perf_counter() - t1
    finally:
        reader.close()
    bad = [str(s) for s in scenes if isinstance(s, Exception)]
    if bad:
        raise SystemExit(f"the synthetic shard did not read back: {bad[0]}")
    return scenes, {
        "phase": "read", "scenes": len(scenes), "workers": workers, "seconds": round(seconds, 2),
        "index_s": round(index_s, 2), "startup_s": round(startup_s, 2), "scenes_per_s": round(len(scenes) / seconds, 2),
        "per_scene_s": round(seconds / len(scenes), 4),
    }


def policy_setup(kind: str, device: str, bf16: bool = False):
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
            key = json.dumps(sorted((k, list(v.shape[1:])) for k, v in env.observation_spec["observation"].items()))
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

        dtype = torch.bfloat16 if bf16 and torch.device(device).type == "cuda" else None
        return replay_env_builder(rig=rig, validate_actions=False), make, dtype
    raise ValueError(f"unknown policy {kind!r}")


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def measure(kind: str, scenes: list, read_row: dict, args) -> dict:
    """One policy over ``scenes`` (decoded `Scenario`s): the policy's JSON row."""
    from pictura.eval import protocols

    build, make_policy, autocast = policy_setup(kind, args.device, args.bf16)
    cuda = torch.device(args.device).type == "cuda"
    timings = {"build_s": 0.0, "rollout_s": 0.0, "controlled": 0, "slots": 0, "envs": 0, "rollouts": 0}

    def timed_build(**kwargs):
        t0 = time.perf_counter()
        env = build(**kwargs)
        _sync(args.device)
        timings["build_s"] += time.perf_counter() - t0
        timings["envs"] += 1
        return env

    real_rollout = protocols.rollout_scenarios

    def timed_rollout(env, *a, **k):
        # the env may be one batch's env thinned to each density in turn (`set_density`)
        timings["controlled"] += sum(int(s.controlled.sum()) for s in env.selections)
        timings["slots"] += env.num_slots
        timings["rollouts"] += 1
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=autocast, enabled=autocast is not None):
            real_rollout(env, *a, **k)
        _sync(args.device)
        timings["rollout_s"] += time.perf_counter() - t0

    def play(sources, densities, steps, batch):
        return protocols.run_womd_densities(
            timed_build, make_policy, sources, densities, steps=steps, device=args.device, seed=0,
            scenes_per_batch=batch, warn=lambda line: print(line, file=sys.stderr),
        )

    protocols.rollout_scenarios = timed_rollout
    try:
        t0 = time.perf_counter()
        play(scenes[:1], args.densities[:1], 2, 1)  # warm-up: kernel compilation, first launches
        warmup_s = time.perf_counter() - t0
        timings.update(build_s=0.0, rollout_s=0.0, controlled=0, slots=0, envs=0, rollouts=0)
        if cuda:
            import warp as wp

            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        results = play(scenes, args.densities, args.steps, args.batch)
        wall = time.perf_counter() - t0
    finally:
        protocols.rollout_scenarios = real_rollout
    n = len(scenes)
    other = wall - timings["build_s"] - timings["rollout_s"]
    rollout_600 = timings["rollout_s"] * PROTOCOL_STEPS / args.steps
    compute_per_scene = (timings["build_s"] + other + rollout_600) / n
    read_per_scene = read_row["per_scene_s"]
    shares = {"reading": read_per_scene, "env build": timings["build_s"] / n, "rollout": rollout_600 / n,
              "rest": other / n}
    bound = "reading" if read_per_scene >= compute_per_scene else max(
        ("env build", "rollout", "rest"), key=shares.get
    )
    played = sum(r.scenes for r in results.values())
    out = {
        "policy": kind, "precision": "bf16-autocast" if autocast is not None else "fp32", "device": args.device, "scenes": n, "densities": args.densities,
        "played": {f"{d:g}": r.scenes for d, r in results.items()}, "steps": args.steps, "batch": args.batch,
        "warmup_s": round(warmup_s, 2), "wall_s": round(wall, 2), "build_s": round(timings["build_s"], 2),
        "rollout_s": round(timings["rollout_s"], 2), "other_s": round(other, 2),
        "scenes_per_s": round(n / wall, 3),
        "agent_steps_per_s": round(timings["controlled"] * args.steps / wall),
        "rollout_agent_steps_per_s": round(timings["controlled"] * args.steps / max(timings["rollout_s"], 1e-9)),
        "controlled_per_scene_density": round(timings["controlled"] / max(played, 1), 1),
        "envs_built": timings["envs"], "slots_per_env": round(timings["slots"] / max(timings["rollouts"], 1)),
        "per_scene_s_at_600": {k: round(v, 4) for k, v in shares.items()},
        "projected_h": round(WOMD_VALIDATION_SCENES * max(compute_per_scene, read_per_scene) / 3600, 2),
        "projected_serial_h": round(WOMD_VALIDATION_SCENES * (compute_per_scene + read_per_scene) / 3600, 2),
        "bound": bound,
    }
    if cuda:
        out["peak_torch_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        out["peak_warp_gib"] = round(wp.get_mempool_used_mem_high(wp.get_device(args.device)) / 2**30, 2)
        out["gpu"] = torch.cuda.get_device_name()
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--scenes", type=int, default=256, help="records in the synthetic shard (default 256)")
    p.add_argument("--steps", type=int, default=100,
                   help="steps per scene (default 100; the projection scales the rollouts to 600)")
    p.add_argument("--batch", type=int, default=256, help="scenes per env (evaluate's GPU default: 256)")
    p.add_argument("--workers", type=int, default=8, help="scene-reading processes (evaluate's GPU default: 8)")
    p.add_argument("--densities", nargs="+", type=float, default=[1.0, 0.75, 0.5], help="fractions kept")
    p.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES,
                   help="policies to measure, in this order (default: vectorized alberti random)")
    p.add_argument("--bf16", action="store_true", help="Alberti under bf16 autocast (evaluate runs FP32)")
    p.add_argument("--folder", type=Path, help="keep the synthetic shard here (default: a temporary folder)")
    args = p.parse_args(argv)
    if min(args.scenes, args.steps, args.batch) < 1 or args.workers < 0:
        p.error("--scenes, --steps and --batch must be >= 1, --workers >= 0")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        write_synthetic_shards(folder, args.scenes)
        emit({"phase": "shard", "scenes": args.scenes, "seconds": round(time.perf_counter() - t0, 2)})
        scenes, read_row = read_all(folder, args.workers)
        emit(read_row)
    for kind in args.policies:
        rows.append(measure(kind, scenes, read_row, args))
        emit(rows[-1])
    emit({"phase": "summary", "projected_h": {r["policy"]: r["projected_h"] for r in rows},
          "bound": {r["policy"]: r["bound"] for r in rows},
          "projection": f"hours for {WOMD_VALIDATION_SCENES} scenes x {args.densities} x {PROTOCOL_STEPS} steps"})
    return rows


if __name__ == "__main__":
    main()
