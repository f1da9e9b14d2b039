"""All simulator kernels, in one Warp module so a cold cache compiles them once.

Step order (launched by `pictura.sim.step.step`): `integrate_kernel` (dynamics) ->
`contact_kernel` (collision and swept edge tests, split over parts) -> `rules_kernel` (lane association, events, goals, rewards, dones) -> `goal_walk_kernel` (goal
sets the rules asked for) -> `world_clock_kernel` (episode clock, reset decision) ->
`final_observe_kernel` (takes those goal sets; pre-reset snapshot) -> the masked world resets
(packed layouts first: `pack_records_kernel`, `pack_slots_kernel`; then `reset_rows_kernel`, `spawn_static_kernel`, `spawn_round_kernel` x (SPAWN_ROUNDS + 1), each round >= 0 after a
`spawn_conflict_kernel`,
`goal_walk_kernel`; log replay: `replay_reset_kernel`) -> `observe_kernel` (takes the spawns'
goal sets; snapshot, observations, lights).
"""

# ruff: noqa: UP018 -- Warp declares a mutable dynamic variable as int(0) / float(0.0) / bool(...)

from __future__ import annotations

import warp as wp

from pictura.maps.roadmap import AGENT_PEDESTRIAN
from pictura.sim.config import DIST_FIXED, DIST_UMIX
from pictura.sim.dynamics import bicycle_step
from pictura.sim.events import (
    centre_on_drivable_map,
    collides_part,
    crosses_road_edge,
    crosses_road_edge_part,
    goal_reached,
    runs_red_light,
    sweep_circle,
)
from pictura.sim.features import (
    COND_ACC,
    COND_DELTA_GOAL,
    COND_STEER,
    COND_THROTTLE,
    COND_V_GOAL,
    CONDITIONING_WIDTH,
    EVENT_COLLISION,
    EVENT_GOAL,
    EVENT_OFFROAD,
    EVENT_RED_LIGHT,
    NUM_COEFFICIENTS,
    NUM_EVENTS,
    NUM_REWARD_TERMS,
)
from pictura.sim.geometry import boxes_overlap, rng_key, swept_boxes_overlap, wrap_angle
from pictura.sim.goals import goal_set_try, request_goal_set, take_goal_set
from pictura.sim.lanes import GOAL_WALK_TRIES, associate_lane, lane_speed_limit
from pictura.sim.model_data import SLOT_CONTROLLED, SLOT_REPLAYED, ModelData
from pictura.sim.replay import follow_log, restore_logged_world
from pictura.sim.rewards import write_rewards
from pictura.sim.snapshot import BOX_INVALID, BOX_ROW_FLOATS, BoxCol
from pictura.sim.spawn import (
    EAGER_AGENT_TRIES,
    PURPOSE_GOALS,
    PURPOSE_SEED,
    STATIC_UNKNOWN,
    agent_count_draw,
    begin_row_reset,
    draw_agent_count,
    draw_junction,
    draw_light_off,
    row_world,
    spawn_conflict_part,
    spawn_round_row,
    static_try_ok,
)
from pictura.sim.state import ControlData, StateData
from pictura.sim.traffic import light_phase

# No gradients flow through the simulator; skipping adjoint code halves the cold compile.
wp.set_module_options({"enable_backward": False, "max_unroll": 1})

_COND_WIDTH = wp.constant(CONDITIONING_WIDTH)
_NUM_COEF = wp.constant(NUM_COEFFICIENTS)
_NUM_TERMS = wp.constant(NUM_REWARD_TERMS)
_NUM_EVENTS = wp.constant(NUM_EVENTS)
_C_THROTTLE = wp.constant(COND_THROTTLE)
_C_STEER = wp.constant(COND_STEER)
_C_ACC = wp.constant(COND_ACC)
_C_DELTA_GOAL = wp.constant(COND_DELTA_GOAL)
_C_V_GOAL = wp.constant(COND_V_GOAL)
_E_COLLISION = wp.constant(EVENT_COLLISION)
_E_OFFROAD = wp.constant(EVENT_OFFROAD)
_E_GOAL = wp.constant(EVENT_GOAL)
_E_RED_LIGHT = wp.constant(EVENT_RED_LIGHT)
_DIST_FIXED = wp.constant(DIST_FIXED)
_DIST_UMIX = wp.constant(DIST_UMIX)
_BOX_INVALID = wp.constant(BOX_INVALID)
_PEDESTRIAN = wp.constant(AGENT_PEDESTRIAN)
_P_GOALS = wp.constant(PURPOSE_GOALS)
_P_SEED = wp.constant(PURPOSE_SEED)
_GOAL_TRIES = wp.constant(GOAL_WALK_TRIES)
_EAGER_AGENT_TRIES = wp.constant(EAGER_AGENT_TRIES)
_STATIC_UNKNOWN = wp.constant(STATIC_UNKNOWN)
_CONTROLLED = wp.constant(SLOT_CONTROLLED)
_REPLAYED = wp.constant(SLOT_REPLAYED)


