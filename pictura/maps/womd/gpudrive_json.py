"""Read a GPUDrive-style JSON scene (WOMD converted by GPUDrive / Nocturne tooling).

Layout (what the reader relies on)::

    {"scenario_id": str, "name": str,
     "objects": [{"id": int (optional: the object's index), "type": "vehicle"|"pedestrian"|"cyclist"|...,
                  "position": [{"x","y","z"}] * T, "velocity": [{"x","y"}] * T,
                  "heading": [float] * T, "valid": [bool] * T,
                  "length", "width", "height": float, ...}],
     "roads": [{"id": int, "type": "lane"|"road_edge"|"road_line"|"stop_sign"|"crosswalk"|
                "speed_bump"|"driveway", "map_element_id": int, "geometry": [{"x","y","z"}]}],
     "tl_states": {"<lane id>": {"state": [str], "x", "y", "z": [float], "time_index": [int]}},
     "metadata": {"sdc_track_index": int, "tracks_to_predict": [{"track_index": int}], ...}}

Accepted variants of older exports: objects without ``id`` (their index), points without ``z``
when no point of the file has one (z = 0), ``tl_states`` absent, null or ``[]`` (no lights) and
its entries without ``z``, ``metadata``, road ``id`` and ``map_element_id`` absent. A missing
``height`` is refused (no unambiguous default). ``-10000`` in a position marks an invalid sample, as does ``valid: false``. ``map_element_id``
uses the Waymax/GPUDrive ``MapElementIds`` numbering (lane types 0..3, road lines 5..13 = proto
type + 5, road edges 14..16 = proto type + 14). The JSON drops WOMD's lane graph, its speed limits
and the lanes a stop sign controls: the graph is rebuilt from coincident lane endpoints (exactly
WOMD's graph, see `infer_lane_graph`), speed limits are 0 (none given) and stop signs give signs
but no stop lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE, LIGHT_OFF, Scenario
from pictura.maps.womd.features import (
    ROAD_EDGE_TYPE_MAX,
    ROAD_LINE_TYPE_MAX,
    SIGNAL_STATE_TO_LIGHT,
    Lane,
    MapFeatures,
    Polyline,
    SignalLog,
    StopSign,
    build_road_map,
    infer_lane_graph,
)
from pictura.maps.womd.scenario import WOMD_DT

INVALID_VALUE = -10000.0
"""GPUDrive's marker for a missing sample."""

OBJECT_TYPE_TO_AGENT = {"vehicle": AGENT_VEHICLE, "pedestrian": AGENT_PEDESTRIAN, "cyclist": AGENT_CYCLIST}

# GPUDrive tl_states strings = map.proto TrafficSignalLaneState.State names, lower case, no prefix.
SIGNAL_NAME_TO_STATE = {
    "unknown": 0,
    "arrow_stop": 1,
    "arrow_caution": 2,
    "arrow_go": 3,
    "stop": 4,
    "caution": 5,
    "go": 6,
    "flashing_stop": 7,
    "flashing_caution": 8,
}

# MapElementIds offsets: road-line / road-edge proto type = map_element_id - offset.
ROAD_LINE_ID_OFFSET = 5
ROAD_EDGE_ID_OFFSET = 14

_OBJECT_ARRAYS = ("position", "velocity", "heading", "valid")
_OBJECT_SCALARS = ("type", "length", "width", "height")


class _ZUse:
    """Which point lists carried ``z`` and which did not: a file must be all 3-D or all 2-D
    (2-D exports, e.g. Nocturne's, put everything at z = 0; a mix would float one kind of
    element above the other)."""

    def __init__(self) -> None:
        self.with_z: str | None = None
        self.without_z: str | None = None

    def note(self, has_z: bool, where: str) -> None:
        if has_z:
            self.with_z = self.with_z or where
        else:
            self.without_z = self.without_z or where
        if self.with_z and self.without_z:
            raise ValueError(
                f"{self.without_z}: points without 'z' in a file whose other points have it ({self.with_z})"
            )


def _point_array(items: object, where: str, z: bool = True, z_use: _ZUse | None = None) -> np.ndarray:
    """A list of {"x","y"[,"z"]} dicts -> (n, 3) or (n, 2) float64; ValueError naming ``where``.

    With ``z``, a list whose points all lack "z" gives z = 0 (noted in ``z_use``)."""
    if not isinstance(items, list):
        raise ValueError(f"{where}: expected a list of points, got {type(items).__name__}")
    has_z = z and bool(items) and isinstance(items[0], dict) and "z" in items[0]
    keys = ("x", "y", "z") if has_z else ("x", "y")
    try:
        xy = np.array([[float(p[k]) for k in keys] for p in items], np.float64).reshape(len(items), len(keys))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: every point needs numeric {', '.join(keys)} ({exc!r})") from exc
    if z and not has_z:
        if any(isinstance(p, dict) and "z" in p for p in items):
            raise ValueError(f"{where}: some points have 'z' and some do not")
        if z_use is not None and items:
            z_use.note(False, where)
        return np.concatenate([xy, np.zeros((len(items), 1))], axis=1)
    if z_use is not None and has_z:
        z_use.note(True, where)
    return xy


