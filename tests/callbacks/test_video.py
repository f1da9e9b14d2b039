"""CameraVideo: mosaic layout against NumPy, GIF frames against the rollout history."""

from types import SimpleNamespace

import numpy as np
import torch
from PIL import Image

from pictura.callbacks.video import LABEL_HEIGHT, CameraVideo, tile_views
from tests.modules.fake_env import FakeDrivingEnv, FakeRig


def test_tile_views_places_upscaled_cameras():
    rng = np.random.default_rng(0)
    views = rng.integers(0, 256, size=(4, 3, 5, 3), dtype=np.uint8)
    mosaic = tile_views(views, ["a", "b", "c", "d"], scale=2, columns=2)
    h, w = 6, 10
    assert mosaic.shape == (2 * (h + LABEL_HEIGHT), 2 * w, 3)
    for c in range(4):
        r, col = divmod(c, 2)
        top = r * (h + LABEL_HEIGHT) + LABEL_HEIGHT
        tile = mosaic[top : top + h, col * w : (col + 1) * w]
        expected = np.kron(views[c], np.ones((2, 2, 1), np.uint8))  # nearest-neighbour x2
        assert np.array_equal(tile, expected)
    row = tile_views(views, list("abcd"), scale=1, columns=4)
    assert row.shape == (3 + LABEL_HEIGHT, 4 * 5, 3)


def test_gif_replays_the_chosen_slot_from_history(tmp_path):
    env = FakeDrivingEnv(num_worlds=1, slots_per_world=3, agents_per_world=(1, 3), rig=FakeRig(8, 4),
                         episode_length=100, event_prob=0.0)
    td = env.reset()
    T, S = 5, env.num_slots
    boxes, lights, valids = [], [], []
    for _ in range(T):
        snap = env.snapshot()
        boxes.append(snap["agent_box"])
        lights.append(snap["light_state"])
        valids.append(td["valid"])
        td["action"] = torch.full((S,), 7)
        td = env.step(td)["next"]
    rollout = {"agent_box": torch.stack(boxes), "light_state": torch.stack(lights), "valid": torch.stack(valids)}
    module = SimpleNamespace(rollout=rollout, env=env, iteration=torch.tensor(3))
    images = []
    trainer = SimpleNamespace(
        is_global_zero=True, log_dir=str(tmp_path), default_root_dir=str(tmp_path), global_step=9,
        logger=SimpleNamespace(experiment=SimpleNamespace(add_image=lambda *a, **k: images.append((a, k)))),
    )
    video = CameraVideo(every_n_iterations=3, max_frames=4, scale=1, columns=2)
    video.on_train_batch_end(trainer, module, None, None, 0)
    path = tmp_path / "videos" / "iter_0003.gif"
    assert path.exists() and images and images[0][0][0] == "camera/mosaic"
    gif = Image.open(path)
    assert gif.n_frames == 4
    # frame 0 equals the mosaic of the slot valid most often, rendered at step 0
    slot = int(rollout["valid"].sum(0).argmax())
    first = env.render_history(rollout, torch.tensor([0]), torch.tensor([slot]))
    expected = tile_views(first[0].numpy(), ["front", "front_left", "front_right", "back"], 1, 2)
    gif.seek(0)
    got = np.asarray(gif.convert("RGB"))
    assert got.shape == expected.shape
    # GIF palettes quantise colours: compare the camera pixels loosely, layout exactly
    assert np.abs(got.astype(int) - expected.astype(int))[LABEL_HEIGHT:].mean() < 8
    video.on_train_end(trainer, module)  # same iteration: not written twice
    assert len(video.written) == 1
