"""`CameraVideo`: GIFs of one agent's camera views, re-rendered from the PPO rollout history.

Every ``every_n_iterations`` PPO iterations (and once at the end of fit) the callback picks
the slot that was valid for the most steps of the last rollout, re-renders its views from the
snapshot history (`env.render_history`: exactly the pixels the policy saw), tiles the cameras
with their names, and writes ``<log_dir>/videos/iter_XXXX.gif`` (Pillow). TensorBoard gets the
GIF itself as ``camera/video`` (its image panel plays it; the step slider picks the iteration)
and the first frame's mosaic as ``camera/mosaic``, both at the run's one x-axis, PPO
iterations (`pictura.callbacks.axis`). An MP4 is written too when ``mp4=True`` and imageio
(with an ffmpeg plugin) is installed; it is never required. TensorBoard's ``add_video`` would
need moviepy, so it is not used.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from PIL import Image, ImageDraw

from pictura.callbacks.axis import logging_step

LABEL_HEIGHT = 12
"""Pixels of the name strip above each camera tile."""


def camera_names(env, num_cameras: int) -> list[str]:
    """The rig's camera names, or ``cam0..`` when the rig does not name them."""
    rig = getattr(env, "rig", None)
    cams = getattr(rig, "cameras", None)
    if cams is not None and len(cams) == num_cameras:
        return [getattr(c, "name", f"cam{i}") for i, c in enumerate(cams)]
    names = getattr(rig, "names", None)
    if names is not None and len(names) == num_cameras:
        return list(names)
    return [f"cam{i}" for i in range(num_cameras)]


def tile_views(views: np.ndarray, names: Sequence[str], scale: int = 3, columns: int = 2) -> np.ndarray:
    """One frame's camera views (C, H, W, 3) uint8 -> a labelled mosaic (rows*(h+label), cols*w, 3).

    Views are upscaled ``scale`` x with nearest neighbour (keeps pixels honest) and laid out
    ``columns`` per row, each under a strip carrying its camera name.
    """
    if views.ndim != 4 or views.shape[-1] != 3:
        raise ValueError(f"views must be (C, H, W, 3), got {views.shape}")
    if scale < 1 or columns < 1:
        raise ValueError(f"scale and columns must be >= 1, got scale={scale}, columns={columns}")
    C, H, W, _ = views.shape
    big = views.repeat(scale, axis=1).repeat(scale, axis=2)
    h, w = H * scale, W * scale
    rows = -(-C // columns)
    mosaic = np.zeros((rows * (h + LABEL_HEIGHT), columns * w, 3), np.uint8)
    image = Image.fromarray(mosaic)
    draw = ImageDraw.Draw(image)
    for c in range(C):
        r, col = divmod(c, columns)
        top, left = r * (h + LABEL_HEIGHT), col * w
        image.paste(Image.fromarray(big[c]), (left, top + LABEL_HEIGHT))
        draw.text((left + 2, top), str(names[c]), fill=(255, 255, 255))
    return np.asarray(image)


def add_gif(writer, tag: str, path: str, step: int) -> None:
    """Log the GIF file at ``path`` to a TensorBoard ``SummaryWriter`` as an image whose bytes
    are the GIF itself: TensorBoard's image panel shows it animated (as ``add_video`` does,
    which would need moviepy to encode it)."""
    from tensorboard.compat.proto.summary_pb2 import Summary

    with Image.open(path) as gif:
        width, height = gif.size
    with open(path, "rb") as f:
        encoded = f.read()
    image = Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=encoded)
    writer._get_file_writer().add_summary(Summary(value=[Summary.Value(tag=tag, image=image)]), step)


