"""PPO pieces: the loss against a hand computation, masking, re-rendering, the iteration loop."""

import numpy as np
import pytest
import torch

from pictura.modules.alberti import AlbertiPolicy
from pictura.modules.ppo import (
    PPO,
    PhaseClock,
    normalize_advantage,
    ppo_loss,
    sample_action,
    spread_metrics,
)
from tests.modules.fake_env import FakeDrivingEnv, FakeRig

TINY_POLICY = dict(
    group_width=8, trunk_width=32, trunk_layers=2, conv_channels=(8, 8, 8, 16, 16),
    queries_per_camera=2, attention_heads=2, camera_width=8,
)


def _loss_reference(logits, value, action, old_logp, adv, ret, mask, clip, vf, ent):
    """NumPy PPO loss, written out term by term (float64)."""
    logits, value, adv, ret, old_logp = (np.asarray(x, np.float64) for x in (logits, value, adv, ret, old_logp))
    z = logits - logits.max(1, keepdims=True)
    logp_all = z - np.log(np.exp(z).sum(1, keepdims=True))
    p = np.exp(logp_all)
    m = np.asarray(mask)
    logp = logp_all[np.arange(len(action)), action]
    ratio = np.exp(logp - old_logp)
    pg = np.maximum(-adv * ratio, -adv * np.clip(ratio, 1 - clip, 1 + clip))[m].mean()
    v = 0.5 * ((value - ret) ** 2)[m].mean()
    h = (-(p * logp_all).sum(1))[m].mean()
    kl = ((ratio - 1) - np.log(ratio))[m].mean()
    clipfrac = (np.abs(ratio - 1) > clip)[m].mean()
    return {"policy": pg, "value": v, "entropy": h, "total": pg - ent * h + vf * v, "approx_kl": kl,
            "clip_fraction": clipfrac}


