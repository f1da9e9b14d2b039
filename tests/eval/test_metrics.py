"""The five driving metrics against a hand-built episode with known events (no simulator)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pictura.eval.metrics import (
    COUNTERS,
    EpisodeMetrics,
    all_reduce_counters,
    collision_at_fault,
    collision_partner,
    paired_ratio_change,
    same_scenarios,
    summarize,
)
from pictura.maps.roadmap import AGENT_PEDESTRIAN, AGENT_VEHICLE
from pictura.sim.snapshot import BOX_INVALID, BoxView, box_row


def box(x, y, heading=0.0, length=4.5, width=2.0, kind=AGENT_VEHICLE, z=0.0):
    return box_row(x=x, y=y, z=z, heading=heading, length=length, width=width, height=1.5, kind=float(kind))


EMPTY = box_row(x=0.0, y=0.0, z=0.0, heading=0.0, length=0.0, width=0.0, height=0.0, kind=BOX_INVALID)


# ---- at fault ------------------------------------------------------------------------------
def test_moving_ego_hitting_a_side_is_at_fault_and_the_stationary_victim_is_not():
    boxes = torch.tensor([box(0, 0), box(3.0, 1.5, math.pi / 2), EMPTY, EMPTY])
    collision = torch.tensor([True, True, False, False])
    speed = torch.tensor([5.0, 0.0, 0.0, 0.0])
    assert collision_at_fault(collision, speed, boxes, 4).tolist() == [True, False, False, False]


def test_struck_from_behind_is_not_at_fault_but_reversing_into_it_is():
    # slot 1 sits right behind slot 0's rear bumper (rear-end contact), both moving
    boxes = torch.tensor([box(0, 0), box(-4.3, 0.2), EMPTY, EMPTY])
    collision = torch.tensor([True, True, False, False])
    forward = collision_at_fault(collision, torch.tensor([3.0, 6.0, 0.0, 0.0]), boxes, 4)
    assert forward.tolist() == [False, True, False, False]  # the rear car is to blame
    reversing = collision_at_fault(collision, torch.tensor([-1.0, 6.0, 0.0, 0.0]), boxes, 4)
    assert reversing.tolist() == [True, True, False, False]


def test_slow_ego_below_threshold_is_not_at_fault():
    boxes = torch.tensor([box(0, 0), box(4.0, 0.0), EMPTY, EMPTY])
    collision = torch.tensor([True, False, False, False])
    assert not collision_at_fault(collision, torch.tensor([0.19, 0.0, 0.0, 0.0]), boxes, 4)[0]
    assert collision_at_fault(collision, torch.tensor([0.21, 0.0, 0.0, 0.0]), boxes, 4)[0]


def test_parked_car_behind_does_not_strike_and_other_worlds_are_ignored():
    # world 0: ego 0 touching a parked car behind it (parked cars never strike);
    # world 1: ego 2 whose nearest box in *another* world would be "behind" it.
    boxes = torch.tensor(
        [box(0, 0), EMPTY, box(100.0, 0), EMPTY, box(-4.3, 0.0), box(95.7, 50.0)]
    )  # 2 worlds x 2 slots, then 1 parked row per world
    collision = torch.tensor([True, False, True, False])
    speed = torch.tensor([2.0, 0.0, 2.0, 0.0])
    # ego 0's partner is the parked car (static): at fault; ego 2's only partner is its own
    # parked car 50 m away sideways (not behind): at fault; ego 0 of world 0 is not behind ego 2.
    assert collision_at_fault(collision, speed, boxes, 2, parked_per_world=1).tolist() == [True, False, True, False]


def test_collision_partner_names_what_was_hit():
    # world 0 (3 slots + 1 parked row): ego 0 next to slot 1, which halted earlier; slot 1's
    # nearest is ego 0 (not halted); slot 2 sits beside the world's parked car.
    # world 1: slot 3 alone (no other box: a wall, say); slot 4 collides with nothing.
    boxes = torch.tensor(
        [box(0, 0), box(4.0, 0.5), box(50.0, 0), box(0, 0), EMPTY, EMPTY, box(54.0, 0.0), box(0, 90.0)]
    )  # 2 worlds x 3 slots, then 1 parked row per world
    BoxView(boxes[7]).z = 10.0  # world 1's parked car is on an overpass: out of reach
    halted = torch.tensor([0, 1, 0, 0, 0, 0])
    collision = torch.tensor([True, True, True, True, False, False])
    got = collision_partner(collision, boxes, halted, 3, parked_per_world=1).tolist()
    assert got == [0, 1, 2, 3, -1, -1]  # halted agent, driving agent, parked car, nothing, no collision


def test_at_fault_rejects_a_box_array_of_the_wrong_size():
    with pytest.raises(ValueError, match="boxes must be"):
        collision_at_fault(torch.zeros(4, dtype=torch.bool), torch.zeros(4), torch.zeros(5, 8), 4)


# ---- the accumulator on a hand-built scenario --------------------------------------------------
S, T = 6, 4
KINDS = [AGENT_VEHICLE] * 5 + [AGENT_PEDESTRIAN]


def hand_built_episode():
    """Six slots over four steps (per-step metres in ``dist``):

    0  vehicle, 2 m/step, at-fault collision at step 1 (into slot 1's side)  -> 4 m, 1 infraction
       (what it hit: slot 1, not halted before the step, so "driving" in `PARTNERS`)
    1  vehicle, standing, struck at step 1 (not at fault)                    -> 0 m, no infraction
    2  vehicle, 5 m/step, goals at steps 0 and 2                             -> 20 m, 2 goals
    3  vehicle, 3 m/step, red light at step 3                                -> 12 m, 1 infraction
    4  vehicle, 1 m/step, off-road at step 0                                 -> 1 m, 1 infraction
    5  pedestrian with a collision: never counted
    """
    steps = []
    counted = torch.tensor([k == AGENT_VEHICLE for k in KINDS])
    boxes = torch.tensor([box(0, 0), box(3.0, 1.5, math.pi / 2), box(50, 0), box(80, 0), box(120, 0), box(150, 0)])
    speed = torch.tensor([20.0, 0.0, 50.0, 30.0, 10.0, 1.0])
    for t in range(T):
        collision = torch.zeros(S, dtype=torch.bool)
        offroad = torch.zeros(S, dtype=torch.bool)
        red = torch.zeros(S, dtype=torch.bool)
        goal = torch.zeros(S)
        if t == 1:
            collision[[0, 1]] = True
        collision[5] = True
        if t == 3:
            red[3] = True
        if t == 0:
            offroad[4] = True
        if t in (0, 2):
            goal[2] = 1.0
        dist = torch.tensor([2.0, 0.0, 5.0, 3.0, 1.0, 1.0]) * counted
        at_fault = collision_at_fault(collision, speed, boxes, S)
        partner = collision_partner(collision, boxes, torch.zeros(S, dtype=torch.int64), S)  # none halted
        steps.append((counted.clone(), at_fault, collision, offroad, red, goal, dist, partner))
        counted &= ~(collision | offroad | red)  # infractions halt the agent
    return torch.tensor([k == AGENT_VEHICLE for k in KINDS]), steps


def run(slots: slice | None = None, scenario: torch.Tensor | None = None) -> EpisodeMetrics:
    """The hand-built episode on ``slots``; ``scenario`` (S,): each slot's scenario id."""
    start, steps = hand_built_episode()
    sl = slots or slice(0, S)
    n = len(range(S)[sl])
    m = EpisodeMetrics(n, scenario=None if scenario is None else scenario[sl])
    m.start(start[sl])
    for step in steps:
        m.update(*(x[sl] for x in step))
    m.finish()
    m.close_scenarios()
    return m


def test_metrics_of_the_hand_built_episode():
    out = summarize(run().counters)
    assert out["episodes"] == 5
    assert out["at_fault_collision"] == pytest.approx(1 / 5)
    assert out["collision"] == pytest.approx(2 / 5)
    assert out["offroad"] == pytest.approx(1 / 5)
    assert out["red_light"] == pytest.approx(1 / 5)
    assert out["goals"] == pytest.approx(2 / 5)
    assert out["distance_km"] == pytest.approx(0.037)
    assert out["infraction_episodes"] == 3
    assert out["km_per_infraction"] == pytest.approx(0.037 / 3)
    assert out["at_fault_per_km"] == pytest.approx(1 / 0.037)


def test_split_batch_summed_equals_single_process():
    # two "ranks" each hold half the slots; DDP sums the raw counters
    whole = run().counters
    halves = run(slice(0, 3)).counters + run(slice(3, 6)).counters
    assert torch.equal(whole, halves)
    assert summarize(halves) == summarize(whole)


PAIRS = torch.tensor([0, 0, 1, 1, 2, 2])  # slots 2s, 2s + 1 play scenario s


def test_standard_errors_from_the_spread_over_scenarios():
    """Each metric's standard error against a NumPy delta-method estimate from the scenarios'
    own counts, read off the hand-built episode (five vehicle episodes, slot 5 a pedestrian)."""
    out = summarize(run(scenario=PAIRS).counters)
    assert out["scenarios"] == 3
    # per scenario (slots 0-1, 2-3, 4-5; `hand_built_episode`): vehicle episodes and the counts
    n = np.array([2.0, 2.0, 1.0])
    counts = {
        "at_fault_collision": np.array([1.0, 0.0, 0.0]),
        "offroad": np.array([0.0, 0.0, 1.0]),
        "red_light": np.array([0.0, 1.0, 0.0]),
        "goals": np.array([0.0, 2.0, 0.0]),
        # what the at-fault collision hit: slot 1, standing but not halted before the step
        "at_fault_driving": np.array([1.0, 0.0, 0.0]),
        "at_fault_halted": np.zeros(3),
        "at_fault_parked": np.zeros(3),
        "at_fault_other": np.zeros(3),
    }
    for name, a in counts.items():
        r = a.sum() / n.sum()
        se = np.sqrt(np.sum((a - r * n) ** 2) / (3 * 2)) / n.mean()
        assert out[name] == pytest.approx(r) and out[f"{name}_se"] == pytest.approx(se), name
    km, inf = np.array([0.004, 0.020 + 0.012, 0.001]), np.array([1.0, 1.0, 1.0])  # km, infraction episodes
    r = km.sum() / inf.sum()
    assert out["km_per_infraction_se"] == pytest.approx(np.sqrt(np.sum((km - r * inf) ** 2) / 6) / inf.mean())
    at_fault = counts["at_fault_collision"]
    r = at_fault.sum() / km.sum()  # at-fault collision episodes per km
    assert out["at_fault_per_km"] == pytest.approx(r)
    assert out["at_fault_per_km_se"] == pytest.approx(np.sqrt(np.sum((at_fault - r * km) ** 2) / 6) / km.mean())
    # no scenario ids, or a single scenario: no standard errors
    assert not any(key.endswith("_se") for key in summarize(run().counters))
    assert not any(key.endswith("_se") for key in summarize(run(scenario=torch.zeros(S, dtype=torch.int64)).counters))


def test_scenario_moments_add_up_across_ranks():
    """Ranks that play different scenarios sum their counters, moments included, to what one
    process playing them all holds (DensitySweep gives each rank its own scenarios)."""
    whole = run(scenario=PAIRS).counters
    split = run(slice(0, 4), PAIRS).counters + run(slice(4, 6), PAIRS).counters
    assert torch.allclose(whole, split)
    assert summarize(split) == pytest.approx(summarize(whole))


def test_all_reduce_counters_sums_what_the_other_rank_holds(monkeypatch):
    # a stand-in two-rank collective (a real process group leaves gloo threads behind that slow
    # the rest of the session): this "rank" holds slots 0-2, the other one slots 3-5
    other = run(slice(3, 6)).counters
    calls = []

    def all_reduce(tensor, op):
        calls.append(op)
        tensor += other

    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "all_reduce", all_reduce)
    mine = run(slice(0, 3)).counters
    reduced = all_reduce_counters(mine)
    assert calls == [torch.distributed.ReduceOp.SUM]
    assert torch.equal(reduced, run().counters)
    assert torch.equal(mine, run(slice(0, 3)).counters)  # the local counters are left alone


