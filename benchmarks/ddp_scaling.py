"""End-to-end training throughput on 1 and on N GPUs of one host (DDP), same global config.

    python benchmarks/ddp_scaling.py --gpus 1 2                     # configs/alberti.yaml
    python benchmarks/ddp_scaling.py --gpus 1 2 --config configs/vectorized.yaml

Runs ``python -m pictura fit`` (the users' command) once per GPU count for ``--iterations`` PPO
iterations, compiled, bf16-mixed, no callbacks, with env ``block_slots`` = 4,096 / N (and
``worlds_per_block`` = 96 / N) so each rank packs its share of the 20,480 slots as one GPU
packs all of them. Reads ``perf/agent_steps_per_s`` (active agent-steps summed over the ranks,
over the rank-mean iteration wall time) and the phase times back from TensorBoard and prints
one JSON line per GPU count with the mean over iterations after ``--warmup``, then the scaling.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pictura.tools.curves import read_event_scalars  # noqa: E402

PHASES = ("rollout_policy", "rollout_render", "rollout_env", "update_render", "update_optim", "other")


def run(gpus: int, args: argparse.Namespace, root: Path) -> dict:
    env = "--model.init_args.env.init_args"
    command = [
        sys.executable, "-m", "pictura", "fit", *(a for c in args.config for a in ("-c", c)),
        f"--trainer.devices={gpus}", f"--trainer.strategy={'ddp' if gpus > 1 else 'auto'}",
        f"--trainer.precision={args.precision}", "--trainer.callbacks=[]", "--trainer.enable_progress_bar=false",
        f"--trainer.default_root_dir={root}", f"--trainer.logger.init_args.save_dir={root}",
        f"--trainer.logger.init_args.name=gpus{gpus}", f"--model.init_args.max_iterations={args.iterations}",
        f"--model.init_args.compile_policy={str(args.compile).lower()}",
    ]
    if args.block_slots:
        command += [f"{env}.block_slots={args.block_slots // gpus}", f"{env}.worlds_per_block={args.worlds_per_block // gpus}"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{gpus} GPU(s) failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    (run_dir,) = (root / f"gpus{gpus}").glob("version_*")  # the logger's one version folder
    found = read_event_scalars(run_dir)
    rate = found["perf/agent_steps_per_s"]
    steps = sorted(rate)[args.warmup:]
    if not steps:
        raise SystemExit(f"only {len(rate)} iterations logged; raise --iterations above --warmup={args.warmup}")

    def mean(tag: str) -> float:
        return statistics.fmean(found[tag][s] for s in steps) if tag in found else float("nan")

    return dict(
        gpus=gpus,
        config=args.config,
        iterations_timed=len(steps),
        agent_steps_per_s=mean("perf/agent_steps_per_s"),
        per_iteration=[round(rate[s]) for s in sorted(rate)],
        seconds={p: round(mean(f"perf/seconds/{p}"), 3) for p in PHASES},
        run_seconds=round(time.perf_counter() - started, 1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--config", nargs="+", default=["configs/alberti.yaml"], help="config files, merged in order")
    parser.add_argument("--block-slots", type=int, default=4096, help="one GPU's packing block; N GPUs use 1/N (0: as configured)")
    parser.add_argument("--worlds-per-block", type=int, default=96)
    parser.add_argument("--precision", default="bf16-mixed")
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2, help="first iterations left out (compilation)")
    parser.add_argument("--no-compile", dest="compile", action="store_false")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for gpus in args.gpus:
            rows.append(run(gpus, args, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
    base = rows[0]
    for row in rows[1:]:
        ratio = row["agent_steps_per_s"] / base["agent_steps_per_s"]
        print(json.dumps(dict(scaling=f"{row['gpus']} vs {base['gpus']} GPU(s)", ratio=round(ratio, 3))))


if __name__ == "__main__":
    main()
