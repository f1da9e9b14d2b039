"""docs/img/render_throughput.png: renderer throughput per resolution on the pinned scene, from
the raw `benchmarks/render_throughput.py` lines kept under docs/results/.

    python docs/img/make_render_throughput_png.py
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
RUNS = (  # label, file: every "render_throughput" line of the pinned scene, coverage="ramp" (the default until 2026-12-02)
    ("2026-11-30, round 1 (entry records, tile bins)", "render_2026-11-30_round1.jsonl"),
    ("2026-12-01, rounds 3-4 (fragment buffer in registers, line misses)", "2026-12-01_h200_render_round4.jsonl"),
    ("2026-12-01, third session (candidate buffer 2048)", "2026-12-01_h200_session3_obs_render.txt"),
    ("2026-12-01, sixth session (register cap 56)", "2026-12-01_h200_render_session6.jsonl"),
    ("2026-12-01, seventh session (fewer instructions, fast math)", "2026-12-01_h200_render_session7.jsonl"),
    ("2026-12-01, eighth session, round 10 (one fragment evaluation, one record address)", "2026-12-01_h200_render_session8_round10_sweep.jsonl"),
    ("2026-12-01, eighth session, round 11 (per-band bin margins, one store per pixel)", "2026-12-01_h200_render_session8.jsonl"),
    ("2026-12-01, ninth session, round 12 (16 bands per raster thread)", "2026-12-01_h200_render_session9_round12_sweep.jsonl"),
    ("2026-12-01, ninth session, round 13 (lean launches, a wide-view kernel)", "2026-12-01_h200_render_session9.jsonl"),
    ("2026-12-01, tenth session, round 14 (integer ranking, tighter line bins)", "2026-12-01_h200_render_session10.jsonl"),
    ("2026-12-01, tenth session, round 15 (a block of lanes per view for the gather)", "2026-12-01_h200_render_session10_round15_sweep.jsonl"),
    ("2026-12-01, eleventh session, round 16 (vector loads, no index arithmetic)", "2026-12-01_h200_render_session11_round16_sweep.jsonl"),
    ("2026-12-01, twelfth session, round 19 (register pressure, band occupancy)", "2026-12-01_h200_render_session12_round19_sweep.jsonl"),
    ("2026-12-01, thirteenth session, round 20 (strided band groups)", "2026-12-01_h200_render_session13_round20_sweep.jsonl"),
    ("2026-12-01, fourteenth session, round 21 (warp-ballot gather)", "2026-12-01_h200_render_session14_round21_sweep.jsonl"),
    ("2026-12-02, twenty-eighth session, round 46 (two fragment slots)", "2026-12-02_h200_render_session28_sweep.jsonl"),
)
EXACT_RUNS = (  # the same, `coverage="exact"` lines (dashed): the default from the thirtieth to the thirty-fourth session
    ("2026-12-03, round 46, coverage=\"exact\"", "2026-12-03_h200_render_session30_sweep.jsonl"),
    ("2026-12-03, round 59, coverage=\"exact\"", "2026-12-03_h200_render_session34_sweep.jsonl"),
)
SILHOUETTE_RUNS = (  # `coverage="silhouette"` lines (dotted): the default since the thirty-fourth session
    ("2026-12-03, round 55, coverage=\"silhouette\"", "2026-12-03_h200_render_session33_sweep.jsonl"),
    ("2026-12-03, round 59, coverage=\"silhouette\" (the default since round 60)", "2026-12-03_h200_render_session34_sweep.jsonl"),
)
ORDER = ("32x18", "64x36", "96x54", "192x108", "384x216")


def pinned_sweep(path: Path, coverage: str = "ramp") -> dict[str, float]:
    """resolution -> agent-steps/s of the pinned scene (Town10HD, 120 agents + 32 parked) in
    one coverage mode (lines before the modes have no "coverage": the ramp)."""
    out = {}
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # the session files interleave other output
        if not isinstance(row, dict) or row.get("map") != "Town10HD":
            continue
        if row.get("coverage", "ramp") != coverage:
            continue
        if row.get("name") == "render_throughput" and row.get("scene", "pinned") == "pinned":
            out[row["resolution"]] = row["agent_steps_per_s"]
    return out


def main() -> None:
    fig, ax = plt.subplots(figsize=(7.6, 4.6))
    # one colour per run along a sequential map (oldest light, newest dark): more runs than the
    # default cycle has colours
    colors = plt.cm.viridis_r([0.1 + 0.85 * k / max(len(RUNS) - 1, 1) for k in range(len(RUNS))])
    def plot_sweep(label: str, name: str, coverage: str, **style) -> None:
        sweep = pinned_sweep(RESULTS / name, coverage)
        xs = [i for i, r in enumerate(ORDER) if r in sweep]
        ax.plot(xs, [sweep[ORDER[i]] for i in xs], label=label, **style)

    for (label, name), color in zip(RUNS, colors, strict=True):
        plot_sweep(label, name, "ramp", marker="o", color=color)
    for (label, name), color in zip(EXACT_RUNS, ("tab:gray", colors[-1]), strict=True):
        plot_sweep(label, name, "exact", marker="s", linestyle="--", color=color)
    for (label, name), color in zip(SILHOUETTE_RUNS, ("tab:olive", "tab:green"), strict=True):
        plot_sweep(label, name, "silhouette", marker="^", linestyle=":", color=color)
    ax.plot([2], [5.0e5], marker="*", markersize=15, linestyle="none", color="tab:orange", label="paper (H100, 96x54)")
    ax.plot([2, 3], [2.0e6, 5.0e5], marker="_", markersize=22, linestyle="none", color="tab:red", label="issue 5 targets")
    ax.set_yscale("log")
    ax.set_ylim(1e4, 4e6)
    ax.set_xticks(range(len(ORDER)), ORDER)
    ax.set_xlabel("resolution (4 cameras per agent)")
    ax.set_ylabel("agent-steps / s (one H200)")
    ax.set_title("Rasterizer throughput, Town10HD, 20,400 egos, far 120 m, K = 96", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    # beside the axes: inside, the list of rounds would hide the paper's and the targets' markers
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.savefig(Path(__file__).with_name("render_throughput.png"), dpi=100, bbox_inches="tight")


if __name__ == "__main__":
    main()
