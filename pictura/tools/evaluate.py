"""``python -m pictura evaluate``: the paper's evaluation protocols (App. C) as a command.

    python -m pictura evaluate --policy random --protocol in-domain --scenarios 8 --steps 3000 \\
        --json runs/eval/random.json
    python -m pictura evaluate --ckpt vec=runs/vectorized.ckpt --ckpt alberti=runs/alberti.ckpt \\
        --device cuda --scenarios 200 --steps 3000 --json runs/eval/table1.json

Prints a Table-1-style Markdown table (rows: densities, columns: the five metrics, per policy)
and writes the JSON of every counter and metric. See docs/evaluation.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from pictura.eval import metrics as M
from pictura.eval.protocols import (
    IN_DOMAIN_DENSITIES,
    PROTOCOLS,
    WOMD_DENSITIES,
    WOMD_STEPS,
    ScenarioProgress,
    default_maps,
    replay_env_builder,
    run_in_domain,
    run_womd_densities,
    womd_sources,
)
from pictura.eval.report import format_table, paired_difference_table, plot_metrics, write_json
from pictura.tools import parse_resolution

GPU_SLOTS_PER_BATCH = 65_536
"""Default cap on agent slots per batch on a GPU (scenarios x agents per world)."""
CPU_WORLDS_PER_BATCH = 8
GPU_READ_WORKERS = 8
"""Default scene-reading processes on a GPU (`pictura.maps.womd.index.SceneReader`)."""


def default_worlds_per_batch(device: str, scenarios: int, agents_per_world: float) -> int:
    """Scenarios side by side when ``--worlds-per-batch`` is not given: on a GPU every scenario
    of a density at once, while the slots fit `GPU_SLOTS_PER_BATCH`; 8 on the CPU."""
    if not str(device).startswith("cuda"):
        return min(CPU_WORLDS_PER_BATCH, scenarios)
    return max(1, min(scenarios, int(GPU_SLOTS_PER_BATCH // max(agents_per_world, 1))))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pictura evaluate",
        description="Evaluate policies with the paper's protocols (App. C) and print a Table-1-style table.",
    )
    who = p.add_argument_group("policies (one or more; compared side by side)")
    who.add_argument(
        "--ckpt", action="append", default=[], metavar="[NAME=]PATH",
        help="a pictura PPO Lightning checkpoint; repeat to compare (NAME defaults to the file stem)",
    )
    who.add_argument(
        "--policy", action="append", default=[], metavar="random|constant:A",
        help="a baseline policy: uniform random actions, or the constant action A (0..11, 7 = coast)",
    )
    p.add_argument("--protocol", choices=PROTOCOLS, default="in-domain", help="evaluation protocol")
    p.add_argument(
        "--maps", nargs="+", metavar="SOURCE",
        help="in-domain map sources (default: the 8 CARLA towns if present, else 8 procedural towns)",
    )
    p.add_argument(
        "--data", help="womd: a folder (searched recursively), one file or a glob of WOMD scenes: *.tfrecord, "
        "Waymo's *.tfrecord-NNNNN-of-NNNNN shards, GPUDrive *.json (default <data root>/womd)",
    )
    p.add_argument(
        "--densities", nargs="+", type=float, metavar="D",
        help="in-domain: agents per world (default 60 120 150); womd: fractions kept (default 1 0.75 0.5)",
    )
    p.add_argument(
        "--scenarios", type=int, default=None,
        help="scenarios per density (paper: 200; default 8); womd: at most this many scenes with a controlled "
        "vehicle (default: every scene of --data)",
    )
    p.add_argument(
        "--steps", type=int, default=None,
        help="steps per scenario (paper: 3000 in-domain, 600 womd; default 300 in-domain, 600 womd)",
    )
    p.add_argument(
        "--worlds-per-batch", type=int, default=None,
        help="scenarios run side by side in one env (default: every scenario of a density at once on a GPU, "
        f"up to {GPU_SLOTS_PER_BATCH:,} agent slots; {CPU_WORLDS_PER_BATCH} on the CPU)",
    )
    p.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1 (default cpu)")
    p.add_argument("--seed", type=int, default=0, help="base seed of the scenarios (same for every policy)")
    p.add_argument(
        "--resolution", metavar="WxH",
        help="camera resolution for --policy baselines (default 96x54); checkpoints keep their own",
    )
    p.add_argument("--json", type=Path, metavar="OUT", required=True, help="write the results here")
    p.add_argument("--png", type=Path, metavar="OUT", help="also plot metrics vs density to this PNG")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    womd = p.add_argument_group("womd: long evaluations")
    womd.add_argument("--strict", action="store_true", help="stop at the first unreadable or invalid scene")
    womd.add_argument(
        "--resume", action="store_true",
        help="continue from the partial results next to --json (OUT.partial.jsonl, written batch by batch)",
    )
    womd.add_argument(
        "--workers", type=int, default=None, metavar="N",
        help="processes reading (decoding) the next batches' scenes while one rolls out (default: 0 on the CPU, "
        f"up to {GPU_READ_WORKERS} on a GPU)",
    )
    womd.add_argument(
        "--no-index-cache", action="store_true", help="re-read every file's record index instead of the cached one",
    )
    return p


def _parse_policies(args) -> list[tuple[str, object]]:
    """[(name, spec)] with spec a `Checkpoint` or a baseline string."""
    from pictura.eval.policies import load_checkpoint

    out: list[tuple[str, object]] = []
    for item in args.policy:
        if item == "random":
            out.append(("random", item))
        elif item.startswith("constant:"):
            try:
                action = int(item.split(":", 1)[1])
            except ValueError:
                raise ValueError(f"--policy {item!r}: the constant action must be an integer 0..11") from None
            if not 0 <= action < 12:
                raise ValueError(f"--policy {item!r}: the constant action must be in 0..11")
            out.append((item, item))
        else:
            raise ValueError(f"--policy {item!r}: use 'random' or 'constant:<action>'")
    for item in args.ckpt:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = None, item
        ckpt = load_checkpoint(path, name)
        out.append((ckpt.name, ckpt))
    if not out:
        raise ValueError("give at least one --ckpt or --policy")
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f"policy names must be unique (use --ckpt NAME=PATH), got {names}")
    return out


def _baseline_builder(resolution: tuple[int, int]):
    from pictura.envs import DrivingEnv
    from pictura.render import CameraRig

    def build(**kwargs):
        return DrivingEnv(rig=CameraRig(width=resolution[0], height=resolution[1]), validate_actions=False, **kwargs)

    return build


def _checkpoint_builder(ckpt):
    def build(**kwargs):
        env = ckpt.build_env(**kwargs)
        env.validate_actions = False
        return env

    return build


def _policy_for(spec, env, seed: int):
    from pictura.eval.policies import constant_policy, random_policy

    if spec == "random":
        return random_policy(seed)
    if isinstance(spec, str) and spec.startswith("constant:"):
        return constant_policy(int(spec.split(":", 1)[1]))
    return spec.policy(env)


def evaluate_in_domain(args, policies) -> tuple[dict, dict, dict]:
    maps, note = (list(args.maps), "maps: " + ", ".join(args.maps)) if args.maps else default_maps()
    densities = [int(d) for d in (args.densities or IN_DOMAIN_DENSITIES)]
    for d, raw in zip(densities, args.densities or densities, strict=True):
        if d != raw or d < 1:
            raise ValueError(f"--densities for in-domain are agents per world (integers >= 1), got {raw}")
    resolution = parse_resolution(args.resolution)
    results: dict[str, dict[str, dict[str, float]]] = {}
    per_scenario: dict[str, dict[str, list]] = {}
    for name, spec in policies:
        per_scenario[name] = {}
        if isinstance(spec, str):
            builder, base_sim = _baseline_builder(resolution), None
        else:  # keep the checkpoint's own rules (e.g. its conditioning table), with the eval changes
            builder, base_sim = _checkpoint_builder(spec), getattr(spec.env_factory, "keywords", {}).get("sim")
        results[name] = {}
        for density in densities:
            progress = ScenarioProgress(args.scenarios, f"{name} @ {density}", not args.no_progress)
            result = run_in_domain(
                builder, lambda env, spec=spec: _policy_for(spec, env, args.seed), density, args.scenarios,
                args.steps, maps, device=args.device, seed=args.seed, worlds_per_batch=args.worlds_per_batch,
                progress=progress, base_sim=base_sim,
            )
            progress.close()
            results[name][str(density)] = M.summarize(M.all_reduce_counters(result.counters))
            per_scenario[name][str(density)] = result.scenario_sums.cpu().tolist()
    meta = {"protocol": "in-domain", "maps": maps, "maps_note": note, "densities": densities,
            "scenarios": args.scenarios, "steps": args.steps, "seed": args.seed, "device": args.device,
            "scenario_counter_columns": list(M.COUNTERS)}
    return results, meta, per_scenario


def _womd_builder(spec, resolution: tuple[int, int]):
    """(replay env builder, base SimConfig) for a baseline string or a checkpoint: checkpoints
    keep their rig and observation (vectorized: WOMD segments cut to <= 5 m, App. C.2)."""
    import dataclasses

    from pictura.envs.observations import VectorizedObservationConfig
    from pictura.render import CameraRig

    if isinstance(spec, str):
        rig = CameraRig(width=resolution[0], height=resolution[1])
        return replay_env_builder(rig=rig, validate_actions=False), None
    keywords = dict(getattr(spec.env_factory, "keywords", {}))
    fixed = {k: keywords[k] for k in ("rig", "observation") if k in keywords}
    obs = fixed.get("observation")
    if isinstance(obs, VectorizedObservationConfig) and obs.subdivide_long_segments is None:
        fixed["observation"] = dataclasses.replace(obs, subdivide_long_segments=5.0)
    return replay_env_builder(validate_actions=False, **fixed), keywords.get("sim")


def _process_group() -> tuple[int, int]:
    """(rank, ranks): under torchrun (``WORLD_SIZE`` > 1) joins the process group (gloo: it
    only gathers the batches' sums at the end) so that ranks split the scenes; (0, 1) otherwise."""
    import torch.distributed as dist

    ranks = int(os.environ.get("WORLD_SIZE", "1"))
    if ranks == 1:
        return 0, 1
    if not dist.is_initialized():
        dist.init_process_group(backend="gloo")
    return dist.get_rank(), dist.get_world_size()


class _Warnings:
    """Each skipped file or record once on stderr (a bad scene is met once per policy and density)."""

    def __init__(self, enabled: bool) -> None:
        self.seen: set[str] = set()
        self.enabled = enabled

    def __call__(self, line: str) -> None:
        if self.enabled and line not in self.seen:
            self.seen.add(line)
            print(line, file=sys.stderr)


class PartialResults:
    """``OUT.partial.jsonl`` (``OUT.partial-rankR-of-N.jsonl`` per process): a header with the
    run's settings, then one line per finished batch, flushed as it goes, so ``--resume`` plays
    only the missing batches. Removed once the final JSON is written."""

    def __init__(self, out: Path, settings: dict, rank: int, ranks: int, resume: bool) -> None:
        suffix = ".partial.jsonl" if ranks == 1 else f".partial-rank{rank}-of-{ranks}.jsonl"
        self.path = out.with_name(out.name + suffix)
        self.done: dict[tuple[str, str], dict] = {}
        settings = json.loads(json.dumps(settings))
        if resume and self.path.is_file():
            lines = self.path.read_text().splitlines()
            header = json.loads(lines[0]) if lines else {}
            if header.get("settings") != settings:
                raise ValueError(
                    f"--resume: {self.path} was written with other settings ({header.get('settings')}); "
                    "rerun without --resume to start over"
                )
            kept = lines[:1]
            for line in lines[1:]:
                try:
                    item = json.loads(line)
                except json.JSONDecodeError:
                    break  # a line cut by the interruption: that batch is played again
                self.done.setdefault((item["policy"], item["density"]), {})[item["batch"]["index"]] = item["batch"]
                kept.append(line)
            self.path.write_text("".join(line + "\n" for line in kept))  # without the cut line
            self.file = open(self.path, "a")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.file = open(self.path, "w")
            self.file.write(json.dumps({"settings": settings}) + "\n")
            self.file.flush()

    def batches(self, policy: str, density: str):
        from pictura.eval.protocols import WomdBatch

        return {k: WomdBatch(**b) for k, b in self.done.get((policy, density), {}).items()}

    def write(self, policy: str, density: str, batch) -> None:
        line = {"policy": policy, "density": density, "batch": batch.as_dict()}
        self.file.write(json.dumps(line) + "\n")
        self.file.flush()

    def finish(self) -> None:
        self.file.close()
        self.path.unlink(missing_ok=True)


def _gather_batches(batches: list, ranks: int) -> list:
    if ranks == 1:
        return batches
    import torch.distributed as dist

    from pictura.eval.protocols import WomdBatch

    gathered: list = [None] * ranks
    dist.all_gather_object(gathered, [b.as_dict() for b in batches])
    return [WomdBatch(**b) for part in gathered for b in part]


def evaluate_womd(args, policies) -> tuple[dict, dict, dict]:
    from pictura.eval.protocols import merge_womd_batches
    from pictura.maps.womd.index import SceneReader

    if args.data is None:
        from pictura.maps import data_root

        data = data_root() / "womd"
    else:
        data = args.data
    rank, ranks = _process_group()
    if ranks > 1 and args.scenarios is not None:
        raise ValueError("--scenarios needs one process (which batch reaches the cap depends on every batch "
                         "before it); under torchrun every scene of --data is evaluated")
    device = args.device
    if ranks > 1 and device == "cuda":
        device = f"cuda:{os.environ.get('LOCAL_RANK', rank)}"
    index = womd_sources(data, use_cache=not args.no_index_cache)
    warn = _Warnings(rank == 0)
    for bad in index.bad:
        where = bad.file if bad.record is None else f"{bad.file}: record {bad.record}"
        if args.strict:
            raise ValueError(f"{where}: {bad.reason} (--strict)")
        warn(f"womd: skipped {where}: {bad.reason}")
    densities = [float(d) for d in (args.densities or WOMD_DENSITIES)]
    resolution = parse_resolution(args.resolution)
    batch = args.worlds_per_batch
    settings = {"data": str(data), "scenes": len(index.scenes), "policies": [n for n, _ in policies],
                "densities": densities, "steps": args.steps, "seed": args.seed, "scenarios": args.scenarios,
                "scenes_per_batch": batch}
    partial = PartialResults(args.json, settings, rank, ranks, args.resume)
    own = sum(len(index.scenes[k : k + batch]) for k in range(0, len(index.scenes), batch) if (k // batch) % ranks == rank)
    results: dict[str, dict[str, dict[str, float]]] = {}
    per_scenario: dict[str, dict[str, list]] = {}
    scenes: dict[str, int] = {}
    no_controlled: dict[str, int] = {}
    skipped: dict[tuple, dict] = {(b.file, b.record): b.as_dict() for b in index.bad}
    workers = args.workers
    if workers is None:
        workers = min(GPU_READ_WORKERS, max((os.cpu_count() or 1) - 2, 0)) if str(device).startswith("cuda") else 0
    reader = SceneReader(workers)
    try:
        for name, spec in policies:
            builder, base_sim = _womd_builder(spec, resolution)
            results[name] = {}
            per_scenario[name] = {}
            done = {(density, k): b for density in densities for k, b in partial.batches(name, str(density)).items()}
            label = "/".join(f"{d:g}" for d in densities)
            progress = ScenarioProgress(own * len(densities), f"{name} @ {label}", not args.no_progress and rank == 0)
            by_density = run_womd_densities(
                builder, lambda env, spec=spec: _policy_for(spec, env, args.seed), index.scenes, densities,
                args.steps, max_scenes=args.scenarios, device=device, seed=args.seed, scenes_per_batch=batch,
                progress=progress, base_sim=base_sim, strict=args.strict, done=done,
                on_batch=lambda density, b, name=name: partial.write(name, str(density), b),
                shard=(rank, ranks), warn=warn, reader=reader,
            )
            progress.close()
            for density, result in by_density.items():
                merged = merge_womd_batches(_gather_batches(result.batches, ranks), density, args.steps)
                scenes[str(density)] = merged.scenes
                no_controlled[str(density)] = merged.skipped
                for bad in merged.bad:
                    skipped.setdefault((bad.file, bad.record), bad.as_dict())
                results[name][str(density)] = M.summarize(merged.counters)
                per_scenario[name][str(density)] = merged.scenario_sums.tolist()
    finally:
        reader.close()
    partial.finish()
    if ranks > 1:
        import torch.distributed as dist

        dist.destroy_process_group()
    meta = {"protocol": "womd", "maps": [str(data)], "maps_note": f"WOMD scenes of {data} (log replay)",
            "densities": densities, "scenarios": args.scenarios, "scenes": scenes,
            "scenes_without_controlled_vehicle": no_controlled, "scenes_indexed": len(index.scenes),
            "scene_files": len(index.files), "skipped": list(skipped.values()), "processes": ranks,
            "read_workers": workers, "steps": args.steps, "seed": args.seed, "device": args.device,
            "scenario_counter_columns": list(M.COUNTERS)}
    meta["rank"] = rank
    return results, meta, per_scenario


def main(argv: list[str]) -> None:
    args = _parser().parse_args(argv)
    if args.steps is None:
        args.steps = WOMD_STEPS if args.protocol == "womd" else 300
    if args.scenarios is None and args.protocol == "in-domain":
        args.scenarios = 8
    try:
        if args.worlds_per_batch is None:
            # WOMD scenes hold up to a few hundred road users; in-domain worlds the largest density
            densest = 256 if args.protocol == "womd" else max(args.densities or IN_DOMAIN_DENSITIES)
            args.worlds_per_batch = default_worlds_per_batch(args.device, args.scenarios or 1 << 30, densest)
        if (args.scenarios is not None and args.scenarios < 1) or args.steps < 1 or args.worlds_per_batch < 1:
            raise ValueError("--scenarios, --steps and --worlds-per-batch must be >= 1")
        policies = _parse_policies(args)
        started = time.perf_counter()
        runner = evaluate_in_domain if args.protocol == "in-domain" else evaluate_womd
        results, meta, per_scenario = runner(args, policies)
    except (ValueError, FileNotFoundError, NotImplementedError) as err:
        raise SystemExit(f"evaluate: {err}") from None
    meta["wall_s"] = round(time.perf_counter() - started, 3)
    meta["policies"] = [n for n, _ in policies]
    if meta.pop("rank", 0) != 0:
        return  # under torchrun, rank 0 writes the merged results
    count = meta["scenarios"] if meta["protocol"] == "in-domain" else "/".join(map(str, meta["scenes"].values()))
    title = f"{meta['protocol']}: {count} scenarios x {meta['steps']} steps per density; {meta['maps_note']}"
    print(format_table(results, title))
    if len(per_scenario) > 1:
        # the same seeds (scenes) play the same scenarios for every policy: differences are paired
        print("\nDifferences on the same scenarios (+- 95 %, paired):")
        print(paired_difference_table(per_scenario))
    write_json(args.json, results, meta, per_scenario)
    print(f"wrote {args.json}", file=sys.stderr)
    if args.png:
        import matplotlib.pyplot as plt

        plt.close(plot_metrics(results, args.png))
        print(f"wrote {args.png}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
