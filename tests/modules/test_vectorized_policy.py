"""The vectorized policy: widths from the observation spec, masked pooling, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict
from torchrl.data import Composite, Unbounded

from pictura.envs.observations import VectorizedObservation
from pictura.maps.roadmap import RoadMap, pack_polylines
from pictura.modules.vectorized import OBSERVATION_KEYS, SET_KEYS, VectorizedPolicy, masked_max
from pictura.sim.features import CONDITIONING_WIDTH, EGO_WIDTH
from pictura.sim.snapshot import WorldLayout

B = 5


def _spec(num_slots: int = B, **caps) -> Composite:
    """The env's observation spec: ego / conditioning / goals plus the vectorized fragment."""
    points, offsets = pack_polylines([np.array([[0, 0, 0], [10, 0, 0]], np.float32)])
    road_map = RoadMap(
        name="tiny",
        lane_points=points,
        lane_offsets=offsets,
        lane_width=np.array([3.5], np.float32),
        lane_speed_limit=np.zeros(1, np.float32),
        lane_junction=np.full(1, -1, np.int32),
        lane_successor_offsets=np.zeros(2, np.int32),
    )
    obs = VectorizedObservation([road_map], WorldLayout.uniform([0], num_slots, [0]), "cpu", **caps)
    fragment = obs.spec(num_slots, "cpu")
    inner = Composite(
        ego=Unbounded(shape=(num_slots, EGO_WIDTH)),
        conditioning=Unbounded(shape=(num_slots, CONDITIONING_WIDTH)),
        goals=Unbounded(shape=(num_slots, 3, 2)),
        shape=(num_slots,),
    )
    inner.update(fragment)
    return Composite(observation=inner, shape=(num_slots,))


def _observation(spec: Composite, generator: torch.Generator) -> TensorDict:
    """Random features with random masks (every set keeps at least one member in row 0)."""
    inner = spec["observation"]
    data = {}
    for key in inner.keys():
        shape = inner[key].shape
        if key.endswith("_mask"):
            mask = torch.rand(shape, generator=generator) < 0.5
            if shape[-1] > 0:
                mask[0, 0] = True
            data[key] = mask
        else:
            data[key] = torch.randn(shape, generator=generator)
    return TensorDict({"observation": TensorDict(data, batch_size=spec.shape)}, batch_size=spec.shape)


def test_table4_shapes_and_parameter_counts():
    policy = VectorizedPolicy(_spec())
    assert policy.backbone_width == 384
    assert policy.partners.mlp.net[0].in_features == 7 + 1
    assert policy.lanes.mlp.net[0].in_features == 6 and policy.boundaries.mlp.net[0].in_features == 6
    assert policy.traffic.mlp.net[0].in_features == 8
    assert policy.ego.net[0].in_features == 7 + 2
    assert policy.conditioning.net[0].in_features == CONDITIONING_WIDTH + 6
    assert policy.set_sizes == {"partners": 16, "lanes": 80, "boundaries": 80, "traffic": 10}
    linears = [m for m in policy.trunk if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(384, 512)] + [(512, 512)] * 3
    assert policy.actor.out_features == 12 and policy.critic.out_features == 1
    counts = policy.parameter_counts()
    assert sum(counts.values()) == sum(p.numel() for p in policy.parameters())
    print("\n" + policy.summary())


def test_forward_shapes_and_entry_or_root():
    torch.manual_seed(0)
    spec = _spec()
    policy = VectorizedPolicy(spec)
    td = _observation(spec, torch.Generator().manual_seed(0))
    logits, value = policy(td)
    assert logits.shape == (B, 12) and value.shape == (B,)
    assert torch.isfinite(logits).all() and torch.isfinite(value).all()
    logits2, value2 = policy(td["observation"])
    assert torch.equal(logits, logits2) and torch.equal(value, value2)


