"""``python -m pictura probe removal|pedestrian``: counterfactual grounding probes (paper Sec. 5.2).

    python -m pictura probe removal --ckpt runs/alberti.ckpt --map carla:Town03 --states 32 \\
        --json removal.json --png removal.png
    python -m pictura probe pedestrian --policy constant:7 --map procedural:seed=0 --json ped.json --png ped.png

See `pictura.eval.probes` for what is measured; docs/visual_tools.md for the pictures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def _parser() -> argparse.ArgumentParser:
    from pictura.tools.video import add_policy_arguments

    p = argparse.ArgumentParser(prog="python -m pictura probe", description="counterfactual grounding probes")
    sub = p.add_subparsers(dest="probe", required=True)
    for name, desc in (
        ("removal", "remove one road user at a time: dV, dP(brake) vs visible fraction"),
        ("pedestrian", "sweep a pedestrian behind a vehicle: dV, dP(brake) along the path"),
        ("takeover", "blind-corner takeovers: ego speed vs time from a hidden vehicle's reveal"),
    ):
        q = sub.add_parser(name, help=desc, description=desc)
        add_policy_arguments(q)
        if name != "takeover":
            q.add_argument("--states", type=int, default=8, help="recorded states (default 8)")
            q.add_argument("--warmup", type=int, default=10, help="steps before the first recorded state (default 10)")
            q.add_argument("--stride", type=int, default=5, help="steps between recorded states (default 5)")
        q.add_argument("--json", type=Path, required=True, metavar="OUT", help="write the results here")
        q.add_argument("--png", type=Path, metavar="OUT", help="plot to this PNG")
        if name == "takeover":
            q.add_argument("--against", metavar="PATH|random|constant:A",
                           help="a second policy for the paired comparison (same observation layout)")
            q.add_argument("--record-steps", type=int, default=150, help="steps recorded (default 150)")
            q.add_argument("--horizon", type=int, default=40, help="takeover steps (default 40 = 4 s)")
            q.add_argument("--cases", type=int, default=4, help="hidden and control cases, each (default 4)")
        elif name == "removal":
            q.add_argument("--radius", type=float, default=40.0, help="remove users within this many m (default 40)")
            q.add_argument("--egos", type=int, default=4, help="egos probed per state (default 4)")
        else:
            q.add_argument("--positions", type=int, default=17, help="pedestrian positions (default 17)")
            q.add_argument("--half-span", type=float, default=8.0, help="half length of the path in m (default 8)")
    return p


def _plot_removal(records: list[dict], bins: list[dict], path: Path, title: str) -> None:
    import matplotlib

    from pictura.eval.report import Z95

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    vis = np.array([r["visible"] for r in records])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, key, label in ((axes[0], "dV", "ΔV"), (axes[1], "dP_brake", "ΔP(brake)")):
        ax.scatter(vis, [r[key] for r in records], s=8, alpha=0.5, label="removed user")
        mids = [0.5 * (b["visible_lo"] + b["visible_hi"]) for b in bins if b["count"]]
        means = [b[f"{key}_mean"] for b in bins if b["count"]]
        halves = [Z95 * (b[f"{key}_se"] or 0.0) for b in bins if b["count"]]
        ax.errorbar(mids, means, yerr=halves, fmt="o-", color="black", capsize=3, label="bin mean +- 1.96 SE")
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_xlabel("visible fraction of the removed user")
        ax.set_ylabel(f"{label} (with - without the user)")
    axes[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_pedestrian(sweep: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.plot(sweep["offset"], sweep["dV"], "o-", label="ΔV")
    ax.plot(sweep["offset"], sweep["dP_brake"], "s-", label="ΔP(brake)")
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel("pedestrian offset along the path behind the vehicle (m)")
    ax.set_ylabel("with - without pedestrian")
    ax.legend(fontsize=7, loc="upper left")
    vis = ax.twinx()  # visibility on its own 0..1 axis: the deltas may be tiny
    vis.fill_between(sweep["offset"], 0, sweep["visible"], color="orange", alpha=0.2)
    vis.set_ylim(0, 1.05)
    vis.set_ylabel("visible fraction (shaded)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _takeover(args, env, policy) -> dict:
    from pictura.eval import takeover
    from pictura.eval.probes import ProbedPolicy

    policies = [(policy, env)]
    if args.against:
        if args.against == "random" or args.against.startswith("constant:"):
            other, other_env = ProbedPolicy.baseline(args.against, seed=args.seed), env
        else:
            from pictura.eval.policies import load_checkpoint
            from pictura.tools.video import env_arguments

            ckpt = load_checkpoint(args.against)
            try:
                other, other_env = ProbedPolicy.from_checkpoint(ckpt, env), env
            except ValueError:
                # another observation layout (e.g. Alberti vs Vectorized-blind): its own env over
                # the same world, rewound to the same recorded simulator states
                other_env = ckpt.build_env(**env_arguments(args, extra_slots=1))
                other_env.validate_actions = False
                other = ProbedPolicy.from_checkpoint(ckpt, other_env)
        if other.name == policy.name:
            other.name += "_b"
        policies.append((other, other_env))
    rec = takeover.record(env, policy, args.record_steps)
    cases = takeover.find_cases(env, rec, horizon=args.horizon, max_cases=args.cases)
    for case in cases:
        for p, p_env in policies:
            takeover.take_over(p_env, rec, case, p, p.name, args.horizon)
    policies = [p for p, _ in policies]
    names = [p.name for p in policies]
    return {
        "probe": "takeover", "map": args.map, "policies": names,
        "summary": takeover.summarize(cases, names),
        "cases": [{"ego": c.ego, "start": c.start, "reveal": c.reveal, "hidden": c.hidden, "vehicle": c.vehicle,
                   "visible": c.visible, "speeds": c.speeds} for c in cases],
    }


def _plot_takeover(result: dict, path: Path, title: str) -> None:
    import matplotlib

    from pictura.eval.report import Z95, shade_interval

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, group in zip(axes, ("hidden", "control"), strict=True):
        g = result["summary"][group]
        for name, curve in g["curves"].items():
            (line,) = ax.plot(curve["time_from_reveal_s"], curve["speed_mean"], label=name)
            if "speed_se" in curve:  # +- 1.96 SE over the cases (0 where fewer than two)
                half = [Z95 * (se or 0.0) for se in curve["speed_se"]]
                shade_interval(ax, curve["time_from_reveal_s"], curve["speed_mean"], half, line.get_color())
        ax.axvline(0, color="grey", lw=0.5)
        ax.set_title(f"{group} ({g['cases']} cases)", fontsize=9)
        ax.set_xlabel("time from reveal (s)")
    axes[0].set_ylabel("ego speed (m/s)")
    axes[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str]) -> None:
    from pictura.eval import probes
    from pictura.tools.video import build_env_and_policy

    args = _parser().parse_args(argv)
    try:
        if getattr(args, "states", 1) < 1:
            raise ValueError(f"--states must be >= 1, got {args.states}")
        env, policy = build_env_and_policy(args, extra_slots=1)
        title = f"{policy.name} on {args.map}"
        if args.probe == "takeover":
            result = _takeover(args, env, policy)
            if args.png:
                _plot_takeover(result, args.png, title)
        elif args.probe == "removal":
            states = probes.record_states(env, policy, args.states, args.warmup, args.stride)
            records = probes.removal_probe(env, policy, states, args.radius, args.egos)
            bins = probes.aggregate_by_visibility(records)
            result = {"probe": "removal", "policy": policy.name, "map": args.map, "bins": bins, "records": records}
            if args.png:
                _plot_removal(records, bins, args.png, title)
        else:
            states = probes.record_states(env, policy, args.states, args.warmup, args.stride)
            sweep = probes.pedestrian_probe(env, policy, states, args.positions, args.half_span)
            if sweep is None:
                raise ValueError("no recorded state has a vehicle ahead of an ego with a free slot; raise --states")
            result = {"probe": "pedestrian", "policy": policy.name, "map": args.map, **sweep}
            if args.png:
                _plot_pedestrian(sweep, args.png, title)
    except (ValueError, FileNotFoundError) as err:
        raise SystemExit(f"probe: {err}") from None
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1))
    if args.probe == "removal":
        print(f"{len(result['records'])} removals over {args.states} states")
    elif args.probe == "takeover":
        print("takeovers: " + ", ".join(f"{g} {v['cases']}" for g, v in result["summary"].items()))
    print(f"wrote {args.json}" + (f" and {args.png}" if args.png else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
