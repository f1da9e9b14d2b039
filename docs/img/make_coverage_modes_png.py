"""docs/img/coverage_modes.png: a box turned 0.6 rad at 96x54 (the second pose of
tests/render/test_coverage.py), drawn with ``coverage="silhouette"`` (the default), ``coverage="exact"``, ``coverage="ramp"``
and plain 2x2 supersampling (the paper's baseline), each beside its per-pixel coverage error against the exact area of the projected
silhouette in each pixel (NumPy polygon clipping, the test's reference).

    python docs/img/make_coverage_modes_png.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pictura.maps.roadmap import AGENT_VEHICLE  # noqa: E402
from tests.render.conftest import boxes  # noqa: E402
from tests.render.test_coverage import TURNED, H, W, edge_coverage_error_map  # noqa: E402
from tests.render.test_rasterizer import EGO, front_renderer, render_one  # noqa: E402

POSE = TURNED[0]
MODES = (
    ("silhouette (default)", {"coverage": "silhouette"}),
    ("exact", {"coverage": "exact"}),
    ("ramp", {"coverage": "ramp"}),
    ("2x2 supersampled", {"supersample": 2, "antialias": False}),
)
CROP = (slice(22, 44), slice(22, 58))  # rows, columns around the box


def main() -> None:
    scene = boxes(8, {0: EGO, 1: (*POSE, AGENT_VEHICLE)})
    fig, axes = plt.subplots(2, len(MODES), figsize=(4.2 * len(MODES), 6.2))
    for col, (label, options) in enumerate(MODES):
        image = render_one(front_renderer(width=W, height=H, **options), scene)[0]
        err = edge_coverage_error_map(POSE, **options)  # the test's measure, pixel by pixel
        axes[0, col].imshow(image[CROP], interpolation="nearest")
        axes[0, col].set_title(label)
        shown = axes[1, col].imshow(err[CROP], vmin=0.0, vmax=0.12, cmap="magma", interpolation="nearest")
        axes[1, col].set_title(f"error, max {np.nanmax(err):.3f}")
        for ax in axes[:, col]:
            ax.set_xticks([])
            ax.set_yticks([])
    fig.colorbar(shown, ax=axes[1, :].tolist(), shrink=0.8, label="coverage error (issue 5 asks <= 0.02)")
    fig.suptitle(f"Box turned {POSE[3]} rad at {W}x{H}, front camera (crop); silhouette pixels away from corners")
    out = Path(__file__).with_name("coverage_modes.png")
    fig.savefig(out, dpi=110, bbox_inches="tight")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
