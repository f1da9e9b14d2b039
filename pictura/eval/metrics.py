"""The five driving metrics of the paper (App. C.1), accumulated on device during rollouts.

Vehicles only; per-episode indicators averaged over controlled vehicle episodes:

    at_fault_collision  share of episodes with an at-fault collision
    offroad             share of episodes that went off-road
    red_light           share of episodes with a red-light violation
    goals               waypoints reached per episode (mean count)
    km_per_infraction   total km driven / episodes with >= 1 infraction

An *infraction* is an at-fault collision, an off-road or a red-light violation. A collision the
vehicle is not at fault for still ends its episode (the simulator halts it) but is not an
infraction; it is counted separately as ``collision`` (any collision).

Standard errors: a run that says which scenario each slot plays (`EpisodeMetrics(scenario=...)`,
as the in-domain protocol and `DensitySweep` do) also sums per-scenario second moments, and
`summarize` then reports ``<metric>_se`` beside each ratio of `RATIOS` (the five,
``at_fault_per_km`` and the four ``at_fault_<partner>`` shares): the standard error of a ratio of
sums over scenarios (the delta method, scenarios as the independent units, since the vehicles
of one scenario meet each other), from two scenarios on.

Diagnostics beside the five: what the at-fault collisions hit (`PARTNERS`), as shares of
episodes that add up to ``at_fault_collision``: ``at_fault_halted`` (an agent already halted by
an earlier infraction: a wreck, which stays in place as an obstacle), ``at_fault_driving`` (an
agent not halted), ``at_fault_parked`` (a parked car) and ``at_fault_other`` (no box within
reach, e.g. a wall). And ``at_fault_per_km``: at-fault collision episodes per km driven. A
policy that starts to move drives further per episode, so its per-episode rate can stay flat
while its rate per km falls; this one tells the two apart (not a Table-1 metric).

Everything is a torch tensor on the rollout's device: `EpisodeMetrics.update` never syncs with
the host. Totals are plain sums (`COUNTERS`), so ranks combine by summing (`all_reduce_counters`)
and the rates are divided once at the end (`summarize`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from pictura.sim.snapshot import BOX_INVALID, BOX_ROW_FLOATS, BoxView

METRICS = ("at_fault_collision", "offroad", "red_light", "goals", "km_per_infraction")
"""The five reported metrics, in table-column order."""
PARTNERS = ("halted", "driving", "parked", "other")
"""What an at-fault collision hit (`collision_partner` codes 0..3): an agent halted before the
step, an agent not halted, a parked car, no box within reach."""
METRIC_LABELS = {
    "at_fault_collision": "At-fault coll. %",
    "offroad": "Off-road %",
    "red_light": "Red light %",
    "goals": "Goals / veh",
    "km_per_infraction": "km / infr.",
    "at_fault_per_km": "At-fault coll. / km",
    **{f"at_fault_{p}": f"At-fault on {p} %" for p in PARTNERS},
}
COUNTERS = (
    "episodes",
    "at_fault_collision",
    "collision",
    "offroad",
    "red_light",
    "goals",
    "distance_m",
    "infraction_episodes",
    *(f"at_fault_{p}" for p in PARTNERS),
)
"""Raw sums behind the metrics (float64 vector in this order)."""
(C_EPISODES, C_AT_FAULT, C_COLLISION, C_OFFROAD, C_RED_LIGHT, C_GOALS, C_DISTANCE, C_INFRACTION) = range(8)
C_PARTNER = 8
"""Index of ``at_fault_halted``; the other `PARTNERS` follow."""
RATIOS = {
    "at_fault_collision": ("at_fault_collision", "episodes", 1.0),
    "offroad": ("offroad", "episodes", 1.0),
    "red_light": ("red_light", "episodes", 1.0),
    "goals": ("goals", "episodes", 1.0),
    "km_per_infraction": ("distance_m", "infraction_episodes", 1e-3),
    "at_fault_per_km": ("at_fault_collision", "distance_m", 1e3),
    **{f"at_fault_{p}": (f"at_fault_{p}", "episodes", 1.0) for p in PARTNERS},
}
"""Each of the five `METRICS`, and the diagnostics ``at_fault_per_km`` and ``at_fault_<partner>``
(the at-fault rate split by what was hit, `PARTNERS`), as a ratio of two `COUNTERS`
(numerator, denominator, the scale from metres to km)."""
MOMENTS = (
    "scenarios",
    *sorted({f"{a}*{b}" for num, den, _ in RATIOS.values() for a, b in ((num, num), (num, den), (den, den))}),
)
"""Sums over scenarios behind the standard errors: the number of scenarios, and for each ratio
a / b of `RATIOS` the sums of a^2, a b and b^2 over scenarios (``"a*b"``), appended to the
counters vector after `COUNTERS` (`ALL_COUNTERS`)."""
ALL_COUNTERS = COUNTERS + MOMENTS
"""The counters vector's layout: `COUNTERS`, then `MOMENTS` (zeros without scenario ids)."""

