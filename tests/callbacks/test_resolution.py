"""`ResolutionCurriculum`: schedule parsing and a real (tiny) fit that switches resolution."""

from __future__ import annotations

import functools

import pytest
import torch
from lightning.pytorch import Callback, Trainer

from pictura.callbacks.resolution import ResolutionCurriculum, parse_schedule
from pictura.modules import PPO, AlbertiPolicy
from tests.modules.fake_env import FakeDrivingEnv, FakeRig


def test_dict_and_list_schedules_agree_and_sort():
    a = parse_schedule({100: (96, 54), 0: (48, 27)})
    b = parse_schedule([[100, 96, 54], [0, 48, 27]])
    assert a == b == [(0, 48, 27), (100, 96, 54)]


@pytest.mark.parametrize(
    "schedule, field",
    [
        ([[0, 48]], "schedule\\[0\\]"),
        ({0: (48,)}, "schedule\\[0\\]"),
        ([[-1, 48, 27]], "step must be >= 0"),
        ([[0, 0, 27]], "width and height"),
        ([[0, 48, 27], [0, 96, 54]], "twice"),
        ([[0, 48.5, 27]], "width must be an integer"),
        ([], "at least one"),
    ],
)
def test_bad_schedules_name_the_problem(schedule, field):
    with pytest.raises(ValueError, match=field):
        parse_schedule(schedule)


def test_resolution_at_is_the_last_entry_not_after_the_step():
    c = ResolutionCurriculum([[10, 48, 27], [30, 96, 54]])
    expected = {0: None, 9: None, 10: (48, 27), 29: (48, 27), 30: (96, 54), 10**9: (96, 54)}
    assert {s: c.resolution_at(s) for s in expected} == expected


class _Record(Callback):
    def __init__(self):
        self.seen = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        pixels = pl_module.rollout["pixels"]  # (T, S, C, H, W, 3), stored at acting time
        self.seen.append((trainer.global_step, tuple(pixels.shape[-3:-1]), (pl_module.env.rig.height, pl_module.env.rig.width)))


def test_fit_switches_resolution_at_the_scheduled_global_step(tmp_path):
    # 2 worlds x 4 slots, 6 steps = 48 transitions, minibatch 24, 2 epochs -> 4 gradient steps
    # per iteration (no advantage filter), so iteration k starts at global_step 4 (k - 1).
    env = functools.partial(
        FakeDrivingEnv, num_worlds=2, slots_per_world=4, agents_per_world=(4, 4), episode_length=100,
        event_prob=0.0, rig=FakeRig(32, 18),
    )
    policy = functools.partial(
        AlbertiPolicy, group_width=8, trunk_width=16, trunk_layers=1, conv_channels=[4, 4, 4, 8, 8],
        conv_strides=[2, 1, 1, 1, 1], queries_per_camera=2, attention_heads=2, camera_width=8,
    )
    model = PPO(env, policy, rollout_steps=6, minibatch_size=24, advantage_filter=False, store_images=True,
                max_iterations=3)
    record = _Record()
    curriculum = ResolutionCurriculum([[4, 16, 9], [8, 24, 12]])
    trainer = Trainer(accelerator="cpu", devices=1, max_epochs=-1, logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, callbacks=[curriculum, record],
                      default_root_dir=tmp_path)
    trainer.fit(model)
    assert curriculum.applied == [(4, 16, 9), (8, 24, 12)]
    # (global step after the iteration, stored pixel (H, W), rig (H, W))
    assert record.seen == [(4, (18, 32), (18, 32)), (8, (9, 16), (9, 16)), (12, (12, 24), (12, 24))]
    assert torch.isfinite(next(model.policy.parameters())).all()
