"""`ModelData`: the kernel view of `pictura.sim.model.Model` (a `wp.struct` of its arrays and
rule scalars), and the per-slot modes of log replay. Shapes and units are documented on `Model`.
"""

from __future__ import annotations

import warp as wp

SLOT_SELF_PLAY, SLOT_CONTROLLED, SLOT_REPLAYED, SLOT_EMPTY = 0, 1, 2, 3
"""Per-slot modes: self-play (spawned and driven by the policy, the training default);
controlled (log replay: starts at its logged pose, the policy drives it to its single goal);
replayed (follows its logged track); empty (never populated)."""


@wp.struct
class ModelData:
    """The kernel view of `Model` (same names; see `Model` for shapes and units)."""

    # lanes
    lane_seg_a: wp.array(dtype=wp.vec3)
    lane_seg_b: wp.array(dtype=wp.vec3)
    lane_seg_lane: wp.array(dtype=wp.int32)
    lane_seg_start: wp.array(dtype=wp.int32)
    lane_length: wp.array(dtype=float)
    lane_width: wp.array(dtype=float)
    lane_speed_limit: wp.array(dtype=float)
    lane_junction: wp.array(dtype=wp.int32)
    lane_stop_line: wp.array(dtype=wp.int32)
    lane_succ_offsets: wp.array(dtype=wp.int32)
    lane_succ: wp.array(dtype=wp.int32)
    lane_jump: wp.array2d(dtype=wp.int32)
    lane_jump_length: wp.array2d(dtype=float)
    map_lane_start: wp.array(dtype=wp.int32)
    map_lane_seg_start: wp.array(dtype=wp.int32)
    # road edges
    edge_a: wp.array(dtype=wp.vec3)
    edge_b: wp.array(dtype=wp.vec3)
    edge_wall: wp.array(dtype=wp.int32)
    map_edge_start: wp.array(dtype=wp.int32)
    # pedestrian paths and parking
    ped_seg_a: wp.array(dtype=wp.vec3)
    ped_seg_b: wp.array(dtype=wp.vec3)
    ped_seg_next: wp.array(dtype=wp.int32)
    ped_seg_prev: wp.array(dtype=wp.int32)
    map_ped_seg_start: wp.array(dtype=wp.int32)
    park_spot: wp.array(dtype=wp.vec4)
    map_park_start: wp.array(dtype=wp.int32)
    # stop lines, lights, junctions
    stop_line_a: wp.array(dtype=wp.vec3)
    stop_line_b: wp.array(dtype=wp.vec3)
    stop_line_lane: wp.array(dtype=wp.int32)
    stop_line_light: wp.array(dtype=wp.int32)
    map_stop_start: wp.array(dtype=wp.int32)
    light_junction: wp.array(dtype=wp.int32)
    light_group: wp.array(dtype=wp.int32)
    map_light_start: wp.array(dtype=wp.int32)
    junction_group_count: wp.array(dtype=wp.int32)
    map_junction_start: wp.array(dtype=wp.int32)
    # spatial grids
    map_grid_origin: wp.array(dtype=wp.vec2)
    map_grid_cell: wp.array(dtype=float)
    map_lane_reach: wp.array(dtype=float)
    map_grid_nx: wp.array(dtype=wp.int32)
    map_grid_ny: wp.array(dtype=wp.int32)
    map_cell_start: wp.array(dtype=wp.int32)
    lane_cell_offsets: wp.array(dtype=wp.int32)
    lane_cell_items: wp.array(dtype=wp.int32)
    edge_cell_offsets: wp.array(dtype=wp.int32)
    edge_cell_items: wp.array(dtype=wp.int32)
    stop_cell_offsets: wp.array(dtype=wp.int32)
    stop_cell_items: wp.array(dtype=wp.int32)
    # world layout
    world_map: wp.array(dtype=wp.int32)
    world_light_start: wp.array(dtype=wp.int32)
    world_junction_start: wp.array(dtype=wp.int32)
    world_junction_world: wp.array(dtype=wp.int32)
    world_light_world: wp.array(dtype=wp.int32)
    world_light_map_light: wp.array(dtype=wp.int32)
    # conditioning table (Table 2)
    cond_low: wp.array(dtype=float)
    cond_high: wp.array(dtype=float)
    cond_kind: wp.array(dtype=wp.int32)
    # per agent type (AGENT_* index)
    type_v_max: wp.array(dtype=float)
    type_accel_max: wp.array(dtype=float)
    type_length_lo: wp.array(dtype=float)
    type_length_hi: wp.array(dtype=float)
    type_width_lo: wp.array(dtype=float)
    type_width_hi: wp.array(dtype=float)
    type_height: wp.array(dtype=float)
    # rules (SimConfig)
    dt: float
    episode_length: int
    early_reset_halted_fraction: float
    agents_lo: int
    agents_hi: int
    v_max: float
    v_min: float
    goal_spacing_lo: float
    goal_spacing_hi: float
    max_goal_turn_cos: float
    spawn_attempts: int
    spawn_forecast_s: float
    num_slots: int
    num_worlds: int
    parked_per_world: int
    block_slots: int  # packed layouts (`WorldLayout.packed`): slots per block; 0: static layout
    worlds_per_block: int
    pedestrian_fraction: float
    cyclist_fraction: float
    pedestrian_goal_radius: float
    ped_goal_lo: float
    ped_goal_hi: float
    parked_length_lo: float
    parked_length_hi: float
    parked_width_lo: float
    parked_width_hi: float
    parked_height: float
    spawn_speed_fraction: float
    eval_mode: int
    eval_goal_radius: float
    collision_speed_weight: float
    offroad_centre: int
    # log replay (`pictura.sim.replay`); all empty and replay = 0 for self-play
    replay: int
    slot_mode: wp.array(dtype=wp.int32)
    slot_track: wp.array(dtype=wp.int32)
    track_pos: wp.array2d(dtype=wp.vec3)
    track_heading: wp.array2d(dtype=float)
    track_speed: wp.array2d(dtype=float)
    track_valid: wp.array2d(dtype=wp.int32)
    track_size: wp.array(dtype=wp.vec3)
    track_kind: wp.array(dtype=wp.int32)
    track_goal: wp.array(dtype=wp.vec3)
    track_steps: int
    green_lo: float
    green_hi: float
    yellow_lo: float
    yellow_hi: float
    red_lo: float
    red_hi: float
    all_off_p: float
    off_p: float
    always_green_p: float
