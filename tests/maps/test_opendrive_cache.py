"""The processed-map cache: location, round trip, keying by content and version."""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from pictura.maps import cache
from pictura.maps.opendrive import read_opendrive
from pictura.maps.roadmap import RoadMap
from tests.maps.test_opendrive_geometry import write_xodr


def test_cache_dir_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("PICTURA_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "pictura"
    monkeypatch.setenv("PICTURA_CACHE", str(tmp_path / "own"))
    assert cache.cache_dir() == tmp_path / "own"
    monkeypatch.delenv("PICTURA_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "pictura"


def test_round_trip_and_keying(monkeypatch, tmp_path):
    monkeypatch.setenv("PICTURA_CACHE", str(tmp_path / "cache"))
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    path = write_xodr(src_dir, '<arc curvature="0.02"/>', 30.0)
    built = read_opendrive(path, use_cache=False)
    calls = []

    def build() -> RoadMap:
        calls.append(1)
        return built

    first = cache.cached(path, "test-1", build)
    second = cache.cached(path, "test-1", build)
    assert len(calls) == 1
    for f in fields(RoadMap):
        a, b = getattr(first, f.name), getattr(second, f.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), f.name
        else:
            assert a == b
    # A new format version or changed contents rebuild; nothing is written next to the source.
    cache.cached(path, "test-2", build)
    path.write_text(path.read_text().replace('curvature="0.02"', 'curvature="0.03"'))
    cache.cached(path, "test-1", build)
    assert len(calls) == 3
    assert sorted(p.name for p in src_dir.iterdir()) == [path.name]
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 3


def test_corrupt_cache_entry_is_rebuilt(monkeypatch, tmp_path):
    monkeypatch.setenv("PICTURA_CACHE", str(tmp_path / "cache"))
    path = write_xodr(tmp_path, "<line/>", 20.0)
    first = read_opendrive(path)
    entry = next((tmp_path / "cache").glob("*.npz"))
    entry.write_bytes(b"not a zip")
    again = read_opendrive(path)
    assert np.array_equal(first.lane_points, again.lane_points)
