"""Observation encoders of the Alberti policy (paper Table 4).

- `CameraEncoder`: a shared from-scratch conv stack over every camera view, then per-camera
  learned queries that cross-attend over that camera's feature map (DrivoR-style token pooling).
  The number of tokens is fixed by the queries, not by the image, so every render resolution
  maps to the same output width.
- `GroupMLP`: the 2-layer MLP used for the ego and conditioning groups (-> group width 64).
- `ActorCritic`: what every policy shares (Table 4 "shared trunk"): the 4 x 512 GELU backbone,
  the linear actor and critic heads, the conditioning + goals encoder, and the TensorDict
  plumbing. Modalities differ only in the encoders a subclass puts in front of it.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def _check_positive(**sizes: int | Sequence[int]) -> None:
    for name, value in sizes.items():
        values = value if isinstance(value, Sequence) else [value]
        if len(values) == 0 or any(int(v) < 1 for v in values):
            raise ValueError(f"{name} must be positive, got {value}")


def spec_shape(observation_spec, key: str) -> tuple[int, ...]:
    """Per-sample shape of ``("observation", key)`` (batch dims of the spec dropped)."""
    try:
        spec = observation_spec["observation", key]
    except KeyError as err:
        raise ValueError(f"observation_spec has no ('observation', {key!r}) entry") from err
    batch = len(observation_spec.shape)
    return tuple(int(s) for s in spec.shape[batch:])


def sinusoid_position_2d(height: int, width: int, channels: int, device: torch.device) -> torch.Tensor:
    """(height * width, channels) fixed 2-D sine/cosine encoding of feature-map cells.

    Half the channels encode the row, half the column, at geometric frequencies; coordinates
    are normalised to [0, 1] so the encoding means "where in the view", whatever the resolution.
    """
    if channels % 4 != 0:
        raise ValueError(f"positional encoding needs channels divisible by 4, got {channels}")
    quarter = channels // 4
    freq = torch.exp(torch.arange(quarter, device=device, dtype=torch.float32) * (-math.log(1000.0) / quarter))
    ys = torch.linspace(0, 1, height, device=device) if height > 1 else torch.zeros(1, device=device)
    xs = torch.linspace(0, 1, width, device=device) if width > 1 else torch.zeros(1, device=device)
    ay = ys[:, None] * freq[None] * 2 * math.pi  # (H, quarter)
    ax = xs[:, None] * freq[None] * 2 * math.pi  # (W, quarter)
    enc_y = torch.cat([ay.sin(), ay.cos()], dim=1)[:, None, :].expand(height, width, 2 * quarter)
    enc_x = torch.cat([ax.sin(), ax.cos()], dim=1)[None, :, :].expand(height, width, 2 * quarter)
    return torch.cat([enc_y, enc_x], dim=2).reshape(height * width, channels)


class ConvStack(nn.Module):
    """Shared per-view conv stack: (N, 3, H, W) float -> (N, channels[-1], h, w).

    The first layer is a ``strides[0] x strides[0]`` patch stem (kernel = stride, no padding):
    on one H200 a 4x4 stride-4 stem then 3x3 convs at strides 2, 2, 1, 1 ran about 2x faster
    than a 3x3 stride-2 stem at the same width (ARCHITECTURE.md, "Performance rules"). Later
    layers are 3x3 with padding 1, so even a 32x18 view keeps a non-empty feature map.
    """

    def __init__(self, channels: Sequence[int] = (32, 64, 96, 128, 128), strides: Sequence[int] = (4, 2, 2, 1, 1)):
        super().__init__()
        _check_positive(conv_channels=channels, conv_strides=strides)
        if len(channels) != len(strides):
            raise ValueError(
                f"conv_channels and conv_strides must have the same length, got {len(channels)} and {len(strides)}"
            )
        layers: list[nn.Module] = []
        c_in = 3
        for i, (c_out, s) in enumerate(zip(channels, strides, strict=True)):
            if i == 0:
                layers.append(nn.Conv2d(c_in, c_out, kernel_size=s, stride=s))
            else:
                layers.append(nn.Conv2d(c_in, c_out, kernel_size=3, stride=s, padding=1))
            layers.append(nn.GELU())
            c_in = c_out
        self.layers = nn.Sequential(*layers)
        self.out_channels = c_in
        self.strides = tuple(int(s) for s in strides)

    def feature_size(self, height: int, width: int) -> tuple[int, int]:
        """Feature-map (h, w) for an input view of (height, width)."""
        h, w = height // self.strides[0], width // self.strides[0]
        for s in self.strides[1:]:
            h, w = (h - 1) // s + 1, (w - 1) // s + 1
        return h, w

    def forward(self, views: torch.Tensor) -> torch.Tensor:
        return self.layers[1:](patch_stem(views, self.layers[0]))


def patch_stem(views: torch.Tensor, stem: nn.Conv2d) -> torch.Tensor:
    """``stem(views)`` for a conv whose kernel equals its stride (no padding), computed as one
    matrix product over the non-overlapping patches.

    Same parameters and the same function as the conv (rows and columns past the last whole
    patch are dropped, as the conv drops them), but on an H200 cuDNN ran the 3-channel stem
    through a generic NHWC kernel plus a channel-padding pass (~1.9 s of a ~22 s Alberti
    iteration, docs/benchmarks.md); a (patches x 48) @ (48 x 32) GEMM is a fraction of that.
    (N, C, H, W) -> (N, out, H // s, W // s), channels_last in memory.
    """
    s = stem.stride[0]
    N, C, H, W = views.shape
    h, w = H // s, W // s
    patches = views[:, :, : h * s, : w * s].permute(0, 2, 3, 1)  # (N, H', W', C)
    patches = patches.reshape(N, h, s, w, s, C).permute(0, 1, 3, 2, 4, 5).reshape(N, h, w, s * s * C)
    weight = stem.weight.permute(0, 2, 3, 1).reshape(stem.out_channels, s * s * C)  # (out, ky, kx, c)
    return F.linear(patches, weight, stem.bias).permute(0, 3, 1, 2)


class CameraEncoder(nn.Module):
    """Pixels of C cameras -> one scene embedding.

    Input ``pixels`` (B, C, H, W, 3) uint8 (the env layout). Every view goes through the shared
    `ConvStack`; camera ``c``'s ``queries_per_camera`` learned queries cross-attend (one block:
    attention + MLP, pre-norm, residual) over its feature map plus a 2-D positional encoding;
    each camera's tokens are flattened and projected to ``camera_width``; the C camera vectors
    are concatenated (C * camera_width) and projected to ``out_width``.

    Output (B, out_width) float32.
    """

    def __init__(
        self,
        num_cameras: int = 4,
        conv_channels: Sequence[int] = (32, 64, 96, 128, 128),
        conv_strides: Sequence[int] = (4, 2, 2, 1, 1),
        queries_per_camera: int = 16,
        attention_heads: int = 4,
        camera_width: int = 128,
        out_width: int = 256,
    ):
        super().__init__()
        _check_positive(
            num_cameras=num_cameras,
            queries_per_camera=queries_per_camera,
            attention_heads=attention_heads,
            camera_width=camera_width,
            out_width=out_width,
        )
        self.conv = ConvStack(conv_channels, conv_strides)
        d = self.conv.out_channels
        if d % attention_heads != 0:
            raise ValueError(f"conv_channels[-1]={d} must be divisible by attention_heads={attention_heads}")
        if d % 4 != 0:
            raise ValueError(f"conv_channels[-1]={d} must be divisible by 4 (2-D positional encoding)")
        self.num_cameras, self.token_width = num_cameras, d
        self.queries = nn.Parameter(torch.randn(num_cameras, queries_per_camera, d) * 0.02)
        self.norm_q = nn.LayerNorm(d)
        self.norm_kv = nn.LayerNorm(d)
        self.attention = nn.MultiheadAttention(d, attention_heads, batch_first=True)
        self.norm_mlp = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.camera_proj = nn.Linear(queries_per_camera * d, camera_width)
        self.scene_proj = nn.Linear(num_cameras * camera_width, out_width)
        self.out_width = out_width

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        if pixels.ndim != 5 or pixels.shape[1] != self.num_cameras or pixels.shape[-1] != 3:
            raise ValueError(
                f"pixels must be (B, {self.num_cameras}, H, W, 3) uint8, got {tuple(pixels.shape)}"
            )
        B, C, H, W, _ = pixels.shape
        # (B*C, H, W, 3) -> permute to NCHW: the result is channels_last in memory, no copy.
        views = pixels.reshape(B * C, H, W, 3).permute(0, 3, 1, 2).float().div_(255.0)
        feat = self.conv(views)  # (B*C, d, h, w)
        h, w = feat.shape[-2:]
        tokens = feat.flatten(2).transpose(1, 2)  # (B*C, h*w, d)
        kv = self.norm_kv(tokens + sinusoid_position_2d(h, w, self.token_width, feat.device).to(feat.dtype))
        q = self.queries.unsqueeze(0).expand(B, -1, -1, -1).reshape(B * C, -1, self.token_width)
        q = q + self._attend(self.norm_q(q), kv)
        q = q + self.mlp(self.norm_mlp(q))  # (B*C, Q, d)
        per_camera = self.camera_proj(q.reshape(B, C, -1))  # (B, C, camera_width)
        return self.scene_proj(per_camera.reshape(B, -1))

    def _attend(self, q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
        """Cross-attention of queries over one view's tokens, in chunks of views."""
        backends = sdpa_kernel(CUDA_ATTENTION_BACKENDS) if q.is_cuda else contextlib.nullcontext()
        with backends:
            out = [
                self.attention(qc, kc, kc, need_weights=False)[0]
                for qc, kc in zip(q.split(ATTENTION_CHUNK), kv.split(ATTENTION_CHUNK), strict=True)
            ]
        return out[0] if len(out) == 1 else torch.cat(out)


