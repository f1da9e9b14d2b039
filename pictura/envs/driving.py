"""`DrivingEnv`: the TorchRL face of the simulator and the renderer.

This is the only place where torch meets Warp. Every Warp array is viewed as a torch tensor
(zero copy) and every launch goes on torch's current stream, so a rollout never leaves the
device and never synchronises with the host (unless ``validate_actions`` is on).

The batch is the flat pool of agent slots (``batch_size=[num_slots]``). Worlds reset on their
own inside `step` (episode length, or too many halted agents); the TorchRL contract around that
(docs/training.md, "The env under TorchRL"):

- ``("next", ...)`` of a step holds the observation the step led to, before any world reset
  (``next_observation="final"``, the default): on a done step it is the ended episode's last
  observation, which TorchRL's value estimators bootstrap from.
- every slot of a world that reset inside the step is ``done`` (``truncated`` unless its agent
  ``terminated`` that step), so TorchRL's masked ``reset`` hands it the new episode's first
  observation: ``env.rollout``, ``step_and_maybe_reset`` and the collectors call it.
- ``valid`` (S,) bool is the mask of slots that hold an acting agent: empty slots, halted
  agents (an infraction ends the agent's episode; its car stays as an obstacle until its world
  resets) and the unused tail of a packed block are False and must be masked out of losses.
- a masked ``reset`` resets the worlds of its flagged active slots (a packed layout: their
  blocks) and starts their next episodes, e.g. for ``StepCounter`` truncation; a flagged slot
  without an acting agent, or in a world that has just reset, needs nothing. ``reset()`` with
  no mask restarts every world from the seed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from contextlib import nullcontext

import numpy as np
import torch
import warp as wp
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Composite, Unbounded
from torchrl.envs import EnvBase

from pictura.envs.contract import PhaseTimer
from pictura.envs.observations import VectorizedObservationConfig
from pictura.envs.specs import PixelSpec, set_step_specs
from pictura.maps import load_road_map
from pictura.render import DEFAULT_COVERAGE, CameraRig, Renderer
from pictura.sim import (
    CONDITIONING_WIDTH,
    EGO_WIDTH,
    EVENTS,
    NUM_ACTIONS,
    REWARD_TERMS,
    SimConfig,
    build_model,
    reset,
    reset_worlds,
    step,
)
from pictura.sim.snapshot import BOX_ROW_FLOATS, WorldLayout
from pictura.sim.state import StateData

SNAPSHOT_KEYS = ("agent_box", "light_state", "slot_table")
"""The per-step snapshot arrays (`pictura.sim.snapshot`) a view is rendered from."""

NEXT_OBSERVATION_MODES = ("final", "reset")
"""`DrivingEnv`'s ``next_observation`` choices."""