@wp.func
def clear_step_outputs(state: StateData, slot: int):
    """Reward, its terms, events and dones of ``slot`` back to 0 (start of a step, `reset`)."""
    state.reward[slot] = 0.0
    for k in range(_NUM_TERMS):
        state.reward_terms[slot, k] = 0.0
    for k in range(_NUM_EVENTS):
        state.events[slot, k] = 0
    state.terminated[slot] = 0
    state.truncated[slot] = 0


@wp.kernel
def integrate_kernel(model: ModelData, state_in: StateData, control: ControlData, state_out: StateData):
    """Carry every per-slot field over and advance active agents by the bicycle model;
    replayed slots (log replay) take their logged pose instead."""
    slot = wp.tid()
    if slot < model.num_worlds:
        # (W <= S) this episode's slot range goes on (a block reset redraws it later in the
        # step); clear the counts `rules_kernel` adds to
        state_out.world_slot_start[slot] = state_in.world_slot_start[slot]
        state_out.world_slot_count[slot] = state_in.world_slot_count[slot]
        state_out.final_world_slot_start[slot] = state_in.world_slot_start[slot]
        state_out.final_world_slot_count[slot] = state_in.world_slot_count[slot]
        state_out.world_valid_count[slot] = 0
        state_out.world_halted_count[slot] = 0
    state_out.slot_world[slot] = state_in.slot_world[slot]
    state_out.final_slot_world[slot] = state_in.slot_world[slot]  # the ranges before this step's resets
    # fields the dynamics do not touch
    state_out.length[slot] = state_in.length[slot]
    state_out.width[slot] = state_in.width[slot]
    state_out.height[slot] = state_in.height[slot]
    state_out.kind[slot] = state_in.kind[slot]
    state_out.valid[slot] = state_in.valid[slot]
    state_out.halted[slot] = state_in.halted[slot]
    state_out.lane[slot] = state_in.lane[slot]
    state_out.lane_offset[slot] = state_in.lane_offset[slot]
    state_out.lane_heading_error[slot] = state_in.lane_heading_error[slot]
    state_out.goal_index[slot] = state_in.goal_index[slot]
    state_out.path_seg[slot] = state_in.path_seg[slot]
    for g in range(3):
        state_out.goal[slot, g] = state_in.goal[slot, g]
    for c in range(_COND_WIDTH):
        state_out.conditioning[slot, c] = state_in.conditioning[slot, c]
    clear_step_outputs(state_out, slot)  # per-step outputs start cleared

    pos = state_in.pos[slot]
    heading = state_in.heading[slot]
    state_out.prev_pos[slot] = pos
    state_out.prev_heading[slot] = heading
    replayed = model.slot_mode[slot] == _REPLAYED
    if state_in.valid[slot] != 0 and state_in.halted[slot] == 0 and not replayed:
        a_long = state_in.accel_long[slot]
        a_lat = state_in.accel_lat[slot]
        kind = state_in.kind[slot]
        x, y, h, v, a_long_new, a_lat_new, steering, arc = bicycle_step(
            pos[0],
            pos[1],
            heading,
            state_in.speed[slot],
            a_long,
            a_lat,
            state_in.steering[slot],
            state_in.length[slot],
            control.action[slot],
            state_in.conditioning[slot, _C_THROTTLE],
            state_in.conditioning[slot, _C_STEER],
            state_in.conditioning[slot, _C_ACC],
            model.v_min,
            model.type_v_max[kind],
            model.type_accel_max[kind],
            model.dt,
        )
        state_out.pos[slot] = wp.vec3(x, y, pos[2])
        state_out.heading[slot] = wrap_angle(h)
        state_out.speed[slot] = v
        state_out.accel_long[slot] = a_long_new
        state_out.accel_lat[slot] = a_lat_new
        state_out.jerk_long[slot] = (a_long_new - a_long) / model.dt
        state_out.jerk_lat[slot] = (a_lat_new - a_lat) / model.dt
        state_out.steering[slot] = steering
        state_out.distance[slot] = state_in.distance[slot] + wp.abs(arc)
    else:
        state_out.pos[slot] = pos
        state_out.heading[slot] = heading
        state_out.speed[slot] = 0.0
        state_out.accel_long[slot] = 0.0
        state_out.accel_lat[slot] = 0.0
        state_out.jerk_long[slot] = 0.0
        state_out.jerk_lat[slot] = 0.0
        state_out.steering[slot] = state_in.steering[slot]
        state_out.distance[slot] = state_in.distance[slot]
    if replayed:
        follow_log(model, state_in, slot, state_out)
    state_out.sweep_circle[slot] = sweep_circle(state_out, slot)


