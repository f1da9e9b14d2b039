"""World check: a long random-action run of the full world with every rule on, and the
invariants the test suite checks on a shorter run (one JSON line; not a CI test).

    python benchmarks/world_check.py --device cpu                 # 10,000 steps x 64 worlds
    python benchmarks/world_check.py --device cpu --steps 500 --worlds 8
    python benchmarks/world_check.py --device cpu --block-slots 1024 --worlds-per-block 32  # packed

Worlds play procedural towns ``procedural:seed=0..7`` (``--blocks`` blocks a side) at the default
`SimConfig` (agents ~U{1, 120}, 10 % pedestrians, 10 % cyclists, 32 parked cars, walls, lights)
with ``--episode-length`` steps per episode so many resets happen. Actions are random, mostly
gentle (coasting) so agents drive far enough to meet lights and goals. Checked:
no NaN or inf in any state array (every ``--check-every`` steps); right after every world reset
no agent or parked car overlaps another (NumPy SAT); all three agent types spawn; every light
state occurs and lights go green -> yellow -> red; every event kind occurs, pedestrians never go
off-road or run a red light. ``--block-slots N`` packs the worlds (`WorldLayout.packed`:
``--worlds`` x 120 slots cut into blocks of N slots holding ``--worlds-per-block`` world records
each; the overlap check then runs per record over its slot range of the episode). Prints counts and ``"ok": true|false``; exits 1 if a check failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import warp as wp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pictura.maps import load_road_map  # noqa: E402
from pictura.maps.roadmap import LIGHT_GREEN, LIGHT_RED, LIGHT_YELLOW  # noqa: E402
from pictura.sim import EVENTS, SimConfig, build_model, reset, step  # noqa: E402
from pictura.sim.snapshot import BoxView, WorldLayout  # noqa: E402


def overlaps(boxes: np.ndarray, z: np.ndarray, ok: np.ndarray) -> int:
    """Overlapping pairs among rows (x, y, heading, length, width) of each world (W, n, 5)."""
    n = boxes.shape[1]
    i, j = np.triu_indices(n, 1)
    x = np.where(ok, boxes[..., 0], np.nan)
    y = boxes[..., 1]
    r = 0.5 * np.hypot(boxes[..., 3], boxes[..., 4])
    dx, dy, rr = x[:, i] - x[:, j], y[:, i] - y[:, j], r[:, i] + r[:, j]
    w, k = np.nonzero(dx * dx + dy * dy < rr * rr)
    keep = np.abs(z[w, i[k]] - z[w, j[k]]) < 4.0
    a, b = boxes[w[keep], i[k][keep]].astype(np.float64), boxes[w[keep], j[k][keep]].astype(np.float64)
    hit = np.ones(len(a), bool)
    ua = np.stack([np.cos(a[:, 2]), np.sin(a[:, 2])], 1)
    ub = np.stack([np.cos(b[:, 2]), np.sin(b[:, 2])], 1)
    va, vb = np.stack([-ua[:, 1], ua[:, 0]], 1), np.stack([-ub[:, 1], ub[:, 0]], 1)
    d = b[:, :2] - a[:, :2]
    for axis in (ua, va, ub, vb):
        ra = 0.5 * a[:, 3] * np.abs((ua * axis).sum(1)) + 0.5 * a[:, 4] * np.abs((va * axis).sum(1))
        rb = 0.5 * b[:, 3] * np.abs((ub * axis).sum(1)) + 0.5 * b[:, 4] * np.abs((vb * axis).sum(1))
        hit &= np.abs((d * axis).sum(1)) < ra + rb - 1e-4
    return int(hit.sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", choices=["cuda", "cpu"])
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--worlds", type=int, default=64)
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--episode-length", type=int, default=400)
    ap.add_argument("--check-every", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--block-slots", type=int, default=0, help="pack the slots in blocks of N (0: static worlds)")
    ap.add_argument("--worlds-per-block", type=int, default=32)
    ap.add_argument("--early-reset-halted-fraction", type=float, default=SimConfig.early_reset_halted_fraction)
    args = ap.parse_args()

    wp.config.log_level = wp.LOG_WARNING  # no start-up banner or module-load lines (INFO)
    wp.init()
    sources = [f"procedural:seed={s},blocks_x={args.blocks},blocks_y={args.blocks}" for s in range(8)]
    maps = [load_road_map(s) for s in sources]
    cfg = SimConfig(
        episode_length=args.episode_length, early_reset_halted_fraction=args.early_reset_halted_fraction
    )
    W, n, P = args.worlds, cfg.agents_per_world[1], cfg.parked_per_world
    lights = [len(m.light_position) for m in maps]
    if args.block_slots:
        blocks = -(-W * n // args.block_slots)  # as many slots as the static layout, rounded up
        W = blocks * args.worlds_per_block
        layout = WorldLayout.packed([w % 8 for w in range(W)], args.block_slots, args.worlds_per_block, lights, P)
    else:
        layout = WorldLayout.uniform([w % 8 for w in range(W)], n, lights, P)
    model = build_model(maps, layout, cfg, device=args.device)
    s0, s1, ctl = model.state(), model.state(), model.control()
    reset(model, s0, args.seed)
    S = model.num_slots
    rng = np.random.default_rng(args.seed)
    p = np.full(12, 0.02)
    p[[6, 7, 8]] = [0.1, 0.6, 0.1]
    p /= p.sum()
    events = np.zeros((3, len(EVENTS)), np.int64)
    types = np.zeros(3, np.int64)
    nan_steps, spawn_checks, spawn_overlaps, resets = [], 0, 0, 0
    active_sum = 0
    light_prev = s0.light_state.numpy()
    light_seen = set(np.unique(light_prev).tolist())
    g2y = y2r = 0
    t0 = time.perf_counter()
    for t in range(args.steps):
        ctl.action.assign(rng.choice(12, S, p=p).astype(np.int32))
        kind_before = s0.kind.numpy()
        active_sum += int(s0.active.numpy().sum())
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
        ev = s0.events.numpy()
        for k in range(3):
            events[k] += ev[kind_before == k].sum(0)
        lights = s0.light_state.numpy()
        light_seen |= set(np.unique(lights).tolist())
        g2y += int(((light_prev == LIGHT_GREEN) & (lights == LIGHT_YELLOW)).sum())
        y2r += int(((light_prev == LIGHT_YELLOW) & (lights == LIGHT_RED)).sum())
        light_prev = lights
        world_reset = s0.world_reset.numpy()
        if t % args.check_every == 0 or t == args.steps - 1:
            st = s0.numpy()
            if not all(np.all(np.isfinite(a)) for a in st.values()):
                nan_steps.append(t)
        ws = np.flatnonzero(world_reset)
        if len(ws):
            resets += len(ws)
            # each reset world's slot range of the new episode, padded to the widest (static
            # layouts: the fixed ranges; packed: the ranges its block drew)
            start = s0.world_slot_start.numpy()[ws]
            count = s0.world_slot_count.numpy()[ws]
            lane = np.arange(max(int(count.max()), 1))
            rows = np.minimum(start[:, None] + lane, S - 1)
            in_range = lane < count[:, None]
            pos = s0.pos.numpy()[rows]
            valid = (s0.valid.numpy()[rows] == 1) & in_range
            kind = s0.kind.numpy()[rows]
            types += np.bincount(kind[valid], minlength=3)
            agents = np.concatenate(
                [
                    pos[..., :2],
                    s0.heading.numpy()[rows][..., None],
                    s0.length.numpy()[rows][..., None],
                    s0.width.numpy()[rows][..., None],
                ],
                -1,
            )
            parked = s0.agent_box.numpy()[S:].reshape(W, P, 8)[ws]
            boxes = np.concatenate([agents, parked[..., [0, 1, 3, 4, 5]]], 1)
            z = np.concatenate([pos[..., 2], parked[..., 2]], 1)
            ok = np.concatenate([valid, BoxView(parked).valid], 1)
            spawn_overlaps += overlaps(boxes, z, ok)
            spawn_checks += len(ws)
    wall = time.perf_counter() - t0
    total = events.sum(0)
    checks = {
        "no_nan": not nan_steps,
        "no_spawn_overlap": spawn_overlaps == 0 and spawn_checks > 0,
        "all_types": bool(np.all(types > 0)),
        "all_light_states": {0, 1, 2, 3} <= light_seen,
        "lights_cycle": g2y > 0 and y2r > 0,
        "all_events": bool(np.all(total > 0)),
        "pedestrian_rules": int(events[1, 1]) == 0 and int(events[1, 2]) == 0,
    }
    out = {
        "name": "world_check",
        "device": args.device,
        "steps": args.steps,
        "worlds": W,
        "slots": S,
        "block_slots": args.block_slots,
        "worlds_per_block": args.worlds_per_block if args.block_slots else None,
        "early_reset_halted_fraction": cfg.early_reset_halted_fraction,
        "maps": sources,
        "world_resets": resets,
        "spawn_checks": spawn_checks,
        "spawn_overlaps": spawn_overlaps,
        "agents_spawned_by_type": dict(
            zip(("vehicle", "pedestrian", "cyclist"), types.tolist(), strict=True)
        ),
        "events_by_type": {
            kind: dict(zip(EVENTS, events[k].tolist(), strict=True))
            for k, kind in enumerate(("vehicle", "pedestrian", "cyclist"))
        },
        "light_transitions": {"green_to_yellow": g2y, "yellow_to_red": y2r},
        "nan_steps": nan_steps[:10],
        "utilisation": active_sum / (S * args.steps),
        "wall_s": round(wall, 1),
        "checks": checks,
        "ok": all(checks.values()),
    }
    print(json.dumps(out))
    sys.exit(0 if out["ok"] else 1)


if __name__ == "__main__":
    main()
