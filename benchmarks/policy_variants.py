"""Alberti forward + backward time for the camera encoder's implementation choices (one JSON
line each): the stem as a patch GEMM (`pictura.modules.encoders.patch_stem`, the default) or as
cuDNN's strided conv, times the attention kernel (flash, memory-efficient, math).

    python benchmarks/policy_variants.py --device cuda            # bf16 autocast, batch 16,384, 96x54

Random pixels and vectors (`policy_throughput.random_observation`), eager mode (no
torch.compile), loss = sum of logits and values; the mean of ``--repeats`` timed calls
after two warm-ups, with device synchronisation around the timed loop.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.policy_throughput import perspective_spec, random_observation  # noqa: E402
from pictura.modules import encoders  # noqa: E402
from pictura.modules.alberti import AlbertiPolicy  # noqa: E402
from pictura.sim import NUM_ACTIONS  # noqa: E402

BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "math": SDPBackend.MATH,
}


def conv_stem_forward(self: encoders.ConvStack, views: torch.Tensor) -> torch.Tensor:
    """The stack as plain modules: the stem through cuDNN's conv."""
    return self.layers(views)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", choices=["cuda"])
    ap.add_argument("--batch", type=int, default=16_384)
    ap.add_argument("--width", type=int, default=96)
    ap.add_argument("--height", type=int, default=54)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    device = torch.device(args.device)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.enable_cudnn_sdp(False)  # as PPO runs it
    spec = perspective_spec(args.batch, 4, args.height, args.width)
    policy = AlbertiPolicy(spec, NUM_ACTIONS).to(device)
    obs = random_observation(spec, device)
    patch_stem_forward = encoders.ConvStack.forward

    def once() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits, value = policy(obs)
        (logits.float().sum() + value.float().sum()).backward()

    try:
        for stem, forward in (("patch", patch_stem_forward), ("conv", conv_stem_forward)):
            encoders.ConvStack.forward = forward
            for name, backend in BACKENDS.items():
                # the encoder's own choice on CUDA is replaced by this one backend
                saved = encoders.CUDA_ATTENTION_BACKENDS
                encoders.CUDA_ATTENTION_BACKENDS = [backend]
                with sdpa_kernel(backend):
                    for _ in range(2):
                        once()
                    torch.cuda.synchronize(device)
                    t0 = time.perf_counter()
                    for _ in range(args.repeats):
                        once()
                    torch.cuda.synchronize(device)
                encoders.CUDA_ATTENTION_BACKENDS = saved
                ms = (time.perf_counter() - t0) / args.repeats * 1e3
                print(json.dumps({
                    "name": "policy_variants", "gpu": torch.cuda.get_device_name(device),
                    "resolution": f"{args.width}x{args.height}", "batch": args.batch, "stem": stem,
                    "attention": name, "fwd_bwd_ms": round(ms, 2), "samples_per_s": round(args.batch / ms * 1e3),
                }), flush=True)  # fmt: skip
    finally:
        encoders.ConvStack.forward = patch_stem_forward


if __name__ == "__main__":
    main()