@wp.kernel
def contact_kernel(
    model: ModelData,
    agent_parts: int,
    parked_parts: int,
    edge_parts: int,
    state_in: StateData,
    state_out: StateData,
):
    """The contact tests of every slot that `rules_kernel` tests (valid, not halted, not
    replayed), one thread per (part, slot): parts ``< agent_parts + parked_parts`` run
    `collides_part` (a hit sets the slot's collision event), the next ``edge_parts`` run
    `crosses_road_edge_part` on the swept box (road edges and walls; pedestrians: walls only)
    and a hit sets the off-road event. Both events are cleared by `integrate_kernel`;
    `rules_kernel` turns them into the step's infraction. The OR over parts is the one-thread
    result whatever the thread order; a thread's chain is ~1 / parts of the one-thread loops.
    Threads of a warp share a part (part-major thread index), so they take the same branch."""
    part, slot = wp.tid()
    if state_out.valid[slot] == 0:
        return
    if state_out.halted[slot] != 0:
        return
    if model.slot_mode[slot] == _REPLAYED:
        return
    w = state_out.slot_world[slot]
    contact_parts = agent_parts + parked_parts
    if part < contact_parts:
        if collides_part(model, state_out, state_in.agent_box, slot, w, part, agent_parts, parked_parts) != 0:
            state_out.events[slot, _E_COLLISION] = 1
    else:
        walls_only = int(0)
        if state_out.kind[slot] == _PEDESTRIAN:
            walls_only = 1
        hit = crosses_road_edge_part(
            model,
            model.world_map[w],
            state_out.prev_pos[slot],
            state_out.prev_heading[slot],
            state_out.pos[slot],
            state_out.heading[slot],
            state_out.length[slot],
            state_out.width[slot],
            walls_only,
            part - contact_parts,
            edge_parts,
        )
        if hit != 0:
            state_out.events[slot, _E_OFFROAD] = 1


