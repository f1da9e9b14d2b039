"""Every scene of multi-record WOMD shards with Waymo's file names: finding the files, indexing
each record (cached), reading one lazily, and reporting bad files and records."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from pictura.maps import load
from pictura.maps.womd.index import index_womd, read_scene, scan_tfrecord, with_scenario_id, womd_files
from tests.data import data_path


def _frame(data: bytes) -> bytes:
    """TFRecord framing written from its spec (tests/maps/test_womd_tfrecord.py checks the CRC)."""
    from pictura.maps.womd.tfrecord import masked_crc32c

    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data))


@pytest.fixture(scope="module")
def record() -> bytes:
    blob = data_path("womd", "tfrecord", "motion_data_one_scenario.tfrecord").read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    return blob[12 : 12 + n]


def write_shard(path: Path, record: bytes, ids: list[str]) -> Path:
    """A shard of ``len(ids)`` copies of ``record``, each with its own scenario id."""
    path.write_bytes(b"".join(_frame(with_scenario_id(record, i)) for i in ids))
    return path


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("PICTURA_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_waymo_names_every_record_and_lazy_read(tmp_path, record, cache):
    shards = tmp_path / "womd" / "validation"
    shards.mkdir(parents=True)
    a = write_shard(shards / "validation.tfrecord-00000-of-00150", record, ["a0", "a1", "a2"])
    b = write_shard(shards / "training_20s.tfrecord-00007-of-01000", record, ["b0"])
    (shards / "README.md").write_text("not a scene")
    c = write_shard(shards / "renamed.bin", record, ["c0"])  # an unknown name, TFRecord content
    index = index_womd(tmp_path / "womd")
    assert index.files == [c, b, a]  # sorted by path, recursive, README ignored
    assert [(Path(s.file).name, s.record, s.scenario_id) for s in index.scenes] == [
        (c.name, 0, "c0"), (b.name, 0, "b0"), (a.name, 0, "a0"), (a.name, 1, "a1"), (a.name, 2, "a2"),
    ]
    # offsets: each frame is 12 + len + 4 bytes after the previous one
    lengths = [len(with_scenario_id(record, i)) for i in ("a0", "a1")]
    assert [s.offset for s in index.scenes[2:]] == [0, 16 + lengths[0], 32 + lengths[0] + lengths[1]]
    scene = read_scene(index.scenes[3])
    assert scene.scenario_id == "a1" and len(scene.track_id) == 83
    assert len(list((cache / "womd_index").glob("*.json"))) == 3
    again = index_womd(tmp_path / "womd")  # from the cache
    assert again.scenes == index.scenes and again.bad == []
    # one file, and a glob
    assert [s.scenario_id for s in index_womd(a).scenes] == ["a0", "a1", "a2"]
    assert womd_files(str(shards / "val*.tfrecord-000*")) == [a]
    assert load(str(a)).scenario_id == "a0"  # a map source: the file's first scene


def test_bad_records_are_reported_not_fatal(tmp_path, record, cache):
    good = write_shard(tmp_path / "good.tfrecord", record, ["g0", "g1"])
    blob = good.read_bytes()
    (tmp_path / "truncated.tfrecord-00001-of-00002").write_bytes(blob[:-100])
    corrupt = bytearray(blob)
    corrupt[len(blob) - 5000] ^= 0x01  # inside the second record's data
    (tmp_path / "crc.tfrecord").write_bytes(bytes(corrupt))
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    index = index_womd(tmp_path)
    bad = {(Path(b.file).name, b.record): b.reason for b in index.bad}
    assert set(bad) == {("truncated.tfrecord-00001-of-00002", 1), ("empty.tfrecord", None)}
    assert "truncated" in bad[("truncated.tfrecord-00001-of-00002", 1)]
    names = [(Path(s.file).name, s.record) for s in index.scenes]
    assert names == [("crc.tfrecord", 0), ("crc.tfrecord", 1), ("good.tfrecord", 0), ("good.tfrecord", 1),
                     ("truncated.tfrecord-00001-of-00002", 0)]  # the half-read record is not a scene
    with pytest.raises(ValueError, match=r"crc\.tfrecord: record 1 .*data CRC"):
        read_scene(index.scenes[1])  # a corrupt body is found when the scene is read
    assert read_scene(index.scenes[0]).scenario_id == "g0"


def test_length_crc_ends_the_scan(tmp_path, record):
    blob = bytearray(_frame(record) * 2)
    blob[len(blob) // 2 + 9] ^= 0x01  # the second record's length CRC
    path = tmp_path / "x.tfrecord"
    path.write_bytes(bytes(blob))
    scenes, bad = scan_tfrecord(path)
    assert len(scenes) == 1 and [(b.record, "length CRC" in b.reason) for b in bad] == [(1, True)]


def test_data_argument_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file, folder or glob"):
        womd_files(tmp_path / "nothing")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(FileNotFoundError, match="holds no WOMD scenes"):
        womd_files(tmp_path)
    with pytest.raises(FileNotFoundError, match="is not a WOMD file"):
        womd_files(tmp_path / "notes.txt")


def test_renamed_records_file_matches_full_framing(tmp_path, record):
    """`write_renamed_records` continues one CRC over each appended id; the file is byte for byte
    the framing of each renamed record with its CRC computed over the whole record."""
    from pictura.maps.womd.index import write_renamed_records

    ids = ["r0", "r1", "a-much-longer-scenario-id-" + "x" * 130]  # > 127 bytes: a two-byte length
    path = tmp_path / "renamed.tfrecord"
    write_renamed_records(path, record, ids)
    assert path.read_bytes() == b"".join(_frame(with_scenario_id(record, i)) for i in ids)
    assert [s.scenario_id for s in index_womd(path, use_cache=False).scenes] == ids
