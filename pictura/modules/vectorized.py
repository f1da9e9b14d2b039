"""The vectorized actor-critic (paper Table 4), privileged or blind by its observation only.

    partners (B, 16, 7) + partners_aux (B, 16, 1) -> SetEncoder -> (B, 64)
    lanes (B, 80, 6)                              -> SetEncoder -> (B, 64)
    boundaries (B, 80, 6)                         -> SetEncoder -> (B, 64)
    traffic (B, 10, 8)                            -> SetEncoder -> (B, 64)
    ego (B, 7) + ego_aux (B, 2)                   -> GroupMLP   -> (B, 64)
    conditioning (B, D_c) + goals (B, 3, 2)       -> GroupMLP   -> (B, 64)
    concat (B, 6 x 64 = 384) -> trunk: 4 x Linear(512) + GELU -> actor (12), critic (1)

A `SetEncoder` runs the 2-layer group MLP on every member and max-pools over the members its
mask keeps, so padded rows never reach the output. The privileged and blind agents share this
network: the blind observation carries zeros in the aux slots (partner speed, ego aux).
Every width comes from the env's observation spec (`pictura.envs.observations`).
"""

from __future__ import annotations

import torch
from torch import nn

from pictura.modules.encoders import ActorCritic, GroupMLP, _check_positive, spec_shape

PARTNER_POSITION_COLUMNS = (0, 1, 6)
"""Columns of a partner row (`pictura.envs.observations.PARTNER_WIDTH`) in units of 200 m:
relative x, y and distance."""
MAP_POSITION_COLUMNS = {"lanes": (0, 1), "boundaries": (0, 1), "traffic": (0, 1, 2, 3)}
"""Columns in units of 200 m of the map sets' rows: a lane or boundary piece's midpoint x, y
(`pictura.envs.observations.SEGMENT_WIDTH`), a stop line's endpoints x1, y1, x2, y2
(``TRAFFIC_WIDTH``)."""

SET_KEYS = ("partners", "lanes", "boundaries", "traffic")
"""Entity sets, each with ``<name>_mask``; the partner set also reads ``partners_aux``."""
OBSERVATION_KEYS = (
    "ego", "ego_aux", "conditioning", "goals",
    "partners", "partners_aux", "partners_mask",
    "lanes", "lanes_mask", "boundaries", "boundaries_mask", "traffic", "traffic_mask",
)  # fmt: skip
"""The ``("observation", key)`` entries `VectorizedPolicy.forward` reads, in `forward_tensors` order."""