def _batch(B=40, A=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(B, A, generator=g) * 2
    value = torch.randn(B, generator=g)
    action = torch.randint(0, A, (B,), generator=g)
    old_logp = torch.log_softmax(logits + 0.5 * torch.randn(B, A, generator=g), -1).gather(1, action[:, None])[:, 0]
    adv = torch.randn(B, generator=g)
    ret = torch.randn(B, generator=g)
    mask = torch.rand(B, generator=g) > 0.3
    return logits, value, action, old_logp, adv, ret, mask


def test_ppo_loss_matches_hand_computation():
    batch = _batch()
    out = ppo_loss(*batch, clip_coef=0.2, vf_coef=0.5, ent_coef=0.01)
    ref = _loss_reference(*(x.numpy() for x in batch), 0.2, 0.5, 0.01)
    assert 0 < ref["clip_fraction"] < 1  # the batch exercises both sides of the clip
    for k, v in ref.items():
        np.testing.assert_allclose(float(out[k]), v, rtol=1e-5, atol=1e-6, err_msg=k)


def test_masked_entries_change_no_loss():
    logits, value, action, old_logp, adv, ret, mask = _batch(seed=1)
    base = ppo_loss(logits, value, action, old_logp, adv, ret, mask)
    off = ~mask
    logits2, value2, adv2, ret2, old2 = logits.clone(), value.clone(), adv.clone(), ret.clone(), old_logp.clone()
    logits2[off] = 1e3 * torch.randn_like(logits2[off])
    value2[off], adv2[off], ret2[off], old2[off] = 1e4, -1e4, 1e4, -50.0
    changed = ppo_loss(logits2, value2, action, old2, adv2, ret2, mask)
    for k in base:
        assert float(base[k]) == float(changed[k]), k


def test_normalize_advantage_zero_mean_unit_std():
    a = normalize_advantage(torch.tensor([1.0, 2.0, 3.0, 10.0]))
    assert abs(float(a.mean())) < 1e-6 and abs(float(a.std()) - 1) < 1e-5


def test_spread_metrics_match_numpy():
    g = np.random.default_rng(3)
    adv = g.standard_t(2, 5000).astype(np.float32)  # heavy tails: the p99 and max differ
    ret = g.normal(-3.0, 4.0, 5000).astype(np.float32)
    value = (ret + g.normal(0.0, 0.5, 5000)).astype(np.float32)
    out = spread_metrics(torch.from_numpy(adv), torch.from_numpy(ret), torch.from_numpy(value))
    mag = np.abs(adv.astype(np.float64))
    for p in (50, 90, 99):
        np.testing.assert_allclose(float(out[f"train/advantage/abs_p{p}"]), np.quantile(mag, p / 100), rtol=1e-5)
    assert float(out["train/advantage/abs_max"]) == mag.max()
    np.testing.assert_allclose(float(out["train/return/mean"]), ret.astype(np.float64).mean(), rtol=1e-5)
    np.testing.assert_allclose(float(out["train/return/std"]), ret.astype(np.float64).std(ddof=1), rtol=1e-5)
    rms = np.sqrt(((value.astype(np.float64) - ret) ** 2).mean())
    np.testing.assert_allclose(float(out["train/value/rms_error"]), rms, rtol=1e-5)
    assert spread_metrics(torch.zeros(0), torch.zeros(0), torch.zeros(0)) == {}


def test_sample_action_logprob_and_distribution():
    torch.manual_seed(0)
    logits = torch.tensor([[0.0, 1.0, 2.0]]).expand(20000, 3)
    action, logp = sample_action(logits)
    freq = torch.bincount(action, minlength=3).float() / len(action)
    torch.testing.assert_close(freq, torch.softmax(logits[0], 0), atol=0.02, rtol=0)
    torch.testing.assert_close(logp, torch.log_softmax(logits[0], 0)[action])


def _module(store_images=False, **kwargs):
    """A PPO wired by hand to a FakeDrivingEnv (no Trainer)."""
    env = FakeDrivingEnv(num_worlds=2, slots_per_world=4, agents_per_world=(2, 4), rig=FakeRig(32, 18),
                         episode_length=5, event_prob=0.1)
    model = PPO(env=None, policy=None, rollout_steps=8, minibatch_size=16, store_images=store_images, **kwargs)
    torch.manual_seed(0)
    model.env, model.policy = env, AlbertiPolicy(env.observation_spec, **TINY_POLICY)
    model._td = env.reset()
    return model


def test_rerendered_minibatch_pixels_equal_the_acting_pixels():
    model = _module(store_images=True)
    buf = model.collect_rollout(PhaseClock(torch.device("cpu")))
    T, S = buf["valid"].shape
    steps = torch.arange(T).repeat_interleave(S)
    slots = torch.arange(S).repeat(T)
    stored = model.minibatch_observation(buf, steps, slots)
    model.hparams.store_images = False
    rendered = model.minibatch_observation(buf, steps, slots)
    assert torch.equal(stored["pixels"], rendered["pixels"])
    assert buf["terminated"].any() or buf["truncated"].any()


def test_truncated_transitions_bootstrap_from_the_pre_reset_observation():
    model = _module(advantage_filter=False)
    model.chunk_local = 5  # several pieces
    buf = model.collect_rollout(PhaseClock(torch.device("cpu")))
    cut = buf["truncated"] & buf["valid"] & ~buf["terminated"]
    assert cut.sum() >= 2  # episodes of 5 steps in a rollout of 8
    # reference: the pre-reset state of the world, rebuilt by hand from the fake env's rules
    # (the same actions replayed on a twin env whose episodes never end)
    twin = FakeDrivingEnv(num_worlds=2, slots_per_world=4, agents_per_world=(2, 4), rig=FakeRig(32, 18),
                          episode_length=10**6, event_prob=0.1)
    twin._gen.manual_seed(0)
    model.env._gen.manual_seed(0)
    # rerun both from the same seed with the rollout's actions
    td_a, td_b = model.env.reset(), twin.reset()
    model.policy.eval()
    with torch.no_grad():
        for t in range(buf["action"].shape[0]):
            td_a = model.env.step(td_a.set("action", buf["action"][t]))
            td_b = twin.step(td_b.set("action", buf["action"][t]))
            for s in cut[t].nonzero().squeeze(-1).tolist():
                obs = td_b["next", "observation"][s : s + 1]
                expected = model.policy(obs)[1].float()[0]
                torch.testing.assert_close(buf["truncated_value"][t, s], expected, rtol=1e-5, atol=1e-6)
            if cut[t].any():
                break  # the twin diverges after the first reset (the short env drew new agents)
            td_a, td_b = td_a["next"], td_b["next"]
    assert torch.equal(buf["truncated_value"][~cut], torch.zeros(int((~cut).sum())))
    # GAE uses it: at a truncated step the advantage is r + gamma * V_final - V (lambda term cut)
    adv, _, _ = model.advantages(buf)
    t, s = cut.nonzero()[0].tolist()
    expected = buf["reward"][t, s] + model.hparams.gamma * buf["truncated_value"][t, s] - buf["value"][t, s]
    torch.testing.assert_close(adv[t, s], expected)


def test_value_normalization_maps_the_head_back_and_regresses_on_normalised_targets():
    model = _module(advantage_filter=False, value_normalization=True)
    norm = model.return_norm
    norm.mean.fill_(2.0)
    norm.mean_sq.fill_(13.0)  # spread 3
    norm.initialised.fill_(True)
    head = torch.tensor([-1.0, 0.0, 0.5])
    torch.testing.assert_close(model.state_value(head), torch.tensor([-1.0, 2.0, 3.5]))
    buf = model.collect_rollout(PhaseClock(torch.device("cpu")))
    # the rollout's values are the policy's head mapped back: replay the first step's observation
    obs = model.minibatch_observation(buf, torch.zeros(buf["valid"].shape[1], dtype=torch.long),
                                      torch.arange(buf["valid"].shape[1]))
    with torch.no_grad():
        expected = model.policy(obs)[1].float() * 3.0 + 2.0
    torch.testing.assert_close(buf["value"][0], expected, rtol=1e-5, atol=1e-5)
    _, returns, _ = model.advantages(buf)
    valid = buf["valid"]
    targets = model.value_targets(returns, valid)
    r = returns[valid].double()
    mean = 0.75 * 2.0 + 0.25 * r.mean()
    mean_sq = 0.75 * 13.0 + 0.25 * (r * r).mean()
    torch.testing.assert_close(targets[valid].double(), (r - mean) / (mean_sq - mean**2).sqrt(), rtol=1e-4, atol=1e-5)
    assert _module().return_norm is None  # Table 5: off, and no extra checkpoint keys


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"minibatch_size": 0}, "minibatch_size must be >= 1"),
        ({"update_epochs": 0}, "update_epochs must be >= 1"),
        ({"rollout_steps": 0}, "rollout_steps must be >= 1"),
        ({"chunk_size": 0}, "chunk_size must be >= 1"),
        ({"max_iterations": 0}, "max_iterations must be >= 1"),
        ({"gamma": 1.5}, "gamma and gae_lambda"),
        ({"clip_coef": 0.0}, "clip_coef must be > 0"),
        ({"vf_coef": -0.5}, "vf_coef must be >= 0"),
        ({"ent_coef": float("nan")}, "ent_coef must be finite"),
        ({"learning_rate": 0.0}, "learning_rate must be > 0"),
        ({"learning_rate": float("inf")}, "learning_rate must be > 0"),
        ({"betas": (0.9, 1.0)}, r"betas must be two values in \[0, 1\)"),
        ({"eps": 0.0}, "eps must be > 0"),
        ({"weight_decay": -0.01}, "weight_decay must be >= 0"),
        ({"max_grad_norm": float("nan")}, "max_grad_norm must be > 0"),
        ({"filter_threshold": -0.01}, "filter_threshold must be >= 0"),
        ({"filter_ema": 0.0}, r"filter_ema must be in \(0, 1\]"),
        ({"value_norm_ema": 1.5}, r"value_norm_ema must be in \(0, 1\]"),
    ],
)
def test_impossible_hyperparameters_raise_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        PPO(env=None, policy=None, **kwargs)


