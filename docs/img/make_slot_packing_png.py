"""docs/img/slot_packing.png: which slots act, step by step, with fixed worlds and with packed
blocks (the simulator alone on "cpu", random actions, two procedural towns).

    python docs/img/make_slot_packing_png.py

Each column is a step, each row a slot: coloured by the world record that owns it while its
agent is active, grey once halted (it stays as an obstacle until its world or block resets),
white when empty. Fixed worlds keep 128 slots per world whatever U{1, 120} drew; packed blocks
give each world exactly its agents, so the same 1,024 slots hold about twice the agents.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import warp as wp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pictura.maps import load_road_map  # noqa: E402
from pictura.sim import SimConfig, build_model, reset, step  # noqa: E402
from pictura.sim.snapshot import WorldLayout  # noqa: E402

SLOTS, STEPS, SEED = 1024, 240, 0
OUT = Path(__file__).resolve().parent / "slot_packing.png"


def occupancy(layout: WorldLayout, maps, config: SimConfig) -> tuple[np.ndarray, float]:
    """(SLOTS, STEPS) codes: world id (active), -1 halted, -2 empty; and the mean utilisation."""
    model = build_model(maps, layout, config, device="cpu")
    s0, s1, ctl = model.state(), model.state(), model.control()
    reset(model, s0, SEED)
    rng = np.random.default_rng(SEED)
    codes = np.empty((SLOTS, STEPS), np.int32)
    for t in range(STEPS):
        valid, halted, world = s0.valid.numpy(), s0.halted.numpy(), s0.slot_world.numpy()
        codes[:, t] = np.where(valid == 0, -2, np.where(halted != 0, -1, world))
        ctl.action.assign(rng.integers(0, 12, SLOTS).astype(np.int32))
        step(model, s0, ctl, s1)
        s0, s1 = s1, s0
    return codes, float(np.mean(codes >= 0))


def picture(codes: np.ndarray) -> np.ndarray:
    hues = plt.get_cmap("tab20")(np.delete(np.arange(20), [14, 15]))[:, :3]  # no greys: grey is "halted"
    rgb = np.ones((*codes.shape, 3))
    active = codes >= 0
    rgb[active] = hues[codes[active] % len(hues)]
    rgb[codes == -1] = 0.35
    return rgb


def main() -> None:
    wp.config.log_level = wp.LOG_WARNING  # no start-up banner or module-load lines (INFO)
    maps = [load_road_map(f"procedural:seed={s}") for s in range(2)]
    lights = [len(m.light_position) for m in maps]
    config = SimConfig(episode_length=100)  # short episodes, so resets show in 240 steps
    fixed = WorldLayout.uniform(np.arange(SLOTS // 128) % 2, 128, lights, config.parked_per_world)
    packed = WorldLayout.packed(np.arange(2 * 32) % 2, 512, 32, lights, config.parked_per_world)
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.2), sharey=True)
    for ax, (title, layout) in zip(axes, (("fixed worlds: 8 x 128 slots", fixed), ("packed: 2 blocks of 512 slots", packed)), strict=True):
        codes, util = occupancy(layout, maps, config)
        ax.imshow(picture(codes), aspect="auto", interpolation="nearest")
        ax.set_title(f"{title}\nactive share {util:.2f}")
        ax.set_xlabel("step (0.1 s)")
    axes[0].set_ylabel("slot")
    fig.suptitle("Slot occupancy: colour = the world owning an active agent, grey = halted, white = empty")
    fig.tight_layout()
    fig.savefig(OUT, dpi=110)
    print(OUT)


if __name__ == "__main__":
    main()
