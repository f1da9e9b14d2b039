"""``python -m pictura video``: a GIF (or MP4) of one agent driving, its camera views beside a
top-down overview.

    python -m pictura video --policy random --map procedural:seed=0 --out run.gif --steps 100
    python -m pictura video --ckpt runs/alberti.ckpt --map carla:Town03 --out run.mp4 --agent 2

Each frame: the chosen agent's cameras (nearest-neighbour upscaled ``--scale`` x, labelled) on
the left, `pictura.eval.overview.draw_overview` on the right (agents by type, the ego in magenta
with its frusta, goal waypoints, light states, infractions). The env is one world on ``--map``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from pictura.tools import parse_resolution

FPS = 10
"""The simulator runs at 10 steps/s; videos play in real time."""


def add_policy_arguments(p: argparse.ArgumentParser) -> None:
    """``--ckpt | --policy``, ``--map``, ``--device``, ``--seed``, ``--resolution``, env size."""
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--ckpt", metavar="PATH", help="a pictura PPO checkpoint (argmax actions)")
    who.add_argument("--policy", metavar="random|constant:A", help="a baseline policy")
    p.add_argument("--map", default="procedural:seed=0", metavar="SOURCE", help="map source (default procedural:seed=0)")
    p.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1 (default cpu)")
    p.add_argument("--seed", type=int, default=0, help="env seed (default 0)")
    p.add_argument(
        "--resolution", metavar="WxH", help="camera resolution for --policy baselines (default 96x54); checkpoints keep their own"
    )
    p.add_argument("--agents", type=int, default=12, help="agents in the world (default 12)")


def env_arguments(args, extra_slots: int = 0) -> dict:
    """The env keyword arguments of the parsed options: one fixed world (``block_slots=0``,
    whatever blocks the checkpoint's training env packed) on ``--map`` with ``--agents`` agents
    and ``extra_slots`` free slots."""
    if args.agents < 1:
        raise ValueError(f"--agents must be >= 1, got {args.agents}")
    return dict(
        device=args.device, seed=args.seed, maps=[args.map], num_worlds=1,
        slots_per_world=args.agents + extra_slots, agents_per_world=(args.agents, args.agents), block_slots=0,
    )


def build_env_and_policy(args, extra_slots: int = 0):
    """(env, `pictura.eval.probes.ProbedPolicy`) for the parsed arguments: one world on ``--map``
    with ``--agents`` agents and ``extra_slots`` free slots (probes insert road users there)."""
    from pictura.eval.probes import ProbedPolicy

    kwargs = env_arguments(args, extra_slots)
    if args.ckpt:
        from pictura.eval.policies import load_checkpoint

        ckpt = load_checkpoint(args.ckpt)
        env = ckpt.build_env(**kwargs)
        policy = ProbedPolicy.from_checkpoint(ckpt, env)
    else:
        from pictura.envs import DrivingEnv
        from pictura.render import CameraRig

        w, h = parse_resolution(args.resolution)
        env = DrivingEnv(rig=CameraRig(width=w, height=h), **kwargs)
        policy = ProbedPolicy.baseline(args.policy, seed=args.seed)
    env.validate_actions = False
    return env, policy


def compose_frame(views: np.ndarray, names: list[str], overview: np.ndarray, scale: int) -> np.ndarray:
    """Camera mosaic (`tile_views`, 2 columns) left of the overview; (H, W, 3) uint8."""
    from pictura.callbacks.video import tile_views
    from pictura.eval.overview import side_by_side

    return side_by_side([tile_views(views, names, scale=scale, columns=2), overview])


def record_frames(env, policy, agent: int, steps: int, scale: int, overview_size: int, radius: float, progress: bool):
    """Reset, then ``steps`` times: draw the current state of slot ``agent``, act, step.

    Returns a list of ``steps`` (H, W, 3) uint8 frames (all the same size)."""
    import torch
    import warp as wp

    from pictura.callbacks.video import camera_names
    from pictura.envs.driving import stack_snapshots
    from pictura.eval.overview import overview_for_slot
    from pictura.sim import EVENTS

    if not 0 <= agent < env.num_slots:
        raise ValueError(f"--agent {agent} outside 0..{env.num_slots - 1}")
    episode = env.sim_config.episode_length
    if steps > episode:
        raise ValueError(
            f"--steps {steps} is longer than the episode ({episode} steps): the world would reset mid-video"
        )
    td = env.reset()
    if not bool(td["valid"][agent]):
        raise ValueError(f"--agent {agent} is not an active agent of the world (raise --agents or pick another)")
    infraction_cols = [EVENTS.index(e) for e in ("collision", "offroad", "red_light")]
    names = camera_names(env, env.num_cameras)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=steps, desc="video", unit="frame", file=sys.stderr)
    frames = []
    for _ in range(steps):
        snap = env.snapshot()
        box, light = snap["agent_box"], snap["light_state"]
        history = stack_snapshots([snap])
        views = env.render_history(history, torch.tensor([0]), torch.tensor([agent]))[0].cpu().numpy()
        goals = wp.to_torch(env.state.goal)[agent].cpu().numpy()
        infractions = wp.to_torch(env.state.events).cpu().numpy()[:, infraction_cols].any(1)
        overview = overview_for_slot(
            env, box.cpu().numpy(), light.cpu().numpy(), agent, goals=goals, infraction_slots=infractions,
            size=overview_size, radius=radius, title=f"t = {len(frames) / FPS:.1f} s  slot {agent}",
        )
        frames.append(compose_frame(views, names, overview, scale))
        td.set("action", policy.act(td["observation"]))
        td = env.step(td)["next"]
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return frames


def write_video(frames: list[np.ndarray], out: Path, fps: int = FPS) -> Path:
    """GIF via Pillow; MP4 via imageio+ffmpeg when importable, else a GIF beside it (message on
    stderr). Returns the path written."""
    from PIL import Image

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".mp4":
        try:
            import imageio.v2 as imageio

            even = [f[: f.shape[0] // 2 * 2, : f.shape[1] // 2 * 2] for f in frames]
            imageio.mimwrite(out, even, fps=fps)
            return out
        except Exception as err:  # noqa: BLE001 - no imageio or no ffmpeg plugin: fall back to GIF
            gif = out.with_suffix(".gif")
            print(f"video: MP4 needs imageio with an ffmpeg plugin ({err}); writing {gif} instead", file=sys.stderr)
            out = gif
    elif out.suffix.lower() != ".gif":
        raise ValueError(f"--out must end in .gif or .mp4, got {str(out)!r}")
    images = [Image.fromarray(f) for f in frames]
    images[0].save(out, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pictura video",
        description="GIF/MP4 of one agent's camera views beside a top-down overview.",
    )
    add_policy_arguments(p)
    p.add_argument("--out", type=Path, required=True, help="run.gif or run.mp4")
    p.add_argument("--agent", type=int, default=0, help="slot of the agent to follow (default 0)")
    p.add_argument("--steps", type=int, default=100, help="frames = simulator steps (10 per second; default 100)")
    p.add_argument("--scale", type=int, default=3, help="nearest-neighbour upscale of the views (default 3)")
    p.add_argument("--overview-size", type=int, default=0, help="overview edge in px (default: the mosaic height)")
    p.add_argument("--radius", type=float, default=40.0, help="overview half-width in m (default 40)")
    p.add_argument("--frame-png", type=Path, help="also save the first frame (or --frame-index) as a PNG")
    p.add_argument("--frame-index", type=int, default=0, help="which frame --frame-png saves (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str]) -> None:
    args = _parser().parse_args(argv)
    try:
        for key in ("steps", "scale"):
            if getattr(args, key) < 1:
                raise ValueError(f"--{key} must be >= 1, got {getattr(args, key)}")
        if args.out.suffix.lower() not in (".gif", ".mp4"):
            raise ValueError(f"--out must end in .gif or .mp4, got {str(args.out)!r}")
        if not 0 <= args.frame_index < args.steps:
            raise ValueError(f"--frame-index must be in 0..{args.steps - 1}, got {args.frame_index}")
        env, policy = build_env_and_policy(args)
        from pictura.callbacks.video import LABEL_HEIGHT

        size = args.overview_size or 2 * (env.rig.height * args.scale + LABEL_HEIGHT)
        frames = record_frames(env, policy, args.agent, args.steps, args.scale, size, args.radius, not args.no_progress)
        path = write_video(frames, args.out)
        if args.frame_png:
            from PIL import Image

            args.frame_png.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(frames[args.frame_index]).save(args.frame_png)
    except (ValueError, FileNotFoundError) as err:
        raise SystemExit(f"video: {err}") from None
    print(f"wrote {path} ({len(frames)} frames, {frames[0].shape[1]}x{frames[0].shape[0]})")


if __name__ == "__main__":
    main(sys.argv[1:])