def test_invalid_slots_do_not_change_advantages_of_valid_ones():
    model = _module(advantage_filter=True)
    buf = model.collect_rollout(PhaseClock(torch.device("cpu")))
    invalid = ~buf["valid"]
    assert invalid.any()
    adv, ret, keep = model.advantages(buf)
    assert not (keep & invalid).any()  # nothing invalid is ever kept
    model.filter = type(model.filter)(0.01, 0.25)  # fresh EMA for the second computation
    tampered = {k: v.clone() for k, v in buf.items()}
    # garbage wherever the *observation* is invalid: its reward, value, action data
    tampered["reward"][invalid] = 1e6
    tampered["value"][invalid] = -1e6
    # the next_value of a valid step is only used if the next slot is valid, so it is safe to
    # tamper with next_value where the next slot is invalid
    tampered["next_value"][~buf["next_valid"]] = 1e6
    adv2, ret2, keep2 = model.advantages(tampered)
    valid = buf["valid"]
    torch.testing.assert_close(adv2[valid], adv[valid])
    torch.testing.assert_close(ret2[valid], ret[valid])
    assert torch.equal(keep2, keep)


def _attach(model, world_size, rank=0):
    from types import SimpleNamespace

    model._trainer = SimpleNamespace(
        world_size=world_size, global_rank=rank, strategy=SimpleNamespace(root_device=torch.device("cpu"))
    )
    return model


