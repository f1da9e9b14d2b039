"""Cache of processed maps: a `.npz` of the `RoadMap` fields keyed by source sha256 and a version.

The folder is ``$PICTURA_CACHE`` if set, else ``$XDG_CACHE_HOME/pictura``, else
``~/.cache/pictura``. Nothing is ever written next to the source. A cache that cannot be
read or written is skipped (the map is rebuilt), never trusted half-written: files are written
to a temporary name and renamed.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

import numpy as np

from pictura.maps.roadmap import RoadMap


def cache_dir() -> Path:
    """The cache folder (not created here)."""
    env = os.environ.get("PICTURA_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "pictura"


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cache_path(path: str | Path, version: str) -> Path:
    """Where the processed form of ``path`` under format ``version`` lives."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(version))
    return cache_dir() / f"{Path(path).stem}-{safe}-{file_sha256(path)[:32]}.npz"


def save_road_map(road_map: RoadMap, target: Path) -> None:
    arrays = {f.name: getattr(road_map, f.name) for f in fields(road_map) if f.name != "name"}
    arrays["name"] = np.array(road_map.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_road_map_npz(source: Path) -> RoadMap:
    with np.load(source, allow_pickle=False) as data:
        kwargs = {f.name: data[f.name] for f in fields(RoadMap) if f.name != "name"}
        name = str(data["name"])
    road_map = RoadMap(name=name, **kwargs)
    road_map.validate()
    return road_map


def cached(path: str | Path, version: str, build: Callable[[], RoadMap]) -> RoadMap:
    """Return the cached `RoadMap` for (``path`` contents, ``version``), building and storing it if absent."""
    target = cache_path(path, version)
    if target.is_file():
        try:
            return load_road_map_npz(target)
        except (OSError, ValueError, KeyError):
            pass  # unreadable or stale layout: rebuild below and overwrite
    road_map = build()
    try:
        save_road_map(road_map, target)
    except OSError:
        pass  # read-only or full cache: the map is still correct, only the next load is slower
    return road_map