def stack_snapshots(snapshots: Sequence[Mapping[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """A history (leading step axis) from `DrivingEnv.snapshot` dicts, for `render_history`."""
    if len(snapshots) == 0:
        raise ValueError("stack_snapshots needs at least one snapshot")
    return {name: torch.stack([s[name] for s in snapshots]) for name in snapshots[0]}


def warp_device(device: torch.device) -> str:
    """The Warp device string for a torch device ("cpu", "cuda:0", ...)."""
    if device.type == "cuda":
        return f"cuda:{device.index if device.index is not None else torch.cuda.current_device()}"
    if device.type != "cpu":
        raise ValueError(f"DrivingEnv runs on cpu or cuda devices, got {device}")
    return "cpu"


class DrivingEnv(EnvBase):
    """Multi-world driving self-play with per-agent perspective views.

    Args:
        device: torch device the env lives on ("cpu", "cuda", "cuda:1").
        seed: base seed; every world's randomness derives from it.
        maps: map sources (`pictura.maps.load`); world ``w`` plays on ``maps[w % len(maps)]``.
        num_worlds: worlds (map instances) on this device; with ``block_slots`` the slot pool
            is still ``num_worlds * slots_per_world`` slots, cut into blocks instead.
        slots_per_world: agent slots per world (capacity).
        agents_per_world: inclusive range ``(lo, hi)`` of agents drawn per world at each reset.
        block_slots: 0 for fixed worlds of ``slots_per_world`` slots each; N > 0 packs the pool
            into blocks of N slots (`WorldLayout.packed`, docs/simulator.md "Slot
            utilisation"): each block holds ``worlds_per_block`` world records whose agents
            take consecutive slots at every block reset, so a world of 5 agents uses 5 slots,
            not ``slots_per_world`` (about 0.8 of the slots act instead of 0.4 at U{1, 120}).
        worlds_per_block: world records per block (``block_slots`` > 0); records that do not
            fit at a reset sit that episode out. Map ``k`` of the list plays on records
            ``k, k + len(maps), ...``.
        rig: camera rig (default: the paper's four-camera rig at 96x54).
        render_coverage: box-edge coverage of the renderer (`pictura.render.Renderer`'s
            ``coverage``): "silhouette" (default: the exact area on every box edge pixel,
            corners, slivers and roofs along the horizon included), "exact" (faster renders,
            not exact on slivers nor roofs along the horizon) or "ramp" (faster still, coarser
            box edges: docs/renderer.md, "Coverage modes").
        sim: simulator settings (`pictura.sim.SimConfig`); its ``agents_per_world`` is replaced
            by the argument above so there is one place to set it.
        observation: None for the perspective observation (camera pixels + ego state, the
            paper's Alberti), or a `VectorizedObservationConfig` for the entity-set observation
            (the paper's Vectorized / Vectorized-blind). A vectorized env renders nothing per
            step; `render_history` still draws its views (videos, probes).
        validate_actions: check every action is in 0..11 on the host (one sync per step). The
            PPO loop turns it off: its actions come from a 12-way categorical.
        share_pixel_buffer: return the internal pixel buffer instead of a copy. Cheap, but the
            next `step` overwrites it: only for loops that consume pixels before stepping.
        next_observation: what ``("next", "observation")`` holds in a world that reset inside
            the step: "final" (default, the TorchRL contract) the ended episode's last
            observation, the new one's coming from TorchRL's masked ``reset``; "reset" the new
            episode's first observation, so ``td["next"]`` can be stepped on directly (Pictura's
            PPO loop: no extra render, no host sync; the last observation stays available from
            `final_record`).
    """

    def __init__(
        self,
        device: str = "cpu",
        seed: int = 0,
        maps: Sequence[str] = ("procedural:seed=0",),
        num_worlds: int = 4,
        slots_per_world: int = 16,
        agents_per_world: tuple[int, int] = (8, 16),
        rig: CameraRig | None = None,
        render_coverage: str = DEFAULT_COVERAGE,
        sim: SimConfig | None = None,
        observation: VectorizedObservationConfig | None = None,
        validate_actions: bool = True,
        share_pixel_buffer: bool = False,
        block_slots: int = 0,
        worlds_per_block: int = 32,
        next_observation: str = "final",
    ) -> None:
        if next_observation not in NEXT_OBSERVATION_MODES:
            raise ValueError(f"next_observation must be one of {NEXT_OBSERVATION_MODES}, got {next_observation!r}")
        if num_worlds < 1:
            raise ValueError(f"num_worlds must be >= 1, got {num_worlds}")
        if slots_per_world < 1:
            raise ValueError(f"slots_per_world must be >= 1, got {slots_per_world}")
        if len(maps) == 0:
            raise ValueError("maps must name at least one map source")
        num_slots = num_worlds * slots_per_world
        if block_slots < 0:
            raise ValueError(f"block_slots must be >= 0 (0: fixed worlds), got {block_slots}")
        if block_slots and num_slots % block_slots:
            raise ValueError(
                f"block_slots={block_slots} does not divide the {num_slots} slots (num_worlds x slots_per_world)"
            )
        capacity, capacity_name = (block_slots, "block_slots") if block_slots else (slots_per_world, "slots_per_world")
        lo, hi = agents_per_world
        if not 1 <= lo <= hi <= capacity:
            raise ValueError(
                f"agents_per_world must satisfy 1 <= lo <= hi <= {capacity_name}={capacity}, "
                f"got {tuple(agents_per_world)}"
            )
        super().__init__(device=torch.device(device), batch_size=torch.Size([num_slots]))
        road_maps = [load_road_map(source) for source in maps]
        sim_config = dataclasses.replace(SimConfig() if sim is None else sim, agents_per_world=(int(lo), int(hi)))
        sim_config.validate()
        lights = [len(m.light_position) for m in road_maps]
        if block_slots:
            records = num_slots // block_slots * worlds_per_block  # packed() checks worlds_per_block
            layout = WorldLayout.packed(
                np.arange(records) % len(road_maps), block_slots, worlds_per_block, lights,
                parked_per_world=sim_config.parked_per_world,
            )  # fmt: skip
        else:
            layout = WorldLayout.uniform(
                np.arange(num_worlds) % len(road_maps), slots_per_world, lights, parked_per_world=sim_config.parked_per_world
            )
        self._assemble(
            list(maps), road_maps, sim_config, layout, rig, seed, observation, validate_actions, share_pixel_buffer,
            render_coverage,
        )  # fmt: skip
        self.next_observation = next_observation

    def _assemble(
        self,
        map_sources: list[str],
        road_maps: list,
        sim_config: SimConfig,
        layout: WorldLayout,
        rig: CameraRig | None,
        seed: int,
        observation: VectorizedObservationConfig | None,
        validate_actions: bool,
        share_pixel_buffer: bool,
        render_coverage: str = DEFAULT_COVERAGE,
        replay=None,
    ) -> None:
        """Build the model, states, renderer, observation builder and buffers of the env (after
        `EnvBase.__init__`); subclasses that prepare their own maps and layout call it too."""
        if isinstance(observation, dict):
            # a checkpoint's saved hyper-parameters hold the dataclass as a dict of its fields
            observation = VectorizedObservationConfig(**observation)
        wp.init()
        self._wp_device = warp_device(self.device)
        self.map_sources = map_sources
        self.road_maps = road_maps
        self.sim_config = sim_config
        self.layout = layout
        self.rig = CameraRig() if rig is None else rig
        self.validate_actions = validate_actions
        self.share_pixel_buffer = share_pixel_buffer
        self._seed = int(seed)
        self.next_observation = "final"
        # the trainer's clock (`TrainingEnv.phase_clock`): acting renders are timed as "rollout_render"
        self.phase_clock: PhaseTimer | None = None

        with self._warp_scope():
            self.model = build_model(road_maps, layout, sim_config, device=self._wp_device, replay=replay)
            self._states = [self.model.state(), self.model.state()]
            self._control = self.model.control()
            self._render_coverage = render_coverage
            # a vectorized env renders only on request (`render_history`: videos, probes), so its
            # renderer (the maps' scene tables) is built at first use
            self._renderer = None if observation is not None else self._build_renderer()
            self.vectorized = (
                None if observation is None else observation.build(road_maps, layout, self._wp_device)
            )
        num_slots = layout.num_slots
        self._action = wp.to_torch(self._control.action)
        # One request per slot, all from "step 0" of a one-step history: acting renders the
        # same function as minibatch re-rendering does.
        self._slot_ids = torch.arange(num_slots, dtype=torch.int32, device=self.device)
        self._act_requests = torch.stack([torch.zeros_like(self._slot_ids), self._slot_ids], dim=1)
        self._pixels = self._new_pixels(num_slots if self.renders_pixels else 0)
        # slots whose vectorized observation is built (None: every slot; `observe_slots`)
        self._observed_slots: torch.Tensor | None = None
        self._make_specs()

    def _build_renderer(self) -> Renderer:
        with self._warp_scope():
            return Renderer(self.road_maps, self.layout, self.rig, device=self._wp_device, coverage=self._render_coverage)

    @property
    def renderer(self) -> Renderer:
        """The env's `Renderer` (a vectorized env builds it at first use)."""
        if self._renderer is None:
            self._renderer = self._build_renderer()
        return self._renderer

    def observe_slots(self, slots: torch.Tensor | np.ndarray | None) -> None:
        """Build the vectorized observation only for ``slots`` (int indices) from now on; the
        other slots get empty sets (zeros, masks False) and ``ego_aux`` zeros. None: every slot
        (the default). The observed slots' sets are those of the full build, bit for bit (each
        (step, slot) request is computed on its own). For envs whose policy drives a fixed
        subset of the slots (`pictura.envs.replay.ReplayDrivingEnv`: the controlled vehicles);
        a perspective env ignores it."""
        if slots is None:
            self._observed_slots = None
            return
        slots = torch.as_tensor(np.asarray(slots) if isinstance(slots, np.ndarray) else slots, device=self.device)
        self._observed_slots = slots.to(torch.int64).reshape(-1)

    # ---- sizes ---------------------------------------------------------------------------
    @property
    def num_slots(self) -> int:
        return self.layout.num_slots

    @property
    def num_worlds(self) -> int:
        return self.layout.num_worlds

    @property
    def num_cameras(self) -> int:
        return self.rig.num_cameras

    @property
    def renders_pixels(self) -> bool:
        """Whether observations carry camera pixels (perspective) or entity sets (vectorized)."""
        return self.vectorized is None

    @property
    def state(self):
        """The current simulator `State` (Warp arrays)."""
        return self._states[0]

    def _warp_scope(self):
        """Launch Warp work on torch's current stream so it orders with the policy's kernels."""
        if self.device.type == "cuda":
            return wp.ScopedStream(wp.stream_from_torch(torch.cuda.current_stream(self.device)))
        return wp.ScopedDevice("cpu")

    # ---- specs ---------------------------------------------------------------------------
    def _make_specs(self) -> None:
        S, dev = self.num_slots, self.device
        C, H, W = self.num_cameras, self.rig.height, self.rig.width
        observation = Composite(
            ego=Unbounded(shape=(S, EGO_WIDTH), dtype=torch.float32, device=dev),
            conditioning=Unbounded(shape=(S, CONDITIONING_WIDTH), dtype=torch.float32, device=dev),
            goals=Unbounded(shape=(S, 3, 2), dtype=torch.float32, device=dev),
            shape=(S,),
            device=dev,
        )
        if self.renders_pixels:
            observation["pixels"] = PixelSpec((S, C, H, W, 3), device=dev)
        else:
            observation.update(self.vectorized.spec(S, dev))
        set_step_specs(self, observation, NUM_ACTIONS, REWARD_TERMS, EVENTS)

    # ---- rendering -----------------------------------------------------------------------
    def _new_pixels(self, n: int) -> torch.Tensor:
        return torch.empty(
            (n, self.num_cameras, self.rig.height, self.rig.width, 3), dtype=torch.uint8, device=self.device
        )

    def _render(self, history: Mapping[str, torch.Tensor], requests: torch.Tensor, out: torch.Tensor):
        """Render ``requests`` (N, 2) rows (step, slot) of a stacked snapshot history into ``out``."""
        n = requests.shape[0]
        flat = out.view(n * self.num_cameras, self.rig.height, self.rig.width, 3)
        table = history.get("slot_table")
        with self._warp_scope():
            self.renderer.render(
                wp.from_torch(history["agent_box"].contiguous()),
                wp.from_torch(history["light_state"].contiguous()),
                wp.from_torch(requests.contiguous(), dtype=wp.int32),
                wp.from_torch(flat, dtype=wp.uint8),
                slot_table=None if table is None else wp.from_torch(table.contiguous(), dtype=wp.int32),
            )

    def _render_current(self, prefix: str = "", active: torch.Tensor | None = None, out: torch.Tensor | None = None) -> None:
        """Render the views of the state's snapshot (``prefix="final_"``: the one before this
        step's world resets) for the ``active`` (S,) bool slots (default: the state's) into
        ``out`` (default: the env's pixel buffer)."""
        if not self.renders_pixels:
            return
        st = self.state
        # Only active agents act on their views: halted and empty slots get no render (their
        # views are black; a request for slot -1 costs the renderer nothing). No host sync.
        if active is None:
            active = wp.to_torch(st.active) != 0
        self._act_requests[:, 1] = torch.where(active, self._slot_ids, -1)
        clock = self.phase_clock
        with nullcontext() if clock is None else clock.phase("rollout_render"):
            current = {name: wp.to_torch(getattr(st, prefix + name)).unsqueeze(0) for name in SNAPSHOT_KEYS}
            self._render(current, self._act_requests, self._pixels if out is None else out)

    def snapshot(self) -> dict[str, torch.Tensor]:
        """Copies of the compact state the current observation was rendered from
        (`pictura.sim.snapshot`): ``agent_box`` (S + P, 8) float32 (the S agent slots, then the
        P parked cars of all worlds), ``light_state`` (L,) int32 and ``slot_table`` (S + 2W,)
        int32 (which world owns each slot; it changes at block resets of a packed env). Stack
        them over a rollout (`stack_snapshots`) and hand them to `render_history` to get the
        same pixels back.
        """
        st = self.state
        return {name: wp.to_torch(getattr(st, name)).clone() for name in SNAPSHOT_KEYS}

    def render_history(self, history: Mapping[str, torch.Tensor], steps: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        """Re-render the views of (step, slot) pairs from a stacked snapshot history.

        Args:
            history: stacked `snapshot` arrays (other keys are ignored): ``agent_box``
                (T, S + P, 8) float32, ``light_state`` (T, L) int32, ``slot_table``
                (T, S + 2W) int32 (optional for a fixed-world env, whose table never changes).
            steps, slots: (N,) integer indices into the history.
        Returns:
            (N, C, H, W, 3) uint8, equal bit for bit to what was rendered while acting.
        """
        rows = self.layout.box_count
        box = history["agent_box"]
        if box.ndim != 3 or box.shape[1:] != (rows, BOX_ROW_FLOATS):
            raise ValueError(f"history['agent_box'] must be (T, {rows}, {BOX_ROW_FLOATS}), got {tuple(box.shape)}")
        # indices may come from the host (probes, tools): the renderer needs them on its device
        requests = torch.stack([steps.to(torch.int32), slots.to(torch.int32)], dim=1).to(self.device)
        out = self._new_pixels(requests.shape[0])
        self._render(history, requests, out)
        return out

    def final_record(self) -> dict[str, torch.Tensor]:
        """Copies of what the observation *before this step's world resets* is built from.

        A slot whose world reset inside the last `step` (``truncated``) gets the new episode's
        first observation; PPO bootstraps its last transition from the value of the observation
        it would have had instead (`pictura.sim.State`'s ``final_*`` arrays). Stack these over a
        rollout and pass them to `observation_from_record`. Keys: ``agent_box`` (S + P, 8),
        ``light_state`` (L,), ``slot_table`` (S + 2W,), ``speed`` (S,), ``ego``, ``ego_aux``,
        ``goals`` (S, 3, 2), ``conditioning``; equal to the current observation's sources in
        worlds that did not reset.
        """
        st, S = self.state, self.num_slots
        return {
            **{name: wp.to_torch(getattr(st, "final_" + name)).clone() for name in SNAPSHOT_KEYS},
            "speed": wp.to_torch(st.final_speed).clone(),
            "ego": wp.to_torch(st.final_obs_ego).clone(),
            "ego_aux": wp.to_torch(st.final_obs_ego_aux).clone(),
            "goals": wp.to_torch(st.final_obs_goals).reshape(S, 3, 2).clone(),
            "conditioning": wp.to_torch(st.final_obs_conditioning).clone(),
        }

    def observation_from_record(
        self, record: dict[str, torch.Tensor], steps: torch.Tensor, slots: torch.Tensor
    ) -> TensorDict:
        """The observations of (step, slot) pairs from stacked `final_record` dicts (each entry
        with a leading T axis): the same entries the env returns (pixels rendered, or the
        vectorized sets built), with batch size N."""
        steps, slots = steps.to(torch.int64), slots.to(torch.int64)
        S = self.num_slots
        obs = {key: record[key][steps, slots] for key in ("ego", "goals", "conditioning")}
        if self.renders_pixels:
            obs["pixels"] = self.render_history(record, steps, slots)
        else:
            box = record["agent_box"]
            with self._warp_scope():
                obs.update(
                    self.vectorized.build_requests(
                        box[:, :S], record["light_state"], record["speed"], steps, slots,
                        parked_hist=box[:, S:] if self.layout.parked_per_world else None,
                        slot_table=record["slot_table"],
                    )
                )  # fmt: skip
            obs["ego_aux"] = self.vectorized.ego_aux(record["ego_aux"][steps, slots])
        return TensorDict(obs, batch_size=[steps.shape[0]], device=self.device)

    def set_resolution(self, width: int, height: int) -> None:
        """Change the render resolution (e.g. for a resolution curriculum)."""
        self.rig.set_resolution(width, height)
        self._pixels = self._new_pixels(self.num_slots if self.renders_pixels else 0)
        self._make_specs()

    # ---- TorchRL plumbing ----------------------------------------------------------------
    def _observation(self, prefix: str = "", valid: torch.Tensor | None = None) -> TensorDict:
        """The observation of the current state, or with ``prefix="final_"`` of the state before
        this step's world resets (``valid``: which slots held an acting agent there)."""
        st, S = self.state, self.num_slots

        def array(name: str) -> torch.Tensor:
            return wp.to_torch(getattr(st, prefix + name))

        observation = {
            "ego": array("obs_ego").clone(),
            "conditioning": array("obs_conditioning").clone(),
            "goals": array("obs_goals").reshape(S, 3, 2).clone(),
        }
        if self.renders_pixels:
            observation["pixels"] = self._pixels if self.share_pixel_buffer else self._pixels.clone()
        else:
            observation.update(self._vectorized_sets(array))
        return TensorDict(
            {
                "observation": TensorDict(observation, batch_size=[S]),
                "valid": wp.to_torch(st.active).bool() if valid is None else valid,
                "world_id": array("slot_world").long(),
            },
            batch_size=[S],
            device=self.device,
        )

    def _vectorized_sets(self, array) -> dict[str, torch.Tensor]:
        """The entity sets and ``ego_aux`` of every slot (``array(name)``: a state array as a
        tensor), built for the observed slots only when `observe_slots` set them."""
        S, observed, vec = self.num_slots, self._observed_slots, self.vectorized
        box = array("agent_box")
        parked = box[S:] if self.layout.parked_per_world else None
        with self._warp_scope():
            if observed is None:
                sets = vec.build(
                    box[:S], array("light_state"), array("speed"), parked_box=parked, slot_table=array("slot_table")
                )
                sets["ego_aux"] = vec.ego_aux(array("obs_ego_aux"))
                return sets
            rows = vec.build_requests(
                box[None, :S], array("light_state")[None], array("speed")[None], torch.zeros_like(observed), observed,
                parked_hist=None if parked is None else parked[None], slot_table=array("slot_table")[None],
            )  # fmt: skip
        sets = vec.allocate((S,))
        for key, value in rows.items():
            sets[key][observed] = value
        ego_aux = array("obs_ego_aux")
        sets["ego_aux"] = torch.zeros_like(ego_aux)
        sets["ego_aux"][observed] = vec.ego_aux(ego_aux[observed])
        return sets

    def _info(self) -> TensorDict:
        st, S = self.state, self.num_slots
        terms = wp.to_torch(st.reward_terms)
        events = wp.to_torch(st.events)
        return TensorDict(
            {
                "reward": TensorDict(
                    {t: terms[:, i : i + 1].clone() for i, t in enumerate(REWARD_TERMS)}, batch_size=[S]
                ),
                "event": TensorDict(
                    {e: events[:, i : i + 1].bool() for i, e in enumerate(EVENTS)}, batch_size=[S]
                ),
            },
            batch_size=[S],
        )

    # ---- rewinding (probes) ----------------------------------------------------------------
    def save_state(self) -> dict[str, torch.Tensor]:
        """A device copy of the whole simulator state (every `pictura.sim.State` array, RNG keys
        and clocks included): `restore_state` rewinds to it, and stepping on from there with the
        same actions repeats the original run bit for bit."""
        st = self.state
        return {name: wp.to_torch(getattr(st, name)).clone() for name in StateData.vars}

    def restore_state(self, saved: dict[str, torch.Tensor]) -> TensorDictBase:
        """Rewind to a `save_state` copy; returns the observation there (as `reset` does)."""
        st = self.state
        names = tuple(StateData.vars)
        if set(saved) != set(names):
            raise ValueError(f"restore_state: not a save_state copy of this env (keys {sorted(set(saved) ^ set(names))})")
        for name in names:
            target = wp.to_torch(getattr(st, name))
            if saved[name].shape != target.shape:
                raise ValueError(f"restore_state: {name} is {tuple(saved[name].shape)}, this env has {tuple(target.shape)}")
            target.copy_(saved[name])
        self._render_current()
        return self._reset_output()

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        if tensordict is None or "_reset" not in tensordict.keys():
            with self._warp_scope():
                reset(self.model, self.state, self._seed)
            self._render_current()
            return self._reset_output()
        self._reset_flagged(tensordict["_reset"].reshape(-1))
        return self._reset_output()

    def _slot_world_reset(self) -> torch.Tensor:
        """(S,) bool: the slot's world reset in the last `step` or masked `reset`."""
        st = self.state
        return wp.to_torch(st.world_reset).bool()[wp.to_torch(st.slot_world).long()]

    def _reset_flagged(self, flagged: torch.Tensor) -> None:
        """TorchRL's masked reset: every world holding a flagged slot with an acting agent
        starts its next episode, unless it has just started one (inside the last `step`); then
        the views of every slot whose world reset are rendered anew. One host sync."""
        st = self.state
        slot_world = wp.to_torch(st.slot_world).long()
        active = wp.to_torch(st.active).bool()
        fresh = wp.to_torch(st.world_step)[slot_world] == 0
        asked = flagged.to(self.device) & active & ~fresh
        worlds = torch.zeros(self.num_worlds, dtype=torch.int32, device=self.device)
        worlds[slot_world[asked]] = 1
        if self.layout.is_packed:  # a packed block's world records reset together
            worlds = worlds.view(-1, self.layout.worlds_per_block).amax(1, keepdim=True).expand(
                -1, self.layout.worlds_per_block
            ).reshape(-1).contiguous()
        left_out = worlds.bool()[slot_world] & active & ~flagged.to(self.device)
        if bool(left_out.any()):
            slot = int(left_out.nonzero()[0, 0])
            raise ValueError(
                f"_reset flags part of the acting slots of world {int(slot_world[slot])} (slot {slot} is not "
                "flagged): a world restarts as a whole (a packed layout: its whole block), so flag all of them"
            )
        renew = self._slot_world_reset()
        if bool(worlds.any()):
            with self._warp_scope():
                reset_worlds(self.model, self.state, wp.from_torch(worlds))
            renew = renew | self._slot_world_reset()
        if self.renders_pixels and bool(renew.any()):
            fresh_views = self._new_pixels(self.num_slots)
            self._render_current(active=renew & wp.to_torch(st.active).bool(), out=fresh_views)
            self._pixels = torch.where(renew[:, None, None, None, None], fresh_views, self._pixels)

    def _reset_output(self) -> TensorDictBase:
        out = self._observation()
        S = self.num_slots
        zeros = torch.zeros((S, 1), dtype=torch.bool, device=self.device)
        out.set("info", self._info().apply(torch.zeros_like))
        out.set("done", zeros)
        out.set("terminated", zeros.clone())
        out.set("truncated", zeros.clone())
        return out

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get("action")
        if self.validate_actions:
            bad = (action < 0) | (action >= NUM_ACTIONS)
            if bool(bad.any()):
                slot = int(bad.nonzero()[0, 0])
                raise ValueError(
                    f"action {int(action.reshape(-1)[slot])} for slot {slot} is outside 0..{NUM_ACTIONS - 1}"
                )
        self._action.copy_(action.reshape(-1))
        with self._warp_scope():
            step(self.model, self._states[0], self._control, self._states[1])
        self._states.reverse()
        st = self.state
        reset_slot = self._slot_world_reset()
        terminated = wp.to_torch(st.terminated).bool()
        if self.next_observation == "final":
            # before the resets a slot holds an agent if it still acts, if the reset cut its
            # episode short (the simulator's ``truncated``: active before the step, not
            # terminated) or if its agent has just terminated (its last view, though halted)
            acting = torch.where(reset_slot, wp.to_torch(st.truncated).bool(), wp.to_torch(st.active).bool())
            final_active = acting | terminated
            self._render_current("final_", final_active)
            out = self._observation("final_", final_active)
        else:
            self._render_current()
            out = self._observation()
        # every slot of a resetting world is done, so TorchRL's masked reset hands it the new
        # episode's first observation (an empty or halted slot's ``valid`` is False)
        truncated = (reset_slot & ~terminated).unsqueeze(-1)
        terminated = terminated.unsqueeze(-1)
        out.set("reward", wp.to_torch(st.reward).unsqueeze(-1).clone())
        out.set("terminated", terminated)
        out.set("truncated", truncated)
        out.set("done", terminated | truncated)
        out.set("info", self._info())
        return out

    def _set_seed(self, seed: int | None) -> None:
        self._seed = 0 if seed is None else int(seed)
