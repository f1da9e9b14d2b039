"""`PartnerSearch` against the collision rules applied to each world alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pictura.eval.metrics import PartnerSearch, collision_at_fault, collision_partner
from pictura.sim.snapshot import BOX_INVALID, box_row


def _random_case(seed: int, sizes: list[int], parked: int, interleave: bool):
    """Boxes of worlds of ``sizes`` slots (slot numbering world by world, or interleaved) and
    ``parked`` parked rows per world; cars on a small lattice so that gaps tie and boxes touch."""
    rng = np.random.default_rng(seed)
    W, S = len(sizes), sum(sizes)
    slot_world = np.repeat(np.arange(W), sizes)
    if interleave:
        slot_world = rng.permutation(slot_world)

    def car():
        kind = BOX_INVALID if rng.random() < 0.15 else float(rng.integers(0, 3))
        return box_row(x=float(rng.integers(0, 6)) * 2.0, y=float(rng.integers(0, 3)) * 2.0,
                       z=float(rng.choice([0.0, 0.0, 5.0])), heading=float(rng.uniform(-np.pi, np.pi)),
                       length=float(rng.choice([4.0, 4.5])), width=2.0, height=1.5, kind=kind)

    boxes = torch.tensor([car() for _ in range(S + W * parked)], dtype=torch.float32)
    speed = torch.tensor(rng.choice([-1.0, 0.0, 0.1, 3.0], S), dtype=torch.float32)
    collision = torch.tensor(rng.random(S) < 0.7)
    halted = torch.tensor(rng.integers(0, 2, S), dtype=torch.int32)
    return slot_world, boxes, speed, collision, halted


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("parked", [0, 2])
@pytest.mark.parametrize("interleave", [False, True])
def test_partner_search_matches_each_world_alone(seed, parked, interleave):
    sizes = [3, 1, 5, 4]
    slot_world, boxes, speed, collision, halted = _random_case(seed, sizes, parked, interleave)
    W, S = len(sizes), len(slot_world)
    ego = np.sort(np.random.default_rng(seed + 100).choice(S, size=S - 3, replace=False))
    collision[np.setdiff1d(np.arange(S), ego)] = False  # the rollout's collisions are ego slots'
    search = PartnerSearch(torch.as_tensor(ego), torch.as_tensor(slot_world), W, parked)
    at_fault, partner = search.judge(collision, speed, boxes, halted)

    expect_fault = np.zeros(S, bool)
    expect_partner = np.full(S, -1)
    for w in range(W):  # the reference: world w alone, its slots in order, then its parked cars
        slots = np.flatnonzero(slot_world == w)
        rows = np.concatenate([slots, S + w * parked + np.arange(parked)])
        b = boxes[torch.as_tensor(rows)]
        f = collision_at_fault(collision[slots], speed[slots], b, len(slots), parked)
        p = collision_partner(f, b, halted[slots], len(slots), parked)
        expect_fault[slots] = f.numpy()
        expect_partner[slots] = p.numpy()
    assert at_fault.tolist() == expect_fault.tolist()
    assert partner.tolist() == expect_partner.tolist()


def test_partner_search_cases_are_not_vacuous():
    """The random cases hold at-fault collisions of every partner code and blameless ones."""
    codes, blameless = set(), 0
    for seed in range(6):
        slot_world, boxes, speed, collision, halted = _random_case(seed, [3, 1, 5, 4], 2, True)
        search = PartnerSearch(torch.arange(len(slot_world)), torch.as_tensor(slot_world), 4, 2)
        at_fault, partner = search.judge(collision, speed, boxes, halted)
        codes |= set(partner[at_fault].tolist())
        blameless += int((collision & ~at_fault).sum())
    assert codes == {0, 1, 2, 3} and blameless > 0
