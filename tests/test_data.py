"""`tests.data`: a missing data file skips a test, and fails it under CI=true."""

from __future__ import annotations

import pytest

from tests.data import data_path


def test_missing_data_skips_and_fails_under_ci(tmp_path, monkeypatch):
    (tmp_path / "carla").mkdir()
    (tmp_path / "carla" / "Town01.xodr").write_text("<OpenDRIVE/>")
    monkeypatch.setenv("PICTURA_DATA", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    assert data_path("carla", "Town01.xodr") == tmp_path / "carla" / "Town01.xodr"
    assert data_path("carla", directory=True) == tmp_path / "carla"
    with pytest.raises(pytest.skip.Exception, match="Town02.xodr is missing"):
        data_path("carla", "Town02.xodr")
    with pytest.raises(pytest.skip.Exception, match="carla is missing"):
        data_path("carla")  # a directory where a file is asked for
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but .*Town02.xodr is missing"):
        data_path("carla", "Town02.xodr")
