"""Edge coverage of random box poses against the exact polygon-pixel area, per coverage mode
(docs/renderer.md, Known limits). Run:

    python -m tests.render.coverage_scan --poses 200 --seed 2

`tests/render/test_coverage.py` checks seven hand-picked poses. This tool draws ``--poses``
vehicles at random in front of the level camera (6-20 m ahead, up to 0.45 x that to the side,
any heading), measures every edge pixel of each mode (`MODES`) as `edge_coverage_error_map`
does (the coverage read from renders over a black and a white background; 2 px from the hull's
corners and from the horizon left out), and prints one JSON line per mode:
- the poses with an edge pixel more than 0.02 off;
- the share of edge pixels more than 0.02 off;
- the median, 99th percentile and largest error;
- the same share and largest error with the pixels near the horizon measured too
  (``..._with_horizon``), where a vehicle's roof, 0.1 m below the camera, is a sliver.

It also prints one ``worst`` line per such pose. ``--plot PNG`` also draws, per mode, the share
of edge pixels whose error exceeds each value (docs/img/coverage_scan.png).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from tests.render.test_coverage import EXACT_WITHIN, edge_coverage_error_map, near_horizon

MODES = {
    "exact": {"coverage": "exact"},
    "silhouette": {"coverage": "silhouette"},
    "ramp": {"coverage": "ramp"},
    "supersample2": {"supersample": 2, "antialias": False},
}
"""The modes measured: `Renderer` options. ``supersample2`` is plain 2x2 supersampling, the
paper's like-for-like antialiasing baseline (its coverage comes in steps of 1/4)."""
LABELS = {"exact": "exact", "silhouette": "silhouette (the default)", "ramp": "ramp", "supersample2": "2x2 supersampling (the paper's baseline)"}
"""`plot_errors`' legend names of the `MODES`."""


def random_poses(n: int, seed: int) -> list[tuple[float, ...]]:
    """``n`` vehicle poses (x, y, z, heading, length, width, height) in front of the camera."""
    rng = np.random.default_rng(seed)
    poses = []
    for _ in range(n):
        x = rng.uniform(6.0, 20.0)
        poses.append((x, rng.uniform(-0.45, 0.45) * x, 0.0, rng.uniform(-np.pi, np.pi), 4.5, 2.0, 1.4))
    return poses


def plot_errors(errors: dict[str, np.ndarray], title: str, path: Path) -> None:
    """PNG of each mode's error distribution: the share of its edge pixels more than x off (log
    scale), with issue 5's 0.02 marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=120)
    x = np.linspace(0.0, 0.7, 701)
    for mode, e in errors.items():
        share = (e[None, :] > x[:, None]).mean(1) if e.size else np.zeros_like(x)
        ax.plot(x, np.where(share > 0, share, np.nan), label=f"{LABELS.get(mode, mode)} ({e.size} edge pixels)")
    ax.axvline(EXACT_WITHIN, color="grey", linestyle="--", linewidth=1)
    ax.text(EXACT_WITHIN + 0.005, 0.5, f"{EXACT_WITHIN} (target)", color="grey", fontsize=8)
    ax.set_yscale("log")
    ax.set_xlabel("|coverage - exact pixel area|")
    ax.set_ylabel("share of edge pixels over x")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--poses", type=int, default=48, help="random poses (default 48)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--plot", type=Path, help="also write the error distributions to this PNG")
    args = p.parse_args(argv)
    if args.poses < 1:
        p.error(f"--poses must be >= 1, got {args.poses}")
    errors: dict[str, list[float]] = {m: [] for m in MODES}
    with_horizon: dict[str, list[float]] = {m: [] for m in MODES}
    poses_off = dict.fromkeys(MODES, 0)
    measured = 0
    horizon = near_horizon()
    for pose in random_poses(args.poses, args.seed):
        full = {m: edge_coverage_error_map(pose, horizon_px=0.0, **options) for m, options in MODES.items()}
        maps = {m: np.where(horizon, np.nan, error_map) for m, error_map in full.items()}
        if (~np.isnan(maps["exact"])).sum() < 5:
            continue  # too few edge pixels (a box mostly out of view)
        measured += 1
        for m, error_map in maps.items():
            e = error_map[~np.isnan(error_map)]
            errors[m] += e.tolist()
            with_horizon[m] += full[m][~np.isnan(full[m])].tolist()
            poses_off[m] += int(e.size > 0 and e.max() > EXACT_WITHIN)  # a mode may measure none
        worst = {m: round(float(np.nanmax(maps[m])), 3) for m in MODES}
        if worst["exact"] > EXACT_WITHIN:
            print(json.dumps({"name": "coverage_scan_worst", "pose": [round(v, 3) for v in pose], **worst}))
    for m in MODES:
        e = np.array(errors[m])
        eh = np.array(with_horizon[m])
        row = {
            "name": "coverage_scan", "mode": m, "seed": args.seed,
            "poses": measured, f"poses_over_{EXACT_WITHIN}": poses_off[m], "edge_pixels": len(e),
            f"edge_pixels_over_{EXACT_WITHIN}": round(float((e > EXACT_WITHIN).mean()), 4),
            "median": round(float(np.median(e)), 4), "p99": round(float(np.percentile(e, 99)), 4),
            "max": round(float(e.max()), 4),
            "edge_pixels_with_horizon": len(eh),
            f"edge_pixels_over_{EXACT_WITHIN}_with_horizon": round(float((eh > EXACT_WITHIN).mean()), 4),
            "max_with_horizon": round(float(eh.max()), 4),
        }  # fmt: skip
        print(json.dumps(row), flush=True)
    if args.plot is not None:
        title = f"edge coverage error, {measured} random vehicle poses (seed {args.seed}), 96x54, CPU"
        plot_errors({m: np.array(errors[m]) for m in MODES}, title, args.plot)


if __name__ == "__main__":
    main()