def test_episode_restart_closes_the_previous_one_and_no_infraction_gives_inf():
    m = EpisodeMetrics(1)
    one = torch.ones(1, dtype=torch.bool)
    no = torch.zeros(1, dtype=torch.bool)
    m.start(one)
    m.update(one, no, no, no, no, torch.tensor([1.0]), torch.tensor([500.0]))
    m.start(one)  # a respawn: the first episode is closed
    m.update(one, no, no, no, no, torch.tensor([0.0]), torch.tensor([1500.0]))
    m.finish()
    out = summarize(m.counters)
    assert out["episodes"] == 2 and out["goals"] == 0.5 and out["distance_km"] == pytest.approx(2.0)
    assert math.isinf(out["km_per_infraction"])
    assert math.isnan(summarize(torch.zeros(len(COUNTERS), dtype=torch.float64))["offroad"])


def test_wrong_shape_names_the_field():
    m = EpisodeMetrics(3)
    with pytest.raises(ValueError, match="offroad"):
        z = torch.zeros(3, dtype=torch.bool)
        m.update(z, z, z, torch.zeros(2, dtype=torch.bool), z, torch.zeros(3), torch.zeros(3))


def _scenario_sums(rng, k, episodes_scale=20.0):
    """(k, len(COUNTERS)) per-scenario sums with plausible counts (rates below 1)."""
    sums = np.zeros((k, len(COUNTERS)))
    episodes = rng.integers(5, int(episodes_scale) + 5, k).astype(float)
    sums[:, COUNTERS.index("episodes")] = episodes
    sums[:, COUNTERS.index("at_fault_collision")] = rng.binomial(episodes.astype(int), 0.2)
    sums[:, COUNTERS.index("offroad")] = rng.binomial(episodes.astype(int), 0.5)
    sums[:, COUNTERS.index("distance_m")] = episodes * rng.uniform(10.0, 40.0, k)
    return sums


