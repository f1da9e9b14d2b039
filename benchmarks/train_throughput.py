"""Throughput of the three stages of training: env step alone, render alone, a full PPO iteration.

    python benchmarks/train_throughput.py --device cuda                       # configs/alberti.yaml
    python benchmarks/train_throughput.py --device cuda --config configs/vectorized.yaml
    python benchmarks/train_throughput.py --device cpu --worlds 2 --slots 16 --width 32 --height 18 \
        --rollout 8 --minibatch 64 --steps 20

Prints one JSON line per stage (``name`` = env_step | render | ppo_iteration) with at least
name, device, gpu, resolution, agents, agent_steps_per_s, peak_mem_gib. Agent-steps count
active agents only (valid, not halted). Env and render stages are timed after a warm-up with a
device synchronisation around the timed loop; the PPO stage runs ``--iterations`` iterations
through the real LightningCLI and reports the last one (the first pays for compilation).
``peak_mem_gib`` is device-level (cudaMemGetInfo: Warp allocations bypass torch's counters),
sampled after each stage, so it is the high-water mark at stage ends.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch
import warp as wp
from lightning.pytorch.callbacks import Callback
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pictura.modules.cli import run_lightning_cli  # noqa: E402


def device_used_gib(device: torch.device) -> float:
    if device.type != "cuda":
        return float("nan")
    free, total = torch.cuda.mem_get_info(device)
    return (total - free) / 2**30


def gpu_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def overrides(args: argparse.Namespace, root: str) -> list[str]:
    out = [
        f"--trainer.accelerator={'gpu' if args.device == 'cuda' else 'cpu'}",
        "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false",
        f"--trainer.default_root_dir={root}",
        f"--trainer.logger.init_args.save_dir={root}",
        f"--model.init_args.max_iterations={args.iterations}",
        "--trainer.callbacks=[]",  # no checkpoints, videos or evaluation sweeps in the timing
    ]
    if args.precision:
        out.append(f"--trainer.precision={args.precision}")
    if args.compile:
        out.append("--model.init_args.compile_policy=true")
    env = "--model.init_args.env.init_args"
    for flag, value in (("num_worlds", args.worlds), ("slots_per_world", args.slots)):
        if value:
            out.append(f"{env}.{flag}={value}")
    if args.slots:
        out.append(f"{env}.agents_per_world=[1, {min(120, args.slots)}]")
    if args.worlds or args.slots:  # a resized pool: fixed worlds (the configs' blocks need 4,096-slot multiples)
        out.append(f"{env}.block_slots=0")
    if args.width:
        out += [f"{env}.rig.init_args.width={args.width}", f"{env}.rig.init_args.height={args.height}"]
    for flag, value in (("rollout_steps", args.rollout), ("minibatch_size", args.minibatch), ("chunk_size", args.chunk)):
        if value:
            out.append(f"--model.init_args.{flag}={value}")
    return out


def time_env_and_render(model, args: argparse.Namespace, device: torch.device) -> list[dict]:
    """Time the simulator step alone and the renderer alone on the env the PPO run built."""
    from pictura.sim import NUM_ACTIONS, step

    env = model.env
    S = env.num_slots
    gen = torch.Generator(device=device).manual_seed(0)
    rows = []

    def sim_step() -> None:
        env._action.copy_(torch.randint(0, NUM_ACTIONS, (S,), device=device, generator=gen, dtype=torch.int32))
        with env._warp_scope():
            step(env.model, env._states[0], env._control, env._states[1])
        env._states.reverse()

    active = wp.to_torch(env.state.active)
    for name, fn in (("env_step", sim_step), ("render", env._render_current)):
        for _ in range(3):
            fn()
        sync(device)
        counted = torch.zeros((), device=device)
        t0 = time.perf_counter()
        for _ in range(args.steps):
            counted += active.sum()
            fn()
        sync(device)
        seconds = time.perf_counter() - t0
        if name == "render" and not env.renders_pixels:
            continue
        rows.append(
            dict(
                name=name,
                agent_steps_per_s=float(counted) / seconds,
                images_per_s=float(counted) * env.num_cameras / seconds if name == "render" else None,
                steps=args.steps,
                utilisation=float(counted) / (args.steps * S),
                peak_mem_gib=device_used_gib(device),
            )
        )
    return rows


class IterationLog(Callback):
    """Every iteration's agent-steps/s, so the first iterations' one-off costs (torch.compile,
    cuDNN autotuning, new padded batch sizes) are visible beside the reported last one."""

    def __init__(self):
        self.agent_steps_per_s: list[float] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        value = trainer.callback_metrics.get("perf/agent_steps_per_s")
        if value is not None:
            self.agent_steps_per_s.append(round(float(value), 1))


class IterationProfiler(Callback):
    """torch.profiler around one PPO iteration (one training batch) inside the fit loop; writes
    its top operators by device and by host time to ``path``."""

    def __init__(self, iteration: int, path: str):
        self.iteration, self.path, self.prof = iteration, path, None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        if batch_idx == self.iteration:
            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
            self.prof = profile(activities=activities)
            self.prof.__enter__()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        if self.prof is None:
            return
        sync(pl_module.device)
        self.prof.__exit__(None, None, None)
        events = self.prof.key_averages()
        self.prof = None
        by_device = "self_cuda_time_total" if torch.cuda.is_available() else "self_cpu_time_total"
        with open(self.path, "w") as f:
            f.write(f"# PPO iteration {self.iteration}, top operators by {by_device}\n")
            f.write(events.table(sort_by=by_device, row_limit=60, max_name_column_width=90))
            f.write("\n# top operators by host time (cpu_time_total)\n")
            f.write(events.table(sort_by="cpu_time_total", row_limit=40, max_name_column_width=90))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument(
        "--config", nargs="+", default=[str(ROOT / "configs" / "alberti.yaml")],
        help="config files, merged in order (e.g. configs/alberti.yaml configs/procedural.yaml)",
    )
    parser.add_argument("--iterations", type=int, default=2, help="PPO iterations (the last is reported)")
    parser.add_argument("--steps", type=int, default=50, help="timed env/render steps")
    parser.add_argument("--precision", default=None, help="trainer precision override, e.g. bf16-mixed")
    parser.add_argument("--worlds", type=int, default=None)
    parser.add_argument("--slots", type=int, default=None)
    parser.add_argument("--width", type=int, default=None)
    parser.add_argument("--height", type=int, default=None)
    parser.add_argument("--rollout", type=int, default=None)
    parser.add_argument("--minibatch", type=int, default=None)
    parser.add_argument("--chunk", type=int, default=None)
    parser.add_argument("--compile", action="store_true", help="torch.compile the policy (model.compile_policy)")
    parser.add_argument(
        "--torch-profile", default=None, metavar="TXT",
        help="profile the last PPO iteration with torch.profiler (its reported time then includes the "
        "profiler's overhead) and write its top operators by device and by host time to TXT",
    )
    args = parser.parse_args(argv)
    device = torch.device(args.device)

    with tempfile.TemporaryDirectory() as root:
        configs = [arg for path in args.config for arg in ("-c", path)]
        argv_cli = ["fit", *configs, *overrides(args, root)]
        t0 = time.perf_counter()
        cli = run_lightning_cli(argv_cli, run=False)
        log = IterationLog()
        cli.trainer.callbacks.append(log)
        if args.torch_profile:  # the last iteration; its timing then includes the profiler's overhead
            cli.trainer.callbacks.append(IterationProfiler(args.iterations - 1, args.torch_profile))
        cli.trainer.fit(cli.model)
        fit_seconds = time.perf_counter() - t0
        model, metrics = cli.model, cli.trainer.callback_metrics
        env = model.env
        common = dict(
            device=args.device,
            gpu=gpu_name(device),
            config="+".join(Path(c).name for c in args.config),
            resolution=f"{env.rig.width}x{env.rig.height}" if env.renders_pixels else None,
            agents=env.num_slots,
            precision=str(cli.trainer.precision),
            compiled=bool(args.compile),
        )
        ppo = dict(
            name="ppo_iteration",
            agent_steps_per_s=float(metrics["perf/agent_steps_per_s"]),
            seconds={k.split("/")[-1]: float(v) for k, v in metrics.items() if k.startswith("perf/seconds/")},
            iterations=args.iterations,
            agent_steps_per_s_by_iteration=log.agent_steps_per_s,
            fit_seconds_incl_compile=fit_seconds,
            valid_fraction=float(metrics["train/valid_fraction"]),
            peak_mem_gib=device_used_gib(device),
        )
        rows = [ppo, *time_env_and_render(model, args, device)]
        for row in rows:
            print(json.dumps({**common, **row}), flush=True)


if __name__ == "__main__":
    main()