class CameraVideo(Callback):
    """Write a GIF of one agent's camera views every N PPO iterations and at the end of fit.

    Args:
        every_n_iterations: write after every N-th iteration (0 = only at the end of fit).
        max_frames: at most this many consecutive rollout steps per video.
        scale: nearest-neighbour upscaling of each view.
        columns: cameras per row (2 -> 2x2 for four cameras, 4 -> 1x4).
        fps: frames per second of the GIF (the simulator runs at 10 steps/s).
        mp4: also write an MP4 when imageio is available.
        overview: draw the top-down overview (`pictura.eval.overview.overview_for_slot`, the
            same drawing as ``python -m pictura video``) beside each mosaic, from the rollout's
            snapshot history; needs an env with ``road_maps`` (ignored otherwise).
    """

    def __init__(
        self,
        every_n_iterations: int = 50,
        max_frames: int = 64,
        scale: int = 3,
        columns: int = 2,
        fps: int = 10,
        mp4: bool = False,
        overview: bool = False,
    ):
        for name, value in (("max_frames", max_frames), ("scale", scale), ("columns", columns), ("fps", fps)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if every_n_iterations < 0:
            raise ValueError(f"every_n_iterations must be >= 0, got {every_n_iterations}")
        self.every_n_iterations, self.max_frames = every_n_iterations, max_frames
        self.scale, self.columns, self.fps, self.mp4 = scale, columns, fps, mp4
        self.overview = overview
        self._picked: tuple[int, torch.Tensor] | None = None
        self.written: list[str] = []
        self._last_iteration = -1

    @torch.no_grad()
    def frames(self, pl_module: LightningModule) -> np.ndarray | None:
        """(N, C, H, W, 3) uint8 views of the chosen slot over the last rollout, or None."""
        buf, env = getattr(pl_module, "rollout", None), getattr(pl_module, "env", None)
        if buf is None or env is None:
            return None
        valid = buf["valid"]  # (T, S)
        slot = int(valid.sum(0).argmax())
        steps = valid[:, slot].nonzero().squeeze(-1)[: self.max_frames]
        if steps.numel() == 0:
            return None
        slots = torch.full_like(steps, slot)
        self._picked = (slot, steps)
        if "pixels" in buf:
            pixels = buf["pixels"][steps, slots]
        else:
            pixels = env.render_history(buf, steps, slots)
        return pixels.cpu().numpy()

    def write(self, trainer: Trainer, pl_module: LightningModule) -> str | None:
        iteration = logging_step(trainer, pl_module)
        if iteration == self._last_iteration:
            return None
        # trainer.log_dir is a collective under DDP: every rank asks, only rank 0 writes.
        log_dir = trainer.log_dir or trainer.default_root_dir
        if not trainer.is_global_zero:
            return None
        frames = self.frames(pl_module)
        if frames is None:
            return None
        self._last_iteration = iteration
        names = camera_names(pl_module.env, frames.shape[1])
        mosaics = [tile_views(f, names, self.scale, self.columns) for f in frames]
        if self.overview and getattr(pl_module.env, "road_maps", None) is not None and "agent_box" in pl_module.rollout:
            mosaics = self._with_overview(pl_module, mosaics)
        folder = os.path.join(log_dir, "videos")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"iter_{iteration:04d}.gif")
        images = [Image.fromarray(m) for m in mosaics]
        images[0].save(path, save_all=True, append_images=images[1:], duration=int(1000 / self.fps), loop=0)
        self.written.append(path)
        if self.mp4:
            self._write_mp4(path[:-4] + ".mp4", mosaics)
        experiment = getattr(trainer.logger, "experiment", None)
        if experiment is not None and hasattr(experiment, "add_image"):
            experiment.add_image("camera/mosaic", mosaics[0], iteration, dataformats="HWC")
        if experiment is not None and hasattr(experiment, "_get_file_writer"):
            add_gif(experiment, "camera/video", path, iteration)
        return path

    def _with_overview(self, pl_module: LightningModule, mosaics: list[np.ndarray]) -> list[np.ndarray]:
        from pictura.eval.overview import overview_for_slot, side_by_side

        slot, steps = self._picked
        rollout = pl_module.rollout
        boxes = rollout["agent_box"][steps].cpu().numpy()
        lights = rollout["light_state"][steps].cpu().numpy()
        tables = rollout["slot_table"][steps].cpu().numpy() if "slot_table" in rollout else [None] * len(boxes)
        size = mosaics[0].shape[0]
        return [
            side_by_side(
                [m, overview_for_slot(pl_module.env, b, li, slot, size=size, title=f"step {int(t)}", slot_table=table)]
            )
            for m, b, li, table, t in zip(mosaics, boxes, lights, tables, steps.tolist(), strict=True)
        ]

    def _write_mp4(self, path: str, mosaics: list[np.ndarray]) -> None:
        try:
            import imageio.v2 as imageio
        except ImportError:
            return
        try:
            # even sizes for yuv420p encoders
            even = [m[: m.shape[0] // 2 * 2, : m.shape[1] // 2 * 2] for m in mosaics]
            imageio.mimwrite(path, even, fps=self.fps)
            self.written.append(path)
        except Exception as err:  # no ffmpeg backend: the GIF is the product, MP4 a bonus
            print(f"CameraVideo: MP4 not written ({err})")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        iteration = int(getattr(pl_module, "iteration", batch_idx + 1))
        if self.every_n_iterations and iteration % self.every_n_iterations == 0:
            self.write(trainer, pl_module)

    def on_train_end(self, trainer, pl_module) -> None:
        self.write(trainer, pl_module)
