"""`build_model`: map sources and a world layout packed into a `pictura.sim.model.Model`.

Maps are packed back to back (a world plays on one map; many worlds may share a map), every
array goes to ``device`` once, and the rule constants of `SimConfig` become `ModelData` scalars.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import warp as wp

from pictura.maps.roadmap import RoadMap
from pictura.sim.config import SimConfig
from pictura.sim.dynamics import A_LONG_MAX
from pictura.sim.grid import bin_segments, grid_for_bounds
from pictura.sim.lanes import ASSOCIATION_WIDTHS, JUMP_LEVELS
from pictura.sim.model import Model
from pictura.sim.model_data import ModelData
from pictura.sim.snapshot import WorldLayout

if TYPE_CHECKING:
    from pictura.sim.replay import ReplayLog


def _arr(values, dtype, device):
    return wp.array(np.ascontiguousarray(values), dtype=dtype, device=device)


def _starts(counts: list[int]) -> np.ndarray:
    out = np.zeros(len(counts) + 1, np.int32)
    out[1:] = np.cumsum(counts)
    return out


def pedestrian_paths(rm: RoadMap) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Segments pedestrians spawn on and walk along: sidewalk centrelines and crosswalk centre
    lines (the long axis of each quad); the road edges when a map has neither.

    Returns ``(Np, 3)`` start and end points and ``(Np,)`` map-local next / previous segment on
    the same polyline (-1 at its ends).
    """
    polylines = [
        rm.sidewalk_points[rm.sidewalk_offsets[k] : rm.sidewalk_offsets[k + 1]]
        for k in range(len(rm.sidewalk_offsets) - 1)
    ]
    for quad in rm.crosswalk_points.reshape(-1, 4, 3):
        m01, m23 = 0.5 * (quad[0] + quad[1]), 0.5 * (quad[2] + quad[3])
        m12, m30 = 0.5 * (quad[1] + quad[2]), 0.5 * (quad[3] + quad[0])
        line = (m01, m23) if np.linalg.norm(m23 - m01) >= np.linalg.norm(m30 - m12) else (m12, m30)
        polylines.append(np.stack(line))
    polylines = [p for p in polylines if len(p) >= 2]
    if not polylines:
        polylines = [
            rm.road_edge_points[rm.road_edge_offsets[k] : rm.road_edge_offsets[k + 1]]
            for k in range(rm.road_edge_count)
        ]
        polylines = [p for p in polylines if len(p) >= 2]
    seg_a, seg_b, nxt, prv = [], [], [], []
    n = 0
    for p in polylines:
        k = len(p) - 1
        seg_a.append(p[:-1])
        seg_b.append(p[1:])
        nxt.append(np.where(np.arange(k) < k - 1, n + np.arange(k) + 1, -1))
        prv.append(np.where(np.arange(k) > 0, n + np.arange(k) - 1, -1))
        n += k
    if not seg_a:
        z3 = np.zeros((0, 3), np.float32)
        return z3, z3, np.zeros(0, np.int32), np.zeros(0, np.int32)
    return (
        np.concatenate(seg_a).astype(np.float32),
        np.concatenate(seg_b).astype(np.float32),
        np.concatenate(nxt).astype(np.int32),
        np.concatenate(prv).astype(np.int32),
    )


