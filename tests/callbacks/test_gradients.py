"""`GradientDiagnostics`' per-term gradient norms against closed-form gradients."""

import numpy as np
import torch

from pictura.callbacks.gradients import loss_term_grad_norms
from pictura.modules.ppo import ppo_loss


def test_loss_term_grad_norms_match_closed_form_gradients():
    # a linear actor-critic (logits = X W, value = X w): each term's gradient in closed form in NumPy
    g = torch.Generator().manual_seed(5)
    B, D, A = 48, 6, 5
    X = torch.randn(B, D, generator=g)
    W = (0.5 * torch.randn(D, A, generator=g)).requires_grad_()
    w = torch.randn(D, generator=g).requires_grad_()
    action = torch.randint(0, A, (B,), generator=g)
    old_logp = torch.log_softmax(X @ W.detach() + 0.6 * torch.randn(B, A, generator=g), -1).gather(1, action[:, None])[:, 0]
    adv, ret = torch.randn(B, generator=g), 3.0 * torch.randn(B, generator=g)
    mask = torch.rand(B, generator=g) > 0.25
    clip, vf, ent = 0.2, 0.5, 0.01
    losses = ppo_loss(X @ W, X @ w, action, old_logp, adv, ret, mask, clip, vf, ent)
    norms = loss_term_grad_norms(losses, [W, w], vf, ent)
    assert W.grad is None and w.grad is None  # nothing accumulated into .grad

    x, m = X.double().numpy(), mask.double().numpy()
    count = m.sum()
    z = x @ W.detach().double().numpy()
    logp = z - z.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    p = np.exp(logp)
    onehot = np.eye(A)[action.numpy()]
    a, r_old = adv.double().numpy(), old_logp.double().numpy()
    ratio = np.exp((logp * onehot).sum(1) - r_old)
    unclipped, clipped = -a * ratio, -a * np.clip(ratio, 1 - clip, 1 + clip)
    assert (unclipped < clipped).any()  # some samples sit on the clipped side
    d_logp = np.where(unclipped >= clipped, -a * ratio, 0.0) * m / count
    grad_policy = x.T @ (d_logp[:, None] * (onehot - p))
    entropy = -(p * logp).sum(1)
    grad_entropy = x.T @ (-ent * (m / count)[:, None] * (-p * (logp + entropy[:, None])))
    v = x @ w.detach().double().numpy()
    grad_value = vf * x.T @ (m * (v - ret.double().numpy())) / count
    np.testing.assert_allclose(float(norms["policy"]), np.linalg.norm(grad_policy), rtol=1e-4)
    np.testing.assert_allclose(float(norms["entropy"]), np.linalg.norm(grad_entropy), rtol=1e-4)
    np.testing.assert_allclose(float(norms["value"]), np.linalg.norm(grad_value), rtol=1e-4)
    # a zero coefficient: that term has no gradient, and the others are unchanged
    zero = loss_term_grad_norms(ppo_loss(X @ W, X @ w, action, old_logp, adv, ret, mask, clip, 0.0, ent), [W, w], 0.0, ent)
    assert float(zero["value"]) == 0.0
    np.testing.assert_allclose(float(zero["policy"]), float(norms["policy"]), rtol=1e-6)
    # nothing trained behind the loss (a frozen policy): every norm is 0, no error
    frozen = ppo_loss(X @ W.detach(), X @ w.detach(), action, old_logp, adv, ret, mask, clip, vf, ent)
    assert all(float(v) == 0.0 for v in loss_term_grad_norms(frozen, [W, w], vf, ent).values())
