"""The slot table: which world owns each agent slot, at one step of a snapshot history.

A static `WorldLayout` fixes its worlds' slot ranges for good; a packed one redraws a block's
ranges at every block reset (`pictura.sim.kernels.pack_records_kernel`). Everything that reads
a snapshot history (renderer, vectorized observation, tools) therefore takes the ranges as one
more snapshot array, next to ``agent_box`` and ``light_state``:

``slot_table`` ``(S + 2 W,)`` int32 = ``slot_world`` (S) | ``world_slot_start`` (W) |
``world_slot_count`` (W), the `State` arrays of the same names (they are views into
``State.slot_table``, so the snapshot is one copy). World ``w``'s agents live in slots
``start .. start + count``; a packed block's unused tail belongs to the block's first record
and is never valid.

A history stacks it per step: ``(T, S + 2 W)``; a table that never changes (a static layout)
may be passed as one row ``(1, S + 2 W)``, which every step then reads (`table_row`).
"""

from __future__ import annotations

import numpy as np
import warp as wp


def slot_table_width(num_slots: int, num_worlds: int) -> int:
    """Columns of one slot-table row."""
    return num_slots + 2 * num_worlds


def split_slot_table(table: np.ndarray, num_slots: int, num_worlds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Host view of one row: (slot_world (S,), world_slot_start (W,), world_slot_count (W,))."""
    table = np.asarray(table)
    if table.shape[-1] != slot_table_width(num_slots, num_worlds):
        raise ValueError(
            f"slot_table rows must have S + 2W = {slot_table_width(num_slots, num_worlds)} columns, "
            f"got {table.shape}"
        )
    S, W = num_slots, num_worlds
    return table[..., :S], table[..., S : S + W], table[..., S + W :]


def check_slot_table_shape(shape: tuple[int, ...], steps: int, num_slots: int, num_worlds: int) -> None:
    """Raise ``ValueError`` naming ``slot_table`` unless ``shape`` is a history of ``steps``
    steps or one row for all of them: (1 or steps, S + 2W)."""
    width = slot_table_width(num_slots, num_worlds)
    shape = tuple(int(n) for n in shape)
    if len(shape) != 2 or shape[0] not in (1, steps) or shape[1] != width:
        raise ValueError(f"slot_table must have shape (1 or {steps}, S + 2W = {width}), got {shape}")


@wp.func
def table_row(table: wp.array2d(dtype=wp.int32), step: int) -> int:
    """The row of ``table`` that holds step ``step``: one row serves every step."""
    if table.shape[0] == 1:
        return 0
    return step


@wp.func
def table_slot_world(table: wp.array2d(dtype=wp.int32), row: int, slot: int) -> int:
    """The world whose range holds ``slot`` at ``row``."""
    return table[row, slot]


@wp.func
def table_world_start(table: wp.array2d(dtype=wp.int32), row: int, num_slots: int, world: int) -> int:
    """First slot of ``world``'s range at ``row``."""
    return table[row, num_slots + world]


@wp.func
def table_world_count(table: wp.array2d(dtype=wp.int32), row: int, num_slots: int, world: int) -> int:
    """Slots in ``world``'s range at ``row`` (the table's width gives W)."""
    num_worlds = (table.shape[1] - num_slots) // 2
    return table[row, num_slots + num_worlds + world]
