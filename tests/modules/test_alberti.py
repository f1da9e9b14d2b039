"""The Alberti policy: widths from the observation spec, resolution sweep, clear errors."""

import pytest
import torch

from pictura.modules.alberti import AlbertiPolicy
from pictura.modules.encoders import ConvStack, sinusoid_position_2d
from tests.modules.fake_env import CONDITIONING_WIDTH, FakeDrivingEnv, FakeRig


def _spec(width=96, height=54, cameras=4):
    env = FakeDrivingEnv(num_worlds=1, slots_per_world=2, agents_per_world=(1, 2), rig=FakeRig(width, height, cameras))
    return env, env.observation_spec


@pytest.mark.parametrize("width,height", [(32, 18), (64, 36), (96, 54), (192, 108), (384, 216)])
def test_output_width_is_the_same_at_every_resolution(width, height):
    torch.manual_seed(0)
    env, spec = _spec(width, height)
    policy = AlbertiPolicy(spec)
    td = env.reset()
    with torch.no_grad():
        scene = policy.camera(td["observation", "pixels"])
        logits, value = policy(td)
    assert scene.shape == (2, 256)  # 4 x group_width, the width of the four entity-set embeddings
    assert policy.backbone_width == 384
    assert logits.shape == (2, 12) and value.shape == (2,)
    assert torch.isfinite(logits).all() and torch.isfinite(value).all()


def test_table4_shapes_and_parameter_counts():
    _, spec = _spec()
    policy = AlbertiPolicy(spec)
    assert policy.camera.queries.shape == (4, 16, 128)  # 16 learned queries per camera
    assert policy.camera.scene_proj.in_features == 512  # 4 x 128
    assert policy.ego.net[0].in_features == 7
    assert policy.conditioning.net[0].in_features == CONDITIONING_WIDTH + 6  # + 3 goal waypoints
    linears = [m for m in policy.trunk if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(384, 512)] + [(512, 512)] * 3
    # Table 4's closed forms: trunk 4x512 from the 384-d input, linear heads (12 actions, 1
    # value), the ego and conditioning 2-layer MLPs -> 64
    counts = policy.parameter_counts()
    assert counts["trunk"] == 384 * 512 + 512 + 3 * (512 * 512 + 512)
    assert counts["actor"] == 512 * 12 + 12 and counts["critic"] == 512 + 1
    assert counts["ego"] == 7 * 64 + 64 + 64 * 64 + 64
    assert counts["conditioning"] == (CONDITIONING_WIDTH + 6) * 64 + 64 + 64 * 64 + 64
    assert f"{sum(p.numel() for p in policy.parameters()):>12,}" in policy.summary()


def test_conv_feature_size_matches_the_network():
    conv = ConvStack()
    for width, height in [(32, 18), (96, 54), (384, 216), (50, 31)]:
        out = conv(torch.zeros(1, 3, height, width))
        assert tuple(out.shape[-2:]) == conv.feature_size(height, width)
        assert out.shape[1] == 128


def test_positional_encoding_shape_and_distinct_cells():
    enc = sinusoid_position_2d(3, 5, 16, torch.device("cpu"))
    assert enc.shape == (15, 16)
    assert torch.unique(enc, dim=0).shape[0] == 15


def test_pixels_are_scaled_inside_the_policy():
    # uint8 in: a constant 255 image and the same image as float 1.0 through the conv must agree
    torch.manual_seed(0)
    _, spec = _spec(32, 18)
    policy = AlbertiPolicy(spec)
    pixels = torch.full((1, 4, 18, 32, 3), 255, dtype=torch.uint8)
    views = torch.ones(4, 3, 18, 32)
    with torch.no_grad():
        direct = policy.camera.conv(views)
        feat = policy.camera.conv(pixels.reshape(4, 18, 32, 3).permute(0, 3, 1, 2).float() / 255)
    torch.testing.assert_close(direct, feat)


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"group_width": 0}, "group_width"),
        ({"trunk_layers": -1}, "trunk_layers"),
        ({"attention_heads": 3}, "attention_heads"),
        ({"conv_channels": (8, 8), "conv_strides": (4, 2, 2)}, "conv_strides"),
        ({"conv_strides": (4, 0, 2, 1, 1)}, "conv_strides"),
        ({"queries_per_camera": 0}, "queries_per_camera"),
        ({"num_actions": 0}, "num_actions"),
    ],
)
def test_bad_sizes_raise_value_errors_naming_the_field(kwargs, field):
    _, spec = _spec(32, 18)
    with pytest.raises(ValueError, match=field):
        AlbertiPolicy(spec, **kwargs)


def test_too_small_views_for_the_strides_raise():
    _, spec = _spec(3, 3)
    with pytest.raises(ValueError, match="conv_strides"):
        AlbertiPolicy(spec)


def test_missing_observation_key_raises():
    from torchrl.data import Composite, Unbounded

    spec = Composite(observation=Composite(ego=Unbounded(shape=(2, 7)), shape=(2,)), shape=(2,))
    with pytest.raises(ValueError, match="pixels"):
        AlbertiPolicy(spec)


@pytest.mark.parametrize("height, width", [(54, 96), (18, 32), (27, 48), (9, 16)])
def test_patch_stem_equals_the_strided_conv(height, width):
    """The stem runs as a GEMM over patches; the reference is the conv itself (torch's conv2d),
    values and gradients, at sizes that leave rows / columns past the last whole patch."""
    torch.manual_seed(0)
    conv = ConvStack()
    views = torch.rand(3, 3, height, width, requires_grad=True)
    reference = torch.nn.Sequential(*conv.layers)  # the plain conv stack, same parameters
    expected = reference(views)
    got = conv(views)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    (g_got,) = torch.autograd.grad(got.square().sum(), conv.layers[0].weight)
    (g_ref,) = torch.autograd.grad(expected.square().sum(), conv.layers[0].weight)
    torch.testing.assert_close(g_got, g_ref, rtol=1e-4, atol=1e-5)
