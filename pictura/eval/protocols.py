"""Evaluation protocols of the paper (App. C.2).

In-domain: fresh self-play on the training towns at 60 / 120 / 150 agents per world, every
scenario ``steps`` steps long (paper: 200 scenarios x 3000 steps per density), argmax actions,
evaluation settings (`eval_sim_config`). Each scenario is one world; ``worlds_per_batch``
scenarios run side by side in one env and every batch is a fresh reset with its own seed.

Zero-shot WOMD: `womd_selection` picks the controlled vehicles and thins the road users;
`run_womd` rolls the scenes out with log replay (`pictura.envs.replay.ReplayDrivingEnv`, one
world per scene, `pictura.sim.replay` in the simulator).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import warp as wp
from tensordict import TensorDictBase

from pictura.envs.replay import ReplayDrivingEnv
from pictura.eval.metrics import (
    ALL_COUNTERS,
    COUNTERS,
    EpisodeMetrics,
    PartnerSearch,
    collision_at_fault,
    collision_partner,
)
from pictura.maps import CARLA_TOWNS, Scenario, data_root
from pictura.maps.roadmap import AGENT_VEHICLE
from pictura.maps.womd.index import BadScene, SceneReader, SceneRef, WomdIndex, index_womd, read_scenes
from pictura.maps.womd.index import load_scene as load_womd_scene
from pictura.maps.womd.selection import (
    WOMD_STEPS,
    WomdSelection,
    womd_selection,
)
from pictura.sim import EVENTS, SimConfig

PROTOCOLS = ("in-domain", "womd")
IN_DOMAIN_DENSITIES = (60, 120, 150)
"""Agents per world (App. C.2)."""
WOMD_DENSITIES = (1.0, 0.75, 0.5)
"""Fraction of logged road users kept (App. C.2)."""
READ_AHEAD_BATCHES = 2
"""`run_womd` with a `SceneReader`: batches read ahead of the one rolling out."""

Policy = Callable[[TensorDictBase], torch.Tensor]
"""``policy(observation) -> action (S,) int64`` (argmax for checkpoints)."""
PolicyMaker = Callable[[object], Policy]
"""``make_policy(env) -> Policy``: checkpoints need the env's observation spec to build."""
EnvBuilder = Callable[..., object]
"""``build(device=, seed=, maps=, num_worlds=, slots_per_world=, agents_per_world=, sim=)``
-> a `pictura.envs.DrivingEnv` (or an env with the same ``state`` and keys)."""

_E_COLLISION, _E_OFFROAD, _E_RED_LIGHT, _E_GOAL = (EVENTS.index(e) for e in ("collision", "offroad", "red_light", "goal"))


def default_maps() -> tuple[list[str], str]:
    """The in-domain maps: the 8 CARLA towns when the data root has them, else 8 procedural
    towns. Returns (map sources, a one-line note saying which)."""
    try:
        carla = data_root() / "carla"
    except FileNotFoundError:
        carla = None
    if carla is not None and all((carla / f"{t}.xodr").is_file() for t in CARLA_TOWNS):
        return [f"carla:{t}" for t in CARLA_TOWNS], "maps: the 8 CARLA towns"
    return [f"procedural:seed={i}" for i in range(8)], "maps: 8 procedural towns (CARLA data not found)"


EVAL_SETTINGS: dict[str, float | tuple[float, ...]] = {
    "eval_goal_radius": 2.0,  # m: a goal counts within 2 m (App. C.1)
    "eval_light_s": (10.0, 3.0, 2.0),  # green, yellow, red, s
    "eval_vehicle_length": (2.0, 5.5),  # m, U(lo, hi)
    "eval_vehicle_width": (1.5, 2.5),  # m, U(lo, hi)
    "eval_v_max": 20.0,  # m/s
}
"""The evaluation settings REFERENCE.md lists ("Evaluation definitions", "Traffic lights", "Spawn"),
as `SimConfig` fields. Both protocols refuse a config that changes one (`check_eval_settings`);
argmax actions are the protocols' policy (`pictura.eval.policies.argmax_policy`)."""


