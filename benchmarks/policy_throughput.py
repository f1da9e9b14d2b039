"""Policy forward and forward+backward+AdamW throughput (agent-steps/s), on random observations.

    python benchmarks/policy_throughput.py --device cuda                    # bf16, batch 4096, 96x54
    python benchmarks/policy_throughput.py --device cuda --precision fp32 --compile

One JSON line per (policy, precision, compile) configuration with name, device, gpu,
resolution, agents (= batch), agent_steps_per_s (forward), train_agent_steps_per_s
(forward + backward + fused AdamW step), peak_mem_gib (torch allocator peak: the policy is
pure torch). Timed with CUDA events after warm-up; median of ``--repeats``.
Inputs are random (never zeros: zeros can run faster than real data).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from tensordict import TensorDict
from torchrl.data import Bounded, Composite, Unbounded

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import median_seconds  # noqa: E402
from pictura.modules.alberti import AlbertiPolicy  # noqa: E402
from pictura.sim import CONDITIONING_WIDTH, EGO_WIDTH, NUM_ACTIONS  # noqa: E402


def perspective_spec(batch: int, cameras: int, height: int, width: int) -> Composite:
    return Composite(
        observation=Composite(
            pixels=Bounded(0, 255, shape=(batch, cameras, height, width, 3), dtype=torch.uint8),
            ego=Unbounded(shape=(batch, EGO_WIDTH)),
            conditioning=Unbounded(shape=(batch, CONDITIONING_WIDTH)),
            goals=Unbounded(shape=(batch, 3, 2)),
            shape=(batch,),
        ),
        shape=(batch,),
    )


def random_observation(spec: Composite, device: torch.device) -> TensorDict:
    obs = spec["observation"]
    b = obs.shape[0]
    return TensorDict(
        {
            "pixels": torch.randint(0, 256, obs["pixels"].shape, dtype=torch.uint8, device=device),
            "ego": torch.randn(b, EGO_WIDTH, device=device),
            "conditioning": torch.rand(b, CONDITIONING_WIDTH, device=device) * 2 - 1,
            "goals": torch.randn(b, 3, 2, device=device) * 0.1,
        },
        batch_size=[b],
    )


def measure(args: argparse.Namespace, precision: str, compiled: bool) -> dict:
    device = torch.device(args.device)
    torch.manual_seed(0)
    spec = perspective_spec(args.batch, 4, args.height, args.width)
    policy = AlbertiPolicy(spec, NUM_ACTIONS).to(device).to(memory_format=torch.channels_last)
    forward = torch.compile(policy) if compiled else policy
    optimizer = torch.optim.AdamW(policy.parameters(), lr=5e-4, fused=device.type == "cuda")
    obs = random_observation(spec, device)
    action = torch.randint(0, NUM_ACTIONS, (args.batch,), device=device)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32

    def fwd() -> None:
        with torch.no_grad(), torch.autocast(device.type, dtype=dtype, enabled=precision == "bf16"):
            forward(obs)

    def train() -> None:
        with torch.autocast(device.type, dtype=dtype, enabled=precision == "bf16"):
            logits, value = forward(obs)
            loss = torch.nn.functional.cross_entropy(logits.float(), action) + value.float().square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    for _ in range(args.warmup):
        fwd()
        train()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    fwd_s = median_seconds(fwd, args.repeats, device)
    train_s = median_seconds(train, args.repeats, device)
    return dict(
        name="policy_throughput",
        policy="alberti",
        device=args.device,
        gpu=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        resolution=f"{args.width}x{args.height}",
        agents=args.batch,
        precision=precision,
        compiled=compiled,
        agent_steps_per_s=args.batch / fwd_s,
        train_agent_steps_per_s=args.batch / train_s,
        peak_mem_gib=torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None,
        date=time.strftime("%Y-%m-%d"),
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--width", type=int, default=96)
    p.add_argument("--height", type=int, default=54)
    p.add_argument("--precision", default="bf16,fp32", help="comma list of bf16 | fp32")
    p.add_argument("--compile", action="store_true", help="also measure torch.compile")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=10)
    args = p.parse_args(argv)
    torch.backends.cudnn.benchmark = True
    for precision in args.precision.split(","):
        for compiled in (False, True) if args.compile else (False,):
            print(json.dumps(measure(args, precision, compiled)), flush=True)


if __name__ == "__main__":
    main()