MIN_AT_FAULT_SPEED = 0.2
"""m/s: a colliding vehicle slower than this is not at fault (App. C.1)."""
Z_TOLERANCE_M = 4.0
"""Boxes further apart than this in z never touch (overpasses), as in the simulator."""


def circumradius(view: BoxView) -> torch.Tensor:
    """Radius of each box's circumscribed circle (the partner search's gap is between these)."""
    return 0.5 * torch.sqrt(view.length * view.length + view.width * view.width)


def blameless(ego: BoxView, other: BoxView, partner_is_agent: torch.Tensor, v: torch.Tensor,
              min_speed: float) -> torch.Tensor:  # fmt: skip
    """App. C.1's two exemptions from fault, elementwise: the ego (pre-step signed speed ``v``)
    was slower than ``min_speed``, or it was struck from behind: its partner ``other`` is an
    agent whose centre lies behind the ego's rear bumper (x < -length / 2 in the ego frame)
    while the ego was not reversing."""
    h = ego.heading
    rel_x = torch.cos(h) * (other.x - ego.x) + torch.sin(h) * (other.y - ego.y)
    struck_from_behind = partner_is_agent & (rel_x < -0.5 * ego.length) & (v >= 0)
    return (v.abs() < min_speed) | struck_from_behind


def partner_code(partner_halted: torch.Tensor, partner_parked: torch.Tensor, found: torch.Tensor) -> torch.Tensor:
    """The `PARTNERS` code: 0 a halted agent, 1 a driving one, 2 a parked car, 3 none (a wall)."""
    code = torch.where(partner_halted, 0, 1)
    code = torch.where(partner_parked, 2, code)
    return torch.where(found, code, 3)


def collision_at_fault(
    collision: torch.Tensor,
    speed: torch.Tensor,
    boxes: torch.Tensor,
    slots_per_world: int,
    parked_per_world: int = 0,
    min_speed: float = MIN_AT_FAULT_SPEED,
) -> torch.Tensor:
    """Which collisions count against the colliding agent (App. C.1).

    Not at fault when the ego was slower than ``min_speed`` (|v|), or when it was struck from
    behind: its collision partner (the box of the same world, agent or parked car, with the
    smallest gap between circumscribed circles, |dz| < 4 m) is an agent whose centre lies behind
    the ego's rear bumper (x < -length / 2 in the ego frame) while the ego was not reversing.
    Hitting a parked car, or anything that is not a box (a wall), is at fault above
    ``min_speed``. The simulator's collision event carries no fault, hence this rule.

    Args:
        collision: (S,) bool, the collision event of this step.
        speed: (S,) m/s signed speed of each agent at the start of the step (the simulator sets a
            halted agent's speed to 0, so the post-step speed would make every crash blameless).
        boxes: (S + W * parked_per_world, 8) boxes (`pictura.sim.snapshot` layout: the S slot
            rows, then each world's parked cars) at the collision; empty rows have kind < 0.
        slots_per_world: slots of each world (uniform layout; S must be a multiple).
        parked_per_world: parked-car rows per world after the slot rows.
    Returns:
        (S,) bool: collision and at fault.
    """
    S = collision.shape[0]
    if speed.shape != (S,):
        raise ValueError(f"speed must be ({S},), got {tuple(speed.shape)}")
    b, partner, found = _nearest_partner(boxes, S, slots_per_world, parked_per_world)
    K = slots_per_world
    W = S // K
    ego = BoxView(b[:, :K])
    other = BoxView(b.gather(1, partner[..., None].expand(-1, -1, BOX_ROW_FLOATS)))  # (W, K, 8)
    excused = blameless(ego, other, found & (partner < K), speed.reshape(W, K), min_speed)
    return collision.bool() & ~excused.reshape(S)


