"""Map sources: one string names a map everywhere (configs, CLI, benchmarks).

- ``procedural:seed=N[,key=value...]``  the embedded procedural town generator
- ``carla:Town01`` .. ``carla:Town10HD``  resolved under the data root (``<root>/carla/TownNN.xodr``)
- a path to an OpenDRIVE ``.xodr`` file
- a path to a Waymo Open Motion ``.tfrecord`` (also Waymo's shard names,
  ``validation.tfrecord-00000-of-00150``) or a GPUDrive-style ``.json`` scenario; a multi-record
  file loads its first scene (`pictura.maps.womd.index` reads them all)

The data root is ``$PICTURA_DATA`` if set, else ``../shared/data`` beside the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

from pictura.maps.roadmap import RoadMap, Scenario
from pictura.maps.womd.tfrecord import womd_file_kind

CARLA_TOWNS = ("Town01", "Town02", "Town03", "Town04", "Town05", "Town06", "Town07", "Town10HD")


def data_root() -> Path:
    """The folder holding ``carla/`` and ``womd/``; a clear error if it cannot be found."""
    env = os.environ.get("PICTURA_DATA")
    if env:
        root = Path(env).expanduser()
        if not root.is_dir():
            raise FileNotFoundError(f"PICTURA_DATA={env!r} is not a folder")
        return root
    root = Path(__file__).resolve().parents[2].parent / "shared" / "data"
    if not root.is_dir():
        raise FileNotFoundError(
            f"no data root: set PICTURA_DATA to the folder holding carla/ and womd/ (looked for {root})"
        )
    return root


def _parse_kwargs(spec: str, source: str) -> dict[str, int | float | str]:
    out: dict[str, int | float | str] = {}
    for item in filter(None, spec.split(",")):
        if "=" not in item:
            raise ValueError(f"map source {source!r}: expected key=value, got {item!r}")
        key, value = item.split("=", 1)
        for cast in (int, float):
            try:
                out[key.strip()] = cast(value)
                break
            except ValueError:
                continue
        else:
            out[key.strip()] = value.strip()
    return out


def load(source: str) -> RoadMap | Scenario:
    """Load a map source string into a `RoadMap` (maps) or a `Scenario` (logged scenes)."""
    if not isinstance(source, str) or not source:
        raise ValueError(f"map source must be a non-empty string, got {source!r}")
    if source.startswith("procedural:") or source == "procedural":
        from pictura.maps.procedural import generate

        return generate(**_parse_kwargs(source.partition(":")[2], source))
    if source.startswith("carla:"):
        town = source.split(":", 1)[1]
        if town not in CARLA_TOWNS:
            raise ValueError(f"unknown CARLA town {town!r} in map source {source!r}; known: {', '.join(CARLA_TOWNS)}")
        path = data_root() / "carla" / f"{town}.xodr"
        if not path.is_file():
            raise FileNotFoundError(f"map source {source!r}: {path} does not exist")
        return _load_path(path)
    path = Path(source).expanduser()
    if path.suffix == ".xodr" or womd_file_kind(path) is not None:
        if not path.is_file():
            raise FileNotFoundError(f"map source {source!r}: no such file")
        return _load_path(path)
    raise ValueError(
        f"unknown map source {source!r}: use 'procedural:seed=N', 'carla:TownNN', or a .xodr, .tfrecord, "
        "*.tfrecord-NNNNN-of-NNNNN or .json path"
    )


def _load_path(path: Path) -> RoadMap | Scenario:
    if path.suffix == ".xodr":
        from pictura.maps.opendrive import read_opendrive

        return read_opendrive(path)
    if womd_file_kind(path) == "tfrecord":
        from pictura.maps.womd import read_womd_tfrecord

        return read_womd_tfrecord(path)
    from pictura.maps.womd import read_gpudrive_json

    return read_gpudrive_json(path)


def load_road_map(source: str) -> RoadMap:
    """Like `load`, but always the `RoadMap` (a scenario's map for scenario sources)."""
    loaded = load(source)
    return loaded.road_map if isinstance(loaded, Scenario) else loaded
