"""Command line: ``python -m pictura <command>``.

``fit | validate | test | predict`` go to LightningCLI (`pictura.modules.cli`); the tools
(``map-info``, ``render``, ``evaluate``, ``video``, ``probe``, ``curves``) each live in `pictura.tools`
and take ``--help``.
"""

from __future__ import annotations

import importlib
import sys

LIGHTNING_COMMANDS = ("fit", "validate", "test", "predict")
TOOLS = {
    "map-info": ("pictura.tools.map_info", "print map statistics or write GeoJSON"),
    "render": ("pictura.tools.render_scene", "render a hand-written scene or a live world to PNG"),
    "evaluate": ("pictura.tools.evaluate", "evaluate policies with the paper's protocols (App. C)"),
    "video": ("pictura.tools.video", "GIF/MP4 of one agent's camera views beside a top-down overview"),
    "probe": ("pictura.tools.probe", "counterfactual grounding probes: removal | pedestrian | takeover"),
    "curves": ("pictura.tools.curves", "learning curves (PNG + table) from runs' density-sweep records"),
}


def _usage() -> str:
    lines = ["usage: python -m pictura <command> [...]", "", "training (LightningCLI):"]
    lines += [f"  {c}" for c in LIGHTNING_COMMANDS]
    lines += ["", "tools:"] + [f"  {name:<10} {desc}" for name, (_, desc) in TOOLS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return
    command = argv[0]
    if command in LIGHTNING_COMMANDS or command.startswith("--"):
        from pictura.modules.cli import run_lightning_cli

        run_lightning_cli(argv)
        return
    if command not in TOOLS:
        raise SystemExit(f"unknown command {command!r}\n\n{_usage()}")
    module = importlib.import_module(TOOLS[command][0])
    module.main(argv[1:])