def test_paired_change_is_the_delta_method_on_the_scenario_pairs():
    # Reference: the delta method in matrix form, g(means) = c/d - a/b over the k scenarios'
    # (a, b, c, d) = (first num, first den, last num, last den), Var = grad' Cov grad / k
    # (sample covariance): a different route to the same number.
    rng = np.random.default_rng(0)
    k = 24
    first, last = _scenario_sums(rng, k), _scenario_sums(rng, k)
    last[:, COUNTERS.index("episodes")] = first[:, COUNTERS.index("episodes")] + rng.integers(-2, 3, k)
    for metric, num, den, scale in (("at_fault_collision", "at_fault_collision", "episodes", 1.0),
                                     ("offroad", "offroad", "episodes", 1.0),
                                     ("at_fault_per_km", "at_fault_collision", "distance_m", 1e3)):
        x = np.stack([first[:, COUNTERS.index(num)], first[:, COUNTERS.index(den)],
                      last[:, COUNTERS.index(num)], last[:, COUNTERS.index(den)]], axis=1)
        a, b, c, d = x.mean(0)
        grad = np.array([-1 / b, a / b**2, 1 / d, -c / d**2])
        se = math.sqrt(grad @ np.cov(x.T, ddof=1) @ grad / k)
        change, got_se = paired_ratio_change(first, last, metric)
        assert change == pytest.approx(scale * (c / d - a / b), rel=1e-12), metric
        assert got_se == pytest.approx(scale * se, rel=1e-9), metric
    # the same evaluation twice: no change, no error
    assert paired_ratio_change(first, first, "offroad") == (0.0, 0.0)
    # scenarios without an episode in either evaluation do not count (as in the moments)
    padded = np.concatenate([first, np.zeros((3, len(COUNTERS)))]), np.concatenate([last, np.zeros((3, len(COUNTERS)))])
    assert paired_ratio_change(*padded, "offroad") == pytest.approx(paired_ratio_change(first, last, "offroad"))


