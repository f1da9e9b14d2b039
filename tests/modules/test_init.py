"""`ActorCritic.initialize`: the hidden layers' orthogonal init, for both policies."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pictura.modules.alberti import AlbertiPolicy
from pictura.modules.vectorized import VectorizedPolicy
from tests.modules import test_alberti, test_vectorized_policy


def _build(kind: str, init: str, seed: int = 0):
    torch.manual_seed(seed)
    if kind == "alberti":
        return AlbertiPolicy(test_alberti._spec(32, 18)[1], init=init)
    return VectorizedPolicy(test_vectorized_policy._spec(), init=init)


def _hidden_layers(policy) -> dict[str, nn.Module]:
    attention = {f"{n}.out_proj" for n, m in policy.named_modules() if isinstance(m, nn.MultiheadAttention)}
    return {
        name: m
        for name, m in policy.named_modules()
        if isinstance(m, (nn.Linear, nn.Conv2d)) and name not in {"actor", "critic", *attention}
    }


@pytest.mark.parametrize("kind", ["alberti", "vectorized"])
def test_orthogonal_init_gives_every_hidden_layer_orthogonal_rows_of_norm_sqrt2(kind):
    policy = _build(kind, "orthogonal")
    layers = _hidden_layers(policy)
    assert len(layers) >= 8  # the trunk's 4 and the group MLPs' at least
    for name, layer in layers.items():
        w = layer.weight.detach().reshape(layer.weight.shape[0], -1).double()  # (out, fan_in)
        gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
        assert torch.allclose(gram, 2.0 * torch.eye(gram.shape[0], dtype=torch.float64), atol=1e-5), name
        assert layer.bias is None or not layer.bias.any(), name


@pytest.mark.parametrize("kind", ["alberti", "vectorized"])
def test_the_heads_and_the_attention_keep_their_own_init(kind):
    default, orthogonal = _build(kind, "torch"), _build(kind, "orthogonal")
    # the heads are built (and seeded) before `initialize`: both inits leave them identical
    for name in ("actor.weight", "actor.bias", "critic.weight", "critic.bias"):
        assert torch.equal(default.state_dict()[name], orthogonal.state_dict()[name]), name
    actor = orthogonal.actor.weight.detach().double()
    assert torch.allclose(actor @ actor.T, 1e-4 * torch.eye(actor.shape[0], dtype=torch.float64), atol=1e-9)
    attention = [k for k in default.state_dict() if ".attention." in k]
    assert (kind == "alberti") == bool(attention)
    for name in attention:
        assert torch.equal(default.state_dict()[name], orthogonal.state_dict()[name]), name


def test_orthogonal_init_keeps_the_value_dependent_on_the_observation():
    """Why the option exists: under PyTorch's default init the trunk output hardly depends on
    the input (each Linear + GELU keeps ~1/12 of the variance). Through 4 orthogonal trunk
    layers of gain sqrt(2) a spread of inputs survives; under the default it shrinks ~1/12 per
    layer, so the value's spread over states differs by orders of magnitude."""
    spreads = {}
    for init in ("torch", "orthogonal"):
        policy = _build("vectorized", init)
        features = torch.randn(256, policy.backbone_width, generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            _, value = policy.heads(features)
        spreads[init] = value.std().item()
    assert spreads["orthogonal"] > 0.1  # critic rows have norm 1: O(1) as the hidden layers keep the spread
    assert spreads["orthogonal"] > 20 * spreads["torch"]


@pytest.mark.parametrize("kind", ["alberti", "vectorized"])
def test_an_unknown_init_names_the_field(kind):
    with pytest.raises(ValueError, match="init must be one of"):
        _build(kind, "xavier")

