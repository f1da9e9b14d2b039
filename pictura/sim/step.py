"""`step` and `reset`: the launch sequence of the simulator (no host sync, nothing per agent)."""

from __future__ import annotations

import numpy as np
import warp as wp

from pictura.sim import kernels
from pictura.sim.lanes import GOAL_WALK_TRIES
from pictura.sim.model import Model
from pictura.sim.spawn import EAGER_AGENT_TRIES, SPAWN_ROUNDS
from pictura.sim.state import Control, State

_FINAL = (
    "agent_box", "light_state", "obs_ego", "obs_ego_aux", "obs_goals", "obs_conditioning", "speed", "slot_table",
)
"""Arrays whose pre-reset copy ``final_<name>`` `step` writes (truncation bootstrap)."""


CONTACT_AGENT_PARTS = 8
"""GPU: threads per slot over the world's other slots in `contact_kernel` (16 of 128 each)."""
CONTACT_PARKED_PARTS = 2
"""GPU: threads per slot over the world's parked cars."""
CONTACT_EDGE_PARTS = 4
"""GPU: threads per slot over the road-edge / wall items of the swept box's grid cells."""


def _contact_parts(model: Model) -> tuple[int, int, int]:
    """(agent, parked, edge) parts of `contact_kernel`: split on a GPU, where a thread's chain
    of loads sets the kernel time; one each on "cpu", where every thread costs a struct copy."""
    if wp.get_device(model.device).is_cuda:
        return CONTACT_AGENT_PARTS, CONTACT_PARKED_PARTS, CONTACT_EDGE_PARTS
    return 1, 1, 1


SPAWN_CONFLICT_PARTS = 8
"""GPU: threads per row of a spawn round's acceptance test (`spawn_conflict_kernel`)."""


def _conflict_parts(model: Model) -> int:
    """Parts of `spawn_conflict_kernel`: split on a GPU, one on "cpu" (as `_contact_parts`)."""
    return SPAWN_CONFLICT_PARTS if wp.get_device(model.device).is_cuda else 1


def _walk_goals(model: Model, state: State) -> None:
    """All tries of the requested goal sets (taken by the next observation pass)."""
    wp.launch(
        kernels.goal_walk_kernel,
        (model.num_slots, GOAL_WALK_TRIES),
        inputs=[model.data, state.data],
        device=model.device,
    )


def _finish(model: Model, state: State) -> None:
    """Lights and observations of ``state`` (end of both `step` and `reset`)."""
    wp.launch(
        kernels.observe_kernel,
        model.num_slots + model.light_count,
        inputs=[model.data, state.data],
        device=model.device,
    )


def _respawn(model: Model, state_in: State, state_out: State, from_step: int) -> None:
    """The masked world resets of ``state_out`` (worlds with ``world_reset`` set): a fixed
    launch sequence whatever resets (`pictura.sim.spawn`)."""
    d = model.device
    rows = model.layout.box_count
    if model.layout.is_packed:
        # a resetting block draws its records' counts and slot ranges first: every row of
        # the reset below reads them
        wp.launch(kernels.pack_records_kernel, model.num_worlds, inputs=[model.data, state_out.data], device=d)
        wp.launch(kernels.pack_slots_kernel, model.num_slots, inputs=[model.data, state_out.data], device=d)
    wp.launch(
        kernels.reset_rows_kernel,
        rows + model.junction_count + model.light_count,
        inputs=[model.data, state_in.data, from_step],
        outputs=[state_out.data],
        device=d,
    )
    if model.replay is not None:
        wp.launch(
            kernels.replay_reset_kernel, model.num_worlds, inputs=[model.data, state_out.data], device=d
        )
        return
    S, A = model.num_slots, model.config.spawn_attempts
    wp.launch(
        kernels.spawn_static_kernel,
        S * min(EAGER_AGENT_TRIES, A) + (rows - S) * A,
        inputs=[model.data, state_out.data],
        device=d,
    )
    parts = _conflict_parts(model)
    for spawn_round in range(-1, SPAWN_ROUNDS):
        last = int(spawn_round == SPAWN_ROUNDS - 1)
        if spawn_round >= 0:
            wp.launch(
                kernels.spawn_conflict_kernel,
                (parts, rows),
                inputs=[model.data, spawn_round, parts, state_out.data],
                device=d,
            )
        wp.launch(
            kernels.spawn_round_kernel, rows, inputs=[model.data, spawn_round, last, state_out.data], device=d
        )
    _walk_goals(model, state_out)


