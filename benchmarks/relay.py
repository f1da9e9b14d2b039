"""Relay training: one long run as a chain of short legs, each resuming where the last stopped.

    # a leg of at most 8.5 minutes; the state goes to relay/ (and comes from it, if it is there)
    python benchmarks/relay.py --state relay --minutes 8.5 -- -c configs/alberti.yaml
    # on a lent GPU host: the last leg's state carried in as .relay, the new one returned in $OUT
    python benchmarks/relay.py --from .relay --state "$OUT" --minutes 8.5 -- -c configs/alberti.yaml

A leg starts ``python -m pictura fit <args> --ckpt_path <the last leg's checkpoint>`` (no
checkpoint on the first leg), and after ``--minutes`` sends it SIGTERM: `PreemptionCheckpoint`
lets the PPO iteration in flight finish, writes ``last.ckpt`` and exits (143); a run that
reaches ``max_iterations`` first ends as usual (0). The leg then splits ``last.ckpt`` into
files small enough for a transfer limit (``--part-mib``, ``--max-files``):

- ``relay_state.pt``: the checkpoint with every tensor replaced by a reference to its part;
- ``relay_part_K.pt``: the tensors, weights and AdamW state first, then the worlds;
- ``relay_log.json``: one record per leg (iteration, agent-steps, wall time, exit code, whether
  the worlds were kept);
- the leg's TensorBoard event file(s), while the file budget lasts.

The next leg joins the parts back into the same checkpoint, bit for bit. What a resumed leg
loses: nothing when the worlds fit the file budget (the run continues exactly as one long run
would, worlds mid-episode and random numbers included); otherwise the worlds start fresh
episodes (a fresh seed per iteration, as `PPO.on_train_start` does for a checkpoint without
env state) and ``relay_log.json`` says ``"worlds": "fresh"``. Each leg also pays the start-up
(Warp kernels from the cache, the env's build) and the policy's warm-up again.

Legs log under ``<save_dir>/<name>/relay`` (the config's TensorBoard logger, version
``relay``), so the legs of one host share one run directory.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pictura.modules.ppo import RESUME_KEY  # noqa: E402

STATE_FILE = "relay_state.pt"
LOG_FILE = "relay_log.json"
VERSION = "relay"


@dataclass(frozen=True)
class TensorRef:
    """Where one tensor of a split checkpoint lives: its flat pieces (part file, key), in order,
    and its shape. A tensor larger than a part is cut into pieces of at most a part each."""

    pieces: tuple[tuple[int, str], ...]
    shape: tuple[int, ...]


def _unique(pairs):
    """(path, tensor) pairs, each tensor object once (at its first path)."""
    seen: set[int] = set()
    for path, t in pairs:
        if id(t) not in seen:
            seen.add(id(t))
            yield path, t


def _tensors(tree, path: str = ""):
    """(path, tensor) for every tensor inside nested dicts / lists / tuples."""
    if isinstance(tree, torch.Tensor):
        yield path, tree
    elif isinstance(tree, dict):
        for k, v in tree.items():
            yield from _tensors(v, f"{path}/{k!r}")
    elif isinstance(tree, list | tuple):
        for i, v in enumerate(tree):
            yield from _tensors(v, f"{path}/{i}")


def _replace(tree, mapping: dict[int, object]):
    """``tree`` with each tensor whose ``id`` is in ``mapping`` replaced by its value."""
    if isinstance(tree, torch.Tensor):
        return mapping.get(id(tree), tree)
    if isinstance(tree, dict):
        return {k: _replace(v, mapping) for k, v in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(_replace(v, mapping) for v in tree)
    return tree


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _pieces(tensors: list[tuple[str, torch.Tensor]], part_bytes: int):
    """(path, piece index, tensor, flat piece): each tensor flattened and cut into pieces of at
    most ``part_bytes``."""
    for path, t in tensors:
        flat = t.detach().contiguous().reshape(-1)
        step = max(1, part_bytes // max(t.element_size(), 1))
        for i, start in enumerate(range(0, max(flat.numel(), 1), step)):
            yield path, i, t, flat[start : start + step].clone()


def _pack(tensors: list[tuple[str, torch.Tensor]], part_bytes: int):
    """First-fit packing of the tensors' pieces, in order: a list of parts, each a list of
    (path, piece index, tensor, piece)."""
    parts: list[list] = []
    sizes: list[int] = []
    for path, i, t, piece in _pieces(tensors, part_bytes):
        n = _nbytes(piece)
        for k, size in enumerate(sizes):
            if size + n <= part_bytes:
                parts[k].append((path, i, t, piece))
                sizes[k] += n
                break
        else:
            parts.append([(path, i, t, piece)])
            sizes.append(n)
    return parts


def split_checkpoint(checkpoint: dict, into: Path, part_bytes: int, max_parts: int) -> dict:
    """Write ``checkpoint`` as `STATE_FILE` plus at most ``max_parts`` part files of at most
    ``part_bytes`` tensor bytes each; the worlds (``RESUME_KEY``) are dropped when they do not
    fit. Returns {"parts", "worlds": "kept" | "fresh" | "none", "bytes"}."""
    into.mkdir(parents=True, exist_ok=True)
    worlds = checkpoint.get(RESUME_KEY)
    core = {k: v for k, v in checkpoint.items() if k != RESUME_KEY}
    must = list(_unique(_tensors(core)))
    parts = _pack(must, part_bytes)
    if len(parts) > max_parts:
        raise SystemExit(
            f"--max-files: the weights and optimizer state need {len(parts)} parts of {part_bytes / 2**20:.1f} MiB"
        )
    status = "none"
    if worlds is not None:
        with_worlds = _pack(list(_unique([*must, *_tensors(worlds, "/worlds")])), part_bytes)
        if len(with_worlds) <= max_parts:
            parts, status = with_worlds, "kept"
        else:
            checkpoint, status = core, "fresh"
    for old in into.glob("relay_part_*.pt"):
        old.unlink()
    pieces: dict[int, list[tuple[int, int, str]]] = {}
    total = 0
    for k, part in enumerate(parts):
        torch.save({f"{path}#{i}": piece for path, i, _, piece in part}, into / f"relay_part_{k}.pt")
        for path, i, t, piece in part:
            pieces.setdefault(id(t), []).append((i, k, f"{path}#{i}"))
            total += _nbytes(piece)
    shapes = {id(t): tuple(t.shape) for _, t in _tensors(checkpoint)}
    mapping = {
        key: TensorRef(tuple((k, name) for _, k, name in sorted(got)), shapes[key])
        for key, got in pieces.items()
    }
    torch.save({"skeleton": _replace(checkpoint, mapping), "parts": len(parts)}, into / STATE_FILE)
    return {"parts": len(parts), "worlds": status, "bytes": total}


def join_checkpoint(folder: Path) -> dict:
    """The checkpoint `split_checkpoint` wrote into ``folder``."""
    state = torch.load(folder / STATE_FILE, map_location="cpu", weights_only=False)
    parts = [torch.load(folder / f"relay_part_{k}.pt", map_location="cpu") for k in range(state["parts"])]

    def restore(tree):
        if isinstance(tree, TensorRef):
            return torch.cat([parts[k][name] for k, name in tree.pieces]).reshape(tree.shape)
        if isinstance(tree, dict):
            return {k: restore(v) for k, v in tree.items()}
        if isinstance(tree, list | tuple):
            return type(tree)(restore(v) for v in tree)
        return tree

    return restore(state["skeleton"])


def _fit_command(fit_args: list[str], resume: Path | None) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "pictura",
        "fit",
        *fit_args,
        f"--trainer.logger.init_args.version={VERSION}",
    ]
    if resume is not None:
        command.append(f"--ckpt_path={resume}")
    return command


def _run_dir(fit_args: list[str]) -> Path:
    """``<save_dir>/<name>/relay`` of the merged config (``fit --print_config``)."""
    import yaml

    printed = subprocess.run(
        [sys.executable, "-m", "pictura", "fit", *fit_args, "--print_config"],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )  # fmt: skip
    if printed.returncode != 0:
        raise SystemExit(f"fit arguments rejected:\n{printed.stderr.strip()}")
    logger = yaml.safe_load(printed.stdout)["trainer"]["logger"]["init_args"]
    return Path(logger["save_dir"]) / logger["name"] / VERSION


def run_leg(fit_args: list[str], source: Path | None, state: Path, minutes: float, part_bytes: int,
            max_files: int) -> dict:  # fmt: skip
    """One leg: join the last state (if any), fit for at most ``minutes``, split the new state."""
    run_dir = _run_dir(fit_args)
    history = []
    resume = None
    if source is not None and (source / STATE_FILE).exists():
        history = json.loads((source / LOG_FILE).read_text()) if (source / LOG_FILE).exists() else []
        resume = run_dir / "relay_resume.ckpt"
        resume.parent.mkdir(parents=True, exist_ok=True)
        torch.save(join_checkpoint(source), resume)
    started, wall_started = time.monotonic(), time.time()
    process = subprocess.Popen(_fit_command(fit_args, resume), cwd=ROOT)
    try:
        rc = process.wait(timeout=max(minutes * 60.0, 1.0))
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)  # PreemptionCheckpoint: finish the iteration, save, exit 143
        rc = process.wait()
    wall = time.monotonic() - started
    last = run_dir / "checkpoints" / "last.ckpt"
    # 0: max_iterations reached; 143: stopped at an iteration boundary; a SIGTERM that came
    # during the end-of-fit evaluation ends the process at once, after the final last.ckpt
    if not last.exists() or last.stat().st_mtime < wall_started:
        raise SystemExit(f"the leg's fit ended with exit code {rc} and wrote no {last}: nothing to hand on")
    checkpoint = torch.load(last, map_location="cpu", weights_only=False)
    events = sorted(run_dir.glob("events.out.tfevents.*"), key=lambda p: p.stat().st_mtime)
    # the state, the log and, in the files left, the newest event files
    split = split_checkpoint(checkpoint, state, part_bytes, max_files - 2)
    for old in state.glob("events.out.tfevents.*"):
        old.unlink()
    for event in events[::-1][: max(0, max_files - 2 - split["parts"])]:
        (state / event.name).write_bytes(event.read_bytes())
    model = checkpoint["state_dict"]
    record = {
        "leg": len(history),
        "iteration": int(model["iteration"]),
        "agent_steps": int(model["trained_agent_steps"]),
        "wall_s": round(wall, 1),
        "exit_code": rc,
        "worlds": split["worlds"],
        "parts": split["parts"],
        "state_mib": round(split["bytes"] / 2**20, 2),
        "resumed": resume is not None,
    }
    (state / LOG_FILE).write_text(json.dumps(history + [record], indent=1) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ours, fit_args = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--state", type=Path, required=True, help="folder the leg writes its state to")
    p.add_argument(
        "--from", dest="source", type=Path, help="folder of the last leg's state (default: --state)"
    )
    p.add_argument(
        "--minutes", type=float, default=8.5, help="wall minutes before the leg is stopped (default 8.5)"
    )
    p.add_argument("--part-mib", type=float, default=15.5, help="largest state file, MiB (default 15.5)")
    p.add_argument("--max-files", type=int, default=8, help="files the state folder may hold (default 8)")
    args = p.parse_args(ours)
    if not fit_args:
        p.error("give the fit arguments after --, e.g. -- -c configs/alberti.yaml")
    if not (args.minutes > 0 and math.isfinite(args.minutes)):
        p.error(f"--minutes must be > 0, got {args.minutes}")
    if args.max_files < 3:
        p.error(f"--max-files must be >= 3 (the state, the log and one part), got {args.max_files}")
    record = run_leg(
        fit_args,
        args.source or args.state,
        args.state,
        args.minutes,
        int(args.part_mib * 2**20),
        args.max_files,
    )
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