CUDA_ATTENTION_BACKENDS = [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
"""Fused attention kernels the camera encoder may use on CUDA. Its attention is tiny (16
queries over ~24 tokens per view, head width 32, a million views per update) and the
memory-efficient kernel beat flash attention there: the whole Alberti forward + backward took
72.8 ms instead of 81.2 ms per 16,384 samples in bf16 on an H200 (docs/benchmarks.md)."""

ATTENTION_CHUNK = 8192
"""Most views per attention call: fused attention kernels launch one grid row per
(view, head), and CUDA caps a grid dimension at 65,535 (large PPO chunks failed there)."""


class GroupMLP(nn.Module):
    """2-layer GELU MLP: (B, in_width) -> (B, out_width) (Table 4 "per-group encoder").

    ``norm``: a LayerNorm between the first layer and the GELU, as PufferDrive's entity encoders
    have (not in Table 4; `VectorizedPolicy`'s ``group_norm``)."""

    def __init__(self, in_width: int, out_width: int = 64, norm: bool = False):
        super().__init__()
        _check_positive(in_width=in_width, group_width=out_width)
        first = [nn.Linear(in_width, out_width)] + ([nn.LayerNorm(out_width)] if norm else [])
        self.net = nn.Sequential(*first, nn.GELU(), nn.Linear(out_width, out_width))
        self.out_width = out_width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


WEIGHT_INITS = ("torch", "orthogonal")
"""Initialisations of a policy's hidden layers (`ActorCritic.initialize`)."""


class ActorCritic(nn.Module):
    """The trunk every policy shares: ``features (B, backbone_width) -> logits, value``.

    A subclass builds its encoders, calls `build_trunk` with the width of their concatenated
    embeddings, then `initialize`, and implements ``forward_tensors(*tensors)`` over the
    ``("observation", key)`` entries named by its class attribute ``OBSERVATION_KEYS``.
    """

    OBSERVATION_KEYS: tuple[str, ...] = ()

    def build_trunk(
        self, backbone_width: int, trunk_width: int, trunk_layers: int, num_actions: int, critic_trunk: bool = False
    ) -> None:
        """The GELU MLP trunk and the two heads; with ``critic_trunk`` the critic head reads a
        second trunk of the same shape (``self.critic_trunk``), so the value loss reaches the
        encoders but not the actor's trunk."""
        _check_positive(trunk_width=trunk_width, trunk_layers=trunk_layers, num_actions=num_actions)
        self.backbone_width = backbone_width

        def mlp() -> nn.Sequential:
            layers: list[nn.Module] = []
            width_in = backbone_width
            for _ in range(trunk_layers):
                layers += [nn.Linear(width_in, trunk_width), nn.GELU()]
                width_in = trunk_width
            return nn.Sequential(*layers)

        self.trunk = mlp()
        self.critic_trunk = mlp() if critic_trunk else None
        self.actor = nn.Linear(trunk_width, num_actions)
        self.critic = nn.Linear(trunk_width, 1)
        # Small actor init: a near-uniform first policy (CleanRL / PPO practice).
        nn.init.orthogonal_(self.actor.weight, 0.01)
        nn.init.zeros_(self.actor.bias)
        nn.init.orthogonal_(self.critic.weight, 1.0)
        nn.init.zeros_(self.critic.bias)
        self.num_actions = num_actions

    def initialize(self, init: str) -> None:
        """Initialise the hidden layers: ``"torch"`` keeps PyTorch's defaults; ``"orthogonal"``
        gives every `nn.Linear` and `nn.Conv2d` outside the heads and the attention block an
        orthogonal weight of gain sqrt(2) and a zero bias (PPO practice: CleanRL, PufferLib).

        Why: under PyTorch's default each Linear + GELU keeps about 1/12 of its input's
        variance, so after the group MLP and four trunk layers the trunk output hardly depends
        on the observation at initialisation (its spread across states was 2-10 % of its
        magnitude at initialisation). An orthogonal weight of gain sqrt(2) keeps the spread
        through each layer. The heads keep their own init (`build_trunk`)."""
        if init not in WEIGHT_INITS:
            raise ValueError(f"init must be one of {WEIGHT_INITS}, got {init!r}")
        if init == "torch":
            return
        keep = {id(self.actor), id(self.critic)}
        keep |= {id(m.out_proj) for m in self.modules() if isinstance(m, nn.MultiheadAttention)}
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Conv2d)) and id(module) not in keep:
                nn.init.orthogonal_(module.weight, math.sqrt(2.0))
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    @staticmethod
    def flat_widths(observation_spec, *keys: str) -> tuple[int, ...]:
        """Per-sample widths of the ``("observation", key)`` entries, each of which must be a
        flat vector (the group MLPs read them)."""
        shapes = [spec_shape(observation_spec, key) for key in keys]
        if any(len(shape) != 1 for shape in shapes):
            got = ", ".join(f"{key} {shape}" for key, shape in zip(keys, shapes, strict=True))
            raise ValueError(f"{', '.join(keys)} must be flat vectors, got {got}")
        return tuple(shape[0] for shape in shapes)

    @staticmethod
    def conditioning_encoder(observation_spec, group_width: int, norm: bool = False) -> GroupMLP:
        """Conditioning + the 3 goal waypoints -> one group embedding (Table 4)."""
        (conditioning,) = ActorCritic.flat_widths(observation_spec, "conditioning")
        goal_width = math.prod(spec_shape(observation_spec, "goals"))
        return GroupMLP(conditioning + goal_width, group_width, norm)

    @staticmethod
    def conditioning_input(conditioning: torch.Tensor, goals: torch.Tensor) -> torch.Tensor:
        return torch.cat([conditioning, goals.reshape(goals.shape[0], -1)], dim=1)

    def heads(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, backbone_width) -> logits (B, num_actions), value (B,)."""
        hidden = self.trunk(features)
        value_hidden = hidden if self.critic_trunk is None else self.critic_trunk(features)
        return self.actor(hidden), self.critic(value_hidden).squeeze(-1)

    def forward(self, observation) -> tuple[torch.Tensor, torch.Tensor]:
        """``observation``: the env's TensorDict (with an "observation" entry) or that entry."""
        if "observation" in observation.keys():
            observation = observation.get("observation")
        return self.forward_tensors(*(observation.get(k) for k in self.OBSERVATION_KEYS))

    def parameter_counts(self) -> dict[str, int]:
        """Parameters per top-level part (its encoders, trunk, actor, critic)."""
        return {name: sum(p.numel() for p in child.parameters()) for name, child in self.named_children()}

    def summary(self) -> str:
        counts = self.parameter_counts()
        lines = [f"  {name:<13}{n:>12,}" for name, n in counts.items()]
        total = f"  {'total':<13}{sum(counts.values()):>12,}"
        return "\n".join([f"{type(self).__name__} parameters:", *lines, total])
