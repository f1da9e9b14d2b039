"""Fit, checkpoint, resume and validate on a CUDA device (the tiny real-env config of
tests/modules/test_validate.py), so the CUDA random-number state and the device copies of the
env state travel through a checkpoint. Bits are not compared: cuDNN's backward is not
bit-deterministic on the GPU."""

from __future__ import annotations

import pytest
import torch

from pictura.modules.cli import run_lightning_cli
from pictura.modules.ppo import RESUME_KEY
from tests.modules.test_validate import CONFIG

pytestmark = pytest.mark.gpu


def test_fit_resume_and_validate_on_cuda(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG.format(root=tmp_path))
    gpu = ["--trainer.accelerator=gpu"]
    run_lightning_cli(["fit", "-c", str(config), *gpu])
    ckpt = tmp_path / "tiny" / "fit" / "checkpoints" / "last.ckpt"
    saved = torch.load(ckpt, map_location="cpu", weights_only=False)
    (rank,) = saved[RESUME_KEY]["ranks"]
    assert "cuda" in rank["rng"] and rank["env"]["pos"].device.type == "cpu"

    resumed = run_lightning_cli(["fit", "-c", str(config), *gpu, "--model.init_args.max_iterations=3",
                                 "--trainer.logger.init_args.version=resumed", f"--ckpt_path={ckpt}"])
    assert int(resumed.model.iteration) == 3

    validated = run_lightning_cli(["validate", "-c", str(config), "--trainer.accelerator=gpu",
                                   "--trainer.logger.init_args.version=validate", f"--ckpt_path={ckpt}"])
    assert "val/eval/4/goals" in validated.trainer.callback_metrics


def test_value_normalization_trains_on_cuda(tmp_path):
    """The opt-in value normalisation through a bf16 fit on the GPU: finite statistics, logged,
    and the new scale scalars alongside (the per-term gradient norms: an eager bf16 forward and
    torch.autograd.grad on CUDA)."""
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG.format(root=tmp_path))
    cli = run_lightning_cli(["fit", "-c", str(config), "--trainer.accelerator=gpu", "--trainer.precision=bf16-mixed",
                             "--model.init_args.value_normalization=true"])
    metrics = cli.trainer.callback_metrics
    assert torch.isfinite(cli.model.return_norm.std()) and bool(cli.model.return_norm.initialised)
    for tag in ("train/value/norm_std", "train/grad_norm", "train/advantage/abs_p99", "train/return/std",
                "train/grad_norm/policy", "train/grad_norm/value", "train/grad_norm/entropy"):
        assert torch.isfinite(metrics[tag]), tag
