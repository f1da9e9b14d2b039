"""Smoke test on the procedural town generator, when it exists."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.sim import reset, step

from .conftest import make_world, vehicle_config


def test_procedural_town_runs():
    procedural = pytest.importorskip(
        "pictura.maps.procedural", reason="pictura.maps.procedural not written yet"
    )
    road = procedural.generate(seed=0)
    cfg = vehicle_config(agents_per_world=(20, 40))
    model, s0, s1, ctl = make_world([road], [0, 0], 40, cfg)
    reset(model, s0, 0)
    assert s0.valid.numpy().sum() > 20
    rng = np.random.default_rng(0)
    for _ in range(50):
        ctl.action.assign(rng.integers(0, 12, model.num_slots).astype(np.int32))
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
    for name, arr in s0.numpy().items():
        assert np.all(np.isfinite(arr)), name
