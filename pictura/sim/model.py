"""`Model`: the static scene of all worlds, packed into Warp arrays on one device.

Maps are packed back to back (a world plays on one map; many worlds may share a map). Ids in
the packed arrays are global: lane ``l`` of map ``m`` is ``map_lane_start[m] + l``. Shapes use
M maps, L lanes, N lane segments, E road-edge segments, K stop lines, T map lights,
J junctions, C grid cells (all maps), W worlds, S slots, Tw world lights.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pictura.sim.config import SimConfig
from pictura.sim.model_data import ModelData
from pictura.sim.snapshot import WorldLayout
from pictura.sim.state import Control, State

if TYPE_CHECKING:
    from pictura.sim.replay import ReplayLog


class Model:
    """Static data of every world (built once by `build_model`; never written by `step`).

    Lanes (global ids over all maps):
      lane_seg_a, lane_seg_b   (N,) vec3, m      centreline segment endpoints, direction of travel
      lane_seg_lane            (N,) int32        owning lane id
      lane_seg_start           (L + 1,) int32    CSR: segments of lane l are [start[l], start[l+1])
      lane_length              (L,) float, m
      lane_width               (L,) float, m
      lane_speed_limit         (L,) float, m/s   0 = none given (rules use 15 m/s)
      lane_junction            (L,) int32        global junction id or -1
      lane_stop_line           (L,) int32        global stop line ending this lane or -1
      lane_succ_offsets        (L + 1,) int32    CSR into lane_succ
      lane_succ                (Es,) int32       successor lane ids (global)
      lane_jump                (L, 8) int32      lane 2^k single-successor hops ahead, -1 when a
                                                 lane on the way has 0 or several successors
      lane_jump_length         (L, 8) float, m   length of the 2^k lanes skipped by that jump
      map_lane_start           (M + 1,) int32    lanes of map m: [start[m], start[m+1])
      map_lane_seg_start       (M + 1,) int32    lane segments of map m
    Road edges and walls (one list, one grid): edge_a, edge_b (E,) vec3 m; edge_wall (E,) int
                  1 for a wall base segment (walls: off-road for vehicles and cyclists, a
                  collision for pedestrians), 0 for a road edge; map_edge_start (M + 1,)
    Pedestrian paths: ped_seg_a/b (Np,) vec3 m: sidewalk centrelines, crosswalk centre lines, or
                  the road edges when a map has neither; ped_seg_next/prev (Np,) neighbour
                  segment on the same polyline or -1; map_ped_seg_start (M + 1,)
    Parking:      park_spot (Kp,) vec4 (x, y, z m, heading rad); map_park_start (M + 1,)
    Stop lines:   stop_line_a/b (K,) vec3 m; stop_line_lane (K,) global lane;
                  stop_line_light (K,) map-local light index or -1; map_stop_start (M + 1,)
    Lights:       light_junction (T,) global junction; light_group (T,) phase group;
                  map_light_start (M + 1,); junction_group_count (J,); map_junction_start (M + 1,)
    Grids (one per map): map_grid_origin (M,) vec2 m; map_grid_cell (M,) m;
                  map_grid_nx/ny (M,); map_cell_start (M + 1,) first cell of map m;
                  map_lane_reach (M,) m: lane association search radius (3 x widest lane);
                  lane_cell_offsets (C + 1,), lane_cell_items: global lane segment ids per cell;
                  edge_cell_offsets (C + 1,), edge_cell_items: global road-edge segment ids per cell;
                  stop_cell_offsets (C + 1,), stop_cell_items: global stop line ids per cell
    Layout (`WorldLayout`): world_map, world_light_start (W,);
                  world_junction_start (W,) first world-junction of world w; world_junction_world
                  (Jw,) world of each world junction (the slot ranges, world_slot_start /
                  world_slot_count / slot_world, are per episode in `State`);
                  world_light_world (Tw,) world of each world light; world_light_map_light (Tw,)
                  its global map light id
    Conditioning: cond_low, cond_high (17,) float; cond_kind (17,) DIST_* (Table 2)
    Agent types:  type_v_max, type_accel_max (3,) m/s, m/s^2; type_length_lo/hi,
                  type_width_lo/hi, type_height (3,) m, indexed by AGENT_*
    Log replay (`pictura.sim.replay.ReplayLog`; R packed tracks over Tr steps; R = 0 and
                  replay = 0 for self-play): slot_mode (S,) SLOT_*; slot_track (S,) packed
                  track row or -1; track_pos (R, Tr) vec3 m; track_heading (R, Tr) rad;
                  track_speed (R, Tr) m/s signed along the heading; track_valid (R, Tr) int 0/1
                  (the first valid run of the log only); track_size (R,) vec3 length, width,
                  height m; track_kind (R,) AGENT_*; track_goal (R,) vec3 m last valid position
    """

    def __init__(self, device: str, config: SimConfig, layout: WorldLayout, map_names: list[str]):
        self.device = device
        self.config = config
        self.layout = layout
        self.map_names = map_names
        self.replay: ReplayLog | None = None
        self.data = ModelData()

    @property
    def num_slots(self) -> int:
        return self.layout.num_slots

    @property
    def num_worlds(self) -> int:
        return self.layout.num_worlds

    @property
    def light_count(self) -> int:
        return self.layout.light_count

    @property
    def junction_count(self) -> int:
        """World junctions over all worlds (length of the per-junction light schedule arrays)."""
        return self.world_junction_total

    def state(self) -> State:
        """A zeroed `State` for this model (call `pictura.sim.reset` before stepping it)."""
        return State(self)

    def control(self) -> Control:
        """A `Control` with one action per slot."""
        return Control(self)
