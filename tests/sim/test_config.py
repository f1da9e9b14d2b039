"""SimConfig validation and build_model's checks name the bad field."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pictura.sim import CONDITIONING_TABLE, SimConfig, build_model
from pictura.sim.features import CONDITIONING_NAMES, CONDITIONING_WIDTH
from pictura.sim.snapshot import WorldLayout

from .conftest import loop_map


def test_defaults_are_the_paper_values():
    cfg = SimConfig()
    cfg.validate()
    assert (cfg.dt, cfg.episode_length, cfg.early_reset_halted_fraction) == (0.1, 1280, 0.4)
    assert cfg.agents_per_world == (1, 120) and cfg.v_max == 40.0 and cfg.spawn_attempts == 30
    assert tuple(c.name for c in CONDITIONING_TABLE) == CONDITIONING_NAMES
    assert CONDITIONING_WIDTH == 20
    kinds = {c.name: c.kind for c in CONDITIONING_TABLE}
    assert kinds["alpha_velocity"] == kinds["alpha_timestep"] == "fixed"
    assert kinds["c_throttle"] == kinds["c_steer"] == kinds["c_acc"] == "umix"


@pytest.mark.parametrize(
    "change, field",
    [
        ({"agents_per_world": (0, 5)}, "agents_per_world"),
        ({"agents_per_world": (6, 5)}, "agents_per_world"),
        ({"goal_spacing_m": (200.0, 20.0)}, "goal_spacing_m"),
        ({"vehicle_length": (7.0, 0.8)}, "vehicle_length"),
        ({"vehicle_width": (-1.0, 2.0)}, "vehicle_width"),
        ({"dt": 0.0}, "dt"),
        ({"episode_length": 0}, "episode_length"),
        ({"light_green_s": (10.0, 1.0)}, "light_green_s"),
        ({"light_off_p": 1.5}, "light_off_p"),
        ({"spawn_attempts": 0}, "spawn_attempts"),
        ({"early_reset_halted_fraction": 0.0}, "early_reset_halted_fraction"),
    ],
)
def test_validate_names_the_field(change, field):
    with pytest.raises(ValueError, match=field):
        replace(SimConfig(), **change).validate()


def test_inverted_conditioning_row():
    table = list(CONDITIONING_TABLE)
    table[1] = replace(table[1], low=30.0)
    with pytest.raises(ValueError, match="v_goal"):
        SimConfig(conditioning=tuple(table)).validate()


def test_more_agents_than_slots_is_an_error():
    road = loop_map()
    layout = WorldLayout.uniform([0], 10, [len(road.light_position)])
    with pytest.raises(ValueError, match="agents_per_world"):
        build_model([road], layout, SimConfig(agents_per_world=(1, 11), parked_per_world=0))
    with pytest.raises(ValueError, match="world_light"):
        build_model(
            [road], WorldLayout.uniform([0], 10, [0]), SimConfig(agents_per_world=(1, 10), parked_per_world=0)
        )


def test_model_packs_maps_with_global_ids():
    a, b = loop_map(name="a"), loop_map(half_x=50, name="b")
    layout = WorldLayout.uniform([1, 0, 1], 4, [5, 5])
    model = build_model([a, b], layout, SimConfig(agents_per_world=(1, 4), parked_per_world=0))
    lane_start = model.map_lane_start.numpy()
    assert lane_start.tolist() == [0, a.lane_count, a.lane_count + b.lane_count]
    succ = model.lane_succ.numpy()
    off = model.lane_succ_offsets.numpy()
    # map b's successors point into map b's lane range
    assert np.all(succ[off[a.lane_count] :] >= a.lane_count)
    # every lane segment is listed in the grid cell of its midpoint
    seg_a, seg_b = model.lane_seg_a.numpy(), model.lane_seg_b.numpy()
    seg_start = model.map_lane_seg_start.numpy()
    cell_off, items = model.lane_cell_offsets.numpy(), model.lane_cell_items.numpy()
    for m in range(2):
        origin = model.map_grid_origin.numpy()[m]
        cell = model.map_grid_cell.numpy()[m]
        nx = model.map_grid_nx.numpy()[m]
        base = model.map_cell_start.numpy()[m]
        for s in range(seg_start[m], seg_start[m + 1], 7):
            mid = 0.5 * (seg_a[s, :2] + seg_b[s, :2])
            ix, iy = np.floor((mid - origin) / cell).astype(int)
            c = base + iy * nx + ix
            assert s in items[cell_off[c] : cell_off[c + 1]]


def test_control_validate_names_the_bad_action():
    road = loop_map()
    layout = WorldLayout.uniform([0], 4, [len(road.light_position)])
    model = build_model([road], layout, SimConfig(agents_per_world=(1, 4), parked_per_world=0))
    control = model.control()
    control.validate()
    control.action.assign(np.array([0, 11, 12, 3], np.int32))
    with pytest.raises(ValueError, match=r"action\[2\]"):
        control.validate()


def test_conditioning_defaults_to_table_2_and_accepts_rows_from_a_config_file():
    """None (the default, so config files can override other fields) means Table 2; rows given
    as plain dicts (YAML) become Coefficients."""
    import dataclasses

    from pictura.sim.config import CONDITIONING_TABLE, Coefficient, SimConfig

    assert SimConfig().conditioning == CONDITIONING_TABLE
    rows = [dataclasses.asdict(c) for c in CONDITIONING_TABLE]
    rows[0] = {"name": "delta_goal", "low": 3.0, "high": 4.0, "kind": "uniform"}
    config = SimConfig(conditioning=rows)
    assert config.conditioning[0] == Coefficient("delta_goal", 3.0, 4.0, "uniform")
    assert config.conditioning[1:] == CONDITIONING_TABLE[1:]
    config.validate()


def test_a_coefficient_is_changed_by_name_without_restating_the_table():
    config = SimConfig(conditioning={"alpha_collision": {"low": 0.5, "high": 2.0}})
    config.validate()
    rows = {c.name: (c.low, c.high, c.kind) for c in config.conditioning}
    assert rows["alpha_collision"] == (0.5, 2.0, "uniform")
    assert rows["alpha_offroad"] == (0.0, 3.0, "uniform")  # Table 2's row, untouched
    assert tuple(rows) == CONDITIONING_NAMES
    assert SimConfig(conditioning={"c_acc": {"kind": "fixed", "low": 1.0, "high": 1.0}}).conditioning[-1].kind == "fixed"


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"alpha_colision": {"low": 1.0}}, "unknown coefficient 'alpha_colision'.*alpha_collision"),
        ({"alpha_collision": {"lo": 1.0}}, r"alpha_collision.*unknown field.*'lo'"),
        ({"alpha_collision": 1.0}, r"conditioning\['alpha_collision'\] must map fields"),
        ({"alpha_collision": {"low": "half"}}, r"conditioning\['alpha_collision'\]: low and high must be numbers"),
    ],
)
def test_a_misspelt_coefficient_is_an_error_naming_it(overrides, message):
    with pytest.raises(ValueError, match=message):
        SimConfig(conditioning=overrides)


def test_collision_speed_weight_is_validated():
    with pytest.raises(ValueError, match="collision_speed_weight"):
        SimConfig(collision_speed_weight=-0.1).validate()
