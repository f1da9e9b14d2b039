"""`DensitySweep` inside a real (tiny) PPO fit on the simulator, on the CPU."""

from __future__ import annotations

import functools
import glob
import math
import types

import pytest
import torch
from lightning.pytorch import Trainer
from lightning.pytorch.loggers import TensorBoardLogger
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from pictura.callbacks.density_sweep import LOGGED, DensitySweep
from pictura.envs import DrivingEnv
from pictura.eval.metrics import COUNTERS, summarize
from pictura.eval.policies import constant_policy, sampled_policy
from pictura.eval.protocols import build_in_domain_env, run_density
from pictura.modules import PPO, AlbertiPolicy
from pictura.render import CameraRig
from pictura.tools.curves import curve_table, read_sweeps

MAPS = ["procedural:seed=0"]
POLICY = functools.partial(
    AlbertiPolicy, group_width=8, trunk_width=16, trunk_layers=1, conv_channels=[4, 4, 4, 8, 8],
    conv_strides=[2, 1, 1, 1, 1], queries_per_camera=2, attention_heads=2, camera_width=8,
)


def _env_factory():
    return functools.partial(
        DrivingEnv, maps=MAPS, num_worlds=2, slots_per_world=6, agents_per_world=(3, 6), rig=CameraRig(width=16, height=9)
    )


def test_bad_arguments_name_the_field():
    with pytest.raises(ValueError, match="densities"):
        DensitySweep(densities=[0])
    with pytest.raises(ValueError, match="scenarios"):
        DensitySweep(scenarios=0)
    with pytest.raises(ValueError, match="every_n_iterations"):
        DensitySweep(every_n_iterations=-1)
    with pytest.raises(ValueError, match="actions"):
        DensitySweep(actions="greedy")


