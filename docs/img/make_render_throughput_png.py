"""docs/img/render_throughput.png: renderer throughput per resolution on the pinned scene, in each
coverage mode of the current sweep, from the raw `benchmarks/render_throughput.py` lines kept
under docs/results/ (docs/renderer.md, "Current numbers").

    python docs/img/make_render_throughput_png.py
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
SWEEP = RESULTS / "render_sweep_h200_2026-12-03.jsonl"
MODES = (  # coverage mode, label, marker style
    ("silhouette", 'coverage="silhouette" (default)', {"marker": "o", "color": "tab:green"}),
    ("exact", 'coverage="exact"', {"marker": "s", "linestyle": "--", "color": "tab:blue"}),
)
ORDER = ("32x18", "64x36", "96x54", "192x108", "384x216")


def pinned_sweep(path: Path, coverage: str) -> dict[str, float]:
    """resolution -> agent-steps/s of the pinned scene (Town10HD, 120 agents + 32 parked) in one
    coverage mode."""
    out = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("name") != "render_throughput" or row.get("map") != "Town10HD":
            continue
        if row.get("scene", "pinned") == "pinned" and row.get("coverage") == coverage:
            out[row["resolution"]] = row["agent_steps_per_s"]
    return out


def main() -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    gpu = "one GPU"
    for line in SWEEP.read_text().splitlines():
        row = json.loads(line)
        if "gpu" in row:
            gpu = f"one {row['gpu'].removeprefix('NVIDIA ')}, {row['date']}"
            break
    for coverage, label, style in MODES:
        sweep = pinned_sweep(SWEEP, coverage)
        xs = [i for i, r in enumerate(ORDER) if r in sweep]
        ax.plot(xs, [sweep[ORDER[i]] for i in xs], label=label, **style)
    ax.plot([2], [5.0e5], marker="*", markersize=15, linestyle="none", color="tab:orange", label="paper (H100, 96x54)")
    ax.plot([2, 3], [2.0e6, 5.0e5], marker="_", markersize=22, linestyle="none", color="tab:red", label="issue 5 targets")
    ax.set_yscale("log")
    ax.set_ylim(1e5, 6e6)
    ax.set_xticks(range(len(ORDER)), ORDER)
    ax.set_xlabel("resolution (4 cameras per agent)")
    ax.set_ylabel(f"agent-steps / s ({gpu})")
    ax.set_title("Rasterizer throughput, Town10HD, 20,400 egos, far 120 m, K = 96", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper right")
    fig.savefig(Path(__file__).with_name("render_throughput.png"), dpi=100, bbox_inches="tight")


if __name__ == "__main__":
    main()