def lane_jump_table(
    succ_offsets: np.ndarray, succ: np.ndarray, lane_length: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(L, JUMP_LEVELS)`` jump table of the lane graph for `walk_lanes`: entry (l, k) is the
    lane reached from l after 2^k hops through lanes with exactly one successor (-1 if a lane on
    the way has none or several), with the summed length of the 2^k lanes it skips (l included,
    the landing lane not)."""
    count = np.diff(succ_offsets)
    L = len(count)
    jump = np.full((L, JUMP_LEVELS), -1, np.int64)
    length = np.zeros((L, JUMP_LEVELS), np.float64)
    single = count == 1
    jump[single, 0] = succ[succ_offsets[:-1][single]]
    length[:, 0] = lane_length
    for k in range(1, JUMP_LEVELS):
        prev = jump[:, k - 1]
        ok = prev >= 0
        jump[ok, k] = jump[prev[ok], k - 1]
        length[ok, k] = length[ok, k - 1] + length[prev[ok], k - 1]
    return jump.astype(np.int32), length.astype(np.float32)


def build_model(
    road_maps: list[RoadMap],
    layout: WorldLayout,
    config: SimConfig,
    device: str = "cpu",
    replay: ReplayLog | None = None,
) -> Model:
    """Pack ``road_maps`` and ``layout`` into a `Model` on ``device``.

    ``replay`` (`pictura.sim.replay.ReplayLog`) turns the model into log replay: slots are
    controlled, replayed or empty as it says, and world resets restore the logged start
    instead of spawning (see `pictura.sim.replay`).

    Raises ``ValueError`` naming the field when the maps, layout and config do not fit
    (e.g. a world with more agents than slots, a map with no lanes, light counts that differ).
    """
    config.validate()
    if not road_maps:
        raise ValueError("road_maps must hold at least one RoadMap")
    for rm in road_maps:
        rm.validate()
        if rm.lane_count == 0 or len(rm.lane_segments()[1]) == 0:
            raise ValueError(f"RoadMap {rm.name!r}: lane_points hold no lane segment to spawn on")
    M = len(road_maps)
    if layout.world_map.min() < 0 or layout.world_map.max() >= M:
        raise ValueError(f"layout.world_map holds a map index outside 0..{M - 1}")
    if layout.is_packed:
        if replay is not None:
            raise ValueError("log replay needs a static layout (WorldLayout.uniform), not a packed one")
        min_slots = layout.block_slots
    else:
        min_slots = int(layout.world_slot_count.min())
    if config.agents_per_world[1] > min_slots:
        raise ValueError(
            f"SimConfig.agents_per_world high {config.agents_per_world[1]} exceeds the {min_slots} slots of a world"
        )
    if layout.parked_per_world != config.parked_per_world:
        raise ValueError(
            f"layout.parked_per_world {layout.parked_per_world} != SimConfig.parked_per_world "
            f"{config.parked_per_world} (pass parked_per_world to WorldLayout.uniform)"
        )
    if not layout.is_packed and len(layout.slot_world) != int(layout.world_slot_count.sum()):
        raise ValueError("layout.slot_world does not match layout.world_slot_count")
    lights_per_world = np.array([len(road_maps[m].light_position) for m in layout.world_map], np.int32)
    light_start = np.zeros(len(lights_per_world), np.int32)
    light_start[1:] = np.cumsum(lights_per_world)[:-1]
    if int(lights_per_world.sum()) != layout.light_count or not np.array_equal(
        light_start, layout.world_light_start
    ):
        raise ValueError(
            "layout.world_light_start / light_count do not match the maps' light_position counts"
        )

    model = Model(device, config, layout, [rm.name for rm in road_maps])
    a: dict[str, np.ndarray] = {}

    lane_counts = [rm.lane_count for rm in road_maps]
    map_lane_start = _starts(lane_counts)
    seg_a, seg_b, seg_lane, seg_counts, edge_a, edge_b, edge_counts = [], [], [], [], [], [], []
    lane_seg_counts, lane_length, succ_off, succ = [], [], [0], []
    stop_a, stop_b, stop_lane, stop_light, lane_stop = [], [], [], [], []
    light_junction, light_group, light_counts, junction_counts, junction_groups = [], [], [], [], []
    grid_origin, grid_cell, grid_nx, grid_ny, cell_counts = [], [], [], [], []
    lane_cell_off, lane_cell_items, edge_cell_off, edge_cell_items = (
        [np.zeros(1, np.int32)],
        [],
        [np.zeros(1, np.int32)],
        [],
    )
    stop_cell_off, stop_cell_items = [np.zeros(1, np.int32)], []
    seg_total = edge_total = stop_total = junction_total = 0
    for m, rm in enumerate(road_maps):
        l0 = int(map_lane_start[m])
        seg, owner = rm.lane_segments()
        seg_a.append(seg[:, 0])
        seg_b.append(seg[:, 1])
        seg_lane.append(owner + l0)
        seg_counts.append(len(seg))
        lane_seg_counts.append(np.bincount(owner, minlength=rm.lane_count))
        seg_len = np.linalg.norm(seg[:, 1] - seg[:, 0], axis=1)
        lane_length.append(np.bincount(owner, weights=seg_len, minlength=rm.lane_count))
        counts = np.diff(rm.lane_successor_offsets)
        succ_off.extend((succ_off[-1] + np.cumsum(counts)).tolist())
        succ.append(rm.lane_successors.astype(np.int32) + l0)
        road_eseg = rm.road_edge_segments()
        # walls share the road-edge list and grid, flagged, so one query serves both rules
        eseg = np.concatenate([road_eseg, rm.wall_points.astype(np.float32).reshape(-1, 2, 3)])
        a.setdefault("edge_wall_list", []).append(
            np.concatenate([np.zeros(len(road_eseg), np.int32), np.ones(len(rm.wall_points), np.int32)])
        )
        edge_a.append(eseg[:, 0])
        edge_b.append(eseg[:, 1])
        edge_counts.append(len(eseg))
        ped_a, ped_b, ped_next, ped_prev = pedestrian_paths(rm)
        a.setdefault("ped_parts", []).append((ped_a, ped_b, ped_next, ped_prev))
        a.setdefault("park_list", []).append(rm.parking_spots.astype(np.float32).reshape(-1, 4))
        stops = np.full(rm.lane_count, -1, np.int32)
        stops[rm.stop_line_lane] = np.arange(len(rm.stop_line_lane), dtype=np.int32) + stop_total
        lane_stop.append(stops)
        stop_a.append(rm.stop_line_points[:, 0])
        stop_b.append(rm.stop_line_points[:, 1])
        stop_lane.append(rm.stop_line_lane.astype(np.int32) + l0)
        stop_light.append(rm.stop_line_light.astype(np.int32))
        stop_total += len(rm.stop_line_lane)
        nj = len(rm.junction_center)
        if len(rm.light_junction) and (rm.light_junction.min() < 0 or rm.light_junction.max() >= nj):
            raise ValueError(f"RoadMap {rm.name!r}: light_junction holds an id outside 0..{nj - 1}")
        if len(rm.light_group) != len(rm.light_junction) or (
            len(rm.light_group) and rm.light_group.min() < 0
        ):
            raise ValueError(f"RoadMap {rm.name!r}: light_group must hold one id >= 0 per light")
        light_junction.append(rm.light_junction.astype(np.int32) + junction_total)
        light_group.append(rm.light_group.astype(np.int32))
        light_counts.append(len(rm.light_junction))
        groups = np.zeros(nj, np.int32)
        if len(rm.light_junction):
            np.maximum.at(groups, rm.light_junction, rm.light_group + 1)
        junction_groups.append(groups)
        junction_counts.append(nj)
        junction_total += nj
        lj = rm.lane_junction.astype(np.int32)
        a.setdefault("lane_junction_list", []).append(np.where(lj >= 0, lj + junction_total - nj, -1))
        lo, hi = rm.bounds()
        grid = grid_for_bounds(lo, hi)
        grid_origin.append(grid.origin)
        grid_cell.append(grid.cell)
        grid_nx.append(grid.nx)
        grid_ny.append(grid.ny)
        cell_counts.append(grid.nx * grid.ny)
        off, items = bin_segments(grid, seg)
        lane_cell_off.append(off[1:] + lane_cell_off[-1][-1])
        lane_cell_items.append(items + seg_total)
        off, items = bin_segments(grid, eseg)
        edge_cell_off.append(off[1:] + edge_cell_off[-1][-1])
        edge_cell_items.append(items + edge_total)
        off, items = bin_segments(grid, rm.stop_line_points.astype(np.float32).reshape(-1, 2, 3))
        stop_cell_off.append(off[1:] + stop_cell_off[-1][-1])
        stop_cell_items.append(items + stop_total - len(rm.stop_line_lane))
        seg_total += len(seg)
        edge_total += len(eseg)

    def cat(parts, shape_tail=(), dtype=np.float32):
        parts = [np.asarray(p).reshape((-1, *shape_tail)) for p in parts]
        return np.concatenate(parts).astype(dtype) if parts else np.zeros((0, *shape_tail), dtype)

    f, i = np.float32, np.int32
    a["lane_seg_a"] = cat(seg_a, (3,))
    a["lane_seg_b"] = cat(seg_b, (3,))
    a["lane_seg_lane"] = cat(seg_lane, dtype=i)
    a["lane_seg_start"] = _starts(cat(lane_seg_counts, dtype=i).tolist())
    a["lane_length"] = cat(lane_length)
    a["lane_width"] = cat([rm.lane_width for rm in road_maps])
    a["lane_speed_limit"] = cat([rm.lane_speed_limit for rm in road_maps])
    a["lane_junction"] = cat(a.pop("lane_junction_list"), dtype=i)
    a["lane_stop_line"] = cat(lane_stop, dtype=i)
    a["lane_succ_offsets"] = np.asarray(succ_off, i)
    a["lane_succ"] = cat(succ, dtype=i)
    a["lane_jump"], a["lane_jump_length"] = lane_jump_table(
        a["lane_succ_offsets"], a["lane_succ"], a["lane_length"]
    )
    a["map_lane_start"] = map_lane_start
    a["map_lane_seg_start"] = _starts(seg_counts)
    a["edge_a"] = cat(edge_a, (3,))
    a["edge_b"] = cat(edge_b, (3,))
    a["map_edge_start"] = _starts(edge_counts)
    a["edge_wall"] = cat(a.pop("edge_wall_list"), dtype=i)
    ped_parts = a.pop("ped_parts")
    ped_counts = [len(p[0]) for p in ped_parts]
    ped_start = _starts(ped_counts)
    a["ped_seg_a"] = cat([p[0] for p in ped_parts], (3,))
    a["ped_seg_b"] = cat([p[1] for p in ped_parts], (3,))
    a["ped_seg_next"] = cat(
        [np.where(p[2] >= 0, p[2] + ped_start[m], -1) for m, p in enumerate(ped_parts)], dtype=i
    )
    a["ped_seg_prev"] = cat(
        [np.where(p[3] >= 0, p[3] + ped_start[m], -1) for m, p in enumerate(ped_parts)], dtype=i
    )
    a["map_ped_seg_start"] = ped_start
    parks = a.pop("park_list")
    a["park_spot"] = cat(parks, (4,))
    a["map_park_start"] = _starts([len(p) for p in parks])
    a["map_stop_start"] = _starts([len(rm.stop_line_lane) for rm in road_maps])
    a["stop_line_a"] = cat(stop_a, (3,))
    a["stop_line_b"] = cat(stop_b, (3,))
    a["stop_line_lane"] = cat(stop_lane, dtype=i)
    a["stop_line_light"] = cat(stop_light, dtype=i)
    a["light_junction"] = cat(light_junction, dtype=i)
    a["light_group"] = cat(light_group, dtype=i)
    a["map_light_start"] = _starts(light_counts)
    a["junction_group_count"] = cat(junction_groups, dtype=i)
    a["map_junction_start"] = _starts(junction_counts)
    a["map_grid_origin"] = np.stack(grid_origin).astype(f)
    a["map_grid_cell"] = np.asarray(grid_cell, f)

    # lane association looks this far: 3 widths of the map's widest lane (and a float margin)
    a["map_lane_reach"] = np.asarray(
        [ASSOCIATION_WIDTHS * float(rm.lane_width.max()) * 1.001 + 1e-3 for rm in road_maps], f
    )
    a["map_grid_nx"] = np.asarray(grid_nx, i)
    a["map_grid_ny"] = np.asarray(grid_ny, i)
    a["map_cell_start"] = _starts(cell_counts)
    a["lane_cell_offsets"] = cat(lane_cell_off, dtype=i)
    a["lane_cell_items"] = cat(lane_cell_items, dtype=i)
    a["edge_cell_offsets"] = cat(edge_cell_off, dtype=i)
    a["edge_cell_items"] = cat(edge_cell_items, dtype=i)
    a["stop_cell_offsets"] = cat(stop_cell_off, dtype=i)
    a["stop_cell_items"] = cat(stop_cell_items, dtype=i)

    wm = layout.world_map.astype(i)
    a["world_map"] = wm
    a["world_light_start"] = layout.world_light_start.astype(i)
    world_junctions = np.asarray(junction_counts, i)[wm]
    a["world_junction_start"] = _starts(world_junctions.tolist())[:-1]
    a["world_junction_world"] = np.repeat(np.arange(len(wm), dtype=i), world_junctions)
    model.world_junction_total = int(world_junctions.sum())
    a["world_light_world"] = np.repeat(np.arange(len(wm), dtype=i), lights_per_world)
    a["world_light_map_light"] = (
        np.concatenate(
            [
                np.arange(n, dtype=i) + a["map_light_start"][m]
                for n, m in zip(lights_per_world, wm, strict=True)
            ]
        )
        if layout.light_count
        else np.zeros(0, i)
    )
    table = config.conditioning
    a["cond_low"] = np.asarray([c.low for c in table], f)
    a["cond_high"] = np.asarray([c.high for c in table], f)
    a["cond_kind"] = np.asarray([c.kind_id for c in table], i)
    v_max = float(config.eval_v_max if config.eval else config.v_max)
    vlen = config.eval_vehicle_length if config.eval else config.vehicle_length
    vwid = config.eval_vehicle_width if config.eval else config.vehicle_width
    per_type = {  # AGENT_VEHICLE, AGENT_PEDESTRIAN, AGENT_CYCLIST
        "type_v_max": (v_max, min(v_max, config.pedestrian_v_max), min(v_max, config.cyclist_v_max)),
        "type_accel_max": (A_LONG_MAX, config.pedestrian_accel_max, config.cyclist_accel_max),
        "type_length_lo": (vlen[0], config.pedestrian_length[0], config.cyclist_length[0]),
        "type_length_hi": (vlen[1], config.pedestrian_length[1], config.cyclist_length[1]),
        "type_width_lo": (vwid[0], config.pedestrian_width[0], config.cyclist_width[0]),
        "type_width_hi": (vwid[1], config.pedestrian_width[1], config.cyclist_width[1]),
        "type_height": (config.vehicle_height, config.pedestrian_height, config.cyclist_height),
    }
    for name, values in per_type.items():
        a[name] = np.asarray(values, f)

    S = layout.num_slots
    if replay is None:
        a["slot_mode"] = np.zeros(S, i)
        a["slot_track"] = np.full(S, -1, i)
        a["track_pos"] = np.zeros((0, 1, 3), f)
        a["track_heading"] = np.zeros((0, 1), f)
        a["track_speed"] = np.zeros((0, 1), f)
        a["track_valid"] = np.zeros((0, 1), i)
        a["track_size"] = np.zeros((0, 3), f)
        a["track_kind"] = np.zeros(0, i)
        a["track_goal"] = np.zeros((0, 3), f)
    else:
        replay.validate(S)
        if config.parked_per_world != 0:
            raise ValueError(
                f"SimConfig.parked_per_world must be 0 for log replay, got {config.parked_per_world}"
            )
        a["slot_mode"] = replay.slot_mode.astype(i)
        a["slot_track"] = replay.slot_track.astype(i)
        a["track_pos"] = replay.track_position.astype(f)
        a["track_heading"] = replay.track_heading.astype(f)
        a["track_speed"] = replay.track_speed.astype(f)
        a["track_valid"] = replay.track_valid.astype(i)
        a["track_size"] = replay.track_size.astype(f)
        a["track_kind"] = replay.track_kind.astype(i)
        a["track_goal"] = replay.track_goal.astype(f)
    model.replay = replay

    dtypes = {k: v for k, v in ModelData.vars.items()}
    for name, values in a.items():
        var = dtypes[name]
        dtype = var.type.dtype
        arr = _arr(values, dtype, device)
        setattr(model, name, arr)
        setattr(model.data, name, arr)

    c = config
    scalars = dict(
        dt=float(c.dt),
        episode_length=int(c.episode_length),
        early_reset_halted_fraction=float(c.early_reset_halted_fraction),
        agents_lo=int(c.agents_per_world[0]),
        agents_hi=int(c.agents_per_world[1]),
        v_max=v_max,
        v_min=float(c.v_min),
        goal_spacing_lo=float(c.goal_spacing_m[0]),
        goal_spacing_hi=float(c.goal_spacing_m[1]),
        max_goal_turn_cos=math.cos(math.radians(c.max_goal_turn_deg)),
        spawn_attempts=int(c.spawn_attempts),
        spawn_forecast_s=float(c.spawn_forecast_s),
        num_slots=int(layout.num_slots),
        num_worlds=int(layout.num_worlds),
        parked_per_world=int(layout.parked_per_world),
        block_slots=int(layout.block_slots),
        worlds_per_block=int(layout.worlds_per_block),
        pedestrian_fraction=float(c.pedestrian_fraction),
        cyclist_fraction=float(c.cyclist_fraction),
        pedestrian_goal_radius=float(c.pedestrian_goal_radius),
        ped_goal_lo=float(c.pedestrian_goal_spacing_m[0]),
        ped_goal_hi=float(c.pedestrian_goal_spacing_m[1]),
        parked_length_lo=float(c.parked_length[0]),
        parked_length_hi=float(c.parked_length[1]),
        parked_width_lo=float(c.parked_width[0]),
        parked_width_hi=float(c.parked_width[1]),
        parked_height=float(c.parked_height),
        spawn_speed_fraction=float(c.spawn_speed_fraction),
        eval_mode=int(c.eval),
        eval_goal_radius=float(c.eval_goal_radius),
        collision_speed_weight=float(c.collision_speed_weight),
        offroad_centre=int(c.offroad_centre),
        replay=int(replay is not None),
        track_steps=int(a["track_valid"].shape[1]),
        green_lo=float(c.eval_light_s[0] if c.eval else c.light_green_s[0]),
        green_hi=float(c.eval_light_s[0] if c.eval else c.light_green_s[1]),
        yellow_lo=float(c.eval_light_s[1] if c.eval else c.light_yellow_s[0]),
        yellow_hi=float(c.eval_light_s[1] if c.eval else c.light_yellow_s[1]),
        red_lo=float(c.eval_light_s[2] if c.eval else c.light_red_s[0]),
        red_hi=float(c.eval_light_s[2] if c.eval else c.light_red_s[1]),
        all_off_p=0.0 if c.eval else float(c.light_all_off_p),
        off_p=0.0 if c.eval else float(c.light_off_p),
        always_green_p=0.0 if c.eval else float(c.light_always_green_p),
    )
    for name, value in scalars.items():
        setattr(model.data, name, value)
    missing = set(ModelData.vars) - set(a) - set(scalars)
    if missing:
        raise RuntimeError(f"build_model left ModelData fields unset: {sorted(missing)}")
    return model
