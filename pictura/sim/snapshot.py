"""The compact per-step world snapshot that the simulator writes and the renderer reads.

PPO re-renders minibatches from a history of these snapshots instead of storing images
(ARCHITECTURE.md, "Rendering inside PPO"), so this layout is the contract between
`pictura.sim` and `pictura.render`: one source of truth for both.

Per step:
- ``agent_box``  ``(box, BOX_ROW_FLOATS)`` float32 with ``WorldLayout.box_count`` = S + P rows: rows
  ``0..S`` are the agent slots, rows ``S + w * parked_per_world ..`` world ``w``'s parked cars
  (static; they take no slot and never act). Each row: x, y, z (m, box bottom centre), heading (rad),
  length, width, height (m), kind (AGENT_* as float; ``BOX_INVALID`` = -1 for an empty slot):
  columns `BoxCol`; NumPy and torch code reads them by name through `BoxView`.
- ``light_state`` ``(world_light,)`` int32 LIGHT_* for every light of every world, world ``w``'s
  lights starting at ``WorldLayout.world_light_start[w]``.
- ``slot_table`` ``(S + 2 W,)`` int32: this step's slot ranges (`pictura.sim.slot_table`); a
  static layout's never changes (`WorldLayout.slot_table`), a packed layout's changes at every
  block reset.
A history stacks them: ``(step, box, BOX_ROW_FLOATS)``, ``(step, world_light)`` and ``(step, S + 2 W)``
(or one slot-table row for every step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class BoxCol:
    """Column of each field in an ``agent_box`` row. Warp kernels index by these
    (``agent_box[step, slot, BoxCol.KIND]``); other code reads rows through `BoxView`."""

    X = 0
    Y = 1
    Z = 2
    HEADING = 3
    LENGTH = 4
    WIDTH = 5
    HEIGHT = 6
    KIND = 7


BOX_ROW_FLOATS = 8
"""Floats per agent box row (32 bytes per agent-step)."""
BOX_INVALID = -1.0
"""The kind of an empty row."""


def _column(col: int, doc: str) -> property:
    def get(self: BoxView):
        return self.rows[..., col]

    def set(self: BoxView, value) -> None:
        self.rows[..., col] = value

    return property(get, set, doc=doc)


def _columns(start: int, stop: int, doc: str) -> property:
    return property(lambda self: self.rows[..., start:stop], doc=doc)


class BoxView:
    """Named fields of ``agent_box`` rows: a NumPy array or torch tensor whose last axis is the
    ``BOX_ROW_FLOATS`` columns, any leading axes. A field is a view of its column (indexing
    ``rows[..., col]``), so assigning to one writes into the rows."""

    __slots__ = ("rows",)

    def __init__(self, rows):
        if rows.shape[-1:] != (BOX_ROW_FLOATS,):
            raise ValueError(f"agent_box rows must end in {BOX_ROW_FLOATS} columns, got {tuple(rows.shape)}")
        self.rows = rows

    x = _column(BoxCol.X, "x of the box's bottom centre (m)")
    y = _column(BoxCol.Y, "y of the box's bottom centre (m)")
    z = _column(BoxCol.Z, "z of the box's bottom (m)")
    heading = _column(BoxCol.HEADING, "heading (rad)")
    length = _column(BoxCol.LENGTH, "length (m)")
    width = _column(BoxCol.WIDTH, "width (m)")
    height = _column(BoxCol.HEIGHT, "height (m)")
    kind = _column(BoxCol.KIND, "AGENT_* as float; BOX_INVALID for an empty row")
    xy = _columns(BoxCol.X, BoxCol.Y + 1, "(..., 2) x, y")
    xyz = _columns(BoxCol.X, BoxCol.Z + 1, "(..., 3) x, y, z")
    size = _columns(BoxCol.LENGTH, BoxCol.HEIGHT + 1, "(..., 3) length, width, height")

    @property
    def valid(self):
        """Rows that hold a box (kind is not BOX_INVALID)."""
        return self.kind != BOX_INVALID


def box_row(*, x, y, z, heading, length, width, height, kind) -> list:
    """One ``agent_box`` row's ``BOX_ROW_FLOATS`` values, each at its column."""
    row = [0.0] * BOX_ROW_FLOATS
    for col, value in (
        (BoxCol.X, x),
        (BoxCol.Y, y),
        (BoxCol.Z, z),
        (BoxCol.HEADING, heading),
        (BoxCol.LENGTH, length),
        (BoxCol.WIDTH, width),
        (BoxCol.HEIGHT, height),
        (BoxCol.KIND, kind),
    ):
        row[col] = value
    return row