def _read_objects(objects: list, where: str, z_use: _ZUse) -> dict[str, np.ndarray]:
    n = len(objects)
    steps = None
    out = {
        "id": np.zeros(n, np.int64),
        "type": np.full(n, -1, np.int32),
        "position": None,
        "heading": None,
        "velocity": None,
        "valid": None,
        "size": np.zeros((n, 3), np.float32),
    }
    for i, obj in enumerate(objects):
        here = f"{where}: objects[{i}]"
        if not isinstance(obj, dict):
            raise ValueError(f"{here}: expected an object, got {type(obj).__name__}")
        missing = [k for k in _OBJECT_ARRAYS + _OBJECT_SCALARS if k not in obj]
        if missing:
            raise ValueError(f"{here}: missing {missing}")
        # Older exports (Nocturne's) carry no ids: the object's index is stable within the file.
        object_id = obj.get("id", i)
        here = f"{here} (id {object_id})"
        lengths = {k: len(obj[k]) if isinstance(obj[k], list) else None for k in _OBJECT_ARRAYS}
        if None in lengths.values():
            raise ValueError(f"{here}: {[k for k, v in lengths.items() if v is None]} must be lists")
        if len(set(lengths.values())) != 1:
            raise ValueError(f"{here}: arrays of inconsistent length {lengths}")
        t = lengths["position"]
        if steps is None:
            steps = t
            out["position"] = np.zeros((n, t, 3), np.float32)
            out["heading"] = np.zeros((n, t), np.float32)
            out["velocity"] = np.zeros((n, t, 2), np.float32)
            out["valid"] = np.zeros((n, t), bool)
        elif t != steps:
            raise ValueError(f"{here}: {t} steps, objects[0] has {steps}")
        pos = _point_array(obj["position"], f"{here}: position", z_use=z_use)
        vel = _point_array(obj["velocity"], f"{here}: velocity", z=False)
        try:
            heading = np.array(obj["heading"], np.float64).reshape(t)
            flags = np.array([bool(v) for v in obj["valid"]], bool)
            size = [float(obj[k]) for k in ("length", "width", "height")]
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{here}: heading, valid, length, width and height must be numbers ({exc})"
            ) from exc
        # A sample counts only if flagged valid and not carrying GPUDrive's -10000 marker.
        valid = flags & np.all(pos[:, :2] != INVALID_VALUE, axis=1)
        try:
            out["id"][i] = int(object_id)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{here}: 'id' must be an integer ({exc})") from exc
        out["type"][i] = OBJECT_TYPE_TO_AGENT.get(obj["type"], -1)
        out["position"][i][valid] = pos[valid]
        out["heading"][i][valid] = heading[valid]
        out["velocity"][i][valid] = vel[valid]
        out["valid"][i] = valid
        out["size"][i] = size
    if steps is None:  # no objects at all: keep the conventional 91 steps so shapes stay (0, T)
        steps = 91
        out["position"] = np.zeros((0, steps, 3), np.float32)
        out["heading"] = np.zeros((0, steps), np.float32)
        out["velocity"] = np.zeros((0, steps, 2), np.float32)
        out["valid"] = np.zeros((0, steps), bool)
    return out


def _read_roads(roads: list, where: str, z_use: _ZUse) -> MapFeatures:
    out = MapFeatures()
    for i, road in enumerate(roads):
        here = f"{where}: roads[{i}]"
        if not isinstance(road, dict) or "geometry" not in road or "type" not in road:
            raise ValueError(f"{here}: needs 'geometry' and 'type'")
        try:
            rid = int(road.get("id", i))
            element = int(road.get("map_element_id", -1))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{here}: 'id' and 'map_element_id' must be integers ({exc})") from exc
        here = f"{here} (id {rid}, {road['type']})"
        pts = _point_array(road["geometry"], f"{here}: geometry", z_use=z_use)
        if len(pts) == 0:
            raise ValueError(f"{here}: empty geometry")
        kind = road["type"]
        if kind == "lane":
            lane_type = element if 0 <= element <= 3 else 0
            out.lanes.append(Lane(rid, lane_type, 0.0, pts))
        elif kind == "road_line":
            line_type = element - ROAD_LINE_ID_OFFSET
            out.road_lines.append(
                Polyline(rid, line_type if 0 <= line_type <= ROAD_LINE_TYPE_MAX else 0, pts)
            )
        elif kind == "road_edge":
            edge_type = element - ROAD_EDGE_ID_OFFSET
            out.road_edges.append(
                Polyline(rid, edge_type if 0 <= edge_type <= ROAD_EDGE_TYPE_MAX else 0, pts)
            )
        elif kind == "stop_sign":
            out.stop_signs.append(StopSign(rid, [], pts[0]))
        elif kind == "crosswalk":
            out.crosswalks.append(Polyline(rid, 0, pts))
        elif kind == "speed_bump":
            out.speed_bumps.append(Polyline(rid, 0, pts))
        elif kind == "driveway":
            out.driveways.append(Polyline(rid, 0, pts))
        else:
            raise ValueError(f"{here}: unknown road type {kind!r}")
    return out


