"""Files of the data root for tests (README, "Data"): a test that needs one skips when it is
absent, except under ``CI=true``, where its absence fails the test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pictura.maps import data_root


def data_missing(reason: str):
    """Skip the calling test for ``reason``, or fail it under ``CI=true``."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def data_path(*parts: str, directory: bool = False) -> Path:
    """``<data root>/<parts...>``, a file (a directory with ``directory``) that must exist."""
    try:
        path = data_root().joinpath(*parts)
    except FileNotFoundError as err:
        data_missing(f"there is no data root ({err})")
    if not (path.is_dir() if directory else path.is_file()):
        data_missing(f"{path} is missing (the data files are not in the repository)")
    return path
