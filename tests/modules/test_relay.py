"""`benchmarks/relay.py`: a checkpoint split into small files joins back bit for bit, worlds
that do not fit are dropped (never the weights), and two legs through the real CLI continue one
run: the second resumes the first's iteration, agent-steps and worlds."""

from __future__ import annotations

import json

import pytest
import torch

from benchmarks.relay import STATE_FILE, join_checkpoint, main, split_checkpoint
from pictura.modules.ppo import RESUME_KEY
from tests.modules.test_cli import TINY


def _checkpoint() -> dict:
    g = torch.Generator().manual_seed(0)
    weights = {f"policy.layer{i}.weight": torch.randn(64, 64, generator=g) for i in range(6)}  # 16 KiB each
    return {
        "epoch": 0,
        "state_dict": {**weights, "iteration": torch.tensor(7), "trained_agent_steps": torch.tensor(123)},
        "optimizer_states": [
            {
                "state": {i: {"exp_avg": torch.randn(64, 64, generator=g)} for i in range(6)},
                "param_groups": [{"lr": 3e-4, "params": list(range(6))}],
            }
        ],  # fmt: skip
        "hyper_parameters": {"rollout_steps": 4, "note": "kept as is"},
        RESUME_KEY: {
            "ranks": [
                {"env": {"pos": torch.randn(256, 64, generator=g)}, "rng": {"cpu": torch.get_rng_state()}}
            ]
        },
    }


def _assert_same(a, b, path="") -> None:
    assert type(a) is type(b), path
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), path
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            _assert_same(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{path}/{i}")
    else:
        assert a == b, path


def test_split_joins_back_bit_for_bit_within_the_part_limit(tmp_path):
    checkpoint = _checkpoint()
    limit = 40 * 1024  # two 16 KiB tensors per part
    out = split_checkpoint(checkpoint, tmp_path, limit, max_parts=20)
    assert out["worlds"] == "kept" and out["parts"] >= 7
    for part in tmp_path.glob("relay_part_*.pt"):
        tensors = torch.load(part)
        assert sum(t.numel() * t.element_size() for t in tensors.values()) <= limit
    _assert_same(join_checkpoint(tmp_path), checkpoint)


def test_worlds_that_do_not_fit_are_dropped_and_the_rest_kept(tmp_path):
    checkpoint = _checkpoint()
    out = split_checkpoint(checkpoint, tmp_path, 40 * 1024, max_parts=6)  # weights + AdamW: 6 parts
    assert out["worlds"] == "fresh" and out["parts"] == 6
    joined = join_checkpoint(tmp_path)
    assert RESUME_KEY not in joined
    _assert_same(joined, {k: v for k, v in checkpoint.items() if k != RESUME_KEY})
    with pytest.raises(SystemExit, match="--max-files"):
        split_checkpoint(checkpoint, tmp_path / "small", 40 * 1024, max_parts=5)


def test_two_legs_continue_one_run(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY.format(root=tmp_path))
    state = tmp_path / "state"
    fit = ["-c", str(config), "--trainer.enable_progress_bar=false"]
    assert (
        main(["--state", str(state), "--minutes", "5", "--", *fit, "--model.init_args.max_iterations=2"]) == 0
    )
    assert (state / STATE_FILE).exists()
    assert (
        main(["--state", str(state), "--minutes", "5", "--", *fit, "--model.init_args.max_iterations=3"]) == 0
    )
    legs = json.loads((state / "relay_log.json").read_text())
    assert [leg["iteration"] for leg in legs] == [2, 3]
    assert [leg["resumed"] for leg in legs] == [False, True] and legs[0]["worlds"] == "kept"
    assert legs[1]["agent_steps"] > legs[0]["agent_steps"] > 0
    assert len(list(state.iterdir())) <= 8
    # the second leg logged into the same run folder as the first, resuming its checkpoint
    saved = torch.load(tmp_path / "tiny" / "relay" / "relay_resume.ckpt", weights_only=False)
    assert int(saved["state_dict"]["iteration"]) == 2
