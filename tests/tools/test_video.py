"""``python -m pictura video``: GIF frame count and frame size from the layout's closed form."""

import pytest
from PIL import Image

from pictura.callbacks.video import LABEL_HEIGHT
from pictura.tools import video

W, H, SCALE, STEPS = 32, 18, 2, 4


def test_video_writes_a_gif_with_the_expected_frames_and_size(tmp_path, capsys):
    out = tmp_path / "run.gif"
    png = tmp_path / "frame.png"
    video.main([
        "--policy", "constant:7", "--map", "procedural:seed=0", "--out", str(out), "--agents", "4",
        "--steps", str(STEPS), "--scale", str(SCALE), "--resolution", f"{W}x{H}", "--no-progress",
        "--frame-png", str(png), "--frame-index", "2",
    ])
    gif = Image.open(out)
    assert gif.n_frames == STEPS
    mosaic_h = 2 * (H * SCALE + LABEL_HEIGHT)  # four cameras, two per row
    mosaic_w = 2 * W * SCALE
    overview = mosaic_h  # default: a square as tall as the mosaic
    assert gif.size == (mosaic_w + 4 + overview, mosaic_h)
    assert Image.open(png).size == gif.size
    assert "wrote" in capsys.readouterr().out


def test_mp4_without_imageio_falls_back_to_gif(tmp_path, capsys):
    frames = [video.np.full((8, 10, 3), v, video.np.uint8) for v in (0, 200)]  # Pillow merges equal frames
    try:
        import imageio  # noqa: F401

        pytest.skip("imageio is installed: MP4 is written for real")
    except ImportError:
        pass
    path = video.write_video(frames, tmp_path / "run.mp4")
    assert path.suffix == ".gif" and Image.open(path).n_frames == 2
    assert "imageio" in capsys.readouterr().err


def test_bad_arguments_are_reported(tmp_path):
    with pytest.raises(SystemExit, match="--steps"):
        video.main(["--policy", "random", "--out", str(tmp_path / "a.gif"), "--steps", "0"])
    with pytest.raises(ValueError, match="gif or .mp4"):
        video.write_video([video.np.zeros((4, 4, 3), video.np.uint8)], tmp_path / "a.avi")


def test_a_video_longer_than_the_episode_is_refused(tmp_path):
    from pictura.sim import SimConfig

    with pytest.raises(SystemExit, match="longer than the episode"):
        video.main(["--policy", "random", "--out", str(tmp_path / "a.gif"), "--steps", str(SimConfig().episode_length + 1),
                    "--resolution", "32x18", "--agents", "2"])


def test_a_checkpoint_trained_on_packed_slot_blocks_drives_one_fixed_world(tmp_path):
    """The README's CPU run packs its worlds into blocks of 32 slots; the video (and the probes,
    which share its env arguments) build one world of --agents slots, which no block size
    divides, so they take fixed worlds whatever the checkpoint's training env packed."""
    from tests.tools.test_evaluate import EGO_WIDTH, _checkpoint

    ckpt = _checkpoint(tmp_path / "packed.ckpt", EGO_WIDTH, block_slots=32, worlds_per_block=4)
    out = tmp_path / "run.gif"
    video.main(["--ckpt", str(ckpt), "--map", "procedural:seed=0", "--out", str(out), "--agents", "5",
                "--steps", "2", "--no-progress"])
    assert Image.open(out).n_frames == 2
