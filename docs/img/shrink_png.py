"""Store plots and maps under docs/img as 256-colour PNGs, so that docs/ stays small.

    python docs/img/shrink_png.py                 # every PNG here but the renderer's own pixels
    python docs/img/shrink_png.py a.png b.png     # these files

Matplotlib and map pictures hold few colours, so a median-cut palette of 256 keeps them
visually the same at about a third of the bytes. Images whose pixels are the renderer's output
(the camera views, whose antialiasing the docs discuss) are left exact.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image

HERE = Path(__file__).resolve().parent
EXACT = ("render_", "coverage_modes", "training_camera_video", "video_frame")
"""Name prefixes of the images left untouched: rendered camera pixels."""


def shrink(path: Path) -> tuple[int, int]:
    """Rewrite one PNG with a 256-colour palette; return (bytes before, bytes after)."""
    before = path.stat().st_size
    image = Image.open(path)
    if image.mode != "P":
        image = image.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT)
        image.save(path, "PNG", optimize=True)
    return before, path.stat().st_size


def main(argv: list[str]) -> None:
    paths = [Path(a) for a in argv] or sorted(p for p in HERE.glob("*.png") if not p.name.startswith(EXACT))
    for path in paths:
        before, after = shrink(path)
        print(f"{path.name}: {before:,} -> {after:,} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])
