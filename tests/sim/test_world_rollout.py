"""A 2,000-step random-action run over 16 procedural worlds with every rule of the full world
(all three agent types, parked cars, walls, lights): no NaN, no overlap right after a spawn,
every type present, lights cycle, and every event kind occurs."""

from __future__ import annotations

import numpy as np

from pictura.maps import load
from pictura.maps.roadmap import LIGHT_GREEN, LIGHT_OFF, LIGHT_RED, LIGHT_YELLOW
from pictura.sim import EVENTS, SimConfig, build_model, reset, step
from pictura.sim.snapshot import BoxView, WorldLayout

from .test_world_spawn import _batched_overlaps


def test_full_world_random_rollout():
    towns = [load(f"procedural:seed={s},blocks_x=2,blocks_y=2") for s in range(4)]
    W, n, P = 16, 40, 32
    cfg = SimConfig(agents_per_world=(8, n), episode_length=200)
    lay = WorldLayout.uniform([w % 4 for w in range(W)], n, [len(m.light_position) for m in towns], P)
    model = build_model(towns, lay, cfg)
    s0, s1, ctl = model.state(), model.state(), model.control()
    reset(model, s0, 7)
    S = model.num_slots
    rng = np.random.default_rng(7)
    # mostly gentle actions, so agents drive far enough to meet lights and goals
    p = np.full(12, 0.02)
    p[[6, 7, 8]] = [0.1, 0.6, 0.1]
    p /= p.sum()
    events = np.zeros((3, len(EVENTS)), np.int64)  # per agent type
    kinds_seen = set()
    light_hist = []
    spawn_checks = 0
    for t in range(2000):
        ctl.action.assign(rng.choice(12, S, p=p).astype(np.int32))
        kind_before = s0.kind.numpy()
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        ev = s0.events.numpy()
        for k in range(3):
            events[k] += ev[kind_before == k].sum(0)
        light_hist.append(s0.light_state.numpy().copy())  # .numpy() on CPU is a view
        world_reset = s0.world_reset.numpy()
        if world_reset.any() or t % 100 == 0:
            st = s0.numpy()
            if t % 100 == 0:
                for name, arr in st.items():
                    assert np.all(np.isfinite(arr)), (t, name)
            valid = st["valid"] == 1
            kinds_seen |= set(st["kind"][valid].tolist())
            # right after a spawn: nobody inside anybody (agents and parked cars)
            ws = np.flatnonzero(world_reset)
            if len(ws):
                pos = st["pos"].reshape(W, n, 3)[ws]
                agents = np.concatenate(
                    [
                        pos[..., :2],
                        st["heading"].reshape(W, n, 1)[ws],
                        st["length"].reshape(W, n, 1)[ws],
                        st["width"].reshape(W, n, 1)[ws],
                    ],
                    -1,
                )
                parked = st["agent_box"][S:].reshape(W, P, 8)[ws]
                boxes = np.concatenate([agents, parked[..., [0, 1, 3, 4, 5]]], 1)
                z = np.concatenate([pos[..., 2], parked[..., 2]], 1)
                ok = np.concatenate([valid.reshape(W, n)[ws], BoxView(parked).valid], 1)
                assert len(_batched_overlaps(boxes, z, ok)) == 0, t
                spawn_checks += len(ws)
    assert spawn_checks > 50
    assert kinds_seen == {0, 1, 2}
    total = events.sum(0)
    for e, name in enumerate(EVENTS):
        assert total[e] > 0, name
    # pedestrians never go off-road or run red lights; vehicles do both
    assert events[1, EVENTS.index("offroad")] == 0 and events[1, EVENTS.index("red_light")] == 0
    assert events[1, EVENTS.index("goal")] > 0 and events[2, EVENTS.index("offroad")] > 0
    lights = np.stack(light_hist)
    assert {LIGHT_RED, LIGHT_YELLOW, LIGHT_GREEN, LIGHT_OFF} <= set(np.unique(lights).tolist())
    # lights cycle: some light goes green -> yellow -> red without a world reset in between
    g2y = (lights[:-1] == LIGHT_GREEN) & (lights[1:] == LIGHT_YELLOW)
    y2r = (lights[:-1] == LIGHT_YELLOW) & (lights[1:] == LIGHT_RED)
    assert g2y.sum() > 10 and y2r.sum() > 10