def collision_partner(
    collision: torch.Tensor,
    boxes: torch.Tensor,
    halted: torch.Tensor,
    slots_per_world: int,
    parked_per_world: int = 0,
) -> torch.Tensor:
    """(S,) int64: the `PARTNERS` code of each collision's partner, -1 where ``collision`` is False.

    The partner is the one `collision_at_fault` judges by (the nearest box of the world by the
    gap between circumscribed circles, |dz| < 4 m). ``halted`` (S,) is the slots' halted flag at
    the start of the step, so an agent halted by this very collision still counts as driving.
    """
    S = collision.shape[0]
    if halted.shape != (S,):
        raise ValueError(f"halted must be ({S},), got {tuple(halted.shape)}")
    _, partner, found = _nearest_partner(boxes, S, slots_per_world, parked_per_world)
    K = slots_per_world
    W = S // K
    slot = partner.clamp(max=K - 1) + K * torch.arange(W, device=boxes.device)[:, None]  # (W, K)
    code = partner_code(halted.bool()[slot], partner >= K, found)
    return torch.where(collision.bool(), code.reshape(S), -1)


def _nearest_partner(
    boxes: torch.Tensor, S: int, slots_per_world: int, parked_per_world: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each slot's nearest box of its world (agents and parked cars, not itself, |dz| < 4 m) by the
    gap between circumscribed circles.

    Returns the boxes regrouped per world ``(W, K + P, 8)``, the partner's index in that row
    ``(W, K)`` (``>= K``: a parked car) and whether there was one ``(W, K)``."""
    if slots_per_world < 1 or S % slots_per_world:
        raise ValueError(f"slots_per_world={slots_per_world} does not divide the {S} slots")
    K, P, W = slots_per_world, parked_per_world, S // slots_per_world
    if boxes.shape != (S + W * P, BOX_ROW_FLOATS):
        raise ValueError(f"boxes must be ({S + W * P}, {BOX_ROW_FLOATS}) for {S} slots + {W}x{P} parked, got {tuple(boxes.shape)}")
    b = boxes.to(torch.float32)
    b = torch.cat([b[:S].reshape(W, K, BOX_ROW_FLOATS), b[S:].reshape(W, P, BOX_ROW_FLOATS)], dim=1)  # (W, K+P, 8)
    view = BoxView(b)
    x, y, z = view.x, view.y, view.z
    valid = view.kind >= 0
    radius = circumradius(view)
    # (W, ego K, other K+P): other minus ego
    dx = x[:, None, :] - x[:, :K, None]
    dy = y[:, None, :] - y[:, :K, None]
    dz = z[:, None, :] - z[:, :K, None]
    gap = torch.sqrt(dx * dx + dy * dy) - radius[:, :K, None] - radius[:, None, :]
    self_pair = torch.eye(K, K + P, dtype=torch.bool, device=boxes.device)
    candidate = valid[:, None, :] & ~self_pair & (dz.abs() < Z_TOLERANCE_M)
    gap = torch.where(candidate, gap, torch.full_like(gap, math.inf))
    partner = gap.argmin(-1)  # (W, K)
    found = torch.isfinite(gap.gather(-1, partner[..., None])).squeeze(-1)
    return b, partner, found


class PartnerSearch:
    """`collision_at_fault` and `collision_partner` for chosen ego slots of worlds of any sizes.

    The same rules and the same partner (the nearest box of the ego's world by the gap between
    circumscribed circles, |dz| < 4 m, the first in slot order then parked order on a tie),
    judged only for the ``ego`` slots: a rollout whose counted vehicles are a known subset of
    the slots (a replay env's controlled slots, `pictura.eval.protocols.acting_slots`) pairs
    those few with every box of their world instead of every slot with every box.

    Args:
        ego: (A,) int64 slots to judge; every other slot is never at fault (code -1).
        slot_world: (S,) int world of each slot (slots of a world need not be contiguous).
        num_worlds: W.
        parked_per_world: parked-car rows per world after the S slot rows of the boxes.
    """

    def __init__(self, ego: torch.Tensor, slot_world: torch.Tensor, num_worlds: int, parked_per_world: int = 0) -> None:
        dev = slot_world.device
        sw = slot_world.detach().cpu().numpy().astype(np.int64)
        ego_np = ego.detach().cpu().numpy().astype(np.int64)
        S, W, P = len(sw), num_worlds, parked_per_world
        self.num_slots, self.num_rows = S, S + W * P
        order = np.argsort(sw, kind="stable")  # slots world by world, ascending within a world
        counts = np.bincount(sw, minlength=W)
        K = int(counts.max()) if S else 0
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        k = np.arange(K)
        table = np.full((W, K + P), self.num_rows, np.int64)  # num_rows: the empty fill row
        inside = k[None, :] < counts[:, None]
        table[:, :K][inside] = order[(start[:, None] + k[None, :])[inside]]
        table[:, K:] = S + np.arange(W)[:, None] * P + np.arange(P)[None, :]
        cand = table[sw[ego_np]]  # (A, K + P)
        self.ego = torch.as_tensor(ego_np, device=dev)
        self.cand = torch.as_tensor(cand, device=dev)
        self.not_self = self.cand != self.ego[:, None]
        fill = torch.zeros((1, BOX_ROW_FLOATS), dtype=torch.float32, device=dev)
        BoxView(fill).kind = BOX_INVALID
        self._fill = fill

    def judge(
        self,
        collision: torch.Tensor,
        speed: torch.Tensor,
        boxes: torch.Tensor,
        halted: torch.Tensor,
        min_speed: float = MIN_AT_FAULT_SPEED,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(S,) bool at fault and (S,) int64 partner code (`collision_partner`, -1 where not at
        fault) for the step's ``collision`` (S,), pre-step ``speed`` (S,) and ``halted`` (S,),
        and the ``boxes`` (S + W * P, 8) at the collision."""
        S, E = self.num_slots, self.ego
        if boxes.shape != (self.num_rows, BOX_ROW_FLOATS):
            raise ValueError(f"boxes must be ({self.num_rows}, {BOX_ROW_FLOATS}), got {tuple(boxes.shape)}")
        b = torch.cat([boxes.to(torch.float32), self._fill])  # (N + 1, 8)
        view = BoxView(b)
        x, y, z = view.x, view.y, view.z
        radius = circumradius(view)
        c = self.cand
        dx = x[c] - x[E][:, None]
        dy = y[c] - y[E][:, None]
        dz = z[c] - z[E][:, None]
        gap = torch.sqrt(dx * dx + dy * dy) - radius[E][:, None] - radius[c]
        candidate = (view.kind[c] >= 0) & self.not_self & (dz.abs() < Z_TOLERANCE_M)
        gap = torch.where(candidate, gap, torch.full_like(gap, math.inf))
        col = gap.argmin(-1)  # (A,)
        found = torch.isfinite(gap.gather(-1, col[:, None])).squeeze(-1)
        row = c.gather(-1, col[:, None]).squeeze(-1)  # (A,) the partner's box row
        v = speed[E]
        fault = collision.bool()[E] & ~blameless(BoxView(b[E]), BoxView(b[row]), found & (row < S), v, min_speed)
        halted_row = torch.cat([halted.bool(), halted.new_zeros(b.shape[0] - S, dtype=torch.bool)])
        code = partner_code(halted_row[row], row >= S, found)
        at_fault = torch.zeros(S, dtype=torch.bool, device=b.device)
        at_fault[E] = fault
        partner = torch.full((S,), -1, dtype=torch.int64, device=b.device)
        partner[E] = torch.where(fault, code, -1)
        return at_fault, partner


class EpisodeMetrics:
    """Per-slot episode bookkeeping plus the `COUNTERS` totals, all on ``device``.

    Usage (one vehicle episode per slot at a time)::

        m = EpisodeMetrics(num_slots, device)
        m.start(vehicle & active)                   # spawn
        for each step: m.update(mask, at_fault, collision, offroad, red_light, goal, distance_m, partner)
        m.finish()                                  # scenario end: close every open episode
        summarize(all_reduce_counters(m.counters))

    All per-step arguments are (S,) tensors; ``mask`` (bool) says which slots count this step
    (controlled vehicles still driving); events outside an open episode are ignored.

    ``scenario`` (S,) int, optional: the scenario each slot plays (0 .. K-1, e.g. its world).
    Closed episodes then also add up per scenario, and `close_scenarios` (after the scenarios
    end) folds those sums into the `MOMENTS` part of ``counters``, for `summarize`'s standard
    errors. ``counters`` is laid out as `ALL_COUNTERS` either way.
    """

    def __init__(
        self, num_slots: int, device: str | torch.device = "cpu", scenario: torch.Tensor | None = None
    ) -> None:
        if num_slots < 1:
            raise ValueError(f"num_slots must be >= 1, got {num_slots}")
        dev = torch.device(device)
        self.num_slots = num_slots
        self.counters = torch.zeros(len(ALL_COUNTERS), dtype=torch.float64, device=dev)
        self._scenario_sums = None
        if scenario is not None:
            scenario = self._check(scenario, "scenario").to(dev, torch.int64)
            if scenario.min() < 0:
                raise ValueError("EpisodeMetrics: scenario ids must be >= 0")
            # Per-scenario sums as differences of a running sum over the slots sorted by scenario:
            # deterministic on every device (an index_add_ adds by atomics on CUDA, in any order).
            # Scenario k's slots are sorted rows [start_k, end_k) (empty for an id without slots).
            self._scenario_order = torch.argsort(scenario, stable=True)
            self._scenario_end = torch.bincount(scenario).cumsum(0)
            self._scenario_start = torch.cat([self._scenario_end.new_zeros(1), self._scenario_end[:-1]])
            # (K, len(COUNTERS)) sums of the episodes closed so far, per scenario
            self._scenario_sums = torch.zeros(
                len(self._scenario_end), len(COUNTERS), dtype=torch.float64, device=dev
            )
        self.open = torch.zeros(num_slots, dtype=torch.bool, device=dev)
        # per open episode: (S, 5) bool at_fault, collision, offroad, red_light, infraction
        self._flags = torch.zeros(num_slots, 5, dtype=torch.bool, device=dev)
        # per open episode: (S, len(PARTNERS)) bool, what its at-fault collision hit
        self._partner = torch.zeros(num_slots, len(PARTNERS), dtype=torch.bool, device=dev)
        self._goals = torch.zeros(num_slots, dtype=torch.float64, device=dev)
        self._distance = torch.zeros(num_slots, dtype=torch.float64, device=dev)

    @property
    def device(self) -> torch.device:
        return self.counters.device

    def start(self, mask: torch.Tensor) -> None:
        """Open a new episode in every slot of ``mask`` (closing the one it had, if any)."""
        mask = self._check(mask, "mask").bool()
        self.finish(mask)
        self.open |= mask

    def update(
        self,
        mask: torch.Tensor,
        at_fault: torch.Tensor,
        collision: torch.Tensor,
        offroad: torch.Tensor,
        red_light: torch.Tensor,
        goal: torch.Tensor,
        distance_m: torch.Tensor,
        partner: torch.Tensor | None = None,
    ) -> None:
        """Add one step of events (bool or 0/1), goals reached (count) and metres driven;
        ``partner`` (S,) int: `collision_partner` codes (None: the at-fault partner counters stay 0)."""
        live = self._check(mask, "mask").bool() & self.open
        events = torch.stack(
            [
                self._check(at_fault, "at_fault").bool(),
                self._check(collision, "collision").bool(),
                self._check(offroad, "offroad").bool(),
                self._check(red_light, "red_light").bool(),
            ],
            dim=1,
        )
        infraction = events[:, 0] | events[:, 2] | events[:, 3]
        events = torch.cat([events, infraction[:, None]], dim=1) & live[:, None]
        self._flags |= events
        if partner is not None:
            codes = torch.arange(len(PARTNERS), device=self.device)
            hit = self._check(partner, "partner")[:, None] == codes[None, :]
            self._partner |= hit & events[:, :1]
        zero = torch.zeros((), dtype=torch.float64, device=self.device)
        self._goals += torch.where(live, self._check(goal, "goal").to(torch.float64), zero)
        self._distance += torch.where(live, self._check(distance_m, "distance_m").to(torch.float64), zero)

    def finish(self, mask: torch.Tensor | None = None) -> None:
        """Close the open episodes of ``mask`` (default: all) into `counters`."""
        closing = self.open if mask is None else self.open & self._check(mask, "mask").bool()
        w = closing.to(torch.float64)
        flags = self._flags.to(torch.float64) * w[:, None]
        # each closing episode's contribution to every counter, one row per slot
        rows = torch.zeros(self.num_slots, len(COUNTERS), dtype=torch.float64, device=self.device)
        rows[:, C_EPISODES] = w
        rows[:, C_AT_FAULT] = flags[:, 0]
        rows[:, C_COLLISION] = flags[:, 1]
        rows[:, C_OFFROAD] = flags[:, 2]
        rows[:, C_RED_LIGHT] = flags[:, 3]
        rows[:, C_INFRACTION] = flags[:, 4]
        rows[:, C_GOALS] = self._goals * w
        rows[:, C_DISTANCE] = self._distance * w
        rows[:, C_PARTNER : C_PARTNER + len(PARTNERS)] = self._partner.to(torch.float64) * w[:, None]
        self.counters[: len(COUNTERS)] += rows.sum(0)
        if self._scenario_sums is not None:
            # running[j] = the sum of the first j sorted rows
            running = torch.cat([rows.new_zeros(1, len(COUNTERS)), torch.cumsum(rows[self._scenario_order], 0)])
            self._scenario_sums += running[self._scenario_end] - running[self._scenario_start]
        keep = ~closing
        self.open &= keep
        self._flags &= keep[:, None]
        self._partner &= keep[:, None]
        self._goals *= keep
        self._distance *= keep

    def scenario_sums(self) -> torch.Tensor:
        """(K, len(`COUNTERS`)) float64 copy of the sums of each scenario's closed episodes since
        the last `close_scenarios` (what a paired comparison of two evaluations needs)."""
        if self._scenario_sums is None:
            raise ValueError("EpisodeMetrics: no per-scenario sums without scenario ids")
        return self._scenario_sums.clone()

    def close_scenarios(self) -> None:
        """The scenarios have ended (every episode closed by `finish`): add their `MOMENTS`
        (scenarios with at least one episode) to ``counters`` and start the next scenarios' sums
        from zero, so slots may play new scenarios under the same ids. A no-op without
        ``scenario`` ids."""
        if self._scenario_sums is None:
            return
        self.counters[len(COUNTERS) :] += scenario_moments(self._scenario_sums)
        self._scenario_sums.zero_()

    def _check(self, t: torch.Tensor, name: str) -> torch.Tensor:
        if t.shape != (self.num_slots,):
            raise ValueError(f"EpisodeMetrics: {name} must have shape ({self.num_slots},), got {tuple(t.shape)}")
        return t


def scenario_moments(sums: torch.Tensor) -> torch.Tensor:
    """(K, len(COUNTERS)) per-scenario sums -> the `MOMENTS` vector of the scenarios that had
    an episode: their count, and the sums over them of each product ``a*b``."""
    sums = sums[sums[:, C_EPISODES] > 0]
    index = {name: i for i, name in enumerate(COUNTERS)}
    out = [torch.tensor(float(sums.shape[0]), dtype=torch.float64, device=sums.device)]
    for name in MOMENTS[1:]:
        a, b = name.split("*")
        out.append((sums[:, index[a]] * sums[:, index[b]]).sum())
    return torch.stack(out)


def mean_standard_error(values) -> float | None:
    """Standard error of the mean of independent ``values`` (sample standard deviation /
    sqrt(n)); None below two values. The probes' bins and takeover cases."""
    values = np.asarray(values, np.float64)
    return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else None


def ratio_standard_error(a: float, b: float, aa: float, ab: float, bb: float, k: float) -> float:
    """Standard error of the ratio R = a / b of two sums over k independent scenarios, from the
    sums over scenarios of a_i^2, a_i b_i and b_i^2 (the delta method):
    SE^2 = sum_i (a_i - R b_i)^2 / (k (k - 1) (b / k)^2). NaN below two scenarios or b = 0."""
    if k < 2 or b <= 0:
        return math.nan
    r = a / b
    spread = max(aa - 2.0 * r * ab + r * r * bb, 0.0)  # rounding can leave it a hair below 0
    return math.sqrt(spread / (k * (k - 1.0))) / (b / k)


def all_reduce_counters(counters: torch.Tensor) -> torch.Tensor:
    """Sum ``counters`` over DDP ranks when torch.distributed is initialised (else a copy)."""
    out = counters.clone()
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.all_reduce(out, op=torch.distributed.ReduceOp.SUM)
    return out


def _scenario_pair(first, last) -> tuple[np.ndarray, np.ndarray] | None:
    """Two evaluations' per-scenario `COUNTERS` sums as float64 arrays, or None unless both are
    (K, len(`COUNTERS`)) with the same K."""
    first, last = np.asarray(first, np.float64), np.asarray(last, np.float64)
    if first.ndim != 2 or first.shape != last.shape or first.shape[1] != len(COUNTERS):
        return None
    return first, last


def same_scenarios(first, last) -> bool:
    """Whether two evaluations' per-scenario `COUNTERS` sums can be paired: as many scenarios,
    and in each the same number of vehicle episodes (in-domain, one per vehicle spawned, whatever
    the policy does), a check that the same seeds built the same scenarios."""
    pair = _scenario_pair(first, last)
    return pair is not None and bool(np.array_equal(pair[0][:, C_EPISODES], pair[1][:, C_EPISODES]))


def paired_ratio_change(first, last, metric: str) -> tuple[float, float]:
    """Change of ``metric`` (a `RATIOS` entry) from one evaluation to another of the SAME
    scenarios, and its standard error, from each evaluation's per-scenario `COUNTERS` sums
    (rows in the same scenario order, e.g. two `DensitySweep` records' ``scenario_counters``).

    Pairing lets what makes a scenario hard or easy for both policies cancel: the delta
    method on the per-scenario differences of the two ratios' influence terms,
    SE^2 = sum_i (v_i - u_i)^2 / (k (k - 1)), u_i = (a_i - R1 b_i) / (b / k) for the first
    evaluation's ratio R1 = a / b and v_i likewise for the last (k: the scenarios with an
    episode in either). NaN error below two scenarios; ``(nan, nan)`` when either evaluation has
    no denominator (no episode; for km per infraction, no infraction)."""
    pair = _scenario_pair(first, last)
    if pair is None:
        raise ValueError(
            f"per-scenario sums must be two (K, {len(COUNTERS)}) arrays of the same K, "
            f"got {np.shape(first)} and {np.shape(last)}"
        )
    first, last = pair
    num, den, scale = RATIOS[metric]
    i, j = COUNTERS.index(num), COUNTERS.index(den)
    # the scenarios with an episode in either evaluation, as `scenario_moments` counts them
    played = (first[:, C_EPISODES] > 0) | (last[:, C_EPISODES] > 0)
    first, last, k = first[played], last[played], int(played.sum())
    ratios, influence = [], []
    for sums in (first, last):
        total = sums[:, j].sum()
        if total <= 0:
            return math.nan, math.nan
        r = sums[:, i].sum() / total
        ratios.append(r)
        influence.append((sums[:, i] - r * sums[:, j]) / (total / k))
    se = math.sqrt(float(((influence[1] - influence[0]) ** 2).sum()) / (k * (k - 1.0))) if k > 1 else math.nan
    return scale * (ratios[1] - ratios[0]), scale * se


def all_gather_rows(rows: torch.Tensor) -> torch.Tensor:
    """``rows`` (n, C) of every DDP rank, concatenated in rank order (each rank must hold the
    same n, as `pictura.callbacks.DensitySweep`'s ranks do); a copy without torch.distributed."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return rows.clone()
    parts = [torch.empty_like(rows) for _ in range(torch.distributed.get_world_size())]
    torch.distributed.all_gather(parts, rows.contiguous())
    return torch.cat(parts)


def summarize(counters: torch.Tensor) -> dict[str, float]:
    """The five metrics (rates in [0, 1], goals per episode, km per infraction), the
    diagnostics (`PARTNERS` shares, ``collision``, ``at_fault_per_km``) and the raw counts,
    from an `ALL_COUNTERS` vector (or a bare `COUNTERS` one; one host sync). With `MOMENTS`
    from two scenarios on, also ``scenarios`` and the standard error ``<name>_se`` of each
    ratio of `RATIOS` (`ratio_standard_error`; none where the ratio has no denominator).

    ``km_per_infraction`` is ``inf`` when no episode had an infraction, ``nan`` when there was no
    episode at all (rates are ``nan`` then too); ``at_fault_per_km`` is ``nan`` without distance.
    """
    if counters.shape not in ((len(COUNTERS),), (len(ALL_COUNTERS),)):
        raise ValueError(
            f"counters must have shape ({len(ALL_COUNTERS)},) (or ({len(COUNTERS)},) without moments), "
            f"got {tuple(counters.shape)}"
        )
    values = counters.detach().cpu().tolist()
    c = dict(zip(ALL_COUNTERS, values + [0.0] * (len(ALL_COUNTERS) - len(values)), strict=True))
    n = c["episodes"]
    out: dict[str, float] = {}
    for name, (num, den, scale) in RATIOS.items():
        if c[den] > 0:
            out[name] = scale * c[num] / c[den]
        else:  # no episode, no distance; or episodes without an infraction: no km between them
            out[name] = math.inf if name == "km_per_infraction" and n > 0 else math.nan
        se = ratio_standard_error(
            c[num], c[den], c[f"{num}*{num}"], c[f"{num}*{den}"], c[f"{den}*{den}"], c["scenarios"]
        )
        if math.isfinite(se):  # two scenarios or more, and a denominator
            out[f"{name}_se"] = scale * se
    out["collision"] = c["collision"] / n if n > 0 else math.nan
    out["episodes"] = n
    out["infraction_episodes"] = c["infraction_episodes"]
    out["distance_km"] = c["distance_m"] / 1000.0
    if c["scenarios"] > 0:
        out["scenarios"] = c["scenarios"]
    return out
