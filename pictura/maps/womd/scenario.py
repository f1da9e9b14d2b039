"""Decode a WOMD ``Scenario`` protobuf record into a Pictura `Scenario`.

Field numbers come from the public Waymo Open Dataset protos (``scenario.proto`` and
``map.proto``, v1.1+), checked against a real record: decoding the sample file generically gives
83 tracks of 91 states, 91 dynamic map states and 301 map features (199 lanes).
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE, LIGHT_OFF, Scenario
from pictura.maps.womd import protobuf as pb
from pictura.maps.womd.features import (
    SIGNAL_STATE_TO_LIGHT,
    Lane,
    MapFeatures,
    Polyline,
    SignalLog,
    StopSign,
    build_road_map,
)
from pictura.maps.womd.tfrecord import read_tfrecord

# scenario.proto: message Scenario
SCENARIO_TIMESTAMPS_SECONDS = 1
SCENARIO_TRACKS = 2
SCENARIO_OBJECTS_OF_INTEREST = 4
SCENARIO_ID = 5
SCENARIO_SDC_TRACK_INDEX = 6
SCENARIO_DYNAMIC_MAP_STATES = 7
SCENARIO_MAP_FEATURES = 8
SCENARIO_CURRENT_TIME_INDEX = 10
SCENARIO_TRACKS_TO_PREDICT = 11
# scenario.proto: message Track
TRACK_ID = 1
TRACK_OBJECT_TYPE = 2
TRACK_STATES = 3
# scenario.proto: message ObjectState (doubles: center_*; floats: the rest; bool valid)
STATE_CENTER_X = 2
STATE_CENTER_Y = 3
STATE_CENTER_Z = 4
STATE_LENGTH = 5
STATE_WIDTH = 6
STATE_HEIGHT = 7
STATE_HEADING = 8
STATE_VELOCITY_X = 9
STATE_VELOCITY_Y = 10
STATE_VALID = 11
# scenario.proto: message RequiredPrediction
REQUIRED_PREDICTION_TRACK_INDEX = 1
REQUIRED_PREDICTION_DIFFICULTY = 2
# scenario.proto: message DynamicMapState
DYNAMIC_MAP_STATE_LANE_STATES = 1
# map.proto: message TrafficSignalLaneState
SIGNAL_LANE = 1
SIGNAL_STATE = 2
SIGNAL_STOP_POINT = 3
# map.proto: message MapFeature (oneof feature_data)
FEATURE_ID = 1
FEATURE_LANE = 3
FEATURE_ROAD_LINE = 4
FEATURE_ROAD_EDGE = 5
FEATURE_STOP_SIGN = 7
FEATURE_CROSSWALK = 8
FEATURE_SPEED_BUMP = 9
FEATURE_DRIVEWAY = 10
# map.proto: message LaneCenter. NOTE entry/exit are 9/10 in the public map.proto (not 6/7).
LANE_SPEED_LIMIT_MPH = 1
LANE_TYPE = 2
LANE_INTERPOLATING = 3
LANE_POLYLINE = 8
LANE_ENTRY_LANES = 9
LANE_EXIT_LANES = 10
LANE_LEFT_BOUNDARIES = 13
LANE_RIGHT_BOUNDARIES = 14
# map.proto: message MapPoint
POINT_X, POINT_Y, POINT_Z = 1, 2, 3
# map.proto: RoadLine / RoadEdge share the layout {type = 1, polyline = 2}
LINE_TYPE = 1
LINE_POLYLINE = 2
# map.proto: StopSign
STOP_SIGN_LANE = 1
STOP_SIGN_POSITION = 2
# map.proto: Crosswalk / SpeedBump / Driveway share {polygon = 1}
POLYGON = 1

# scenario.proto Track.ObjectType -> AGENT_* (TYPE_UNSET 0 and TYPE_OTHER 4 -> -1)
OBJECT_TYPE_TO_AGENT = {1: AGENT_VEHICLE, 2: AGENT_PEDESTRIAN, 3: AGENT_CYCLIST}

WOMD_DT = 0.1  # s: WOMD logs at 10 Hz

# The usual MapPoint encoding: three tagged doubles, tags 0x09, 0x11, 0x19 (fields 1..3, wire 1).
_POINT_STRUCT = struct.Struct("<xdxdxd")


def _map_point(buf: bytes) -> tuple[float, float, float]:
    if len(buf) == 27 and buf[0] == 0x09 and buf[9] == 0x11 and buf[18] == 0x19:
        return _POINT_STRUCT.unpack(buf)  # fast path: 30k points per scene
    f = pb.parse_message(buf)
    return (pb.get_double(f, POINT_X, "x"), pb.get_double(f, POINT_Y, "y"), pb.get_double(f, POINT_Z, "z"))


def _points(fields: pb.Fields, number: int, name: str) -> np.ndarray:
    raw = pb.repeated_messages(fields, number, name)
    return np.array([_map_point(b) for b in raw], np.float64).reshape(len(raw), 3)


def _decode_map_features(raw_features: list[bytes], where: str) -> MapFeatures:
    out = MapFeatures()
    for i, raw in enumerate(raw_features):
        f = pb.parse_message(raw)
        fid = pb.get_int(f, FEATURE_ID, "MapFeature.id")
        here = f"{where}: map feature {i} (id {fid})"
        kinds = [k for k in (3, 4, 5, 6, 7, 8, 9, 10) if k in f]
        if len(kinds) != 1:
            raise ValueError(f"{here}: expected exactly one feature kind, found field numbers {kinds}")
        (kind,) = kinds
        body = pb.get_message(f, kind, "MapFeature.feature_data")
        if kind == FEATURE_LANE:
            poly = _points(body, LANE_POLYLINE, "LaneCenter.polyline")
            if len(poly) == 0:
                raise ValueError(f"{here}: lane has an empty polyline")
            out.lanes.append(
                Lane(
                    id=fid,
                    lane_type=pb.get_int(body, LANE_TYPE, "LaneCenter.type"),
                    speed_limit_mph=pb.get_double(body, LANE_SPEED_LIMIT_MPH, "LaneCenter.speed_limit_mph"),
                    polyline=poly,
                    entry_lanes=pb.repeated_ints(body, LANE_ENTRY_LANES, "LaneCenter.entry_lanes"),
                    exit_lanes=pb.repeated_ints(body, LANE_EXIT_LANES, "LaneCenter.exit_lanes"),
                )
            )
        elif kind in (FEATURE_ROAD_LINE, FEATURE_ROAD_EDGE):
            poly = _points(body, LINE_POLYLINE, "polyline")
            if len(poly) == 0:
                raise ValueError(f"{here}: empty polyline")
            target = out.road_lines if kind == FEATURE_ROAD_LINE else out.road_edges
            target.append(Polyline(fid, pb.get_int(body, LINE_TYPE, "type"), poly))
        elif kind == FEATURE_STOP_SIGN:
            pos = pb.repeated_messages(body, STOP_SIGN_POSITION, "StopSign.position")
            if not pos:
                raise ValueError(f"{here}: stop sign has no position")
            out.stop_signs.append(
                StopSign(
                    fid,
                    pb.repeated_ints(body, STOP_SIGN_LANE, "StopSign.lane"),
                    np.array(_map_point(pos[-1])),
                )
            )
        elif kind in (FEATURE_CROSSWALK, FEATURE_SPEED_BUMP, FEATURE_DRIVEWAY):
            target = {FEATURE_CROSSWALK: out.crosswalks, FEATURE_SPEED_BUMP: out.speed_bumps}.get(
                kind, out.driveways
            )
            target.append(Polyline(fid, 0, _points(body, POLYGON, "polygon")))
        else:
            raise ValueError(f"{here}: unknown feature kind (field number {kind})")
    return out


def _decode_tracks(raw_tracks: list[bytes], steps: int, where: str) -> dict[str, np.ndarray]:
    n = len(raw_tracks)
    track_id = np.zeros(n, np.int64)
    track_type = np.full(n, -1, np.int32)
    # Per state: x, y, z, length, width, height, heading, vx, vy (invalid states stay zero).
    state = np.zeros((n, steps, 9), np.float64)
    valid = np.zeros((n, steps), bool)
    doubles = (STATE_CENTER_X, STATE_CENTER_Y, STATE_CENTER_Z)
    floats = (STATE_LENGTH, STATE_WIDTH, STATE_HEIGHT, STATE_HEADING, STATE_VELOCITY_X, STATE_VELOCITY_Y)
    for i, raw in enumerate(raw_tracks):
        f = pb.parse_message(raw)
        track_id[i] = pb.get_int(f, TRACK_ID, "Track.id")
        track_type[i] = OBJECT_TYPE_TO_AGENT.get(pb.get_int(f, TRACK_OBJECT_TYPE, "Track.object_type"), -1)
        states = pb.repeated_messages(f, TRACK_STATES, "Track.states")
        if len(states) != steps:
            raise ValueError(
                f"{where}: track {i} (id {track_id[i]}) has {len(states)} states, timestamps_seconds has {steps}"
            )
        for t, raw_state in enumerate(states):
            s = pb.parse_message(raw_state)
            if not pb.get_int(s, STATE_VALID, "ObjectState.valid"):
                continue
            valid[i, t] = True
            for k, num in enumerate(doubles):
                state[i, t, k] = pb.get_double(s, num, "ObjectState.center")
            for k, num in enumerate(floats):
                state[i, t, 3 + k] = pb.get_float(s, num, "ObjectState")
    return {"id": track_id, "type": track_type, "state": state, "valid": valid}


def _decode_signals(raw_steps: list[bytes], steps: int, where: str) -> SignalLog:
    lane_ids: list[int] = []
    stop_points: list[np.ndarray] = []
    column: dict[int, int] = {}
    per_step: list[list[tuple[int, int]]] = []
    for t, raw in enumerate(raw_steps):
        f = pb.parse_message(raw)
        entries = []
        for raw_lane in pb.repeated_messages(f, DYNAMIC_MAP_STATE_LANE_STATES, "DynamicMapState.lane_states"):
            s = pb.parse_message(raw_lane)
            lane = pb.get_int(s, SIGNAL_LANE, "TrafficSignalLaneState.lane")
            code = pb.get_int(s, SIGNAL_STATE, "TrafficSignalLaneState.state")
            if code not in SIGNAL_STATE_TO_LIGHT:
                raise ValueError(
                    f"{where}: dynamic map state {t}: lane {lane} has unknown signal state {code}"
                )
            if lane not in column:
                point = pb.repeated_messages(s, SIGNAL_STOP_POINT, "TrafficSignalLaneState.stop_point")
                if not point:
                    raise ValueError(f"{where}: dynamic map state {t}: lane {lane} has no stop_point")
                column[lane] = len(lane_ids)
                lane_ids.append(lane)
                stop_points.append(np.array(_map_point(point[-1])))
            entries.append((column[lane], SIGNAL_STATE_TO_LIGHT[code]))
        per_step.append(entries)
    if raw_steps and len(raw_steps) != steps:
        raise ValueError(f"{where}: {len(raw_steps)} dynamic_map_states, timestamps_seconds has {steps}")
    states = np.full((steps, len(lane_ids)), LIGHT_OFF, np.int32)
    for t, entries in enumerate(per_step):
        for col, light in entries:
            states[t, col] = light
    return SignalLog(lane_ids, np.array(stop_points, np.float64).reshape(-1, 3), states)


def decode_scenario(record: bytes, where: str = "record") -> tuple[Scenario, MapFeatures]:
    """One serialized ``Scenario`` message -> (`Scenario`, its raw `MapFeatures`)."""
    try:
        f = pb.parse_message(record)
        scenario_id = pb.get_string(f, SCENARIO_ID, "Scenario.scenario_id")
        timestamps = pb.repeated_doubles(f, SCENARIO_TIMESTAMPS_SECONDS, "Scenario.timestamps_seconds")
        steps = len(timestamps)
        if steps == 0:
            raise ValueError(f"{where}: Scenario.timestamps_seconds is empty")
        tracks = _decode_tracks(pb.repeated_messages(f, SCENARIO_TRACKS, "Scenario.tracks"), steps, where)
        features = _decode_map_features(
            pb.repeated_messages(f, SCENARIO_MAP_FEATURES, "Scenario.map_features"), where
        )
        signals = _decode_signals(
            pb.repeated_messages(f, SCENARIO_DYNAMIC_MAP_STATES, "Scenario.dynamic_map_states"), steps, where
        )
        sdc = pb.get_int(f, SCENARIO_SDC_TRACK_INDEX, "Scenario.sdc_track_index", default=-1)
        to_predict = [
            pb.get_int(pb.parse_message(r), REQUIRED_PREDICTION_TRACK_INDEX, "RequiredPrediction.track_index")
            for r in pb.repeated_messages(f, SCENARIO_TRACKS_TO_PREDICT, "Scenario.tracks_to_predict")
        ]
    except pb.WireError as exc:
        raise ValueError(f"{where}: malformed Scenario protobuf: {exc}") from exc
    n = len(tracks["id"])
    if not -1 <= sdc < n:
        raise ValueError(f"{where}: Scenario.sdc_track_index {sdc} outside 0..{n - 1}")
    bad = [k for k in to_predict if not 0 <= k < n]
    if bad:
        raise ValueError(f"{where}: Scenario.tracks_to_predict holds track indices {bad} outside 0..{n - 1}")
    dt = float(np.median(np.diff(timestamps))) if steps > 1 else WOMD_DT
    road_map, lane_chunks = build_road_map(f"womd:{scenario_id}", features, signals, where)
    for lane_id in signals.lane_ids:
        if lane_id not in lane_chunks:
            raise ValueError(f"{where}: traffic signal on lane {lane_id}, which is not a lane feature")
    state, valid = tracks["state"], tracks["valid"]
    scenario = Scenario(
        road_map=road_map,
        scenario_id=scenario_id,
        dt=round(dt, 3),
        track_id=tracks["id"],
        track_type=tracks["type"],
        track_position=state[:, :, 0:3].astype(np.float32),
        track_heading=state[:, :, 6].astype(np.float32),
        track_velocity=state[:, :, 7:9].astype(np.float32),
        track_size=_track_size(state[:, :, 3:6], valid),
        track_valid=valid,
        sdc_index=sdc,
        tracks_to_predict=np.asarray(to_predict, np.int32),
        light_lane=np.array([lane_chunks[i][0] for i in signals.lane_ids], np.int32),
        light_state_log=signals.states,
    )
    return scenario, features


def _track_size(size: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(N, 3) length, width, height: each track's first valid logged box (zeros if never valid).

    WOMD logs a box per step; the boxes of one object barely vary, and the first valid one is
    what log replay spawns with.
    """
    first = np.argmax(valid, axis=1)
    out = size[np.arange(len(size)), first]
    out[~valid.any(axis=1)] = 0.0
    return out.astype(np.float32)


def read_womd_tfrecord_all(path: str | Path) -> list[Scenario]:
    """Every ``Scenario`` record of a WOMD ``.tfrecord`` file, in file order."""
    path = Path(path)
    records = read_tfrecord(path)
    if not records:
        raise ValueError(f"{path}: no records")
    return [decode_scenario(r, f"{path}: record {i}")[0] for i, r in enumerate(records)]


def read_womd_tfrecord(path: str | Path) -> Scenario:
    """The first ``Scenario`` of a WOMD ``.tfrecord`` file (every record's CRCs are still checked)."""
    path = Path(path)
    records = read_tfrecord(path)
    if not records:
        raise ValueError(f"{path}: no records")
    return decode_scenario(records[0], f"{path}: record 0")[0]