def test_setup_splits_global_sizes_across_ranks():
    import functools

    import pytest

    factory = functools.partial(FakeDrivingEnv, num_worlds=4, slots_per_world=2, agents_per_world=(1, 2),
                                rig=FakeRig(32, 18))
    policy = functools.partial(AlbertiPolicy, **TINY_POLICY)
    model = _attach(PPO(env=factory, policy=policy, minibatch_size=64), world_size=2, rank=1)
    model.setup("fit")
    assert model.env.num_slots == 4  # 2 of the 4 global worlds on this rank
    assert model.minibatch_local == 32
    assert model.env.validate_actions is False
    with pytest.raises(ValueError, match="minibatch_size"):
        _attach(PPO(env=factory, policy=policy, minibatch_size=63), world_size=2).setup("fit")
    with pytest.raises(ValueError, match="num_worlds"):
        _attach(PPO(env=factory, policy=policy, minibatch_size=63), world_size=3).setup("fit")


def test_a_rank_share_that_breaks_the_packing_names_the_split():
    import functools

    import pytest

    from pictura.envs import DrivingEnv

    # 4 worlds x 8 slots = 32 global slots in one block of 32; 2 ranks get 16 slots each
    factory = functools.partial(DrivingEnv, maps=["procedural:seed=0,blocks_x=2,blocks_y=2"], num_worlds=4,
                                slots_per_world=8, agents_per_world=(1, 8), block_slots=32, worlds_per_block=2)
    policy = functools.partial(AlbertiPolicy, **TINY_POLICY)
    with pytest.raises(ValueError, match=r"block_slots=32 does not divide the 16 slots .*each of the 2 ranks"):
        _attach(PPO(env=factory, policy=policy, minibatch_size=64), world_size=2).setup("fit")


def test_policy_forward_returns_the_compiled_module_without_testing_its_truth():
    """torch.compile wrappers raise on len()/bool(): `policy_forward` must not evaluate them."""

    class NoTruth(torch.nn.Module):
        def __len__(self):
            raise TypeError("no len()")

    model = _module()
    assert model.policy_forward is model.policy
    compiled = NoTruth()
    object.__setattr__(model, "_compiled_policy", compiled)
    assert model.policy_forward is compiled


def test_mean_over_ranks_averages_every_logged_scalar_and_phase_time():
    """Two ranks' metrics through a stand-in collective: each value is the plain mean."""
    from types import SimpleNamespace

    import pytest

    rank0 = {"train/reward/total": torch.tensor(-0.5), "train/loss/value": torch.tensor(2.0)}
    rank1 = {"train/reward/total": torch.tensor(-0.1), "train/loss/value": torch.tensor(4.0)}
    seconds0, seconds1 = {"rollout_env": 1.0, "wall": 10.0}, {"rollout_env": 3.0, "wall": 12.0}
    other = torch.tensor([*(float(v) for v in rank1.values()), *seconds1.values()])

    def reduce(tensor, reduce_op):
        assert reduce_op == "mean"
        return (tensor + other) / 2

    model = _attach(_module(), world_size=2)
    model._trainer.strategy = SimpleNamespace(reduce=reduce)
    metrics, seconds = model.mean_over_ranks(rank0, seconds0)
    assert metrics["train/reward/total"].item() == pytest.approx(-0.3)
    assert metrics["train/loss/value"].item() == pytest.approx(3.0)
    assert seconds == pytest.approx({"rollout_env": 2.0, "wall": 11.0})