def masked_max(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Max over dim 1 of (B, K, D) ``x`` among members where ``mask`` (B, K) is True; 0 for an
    empty set. Masked members get no value and no gradient."""
    if x.shape[1] == 0:
        return x.new_zeros(x.shape[0], x.shape[2])
    mask = mask.bool().unsqueeze(-1)  # a rollout buffer may hand masks back as 0/1 floats
    pooled = torch.where(mask, x, torch.full_like(x, float("-inf"))).amax(dim=1)
    return torch.where(mask.any(dim=1), pooled, torch.zeros_like(pooled))


class SetEncoder(nn.Module):
    """(B, K, in_width) members + (B, K) bool mask -> (B, out_width): per-member `GroupMLP`
    (with ``norm``, a LayerNorm inside it), masked max-pool (Table 4 "per-group encoder")."""

    def __init__(self, in_width: int, out_width: int = 64, norm: bool = False):
        super().__init__()
        self.mlp = GroupMLP(in_width, out_width, norm)
        self.in_width, self.out_width = in_width, out_width

    def forward(self, members: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return masked_max(self.mlp(members), mask)


def _set_shape(observation_spec, key: str) -> tuple[int, int]:
    shape = spec_shape(observation_spec, key)
    mask = spec_shape(observation_spec, f"{key}_mask")
    if len(shape) != 2 or mask != shape[:1]:
        raise ValueError(
            f"('observation', {key!r}) must be (K, F) with a (K,) {key}_mask per sample, got {shape} and {mask}"
        )
    return shape


class VectorizedPolicy(ActorCritic):
    """Vectorized actor-critic. ``forward(observation) -> (logits (B, A), value (B,))``.

    Args:
        observation_spec: the env's `observation_spec` with the vectorized entries
            (`pictura.envs.observations.VectorizedObservation.spec`) plus ``ego``,
            ``conditioning`` and ``goals``; every input width comes from it.
        num_actions: actor logits (the env's ``action_spec.n``, 12).
        group_width: width of each of the six group embeddings (64).
        backbone_width: expected trunk input; None = ``6 * group_width`` (384). Given, it must
            equal ``6 * group_width`` (a check that the trunk is the one of Table 4).
        trunk_width, trunk_layers: backbone MLP (4 x 512, GELU), the same as `AlbertiPolicy`.
        group_norm: not in Table 4 (off): a LayerNorm inside each of the six group encoders,
            between the first layer and the GELU, as PufferDrive's entity encoders have. It
            exists because the vectorized agent's gradient norm runs an order of magnitude above
            Alberti's, whose image branch has LayerNorms; with it goals and off-road improved
            faster per agent-step but at-fault collisions rose (docs/results.md).
        partner_position_gain: not in Table 4 (1.0): the partner set's relative x, y and
            distance are multiplied by it before their encoder, i.e. measured in units of
            200 m / gain instead of the peers' 200 m. A car 5 m away differs from one 10 m away
            by 0.025 in those inputs, and AdamW moves a weight by at most about the learning
            rate per step, so in a short run the first layer can hardly grow enough to tell near
            cars apart.
        critic_trunk: not in Table 4 (off): the critic head reads a trunk of its own (4 x 512,
            ~0.98 M more parameters), so the value loss no longer steers the actor's trunk
            (the value term's gradient can be several times the policy term's,
            `train/grad_norm/{value,policy}`). It did not lower collisions; a smaller `vf_coef`
            did (docs/results.md).
        map_position_gain: not in Table 4 (1.0): the same for the map sets, whose positions
            (`MAP_POSITION_COLUMNS`) are multiplied by it: a road edge 1 m away differs from
            one 2 m away by 0.005 of an input. With both gains at 10 the agent learns to drive
            in Alberti's budget, without them it hardly does (docs/results.md);
            `configs/position_gain.yaml` sets both.
        init: the hidden layers' initialisation, "torch" (PyTorch's defaults) or "orthogonal"
            (`ActorCritic.initialize`). Orthogonal learns to drive faster but its at-fault
            collisions fall less (docs/results.md), so the configs keep "torch".
    """

    OBSERVATION_KEYS = OBSERVATION_KEYS

    def __init__(
        self,
        observation_spec,
        num_actions: int = 12,
        group_width: int = 64,
        backbone_width: int | None = None,
        trunk_width: int = 512,
        trunk_layers: int = 4,
        group_norm: bool = False,
        partner_position_gain: float = 1.0,
        critic_trunk: bool = False,
        map_position_gain: float = 1.0,
        init: str = "torch",
    ):
        super().__init__()
        _check_positive(num_actions=num_actions, group_width=group_width, trunk_width=trunk_width, trunk_layers=trunk_layers)
        for name, gain in (("partner_position_gain", partner_position_gain), ("map_position_gain", map_position_gain)):
            if not gain > 0.0:
                raise ValueError(f"{name} must be > 0, got {gain}")
        groups = len(SET_KEYS) + 2
        if backbone_width is not None and backbone_width != groups * group_width:
            raise ValueError(
                f"backbone_width={backbone_width} does not match the trunk input {groups} x group_width={group_width}"
                f" = {groups * group_width}"
            )
        ego_width, ego_aux_width, _ = self.flat_widths(observation_spec, "ego", "ego_aux", "conditioning")
        widths = {key: _set_shape(observation_spec, key) for key in SET_KEYS}
        aux = spec_shape(observation_spec, "partners_aux")
        if len(aux) != 2 or aux[0] != widths["partners"][0]:
            raise ValueError(f"('observation', 'partners_aux') must be ({widths['partners'][0]}, F), got {aux}")
        self.set_sizes = {key: k for key, (k, _) in widths.items()}
        self.gains = {"partners": float(partner_position_gain)}
        self.gains.update({key: float(map_position_gain) for key in MAP_POSITION_COLUMNS})
        columns = {"partners": PARTNER_POSITION_COLUMNS, **MAP_POSITION_COLUMNS}
        for key, gain in self.gains.items():
            scale = torch.ones(widths[key][1])
            scale[list(columns[key])] = gain
            self.register_buffer(f"{key}_scale", scale, persistent=False)  # not in checkpoints: keys stay
        self.partners = SetEncoder(widths["partners"][1] + aux[1], group_width, group_norm)
        self.lanes = SetEncoder(widths["lanes"][1], group_width, group_norm)
        self.boundaries = SetEncoder(widths["boundaries"][1], group_width, group_norm)
        self.traffic = SetEncoder(widths["traffic"][1], group_width, group_norm)
        self.ego = GroupMLP(ego_width + ego_aux_width, group_width, group_norm)
        self.conditioning = self.conditioning_encoder(observation_spec, group_width, group_norm)
        self.build_trunk(groups * group_width, trunk_width, trunk_layers, num_actions, critic_trunk)
        self.initialize(init)

    def forward_tensors(
        self,
        ego: torch.Tensor,
        ego_aux: torch.Tensor,
        conditioning: torch.Tensor,
        goals: torch.Tensor,
        partners: torch.Tensor,
        partners_aux: torch.Tensor,
        partners_mask: torch.Tensor,
        lanes: torch.Tensor,
        lanes_mask: torch.Tensor,
        boundaries: torch.Tensor,
        boundaries_mask: torch.Tensor,
        traffic: torch.Tensor,
        traffic_mask: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Tensors in `OBSERVATION_KEYS` order (shapes in the module docstring)
        -> logits (B, num_actions), value (B,)."""
        partners, lanes, boundaries, traffic = (
            x if self.gains[key] == 1.0 else x * getattr(self, f"{key}_scale")
            for key, x in zip(SET_KEYS, (partners, lanes, boundaries, traffic), strict=True)
        )
        features = torch.cat(
            [
                self.partners(torch.cat([partners, partners_aux], dim=-1), partners_mask),
                self.lanes(lanes, lanes_mask),
                self.boundaries(boundaries, boundaries_mask),
                self.traffic(traffic, traffic_mask),
                self.ego(torch.cat([ego, ego_aux], dim=-1)),
                self.conditioning(self.conditioning_input(conditioning, goals)),
            ],
            dim=1,
        )
        return self.heads(features)
