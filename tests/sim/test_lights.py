"""Traffic lights: every light follows its junction's schedule (NumPy re-derivation)."""

from __future__ import annotations

import numpy as np

from pictura.maps.roadmap import LIGHT_GREEN, LIGHT_OFF, LIGHT_RED, LIGHT_YELLOW
from pictura.sim import reset, step

from .conftest import loop_map, make_world, vehicle_config


def _np_lights(model, road, st):
    """LIGHT_* of every world light from the state's schedule arrays and world clocks."""
    out = []
    layout = model.layout
    nj = len(road.junction_center)
    groups = np.zeros(nj, int)
    np.maximum.at(groups, road.light_junction, road.light_group + 1)
    for w in range(layout.num_worlds):
        for k in range(len(road.light_junction)):
            j = road.light_junction[k]
            wj = w * nj + j
            mode = st["junction_mode"][wj]
            if st["light_off"][layout.world_light_start[w] + k] or mode == 1:
                out.append(LIGHT_OFF)
                continue
            if mode == 2:
                out.append(LIGHT_GREEN)
                continue
            g, y, r = (float(st[f"junction_{n}"][wj]) for n in ("green", "yellow", "red"))
            turn = g + y + r
            t = (st["world_step"][w] * 0.1 + st["junction_offset"][wj]) % (turn * groups[j])
            active = min(int(t // turn), groups[j] - 1)
            within = t - active * turn
            if road.light_group[k] != active:
                out.append(LIGHT_RED)
            else:
                out.append(LIGHT_GREEN if within < g else LIGHT_YELLOW if within < g + y else LIGHT_RED)
    return np.array(out)


def test_light_schedule_matches_reference():
    road = loop_map()
    cfg = vehicle_config(agents_per_world=(1, 2), episode_length=400)
    model, s0, s1, ctl = make_world([road], [0] * 8, 2, cfg)
    reset(model, s0, 2)
    ctl.action.assign(np.full(model.num_slots, 7, np.int32))
    seen = set()
    for t in range(300):
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        if t % 7 == 0:
            st = s0.numpy()
            ref = _np_lights(model, road, st)
            # skip lights within 1e-3 s of a phase boundary (float32 clock vs float64 here)
            assert np.mean(st["light_state"] == ref) > 0.97
            seen |= set(st["light_state"].tolist())
            # within a junction at most one group is not red
            for w in range(8):
                ls = st["light_state"][w * 5 : w * 5 + 5]
                for js in (ls[:2], ls[2:]):
                    assert np.sum((js == LIGHT_GREEN) | (js == LIGHT_YELLOW)) <= 1 or np.all(
                        js == LIGHT_GREEN
                    )
    assert {LIGHT_RED, LIGHT_GREEN, LIGHT_YELLOW} <= seen


def test_eval_timings():
    road = loop_map()
    cfg = vehicle_config(agents_per_world=(1, 1), eval=True)
    model, s0, s1, ctl = make_world([road], [0, 0], 1, cfg)
    reset(model, s0, 0)
    st = s0.numpy()
    assert np.all(st["junction_green"] == 10.0) and np.all(st["junction_yellow"] == 3.0)
    assert (
        np.all(st["junction_red"] == 2.0)
        and np.all(st["junction_mode"] == 0)
        and np.all(st["light_off"] == 0)
    )
    np.testing.assert_array_equal(st["light_state"], _np_lights(model, road, st))