def check_eval_settings(sim: SimConfig) -> None:
    """Raise ``ValueError`` naming the first `EVAL_SETTINGS` field ``sim`` sets to another value:
    an evaluation under other settings would not be the paper's, and silently replacing the
    value would hide the config's intent."""
    for name, value in EVAL_SETTINGS.items():
        got = getattr(sim, name)
        same = tuple(map(float, got)) == value if isinstance(value, tuple) else float(got) == value
        if not same:
            raise ValueError(
                f"SimConfig.{name} is {got!r}; the evaluation protocols fix it at {value!r} "
                "(REFERENCE.md): drop the override from the config"
            )


def eval_sim_config(steps: int, base: SimConfig | None = None) -> SimConfig:
    """Evaluation rules for ``steps``-step scenarios: eval sizes, light timings (no outages) and
    goal radius (`EVAL_SETTINGS`, checked on ``base``), v_max 20, no episode cap inside the
    scenario, no early reset.

    The simulator has no switch to turn the early reset off (its fraction must be in (0, 1]):
    1.0 resets a world only once *every* agent halted, and the protocol ignores a world from
    that moment on (`run_in_domain`), which measures exactly what "no early reset" would.
    ``episode_length = steps + 1`` keeps the scenario-end reset from firing inside the scenario.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    base = SimConfig() if base is None else base
    check_eval_settings(base)
    return dataclasses.replace(
        base, eval=True, v_max=float(EVAL_SETTINGS["eval_v_max"]), episode_length=steps + 1, early_reset_halted_fraction=1.0
    )


@dataclass
class InDomainResult:
    """Counters of one density (see `pictura.eval.metrics.ALL_COUNTERS`), not yet reduced, and
    every scenario's (K, len(`COUNTERS`)) sums in scenario order (`run_density`)."""

    density: int
    scenarios: int
    steps: int
    counters: torch.Tensor
    scenario_sums: torch.Tensor | None = None


def build_in_domain_env(
    build_env: EnvBuilder,
    density: int,
    num_worlds: int,
    steps: int,
    maps: Sequence[str],
    device: str = "cpu",
    seed: int = 0,
    base_sim: SimConfig | None = None,
):
    """An env of ``num_worlds`` worlds with exactly ``density`` agents each (as many as find a
    spawn) under `eval_sim_config` (``base_sim`` with the evaluation changes).

    Always fixed worlds (``block_slots=0``), whatever the training env packed: a scenario is
    one world of ``density`` slots played from its start, and the training config's block size
    need not divide the evaluation's slots."""
    if density < 1:
        raise ValueError(f"density (agents per world) must be >= 1, got {density}")
    if num_worlds < 1:
        raise ValueError(f"num_worlds must be >= 1, got {num_worlds}")
    if not maps:
        raise ValueError("maps must name at least one map source")
    return build_env(
        device=device,
        seed=seed,
        maps=list(maps),
        num_worlds=num_worlds,
        slots_per_world=density,
        agents_per_world=(density, density),
        block_slots=0,
        sim=eval_sim_config(steps, base_sim),
    )