@dataclass(frozen=True)
class WorldLayout:
    """How the flat slot pool is cut into worlds, and which map each world plays on.

    W worlds, S slots. Worlds own contiguous slot ranges; maps are indices into the list of
    `RoadMap`s the Model/scene was built from.
    """

    world_map: np.ndarray  # (W,) int32 map index
    world_slot_start: np.ndarray  # (W,) int32
    world_slot_count: np.ndarray  # (W,) int32
    world_light_start: np.ndarray  # (W,) int32 offset into the flat light-state array
    light_count: int  # total lights over all worlds
    slot_world: np.ndarray  # (S,) int32
    parked_per_world: int = 0  # parked-car snapshot rows per world (after the S slot rows)
    block_slots: int = 0  # packed layouts: slots per block (0: a static layout)
    worlds_per_block: int = 0  # packed layouts: world records per block

    @property
    def is_packed(self) -> bool:
        """Packed layouts (`packed`) redraw each world's slot range at every block reset: the
        slot arrays above are only the state before the first reset (the simulator's `State`
        holds the current ones)."""
        return self.block_slots > 0

    def slot_table(self) -> np.ndarray:
        """``(1, S + 2 W)`` int32: the slot-table row of these slot arrays (`pictura.sim.slot_table`;
        for a packed layout, the state before the first reset)."""
        row = np.concatenate([self.slot_world, self.world_slot_start, self.world_slot_count]).astype(np.int32)
        return row[None]

    def fixed_slot_table(self, consumer: str) -> np.ndarray:
        """The ``(1, S + 2 W)`` slot-table row every step of a fixed-world layout shares; raises
        ``ValueError`` for a packed layout, whose readers must be given each snapshot's table."""
        if self.is_packed:
            raise ValueError(
                f"{consumer}: a packed layout redraws its slot ranges at every block reset: pass the "
                "snapshot's slot_table (pictura.sim.slot_table; the env's State.slot_table)"
            )
        return self.slot_table()

    def require_static(self, consumer: str) -> None:
        """Raise ``ValueError`` for a packed layout: ``consumer`` reads the fixed slot arrays (a
        packed layout's change at every block reset; snapshot readers take the slot table)."""
        if self.is_packed:
            raise ValueError(
                f"{consumer} needs fixed worlds (WorldLayout.uniform, env block_slots=0): a packed "
                "layout's slot ranges change at every block reset"
            )

    @property
    def box_count(self) -> int:
        """Rows of the ``agent_box`` snapshot: S slots then W x parked_per_world parked cars."""
        return self.num_slots + self.num_worlds * self.parked_per_world

    def world_parked_start(self, w: int) -> int:
        """First ``agent_box`` row of world ``w``'s parked cars."""
        return self.num_slots + w * self.parked_per_world

    @property
    def num_worlds(self) -> int:
        return len(self.world_map)

    @property
    def num_slots(self) -> int:
        return len(self.slot_world)

    @staticmethod
    def uniform(
        world_map: np.ndarray | list[int],
        slots_per_world: int,
        lights_per_map: list[int],
        parked_per_world: int = 0,
    ) -> WorldLayout:
        """Every world gets ``slots_per_world`` slots; ``lights_per_map[m]`` lights of map m;
        ``parked_per_world`` parked-car rows (must equal ``SimConfig.parked_per_world``)."""
        world_map = np.asarray(world_map, np.int32)
        if world_map.ndim != 1 or len(world_map) == 0:
            raise ValueError("world_map must list at least one world")
        if slots_per_world < 1:
            raise ValueError(f"slots_per_world must be >= 1, got {slots_per_world}")
        return WorldLayout.sized(world_map, np.full(len(world_map), slots_per_world), lights_per_map, parked_per_world)

    @staticmethod
    def sized(
        world_map: np.ndarray | list[int],
        world_slots: np.ndarray | list[int],
        lights_per_map: list[int],
        parked_per_world: int = 0,
    ) -> WorldLayout:
        """Fixed worlds of their own sizes: world w owns ``world_slots[w]`` slots, back to back
        (the zero-shot WOMD env gives each scene exactly its kept road users). Otherwise as
        `uniform`, which is this with every size equal."""
        world_map = np.asarray(world_map, np.int32)
        counts = np.asarray(world_slots, np.int32)
        if world_map.ndim != 1 or len(world_map) == 0:
            raise ValueError("world_map must list at least one world")
        if counts.shape != world_map.shape:
            raise ValueError(f"world_slots must give one size per world {world_map.shape}, got {counts.shape}")
        if counts.min() < 1:
            raise ValueError(f"every world needs >= 1 slot, got world_slots min {int(counts.min())}")
        if parked_per_world < 0:
            raise ValueError(f"parked_per_world must be >= 0, got {parked_per_world}")
        if world_map.min() < 0 or world_map.max() >= len(lights_per_map):
            raise ValueError(f"world_map holds a map index outside 0..{len(lights_per_map) - 1}")
        W = len(world_map)
        starts = np.zeros(W, np.int32)
        starts[1:] = np.cumsum(counts)[:-1]
        lights = np.asarray(lights_per_map, np.int32)[world_map]
        light_start = np.zeros(W, np.int32)
        light_start[1:] = np.cumsum(lights)[:-1]
        return WorldLayout(
            world_map=world_map,
            world_slot_start=starts,
            world_slot_count=counts,
            world_light_start=light_start,
            light_count=int(lights.sum()),
            slot_world=np.repeat(np.arange(W, dtype=np.int32), counts),
            parked_per_world=int(parked_per_world),
        )

    @staticmethod
    def packed(
        world_map: np.ndarray | list[int],
        block_slots: int,
        worlds_per_block: int,
        lights_per_map: list[int],
        parked_per_world: int = 0,
    ) -> WorldLayout:
        """B = W / ``worlds_per_block`` blocks of ``block_slots`` slots, each holding up to
        ``worlds_per_block`` world records (``world_map`` lists W records, block by block).

        At a block's reset its records draw their agent counts in order and take consecutive
        slot ranges while they fit (`pictura.sim.kernels.pack_records_kernel`); the slot arrays
        here are the layout before the first reset: every record empty at its block's start,
        every slot owned by its block's first record (see `State.slot_world`)."""
        world_map = np.asarray(world_map, np.int32)
        if block_slots < 1:
            raise ValueError(f"block_slots must be >= 1, got {block_slots}")
        if not 1 <= worlds_per_block <= block_slots:
            raise ValueError(f"worlds_per_block must be in 1..block_slots ({block_slots}), got {worlds_per_block}")
        if world_map.ndim != 1 or len(world_map) == 0 or len(world_map) % worlds_per_block:
            raise ValueError(
                f"world_map must list a positive multiple of worlds_per_block ({worlds_per_block}) "
                f"records, got {world_map.shape}"
            )
        blocks = len(world_map) // worlds_per_block
        static = WorldLayout.uniform(world_map, 1, lights_per_map, parked_per_world)
        first_record = np.arange(blocks, dtype=np.int32) * worlds_per_block
        return WorldLayout(
            world_map=static.world_map,
            world_slot_start=np.repeat(np.arange(blocks, dtype=np.int32) * block_slots, worlds_per_block),
            world_slot_count=np.zeros(len(world_map), np.int32),
            world_light_start=static.world_light_start,
            light_count=static.light_count,
            slot_world=np.repeat(first_record, block_slots).astype(np.int32),
            parked_per_world=static.parked_per_world,
            block_slots=int(block_slots),
            worlds_per_block=int(worlds_per_block),
        )
