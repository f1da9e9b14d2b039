"""`EpisodeMetrics` and `summarize` against a plain-Python bookkeeping of a random event stream:
every counter, every moment and every reported ratio and standard error, with episodes opened
and closed at random in slots that play random scenarios. Each event column is drawn
independently, so a counter fed from the wrong column, or an infraction built from the wrong
events, shows."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pictura.eval.metrics import ALL_COUNTERS, COUNTERS, MOMENTS, PARTNERS, RATIOS, EpisodeMetrics, summarize

S, T, K = 12, 80, 4


def _stream(seed: int):
    rng = np.random.default_rng(seed)
    events = {name: rng.random((T, S)) < p for name, p in
              (("at_fault", 0.06), ("collision", 0.08), ("offroad", 0.04), ("red_light", 0.05))}  # fmt: skip
    return dict(
        start=rng.random((T, S)) < 0.08,
        mask=rng.random((T, S)) < 0.9,
        goal=rng.integers(0, 3, (T, S)) * (rng.random((T, S)) < 0.1),
        distance=rng.uniform(0.0, 2.0, (T, S)),
        partner=rng.integers(0, len(PARTNERS), (T, S)),
        scenario=rng.integers(0, K, S),
        **events,
    )


def _reference(d: dict) -> tuple[dict, np.ndarray]:
    """Totals of `COUNTERS` and the (K, len(COUNTERS)) per-scenario sums, one episode at a time."""
    per_scenario = np.zeros((K, len(COUNTERS)))
    col = {name: i for i, name in enumerate(COUNTERS)}
    open_episode: list[dict | None] = [None] * S

    def close(s: int) -> None:
        ep = open_episode[s]
        if ep is None:
            return
        row = per_scenario[d["scenario"][s]]
        row[col["episodes"]] += 1
        for name in ("at_fault_collision", "collision", "offroad", "red_light"):
            row[col[name]] += ep[name]
        row[col["infraction_episodes"]] += ep["at_fault_collision"] or ep["offroad"] or ep["red_light"]
        row[col["goals"]] += ep["goals"]
        row[col["distance_m"]] += ep["distance_m"]
        for p in ep["partners"]:
            row[col[f"at_fault_{PARTNERS[p]}"]] += 1
        open_episode[s] = None

    for t in range(T):
        for s in range(S):
            if d["start"][t, s]:
                close(s)
                open_episode[s] = dict(at_fault_collision=False, collision=False, offroad=False, red_light=False,
                                       goals=0.0, distance_m=0.0, partners=set())  # fmt: skip
        for s in range(S):
            ep = open_episode[s]
            if ep is None or not d["mask"][t, s]:
                continue
            ep["at_fault_collision"] |= bool(d["at_fault"][t, s])
            ep["collision"] |= bool(d["collision"][t, s])
            ep["offroad"] |= bool(d["offroad"][t, s])
            ep["red_light"] |= bool(d["red_light"][t, s])
            if d["at_fault"][t, s]:
                ep["partners"].add(int(d["partner"][t, s]))
            ep["goals"] += float(d["goal"][t, s])
            ep["distance_m"] += float(d["distance"][t, s])
    for s in range(S):
        close(s)
    return dict(zip(COUNTERS, per_scenario.sum(0), strict=True)), per_scenario


def _run(d: dict) -> EpisodeMetrics:
    m = EpisodeMetrics(S, scenario=torch.as_tensor(d["scenario"]))
    for t in range(T):
        m.start(torch.as_tensor(d["start"][t]))
        m.update(
            torch.as_tensor(d["mask"][t]), torch.as_tensor(d["at_fault"][t]), torch.as_tensor(d["collision"][t]),
            torch.as_tensor(d["offroad"][t]), torch.as_tensor(d["red_light"][t]), torch.as_tensor(d["goal"][t]),
            torch.as_tensor(d["distance"][t]), torch.as_tensor(d["partner"][t]),
        )  # fmt: skip
    m.finish()
    m.close_scenarios()
    return m


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_counters_moments_and_ratios_of_a_random_stream(seed):
    d = _stream(seed)
    totals, per_scenario = _reference(d)
    counters = _run(d).counters
    got = dict(zip(ALL_COUNTERS, counters.tolist(), strict=True))
    for name in COUNTERS:
        assert got[name] == pytest.approx(totals[name]), name
    # the stream exercises every counter, and the infraction differs from any single event
    assert all(totals[name] > 0 for name in COUNTERS), totals
    assert (
        totals["infraction_episodes"] < totals["at_fault_collision"] + totals["offroad"] + totals["red_light"]
    )

    played = per_scenario[per_scenario[:, 0] > 0]
    k = len(played)
    assert got["scenarios"] == k >= 3
    col = {name: i for i, name in enumerate(COUNTERS)}
    for moment in MOMENTS[1:]:
        a, b = moment.split("*")
        assert got[moment] == pytest.approx(float(np.sum(played[:, col[a]] * played[:, col[b]]))), moment

    out = summarize(counters)
    for name, (num, den, scale) in RATIOS.items():
        a, b = played[:, col[num]], played[:, col[den]]
        r = a.sum() / b.sum()
        assert out[name] == pytest.approx(scale * r), name
        # the delta method over the k scenarios: SE^2 = sum (a_i - R b_i)^2 / (k (k - 1) mean(b)^2)
        se = math.sqrt(np.sum((a - r * b) ** 2) / (k * (k - 1))) / b.mean()
        assert out[f"{name}_se"] == pytest.approx(scale * se), name
    assert out["collision"] == pytest.approx(totals["collision"] / totals["episodes"])
    assert out["distance_km"] == pytest.approx(totals["distance_m"] / 1000.0)
    assert out["episodes"] == totals["episodes"]
    assert out["infraction_episodes"] == totals["infraction_episodes"]


def test_ratio_error_with_equal_episodes_is_the_standard_error_of_the_mean():
    """With the same number of episodes in every scenario the ratio's standard error is the
    textbook one of the per-scenario rates: sample standard deviation (n - 1) / sqrt(k)."""
    rates = np.array([0.0, 0.25, 0.5, 0.25, 1.0])
    per_scenario = np.zeros((len(rates), len(COUNTERS)))
    per_scenario[:, COUNTERS.index("episodes")] = 4
    per_scenario[:, COUNTERS.index("offroad")] = 4 * rates
    moments = [float(len(rates))]
    for moment in MOMENTS[1:]:
        a, b = moment.split("*")
        moments.append(float(np.sum(per_scenario[:, COUNTERS.index(a)] * per_scenario[:, COUNTERS.index(b)])))
    counters = torch.tensor(list(per_scenario.sum(0)) + moments, dtype=torch.float64)
    out = summarize(counters)
    assert out["offroad"] == pytest.approx(rates.mean())
    assert out["offroad_se"] == pytest.approx(rates.std(ddof=1) / np.sqrt(len(rates)))


@pytest.mark.parametrize("seed", [0, 1])
def test_partner_and_fault_of_random_worlds_match_a_loop(seed):
    """`collision_partner` and `collision_at_fault` on random worlds (agents and parked cars of
    random sizes, headings, heights and speeds, some rows empty) against App. C.1's rule written
    as a loop: the partner is the box of the same world, not the ego, |dz| < 4 m, with the
    smallest gap between circumscribed circles; the ego is blameless below 0.2 m/s or when that
    partner is an agent whose centre is behind the ego's rear bumper while the ego does not reverse."""
    from pictura.eval.metrics import collision_at_fault, collision_partner
    from pictura.sim.snapshot import BOX_INVALID, box_row

    rng = np.random.default_rng(seed)
    W, K, P = 60, 5, 3
    rows = []
    for _ in range(W * K + W * P):
        if rng.random() < 0.15:
            rows.append(box_row(x=0.0, y=0.0, z=0.0, heading=0.0, length=0.0, width=0.0, height=0.0, kind=BOX_INVALID))
        else:
            rows.append(box_row(
                x=rng.uniform(-15, 15), y=rng.uniform(-15, 15), z=rng.choice([0.0, 0.0, 0.0, 5.0]),
                heading=rng.uniform(-np.pi, np.pi), length=rng.uniform(0.5, 10.0), width=rng.uniform(0.3, 2.5),
                height=1.5, kind=0.0,
            ))  # fmt: skip
    S = W * K
    for m in [j for j in range(1, K)] + [S + j for j in range(P)]:
        rows[m][2] += 20.0  # world 0's other boxes on another level: slot 0 has no partner
    rows[0][7] = 0.0
    boxes = torch.tensor(rows, dtype=torch.float32)
    speed = torch.tensor(rng.choice([-3.0, -0.1, 0.0, 0.15, 0.25, 5.0], S), dtype=torch.float32)
    halted = torch.tensor(rng.random(S) < 0.3)
    collision = torch.ones(S, dtype=torch.bool)
    code = collision_partner(collision, boxes, halted, K, P).numpy()
    fault = collision_at_fault(collision, speed, boxes, K, P).numpy()

    b = boxes.double().numpy()
    for s in range(S):
        w, k = divmod(s, K)
        members = [w * K + j for j in range(K)] + [S + w * P + j for j in range(P)]
        best, partner = np.inf, None
        for m in members:
            if m == s or b[m, 7] < 0 or abs(b[m, 2] - b[s, 2]) >= 4.0:
                continue
            gap = np.hypot(b[m, 0] - b[s, 0], b[m, 1] - b[s, 1]) - 0.5 * np.hypot(b[s, 4], b[s, 5]) - 0.5 * np.hypot(
                b[m, 4], b[m, 5]
            )
            if gap < best:
                best, partner = gap, m
        want = 3 if partner is None else 2 if partner >= S else 0 if halted[partner] else 1
        assert code[s] == want, s
        v = float(speed[s])
        behind = False
        if partner is not None and partner < S:
            rel_x = np.cos(b[s, 3]) * (b[partner, 0] - b[s, 0]) + np.sin(b[s, 3]) * (b[partner, 1] - b[s, 1])
            behind = rel_x < -0.5 * b[s, 4] and v >= 0
        assert fault[s] == (not (abs(v) < 0.2 or behind)), s
    assert len(set(code.tolist())) == 4 and 0 < fault.mean() < 1