def step(model: Model, state_in: State, control: Control, state_out: State) -> None:
    """Advance every world by ``model.config.dt``: dynamics -> events -> goals -> rewards ->
    dones -> pre-reset snapshot (``final_*``) -> masked world resets -> lights ->
    observations. Writes only ``state_out``; the caller swaps the two states. ``state_in`` and
    ``state_out`` must be different objects."""
    if state_in is state_out:
        raise ValueError("step: state_in and state_out must be different State objects (swap them)")
    d = model.device
    S, W = model.num_slots, model.num_worlds
    wp.launch(
        kernels.integrate_kernel,
        S,
        inputs=[model.data, state_in.data, control.data],
        outputs=[state_out.data],
        device=d,
    )
    agent_parts, parked_parts, edge_parts = _contact_parts(model)
    wp.launch(
        kernels.contact_kernel,
        (agent_parts + parked_parts + edge_parts, S),
        inputs=[model.data, agent_parts, parked_parts, edge_parts, state_in.data],
        outputs=[state_out.data],
        device=d,
    )
    wp.launch(kernels.rules_kernel, S, inputs=[model.data, state_in.data], outputs=[state_out.data], device=d)
    _walk_goals(model, state_out)
    wp.launch(
        kernels.world_clock_kernel, W, inputs=[model.data, state_in.data], outputs=[state_out.data], device=d
    )
    wp.launch(
        kernels.final_observe_kernel,
        model.layout.box_count + model.light_count,
        inputs=[model.data, state_in.data],
        outputs=[state_out.data],
        device=d,
    )
    _respawn(model, state_in, state_out, from_step=1)
    _finish(model, state_out)


def _respawn_whole(model: Model, state: State) -> None:
    """Respawn the worlds whose clocks were just reset, in place, and make the ``final_*``
    arrays equal the regular ones (the tail of `reset` and `reset_worlds`)."""
    _respawn(model, state, state, from_step=0)
    _finish(model, state)
    for name in _FINAL:
        wp.copy(getattr(state, "final_" + name), getattr(state, name))


def reset(model: Model, state: State, seed: int) -> None:
    """Reset every world of ``state`` from ``seed`` (episode counters back to 0), through the
    same respawn code as the masked resets inside `step`; the ``final_*`` arrays equal the
    regular ones."""
    if not isinstance(seed, int | np.integer):
        raise ValueError(f"reset: seed must be an int, got {type(seed).__name__}")
    seed32 = int(np.int64(seed) & 0x7FFFFFFF)
    wp.launch(
        kernels.reset_clock_kernel,
        model.num_worlds,
        inputs=[model.data, seed32],
        outputs=[state.data],
        device=model.device,
    )
    _respawn_whole(model, state)


def reset_worlds(model: Model, state: State, world_mask: wp.array) -> None:
    """Reset the worlds of ``state`` whose ``world_mask`` (W,) int32 entry is nonzero, in place,
    through the same respawn code as the resets inside `step`: each starts its next episode
    (``world_episode`` + 1, so its draws differ from the last one's), the other worlds carry on
    untouched. A packed layout's world records reset with their whole block: the mask must
    hold every record of a block or none (``ValueError`` otherwise; one host read). The
    ``final_*`` arrays equal the regular ones afterwards, as after `reset`."""
    W = model.num_worlds
    if tuple(world_mask.shape) != (W,) or world_mask.dtype != wp.int32:
        raise ValueError(f"reset_worlds: world_mask must be int32 of shape ({W},), got {world_mask.dtype} {world_mask.shape}")
    if model.layout.is_packed:
        blocks = (world_mask.numpy() != 0).reshape(-1, model.layout.worlds_per_block)
        split = np.flatnonzero(blocks.any(1) & ~blocks.all(1))
        if len(split):
            raise ValueError(
                f"reset_worlds: block {int(split[0])} is reset in part; a packed layout resets all "
                f"{model.layout.worlds_per_block} world records of a block together"
            )
    wp.launch(kernels.reset_worlds_clock_kernel, W, inputs=[model.data, world_mask], outputs=[state.data], device=model.device)
    _respawn_whole(model, state)


