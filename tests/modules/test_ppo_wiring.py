"""What one PPO iteration hands its loss, through a real Lightning Trainer on the fake env:
every kept transition exactly once per epoch (the advantage filter's set: |A| at least the
threshold times the max |A|), advantages normalised per minibatch, the GAE returns as value targets, the
coefficients in their places, pixels re-rendered equal to the ones the acting policy saw, and
the gradient step (clip 0.5, AdamW) taken on exactly that loss.

The loss is observed by wrapping `pictura.modules.ppo.ppo_loss` (the update's only loss) and the
policy's inputs by a forward hook, so the test follows the update's public behaviour and not
the names of its helpers. References: GAE from `generalized_advantage` with this test's own
gamma and lambda (it is checked against a NumPy loop in test_gae.py), the filter rule and the
normalisation written out here."""

from __future__ import annotations

import copy
import functools
import inspect

import pytest
import torch
from lightning.pytorch import Trainer
from torch.optim.optimizer import register_optimizer_step_pre_hook

import pictura.modules.ppo as ppo_module
from pictura.modules.alberti import AlbertiPolicy
from pictura.modules.gae import generalized_advantage
from pictura.modules.ppo import PPO
from tests.modules.fake_env import FakeDrivingEnv, FakeRig
from tests.modules.test_ppo import TINY_POLICY

PPO_LOSS = ppo_module.ppo_loss  # the loss itself (the runs below wrap it)
GAMMA, LAMBDA = 0.9, 0.8
CLIP, VF, ENT = 0.15, 0.7, 0.03  # distinct from each other and from the defaults: a swap shows
FILTER_THRESHOLD = 0.3  # high enough that this small rollout loses some transitions to it


class Recorder:
    """Records every `ppo_loss` call (arguments by name) and every policy forward."""

    def __init__(self) -> None:
        self.losses: list[dict] = []
        self.forwards: list[tuple[bool, torch.Tensor]] = []  # (grad enabled, pixels)
        self.step_grads: list[dict[int, torch.Tensor]] = []  # per optimizer step: id(param) -> grad
        self.signature = inspect.signature(ppo_module.ppo_loss)

    def loss(self, real, *args, **kwargs):
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        self.losses.append(
            {k: v.detach().clone() if torch.is_tensor(v) else v for k, v in bound.arguments.items()}
        )
        return real(*args, **kwargs)

    def optimizer_step(self, optimizer, args, kwargs) -> None:
        self.step_grads.append(
            {id(p): p.grad.clone() for group in optimizer.param_groups for p in group["params"] if p.grad is not None}
        )

    def hook(self, module, args, output) -> None:
        self.forwards.append((torch.is_grad_enabled(), args[0]["pixels"].clone()))


class LoudRewardEnv(FakeDrivingEnv):
    """The fake env with rewards x 100: value targets far from the initial value head, so the
    gradient norm is well above Table 5's clip of 0.5 and the clip takes part."""

    def _step(self, tensordict):
        out = super()._step(tensordict)
        out.set("reward", out.get("reward") * 100.0)
        return out


def _run_one_iteration(monkeypatch, tmp_path, env_class=FakeDrivingEnv, **kwargs):
    recorder = Recorder()
    monkeypatch.setattr(ppo_module, "ppo_loss", functools.partial(recorder.loss, ppo_module.ppo_loss))
    initial: dict = {}

    def policy(spec, num_actions):
        torch.manual_seed(0)
        built = AlbertiPolicy(spec, num_actions, **TINY_POLICY)
        initial["policy"] = copy.deepcopy(built)
        built.register_forward_hook(recorder.hook)
        return built

    env = functools.partial(env_class, num_worlds=2, slots_per_world=4, agents_per_world=(2, 4),
                            rig=FakeRig(32, 18), episode_length=5, event_prob=0.1)  # fmt: skip
    model = PPO(env=env, policy=policy, rollout_steps=8, gamma=GAMMA, gae_lambda=LAMBDA, clip_coef=CLIP,
                vf_coef=VF, ent_coef=ENT, filter_threshold=FILTER_THRESHOLD, max_iterations=1, **kwargs)  # fmt: skip
    trainer = Trainer(accelerator="cpu", devices=1, max_epochs=-1, logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path)  # fmt: skip
    handle = register_optimizer_step_pre_hook(recorder.optimizer_step)
    try:
        trainer.fit(model)
    finally:
        handle.remove()
    assert int(model.iteration) == 1
    # the update's calls: a call repeated on the same batch (a diagnostic pass) counts once
    calls = [
        c for i, c in enumerate(recorder.losses)
        if i + 1 == len(recorder.losses) or not torch.equal(c["old_logprob"], recorder.losses[i + 1]["old_logprob"])
    ]  # fmt: skip
    return model, calls, recorder, initial["policy"]