def test_padded_piece_gives_the_unpadded_loss():
    """pad_to_bucket repeats the first row and masks the padding out of every loss term."""
    from pictura.modules.ppo import pad_to_bucket, ppo_loss

    torch.manual_seed(0)
    index = torch.tensor([5, 2, 9, 7, 1])
    padded, real = pad_to_bucket(index, 4)
    assert padded.tolist() == [5, 2, 9, 7, 1, 5, 5, 5]
    assert real.tolist() == [True] * 5 + [False] * 3
    assert pad_to_bucket(index, 5)[0] is index
    logits, value = torch.randn(10, 12), torch.randn(10)
    action, logp = torch.randint(0, 12, (10,)), torch.randn(10) - 2
    adv, ret = torch.randn(10), torch.randn(10)
    plain = ppo_loss(logits[index], value[index], action[index], logp[index], adv[index], ret[index],
                     torch.ones(5, dtype=torch.bool))
    pad = ppo_loss(logits[padded], value[padded], action[padded], logp[padded], adv[padded], ret[padded], real)
    for key, v in plain.items():
        assert torch.allclose(v, pad[key], atol=1e-6), key


def test_advantages_bootstrap_from_the_value_of_the_next_step():
    # the GAE recursion (REFERENCE.md) by hand: delta_t = r_t + gamma V(o_{t+1}) - V(o_t), where
    # V(o_{t+1}) is the value the policy gave the next step of the rollout (the final
    # observation's for the last step, the pre-reset one's at a truncation)
    model = _module(advantage_filter=False)
    buf = model.collect_rollout(PhaseClock(torch.device("cpu")))
    g, lam = model.hparams.gamma, model.hparams.gae_lambda
    r, v = buf["reward"].double().numpy(), buf["value"].double().numpy()
    nxt = np.concatenate([v[1:], buf["next_value"][-1:].double().numpy()])
    term, trunc, nvalid = (buf[k].numpy() for k in ("terminated", "truncated", "next_valid"))
    tv = buf["truncated_value"].double().numpy()
    expected, running = np.zeros_like(v), np.zeros(v.shape[1])
    for t in range(v.shape[0] - 1, -1, -1):
        cut = term[t] | trunc[t] | ~nvalid[t]
        boot = np.where(trunc[t] & ~term[t], tv[t], np.where(cut, 0.0, nxt[t]))
        running = r[t] + g * boot - v[t] + g * lam * (~cut) * running
        expected[t] = running
    adv, _, _ = model.advantages(buf)
    valid = buf["valid"].numpy()
    assert (~(term | trunc) & nvalid & valid).any()
    np.testing.assert_allclose(adv.double().numpy()[valid], expected[valid], rtol=1e-4, atol=1e-5)


def test_the_advantage_filter_tracks_the_largest_magnitude_negative_ones_included():
    # one-step episodes: A = r - V exactly; the largest |A| is a negative one
    model = PPO(env=None, policy=None, rollout_steps=2, minibatch_size=4, advantage_filter=True)
    reward = torch.tensor([[-9.0, 0.5, 0.001], [2.0, -0.05, 50.0]])
    valid = torch.tensor([[True, True, True], [True, True, False]])  # the 50 is no transition
    ones = torch.ones(2, 3, dtype=torch.bool)
    buf = dict(reward=reward, value=torch.zeros(2, 3), next_value=torch.zeros(2, 3), terminated=ones,
               truncated=~ones, next_valid=ones, valid=valid)  # fmt: skip
    adv, _, keep = model.advantages(buf)
    torch.testing.assert_close(adv, reward)
    torch.testing.assert_close(model.filter.max_abs_ema, torch.tensor(9.0))  # the first rollout sets it
    assert keep.tolist() == [[True, True, False], [True, False, False]]  # |A| >= 0.01 x 9