def test_sweep_logs_every_density_metric_and_a_plot_during_fit(tmp_path):
    sweep = DensitySweep(every_n_iterations=1, densities=(4, 6), scenarios=2, steps=6, seed=7, at_start=True)
    model = PPO(_env_factory(), POLICY, rollout_steps=2, minibatch_size=24, update_epochs=1, advantage_filter=False,
                max_iterations=1)
    logger = TensorBoardLogger(tmp_path, name="run", version="v0")
    trainer = Trainer(accelerator="cpu", devices=1, max_epochs=-1, logger=logger, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, callbacks=[sweep],
                      log_every_n_steps=1, default_root_dir=tmp_path)
    trainer.fit(model)

    # before training (at_start) and after iteration 1 (end of fit: already done, not repeated)
    assert sorted(sweep.results) == [0, 1]
    assert model.policy.training  # put back in train mode after evaluating
    assert set(sweep.envs) == {4, 6} and sweep.envs[4].sim_config.eval
    # the same scenarios with the final policy, re-played outside the callback
    final = sweep.results[1]
    policy = model.policy.eval()

    def act(obs):
        return policy(obs)[0].argmax(-1)

    again = summarize(run_density(sweep.envs[6], act, 2, 6, seed=7))
    assert again == final["6"]

    acc = EventAccumulator(str(tmp_path / "run" / "v0"), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for density in ("4", "6"):
        for name in LOGGED:
            value = final[density][name]
            tag = f"eval/{density}/{name}"
            if math.isfinite(value):
                assert tag in tags, tag
                assert acc.Scalars(tag)[-1].value == pytest.approx(value, rel=1e-6)
    assert "eval/density_sweep" in acc.Tags()["images"]
    # one x-axis: the sweep after iteration 1 sits at the step of iteration 1's train/ scalars
    assert [e.step for e in acc.Scalars("train/iteration")] == [1]
    assert [e.step for e in acc.Scalars("eval/6/goals")] == [0, 1]
    assert [e.step for e in acc.Images("eval/density_sweep")] == [0, 1]
    assert len(glob.glob(str(tmp_path / "run" / "v0" / "eval" / "density_sweep_iter_*.png"))) == 2
    # the learning-curve records: iteration 0 before any agent-step, then the trained count
    records = read_sweeps(tmp_path / "run" / "v0")
    assert [r["iteration"] for r in records] == [0, 1]
    assert records[0]["agent_steps"] == 0
    assert records[1]["agent_steps"] == int(model.trained_agent_steps) > 0
    assert records[1]["results"]["6"]["goals"] == pytest.approx(final["6"]["goals"])
    # every scenario's counts, in the order the sweeps replay them: they add up to the summary,
    # and two sweeps' rows pair up for `curves`' change
    assert records[1]["scenario_counter_columns"] == list(COUNTERS)
    for density in ("4", "6"):
        rows = records[1]["scenario_counters"][density]
        assert len(rows) == 2 and all(len(r) == len(COUNTERS) for r in rows)
        assert sum(r[0] for r in rows) == final[density]["episodes"]
    assert "are paired" in curve_table({"run": records})


def test_ranks_split_scenarios_and_only_rank_zero_logs(tmp_path):
    """A stand-in trainer for rank 1 of 2: half the scenarios, nothing written."""
    sweep = DensitySweep(every_n_iterations=1, densities=(4,), scenarios=4, steps=8, seed=3)
    env = build_in_domain_env(_env_factory(), 4, 1, 8, MAPS)
    module = types.SimpleNamespace(
        env_factory=_env_factory(), env=env, device=torch.device("cpu"), iteration=torch.tensor(5),
        policy=torch.nn.Identity(),
    )

    class Logger:
        def log_metrics(self, *a, **k):
            raise AssertionError("rank 1 must not log")

    trainer = types.SimpleNamespace(world_size=2, global_rank=1, global_step=9, log_dir=str(tmp_path),
                                    default_root_dir=str(tmp_path), is_global_zero=False, loggers=[Logger()],
                                    logger=None)
    constant = constant_policy(7)
    module.policy = _Constant(constant)
    summaries = sweep.evaluate(trainer, module)
    built = sweep.envs[4]
    assert built.num_worlds == 2  # ceil(4 scenarios / 2 ranks) side by side
    expected = summarize(run_density(built, constant, 2, 8, seed=3 + 1_000_003))
    assert summaries["4"] == expected
    assert not glob.glob(str(tmp_path / "eval" / "*.png"))


class _Constant(torch.nn.Module):
    def __init__(self, act):
        super().__init__()
        self.act = act

    def forward(self, obs):
        a = self.act(obs)
        return torch.nn.functional.one_hot(a, 12).float(), torch.zeros(a.shape[0])


class _FixedLogits(torch.nn.Module):
    def __init__(self, logits):
        super().__init__()
        self.logits = logits

    def forward(self, obs):
        n = obs.batch_size[0]
        return self.logits.expand(n, -1), torch.zeros(n)


def test_sampled_policy_draws_from_the_softmax_and_repeats_with_its_seed():
    logits = torch.tensor([2.0, 0.0, -1.0, 1.0, -30.0, 0.5, 0.0, 0.0, -2.0, 1.5, 0.0, 0.0])
    obs = types.SimpleNamespace(batch_size=[200_000])
    actions = sampled_policy(_FixedLogits(logits), seed=3)(obs)
    freq = torch.bincount(actions, minlength=12).double() / actions.numel()
    probs = torch.exp(logits.double()) / torch.exp(logits.double()).sum()
    # binomial std <= sqrt(0.25 / 200,000) ~ 0.0011: 5 sigma
    assert torch.allclose(freq, probs, atol=0.0056)
    assert freq[4] == 0  # p ~ 1e-14
    again = sampled_policy(_FixedLogits(logits), seed=3)(obs)
    assert torch.equal(actions, again)
    assert not torch.equal(actions, sampled_policy(_FixedLogits(logits), seed=4)(obs))


def test_argmax_and_sampled_sweeps_run_side_by_side(tmp_path):
    """Both kinds of sweep in one fit write separate records, plots and TensorBoard tags; a
    policy whose softmax puts all its mass on one action samples exactly that action."""
    greedy = DensitySweep(every_n_iterations=1, densities=(4,), scenarios=2, steps=6, seed=7, at_start=True)
    sampled = DensitySweep(every_n_iterations=1, densities=(4,), scenarios=2, steps=6, seed=7, at_start=True,
                           actions="sample")
    model = PPO(_env_factory(), POLICY, rollout_steps=2, minibatch_size=24, update_epochs=1, advantage_filter=False,
                max_iterations=1)
    logger = TensorBoardLogger(tmp_path, name="run", version="v0")
    trainer = Trainer(accelerator="cpu", devices=1, max_epochs=-1, logger=logger, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, callbacks=[greedy, sampled],
                      log_every_n_steps=1, default_root_dir=tmp_path)
    trainer.fit(model)
    run = tmp_path / "run" / "v0"
    assert [r["actions"] for r in read_sweeps(run / "eval" / "density_sweep.jsonl")] == ["argmax", "argmax"]
    assert [r["actions"] for r in read_sweeps(run, actions="sample")] == ["sample", "sample"]
    assert len(glob.glob(str(run / "eval" / "density_sweep_sample_iter_*.png"))) == 2
    acc = EventAccumulator(str(run), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert "eval/4/episodes" in tags and "eval_sample/4/episodes" in tags
    assert {"eval/density_sweep", "eval_sample/density_sweep"} <= set(acc.Tags()["images"])

    # all mass on action 7: the sampled sweep equals the constant-action sweep
    one_hot = torch.full((12,), -1.0e4)
    one_hot[7] = 0.0
    module = types.SimpleNamespace(env_factory=_env_factory(), env=model.env, device=torch.device("cpu"),
                                   iteration=torch.tensor(3), policy=_FixedLogits(one_hot))
    trainer1 = types.SimpleNamespace(world_size=1, global_rank=0, global_step=0, log_dir=str(tmp_path),
                                     default_root_dir=str(tmp_path), is_global_zero=False, loggers=[], logger=None)
    summaries = sampled.evaluate(trainer1, module)
    assert summaries["4"] == summarize(run_density(sampled.envs[4], constant_policy(7), 2, 6, seed=7))


def test_sweep_of_a_packed_training_env_plays_fixed_worlds(tmp_path):
    """A packed training config (block_slots) whose block size does not divide the evaluation's
    slots: the sweep still plays one fixed world of `density` slots per scenario."""
    packed = functools.partial(_env_factory(), num_worlds=4, block_slots=12, worlds_per_block=2)
    sweep = DensitySweep(every_n_iterations=1, densities=(5,), scenarios=2, steps=6, seed=3)
    module = types.SimpleNamespace(env_factory=packed, env=packed(), device=torch.device("cpu"),
                                   iteration=torch.tensor(1), policy=_Constant(constant_policy(7)))
    trainer = types.SimpleNamespace(world_size=1, global_rank=0, global_step=0, log_dir=str(tmp_path),
                                    default_root_dir=str(tmp_path), is_global_zero=False, loggers=[], logger=None)
    summaries = sweep.evaluate(trainer, module)
    built = sweep.envs[5]
    assert built.layout.block_slots == 0 and built.num_worlds == 2
    fixed = build_in_domain_env(_env_factory(), 5, 2, 6, MAPS)
    assert summaries["5"] == summarize(run_density(fixed, constant_policy(7), 2, 6, seed=3))
