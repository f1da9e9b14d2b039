"""Protocol-buffer wire-format decoding (no ``protobuf`` package).

Only what reading WOMD records needs: a message is split into ``{field_number: [values]}``;
each value keeps its wire type so the caller decodes it by the schema it knows:

- wire 0 varint            -> ``int`` (unsigned; `as_int64` for signed int64/int32/enum)
- wire 1 64-bit            -> ``bytes`` of 8 (``double`` / ``fixed64``)
- wire 2 length-delimited  -> ``bytes`` (sub-message, string, or a *packed* repeated scalar)
- wire 5 32-bit            -> ``bytes`` of 4 (``float`` / ``fixed32``)

Repeated scalars may arrive packed (one wire-2 blob) or unpacked (one value per tag), possibly
mixed; the ``repeated_*`` readers accept both, as the protobuf spec requires of parsers.
"""

from __future__ import annotations

import struct

import numpy as np

WIRE_VARINT, WIRE_I64, WIRE_LEN, WIRE_I32 = 0, 1, 2, 5

Fields = dict[int, list[tuple[int, int | bytes]]]
"""Decoded message: field number -> list of (wire type, raw value) in file order."""


class WireError(ValueError):
    """Malformed protobuf bytes (the message says where)."""


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode one base-128 varint at ``pos``; returns (value, next position)."""
    result = 0
    shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise WireError(f"varint runs past the end of the message at byte {pos}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise WireError(f"varint longer than 10 bytes ending at byte {pos}")


def as_int64(value: int) -> int:
    """Reinterpret an unsigned 64-bit varint as two's-complement int64 (negative int32/enum too)."""
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= 1 << 63 else value


def parse_message(buf: bytes) -> Fields:
    """Split one message into its fields (see module docstring); raises `WireError` if malformed."""
    out: Fields = {}
    pos = 0
    n = len(buf)
    while pos < n:
        key, pos = read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError(f"field number 0 at byte {pos}")
        if wire == WIRE_VARINT:
            value, pos = read_varint(buf, pos)
        elif wire == WIRE_I64:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == WIRE_LEN:
            size, pos = read_varint(buf, pos)
            value, pos = buf[pos : pos + size], pos + size
        elif wire == WIRE_I32:
            value, pos = buf[pos : pos + 4], pos + 4
        else:  # 3/4 are deprecated groups, 6/7 do not exist
            raise WireError(f"field {number}: unsupported wire type {wire} at byte {pos}")
        if pos > n:
            raise WireError(f"field {number} (wire type {wire}) runs past the end of the message")
        out.setdefault(number, []).append((wire, value))
    return out


# ---- typed accessors ---------------------------------------------------------------------------


def _last(fields: Fields, number: int, wire: int, name: str):
    values = fields.get(number)
    if not values:
        return None
    got_wire, value = values[-1]  # proto3: the last occurrence of a singular field wins
    if got_wire != wire:
        raise WireError(f"field {name} (#{number}): wire type {got_wire}, expected {wire}")
    return value


def get_int(fields: Fields, number: int, name: str, default: int = 0) -> int:
    """Singular int32/int64/enum/bool field (signed)."""
    value = _last(fields, number, WIRE_VARINT, name)
    return default if value is None else as_int64(value)


def get_double(fields: Fields, number: int, name: str, default: float = 0.0) -> float:
    value = _last(fields, number, WIRE_I64, name)
    return default if value is None else struct.unpack("<d", value)[0]


def get_float(fields: Fields, number: int, name: str, default: float = 0.0) -> float:
    value = _last(fields, number, WIRE_I32, name)
    return default if value is None else struct.unpack("<f", value)[0]


def get_string(fields: Fields, number: int, name: str, default: str = "") -> str:
    value = _last(fields, number, WIRE_LEN, name)
    return default if value is None else bytes(value).decode("utf-8")


def get_message(fields: Fields, number: int, name: str) -> Fields | None:
    value = _last(fields, number, WIRE_LEN, name)
    return None if value is None else parse_message(value)


def repeated_messages(fields: Fields, number: int, name: str) -> list[bytes]:
    """Raw bytes of each element of a repeated sub-message field (parse lazily)."""
    out = []
    for wire, value in fields.get(number, ()):
        if wire != WIRE_LEN:
            raise WireError(f"field {name} (#{number}): wire type {wire}, expected a sub-message")
        out.append(value)
    return out


def repeated_ints(fields: Fields, number: int, name: str) -> list[int]:
    """Repeated int32/int64/enum/bool, packed or not (signed)."""
    out: list[int] = []
    for wire, value in fields.get(number, ()):
        if wire == WIRE_VARINT:
            out.append(as_int64(value))
        elif wire == WIRE_LEN:
            pos = 0
            while pos < len(value):
                v, pos = read_varint(value, pos)
                out.append(as_int64(v))
        else:
            raise WireError(f"field {name} (#{number}): wire type {wire}, expected varints")
    return out


def repeated_doubles(fields: Fields, number: int, name: str) -> np.ndarray:
    """Repeated double, packed or not -> float64 array."""
    parts = []
    for wire, value in fields.get(number, ()):
        if wire not in (WIRE_I64, WIRE_LEN) or len(value) % 8:
            raise WireError(f"field {name} (#{number}): not a (packed) double payload")
        parts.append(np.frombuffer(value, "<f8"))
    return np.concatenate(parts) if parts else np.zeros(0, np.float64)