@wp.kernel
def rules_kernel(model: ModelData, state_in: StateData, state_out: StateData):
    """Lane association, off-road (swept box across a road edge, or the centre off the
    drivable map) then collision then red light (one infraction at most), goals, rewards,
    dones, for every agent active before this step.

    Pedestrians have no off-road or red-light rule; a wall crossed by a pedestrian is a
    collision. Parked cars are read from ``state_in.agent_box`` (they only change at resets).
    Log replay: replayed slots have no rules (others collide with them); a controlled vehicle
    has one goal; reaching it sets goal_index 3 and `world_clock_kernel` then removes the vehicle
    (not here: other threads of this launch read ``valid`` in their collision test).

    Counts each world's valid and halted slots after the rules into ``world_valid_count`` /
    ``world_halted_count`` (cleared by `integrate_kernel`) for the early-reset decision."""
    slot = wp.tid()
    if state_out.valid[slot] == 0:
        return
    w = state_out.slot_world[slot]
    wp.atomic_add(state_out.world_valid_count, w, 1)
    if state_out.halted[slot] != 0:
        wp.atomic_add(state_out.world_halted_count, w, 1)
        return
    mode = model.slot_mode[slot]
    if mode == _REPLAYED:
        return
    controlled = mode == _CONTROLLED
    m = model.world_map[w]
    kind = state_out.kind[slot]
    pedestrian = kind == _PEDESTRIAN
    pos = state_out.pos[slot]
    heading = state_out.heading[slot]
    lane, offset, err = associate_lane(model, m, pos, heading, state_out.lane[slot])
    state_out.lane[slot] = lane
    state_out.lane_offset[slot] = offset
    state_out.lane_heading_error[slot] = err

    # the swept box's edge / wall test and the collision test: `contact_kernel`, just before
    crossed = state_out.events[slot, _E_OFFROAD]  # pedestrians: walls only
    offroad = int(0)
    if not pedestrian:
        offroad = crossed
        if offroad == 0 and model.offroad_centre != 0 and not centre_on_drivable_map(model, m, pos, lane):
            offroad = 1  # App. C.1: the centre left the drivable map
    collision = int(0)
    if offroad == 0:
        collision = state_out.events[slot, _E_COLLISION]
        if collision == 0 and pedestrian:
            collision = crossed  # a wall crossed by a pedestrian
    red_light = int(0)
    if offroad == 0 and collision == 0 and not pedestrian:
        red_light = runs_red_light(model, state_in, state_out, slot, w)

    # goals: the first two waypoints of a set pay on contact, the third only below v_goal
    # (training; in eval on contact too)
    v = state_out.speed[slot]
    paid = int(0)
    gi = state_out.goal_index[slot]
    if offroad == 0 and collision == 0 and red_light == 0 and controlled:
        # log replay: a single goal (the final logged position), the eval radius, any speed
        if goal_reached(state_out.goal[slot, 0], state_out.prev_pos[slot], pos, model.eval_goal_radius):
            paid = 1
            gi = 3
    elif offroad == 0 and collision == 0 and red_light == 0 and gi < 3:
        radius = state_out.conditioning[slot, _C_DELTA_GOAL]
        if model.eval_mode != 0:
            radius = model.eval_goal_radius
            if pedestrian:
                radius = wp.min(radius, model.pedestrian_goal_radius)
        if goal_reached(state_out.goal[slot, gi], state_out.prev_pos[slot], pos, radius):
            # v_goal is a training-reward coefficient: in eval every waypoint within the 2 m
            # radius counts (App. C.1's goal metric), whatever v_goal was drawn
            if gi < 2 or model.eval_mode != 0 or v < state_out.conditioning[slot, _C_V_GOAL]:
                paid = 1
                gi = gi + 1
    if gi >= 3 and (lane >= 0 or pedestrian) and not controlled:
        # open-ended episodes: the next set starts from the current lane (pedestrians: from
        # the path segment and position of the last waypoint), drawn by the goal-walk pass
        # that follows this kernel (streams slot x GOAL_WALK_TRIES ..)
        key = rng_key(state_in.world_seed[w], _P_GOALS, state_in.world_episode[w], state_in.world_step[w])
        request_goal_set(state_out, slot, key, slot * _GOAL_TRIES)
    state_out.goal_index[slot] = gi

    state_out.events[slot, _E_OFFROAD] = offroad
    state_out.events[slot, _E_COLLISION] = collision
    state_out.events[slot, _E_RED_LIGHT] = red_light
    state_out.events[slot, _E_GOAL] = paid
    write_rewards(
        state_out,
        slot,
        model.dt,
        paid,
        collision,
        offroad,
        red_light,
        lane_speed_limit(model, lane),
        model.collision_speed_weight,
    )

    if offroad != 0 or collision != 0 or red_light != 0:
        # infractions are terminal: the agent halts in place and stays as an obstacle
        state_out.terminated[slot] = 1
        state_out.halted[slot] = 1
        wp.atomic_add(state_out.world_halted_count, w, 1)
        state_out.speed[slot] = 0.0
        state_out.accel_long[slot] = 0.0
        state_out.accel_lat[slot] = 0.0


