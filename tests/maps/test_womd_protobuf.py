"""Wire-format decoding and CRC-32C against the published test vectors and hand-encoded bytes."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from pictura.maps.womd import protobuf as pb
from pictura.maps.womd.tfrecord import crc32c, masked_crc32c


def _crc32c_bitwise(data: bytes) -> int:
    """Reference CRC-32C: one bit at a time, straight from the polynomial's definition."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"123456789", 0xE3069283),  # the standard CRC-32C check value
        (bytes(32), 0x8A9136AA),  # RFC 3720 (iSCSI) B.4 vectors
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
        (b"", 0x0),
    ],
)
def test_crc32c_known_vectors(data, expected):
    assert crc32c(data) == expected


def test_crc32c_matches_bitwise_reference_at_every_length():
    rng = np.random.default_rng(0)
    for n in range(0, 41):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert crc32c(data) == _crc32c_bitwise(data), n
    # continuation: crc(a + b) == crc(b, start=crc(a))
    assert crc32c(b"56789", crc32c(b"1234")) == 0xE3069283


def test_crc32c_lanes_match_bitwise_reference():
    """Data of at least `_LANES_FROM` bytes is checksummed as NumPy lanes of `LANE_BYTES`, then
    folded: equal to the bit-at-a-time definition at the threshold, at lane multiples, with a
    tail, with a lane count that is no power of two, and continued from another CRC."""
    from pictura.maps.womd.tfrecord import _LANES_FROM, LANE_BYTES

    rng = np.random.default_rng(1)
    for n in (_LANES_FROM - 1, _LANES_FROM, _LANES_FROM + 5, 11 * LANE_BYTES, 13 * LANE_BYTES + 255, 9001):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert crc32c(data) == _crc32c_bitwise(data), n
        head = b"womd"
        assert crc32c(data, crc32c(head)) == _crc32c_bitwise(head + data), n


def test_crc32c_lanes_on_a_record_sized_buffer(monkeypatch):
    """A ~1 MB buffer (a WOMD record's size): the lanes give the byte-table loop's value."""
    from pictura.maps.womd import tfrecord

    data = np.random.default_rng(2).integers(0, 256, 1_000_003, dtype=np.uint8).tobytes()
    lanes = crc32c(data)
    monkeypatch.setattr(tfrecord, "_LANES_FROM", 1 << 62)  # the loop alone (checked bitwise above)
    assert lanes == crc32c(data)


def test_masked_crc_formula():
    crc = _crc32c_bitwise(b"hello")
    assert masked_crc32c(b"hello") == ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) % (1 << 32)


def test_varint_examples_from_the_protobuf_spec():
    assert pb.read_varint(b"\x01", 0) == (1, 1)
    assert pb.read_varint(b"\x96\x01", 0) == (150, 2)
    assert pb.read_varint(b"\xac\x02", 0) == (300, 2)
    minus_one = b"\xff" * 9 + b"\x01"  # int64 -1 is ten bytes
    value, pos = pb.read_varint(minus_one, 0)
    assert pos == 10 and pb.as_int64(value) == -1
    with pytest.raises(ValueError, match="past the end"):
        pb.read_varint(b"\x96", 0)


def test_parse_message_all_wire_types_and_packed_fields():
    # field 1 varint 150; field 2 double 1.5; field 3 string "ab"; field 4 float -2.25;
    # field 5 packed varints [3, 270, 86942]; field 5 again unpacked 7; field 6 packed doubles.
    msg = (
        b"\x08\x96\x01"
        + b"\x11"
        + struct.pack("<d", 1.5)
        + b"\x1a\x02ab"
        + b"\x25"
        + struct.pack("<f", -2.25)
        + b"\x2a\x06\x03\x8e\x02\x9e\xa7\x05"
        + b"\x28\x07"
        + b"\x32\x10"
        + struct.pack("<2d", 0.5, -4.0)
    )
    f = pb.parse_message(msg)
    assert pb.get_int(f, 1, "a") == 150
    assert pb.get_double(f, 2, "b") == 1.5
    assert pb.get_string(f, 3, "c") == "ab"
    assert pb.get_float(f, 4, "d") == -2.25
    assert pb.repeated_ints(f, 5, "e") == [3, 270, 86942, 7]
    assert pb.repeated_doubles(f, 6, "g").tolist() == [0.5, -4.0]
    assert pb.get_int(f, 9, "missing", default=-1) == -1  # absent -> proto default


def test_parse_message_rejects_bad_input():
    with pytest.raises(ValueError, match="runs past the end"):
        pb.parse_message(b"\x1a\x05ab")  # length 5, only 2 bytes
    with pytest.raises(ValueError, match="wire type 3"):
        pb.parse_message(b"\x0b")
    with pytest.raises(ValueError, match="wire type"):
        pb.get_double(pb.parse_message(b"\x08\x01"), 1, "x")  # a varint where a double is expected