def _read_signals(tl_states: dict, steps: int, where: str) -> SignalLog:
    if tl_states is None or tl_states == []:  # no lights logged: absent, null or an empty list
        tl_states = {}
    if not isinstance(tl_states, dict):
        raise ValueError(f"{where}: tl_states must be an object keyed by lane id")
    lane_ids, stop_points = [], []
    states = np.full((steps, len(tl_states)), LIGHT_OFF, np.int32)
    for col, (key, tl) in enumerate(tl_states.items()):
        here = f"{where}: tl_states[{key!r}]"
        need = ("state", "x", "y", "time_index")
        if not isinstance(tl, dict) or any(k not in tl for k in need):
            raise ValueError(f"{here}: needs {list(need)} (and 'z' unless the file is 2-D)")
        if "z" in tl:
            need += ("z",)
        try:
            int(key)
        except ValueError:
            raise ValueError(f"{here}: the key must be a lane id (an integer)") from None
        lengths = {k: len(tl[k]) for k in need}
        if len(set(lengths.values())) != 1 or lengths["state"] == 0:
            raise ValueError(f"{here}: arrays of inconsistent or zero length {lengths}")
        for name, t in zip(tl["state"], tl["time_index"], strict=True):
            if name not in SIGNAL_NAME_TO_STATE:
                raise ValueError(f"{here}: unknown state {name!r}")
            if not 0 <= int(t) < steps:
                raise ValueError(f"{here}: time_index {t} outside 0..{steps - 1}")
            states[int(t), col] = SIGNAL_STATE_TO_LIGHT[SIGNAL_NAME_TO_STATE[name]]
        lane_ids.append(int(key))
        stop_points.append([float(tl["x"][0]), float(tl["y"][0]), float(tl["z"][0]) if "z" in tl else 0.0])
    return SignalLog(lane_ids, np.array(stop_points, np.float64).reshape(-1, 3), states)


def read_gpudrive_json(path: str | Path) -> Scenario:
    """Read one GPUDrive-style JSON scene into a `Scenario` (see the module docstring).

    Raises ``ValueError`` naming the file and the offending element for malformed input.
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: top level must be an object")
    for key in ("objects", "roads"):
        if key not in doc:
            raise ValueError(f"{path}: missing {key!r}")
        if not isinstance(doc[key], list):
            raise ValueError(f"{path}: {key!r} must be a list")
    where = str(path)
    z_use = _ZUse()
    tracks = _read_objects(doc["objects"], where, z_use)
    steps = tracks["valid"].shape[1]
    features = _read_roads(doc["roads"], where, z_use)
    infer_lane_graph(features.lanes)
    signals = _read_signals(doc.get("tl_states"), steps, where)
    lane_ids = {lane.id for lane in features.lanes}
    unknown = [i for i in signals.lane_ids if i not in lane_ids]
    if unknown:
        raise ValueError(f"{path}: tl_states name lanes {unknown} that are not 'lane' roads")
    scenario_id = str(doc.get("scenario_id") or doc.get("name") or path.stem)
    road_map, lane_chunks = build_road_map(f"womd:{scenario_id}", features, signals, str(path))

    meta = doc.get("metadata", {}) or {}
    n = len(tracks["id"])
    sdc = int(meta.get("sdc_track_index", -1))
    if not -1 <= sdc < n:
        raise ValueError(f"{path}: metadata.sdc_track_index {sdc} outside 0..{n - 1}")
    try:
        to_predict = [int(r["track_index"]) for r in meta.get("tracks_to_predict", [])]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path}: metadata.tracks_to_predict entries need 'track_index'") from exc
    bad = [k for k in to_predict if not 0 <= k < n]
    if bad:
        raise ValueError(f"{path}: metadata.tracks_to_predict holds indices {bad} outside 0..{n - 1}")
    return Scenario(
        road_map=road_map,
        scenario_id=scenario_id,
        dt=WOMD_DT,
        track_id=tracks["id"],
        track_type=tracks["type"],
        track_position=tracks["position"],
        track_heading=tracks["heading"],
        track_velocity=tracks["velocity"],
        track_size=tracks["size"],
        track_valid=tracks["valid"],
        sdc_index=sdc,
        tracks_to_predict=np.asarray(to_predict, np.int32),
        light_lane=np.array([lane_chunks[i][0] for i in signals.lane_ids], np.int32),
        light_state_log=signals.states,
    )
