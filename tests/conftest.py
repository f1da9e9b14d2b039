"""Suite-wide: tests marked ``gpu`` need a CUDA device for Warp and skip without one."""

from __future__ import annotations

import pytest


def _cuda_available() -> bool:
    try:
        import warp as wp

        wp.init()
        return wp.is_cuda_available()
    except Exception:  # a Warp build without CUDA support
        return False


def pytest_collection_modifyitems(config, items):
    if any("gpu" in item.keywords for item in items) and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA device (Warp sees none)")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
