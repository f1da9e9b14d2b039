"""One small "it learns" run: PPO through a Lightning Trainer on a bandit-like fake env."""

import functools

import torch
from lightning.pytorch import Trainer

from pictura.modules.alberti import AlbertiPolicy
from pictura.modules.ppo import PPO
from tests.modules.fake_env import FakeDrivingEnv, FakeRig
from tests.modules.test_ppo import TINY_POLICY

GOOD_ACTION = 5


class BanditEnv(FakeDrivingEnv):
    """The fake env, but the reward is 1 for action 5 and 0 otherwise."""

    def _step(self, tensordict):
        out = super()._step(tensordict)
        out.set("reward", (tensordict.get("action") == GOOD_ACTION).float().unsqueeze(-1))
        return out


def test_ppo_learns_the_rewarded_action(tmp_path):
    torch.manual_seed(0)
    env = functools.partial(BanditEnv, num_worlds=2, slots_per_world=8, agents_per_world=(8, 8),
                            rig=FakeRig(32, 18), event_prob=0.0, episode_length=1000)
    policy = functools.partial(AlbertiPolicy, **TINY_POLICY)
    model = PPO(env=env, policy=policy, rollout_steps=8, minibatch_size=32, gamma=0.0, gae_lambda=0.0,
                ent_coef=0.0, learning_rate=3e-3, max_iterations=12)
    trainer = Trainer(accelerator="cpu", devices=1, max_epochs=-1, logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path)

    def good_probability() -> float:
        with torch.no_grad():
            logits, _ = model.policy(model.env.reset())
        return float(torch.softmax(logits, -1)[:, GOOD_ACTION].mean())

    trainer.fit(model)
    assert int(model.iteration) == 12
    # one optimizer step per minibatch: 12 iterations x 2 epochs x at most 128 / 32 minibatches
    assert 12 * 2 <= model.trainer.global_step <= 12 * 2 * 4
    assert good_probability() > 0.5  # from 1/12 at the start