def _reference(buf):
    """Advantages, returns and the filter's kept set of the rollout, by the paper's rules."""
    advantage, returns = generalized_advantage(
        buf["reward"], buf["value"], buf["next_value"], buf["terminated"], buf["truncated"], buf["next_valid"],
        GAMMA, LAMBDA, truncated_value=buf["truncated_value"],
    )  # fmt: skip
    valid = buf["valid"]
    max_abs = advantage.abs()[valid].max()  # the first rollout: the running max is its own max
    keep = valid & (advantage.abs() >= FILTER_THRESHOLD * max_abs)
    return advantage, returns, keep


def _transition_index(buf, returns, calls):
    """(step, slot) of each row handed to the loss, found by its action, log-probability and
    return (a near-uniform initial policy repeats log-probabilities; the triple is unique)."""
    T, S = buf["valid"].shape
    key = {}
    for t in range(T):
        for s in range(S):
            if buf["valid"][t, s]:
                k = (int(buf["action"][t, s]), float(buf["logprob"][t, s]), round(float(returns[t, s]), 5))
                assert k not in key, "two valid transitions share an action, log-probability and return"
                key[k] = (t, s)
    rows = []
    for c in calls:
        rows.append([
            key[(int(a), float(lp), round(float(r), 5))]
            for a, lp, r in zip(c["action"], c["old_logprob"], c["returns"], strict=True)
        ])  # fmt: skip
    return rows