class ScenarioProgress:
    """A ``progress`` callback for `run_density` and `run_womd`: a tqdm bar over scenarios when
    tqdm is installed, else a plain counter on stderr; silent unless ``enabled``."""

    def __init__(self, total: int, desc: str, enabled: bool) -> None:
        self.total, self.desc, self.n, self.bar = total, desc, 0, None
        self.enabled = enabled
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=desc, unit="scenario", file=sys.stderr)
            except ImportError:
                self.bar = None

    def __call__(self, n: int) -> None:
        self.n += n
        if self.bar is not None:
            self.bar.update(n)
        elif self.enabled:
            print(f"\r{self.desc}: {self.n}/{self.total} scenarios", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled:
            print(file=sys.stderr)


def scenario_metrics(env) -> EpisodeMetrics:
    """`EpisodeMetrics` for ``env`` whose scenarios are its worlds (fixed worlds, of one size or
    of their own sizes: the layout's ``slot_world``), for the standard errors
    (`EpisodeMetrics.close_scenarios` after each batch)."""
    layout = getattr(env, "layout", None)
    if layout is not None and not layout.is_packed:
        slot_world = torch.as_tensor(np.asarray(layout.slot_world, np.int64), device=env.device)
    else:
        slot_world = torch.arange(env.num_slots, device=env.device) // (env.num_slots // env.num_worlds)
    return EpisodeMetrics(env.num_slots, env.device, scenario=slot_world)


def equal_worlds(env) -> bool:
    """Whether ``env``'s worlds are the (W, K) grid `collision_at_fault` and `collision_partner`
    read: fixed worlds of one size (or a packed layout, whose blocks are read the same way).
    Worlds of their own sizes (`WorldLayout.sized`, the zero-shot WOMD env) are not."""
    layout = getattr(env, "layout", None)
    if layout is None or layout.is_packed:
        return True
    counts = np.asarray(layout.world_slot_count)
    return bool((counts == counts[0]).all())


def run_density(
    env,
    policy: Policy,
    scenarios: int,
    steps: int,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
    scenario_sums: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """Play ``scenarios`` scenarios (one world each, ``env.num_worlds`` at a time, a fresh seed
    per batch) and return the `ALL_COUNTERS` sums, scenario moments included (not reduced over
    ranks).

    ``steps`` must not exceed the env's episode length (`eval_sim_config`). ``progress(n)`` is
    called after each batch with the number of scenarios it finished. A ``scenario_sums`` list
    gets each batch's (n, len(`COUNTERS`)) per-scenario sums appended, in scenario order: the
    same seed plays the same scenarios, so two policies' rows pair up
    (`pictura.eval.metrics.paired_ratio_change`).
    """
    if scenarios < 1:
        raise ValueError(f"scenarios must be >= 1, got {scenarios}")
    if steps >= env.sim_config.episode_length:
        raise ValueError(
            f"steps={steps} reach the env's episode_length={env.sim_config.episode_length}: build it "
            "with eval_sim_config(steps)"
        )
    metrics = scenario_metrics(env)
    done = batch = 0
    worlds = torch.arange(env.num_worlds, device=env.device)
    while done < scenarios:
        n = min(env.num_worlds, scenarios - done)
        env.set_seed(seed + 7919 * batch)
        rollout_scenarios(env, policy, steps, metrics, world_mask=worlds < n)
        if scenario_sums is not None:
            scenario_sums.append(metrics.scenario_sums()[:n])
        metrics.close_scenarios()
        done += n
        batch += 1
        if progress is not None:
            progress(n)
    return metrics.counters


def run_in_domain(
    build_env: EnvBuilder,
    make_policy: PolicyMaker,
    density: int,
    scenarios: int,
    steps: int,
    maps: Sequence[str],
    device: str = "cpu",
    seed: int = 0,
    worlds_per_batch: int = 8,
    progress: Callable[[int], None] | None = None,
    base_sim: SimConfig | None = None,
) -> InDomainResult:
    """`build_in_domain_env` + `run_density`: ``scenarios`` in-domain scenarios of ``density``
    agents and ``steps`` steps, ``min(worlds_per_batch, scenarios)`` side by side.

    A vehicle's episode runs from its spawn to its first infraction (the simulator halts it)
    or the scenario end. A world whose agents all halted is reset by the simulator; from then
    on it is ignored (its new agents are not evaluated).
    """
    if scenarios < 1:
        raise ValueError(f"scenarios must be >= 1, got {scenarios}")
    if worlds_per_batch < 1:
        raise ValueError(f"worlds_per_batch must be >= 1, got {worlds_per_batch}")
    env = build_in_domain_env(
        build_env, density, min(worlds_per_batch, scenarios), steps, maps, device, seed, base_sim
    )
    rows: list[torch.Tensor] = []
    counters = run_density(env, make_policy(env), scenarios, steps, seed, progress, scenario_sums=rows)
    return InDomainResult(density, scenarios, steps, counters, torch.cat(rows))


def acting_slots(env) -> torch.Tensor | None:
    """(A,) int64 slots the policy drives in ``env``, when that is fixed for the whole rollout
    and fewer than all slots: the controlled slots of a replay env (`pictura.sim.replay`;
    replayed and empty slots ignore their action). None otherwise: the policy sees every slot."""
    if not isinstance(env, ReplayDrivingEnv):
        return None
    controlled = env.controlled_slots
    if len(controlled) == env.num_slots:
        return None
    return torch.as_tensor(controlled, dtype=torch.int64, device=env.device)


@torch.no_grad()
def rollout_scenarios(
    env,
    policy: Policy,
    steps: int,
    metrics: EpisodeMetrics,
    world_mask: torch.Tensor | None = None,
) -> None:
    """Reset ``env`` and play ``steps`` steps, adding every vehicle episode to ``metrics``.

    ``world_mask`` (W,) bool: worlds that count (the last batch may use only some). No host
    sync inside the loop: per-step quantities stay tensors on the env's device. Every episode
    opened here is closed (added to ``metrics.counters``) before returning. In a replay env
    the policy acts on the controlled slots only (`acting_slots`: a WOMD scene's controlled
    vehicles are about a quarter of its road users, the rest replay their logs).
    """
    td = env.reset()
    st = env.state
    dt = float(env.sim_config.dt)
    world_id = td["world_id"]
    slots_per_world = env.num_slots // env.num_worlds
    box_rows = wp.to_torch(st.agent_box).shape[0]
    parked_per_world = (box_rows - env.num_slots) // env.num_worlds  # parked-car rows after the slots
    worlds = torch.arange(env.num_worlds, device=env.device)
    box_world = torch.cat([world_id, worlds.repeat_interleave(parked_per_world)])  # (S + P,)
    live_world = torch.ones(env.num_worlds, dtype=torch.bool, device=env.device)
    if world_mask is not None:
        live_world &= world_mask
    vehicle = wp.to_torch(st.kind) == AGENT_VEHICLE
    counted = wp.to_torch(st.active).bool() & vehicle & live_world[world_id]
    metrics.start(counted)
    prev_speed = wp.to_torch(st.speed).clone()
    prev_box = wp.to_torch(st.agent_box).clone()
    prev_distance = wp.to_torch(st.distance).clone()
    prev_halted = wp.to_torch(st.halted).clone()
    acting = acting_slots(env)
    # A replay env counts controlled vehicles only (replayed slots have no ``active`` flag): the
    # collision rules judge those slots alone, against every box of their world. Worlds of their
    # own sizes have no (W, K) grid for `collision_at_fault`: every slot is judged the same way.
    judged = acting
    if judged is None and not equal_worlds(env):
        judged = torch.arange(env.num_slots, device=env.device)
    search = None if judged is None else PartnerSearch(judged, world_id, env.num_worlds, parked_per_world)
    for _ in range(steps):
        if acting is None:
            td.set("action", policy(td["observation"]))
        else:  # the policy sees only the slots it can drive; the others' action is never read
            action = torch.zeros(env.num_slots, dtype=torch.int64, device=env.device)
            action[acting] = policy(td["observation"][acting])
            td.set("action", action)
        td = env.step(td)["next"]
        st = env.state
        events = wp.to_torch(st.events).bool()
        world_reset = wp.to_torch(st.world_reset).bool()
        reset_slot = world_reset[world_id]
        # A world reset overwrites poses and odometers with the new agents': fall back to the
        # pre-step boxes and speed x dt for the step that triggered it.
        box_now = wp.to_torch(st.agent_box)
        box = torch.where(world_reset[box_world][:, None], prev_box, box_now)
        distance_now = wp.to_torch(st.distance)
        step_distance = torch.where(
            reset_slot, prev_speed.abs() * dt, (distance_now - prev_distance).clamp(min=0.0)
        )
        collision = events[:, _E_COLLISION] & counted
        if search is not None:
            at_fault, partner = search.judge(collision, prev_speed, box, prev_halted)
        else:
            at_fault = collision_at_fault(collision, prev_speed, box, slots_per_world, parked_per_world)
            partner = collision_partner(at_fault, box, prev_halted, slots_per_world, parked_per_world)
        metrics.update(
            counted,
            at_fault,
            collision,
            events[:, _E_OFFROAD],
            events[:, _E_RED_LIGHT],
            events[:, _E_GOAL].to(torch.float32),
            step_distance,
            partner,
        )
        live_world &= ~world_reset
        counted = counted & wp.to_torch(st.active).bool() & live_world[world_id]
        prev_speed = wp.to_torch(st.speed).clone()
        prev_box = box_now.clone()
        prev_distance = distance_now.clone()
        prev_halted = wp.to_torch(st.halted).clone()
    metrics.finish()


# ---- zero-shot WOMD --------------------------------------------------------------------------
def womd_sources(data: str | Path, use_cache: bool = True) -> WomdIndex:
    """Every WOMD scene named by ``data`` (a folder searched recursively, one file, or a glob;
    see `pictura.maps.womd.index`): ``.scenes`` as `SceneRef` in file and record order, read
    lazily by `run_womd`; ``.bad`` the files and records that could not be indexed. A clear
    `FileNotFoundError` when ``data`` names no WOMD file."""
    return index_womd(data, use_cache)


def womd_scenes(
    sources: Iterable[SceneRef | str | Path], density: float, seed: int = 0
) -> Iterator[tuple[Scenario, WomdSelection]]:
    """Load each scene and yield it with its selection; scenes without a controlled vehicle
    (after thinning) are skipped, as in the paper. Unreadable scenes raise (`run_womd` skips
    and reports them instead)."""
    for source in sources:
        scenario = load_womd_scene(source)
        selection = womd_selection(scenario, density, seed)
        if selection.controlled.any():
            yield scenario, selection


@dataclass
class WomdResult:
    """Counters of one density (see `pictura.eval.metrics.ALL_COUNTERS`), not yet reduced;
    ``scenes``: scenes rolled out, ``skipped``: readable scenes without a controlled vehicle,
    ``bad``: unreadable or invalid scenes (`BadScene`: file, record, reason);
    ``scenario_sums``: every scene's (K, len(`COUNTERS`)) sums, in scene order."""

    density: float
    scenes: int
    skipped: int
    steps: int
    counters: torch.Tensor
    scenario_sums: torch.Tensor | None = None
    bad: list[BadScene] = dataclasses.field(default_factory=list)
    batches: list[WomdBatch] = dataclasses.field(default_factory=list)


@dataclass
class WomdBatch:
    """One batch of `run_womd`: the ``index``-th slice of ``scenes_per_batch`` sources. Plain
    numbers and lists (JSON-ready), so batches can be written as they finish (``--resume``),
    computed by different processes and merged by ``index``."""

    index: int
    scenes: int
    skipped: int
    counters: list[float]
    scenario_sums: list[list[float]]
    bad: list[dict]

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def merge_womd_batches(batches: Iterable[WomdBatch], density: float, steps: int) -> WomdResult:
    """One `WomdResult` from batches (any order, e.g. gathered from several processes): sums
    in batch order, so the result does not depend on who computed which batch."""
    ordered = sorted(batches, key=lambda b: b.index)
    rows = [r for b in ordered for r in b.scenario_sums]
    counters = torch.tensor([b.counters for b in ordered if b.scenes], dtype=torch.float64)
    scenes = sum(b.scenes for b in ordered)
    if not scenes:
        bad = sum(len(b.bad) for b in ordered)
        raise ValueError(
            f"no WOMD scene to evaluate at density {density}: {sum(b.skipped for b in ordered)} without a "
            f"controlled vehicle, {bad} unreadable or invalid" + (" (see the warnings above)" if bad else "")
        )
    return WomdResult(
        float(density), scenes, sum(b.skipped for b in ordered), steps, counters.sum(0),
        torch.tensor(rows, dtype=torch.float64).reshape(len(rows), -1),
        [BadScene(**d) for b in ordered for d in b.bad], ordered,
    )


ReplayEnvBuilder = Callable[..., object]
"""``build(scenarios=, density=, seed=, device=, sim=, episode_length=)`` -> a
`pictura.envs.replay.ReplayDrivingEnv` (or an env with the same ``state`` and keys)."""


def replay_env_builder(**fixed) -> ReplayEnvBuilder:
    """A `ReplayEnvBuilder` that makes `ReplayDrivingEnv` with ``fixed`` keyword arguments
    (e.g. ``rig``, ``observation``, ``validate_actions``) added to the protocol's."""

    def build(**kwargs):
        return ReplayDrivingEnv(**fixed, **kwargs)

    return build


def _bad_scene(source, reason: str) -> BadScene:
    if isinstance(source, SceneRef):
        return BadScene(source.file, source.record if source.kind == "tfrecord" else None, reason)
    name = source.scenario_id if isinstance(source, Scenario) else str(source)
    return BadScene(name, None, reason)


def _reason(source, err: Exception) -> str:
    """The error message without the ``file: record N:`` prefix its `BadScene` already holds."""
    text = str(err)
    prefix = f"{source}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


def _select_batch(chunk, loaded, density: float, seed: int, strict: bool):
    """(scenes with a controlled vehicle, count without one, bad scenes) of one batch: ``loaded``
    holds each source's `Scenario`, or the `ValueError` reading it raised."""
    scenes, bad, skipped = [], [], 0
    for source, scenario in zip(chunk, loaded, strict=True):
        if isinstance(scenario, Exception):
            if strict:
                raise scenario
            bad.append((source, _reason(source, scenario)))
            continue
        if womd_selection(scenario, density, seed).controlled.any():
            scenes.append((source, scenario))
        else:
            skipped += 1
    return scenes, skipped, bad


def _build_or_drop(build_env, scenes, strict: bool, **kwargs):
    """The replay env of ``scenes``; a scene the env refuses (`ValueError`) is found by building
    each scene alone, dropped and returned as bad (raised under ``strict``)."""
    try:
        return build_env(scenarios=[s for _, s in scenes], **kwargs), scenes, []
    except ValueError:
        if strict or len(scenes) == 1:
            raise
    good, bad = [], []
    for source, scenario in scenes:
        try:
            build_env(scenarios=[scenario], **kwargs)
            good.append((source, scenario))
        except ValueError as err:
            bad.append((source, _reason(source, err)))
    env = build_env(scenarios=[s for _, s in good], **kwargs) if good else None
    return env, good, bad


def run_womd(
    build_env: ReplayEnvBuilder,
    make_policy: PolicyMaker,
    sources: Iterable[SceneRef | str | Path | Scenario] | WomdIndex,
    density: float,
    steps: int = WOMD_STEPS,
    done: dict[int, WomdBatch] | None = None,
    on_batch: Callable[[WomdBatch], None] | None = None,
    **options,
) -> WomdResult:
    """Zero-shot WOMD rollouts at one ``density``: `run_womd_densities` with one density
    (``done`` keyed by batch index, ``on_batch(batch)``; ``options`` as there)."""
    results = run_womd_densities(
        build_env, make_policy, sources, [density], steps,
        done={(float(density), k): b for k, b in (done or {}).items()},
        on_batch=None if on_batch is None else (lambda d, b: on_batch(b)), **options,
    )
    return results[float(density)]


def run_womd_densities(
    build_env: ReplayEnvBuilder,
    make_policy: PolicyMaker,
    sources: Iterable[SceneRef | str | Path | Scenario] | WomdIndex,
    densities: Sequence[float],
    steps: int = WOMD_STEPS,
    max_scenes: int | None = None,
    device: str = "cpu",
    seed: int = 0,
    scenes_per_batch: int = 8,
    progress: Callable[[int], None] | None = None,
    base_sim: SimConfig | None = None,
    strict: bool = False,
    done: dict[tuple[float, int], WomdBatch] | None = None,
    on_batch: Callable[[float, WomdBatch], None] | None = None,
    shard: tuple[int, int] = (0, 1),
    warn: Callable[[str], None] | None = None,
    reader: SceneReader | None = None,
) -> dict[float, WomdResult]:
    """Zero-shot WOMD rollouts at each of ``densities``: the scenes of ``sources`` that have a
    controlled vehicle (at most ``max_scenes`` per density), ``steps`` steps (600), argmax
    policy of ``make_policy(env)``.

    Controlled vehicles drive from their logged start to their final logged position (single
    goal, 2 m, removed on arrival); the others replay their logs (`pictura.sim.replay`). A
    vehicle's episode runs to its first infraction, its arrival or the scene end; metrics
    count controlled vehicles only (replayed ones are never ``active``).

    Scenes are read lazily, batch by batch, and each batch is read once for all densities:
    batch k is sources[k * scenes_per_batch : ...] (one world per scene with a controlled
    vehicle), played at every density before batch k + 1. A scene that cannot be read or that
    the env refuses is skipped with one ``warn`` line (default: stderr) and listed in ``bad``;
    ``strict`` raises instead. ``done[(density, k)]`` holds batches finished earlier (resume:
    they are not played again), ``on_batch(density, batch)`` gets each new `WomdBatch` as it
    finishes, and ``shard`` = (rank, ranks) plays only the batches k with k % ranks == rank
    (merge with `merge_womd_batches`). A ``reader`` (`SceneReader` with worker processes)
    reads the next batches' scenes while the current one rolls out. ``progress(n)`` counts
    sources per density played.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if scenes_per_batch < 1:
        raise ValueError(f"scenes_per_batch must be >= 1, got {scenes_per_batch}")
    check_eval_settings(SimConfig() if base_sim is None else base_sim)
    rank, ranks = shard
    if not 0 <= rank < ranks:
        raise ValueError(f"shard {rank} of {ranks}: need 0 <= rank < ranks")
    if ranks > 1 and max_scenes is not None:
        raise ValueError("max_scenes needs one process: which batch reaches it depends on every batch before it")
    densities = [float(d) for d in densities]
    if warn is None:
        def warn(line: str) -> None:
            print(line, file=sys.stderr)
    index_bad = list(sources.bad) if isinstance(sources, WomdIndex) else []
    if strict and index_bad:
        first = index_bad[0]
        raise ValueError(f"{first.file}" + ("" if first.record is None else f": record {first.record}") +
                         f": {first.reason}")
    sources = list(sources.scenes if isinstance(sources, WomdIndex) else sources)
    done = dict(done or {})
    batches: dict[float, list[WomdBatch]] = {d: [] for d in densities}
    remaining = {d: len(sources) if max_scenes is None else max_scenes for d in densities}
    chunks = [sources[i : i + scenes_per_batch] for i in range(0, len(sources), scenes_per_batch)]
    mine = [k for k in range(len(chunks)) if k % ranks == rank or any((d, k) in done for d in densities)]
    to_read = [k for k in mine if any((d, k) not in done for d in densities)]
    pending: dict[int, object] = {}

    def read_ahead(position: int) -> None:
        """Keep the next `READ_AHEAD_BATCHES` batches' scenes being read by ``reader``'s workers."""
        for k in to_read[position : position + READ_AHEAD_BATCHES + 1]:
            if k not in pending and not any(isinstance(s, Scenario) for s in chunks[k]):
                pending[k] = reader.submit(chunks[k])

    for k in mine:
        if all(r <= 0 for r in remaining.values()):
            break
        chunk = chunks[k]
        loaded = None
        shared: dict | None = {} if 1.0 in densities else None  # one env for the batch's densities
        for density in densities:
            if remaining[density] <= 0:
                continue
            batch = done.get((density, k))
            if batch is None:
                if loaded is None:
                    if reader is not None:
                        read_ahead(to_read.index(k))
                    loaded = reader.result(pending.pop(k)) if k in pending else read_scenes(chunk)
                batch = _play_batch(
                    k, chunk, loaded, build_env, make_policy, density, steps, remaining[density], device, seed,
                    base_sim, strict, warn, shared,
                )
                if on_batch is not None:
                    on_batch(density, batch)
            remaining[density] -= batch.scenes
            batches[density].append(batch)
            if progress is not None:
                progress(len(chunk))
    results = {}
    for density in densities:
        mine_batches = batches[density]
        if ranks > 1:
            mine_batches = [b for b in mine_batches if b.index % ranks == rank]  # resumed: each rank its own
            if not any(b.scenes for b in mine_batches):  # this rank's share may be empty; the merge decides
                results[density] = WomdResult(
                    density, 0, sum(b.skipped for b in mine_batches), steps,
                    torch.zeros(len(ALL_COUNTERS), dtype=torch.float64), torch.zeros(0, len(COUNTERS)),
                    [BadScene(**d) for b in mine_batches for d in b.bad], mine_batches,
                )
                continue
        results[density] = merge_womd_batches(mine_batches, density, steps)
        if rank == 0:
            results[density].bad = index_bad + results[density].bad
    return results


def _play_batch(
    k: int, chunk, loaded, build_env, make_policy, density: float, steps: int, limit: int, device, seed: int,
    base_sim, strict: bool, warn, shared: dict | None = None,
) -> WomdBatch:
    """Select, build and roll out batch ``k`` at one density (at most ``limit`` scenes).

    With ``shared`` (a dict kept for the batch's densities; only when the run plays density 1.0),
    the batch's env is built once at density 1.0, which keeps every road user, and thinned to
    each density in place (`ReplayDrivingEnv.set_density`); worlds not played at this density
    (no controlled vehicle, or past ``limit``) are masked out. A scene that env refuses is bad
    at every density it is played at. Envs without ``set_density`` are built per density."""
    scenes, skipped, bad = _select_batch(chunk, loaded, density, seed, strict)
    scenes = scenes[:limit]
    env = worlds = None
    if scenes:
        built = None if shared is None else _shared_env(shared, chunk, loaded, build_env, seed, strict,
                                                        device=device, sim=base_sim, episode_length=steps + 1)
        if built is not None:
            env, world_of, refused = built
            bad += [(source, reason) for source, reason in refused if any(source is s for s, _ in scenes)]
            scenes = [(source, sc) for source, sc in scenes if id(sc) in world_of]
            worlds = [world_of[id(sc)] for _, sc in scenes]
            if scenes:
                env.set_density(density)
            else:
                env = None
        else:
            # episode_length = steps + 1: the scene-end reset never fires inside the rollout
            env, scenes, refused = _build_or_drop(
                build_env, scenes, strict, density=density, seed=seed, device=device, sim=base_sim,
                episode_length=steps + 1,
            )
            bad += refused
    counters, rows = [0.0] * len(ALL_COUNTERS), []
    if env is not None:
        metrics = scenario_metrics(env)
        mask = None
        if worlds is not None:
            mask = torch.zeros(env.num_worlds, dtype=torch.bool, device=env.device)
            mask[torch.as_tensor(worlds, device=env.device)] = True
        rollout_scenarios(env, make_policy(env), steps, metrics, world_mask=mask)
        sums = metrics.scenario_sums()
        rows = (sums[: len(scenes)] if worlds is None else sums[torch.as_tensor(worlds, device=sums.device)]).tolist()
        metrics.close_scenarios()
        counters = metrics.counters.tolist()
    for source, reason in bad:
        warn(f"womd: skipped {source}: {reason}")
    return WomdBatch(k, len(scenes), skipped, counters, rows, [_bad_scene(s, r).as_dict() for s, r in bad])


def _shared_env(shared: dict, chunk, loaded, build_env, seed: int, strict: bool, **kwargs):
    """(env built at density 1.0 from the batch's scenes with a controlled vehicle, {id(scene):
    world}, refused [(source, reason)]), built at the first call of a batch; None when there is
    no such scene or the env cannot change density (then each density builds its own)."""
    if "env" not in shared:
        shared["env"] = None
        scenes, _, _ = _select_batch(chunk, loaded, 1.0, seed, strict=False)
        if scenes:
            env, good, refused = _build_or_drop(build_env, scenes, strict, density=1.0, seed=seed, **kwargs)
            if env is not None and callable(getattr(env, "set_density", None)):
                shared["env"] = (env, {id(sc): w for w, (_, sc) in enumerate(good)}, refused)
    return shared["env"]
