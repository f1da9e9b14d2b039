"""GAE and the advantage filter against plain NumPy loops."""

import numpy as np
import pytest
import torch

from pictura.modules.gae import AdvantageFilter, ReturnNormalizer, generalized_advantage


def gae_reference(reward, value, next_value, terminated, truncated, next_valid, gamma, lam, truncated_value=None):
    """Textbook per-slot backward loop (float64)."""
    T, S = reward.shape
    adv = np.zeros((T, S))
    for s in range(S):
        last = 0.0
        for t in reversed(range(T)):
            if terminated[t, s]:
                boot, cont = 0.0, 0.0
            elif truncated[t, s]:
                boot = 0.0 if truncated_value is None else truncated_value[t, s]
                cont = 0.0
            elif not next_valid[t, s]:
                boot, cont = 0.0, 0.0
            else:
                boot, cont = next_value[t, s], 1.0
            delta = reward[t, s] + gamma * boot - value[t, s]
            last = delta + gamma * lam * cont * last
            adv[t, s] = last
    return adv, adv + value


def _random_rollout(T=37, S=11, seed=0):
    rng = np.random.default_rng(seed)
    reward = rng.normal(size=(T, S))
    value = rng.normal(size=(T, S))
    final = rng.normal(size=S)
    next_value = np.concatenate([value[1:], final[None]], axis=0)
    terminated = rng.random((T, S)) < 0.08
    truncated = (rng.random((T, S)) < 0.08) & ~terminated
    next_valid = rng.random((T, S)) > 0.05
    return reward, value, next_value, terminated, truncated, next_valid


def test_gae_matches_numpy_loop_with_termination_and_truncation():
    reward, value, next_value, terminated, truncated, next_valid = _random_rollout()
    assert terminated.any() and truncated.any() and not next_valid.all()
    t = lambda x: torch.as_tensor(x, dtype=torch.float32 if x.dtype != bool else torch.bool)  # noqa: E731
    adv, ret = generalized_advantage(
        t(reward), t(value), t(next_value), t(terminated), t(truncated), t(next_valid), 0.99, 0.9
    )
    ref_adv, ref_ret = gae_reference(reward, value, next_value, terminated, truncated, next_valid, 0.99, 0.9)
    np.testing.assert_allclose(adv.numpy(), ref_adv, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ret.numpy(), ref_ret, rtol=1e-4, atol=1e-4)


def test_gae_bootstraps_truncation_from_pre_reset_value_when_given():
    reward, value, next_value, terminated, truncated, next_valid = _random_rollout(seed=1)
    trunc_value = np.random.default_rng(2).normal(size=reward.shape)
    t = lambda x: torch.as_tensor(x, dtype=torch.float32 if x.dtype != bool else torch.bool)  # noqa: E731
    adv, _ = generalized_advantage(
        t(reward), t(value), t(next_value), t(terminated), t(truncated), t(next_valid), 0.999, 0.95,
        truncated_value=t(trunc_value),
    )
    ref_adv, _ = gae_reference(
        reward, value, next_value, terminated, truncated, next_valid, 0.999, 0.95, truncated_value=trunc_value
    )
    np.testing.assert_allclose(adv.numpy(), ref_adv, rtol=1e-4, atol=1e-4)


def test_gae_closed_form_constant_reward_no_dones():
    # r = 1, V = 0, lambda = 1, no dones: A_t = sum_{k<T-t} gamma^k (final bootstrap 0 via V=0).
    T, S, gamma = 5, 2, 0.9
    zeros = torch.zeros(T, S)
    false = torch.zeros(T, S, dtype=torch.bool)
    adv, _ = generalized_advantage(torch.ones(T, S), zeros, zeros, false, false, ~false, gamma, 1.0)
    expected = [(1 - gamma ** (T - t)) / (1 - gamma) for t in range(T)]
    np.testing.assert_allclose(adv[:, 0].numpy(), expected, rtol=1e-6)