def test_the_loss_gets_each_kept_transition_once_per_epoch_normalised_per_minibatch(monkeypatch, tmp_path):
    model, calls, recorder, _ = _run_one_iteration(monkeypatch, tmp_path, minibatch_size=16, update_epochs=2)
    buf = model.rollout
    advantage, returns, keep = _reference(buf)
    kept = sorted(map(tuple, keep.nonzero().tolist()))
    assert 16 < len(kept) < int(buf["valid"].sum())  # several minibatches, and the filter drops some
    rows = _transition_index(buf, returns, calls)
    per_epoch = -(-len(kept) // 16)  # ceil: minibatches of at most 16
    assert len(calls) == 2 * per_epoch
    for epoch in range(2):
        seen = [ts for mb in rows[epoch * per_epoch : (epoch + 1) * per_epoch] for ts in mb]
        assert sorted(seen) == kept, f"epoch {epoch}: not the filter's kept set, once each"
    for call, mb in zip(calls, rows, strict=True):
        t, s = torch.tensor(mb).T
        a = advantage[t, s].double()
        normalised = (a - a.mean()) / a.std()
        torch.testing.assert_close(call["advantage"].double(), normalised, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(call["returns"], returns[t, s], atol=1e-6, rtol=1e-6)
        assert bool(call["mask"].all())
        assert (call["clip_coef"], call["vf_coef"], call["ent_coef"]) == (CLIP, VF, ENT)
        assert call["logits"].shape == (len(mb), 12) and call["value"].shape == (len(mb),)
    # the re-rendered pixels are the ones the acting policy saw at that step
    T, S = buf["valid"].shape
    acting = [px for grad, px in recorder.forwards if not grad and px.shape[0] == S][:T]
    updating = [px for grad, px in recorder.forwards if grad]
    assert len(acting) == T and len(updating) >= len(calls)
    for pixels, mb in zip(updating[-len(calls) :], rows, strict=True):
        expected = torch.stack([acting[t][s] for t, s in mb])
        assert torch.equal(pixels, expected)
    # what the iteration logs: each loss term, the approximate KL and the clip fraction as the
    # mean over every transition the update processed (each kept one, once per epoch)
    logged = model.trainer.callback_metrics
    totals: dict = {}
    for call in calls:
        args = {k: v for k, v in call.items()}
        out = PPO_LOSS(**args)
        for k, v in out.items():
            totals[k] = totals.get(k, 0.0) + float(v) * len(call["action"])
    processed = 2 * len(kept)
    for k in ("policy", "value", "entropy", "total"):
        assert float(logged[f"train/loss/{k}"]) == pytest.approx(totals[k] / processed, rel=1e-4, abs=1e-6), k
    for k in ("approx_kl", "clip_fraction"):
        assert float(logged[f"train/{k}"]) == pytest.approx(totals[k] / processed, rel=1e-4, abs=1e-6), k
    assert float(logged["train/advantage_filter/kept_fraction"]) == pytest.approx(len(kept) / int(buf["valid"].sum()))


@pytest.mark.parametrize("chunk_size", [None, 8], ids=["one_piece", "accumulated_pieces"])
def test_the_gradient_step_is_taken_on_that_loss(monkeypatch, tmp_path, chunk_size):
    # one epoch of one minibatch: one gradient step from the initial weights; in pieces of 8
    # accumulated, the gradient must still be the whole minibatch's mean
    model, calls, recorder, initial = _run_one_iteration(
        monkeypatch, tmp_path, env_class=LoudRewardEnv, minibatch_size=1024, update_epochs=1, learning_rate=1e-3,
        chunk_size=chunk_size,
    )  # fmt: skip
    buf = model.rollout
    advantage, returns, keep = _reference(buf)
    mb = [ts for piece in _transition_index(buf, returns, calls) for ts in piece]
    assert sorted(mb) == sorted(map(tuple, keep.nonzero().tolist()))
    assert len(calls) == (1 if chunk_size is None else -(-len(mb) // chunk_size))
    t, s = torch.tensor(mb).T
    pixels = torch.cat([px for grad, px in recorder.forwards if grad][-len(calls) :])
    obs_keys = [k for k in model.env.observation_spec["observation"].keys() if k != "pixels"]
    # the update's observation: vectors as stored at (step, slot), pixels as the update saw them
    from tensordict import TensorDict

    obs = TensorDict({**{k: buf[k][t, s] for k in obs_keys}, "pixels": pixels}, batch_size=[len(mb)])
    logits, value = initial(obs)
    a = advantage[t, s]
    a = (a - a.mean()) / a.std()
    log_probs = torch.log_softmax(logits.float(), -1)
    ratio = (log_probs.gather(-1, buf["action"][t, s].unsqueeze(-1)).squeeze(-1) - buf["logprob"][t, s]).exp()
    policy_loss = torch.maximum(-a * ratio, -a * ratio.clamp(1 - CLIP, 1 + CLIP)).mean()
    value_loss = 0.5 * ((value.float() - returns[t, s]) ** 2).mean()
    entropy = -(log_probs.exp() * log_probs).sum(-1).mean()
    (policy_loss - ENT * entropy + VF * value_loss).backward()
    norm = torch.nn.utils.clip_grad_norm_(initial.parameters(), 0.5)  # Table 5's max gradient norm
    assert norm > 2.0  # the clip bites: a wrong clip value changes the step
    trained = dict(model.policy.named_parameters())
    assert len(recorder.step_grads) == 1
    (grads,) = recorder.step_grads
    lr, wd, eps = 1e-3, 0.01, 1e-8
    for name, p0 in initial.named_parameters():
        p1 = trained[name]
        assert id(p1) in grads, name
        torch.testing.assert_close(grads[id(p1)], p0.grad, atol=2e-6, rtol=2e-4, msg=name)
        # AdamW's first step on the gradient it was given: decoupled decay, then lr x g / (|g| + eps)
        # (bias-corrected moments; g / (|g| + eps) is ill-conditioned where g ~ eps, hence g used)
        used = grads[id(p1)]
        expected = p0.detach() * (1 - lr * wd) - lr * used / (used.abs() + eps)
        torch.testing.assert_close(p1.detach(), expected, atol=2e-5, rtol=1e-4, msg=name)
