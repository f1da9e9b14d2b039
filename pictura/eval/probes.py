"""Counterfactual grounding probes (paper Sec. 5.2, Fig. 8): does the policy react to road users
it can see, and not to those it cannot?

Removal probe: for recorded states, remove one nearby road user at a time (its snapshot row's
kind set to -1), rebuild the ego's observation (re-render the cameras for a perspective policy,
`env.vectorized.build` for a vectorized one) and report, with the paper's signs (Sec. 5.2: o the
observation, o' the one without the user)

- ``dV`` = V(o) - V(o'): value(original) - value(removed),
- ``dP_brake`` = P(brake | o) - P(brake | o'), P(brake) the total probability of the
  decelerating actions (longitudinal jerk bins -15 and -4 m/s^3: ``a // 3 in {0, 1}``),

against the user's *visible fraction* (the paper's occlusion fraction; 1 = fully in view,
0 = fully hidden or out of view): `Renderer.occlusion_fraction`, i.e. visible target pixels over
the target's unoccluded pixels summed over all the ego's cameras (area-weighted over cameras).
Everything else of the observation (ego state, goals, conditioning, ``ego_aux``) is kept: only
what the user's presence changes in the sensed scene changes.

Fig. 8a aggregates per scene (a recorded state): within each visible-fraction bin, the means
over each scene's removals, then the mean and standard error over scenes
(`aggregate_by_visibility`).

Pedestrian probe: a synthetic pedestrian is swept along a line behind a vehicle in front of the
ego; ``dV`` / ``dP_brake`` with the same signs (o with the pedestrian, o' without it) and its
visible fraction are traced along the line. It occupies a free slot of the ego's world (the
probe env keeps one free).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from tensordict import TensorDict

from pictura.eval.metrics import mean_standard_error
from pictura.maps.roadmap import AGENT_PEDESTRIAN
from pictura.sim import NUM_ACTIONS
from pictura.sim.snapshot import BOX_INVALID, BoxView, box_row

if TYPE_CHECKING:
    from pictura.modules.gae import ReturnNormalizer

BRAKE_ACTIONS = tuple(a for a in range(NUM_ACTIONS) if a // 3 in (0, 1))
"""Actions whose longitudinal jerk is negative (JERK_LONG[a // 3] < 0)."""
VISIBILITY_BINS = (0.0, 1e-6, 0.25, 0.5, 0.75, 1.0 + 1e-6)
"""Bin edges of the visible fraction: [0] (hidden), (0, .25], (.25, .5], (.5, .75], (.75, 1]."""
PEDESTRIAN_SIZE = (0.6, 0.6, 1.75)
"""length, width, height (m) of the synthetic pedestrian."""


@dataclass
class ProbedPolicy:
    """A policy whose action distribution and value the probes can read.

    ``network(observation) -> (logits (B, 12), value (B,) or (B, 1))``; ``act`` is greedy, or
    random for the ``random`` baseline. ``return_norm``: the statistics of a run trained with
    ``value_normalization``; `evaluate` maps its value head back to return units with them, so
    ``dV`` compares across checkpoints trained with and without it.
    """

    name: str
    network: Callable
    sample: Callable | None = None
    return_norm: ReturnNormalizer | None = None

    @staticmethod
    def from_checkpoint(ckpt, env) -> ProbedPolicy:
        ckpt.policy(env)  # checks the observation layout and weights fit, with clear errors
        network = ckpt.policy_factory(env.observation_spec, NUM_ACTIONS)
        network.load_state_dict(ckpt.policy_state)
        network.to(env.device).eval()
        return_norm = None if ckpt.return_norm is None else ckpt.return_norm.to(env.device)
        return ProbedPolicy(ckpt.name, network, return_norm=return_norm)

    @staticmethod
    def baseline(spec: str, seed: int = 0) -> ProbedPolicy:
        """``random`` (uniform logits, random actions) or ``constant:A`` (one-hot logits); both
        have value 0 and ignore their input: the negative control of every probe."""
        from pictura.eval.policies import random_policy

        def const_logits(action: int) -> Callable:
            def network(obs):
                n = obs.batch_size[0]
                logits = torch.full((n, NUM_ACTIONS), -1e4, device=obs.device)
                if action >= 0:
                    logits[:, action] = 0.0
                else:
                    logits.zero_()
                return logits, torch.zeros(n, device=obs.device)

            return network

        if spec == "random":
            return ProbedPolicy(spec, const_logits(-1), random_policy(seed))
        if spec.startswith("constant:"):
            try:
                action = int(spec.split(":", 1)[1])
            except ValueError:
                raise ValueError(f"--policy {spec!r}: the constant action must be an integer 0..11") from None
            if not 0 <= action < NUM_ACTIONS:
                raise ValueError(f"--policy {spec!r}: the constant action must be in 0..{NUM_ACTIONS - 1}")
            return ProbedPolicy(spec, const_logits(action))
        raise ValueError(f"--policy {spec!r}: use 'random' or 'constant:<action>'")

    @torch.no_grad()
    def evaluate(self, observation) -> tuple[torch.Tensor, torch.Tensor]:
        """(P(brake) (B,), value (B,)) of a batch of observations."""
        logits, value = self.network(observation)
        probs = torch.softmax(logits.float(), dim=-1)
        value = value.float().reshape(-1)
        if self.return_norm is not None:
            value = self.return_norm.denormalize(value)
        return probs[:, list(BRAKE_ACTIONS)].sum(-1), value

    @torch.no_grad()
    def act(self, observation) -> torch.Tensor:
        if self.sample is not None:
            return self.sample(observation)
        logits, _ = self.network(observation)
        return logits.argmax(-1)


@dataclass
class RecordedState:
    """One recorded env step: snapshot, speeds and the observation the policy saw."""

    agent_box: torch.Tensor  # (S + P, 8) snapshot rows
    light_state: torch.Tensor  # (L,) int32
    speed: torch.Tensor  # (S,) m/s
    observation: TensorDict  # batch (S,)
    valid: torch.Tensor  # (S,) bool


def record_states(env, policy: ProbedPolicy, count: int, warmup: int = 10, stride: int = 5) -> list[RecordedState]:
    """Drive ``policy`` on ``env`` and keep ``count`` states, every ``stride`` steps after ``warmup``."""
    import warp as wp

    if count < 1 or stride < 1 or warmup < 0:
        raise ValueError(f"count and stride must be >= 1 and warmup >= 0, got {count}, {stride}, {warmup}")
    td = env.reset()
    out: list[RecordedState] = []
    step = 0
    while len(out) < count:
        if step >= warmup and (step - warmup) % stride == 0:
            snap = env.snapshot()
            box, light = snap["agent_box"], snap["light_state"]
            out.append(RecordedState(box, light, wp.to_torch(env.state.speed).clone(), td["observation"].clone(),
                                     td["valid"].clone()))
        td.set("action", policy.act(td["observation"]))
        td = env.step(td)["next"]
        step += 1
    return out


def counterfactual_observations(env, state: RecordedState, ego: int, boxes: torch.Tensor) -> TensorDict:
    """The ego's observation for each of ``boxes`` (K, S + P, 8) variants of ``state``'s snapshot.

    Perspective envs re-render the cameras; vectorized envs rebuild the entity sets. The rest of
    the observation is ``state``'s. Returns a TensorDict of batch (K,)."""
    k = boxes.shape[0]
    obs = state.observation[ego].expand(k).clone()
    if env.renders_pixels:
        lights = state.light_state[None].expand(k, -1).contiguous()
        history = {"agent_box": boxes, "light_state": lights}  # probes run fixed-world envs: no slot table
        obs["pixels"] = env.render_history(history, torch.arange(k), torch.full((k,), ego))
    else:
        S = env.num_slots
        parked = env.layout.parked_per_world > 0
        for i in range(k):
            sets = env.vectorized.build(
                boxes[i, :S].contiguous(), state.light_state, state.speed,
                parked_box=boxes[i, S:].contiguous() if parked else None,
            )
            for key, value in sets.items():
                obs[key][i] = value[ego]
    return obs


def _world_of(layout, row: int) -> int:
    if row < layout.num_slots:
        return int(layout.slot_world[row])
    return (row - layout.num_slots) // max(layout.parked_per_world, 1)


def removal_probe(
    env, policy: ProbedPolicy, states: list[RecordedState], radius: float = 40.0, max_egos: int = 4
) -> list[dict]:
    """Remove each road user within ``radius`` m of each ego (up to ``max_egos`` per state).

    Returns one record per (state, ego, user): ``state`` (the scene), ``ego``, ``target``,
    ``kind``, ``distance`` (m), ``visible`` (visible fraction), ``dV`` = V(o) - V(o'),
    ``dP_brake`` = P(brake | o) - P(brake | o') (o' without the user)."""
    if radius <= 0:
        raise ValueError(f"radius must be > 0 m, got {radius}")
    layout = env.layout
    layout.require_static("grounding probes")
    records = []
    for si, st in enumerate(states):
        box = st.agent_box.cpu()
        box_np, light_np = box.numpy(), st.light_state.cpu().numpy()
        egos = torch.nonzero(st.valid).squeeze(-1).tolist()[:max_egos]
        for ego in egos:
            view = BoxView(box_np)
            d = np.hypot(view.x - view.x[ego], view.y - view.y[ego])
            targets = [
                r for r in range(layout.box_count)
                if r != ego and view.kind[r] != BOX_INVALID and d[r] <= radius
                and _world_of(layout, r) == _world_of(layout, ego)
            ]
            if not targets:
                continue
            variants = box[None].repeat(len(targets) + 1, 1, 1)
            for i, r in enumerate(targets):
                BoxView(variants[i + 1, r]).kind = BOX_INVALID
            obs = counterfactual_observations(env, st, ego, variants.to(env.device))
            p_brake, value = (t.cpu() for t in policy.evaluate(obs))
            for i, r in enumerate(targets):
                records.append({
                    "state": si, "ego": ego, "target": r, "kind": int(view.kind[r]),
                    "distance": float(d[r]),
                    "visible": float(env.renderer.occlusion_fraction(box_np, light_np, ego, r)),
                    "dV": float(value[0] - value[i + 1]), "dP_brake": float(p_brake[0] - p_brake[i + 1]),
                })
    if not records:
        raise ValueError(
            f"no probed ego has a road user within {radius} m in any of the {len(states)} states: nothing to "
            "remove (raise --agents, --radius or --states)"
        )
    return records


def aggregate_by_visibility(records: list[dict], bins=VISIBILITY_BINS) -> list[dict]:
    """Fig. 8a's aggregation: per visible-fraction bin, the removals of each scene (``state``)
    averaged first, then over the scenes. Each bin has ``count`` (removals), ``scenes``, and
    for ``dV`` and ``dP_brake`` the mean of the per-scene means (``dV_mean``,
    ``dP_brake_mean``), the same of the magnitudes (``abs_dV_mean``, ``abs_dP_brake_mean``: the
    paper plots these) and the standard errors over scenes (``dV_se``, ``dP_brake_se``,
    ``abs_dV_se``, ``abs_dP_brake_se``: sample standard deviation of the per-scene means /
    sqrt(scenes), None below two scenes). Scenes, not removals, are the independent unit: the
    removals of one scene share its other road users and its ego."""

    def scene_means(sel: list[dict], key: str, magnitude: bool) -> np.ndarray:
        per_scene: dict[int, list[float]] = {}
        for r in sel:
            per_scene.setdefault(int(r["state"]), []).append(abs(r[key]) if magnitude else r[key])
        return np.array([np.mean(v) for v in per_scene.values()], np.float64)

    def mean(x: np.ndarray) -> float | None:
        return float(x.mean()) if len(x) else None

    out = []
    for lo, hi in zip(bins[:-1], bins[1:], strict=True):
        sel = [r for r in records if lo <= r["visible"] < hi]
        row = {
            "visible_lo": float(lo), "visible_hi": float(min(hi, 1.0)), "count": len(sel),
            "scenes": len({int(r["state"]) for r in sel}),
        }
        for key in ("dV", "dP_brake"):
            signed, magnitude = scene_means(sel, key, False), scene_means(sel, key, True)
            row |= {
                f"{key}_mean": mean(signed), f"abs_{key}_mean": mean(magnitude),
                f"{key}_se": mean_standard_error(signed), f"abs_{key}_se": mean_standard_error(magnitude),
            }
        out.append(row)
    return out


def pedestrian_probe(
    env, policy: ProbedPolicy, states: list[RecordedState], positions: int = 17, half_span: float = 8.0,
    behind: float = 2.0, max_distance: float = 30.0,
) -> dict | None:
    """Sweep a pedestrian along a line ``behind`` m beyond a vehicle ahead of an ego.

    Picks the first (state, ego, vehicle) with the vehicle within ``max_distance`` m and 45 deg
    of the ego's heading, and a free slot in the ego's world. The line is perpendicular to the
    ego->vehicle direction, ``positions`` points over ``[-half_span, half_span]`` m. Returns
    ``state``, ``ego``, ``vehicle``, ``offset`` (m), ``visible``, ``dV``, ``dP_brake`` lists,
    or None when no recorded state has such a configuration."""
    if positions < 2 or half_span <= 0:
        raise ValueError(f"positions must be >= 2 and half_span > 0, got {positions}, {half_span}")
    layout = env.layout
    layout.require_static("grounding probes")
    for si, st in enumerate(states):
        box = st.agent_box.cpu()
        b = BoxView(box.numpy())
        for ego in torch.nonzero(st.valid).squeeze(-1).tolist():
            w = int(layout.slot_world[ego])
            start, count = int(layout.world_slot_start[w]), int(layout.world_slot_count[w])
            free = [s for s in range(start, start + count) if b.kind[s] == BOX_INVALID]
            if not free:
                continue
            for v in range(layout.box_count):
                if v == ego or b.kind[v] != 0 or _world_of(layout, v) != w:
                    continue
                dx, dy = b.x[v] - b.x[ego], b.y[v] - b.y[ego]
                dist = math.hypot(dx, dy)
                ang = math.atan2(dy, dx) - b.heading[ego]
                if not (3.0 < dist <= max_distance and math.cos(ang) > math.cos(math.pi / 4)):
                    continue
                return _sweep(env, policy, st, si, ego, v, free[0], positions, half_span, behind)
    return None


def _sweep(env, policy, st, si, ego, v, slot, positions, half_span, behind) -> dict:
    box = st.agent_box.cpu()
    b = BoxView(box.numpy())
    ux, uy = b.x[v] - b.x[ego], b.y[v] - b.y[ego]
    norm = math.hypot(ux, uy)
    ux, uy = ux / norm, uy / norm
    reach = 0.5 * float(b.length[v]) + behind
    offsets = np.linspace(-half_span, half_span, positions)
    variants = box[None].repeat(positions + 1, 1, 1)  # variant 0: no pedestrian
    L, W, H = PEDESTRIAN_SIZE
    for i, s in enumerate(offsets):
        x = b.x[v] + reach * ux - s * uy
        y = b.y[v] + reach * uy + s * ux
        variants[i + 1, slot] = torch.tensor(
            box_row(x=x, y=y, z=b.z[v], heading=math.atan2(ux, -uy), length=L, width=W, height=H, kind=AGENT_PEDESTRIAN)
        )
    obs = counterfactual_observations(env, st, ego, variants.to(env.device))
    p_brake, value = (t.cpu() for t in policy.evaluate(obs))
    light = st.light_state.cpu().numpy()
    visible = [float(env.renderer.occlusion_fraction(variants[i + 1].numpy(), light, ego, slot)) for i in range(positions)]
    return {
        "state": si, "ego": ego, "vehicle": v, "offset": offsets.tolist(), "visible": visible,
        "dV": (value[1:] - value[0]).tolist(), "dP_brake": (p_brake[1:] - p_brake[0]).tolist(),
    }