def test_advantage_filter_matches_reference_ema_over_rollouts():
    rng = np.random.default_rng(3)
    filt = AdvantageFilter(threshold=0.3, ema_coef=0.25)
    ema = None
    for _ in range(4):
        adv = rng.normal(size=(6, 9)) * rng.uniform(0.5, 3)
        valid = rng.random((6, 9)) > 0.2
        adv[~valid] = 100.0  # invalid transitions must not move the running max
        batch_max = np.abs(adv[valid]).max()
        ema = batch_max if ema is None else 0.75 * ema + 0.25 * batch_max
        expected = valid & (np.abs(adv) >= 0.3 * ema)
        keep = filt(torch.tensor(adv, dtype=torch.float32), torch.tensor(valid))
        assert np.array_equal(keep.numpy(), expected)
        np.testing.assert_allclose(float(filt.max_abs_ema), ema, rtol=1e-5)
    # the EMA is a buffer: it travels with state_dict (checkpoints)
    restored = AdvantageFilter(threshold=0.3, ema_coef=0.25)
    restored.load_state_dict(filt.state_dict())
    assert float(restored.max_abs_ema) == float(filt.max_abs_ema) and bool(restored.initialised)


def test_return_normalizer_matches_reference_ema_over_rollouts():
    rng = np.random.default_rng(5)
    norm = ReturnNormalizer(ema_coef=0.25)
    mean = mean_sq = None
    for k in range(4):
        ret = rng.normal(loc=rng.uniform(-5, 5), scale=rng.uniform(0.5, 8), size=(6, 9))
        valid = rng.random((6, 9)) > 0.2
        if k == 2:
            valid[:] = False  # a rollout with nothing valid leaves the statistics alone
        ret[~valid] = 1e6  # invalid transitions must not move them
        if valid.any():
            bm, bs = ret[valid].mean(), (ret[valid] ** 2).mean()
            mean = bm if mean is None else 0.75 * mean + 0.25 * bm
            mean_sq = bs if mean_sq is None else 0.75 * mean_sq + 0.25 * bs
        norm.update(torch.tensor(ret, dtype=torch.float32), torch.tensor(valid))
        np.testing.assert_allclose(float(norm.mean), mean, rtol=1e-5)
        np.testing.assert_allclose(float(norm.std()), np.sqrt(mean_sq - mean**2), rtol=1e-4)
    x = torch.tensor([-3.0, 0.0, 7.5])
    expected = (x.numpy() - mean) / np.sqrt(mean_sq - mean**2)
    np.testing.assert_allclose(norm.normalize(x).numpy(), expected, rtol=1e-4)
    torch.testing.assert_close(norm.denormalize(norm.normalize(x)), x)
    restored = ReturnNormalizer()
    restored.load_state_dict(norm.state_dict())  # buffers: they travel with checkpoints
    assert float(restored.std()) == float(norm.std()) and bool(restored.initialised)
    with pytest.raises(ValueError, match="ema_coef"):
        ReturnNormalizer(ema_coef=0.0)
    with pytest.raises(ValueError, match="min_std"):
        ReturnNormalizer(min_std=0.0)
    # a constant return keeps finite targets (the spread's floor)
    flat = ReturnNormalizer()
    flat.update(torch.full((3, 3), 2.0), torch.ones(3, 3, dtype=torch.bool))
    assert torch.isfinite(flat.normalize(torch.tensor([2.0, 3.0]))).all()


def test_return_normalizer_spread_never_falls_below_min_std():
    norm = ReturnNormalizer(ema_coef=0.25, min_std=1e-2)
    norm.update(torch.full((4, 5), 3.0), torch.ones(4, 5, dtype=torch.bool))  # no spread at all
    assert float(norm.std()) == pytest.approx(1e-2, rel=1e-4)
    torch.testing.assert_close(norm.normalize(torch.tensor([3.0, 3.5])), torch.tensor([0.0, 50.0]), rtol=1e-4, atol=1e-4)
