"""OpenDRIVE (``.xodr``) importer: `read_opendrive(path) -> RoadMap`, cached by file hash.

Modules: ``reader`` (XML -> records), ``geometry`` (plan-view reference line), ``lanes``
(lane-section cross-sections), ``build`` (records -> `RoadMap`).
"""

from __future__ import annotations

from pathlib import Path

from pictura.maps.cache import cached
from pictura.maps.opendrive.build import LaneOrigin, build_road_map
from pictura.maps.roadmap import RoadMap

OPENDRIVE_FORMAT_VERSION = 3
"""Bump when the conversion changes so cached maps are rebuilt."""


def read_opendrive(path: str | Path, use_cache: bool = True) -> RoadMap:
    """Read an OpenDRIVE file into a `RoadMap`; processed maps are cached (see `pictura.maps.cache`)."""
    path = Path(path)
    if not use_cache:
        return build_road_map(path)[0]
    return cached(path, f"opendrive-{OPENDRIVE_FORMAT_VERSION}", lambda: build_road_map(path)[0])


__all__ = ["OPENDRIVE_FORMAT_VERSION", "LaneOrigin", "build_road_map", "read_opendrive"]
