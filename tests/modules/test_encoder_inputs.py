"""What the camera encoder hands its layers, and the learning-rate schedule, against closed forms:
the conv stack sees each view's pixels / 255 in (N, 3, H, W) camera-major order; the patch stem
is the strided conv it stands for; the positional encoding is the documented sine / cosine of
normalised coordinates; the cosine schedule stays at 0 past its last iteration."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from pictura.modules.encoders import CameraEncoder, ConvStack, patch_stem, sinusoid_position_2d
from pictura.modules.ppo import cosine_factor


def test_conv_stack_sees_pixels_over_255_per_camera():
    torch.manual_seed(0)
    enc = CameraEncoder(num_cameras=3, conv_channels=(8, 16), conv_strides=(4, 2), queries_per_camera=2,
                        attention_heads=2, camera_width=8, out_width=12)  # fmt: skip
    pixels = torch.randint(0, 256, (2, 3, 16, 24, 3), dtype=torch.uint8)
    seen = []
    enc.conv.register_forward_hook(lambda module, args, out: seen.append(args[0].detach().clone()))
    out = enc(pixels)
    assert out.shape == (2, 12)
    (views,) = seen
    want = pixels.reshape(6, 16, 24, 3).permute(0, 3, 1, 2).float() / 255.0  # (batch x camera, rgb, H, W)
    torch.testing.assert_close(views, want, rtol=0, atol=0)
    assert float(views.max()) <= 1.0


def test_patch_stem_is_the_strided_conv():
    torch.manual_seed(1)
    stack = ConvStack((8, 4), (4, 1))
    views = torch.rand(3, 3, 18, 30)
    torch.testing.assert_close(patch_stem(views, stack.layers[0]), F.conv2d(views, stack.layers[0].weight,
                               stack.layers[0].bias, stride=4), atol=1e-5, rtol=1e-5)  # fmt: skip
    assert stack.feature_size(18, 30) == stack(views).shape[-2:]


def test_positional_encoding_closed_form():
    h, w, c = 3, 5, 8
    enc = sinusoid_position_2d(h, w, c, torch.device("cpu")).numpy().reshape(h, w, c)
    q = c // 4
    freq = 1000.0 ** (-np.arange(q) / q)
    for i, y in enumerate(np.linspace(0, 1, h)):
        for j, x in enumerate(np.linspace(0, 1, w)):
            ay, ax = 2 * np.pi * y * freq, 2 * np.pi * x * freq
            want = np.concatenate([np.sin(ay), np.cos(ay), np.sin(ax), np.cos(ax)])
            np.testing.assert_allclose(enc[i, j], want, atol=1e-5)


@pytest.mark.parametrize("total", [1, 7, 10])
def test_cosine_schedule_closed_form_and_flat_after_the_end(total):
    for it in range(3 * total + 2):
        want = 0.5 * (1.0 + math.cos(math.pi * it / total)) if it <= total else 0.0
        assert cosine_factor(it, total) == pytest.approx(want, abs=1e-12), it
