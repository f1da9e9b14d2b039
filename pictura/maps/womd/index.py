"""Find WOMD scene files, index every scene they hold, and read scenes one at a time.

An official WOMD shard (``validation.tfrecord-00000-of-00150``) holds hundreds of ``Scenario``
records; the validation set is 150 shards and 44,097 scenes. `index_womd` lists every scene as
a `SceneRef` (file, record number, byte offset, length, scenario id) and `read_scene` decodes
one of them, so an evaluation holds only the scenes it is rolling out. The index of a file is
computed once and cached under the map cache folder (`pictura.maps.cache.cache_dir`), keyed by
the file's absolute path, size and modification time.

Bad input is reported, never fatal here: a file or record that cannot be framed becomes a
`BadScene` (file, record, reason); records after a broken frame cannot be found and are not
indexed (a truncated file never yields a half-read scene).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import struct
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from pictura.maps.womd import protobuf as pb
from pictura.maps.womd.tfrecord import masked_crc32c, womd_file_kind

"""``x.tfrecord`` and Waymo's shard names ``validation.tfrecord-00000-of-00150`` (also
``training``, ``testing``, ``training_20s``, ...)."""
INDEX_VERSION = "womd-index-2"
_SCENARIO_ID_FIELD = 5  # scenario.proto: Scenario.scenario_id


@dataclass(frozen=True)
class SceneRef:
    """Where one scene lives: ``record`` is its number in the file (0 for a JSON file),
    ``offset`` the byte where its TFRecord frame starts, ``length`` its data bytes (0 for JSON),
    ``scenario_id`` the id read from the record ("" for JSON until it is read)."""

    file: str
    record: int = 0
    offset: int = 0
    length: int = 0
    scenario_id: str = ""
    kind: str = "tfrecord"  # or "json"

    def __str__(self) -> str:
        return f"{self.file}: record {self.record}" if self.kind == "tfrecord" else self.file


@dataclass(frozen=True)
class BadScene:
    """A file or record that could not be read: evaluation skips it and reports it."""

    file: str
    record: int | None
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


def womd_files(data: str | Path) -> list[Path]:
    """The WOMD scene files named by ``data``: a folder (searched recursively), one file, or a
    glob pattern (``shards/validation.tfrecord-000[0-4]*``). Sorted; `FileNotFoundError`
    naming ``data`` when nothing matches. Files are recognised by name, and files of other
    names by TFRecord content (`womd_file_kind` with ``sniff``)."""
    text = str(data)
    path = Path(text).expanduser()
    if path.is_file():
        if womd_file_kind(path, sniff=True) is None:
            raise FileNotFoundError(
                f"--data {text!r} is not a WOMD file (*.tfrecord, *.tfrecord-NNNNN-of-NNNNN, *.json, or "
                "TFRecord content)"
            )
        return [path]
    if path.is_dir():
        candidates = path.rglob("*")
    elif glob.has_magic(text):
        candidates = (Path(p) for p in glob.glob(str(path), recursive=True))
    else:
        raise FileNotFoundError(f"--data {text!r}: no such file, folder or glob match")
    files = sorted(p for p in candidates if p.is_file() and womd_file_kind(p, sniff=True) is not None)
    if not files:
        raise FileNotFoundError(
            f"--data {text!r} holds no WOMD scenes (*.tfrecord, *.tfrecord-NNNNN-of-NNNNN or *.json)"
        )
    return files


def _scenario_id(data: bytes) -> str:
    """The ``scenario_id`` of a serialized ``Scenario`` (top-level fields only)."""
    return pb.get_string(pb.parse_message(data), _SCENARIO_ID_FIELD, "Scenario.scenario_id")


def scan_tfrecord(path: str | Path) -> tuple[list[SceneRef], list[BadScene]]:
    """Every record's frame in a TFRecord file: (scenes, problems).

    Length CRCs and framing are checked here; data CRCs when a scene is read (`read_scene`).
    A bad length CRC or a truncated record ends the scan (later frames cannot be located) and
    becomes one `BadScene`; a record whose scenario id cannot be parsed is a `BadScene` too.
    """
    path = Path(path)
    scenes: list[SceneRef] = []
    bad: list[BadScene] = []
    size = path.stat().st_size
    with open(path, "rb") as f:
        pos = record = 0
        while pos < size:
            header = f.read(12)
            if len(header) < 12:
                bad.append(BadScene(str(path), record, f"truncated: {len(header)} bytes left, a record header needs 12"))
                break
            (length,) = struct.unpack("<Q", header[:8])
            if masked_crc32c(header[:8]) != struct.unpack("<I", header[8:])[0]:
                bad.append(BadScene(str(path), record, f"length CRC mismatch at byte {pos} (not a TFRecord or corrupt)"))
                break
            if pos + 12 + length + 4 > size:
                bad.append(
                    BadScene(str(path), record, f"truncated at byte {pos}: {length} data bytes + 4 CRC bytes announced, "
                             f"{size - pos - 12} left")
                )
                break
            data = f.read(length)
            f.seek(4, os.SEEK_CUR)
            try:
                scenes.append(SceneRef(str(path), record, pos, length, _scenario_id(data)))
            except pb.WireError as exc:
                bad.append(BadScene(str(path), record, f"malformed Scenario protobuf: {exc}"))
            pos += 12 + length + 4
            record += 1
    if not scenes and not bad:
        bad.append(BadScene(str(path), None, "empty file: no records"))
    return scenes, bad


def _index_cache_file(path: Path) -> Path:
    from pictura.maps.cache import cache_dir

    st = path.stat()
    key = f"{INDEX_VERSION}|{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    return cache_dir() / "womd_index" / f"{path.name}-{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def _file_index(path: Path, use_cache: bool) -> tuple[list[SceneRef], list[BadScene]]:
    if womd_file_kind(path) == "json":
        return [SceneRef(str(path), kind="json")], []
    target = _index_cache_file(path) if use_cache else None
    if target is not None and target.is_file():
        try:
            doc = json.loads(target.read_text())
            return [SceneRef(**s) for s in doc["scenes"]], [BadScene(**b) for b in doc["bad"]]
        except (OSError, ValueError, KeyError, TypeError):
            pass  # unreadable or stale: rescan below and overwrite
    try:
        scenes, bad = scan_tfrecord(path)
    except OSError as exc:
        return [], [BadScene(str(path), None, f"cannot read: {exc}")]
    if target is not None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump({"scenes": [asdict(s) for s in scenes], "bad": [b.as_dict() for b in bad]}, f)
            os.replace(tmp, target)
        except OSError:
            pass  # read-only cache: the index is still right, only the next scan is slower
    return scenes, bad


@dataclass
class WomdIndex:
    """Every scene of a set of WOMD files, in file then record order, and what could not be indexed."""

    files: list[Path]
    scenes: list[SceneRef]
    bad: list[BadScene]


def index_womd(data: str | Path, use_cache: bool = True) -> WomdIndex:
    """`womd_files` + every record of each (cached per file, see the module docstring)."""
    files = womd_files(data)
    scenes: list[SceneRef] = []
    bad: list[BadScene] = []
    for path in files:
        file_scenes, file_bad = _file_index(path, use_cache)
        scenes += file_scenes
        bad += file_bad
    return WomdIndex(files, scenes, bad)


def read_record(ref: SceneRef) -> bytes:
    """The data bytes of a TFRecord scene, both CRCs checked; `ValueError` naming file and record."""
    with open(ref.file, "rb") as f:
        f.seek(ref.offset)
        frame = f.read(12 + ref.length + 4)
    if len(frame) < 12 + ref.length + 4:
        raise ValueError(f"{ref}: truncated (file changed since it was indexed?)")
    header, data, data_crc = frame[:8], frame[12 : 12 + ref.length], frame[12 + ref.length :]
    if struct.unpack("<Q", header)[0] != ref.length or masked_crc32c(header) != struct.unpack("<I", frame[8:12])[0]:
        raise ValueError(f"{ref}: length field changed since the file was indexed (re-index it)")
    if masked_crc32c(data) != struct.unpack("<I", data_crc)[0]:
        raise ValueError(f"{ref} (byte {ref.offset}): data CRC mismatch (corrupt record data)")
    return data


def read_scene(ref: SceneRef):
    """Decode one indexed scene into a `Scenario`; `ValueError` naming file, record and field."""
    if ref.kind == "json":
        from pictura.maps.womd.gpudrive_json import read_gpudrive_json

        return read_gpudrive_json(ref.file)
    from pictura.maps.womd.scenario import decode_scenario

    return decode_scenario(read_record(ref), str(ref))[0]


def with_scenario_id(record: bytes, scenario_id: str) -> bytes:
    """``record`` (a serialized ``Scenario``) with its ``scenario_id`` replaced: a protobuf parser
    keeps the last value of a singular field, so appending the field is enough. Builds synthetic
    shards of distinct scenes from one real record (tests, benchmarks)."""
    return record + _scenario_id_field(scenario_id)


def write_renamed_records(path: str | Path, record: bytes, scenario_ids) -> None:
    """Write a TFRecord file holding ``record`` (a serialized ``Scenario``) once per id of
    ``scenario_ids`` (`with_scenario_id`), frame by frame. The record's CRC-32C is computed
    once and continued over each appended id field, so a file of N copies costs one checksum
    of the record plus N short ones (pure-Python CRC-32C runs at a few MB/s)."""
    from pictura.maps.womd.tfrecord import crc32c, tfrecord_frame

    base = crc32c(record)
    with open(path, "wb") as f:
        for scenario_id in scenario_ids:
            tail = _scenario_id_field(str(scenario_id))
            f.write(tfrecord_frame(record + tail, crc32c(tail, base)))


def _scenario_id_field(scenario_id: str) -> bytes:
    """The wire bytes of field ``Scenario.scenario_id`` = ``scenario_id``."""
    raw = scenario_id.encode()
    length = bytearray()
    n = len(raw)
    while True:
        length.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            break
    return bytes([_SCENARIO_ID_FIELD << 3 | pb.WIRE_LEN]) + bytes(length) + raw


def load_scene(source):
    """A `Scenario` from a `SceneRef`, a map-source path or a `Scenario`; `ValueError` naming the
    file (and record) for anything that is not a readable logged scene."""
    from pictura.maps.roadmap import Scenario

    if isinstance(source, Scenario):
        return source
    if isinstance(source, SceneRef):
        return read_scene(source)
    from pictura.maps.sources import load

    scenario = load(str(source))
    if not isinstance(scenario, Scenario):
        raise ValueError(f"{source}: not a logged scenario (got a map without tracks)")
    return scenario


def read_scenes(sources: list) -> list:
    """`load_scene` of each source, in order, with each scene's road map validated; a scene that
    fails gives its `ValueError` in its place instead of raising (a worker's unit of work)."""
    out = []
    for source in sources:
        try:
            scenario = load_scene(source)
            scenario.road_map.validate()
            out.append(scenario)
        except ValueError as err:
            out.append(err)
    return out


class SceneReader:
    """Reads batches of scenes ahead of use in ``workers`` processes (0: in this process, when
    asked). Decoding a WOMD record is pure-Python protobuf work (~0.08 s a scene), which
    would otherwise stall the GPU between batches; workers are NumPy-only processes started
    with ``spawn`` (safe beside CUDA and Warp)."""

    def __init__(self, workers: int = 0) -> None:
        self.workers = max(0, int(workers))
        self._pool = None
        if self.workers:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, refs: list):
        """Start reading ``refs`` (`SceneRef` or paths); `result` returns them. Without workers,
        reading waits for `result`."""
        refs = list(refs)
        if self._pool is None:
            return ("later", refs)
        size = -(-len(refs) // self.workers) if refs else 1
        return ("futures", [self._pool.submit(read_scenes, refs[i : i + size]) for i in range(0, len(refs), size)])

    def result(self, handle) -> list:
        """The scenes (or their `ValueError`) of a `submit`, in order."""
        kind, payload = handle
        if kind == "later":
            return read_scenes(payload)
        return [item for future in payload for item in future.result()]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