def _probe_rows(values: np.ndarray, width: int, name: str) -> np.ndarray:
    """``values`` as contiguous float32 ``(N, width)`` rows; ``ValueError`` naming ``name``."""
    rows = np.ascontiguousarray(values, np.float32)
    if rows.ndim != 2 or rows.shape[1] != width:
        raise ValueError(f"{name} must be (N, {width}), got {rows.shape}")
    return rows


def _check_map_index(model: Model, map_index: int) -> int:
    if not 0 <= map_index < len(model.map_names):
        raise ValueError(f"map_index {map_index} outside 0..{len(model.map_names) - 1}")
    return int(map_index)


def _run_probe(kernel, n: int, inputs: list, device) -> np.ndarray:
    """Launch a one-flag-per-row probe kernel over ``n`` rows: ``(n,)`` bool."""
    out = wp.zeros(n, dtype=wp.int32, device=device)
    wp.launch(kernel, n, inputs=inputs, outputs=[out], device=device)
    return out.numpy().astype(bool)


def boxes_overlap(boxes_a: np.ndarray, boxes_b: np.ndarray, device: str = "cpu") -> np.ndarray:
    """Pairwise SAT test of ``(N, 5)`` rows (x, y, heading, length, width): ``(N,)`` bool.

    The same Warp function the collision rule uses (exposed for tests and tools).
    """
    a = np.ascontiguousarray(boxes_a, np.float32)
    b = np.ascontiguousarray(boxes_b, np.float32)
    if a.ndim != 2 or a.shape[1] != 5 or a.shape != b.shape:
        raise ValueError(f"boxes_a/boxes_b must both be (N, 5), got {a.shape} and {b.shape}")
    inputs = [wp.array(a, dtype=float, device=device), wp.array(b, dtype=float, device=device)]
    return _run_probe(kernels.oriented_boxes_overlap_kernel, len(a), inputs, device)


def swept_offroad(model: Model, map_index: int, poses: np.ndarray, walls_only: bool = False) -> np.ndarray:
    """Off-road rule on ``(N, 10)`` rows (x0, y0, z0, heading0, x1, y1, z1, heading1, length,
    width) against map ``map_index``'s road edges and walls (walls only with ``walls_only``,
    the pedestrian wall-collision test): ``(N,)`` bool."""
    p = _probe_rows(poses, 10, "poses")
    m = _check_map_index(model, map_index)
    inputs = [model.data, m, wp.array(p, dtype=float, device=model.device), int(walls_only)]
    return _run_probe(kernels.offroad_probe_kernel, len(p), inputs, model.device)


def swept_boxes_overlap(rows: np.ndarray, device: str = "cpu") -> np.ndarray:
    """The swept collision test on ``(N, 16)`` rows: box A's x0, y0, heading0, x1, y1,
    heading1, length, width, then box B's the same: ``(N,)`` bool, True where the two boxes,
    each moving from pose 0 to pose 1 during a step, overlap at some moment. The same Warp
    function the collision rule uses (exposed for tests and tools)."""
    r = _probe_rows(rows, 16, "rows")
    return _run_probe(kernels.swept_boxes_probe_kernel, len(r), [wp.array(r, dtype=float, device=device)], device)


def centre_on_drivable(model: Model, map_index: int, points: np.ndarray) -> np.ndarray:
    """The off-road centre test on ``(N, 3)`` points against map ``map_index``: ``(N,)`` bool,
    True where the point lies on the drivable area (`centre_on_drivable_map`)."""
    p = _probe_rows(points, 3, "points")
    m = _check_map_index(model, map_index)
    inputs = [model.data, m, wp.array(p, dtype=wp.vec3, device=model.device)]
    return _run_probe(kernels.drivable_probe_kernel, len(p), inputs, model.device)


def slot_utilisation(state: State) -> float:
    """Share of agent slots that are active (valid and not halted) in ``state``: the fraction of
    the slot pool doing useful work (host-side; syncs the device). Per-world counts stay on the
    device in ``state.world_active_count``."""
    active = state.active.numpy()
    return float(active.sum()) / max(len(active), 1)
