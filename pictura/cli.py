"""Command line: ``python -m pictura <command>``.

``fit | validate | test | predict`` go to LightningCLI (`pictura.modules.cli`); a bad config
value, option, config file or checkpoint ends them with one line naming it and exit code 2
(``--debug``: the traceback instead). The tools
(``map-info``, ``render``, ``evaluate``, ``video``, ``probe``, ``curves``) each live in `pictura.tools`
and take ``--help``.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import traceback
from argparse import ArgumentError

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


CONFIG_ERRORS = (ValueError, TypeError, KeyError, OSError, ArgumentError)
"""What a bad config, option, file or checkpoint raises before training: reported in one line
(raised once training has started, they keep their traceback)."""


def one_line(err: BaseException) -> str:
    """The message of a config or setup error, in one line: the innermost error of its chain
    (jsonargparse wraps the one that names the field in several layers), with the class whose
    constructor refused a value and the config key jsonargparse was parsing."""
    chain, seen = [err], {id(err)}
    while (nxt := chain[-1].__cause__ or chain[-1].__context__) is not None and id(nxt) not in seen:
        chain.append(nxt)
        seen.add(id(nxt))
    ours = [e for e in chain if isinstance(e, CONFIG_ERRORS) and _raised_in_pictura(e)]
    inner = ours[0] if ours else chain[-1]
    message = " ".join(str(inner).split()) or type(inner).__name__
    owner = _constructor_owner(inner)
    keys = [m.group(1) for e in chain if (m := re.match(r'Parser key "([^"]+)"', str(e)))]
    if owner and not message.startswith(owner):
        message = f"{owner}: {message}"
    elif keys and keys[-1] not in message:
        message = f"{keys[-1]}: {message}"
    return message


def _raised_in_pictura(err: BaseException) -> bool:
    frames = traceback.extract_tb(err.__traceback__)
    return bool(frames) and f"{os.sep}pictura{os.sep}" in frames[-1].filename


def _constructor_owner(err: BaseException) -> str | None:
    """The class whose ``__init__`` raised ``err`` (innermost; not the CLI's own), if any."""
    from lightning.pytorch.cli import LightningCLI

    tb, owner = err.__traceback__, None
    while tb is not None:
        frame = tb.tb_frame
        self = frame.f_locals.get("self") if frame.f_code.co_name == "__init__" else None
        if self is not None and not isinstance(self, LightningCLI):
            owner = type(self).__name__
        tb = tb.tb_next
    return owner


def check_config_files(argv: list[str]) -> None:
    """Every ``-c`` / ``--config`` file exists and is valid YAML; the error names the file."""
    import yaml

    for i, arg in enumerate(argv):
        if arg in ("-c", "--config") and i + 1 < len(argv):
            path = argv[i + 1]
        elif arg.startswith("--config="):
            path = arg.split("=", 1)[1]
        else:
            continue
        if not os.path.isfile(path):
            raise ValueError(f"config file {path}: no such file")
        try:
            with open(path) as f:
                yaml.safe_load(f)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            raise ValueError(f"config file {path}{where}: {getattr(err, 'problem', None) or err}") from None


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return
    command = argv[0]
    if command in LIGHTNING_COMMANDS or command.startswith("--"):
        from pictura.modules.cli import run_lightning_cli

        debug = "--debug" in argv
        argv = [a for a in argv if a != "--debug"]
        try:
            check_config_files(argv)
            run_lightning_cli(argv)
        except CONFIG_ERRORS as err:
            if debug or getattr(err, "during_training", False):  # a failure mid-run is no config error
                raise
            print(f"error: {one_line(err)}", file=sys.stderr)
            print("(python -m pictura ... --debug shows the traceback)", file=sys.stderr)
            raise SystemExit(2) from None
        return
    if command not in TOOLS:
        raise SystemExit(f"unknown command {command!r}\n\n{_usage()}")
    module = importlib.import_module(TOOLS[command][0])
    module.main(argv[1:])