@wp.kernel
def world_clock_kernel(model: ModelData, state_in: StateData, state_out: StateData):
    """Advance each world's clock and decide its reset (past episode_length, or too many
    halted; packed layouts: halted over the whole block; log replay: no early reset); a
    resetting world of a static layout draws its new agent count. Clears
    ``world_active_count`` (`observe_kernel` counts)."""
    w = wp.tid()
    state_out.world_seed[w] = state_in.world_seed[w]
    state_out.world_agent_count[w] = state_in.world_agent_count[w]
    state_out.world_active_count[w] = 0
    episode = state_in.world_episode[w]
    step = state_in.world_step[w] + 1
    start = state_out.world_slot_start[w]
    count = state_out.world_slot_count[w]
    if model.replay != 0:
        # log replay: a controlled vehicle that reached its single goal leaves the world
        for slot in range(start, start + count):
            if model.slot_mode[slot] == _CONTROLLED and state_out.valid[slot] != 0:
                if state_out.goal_index[slot] >= 3:
                    state_out.valid[slot] = 0
                    state_out.speed[slot] = 0.0
    n_valid = state_out.world_valid_count[w]
    n_halted = state_out.world_halted_count[w]
    if model.block_slots > 0:
        # packed: the world records of a block reset together, on the block's counts (their
        # clocks agree, so every record of the block takes the same decision)
        first = (w // model.worlds_per_block) * model.worlds_per_block
        n_valid = int(0)
        n_halted = int(0)
        for k in range(first, first + model.worlds_per_block):
            n_valid += state_out.world_valid_count[k]
            n_halted += state_out.world_halted_count[k]
    reset = step >= model.episode_length
    if (
        model.replay == 0
        and n_valid > 0
        and float(n_halted) >= model.early_reset_halted_fraction * float(n_valid)
    ):
        reset = True
    state_out.world_reset[w] = 0
    if reset:
        episode = episode + 1
        step = 0
        state_out.world_reset[w] = 1
    state_out.world_episode[w] = episode
    state_out.world_step[w] = step
    if reset and model.replay == 0 and model.block_slots == 0:
        draw_agent_count(model, state_out, w)  # packed layouts: `pack_records_kernel`


@wp.kernel
def reset_clock_kernel(model: ModelData, seed: int, state: StateData):
    """`reset`: key every world's RNG from ``seed``, restart its clock, flag it for the reset
    launches and draw its agent count."""
    w = wp.tid()
    state.world_seed[w] = rng_key(seed, _P_SEED, w, 0)
    state.world_episode[w] = 0
    state.world_step[w] = 0
    state.world_reset[w] = 1
    state.world_active_count[w] = 0
    if model.replay == 0 and model.block_slots == 0:
        draw_agent_count(model, state, w)  # packed layouts: `pack_records_kernel`


@wp.kernel
def reset_worlds_clock_kernel(model: ModelData, world_mask: wp.array(dtype=wp.int32), state: StateData):
    """`reset_worlds`: flag the masked worlds for the reset launches and start their next
    episode (the episode counter keys their draws, so the new episode differs from the last);
    the other worlds keep their clock. Clears ``world_active_count`` (`observe_kernel`
    recounts every world)."""
    w = wp.tid()
    state.world_active_count[w] = 0
    state.world_reset[w] = 0
    if world_mask[w] == 0:
        return
    state.world_episode[w] = state.world_episode[w] + 1
    state.world_step[w] = 0
    state.world_reset[w] = 1
    if model.replay == 0 and model.block_slots == 0:
        draw_agent_count(model, state, w)  # packed layouts: `pack_records_kernel`


@wp.kernel
def pack_records_kernel(model: ModelData, state: StateData):
    """Packed layouts, one thread per world record of a resetting block: the block's records
    draw their agent counts U{agents_lo, agents_hi} in order (each from its own RNG stream,
    `agent_count_draw`) and take consecutive slot ranges from the block's first slot while
    they fit; the first record that would overflow the block, and every record after it, get
    count 0 this episode. Each thread replays the draws of the records before it (<=
    worlds_per_block), so no thread waits on another. Writes ``world_slot_start``,
    ``world_slot_count`` and ``world_agent_count`` (the same count: a record's range is
    exactly its agents)."""
    w = wp.tid()
    if state.world_reset[w] == 0:
        return
    block = w // model.worlds_per_block
    first = block * model.worlds_per_block
    start = block * model.block_slots
    end = start + model.block_slots
    full = bool(False)
    count = int(0)
    for k in range(first, w + 1):
        n = agent_count_draw(model, state, k)
        if full or start + n > end:
            full = True
            n = 0
        count = n
        if k < w:
            start += n
    state.world_slot_start[w] = start
    state.world_slot_count[w] = count
    state.world_agent_count[w] = count


@wp.kernel
def pack_slots_kernel(model: ModelData, state: StateData):
    """Packed layouts, one thread per slot of a resetting block: ``slot_world`` from the
    ranges `pack_records_kernel` wrote (a slot outside every range: the block's first
    record)."""
    slot = wp.tid()
    first = (slot // model.block_slots) * model.worlds_per_block
    if state.world_reset[first] == 0:
        return
    owner = first
    for k in range(first, first + model.worlds_per_block):
        start = state.world_slot_start[k]
        if slot >= start and slot < start + state.world_slot_count[k]:
            owner = k
    state.slot_world[slot] = owner


@wp.kernel
def reset_rows_kernel(model: ModelData, state_in: StateData, from_step: int, state_out: StateData):
    """One thread per snapshot row (S slots, then the parked rows), world junction and world
    light. In a resetting world: slots active before the step and not terminated get
    ``truncated`` (``from_step``; `reset` clears the per-step outputs instead), rows are cleared
    and drawn (`begin_row_reset`), junctions and lights draw their new schedule. Other worlds
    carry their parked rows, schedules and outages over from ``state_in``. Log replay: slots,
    junctions and lights of resetting worlds are left to ``replay_reset_kernel``."""
    tid = wp.tid()
    rows = model.num_slots + model.num_worlds * model.parked_per_world
    jw = model.world_junction_world.shape[0]
    if tid < model.num_slots:
        slot = tid
        if state_out.world_reset[state_out.slot_world[slot]] == 0:
            return
        if from_step != 0:
            if state_in.valid[slot] != 0 and state_in.halted[slot] == 0 and state_out.terminated[slot] == 0:
                if model.slot_mode[slot] != _REPLAYED:
                    state_out.truncated[slot] = 1
        else:
            clear_step_outputs(state_out, slot)
        if model.replay == 0:
            begin_row_reset(model, state_out, slot)
    elif tid < rows:
        row = tid
        if state_out.world_reset[row_world(model, state_out, row)] != 0:
            begin_row_reset(model, state_out, row)
        else:
            for c in range(BOX_ROW_FLOATS):
                state_out.agent_box[row, c] = state_in.agent_box[row, c]
    elif tid < rows + jw:
        wj = tid - rows
        if state_out.world_reset[model.world_junction_world[wj]] == 0:
            state_out.junction_green[wj] = state_in.junction_green[wj]
            state_out.junction_yellow[wj] = state_in.junction_yellow[wj]
            state_out.junction_red[wj] = state_in.junction_red[wj]
            state_out.junction_offset[wj] = state_in.junction_offset[wj]
            state_out.junction_mode[wj] = state_in.junction_mode[wj]
        elif model.replay == 0:
            draw_junction(model, state_out, wj)
    else:
        tl = tid - rows - jw
        if state_out.world_reset[model.world_light_world[tl]] == 0:
            state_out.light_off[tl] = state_in.light_off[tl]
        elif model.replay == 0:
            draw_light_off(model, state_out, tl)


@wp.kernel
def spawn_static_kernel(model: ModelData, state: StateData):
    """One thread per try tested up front in the resetting worlds (`static_try_ok`): the first
    `EAGER_AGENT_TRIES` of every slot (S x EAGER_AGENT_TRIES threads, later ones stay unknown
    until a round reaches them), then every try of every parked row (P x spawn_attempts)."""
    tid = wp.tid()
    row = int(0)
    attempt = int(0)
    tries = wp.min(_EAGER_AGENT_TRIES, model.spawn_attempts)
    eager = model.num_slots * tries
    if tid < eager:
        row = tid // tries
        attempt = tid - row * tries
    else:
        row = model.num_slots + (tid - eager) // model.spawn_attempts
        attempt = tid - eager - (row - model.num_slots) * model.spawn_attempts
    if state.world_reset[row_world(model, state, row)] == 0:
        return
    if row < model.num_slots and attempt == 0:
        # the tries left to the rounds
        for later in range(tries, model.spawn_attempts):
            state.spawn_static_ok[row, later] = _STATIC_UNKNOWN
    state.spawn_static_ok[row, attempt] = static_try_ok(model, state, row, attempt)


@wp.kernel
def spawn_conflict_kernel(model: ModelData, spawn_round: int, parts: int, state: StateData):
    """One thread per (part, snapshot row) of the resetting worlds: `spawn_conflict_part`, the
    acceptance test of round ``spawn_round`` >= 0 split over the higher-ranked rows (a
    thread's chain is ~1 / parts of the up to 159 ranks of one row)."""
    part, row = wp.tid()
    if state.world_reset[row_world(model, state, row)] != 0:
        spawn_conflict_part(model, state, row, spawn_round, part, parts)


@wp.kernel
def spawn_round_kernel(model: ModelData, spawn_round: int, last: int, state: StateData):
    """One thread per snapshot row of the resetting worlds: `spawn_round`."""
    row = wp.tid()
    # (the mask is tested here, not only inside: on "cpu" every call copies the structs)
    if state.world_reset[row_world(model, state, row)] != 0:
        spawn_round_row(model, state, row, spawn_round, last)


@wp.kernel
def replay_reset_kernel(model: ModelData, state: StateData):
    """Log replay: resetting worlds go back to their logged start."""
    w = wp.tid()
    if state.world_reset[w] != 0:
        restore_logged_world(model, state, w)


@wp.func
def world_light_state(model: ModelData, state: StateData, tid: int, world_step: int):
    """LIGHT_* of world light ``tid`` from its junction's schedule in ``state`` at ``world_step``."""
    w = model.world_light_world[tid]
    ml = model.world_light_map_light[tid]
    j = model.light_junction[ml]
    wj = model.world_junction_start[w] + j - model.map_junction_start[model.world_map[w]]
    t = float(world_step) * model.dt + state.junction_offset[wj]
    return light_phase(
        t,
        model.light_group[ml],
        model.junction_group_count[j],
        state.junction_green[wj],
        state.junction_yellow[wj],
        state.junction_red[wj],
        state.junction_mode[wj],
        state.light_off[tid],
    )


@wp.func
def normalise_coefficient(model: ModelData, c: int, value: float):
    """Table 2 value -> [-1, 1]: linear over [low, high]; U_mix piecewise linear with 1 -> 0;
    fixed -> 0."""
    lo = model.cond_low[c]
    hi = model.cond_high[c]
    kind = model.cond_kind[c]
    out = float(0.0)
    if kind == _DIST_UMIX:
        if value >= 1.0:
            if hi > 1.0:
                out = (value - 1.0) / (hi - 1.0)
        elif lo < 1.0:
            out = (value - 1.0) / (1.0 - lo)
    elif kind != _DIST_FIXED and hi > lo:
        out = 2.0 * (value - lo) / (hi - lo) - 1.0
    return out


@wp.func
def write_observation(
    model: ModelData,
    state: StateData,
    slot: int,
    box_out: wp.array2d(dtype=float),
    ego_out: wp.array2d(dtype=float),
    ego_aux_out: wp.array2d(dtype=float),
    goals_out: wp.array2d(dtype=float),
    conditioning_out: wp.array2d(dtype=float),
):
    """The snapshot row and observation features of ``slot`` in ``state`` (zeros and kind
    BOX_INVALID for an invalid slot)."""
    pos = state.pos[slot]
    heading = state.heading[slot]
    for k in range(BOX_ROW_FLOATS):
        box_out[slot, k] = 0.0
    for k in range(7):
        ego_out[slot, k] = 0.0
    for k in range(2):
        ego_aux_out[slot, k] = 0.0
    for k in range(6):
        goals_out[slot, k] = 0.0
    for k in range(_COND_WIDTH):
        conditioning_out[slot, k] = 0.0
    if state.valid[slot] == 0:
        box_out[slot, BoxCol.KIND] = _BOX_INVALID
        return
    box_out[slot, BoxCol.X] = pos[0]
    box_out[slot, BoxCol.Y] = pos[1]
    box_out[slot, BoxCol.Z] = pos[2]
    box_out[slot, BoxCol.HEADING] = heading
    box_out[slot, BoxCol.LENGTH] = state.length[slot]
    box_out[slot, BoxCol.WIDTH] = state.width[slot]
    box_out[slot, BoxCol.HEIGHT] = state.height[slot]
    box_out[slot, BoxCol.KIND] = float(state.kind[slot])

    lane = state.lane[slot]
    ego_out[slot, 0] = state.speed[slot] / 40.0
    ego_out[slot, 1] = state.length[slot] / 10.0
    ego_out[slot, 2] = state.width[slot] / 5.0
    ego_out[slot, 3] = state.steering[slot] / 0.55
    ego_out[slot, 4] = state.accel_long[slot] / 5.0
    ego_out[slot, 5] = state.accel_lat[slot] / 4.0
    ego_out[slot, 6] = lane_speed_limit(model, lane) / 40.0
    if lane >= 0:
        ego_aux_out[slot, 0] = wp.clamp(state.lane_offset[slot] / 4.0, -1.0, 1.0)
        ego_aux_out[slot, 1] = wp.cos(state.lane_heading_error[slot])

    c = wp.cos(heading)
    s = wp.sin(heading)
    for k in range(3):
        g = state.goal[slot, wp.min(state.goal_index[slot] + k, 2)]
        dx = g[0] - pos[0]
        dy = g[1] - pos[1]
        goals_out[slot, 2 * k] = (c * dx + s * dy) / 600.0
        goals_out[slot, 2 * k + 1] = (-s * dx + c * dy) / 600.0

    for k in range(_NUM_COEF):
        conditioning_out[slot, k] = normalise_coefficient(model, k, state.conditioning[slot, k])
    for k in range(_NUM_COEF, _COND_WIDTH):
        conditioning_out[slot, k] = state.conditioning[slot, k]


@wp.kernel
def observe_kernel(model: ModelData, state: StateData):
    """One thread per slot, then one per world light. A slot takes its pending goal set (the
    spawns ask for them), writes ``active`` (valid, not halted, not replayed; counted into
    ``world_active_count``), the render snapshot ``agent_box`` and the observation features; a
    light writes its ``light_state`` from its junction's schedule and the world clock."""
    tid = wp.tid()
    if tid >= model.num_slots:
        tl = tid - model.num_slots
        state.light_state[tl] = world_light_state(
            model, state, tl, state.world_step[model.world_light_world[tl]]
        )
        return
    slot = tid
    take_goal_set(state, slot)
    active = int(0)
    if state.valid[slot] != 0 and state.halted[slot] == 0 and model.slot_mode[slot] != _REPLAYED:
        active = 1
    state.active[slot] = active
    if active != 0:
        wp.atomic_add(state.world_active_count, state.slot_world[slot], 1)
    write_observation(
        model,
        state,
        slot,
        state.agent_box,
        state.obs_ego,
        state.obs_ego_aux,
        state.obs_goals,
        state.obs_conditioning,
    )


@wp.kernel
def goal_walk_kernel(model: ModelData, state: StateData):
    """One thread per (slot, try) of the slots with a goal-set request: `goal_set_try`."""
    slot, t = wp.tid()
    if state.goal_stream[slot] >= 0:
        goal_set_try(model, state, slot, t)


@wp.kernel
def final_observe_kernel(model: ModelData, state_in: StateData, state_out: StateData):
    """The ``final_*`` arrays of ``state_out``: snapshot and observations before this step's
    world resets (after `world_clock_kernel`, before the respawns). One thread per row of
    ``final_agent_box`` (S slots, then the parked rows), then one per world light."""
    row = wp.tid()
    rows = model.num_slots + model.num_worlds * model.parked_per_world
    if row < model.num_slots:
        take_goal_set(state_out, row)  # goal sets the rules asked for
        write_observation(
            model,
            state_out,
            row,
            state_out.final_agent_box,
            state_out.final_obs_ego,
            state_out.final_obs_ego_aux,
            state_out.final_obs_goals,
            state_out.final_obs_conditioning,
        )
        state_out.final_speed[row] = state_out.speed[row]
    elif row < rows:
        for c in range(BOX_ROW_FLOATS):
            state_out.final_agent_box[row, c] = state_in.agent_box[row, c]
    else:
        # the schedule of the episode that just ended, at its last clock tick
        tid = row - rows
        step = state_in.world_step[model.world_light_world[tid]] + 1
        state_out.final_light_state[tid] = world_light_state(model, state_in, tid, step)


# ---- probes: single-purpose kernels that expose the geometry to tests and tools -------------


@wp.kernel
def oriented_boxes_overlap_kernel(
    boxes_a: wp.array2d(dtype=float), boxes_b: wp.array2d(dtype=float), overlap_out: wp.array(dtype=wp.int32)
):
    """Row i of each (N, 5) array is (x, y, heading, length, width); 1 where the pair overlaps."""
    tid = wp.tid()
    hit = boxes_overlap(
        wp.vec2(boxes_a[tid, 0], boxes_a[tid, 1]),
        boxes_a[tid, 2],
        boxes_a[tid, 3],
        boxes_a[tid, 4],
        wp.vec2(boxes_b[tid, 0], boxes_b[tid, 1]),
        boxes_b[tid, 2],
        boxes_b[tid, 3],
        boxes_b[tid, 4],
    )
    overlap_out[tid] = wp.where(hit, 1, 0)


@wp.kernel
def offroad_probe_kernel(
    model: ModelData,
    map_index: int,
    poses: wp.array2d(dtype=float),
    walls_only: int,
    hit_out: wp.array(dtype=wp.int32),
):
    """Row i of poses (N, 10): x0, y0, z0, heading0, x1, y1, z1, heading1, length, width.
    1 where the box swept between the two poses crosses a road edge or wall of map
    ``map_index`` (a wall only when ``walls_only`` != 0)."""
    tid = wp.tid()
    hit_out[tid] = crosses_road_edge(
        model,
        map_index,
        wp.vec3(poses[tid, 0], poses[tid, 1], poses[tid, 2]),
        poses[tid, 3],
        wp.vec3(poses[tid, 4], poses[tid, 5], poses[tid, 6]),
        poses[tid, 7],
        poses[tid, 8],
        poses[tid, 9],
        walls_only,
    )


@wp.kernel
def swept_boxes_probe_kernel(rows: wp.array2d(dtype=float), overlap_out: wp.array(dtype=wp.int32)):
    """Row i (16): box A's x0, y0, heading0, x1, y1, heading1, length, width, then box B's; 1
    where the two boxes swept over the step overlap at some moment (`swept_boxes_overlap`)."""
    tid = wp.tid()
    hit = swept_boxes_overlap(
        wp.vec2(rows[tid, 0], rows[tid, 1]),
        rows[tid, 2],
        wp.vec2(rows[tid, 3], rows[tid, 4]),
        rows[tid, 5],
        rows[tid, 6],
        rows[tid, 7],
        wp.vec2(rows[tid, 8], rows[tid, 9]),
        rows[tid, 10],
        wp.vec2(rows[tid, 11], rows[tid, 12]),
        rows[tid, 13],
        rows[tid, 14],
        rows[tid, 15],
    )
    overlap_out[tid] = wp.where(hit, 1, 0)


@wp.kernel
def drivable_probe_kernel(
    model: ModelData, map_index: int, points: wp.array(dtype=wp.vec3), on_out: wp.array(dtype=wp.int32)
):
    """1 where point i lies on map ``map_index``'s drivable area (`centre_on_drivable_map`,
    no lane hint)."""
    tid = wp.tid()
    on_out[tid] = wp.where(centre_on_drivable_map(model, map_index, points[tid], -1), 1, 0)
