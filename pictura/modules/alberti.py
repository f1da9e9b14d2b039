"""Alberti: the perspective actor-critic of the paper (Fig. 4, Table 4).

    pixels (B, C, H, W, 3) uint8 -> CameraEncoder -> scene (B, 4 * group_width = 256)
    ego (B, 7)                   -> GroupMLP      -> (B, group_width = 64)
    conditioning (B, D_c) + goals (B, 3, 2) -> GroupMLP -> (B, group_width = 64)
    concat (B, 384) -> trunk: trunk_layers x Linear(trunk_width) + GELU -> actor (12), critic (1)

Every input width is read from the env's observation spec, so no size is typed twice; the
scene embedding has the width of the four entity-set embeddings it replaces in the vectorized
policy (4 x group_width), which keeps the trunk identical across modalities.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from pictura.modules.encoders import ActorCritic, CameraEncoder, GroupMLP, _check_positive, spec_shape

OBSERVATION_KEYS = ("pixels", "ego", "conditioning", "goals")


class AlbertiPolicy(ActorCritic):
    """Perspective actor-critic. ``forward(observation) -> (logits (B, A), value (B,))``.

    Args:
        observation_spec: the env's `observation_spec` (a `Composite` holding
            ``("observation", "pixels"|"ego"|"conditioning"|"goals")``); sizes come from it.
        num_actions: actor logits (the env's ``action_spec.n``, 12).
        group_width: width of each group embedding (ego, conditioning) (64).
        scene_width: width of the camera embedding; default ``4 * group_width`` (256), the width
            of the four entity-set embeddings it replaces.
        trunk_width, trunk_layers: backbone MLP (4 x 512, GELU).
        conv_channels, conv_strides: the shared conv stack; first layer a stride-sized patch stem.
        queries_per_camera: learned query tokens per camera (16).
        attention_heads: heads of the cross-attention block (4).
        camera_width: each camera's tokens are projected to this width (128; 4 cameras -> 512).
        init: the hidden layers' initialisation, "torch" (PyTorch's defaults) or "orthogonal"
            (`ActorCritic.initialize`; the attention block keeps its own).
    """

    OBSERVATION_KEYS = OBSERVATION_KEYS

    def __init__(
        self,
        observation_spec,
        num_actions: int = 12,
        group_width: int = 64,
        scene_width: int | None = None,
        trunk_width: int = 512,
        trunk_layers: int = 4,
        conv_channels: Sequence[int] = (32, 64, 96, 128, 128),
        conv_strides: Sequence[int] = (4, 2, 2, 1, 1),
        queries_per_camera: int = 16,
        attention_heads: int = 4,
        camera_width: int = 128,
        init: str = "torch",
    ):
        super().__init__()
        scene_width = 4 * group_width if scene_width is None else scene_width
        _check_positive(
            num_actions=num_actions,
            group_width=group_width,
            scene_width=scene_width,
            trunk_width=trunk_width,
            trunk_layers=trunk_layers,
        )
        pixels = spec_shape(observation_spec, "pixels")
        if len(pixels) != 4 or pixels[-1] != 3:
            raise ValueError(f"('observation', 'pixels') must be (C, H, W, 3) per sample, got {pixels}")
        ego_width, _ = self.flat_widths(observation_spec, "ego", "conditioning")
        num_cameras, height, width, _ = pixels
        self.camera = CameraEncoder(
            num_cameras=num_cameras,
            conv_channels=conv_channels,
            conv_strides=conv_strides,
            queries_per_camera=queries_per_camera,
            attention_heads=attention_heads,
            camera_width=camera_width,
            out_width=scene_width,
        )
        if min(self.camera.conv.feature_size(height, width)) < 1:
            raise ValueError(
                f"conv_strides {tuple(conv_strides)} leave no feature map for {width}x{height} views"
            )
        self.ego = GroupMLP(ego_width, group_width)
        self.conditioning = self.conditioning_encoder(observation_spec, group_width)
        self.build_trunk(scene_width + 2 * group_width, trunk_width, trunk_layers, num_actions)
        self.initialize(init)

    def forward_tensors(
        self, pixels: torch.Tensor, ego: torch.Tensor, conditioning: torch.Tensor, goals: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """pixels (B, C, H, W, 3) uint8, ego (B, 7), conditioning (B, D_c), goals (B, 3, 2)
        -> logits (B, num_actions), value (B,)."""
        features = torch.cat(
            [self.camera(pixels), self.ego(ego), self.conditioning(self.conditioning_input(conditioning, goals))],
            dim=1,
        )
        return self.heads(features)
