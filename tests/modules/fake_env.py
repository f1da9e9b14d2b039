"""`FakeDrivingEnv`: the `pictura.envs.DrivingEnv` contract with cheap synthetic data.

Same constructor arguments, keys, shapes, dtypes and extra methods (`snapshot`,
`render_history`, `final_record`, `observation_from_record`, `rig`, `num_slots`, `num_cameras`, `validate_actions`) as the real env, so the
PPO module and its tests run in a second with no Warp compilation. Pixels are a pure function
of the snapshot (agent box + light state), so re-rendering from a history reproduces the acting
pixels bit for bit, exactly as the real renderer promises.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Bounded, Composite, Unbounded
from torchrl.envs import EnvBase

from pictura.envs.specs import set_step_specs

NUM_ACTIONS = 12
EGO_WIDTH = 7
CONDITIONING_WIDTH = 20
BOX_ROW_FLOATS = 8
REWARD_TERMS = ("goal", "collision", "offroad", "velocity")
EVENTS = ("collision", "offroad", "red_light", "goal")


class FakeRig:
    """Stands in for `pictura.render.CameraRig`: four cameras, a resolution."""

    names = ("front", "front_left", "front_right", "back")

    def __init__(self, width: int = 96, height: int = 54, num_cameras: int = 4) -> None:
        self.num_cameras = num_cameras
        self.set_resolution(width, height)

    def set_resolution(self, width: int, height: int) -> None:
        if width < 1 or height < 1:
            raise ValueError(f"resolution must be positive, got width={width}, height={height}")
        self.width, self.height = int(width), int(height)


class FakeDrivingEnv(EnvBase):
    """Synthetic multi-world env with the `DrivingEnv` keys (see module docstring).

    Args mirror `DrivingEnv`; ``episode_length`` (steps until a world resets, reported as
    ``truncated``) and ``event_prob`` (per-step probability of each terminal event) are extra.
    """

    def __init__(
        self,
        device: str = "cpu",
        seed: int = 0,
        maps: Sequence[str] = ("procedural:seed=0",),
        num_worlds: int = 4,
        slots_per_world: int = 16,
        agents_per_world: tuple[int, int] = (8, 16),
        rig: FakeRig | None = None,
        validate_actions: bool = True,
        episode_length: int = 12,
        event_prob: float = 0.02,
    ) -> None:
        lo, hi = agents_per_world
        if not 1 <= lo <= hi <= slots_per_world:
            raise ValueError(f"agents_per_world must satisfy 1 <= lo <= hi <= slots_per_world, got {agents_per_world}")
        S = num_worlds * slots_per_world
        super().__init__(device=torch.device(device), batch_size=torch.Size([S]))
        self.map_sources = list(maps)
        self.num_worlds_, self.slots_per_world = num_worlds, slots_per_world
        self.agents_per_world = (lo, hi)
        self.rig = FakeRig() if rig is None else rig
        self.validate_actions = validate_actions
        self.episode_length, self.event_prob = episode_length, event_prob
        self._gen = torch.Generator(device=self.device).manual_seed(seed)
        dev = self.device
        self._world_id = torch.arange(num_worlds, device=dev).repeat_interleave(slots_per_world)
        self._slot_in_world = torch.arange(slots_per_world, device=dev).repeat(num_worlds)
        self._box = torch.zeros(S, BOX_ROW_FLOATS, device=dev)
        self._light = torch.zeros(num_worlds, dtype=torch.int32, device=dev)  # one light per world
        self._clock = torch.zeros(num_worlds, dtype=torch.int64, device=dev)
        self._active = torch.zeros(S, dtype=torch.bool, device=dev)
        self._conditioning = torch.zeros(S, CONDITIONING_WIDTH, device=dev)
        self._make_specs()

    @property
    def num_slots(self) -> int:
        return int(self.batch_size[0])

    @property
    def num_worlds(self) -> int:
        return self.num_worlds_

    @property
    def num_cameras(self) -> int:
        return self.rig.num_cameras

    def _make_specs(self) -> None:
        S, dev = self.num_slots, self.device
        C, H, W = self.num_cameras, self.rig.height, self.rig.width
        observation = Composite(
            pixels=Bounded(0, 255, shape=(S, C, H, W, 3), dtype=torch.uint8, device=dev),
            ego=Unbounded(shape=(S, EGO_WIDTH), dtype=torch.float32, device=dev),
            conditioning=Unbounded(shape=(S, CONDITIONING_WIDTH), dtype=torch.float32, device=dev),
            goals=Unbounded(shape=(S, 3, 2), dtype=torch.float32, device=dev),
            shape=(S,),
            device=dev,
        )
        set_step_specs(self, observation, NUM_ACTIONS, REWARD_TERMS, EVENTS)

    # ---- rendering: a pure function of (box, light) -------------------------------------------
    def _pixels_of(self, box: torch.Tensor, light: torch.Tensor) -> torch.Tensor:
        """(N, 8) boxes, (N,) light of each box's world -> (N, C, H, W, 3) uint8."""
        C, H, W = self.num_cameras, self.rig.height, self.rig.width
        dev = box.device
        base = (box[:, 0] * 8 + box[:, 1] * 8 + box[:, 3] * 30).floor().long() + light.long() * 37
        c = torch.arange(C, device=dev).view(C, 1, 1, 1) * 61
        h = torch.arange(H, device=dev).view(1, H, 1, 1) * 3
        w = torch.arange(W, device=dev).view(1, 1, W, 1) * 5
        k = torch.arange(3, device=dev).view(1, 1, 1, 3) * 85
        return ((base.view(-1, 1, 1, 1, 1) + c + h + w + k) % 256).to(torch.uint8)

    def snapshot(self) -> dict[str, torch.Tensor]:
        return {"agent_box": self._box.clone(), "light_state": self._light.clone()}

    def render_history(self, history, steps, slots) -> torch.Tensor:
        agent_box_hist = history["agent_box"]
        if agent_box_hist.ndim != 3 or agent_box_hist.shape[1:] != (self.num_slots, BOX_ROW_FLOATS):
            raise ValueError(f"agent_box_hist must be (T, {self.num_slots}, 8), got {tuple(agent_box_hist.shape)}")
        box = agent_box_hist[steps, slots]
        light = history["light_state"][steps, self._world_id[slots]]
        return self._pixels_of(box, light)

    def set_resolution(self, width: int, height: int) -> None:
        self.rig.set_resolution(width, height)
        self._make_specs()

    # ---- dynamics -----------------------------------------------------------------------------
    def _rand(self, *shape) -> torch.Tensor:
        return torch.rand(*shape, generator=self._gen, device=self.device)

    def _reset_worlds(self, worlds: torch.Tensor) -> None:
        """worlds: (W,) bool; respawn their agents with a fresh agent count."""
        lo, hi = self.agents_per_world
        count = lo + (self._rand(self.num_worlds) * (hi - lo + 1)).long().clamp(max=hi - lo)
        slot_reset = worlds[self._world_id]
        new_active = self._slot_in_world < count[self._world_id]
        self._active = torch.where(slot_reset, new_active, self._active)
        fresh = torch.cat(
            [self._rand(self.num_slots, 2) * 50, torch.zeros(self.num_slots, 1, device=self.device),
             self._rand(self.num_slots, 1) * 6.28, torch.tensor([4.5, 2.0, 1.5], device=self.device).expand(self.num_slots, 3),
             torch.zeros(self.num_slots, 1, device=self.device)],
            dim=1,
        )
        fresh[:, 7] = torch.where(self._active, 0.0, -1.0)
        self._box = torch.where(slot_reset.unsqueeze(1), fresh, self._box)
        self._conditioning = torch.where(
            slot_reset.unsqueeze(1), self._rand(self.num_slots, CONDITIONING_WIDTH) * 2 - 1, self._conditioning
        )
        self._clock = torch.where(worlds, 0, self._clock)

    def _record(self) -> dict[str, torch.Tensor]:
        """What an observation is built from (the real env's `final_record` keys it needs)."""
        S = self.num_slots
        ego = torch.cat([self._box[:, 3:4].cos(), self._box[:, 3:4].sin(), self._box[:, :2] / 50,
                         self._box[:, 4:7] / 5], dim=1)
        goals = (self._box[:, :2].unsqueeze(1) / 600).expand(S, 3, 2).clone()
        return {"agent_box": self._box.clone(), "light_state": self._light.clone(), "ego": ego,
                "goals": goals, "conditioning": self._conditioning.clone()}

    def final_record(self) -> dict[str, torch.Tensor]:
        return {k: v.clone() for k, v in self._final.items()}

    def observation_from_record(self, record, steps, slots) -> TensorDict:
        obs = {k: record[k][steps, slots] for k in ("ego", "goals", "conditioning")}
        obs["pixels"] = self.render_history(record, steps, slots)
        return TensorDict(obs, batch_size=[steps.shape[0]], device=self.device)

    def _observation(self) -> TensorDict:
        S = self.num_slots
        rec = self._record()
        return TensorDict(
            {
                "observation": TensorDict(
                    {"pixels": self._pixels_of(self._box, self._light[self._world_id]), "ego": rec["ego"],
                     "conditioning": rec["conditioning"], "goals": rec["goals"]},
                    batch_size=[S],
                ),
                "valid": self._active.clone(),
                "world_id": self._world_id.clone(),
            },
            batch_size=[S],
            device=self.device,
        )

    # ---- rewinding (as `DrivingEnv.save_state` / `restore_state`) -------------------------------
    _STATE = ("_box", "_light", "_clock", "_active", "_conditioning")

    def save_state(self) -> dict[str, torch.Tensor]:
        saved = {name: getattr(self, name).clone() for name in self._STATE}
        saved.update({f"final.{k}": v.clone() for k, v in self._final.items()})
        saved["generator"] = self._gen.get_state()
        return saved

    def restore_state(self, saved: dict[str, torch.Tensor]) -> TensorDictBase:
        for name in self._STATE:
            setattr(self, name, saved[name].clone())
        self._final = {k.removeprefix("final."): v.clone() for k, v in saved.items() if k.startswith("final.")}
        self._gen.set_state(saved["generator"].cpu())
        return self._reset_output()

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        self._reset_worlds(torch.ones(self.num_worlds, dtype=torch.bool, device=self.device))
        self._final = self._record()
        return self._reset_output()

    def _reset_output(self) -> TensorDictBase:
        out = self._observation()
        S = self.num_slots
        zeros = torch.zeros((S, 1), dtype=torch.bool, device=self.device)
        info = TensorDict(
            {"reward": {t: torch.zeros(S, 1, device=self.device) for t in REWARD_TERMS},
             "event": {e: zeros.clone() for e in EVENTS}},
            batch_size=[S],
        )
        out.set("info", info)
        out.set("done", zeros)
        out.set("terminated", zeros.clone())
        out.set("truncated", zeros.clone())
        return out

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get("action").reshape(-1)
        if self.validate_actions and bool(((action < 0) | (action >= NUM_ACTIONS)).any()):
            raise ValueError("action outside 0..11")
        S = self.num_slots
        active = self._active
        speed = (action // 3).float() * 0.5
        turn = (action % 3 - 1).float() * 0.1
        heading = self._box[:, 3] + turn
        move = torch.stack([heading.cos() * speed, heading.sin() * speed], dim=1) * active.unsqueeze(1)
        self._box = self._box.clone()
        self._box[:, :2] += move
        self._box[:, 3] = torch.where(active, heading, self._box[:, 3])
        events = (self._rand(S, len(EVENTS)) < self.event_prob) & active.unsqueeze(1)
        terms = {
            "goal": events[:, 3:4].float(),
            "collision": -events[:, 0:1].float(),
            "offroad": -events[:, 1:2].float(),
            "velocity": (0.01 * speed).unsqueeze(1) * active.unsqueeze(1),
        }
        reward = sum(terms.values())
        terminated = events[:, :3].any(dim=1)
        self._active = active & ~terminated
        self._box[:, 7] = torch.where(self._active, self._box[:, 7], -1.0)
        self._clock += 1
        self._light = ((self._clock // 5) % 3).to(torch.int32)
        world_done = self._clock >= self.episode_length
        truncated = world_done[self._world_id] & active & ~terminated
        self._final = self._record()  # before the reset: the truncation bootstrap's observation
        self._reset_worlds(world_done)
        out = self._observation()
        out.set("reward", reward)
        out.set("terminated", terminated.unsqueeze(1))
        out.set("truncated", truncated.unsqueeze(1))
        out.set("done", (terminated | truncated).unsqueeze(1))
        out.set(
            "info",
            TensorDict({"reward": terms, "event": {e: events[:, i : i + 1] for i, e in enumerate(EVENTS)}},
                       batch_size=[S]),
        )
        return out

    def _set_seed(self, seed: int | None) -> None:
        self._gen.manual_seed(0 if seed is None else int(seed))
