"""The WOMD ``.tfrecord`` reader on the real sample record, and on corrupted copies of it."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from pictura.maps import load
from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE, MAX_LANE_CHUNK_M, Scenario
from pictura.maps.womd import decode_scenario, read_womd_tfrecord, read_womd_tfrecord_all
from pictura.maps.womd.features import infer_lane_graph
from tests.data import data_path


def _womd_file(*parts: str) -> Path:
    """A file under <data root>/womd (`tests.data.data_path`)."""
    return data_path("womd", *parts)


TFRECORD = ("tfrecord", "motion_data_one_scenario.tfrecord")


# ---- an independent, minimal reference decoder (no code shared with pictura.maps.womd) ---------


def _ref_fields(buf: bytes):
    """Yield (field, wire, value) of one protobuf message: the spec, written as plainly as possible."""
    i = 0

    def varint():
        nonlocal i
        shift = value = 0
        while True:
            b = buf[i]
            i += 1
            value |= (b & 127) << shift
            shift += 7
            if b < 128:
                return value

    while i < len(buf):
        key = varint()
        wire = key & 7
        if wire == 0:
            value = varint()
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        else:
            n = varint()
            value, i = buf[i : i + n], i + n
        yield key >> 3, wire, value


def _ref_record(path: Path) -> bytes:
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    return blob[12 : 12 + n]


def _ref_tracks(record: bytes):
    """Per track: id, type, and per state a dict field -> raw value (Scenario.tracks = 2)."""
    tracks = []
    for num, _, value in _ref_fields(record):
        if num != 2:
            continue
        track = {"states": []}
        for tnum, _, tval in _ref_fields(value):
            if tnum == 1:
                track["id"] = tval
            elif tnum == 2:
                track["type"] = tval
            elif tnum == 3:
                track["states"].append({s: v for s, _, v in _ref_fields(tval)})
        tracks.append(track)
    return tracks


@pytest.fixture(scope="module")
def tfrecord_path() -> Path:
    return _womd_file(*TFRECORD)


@pytest.fixture(scope="module")
def scene(tfrecord_path):
    return decode_scenario(_ref_record(tfrecord_path), str(tfrecord_path))


# ---- targets ----------------------------------------------------------------------------------


def test_tfrecord_counts(scene, tfrecord_path):
    scenario, features = scene
    assert isinstance(scenario, Scenario)
    assert len(scenario.track_id) == 83
    assert scenario.track_position.shape == (83, 91, 3)
    assert scenario.track_valid.shape == (83, 91)
    assert scenario.dt == pytest.approx(0.1)
    assert features.count == 301
    assert len(features.lanes) == 199
    # the same through the public entry points
    loaded = load(str(tfrecord_path))
    assert isinstance(loaded, Scenario) and loaded.scenario_id == scenario.scenario_id
    assert len(read_womd_tfrecord_all(tfrecord_path)) == 1


def test_logged_states_equal_raw_values_at_every_valid_step(scene, tfrecord_path):
    scenario, _ = scene
    ref = _ref_tracks(_ref_record(tfrecord_path))
    assert len(ref) == len(scenario.track_id)
    agent = {1: AGENT_VEHICLE, 2: AGENT_PEDESTRIAN, 3: AGENT_CYCLIST}
    checked = 0
    for i, track in enumerate(ref):
        assert scenario.track_id[i] == track["id"]
        assert scenario.track_type[i] == agent.get(track.get("type", 0), -1)
        assert len(track["states"]) == 91
        for t, s in enumerate(track["states"]):
            valid = bool(s.get(11, 0))
            assert scenario.track_valid[i, t] == valid
            if not valid:
                continue
            d = {k: struct.unpack("<d", s[k])[0] for k in (2, 3, 4) if k in s}
            f = {k: struct.unpack("<f", s[k])[0] for k in (8, 9, 10) if k in s}
            expect = np.array([d.get(2, 0.0), d.get(3, 0.0), d.get(4, 0.0)], np.float32)
            np.testing.assert_array_equal(scenario.track_position[i, t], expect)
            assert scenario.track_heading[i, t] == np.float32(f.get(8, 0.0))
            np.testing.assert_array_equal(
                scenario.track_velocity[i, t], np.float32([f.get(9, 0.0), f.get(10, 0.0)])
            )
            checked += 1
    assert checked == int(scenario.track_valid.sum()) > 0
    # goals: the last valid logged position
    last = [np.flatnonzero(v)[-1] if v.any() else -1 for v in scenario.track_valid]
    for i, t in enumerate(last):
        if t >= 0:
            np.testing.assert_array_equal(scenario.goal_position[i], scenario.track_position[i, t])


def test_road_map_from_womd_features(scene):
    scenario, features = scene
    rm = scenario.road_map
    rm.validate()
    assert rm.road_edge_count == len(features.road_edges) == 28
    assert rm.marking_count == len(features.road_lines) == 59
    yellow = sum(line.kind in (4, 5, 6, 7, 8) for line in features.road_lines)
    assert int((rm.marking_kind == 1).sum()) == yellow
    assert len(rm.crosswalk_points) == len(features.crosswalks) == 4
    assert len(rm.sign_position) == len(features.stop_signs)
    assert len(rm.wall_points) == 0
    # lanes: <= 10 m chunks whose total length is the WOMD lanes' total length, z kept
    seg, _ = rm.lane_segments()
    lengths = np.linalg.norm(seg[:, 1] - seg[:, 0], axis=1)
    per_chunk = np.bincount(_, weights=lengths, minlength=rm.lane_count)
    assert per_chunk.max() <= MAX_LANE_CHUNK_M + 1e-3
    womd_total = sum(np.linalg.norm(np.diff(lane.polyline, axis=0), axis=1).sum() for lane in features.lanes)
    assert lengths.sum() == pytest.approx(womd_total, rel=1e-5)
    assert np.ptp(rm.lane_points[:, 2]) > 0.5
    speed = {lane.speed_limit_mph for lane in features.lanes}
    assert set(np.round(rm.lane_speed_limit / 0.44704, 3)) == {round(s, 3) for s in speed}


def test_lane_graph_matches_womd_exit_lanes(scene):
    scenario, features = scene
    rm = scenario.road_map
    starts = {}
    ends = {}
    for lane in features.lanes:
        # the chunk that begins at the lane's first point / ends at its last point
        first = np.flatnonzero(
            np.all(np.isclose(rm.lane_points[rm.lane_offsets[:-1]], lane.polyline[0]), axis=1)
        )
        starts[lane.id] = set(first.tolist())
        last = np.flatnonzero(
            np.all(np.isclose(rm.lane_points[rm.lane_offsets[1:] - 1], lane.polyline[-1]), axis=1)
        )
        ends[lane.id] = set(last.tolist())
    for lane in features.lanes:
        exit_starts = set().union(*(starts[e] for e in lane.exit_lanes)) if lane.exit_lanes else set()
        succ = set().union(*(set(rm.successors(c).tolist()) for c in ends[lane.id]))
        assert exit_starts <= succ, lane.id
    # WOMD's graph is exactly "end point == start point": the rule the JSON reader rebuilds it with
    recorded = {lane.id: sorted(lane.exit_lanes) for lane in features.lanes}
    infer_lane_graph(features.lanes)
    assert {lane.id: sorted(lane.exit_lanes) for lane in features.lanes} == recorded


def test_stop_lines_and_signal_log(scene, tfrecord_path):
    scenario, features = scene
    rm = scenario.road_map
    # raw signal log (Scenario.dynamic_map_states = 7 -> lane_states = 1 -> lane 1, state 2)
    steps = []
    for num, _, value in _ref_fields(_ref_record(tfrecord_path)):
        if num == 7:
            lanes = []
            for _, _, ls in _ref_fields(value):
                d = {k: v for k, _, v in _ref_fields(ls)}
                lanes.append((d.get(1, 0), d.get(2, 0)))
            steps.append(lanes)
    assert len(steps) == 91
    lane_ids = list(dict.fromkeys(lane for step in steps for lane, _ in step))
    assert scenario.light_state_log.shape == (91, len(lane_ids)) == (91, 12)
    colour = {0: 3, 1: 0, 2: 1, 3: 2, 4: 0, 5: 1, 6: 2, 7: 0, 8: 1}  # state -> LIGHT_*
    for t, step in enumerate(steps):
        for lane, state in step:
            assert scenario.light_state_log[t, lane_ids.index(lane)] == colour[state]
    # stop lines: lane-wide (3.7 m), midpoint at the start of a signal- or sign-controlled lane
    controlled = set(lane_ids) | {lane for s in features.stop_signs for lane in s.lanes}
    lane_start = {lane.id: lane.polyline[0] for lane in features.lanes}
    assert len(controlled) == 20
    mids = rm.stop_line_points.mean(axis=1)
    width = np.linalg.norm(rm.stop_line_points[:, 1] - rm.stop_line_points[:, 0], axis=1)
    np.testing.assert_allclose(width, 3.7, atol=2e-3)  # float32 at ~8 km from the origin
    starts = np.array([lane_start[i] for i in controlled])
    dist = np.linalg.norm(mids[:, None, :2] - starts[None, :, :2], axis=2)
    assert np.all(dist.min(axis=1) < 0.05)  # every stop line sits where a controlled lane begins
    assert np.all(dist.min(axis=0) < 0.05)  # every controlled lane has a stop line (shared ones deduped)
    for k, chunk in enumerate(rm.stop_line_lane):  # the approach chunk ends at its stop line
        pts = rm.lane(chunk)
        assert min(np.linalg.norm(pts[-1, :2] - mids[k, :2]), np.linalg.norm(pts[0, :2] - mids[k, :2])) < 1.0
    assert np.all(rm.stop_line_light == -1)


# ---- bad input --------------------------------------------------------------------------------


def _masked_crc(data: bytes) -> int:
    from pictura.maps.womd.tfrecord import masked_crc32c

    return masked_crc32c(data)


def _frame(data: bytes) -> bytes:
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", _masked_crc(header)) + data + struct.pack("<I", _masked_crc(data))


def test_corrupt_length_crc(tfrecord_path, tmp_path):
    blob = bytearray(tfrecord_path.read_bytes())
    blob[9] ^= 0x01  # inside the length CRC
    bad = tmp_path / "bad_length_crc.tfrecord"
    bad.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match=r"bad_length_crc\.tfrecord: record 0.*length CRC"):
        read_womd_tfrecord(bad)


def test_corrupt_length_field(tfrecord_path, tmp_path):
    blob = bytearray(tfrecord_path.read_bytes())
    blob[0] ^= 0x10  # the length itself: its CRC no longer matches
    bad = tmp_path / "bad_length.tfrecord"
    bad.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match=r"bad_length\.tfrecord: record 0.*length CRC"):
        load(str(bad))


def test_corrupt_data_crc(tfrecord_path, tmp_path):
    blob = bytearray(tfrecord_path.read_bytes())
    blob[5000] ^= 0xFF  # inside the record data
    bad = tmp_path / "bad_data.tfrecord"
    bad.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match=r"bad_data\.tfrecord: record 0.*data CRC"):
        read_womd_tfrecord(bad)


@pytest.mark.parametrize("keep", [5, 500, -2])
def test_truncated_record(tfrecord_path, tmp_path, keep):
    blob = tfrecord_path.read_bytes()
    bad = tmp_path / "truncated.tfrecord"
    bad.write_bytes(blob[:keep])
    with pytest.raises(ValueError, match=r"truncated\.tfrecord: record 0.*truncated"):
        read_womd_tfrecord(bad)


def test_second_record_checked_and_named(tfrecord_path, tmp_path):
    blob = tfrecord_path.read_bytes()
    two = tmp_path / "two.tfrecord"
    two.write_bytes(blob + blob)
    scenes = read_womd_tfrecord_all(two)
    assert len(scenes) == 2 and scenes[0].scenario_id == scenes[1].scenario_id
    corrupt = bytearray(blob + blob)
    corrupt[len(blob) + 7000] ^= 0x01
    bad = tmp_path / "two_bad.tfrecord"
    bad.write_bytes(bytes(corrupt))
    with pytest.raises(ValueError, match=r"two_bad\.tfrecord: record 1 .*data CRC"):
        read_womd_tfrecord(bad)  # the first scene alone would be fine: no silent partial read


def test_malformed_protobuf_in_a_valid_frame(tmp_path):
    bad = tmp_path / "garbage.tfrecord"
    bad.write_bytes(_frame(b"\x2a\x05ab"))  # a length-delimited field running past the end
    with pytest.raises(ValueError, match=r"garbage\.tfrecord: record 0: malformed"):
        read_womd_tfrecord(bad)


def test_track_with_wrong_state_count(tmp_path):
    ts = b"".join(b"\x09" + struct.pack("<d", 0.1 * t) for t in range(3))  # 3 timestamps
    state = b"\x58\x01"  # ObjectState{valid: true}
    track = b"\x08\x05\x10\x01" + (b"\x1a" + bytes([len(state)]) + state) * 2  # 2 states
    record = ts + b"\x12" + bytes([len(track)]) + track
    bad = tmp_path / "short_track.tfrecord"
    bad.write_bytes(_frame(record))
    with pytest.raises(ValueError, match=r"short_track\.tfrecord: record 0: track 0 \(id 5\) has 2 states"):
        read_womd_tfrecord(bad)
