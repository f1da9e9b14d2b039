"""`ReplayDrivingEnv`: `DrivingEnv` over logged scenes (the zero-shot WOMD protocol).

One world per scene, sized to the scene: world w owns exactly the slots of its kept road users
(a `WorldLayout.sized` layout), so scenes of 5 and 120 road users batch without padding. The
paper's selection (`pictura.maps.womd.selection.womd_selection`) picks
the controlled vehicles (valid at t = 0, final logged position > 2 m from the start) and thins
the road users to ``density``; every other kept road user replays its log
(`pictura.sim.replay`). Step, reset, rendering and observations are `DrivingEnv`'s: replayed
agents are in ``agent_box`` (drawn, partners, collidable) but never ``valid`` in the
tensordict (the policy drives only controlled slots).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import torch
from torchrl.envs import EnvBase

from pictura.envs.driving import DrivingEnv
from pictura.envs.observations import VectorizedObservationConfig
from pictura.maps import Scenario
from pictura.maps.womd.index import load_scene
from pictura.maps.womd.selection import WOMD_STEPS, womd_selection
from pictura.render import CameraRig
from pictura.sim import SimConfig
from pictura.sim.replay import SLOT_CONTROLLED, SLOT_EMPTY, SLOT_REPLAYED, ReplayLog
from pictura.sim.snapshot import WorldLayout


def replay_sim_config(base: SimConfig | None = None, episode_length: int = WOMD_STEPS) -> SimConfig:
    """The WOMD protocol's rules: ``base`` with eval settings (v_max 20, goal radius 2 m), an
    ``episode_length``-step cap (600), no parked cars. Sizes come from the logs; traffic
    lights are off and there is no early reset in a replay model whatever the config says."""
    base = SimConfig() if base is None else base
    return dataclasses.replace(base, eval=True, episode_length=int(episode_length), parked_per_world=0)


class ReplayDrivingEnv(DrivingEnv):
    """`DrivingEnv` with one world per logged scene and log replay.

    Args:
        scenarios: scene sources (`pictura.maps.load`, e.g. a WOMD ``.json`` / ``.tfrecord``
            path) or `Scenario` objects.
        device: torch device.
        density: fraction of road users kept per scene (1.0, 0.75, 0.5 in the paper).
        seed: seeds the thinning (with each scene's id) and the controlled vehicles' Table 2
            conditioning draws.
        rig, observation, validate_actions, share_pixel_buffer: as `DrivingEnv`.
        sim: base simulator settings; `replay_sim_config` applies the protocol's changes.
        episode_length: steps before a world restores its logged start (600).
        slots_per_world: slots of every world (at least the most kept road users of any
            scene); default: packed, each world exactly its scene's kept road users
            (`WorldLayout.sized`), so B scenes take sum(kept) slots, not B x max(kept).
        observe_all_slots: build the vectorized observation of every slot; by default only the
            controlled slots get theirs (`DrivingEnv.observe_slots`: the policy drives no other
            slot), the replayed and empty slots empty sets.

    Scenes without a controlled vehicle (after thinning) are skipped: their ids are in
    ``skipped`` and ``scenario_ids`` lists the scene of each world. ``ValueError`` when no scene
    is left. ``replay_log`` is the packed `ReplayLog` (slot modes, tracks) and ``selections``
    the `WomdSelection` of each world.
    """

    def __init__(
        self,
        scenarios: Sequence[str | Scenario],
        device: str = "cpu",
        density: float = 1.0,
        seed: int = 0,
        rig: CameraRig | None = None,
        sim: SimConfig | None = None,
        observation: VectorizedObservationConfig | None = None,
        validate_actions: bool = True,
        share_pixel_buffer: bool = False,
        episode_length: int = WOMD_STEPS,
        slots_per_world: int | None = None,
        observe_all_slots: bool = False,
    ) -> None:
        if len(scenarios) == 0:
            raise ValueError("scenarios must name at least one scene")
        kept, selections, skipped = [], [], []
        for source in scenarios:
            scenario = load_scene(source)
            selection = womd_selection(scenario, density, seed)
            if selection.controlled.any():
                kept.append(scenario)
                selections.append(selection)
            else:
                skipped.append(scenario.scenario_id)
        if not kept:
            raise ValueError(
                f"scenarios: none of the {len(scenarios)} scenes has a controlled vehicle at density {density}"
            )
        users = np.array([int(s.present.sum()) for s in selections])
        if slots_per_world is None:
            world_slots = users  # packed: each world exactly its scene's kept road users
        elif slots_per_world < users.max():
            raise ValueError(f"slots_per_world={slots_per_world} is below the {users.max()} road users of a scene")
        else:
            world_slots = np.full(len(kept), int(slots_per_world))
        self.scenarios = kept
        self.selections = selections
        self.skipped = skipped
        self.scenario_ids = [s.scenario_id for s in kept]
        self.density = self._built_density = float(density)
        self._selection_seed = seed
        self.replay_log = ReplayLog.from_scenarios(
            kept, [s.present for s in selections], [s.controlled for s in selections], world_slots
        )
        # each world's track -> its row of the log (-1: not kept at this density), for set_density
        self._track_row, row = [], 0
        for sc, sel in zip(kept, selections, strict=True):
            order = np.concatenate([np.flatnonzero(sel.controlled), np.flatnonzero(sel.present & ~sel.controlled)])
            rows = np.full(len(sc.track_id), -1, np.int64)
            rows[order] = row + np.arange(len(order))
            self._track_row.append(rows)
            row += len(order)

        # DrivingEnv.__init__ builds maps from sources and spawns agents; here the scenes' maps,
        # one world each, and the replay log in the model.
        EnvBase.__init__(self, device=torch.device(device), batch_size=torch.Size([int(world_slots.sum())]))
        road_maps = [s.road_map for s in kept]
        sim_config = dataclasses.replace(
            replay_sim_config(sim, episode_length), agents_per_world=(1, int(world_slots.min()))
        )
        sim_config.validate()
        layout = WorldLayout.sized(
            np.arange(len(kept)), world_slots, [len(m.light_position) for m in road_maps], 0
        )
        self._assemble(
            [s.scenario_id for s in kept], road_maps, sim_config, layout, rig, seed, observation,
            validate_actions, share_pixel_buffer, replay=self.replay_log,
        )  # fmt: skip
        self.observe_all_slots = bool(observe_all_slots)
        self._observe_controlled()

    @property
    def controlled_slots(self) -> np.ndarray:
        """(C,) int64 slots of the controlled vehicles, the only ones the policy drives."""
        return np.flatnonzero(np.asarray(self.replay_log.slot_mode) == SLOT_CONTROLLED)

    def _observe_controlled(self) -> None:
        if not self.observe_all_slots:
            self.observe_slots(self.controlled_slots)

    def set_density(self, density: float) -> None:
        """Thin every world to ``density`` in place, from the next reset on; the worlds, slots,
        maps and logged tracks stay. The env must have been built at a density whose kept road
        users include this one's (1.0 keeps every road user; `ValueError` otherwise).

        Each world's controlled and replayed road users at ``density`` (`womd_selection`) take
        its first slots in the order an env built at ``density`` gives them, so a vehicle has
        the same slot within its world (and the same Table 2 draw when its world has the same
        index); the slots of road users thinned away are empty. A world left without a
        controlled vehicle replays its logs and has no episode. ``selections``, ``density``
        and ``replay_log`` follow; ``skipped`` and ``scenario_ids`` stay those of the build.
        Building the maps, renderer and observation tables dominates an env's build, so a
        protocol playing one batch at several densities builds once and calls this."""
        selections = [womd_selection(sc, density, self._selection_seed) for sc in self.scenarios]
        S = self.num_slots
        slot_mode = np.full(S, SLOT_EMPTY, np.int32)
        slot_track = np.full(S, -1, np.int32)
        for w, (sel, rows, start) in enumerate(
            zip(selections, self._track_row, self.layout.world_slot_start, strict=True)
        ):
            order = np.concatenate([np.flatnonzero(sel.controlled), np.flatnonzero(sel.present & ~sel.controlled)])
            if (rows[order] < 0).any():
                raise ValueError(
                    f"set_density({density}): scene {self.scenario_ids[w]!r} keeps road users the env "
                    f"built at density {self._built_density} does not hold (build at 1.0 to thin to any density)"
                )
            slots = int(start) + np.arange(len(order))
            slot_mode[slots] = np.where(sel.controlled[order], SLOT_CONTROLLED, SLOT_REPLAYED)
            slot_track[slots] = rows[order]
        self.replay_log = dataclasses.replace(self.replay_log, slot_mode=slot_mode, slot_track=slot_track)
        with self._warp_scope():  # on the stream the next reset's kernels run on
            self.model.slot_mode.assign(slot_mode)
            self.model.slot_track.assign(slot_track)
        self.model.replay = self.replay_log
        self.selections = selections
        self.density = float(density)
        self._observe_controlled()

    @property
    def slot_mode(self) -> torch.Tensor:
        """(S,) int32 SLOT_* of every slot (`pictura.sim.replay`)."""
        return torch.as_tensor(self.replay_log.slot_mode, device=self.device)