@pytest.mark.parametrize("group_norm", [False, True])
def test_masks_exclude_padding(group_norm):
    torch.manual_seed(0)
    spec = _spec()
    policy = VectorizedPolicy(spec, group_norm=group_norm)
    gen = torch.Generator().manual_seed(1)
    td = _observation(spec, gen)
    # Row 1 has every set empty.
    for key in SET_KEYS:
        td["observation", f"{key}_mask"][1] = False
    obs = td["observation"]
    leaves = {k: obs[k].clone().requires_grad_(not k.endswith("_mask")) for k in OBSERVATION_KEYS}
    logits, value = policy.forward_tensors(*(leaves[k] for k in OBSERVATION_KEYS))
    (logits.sum() + value.sum()).backward()
    # Padded members get no gradient ...
    for key in SET_KEYS:
        pad = ~obs[f"{key}_mask"]
        assert torch.all(leaves[key].grad[pad] == 0), key
    assert torch.all(leaves["partners_aux"].grad[~obs["partners_mask"]] == 0)
    # ... and changing their values changes no output.
    changed = obs.clone()
    for key in SET_KEYS:
        pad = ~obs[f"{key}_mask"]
        changed[key] = torch.where(pad.unsqueeze(-1), 1e3 * torch.randn(changed[key].shape, generator=gen), obs[key])
    aux_pad = ~obs["partners_mask"].unsqueeze(-1)
    changed["partners_aux"] = torch.where(aux_pad, torch.full_like(obs["partners_aux"], -7.0), obs["partners_aux"])
    with torch.no_grad():
        a = policy(obs)
        b = policy(changed)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert torch.isfinite(a[0][1]).all()  # all-empty row: pooled embeddings are zeros


def test_group_norm_encoder_matches_numpy_and_adds_only_the_norms():
    """``group_norm``: Linear -> LayerNorm -> GELU -> Linear per group, against NumPy; the
    policy gains exactly the six LayerNorms' weights and biases."""
    from math import erf

    from pictura.modules.encoders import GroupMLP

    torch.manual_seed(3)
    mlp = GroupMLP(5, 8, norm=True)
    with torch.no_grad():  # non-trivial LayerNorm affine parameters
        mlp.net[1].weight.uniform_(0.5, 1.5)
        mlp.net[1].bias.uniform_(-0.5, 0.5)
    x = torch.randn(4, 5)
    w1, b1 = mlp.net[0].weight.double().detach().numpy(), mlp.net[0].bias.double().detach().numpy()
    g, beta = mlp.net[1].weight.double().detach().numpy(), mlp.net[1].bias.double().detach().numpy()
    w2, b2 = mlp.net[3].weight.double().detach().numpy(), mlp.net[3].bias.double().detach().numpy()
    h = x.double().numpy() @ w1.T + b1
    h = (h - h.mean(1, keepdims=True)) / np.sqrt(h.var(1, keepdims=True) + 1e-5) * g + beta
    h = 0.5 * h * (1 + np.vectorize(erf)(h / np.sqrt(2)))
    np.testing.assert_allclose(mlp(x).detach().double().numpy(), h @ w2.T + b2, rtol=1e-5, atol=1e-5)

    plain, normed = VectorizedPolicy(_spec()), VectorizedPolicy(_spec(), group_norm=True)
    extra = sum(p.numel() for p in normed.parameters()) - sum(p.numel() for p in plain.parameters())
    assert extra == 6 * 2 * 64
    assert sum(isinstance(m, torch.nn.LayerNorm) for m in normed.modules()) == 6
    assert not any(isinstance(m, torch.nn.LayerNorm) for m in plain.modules())


def test_masked_max_against_a_loop():
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(4, 6, 3, generator=gen)
    mask = torch.rand(4, 6, generator=gen) < 0.5
    mask[3] = False
    got = masked_max(x, mask)
    for b in range(4):
        want = x[b][mask[b]].max(0).values if mask[b].any() else torch.zeros(3)
        assert torch.equal(got[b], want)
    assert masked_max(torch.zeros(2, 0, 3), torch.zeros(2, 0, dtype=torch.bool)).shape == (2, 3)


def test_capacities_come_from_the_spec():
    spec = _spec(max_partners=4, max_lanes=0, max_boundaries=7, max_traffic=3)
    policy = VectorizedPolicy(spec)
    assert policy.set_sizes == {"partners": 4, "lanes": 0, "boundaries": 7, "traffic": 3}
    td = _observation(spec, torch.Generator().manual_seed(3))
    logits, value = policy(td)
    assert logits.shape == (B, 12) and torch.isfinite(value).all()