def test_paired_change_pairs_what_a_scenario_shares():
    # Scenario difficulty common to both evaluations cancels: the paired error is well under the
    # two evaluations' own errors combined as independent.
    rng = np.random.default_rng(1)
    k = 32
    first = _scenario_sums(rng, k)
    hard = rng.uniform(0.0, 0.9, k)  # per-scenario off-road share, the same for both policies
    n = first[:, COUNTERS.index("episodes")]
    first[:, COUNTERS.index("offroad")] = np.round(n * hard)
    last = first.copy()
    last[:, COUNTERS.index("offroad")] = np.round(n * np.clip(hard - 0.1 + rng.normal(0, 0.03, k), 0, 1))
    change, se = paired_ratio_change(first, last, "offroad")
    independent = math.hypot(*(summarize(torch.tensor(_with_moments(x))).get("offroad_se") for x in (first, last)))
    assert change < 0 and se < 0.3 * independent


def _with_moments(sums):
    from pictura.eval.metrics import scenario_moments

    t = torch.tensor(sums)
    return torch.cat([t.sum(0), scenario_moments(t)]).numpy()


def test_same_scenarios_means_as_many_vehicles_in_each():
    rng = np.random.default_rng(4)
    first = _scenario_sums(rng, 5)
    last = _scenario_sums(rng, 5)
    last[:, COUNTERS.index("episodes")] = first[:, COUNTERS.index("episodes")]
    assert same_scenarios(first, last)
    last[2, COUNTERS.index("episodes")] += 1
    assert not same_scenarios(first, last)
    assert not same_scenarios(first, first[:4]) and not same_scenarios(first[:, :3], first[:, :3])


def test_paired_change_errors():
    rng = np.random.default_rng(2)
    first = _scenario_sums(rng, 4)
    with pytest.raises(ValueError, match="same K"):
        paired_ratio_change(first, first[:3], "offroad")
    empty = np.zeros_like(first)
    assert all(math.isnan(v) for v in paired_ratio_change(empty, first, "offroad"))
    change, se = paired_ratio_change(first[:1], first[:1] * 2, "goals")
    assert math.isnan(se)


def test_all_gather_rows_concatenates_the_ranks_in_order(monkeypatch):
    from pictura.eval.metrics import all_gather_rows

    mine = torch.tensor([[1.0, 2.0], [3.0, 4.0]])  # rank 0's scenarios
    other = torch.tensor([[5.0, 6.0], [7.0, 8.0]])  # rank 1's

    def all_gather(parts, tensor):
        parts[0].copy_(tensor)
        parts[1].copy_(other)

    assert torch.equal(all_gather_rows(mine), mine)  # no process group: a copy
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda: 2)
    monkeypatch.setattr(torch.distributed, "all_gather", all_gather)
    assert torch.equal(all_gather_rows(mine), torch.cat([mine, other]))
