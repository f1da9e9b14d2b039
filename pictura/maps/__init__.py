"""Map sources -> `RoadMap` / `Scenario` (NumPy only: no torch, no warp)."""

from pictura.maps.roadmap import RoadMap, Scenario
from pictura.maps.sources import CARLA_TOWNS, data_root, load, load_road_map

__all__ = ["CARLA_TOWNS", "RoadMap", "Scenario", "data_root", "load", "load_road_map"]