SEGMENT_GAIN = torch.tensor([4.0, 4.0, 1, 1, 1, 1])  # midpoint x, y of a lane / boundary piece


@pytest.mark.parametrize(
    ("option", "by_hand"),
    (
        # partner rows: x, y and distance (columns 0, 1, 6 of the layout docstring)
        ("partner_position_gain", {"partners": torch.tensor([4.0, 4.0, 1, 1, 1, 1, 4.0])}),
        # map rows: lane and boundary midpoints, stop-line endpoints x1, y1, x2, y2
        ("map_position_gain", {"lanes": SEGMENT_GAIN, "boundaries": SEGMENT_GAIN,
                               "traffic": torch.tensor([4.0, 4.0, 4.0, 4.0, 1, 1, 1, 1])}),
    ),
)  # fmt: skip
def test_position_gains_scale_only_the_positions(option, by_hand):
    # Reference: the default policy, same weights, fed rows whose position columns are
    # multiplied by hand.
    torch.manual_seed(0)
    spec = _spec()
    gained = VectorizedPolicy(spec, **{option: 4.0})
    plain = VectorizedPolicy(spec)
    plain.load_state_dict(gained.state_dict())
    assert set(gained.state_dict()) == set(plain.state_dict())  # checkpoints keep their keys
    obs = _observation(spec, torch.Generator().manual_seed(1))["observation"]
    scaled = obs.clone()
    for key, factor in by_hand.items():
        scaled[key] = obs[key] * factor
    for have, want in zip(gained(obs), plain(scaled), strict=True):
        assert torch.allclose(have, want, atol=1e-6)
    assert not torch.allclose(gained(obs)[0], plain(obs)[0])


def test_critic_trunk_keeps_the_value_loss_off_the_actor_trunk():
    torch.manual_seed(0)
    spec = _spec()
    obs = _observation(spec, torch.Generator().manual_seed(2))["observation"]
    assert "critic_trunk.0.weight" not in VectorizedPolicy(spec).state_dict()  # default: Table 4
    policy = VectorizedPolicy(spec, critic_trunk=True)
    logits, value = policy(obs)
    # The value reads the critic's own trunk: its gradient reaches the encoders and that trunk,
    # not the actor's; the logits' gradient reaches no part of the critic's trunk.
    grads = torch.autograd.grad(value.sum(), list(policy.parameters()), allow_unused=True, retain_graph=True)
    by_name = dict(zip([n for n, _ in policy.named_parameters()], grads, strict=True))
    assert all(by_name[n] is None for n in by_name if n.startswith("trunk."))
    assert all(by_name[n] is not None for n in by_name if n.startswith(("critic_trunk.", "partners.")))
    grads = torch.autograd.grad(logits.sum(), list(policy.parameters()), allow_unused=True)
    by_name = dict(zip([n for n, _ in policy.named_parameters()], grads, strict=True))
    assert all(by_name[n] is None for n in by_name if n.startswith(("critic_trunk.", "critic.")))
    assert all(by_name[n] is not None for n in by_name if n.startswith("trunk."))
    assert policy.parameter_counts()["critic_trunk"] == policy.parameter_counts()["trunk"]


def test_clear_errors():
    spec = _spec()
    with pytest.raises(ValueError, match="partner_position_gain"):
        VectorizedPolicy(spec, partner_position_gain=0.0)
    with pytest.raises(ValueError, match="map_position_gain"):
        VectorizedPolicy(spec, map_position_gain=-1.0)
    with pytest.raises(ValueError, match="backbone_width"):
        VectorizedPolicy(spec, backbone_width=256)
    with pytest.raises(ValueError, match="group_width"):
        VectorizedPolicy(spec, group_width=0)
    broken = spec.clone()
    del broken["observation", "lanes_mask"]
    with pytest.raises(ValueError, match="lanes_mask"):
        VectorizedPolicy(broken)
    broken = spec.clone()
    broken["observation", "partners_aux"] = Unbounded(shape=(B, 3, 1))
    with pytest.raises(ValueError, match="partners_aux"):
        VectorizedPolicy(broken)
    broken = spec.clone()
    broken["observation", "traffic"] = Unbounded(shape=(B, 10))
    with pytest.raises(ValueError, match="traffic"):
        VectorizedPolicy(broken)
