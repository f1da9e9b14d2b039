"""The compiled policy (``compile_policy``) against the eager one on CUDA: the same logits,
values and gradients, at Table 4's shapes and at the padded batch sizes training uses, and a
fit through the CLI with it on. The configs compile the policy on the GPU, so this is what
makes that default safe."""

from __future__ import annotations

import copy

import pytest
import torch

from pictura.modules.alberti import AlbertiPolicy
from pictura.modules.cli import run_lightning_cli
from pictura.modules.vectorized import VectorizedPolicy
from tests.modules import test_vectorized_policy
from tests.modules.fake_env import FakeDrivingEnv, FakeRig
from tests.modules.test_validate import CONFIG

pytestmark = pytest.mark.gpu


def _alberti(batch: int):
    env = FakeDrivingEnv(
        num_worlds=1, slots_per_world=batch, agents_per_world=(batch, batch), rig=FakeRig(96, 54, 4)
    )
    observation = env.reset()["observation"]
    # rendered-looking input, not a constant frame
    observation["pixels"] = torch.randint(0, 256, observation["pixels"].shape, dtype=torch.uint8)
    return AlbertiPolicy(env.observation_spec), observation


def _vectorized(batch: int):
    spec = test_vectorized_policy._spec(batch)
    return VectorizedPolicy(spec), test_vectorized_policy._observation(
        spec, torch.Generator().manual_seed(0)
    )["observation"]


@pytest.mark.parametrize("make", [_alberti, _vectorized], ids=["alberti", "vectorized"])
@pytest.mark.parametrize("batch", [1024, 3072])
def test_compiled_policy_matches_eager(make, batch, monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    torch.manual_seed(0)
    eager, observation = make(batch)
    eager, observation = eager.cuda(), observation.to("cuda")
    compiled_twin = copy.deepcopy(eager)
    compiled = torch.compile(compiled_twin)
    logits, value = eager(observation)
    logits_c, value_c = compiled(observation)
    torch.testing.assert_close(logits_c, logits, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(value_c, value, rtol=1e-4, atol=1e-4)

    (logits.logsumexp(-1).sum() + value.square().sum()).backward()
    (logits_c.logsumexp(-1).sum() + value_c.square().sum()).backward()
    for (name, p), p_c in zip(eager.named_parameters(), compiled_twin.parameters(), strict=True):
        torch.testing.assert_close(p_c.grad, p.grad, rtol=1e-3, atol=1e-3, msg=lambda m, n=name: f"{n}: {m}")


def test_fit_with_compiled_policy_on_cuda(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG.format(root=tmp_path))
    cli = run_lightning_cli(
        ["fit", "-c", str(config), "--trainer.accelerator=gpu", "--model.init_args.compile_policy=true"]
    )
    assert cli.model.__dict__.get("_compiled_policy") is not None
    for tag in ("train/loss/policy", "train/loss/value", "train/loss/entropy"):
        assert torch.isfinite(cli.trainer.callback_metrics[tag]), tag
