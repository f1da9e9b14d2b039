"""Renderer A/B: the working tree against a baseline version, same scene, same device, same run.

    PICTURA_DATA=.data python benchmarks/render_ab.py --ref HEAD --device cuda
    python benchmarks/render_ab.py --ref HEAD~1 --device cpu --resolutions 32x18 --iters 1 -- --worlds 1

The baseline is ``git archive REF pictura benchmarks`` unpacked into a temporary directory, or
an unpacked copy given by ``--ref-dir`` (for a machine without the repository's history, such
as the lent GPU host: ``mkdir -p .ab && git archive HEAD pictura benchmarks | tar -x -C .ab``
here, then ``--ref-dir .ab`` there). `render_throughput.py` runs in the baseline, then in the
working tree, each with ``--profile`` and ``--save-views``; arguments after ``--`` go to both
runs (``-- --scene training``, ``-- --worlds 8``); ``--ref-env`` / ``--env KEY=VALUE`` set
environment variables for one run only, so ``--ref-dir .`` compares two settings of the
working tree (``--ref-dir . --ref-env PICTURA_RASTER_BLOCK_DIM=256``: a tuning knob against
its default). One JSON line per resolution: both
agent-steps/s and their ratio, both per-kernel times (ms), and the share of the saved views'
pixels that differ, by more than one level, and the largest difference; on CUDA also both
runs' peak memory for one ``--mem-chunk`` chunk. Run-to-run noise on an
H200 is about 1 %; images are deterministic per device, so any changed pixel is the change's.
Both runs get ``$PICTURA_DATA`` as an absolute path (each runs in its own tree), and runs that
drew different scenes (map, agents, ...: `SCENE_KEYS`) give an error line instead of a comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def export_ref(ref: str, into: Path) -> Path:
    """Unpack ``pictura`` and ``benchmarks`` of git revision ``ref`` into ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "pictura", "benchmarks"], capture_output=True, check=False
    )
    if archive.returncode != 0:
        raise SystemExit(f"--ref {ref}: git archive failed: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def parse_env(pairs: list[str], flag: str) -> dict[str, str]:
    """``KEY=VALUE`` strings -> a dict; a malformed one is an error naming ``flag``."""
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"{flag} takes KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


SCENE_KEYS = ("scene", "map", "agents", "requests", "agents_per_world", "parked_per_world", "spawn", "cameras")
"""Fields of a `render_throughput.py` line that say which scene was drawn: two runs that differ
in any of them drew different scenes, and their images and speeds do not compare."""


def scene_mismatch(ref_line: dict, new_line: dict) -> str | None:
    """None when both runs drew the same scene (`SCENE_KEYS`), else what differs."""
    diff = [f"{k}: {ref_line.get(k)!r} vs {new_line.get(k)!r}" for k in SCENE_KEYS if ref_line.get(k) != new_line.get(k)]
    return "; ".join(diff) or None


def run_env(extra_env: dict[str, str], tree: Path) -> dict[str, str]:
    """A run's environment: ours, the tree on PYTHONPATH, ``extra_env``, and PICTURA_DATA made
    absolute. Each run's working directory is its tree, so a relative data root would name
    another folder there (or none, and the pinned scene falls back to the procedural town)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]), **extra_env)
    if env.get("PICTURA_DATA"):
        env["PICTURA_DATA"] = str(Path(env["PICTURA_DATA"]).expanduser().resolve())
    return env


def run_tree(tree: Path, tag: str, args, views: Path, extra_env: dict[str, str]) -> dict[str, dict]:
    """Run the throughput sweep in ``tree``: resolution -> {"line": ..., "kernels": {name: ms}}."""
    script = tree / "benchmarks" / "render_throughput.py"
    if not script.is_file():
        raise SystemExit(f"{tree}: no benchmarks/render_throughput.py (is it an unpacked Pictura tree?)")
    cmd = [
        sys.executable, str(script), "--device", args.device, "--resolutions", args.resolutions,
        "--iters", str(args.iters), "--profile", "--save-views", str(views / f"{tag}_"),
        "--save-count", str(args.save_count), *args.extra,
    ]  # fmt: skip
    env = run_env(extra_env, tree)
    shown = [f"{k}={v}" for k, v in extra_env.items()] + cmd
    print(f"# {tag}: {' '.join(shown)}", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tag} run failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    out: dict[str, dict] = {}
    for line in done.stdout.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(row, dict):
            continue
        res = row.get("resolution")
        if row.get("name") == "render_throughput":
            out.setdefault(res, {})["line"] = row
        elif row.get("name") == "render_profile":
            kernels = {k["kernel"].rsplit("_", 1)[0]: round(k["ms"], 3) for k in row["kernels"]}
            out.setdefault(res, {})["kernels"] = kernels
    return out


def image_diff(a: np.ndarray, b: np.ndarray) -> dict:
    """Pixels (any channel) that differ between two view stacks, and by how much."""
    if a.shape != b.shape:
        return {"pixels_compared": 0, "note": f"shapes differ: {a.shape} vs {b.shape}"}
    level = np.abs(a.astype(np.int16) - b.astype(np.int16)).max(-1)
    return {
        "pixels_compared": int(level.size),
        "pixels_changed": round(float((level > 0).mean()), 7),
        "pixels_changed_by_more_than_1": round(float((level > 1).mean()), 7),
        "max_level_diff": int(level.max()),
    }


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    base = p.add_mutually_exclusive_group()
    base.add_argument("--ref", default="HEAD", help="git revision of the baseline (default HEAD)")
    base.add_argument("--ref-dir", type=Path, help="an unpacked baseline tree (pictura/ and benchmarks/)")
    p.add_argument("--device", default="cuda", help="Warp device: cuda | cpu (default cuda)")
    p.add_argument("--resolutions", default="96x54,192x108", help="comma-separated WxH (default 96x54,192x108)")
    p.add_argument("--iters", type=int, default=10, help="timed render calls per resolution (default 10)")
    p.add_argument("--save-count", type=int, default=512, help="egos whose views are compared (default 512)")
    p.add_argument("--ref-env", action="append", default=[], metavar="KEY=VALUE", help="environment of the baseline run")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="environment of the working-tree run")
    args = p.parse_args(argv)
    if args.iters < 1:
        p.error(f"--iters must be >= 1, got {args.iters}")
    if args.save_count < 1:
        p.error(f"--save-count must be >= 1, got {args.save_count}")
    args.extra = extra
    ref_env, new_env = parse_env(args.ref_env, "--ref-env"), parse_env(args.env, "--env")
    with tempfile.TemporaryDirectory(prefix="render_ab_") as tmp:
        tmp = Path(tmp)
        if args.ref_dir is not None:
            ref_tree, ref_name = args.ref_dir.resolve(), str(args.ref_dir)
        else:
            (tmp / "ref").mkdir()
            ref_tree, ref_name = export_ref(args.ref, tmp / "ref"), args.ref
        views = tmp / "views"
        views.mkdir()
        before = run_tree(ref_tree, "ref", args, views, ref_env)
        after = run_tree(ROOT, "new", args, views, new_env)
        for res in args.resolutions.split(","):
            b, a = before.get(res, {}), after.get(res, {})
            if "line" not in b or "line" not in a:
                print(json.dumps({"name": "render_ab", "resolution": res, "error": "a run printed no result"}))
                continue
            bl, al = b["line"], a["line"]
            mismatch = scene_mismatch(bl, al)
            if mismatch:
                print(json.dumps({"name": "render_ab", "resolution": res, "error": f"the runs drew different scenes: {mismatch}"}))
                continue
            row = {
                "name": "render_ab",
                "ref": ref_name,
                "ref_env": ref_env,
                "env": new_env,
                "device": al["device"],
                "gpu": al.get("gpu"),
                "resolution": res,
                "args": args.extra,  # what both runs were given after "--"
                "coverage": al.get("coverage"),
                "agents": al["agents"],
                "ref_agent_steps_per_s": bl["agent_steps_per_s"],
                "agent_steps_per_s": al["agent_steps_per_s"],
                "ratio": round(al["agent_steps_per_s"] / bl["agent_steps_per_s"], 4),
                "ref_peak_mem_chunk_gib": bl.get("peak_mem_chunk_gib"),  # None on the CPU
                "peak_mem_chunk_gib": al.get("peak_mem_chunk_gib"),
                "ref_kernels_ms": b.get("kernels", {}),
                "kernels_ms": a.get("kernels", {}),
                **image_diff(np.load(views / f"ref_{res}.npy"), np.load(views / f"new_{res}.npy")),
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
