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
