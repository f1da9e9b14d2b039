"""Traffic-light outages and modes (all lights of a world off, one light off, a junction always
green) at their configured rates, and every stop line of the maps governed by a light."""

from __future__ import annotations

import numpy as np
import pytest

from pictura.maps import load_road_map
from pictura.maps.roadmap import LIGHT_GREEN, LIGHT_OFF
from pictura.sim import reset
from tests.data import data_path

from .conftest import loop_map, make_world, vehicle_config

W = 2000  # worlds of the loop map: 2 junctions, 5 lights each


def _reset(**cfg):
    model, s0, _, _ = make_world([loop_map()], [0] * W, 1, vehicle_config(agents_per_world=(1, 1), **cfg))
    reset(model, s0, 9)
    return s0.numpy()


def test_outage_rates():
    st = _reset()
    mode = st["junction_mode"].reshape(W, 2)
    off = st["light_off"].reshape(W, 5)
    all_off = np.all(mode == 1, axis=1)
    assert np.all((mode == 1).any(1) == all_off)  # a world's junctions are off together
    se = lambda p, n: 5 * np.sqrt(p * (1 - p) / n)  # noqa: E731
    assert abs(all_off.mean() - 0.2) < se(0.2, W)
    green = mode[~all_off] == 2
    assert abs(green.mean() - 0.05) < se(0.05, green.size)
    assert abs(off.mean() - 0.2) < se(0.2, off.size)
    # the states written at reset follow: off worlds and off lights are LIGHT_OFF, always-green
    # junctions (not off) green
    ls = st["light_state"].reshape(W, 5)
    assert np.all(ls[all_off] == LIGHT_OFF) and np.all(ls[off == 1] == LIGHT_OFF)
    junction = np.array([0, 0, 1, 1, 1])
    lit_green = (mode[:, junction] == 2) & (off == 0)
    assert np.all(ls[lit_green] == LIGHT_GREEN)


def test_schedule_draws_cover_their_ranges():
    """Each junction's green, yellow and red ~ U(SimConfig range) and its clock offset ~ U(0,
    period), the period being the group count x (green + yellow + red) (traffic.py): the offset
    reaches every group's turn, not only the first."""
    st = _reset()
    groups = np.tile([2, 3], W)  # the loop map's junctions
    cfg = vehicle_config()
    for name, (lo, hi) in (("green", cfg.light_green_s), ("yellow", cfg.light_yellow_s), ("red", cfg.light_red_s)):
        x = st[f"junction_{name}"]
        assert np.all((x >= lo) & (x <= hi)), name
        # U(lo, hi): mean and spread of 4000 draws within 5 standard errors
        sd = (hi - lo) / np.sqrt(12)
        assert abs(x.mean() - 0.5 * (lo + hi)) < 5 * sd / np.sqrt(x.size), name
        assert abs(x.std() - sd) < 0.05 * sd, name
    turn = st["junction_green"] + st["junction_yellow"] + st["junction_red"]
    u = st["junction_offset"] / (groups * turn)
    assert np.all((u >= 0) & (u < 1))
    for g in (2, 3):
        ug = u[groups == g]
        assert abs(ug.mean() - 0.5) < 5 * np.sqrt(1 / 12 / ug.size)
        # the offset falls in each group's turn equally often
        counts = np.bincount(np.minimum((ug * g).astype(int), g - 1), minlength=g) / ug.size
        assert np.all(np.abs(counts - 1 / g) < 5 * np.sqrt(1 / g / ug.size)), counts


@pytest.mark.parametrize(
    "cfg, expected",
    [
        (dict(light_all_off_p=1.0), LIGHT_OFF),
        (dict(light_off_p=1.0, light_all_off_p=0.0), LIGHT_OFF),
        (dict(light_always_green_p=1.0, light_all_off_p=0.0, light_off_p=0.0), LIGHT_GREEN),
    ],
)
def test_forced_modes(cfg, expected):
    st = _reset(**cfg)
    assert np.all(st["light_state"] == expected)


def _check_governed(rm):
    assert len(rm.stop_line_lane) > 0
    assert np.all(rm.stop_line_light >= 0), f"{rm.name}: stop lines without a light"
    assert np.all(rm.light_junction[rm.stop_line_light] >= 0)
    # the governing light's junction is the one the stop line's lane leads into (lanes whose
    # successors lie in a junction; a few CARLA approach chunks have no successor listed)
    checked = 0
    for k, lane in enumerate(rm.stop_line_lane):
        juncs = set(rm.lane_junction[rm.successors(lane)].tolist()) - {-1}
        if juncs:
            assert rm.light_junction[rm.stop_line_light[k]] in juncs, (rm.name, k)
            checked += 1
    assert checked > 0.8 * len(rm.stop_line_lane)


@pytest.mark.parametrize("seed", [0, 3])
def test_procedural_stop_lines_have_lights(seed):
    _check_governed(load_road_map(f"procedural:seed={seed}"))


@pytest.mark.parametrize("town", ["Town03", "Town05"])
def test_carla_stop_lines_have_lights(town):
    data_path("carla", f"{town}.xodr")
    _check_governed(load_road_map(f"carla:{town}"))
