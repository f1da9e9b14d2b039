"""PPO against the real `DrivingEnv` (Warp kernels on CPU): the contract the fake env mimics.

Compiles the simulator and renderer kernels on a cold Warp cache (shared with tests/envs in
a full run); everything else in tests/modules runs on `FakeDrivingEnv`.
"""

import torch

from pictura.modules.alberti import AlbertiPolicy
from pictura.modules.ppo import PPO, PhaseClock
from tests.modules.test_ppo import TINY_POLICY


def test_rollout_and_rerender_on_the_real_env():
    from pictura.envs import DrivingEnv
    from pictura.render import CameraRig

    env = DrivingEnv(
        device="cpu", seed=0, maps=["procedural:seed=0"], num_worlds=1, slots_per_world=4,
        agents_per_world=(2, 4), rig=CameraRig(width=32, height=18),
    )
    model = PPO(env=None, policy=None, rollout_steps=3, minibatch_size=8, store_images=True)
    torch.manual_seed(0)
    model.env, model.policy = env, AlbertiPolicy(env.observation_spec, int(env.action_spec.n), **TINY_POLICY)
    env.validate_actions = False
    model._td = env.reset()
    clock = PhaseClock(torch.device("cpu"))
    buf = model.collect_rollout(clock)
    assert {"rollout_env", "rollout_render", "rollout_policy"} <= set(clock.seconds())
    assert buf["valid"].any()
    T, S = buf["valid"].shape
    steps, slots = torch.arange(T).repeat_interleave(S), torch.arange(S).repeat(T)
    stored = model.minibatch_observation(buf, steps, slots)["pixels"]
    model.hparams.store_images = False
    rendered = model.minibatch_observation(buf, steps, slots)["pixels"]
    valid = buf["valid"].reshape(-1)
    # re-rendering from the snapshot history is exact for every view an agent acted on;
    # slots without an active agent were not rendered while acting (black)
    assert torch.equal(stored[valid], rendered[valid])
    assert not stored[~valid].any()
    adv, ret, keep = model.advantages(buf)
    assert torch.isfinite(adv).all() and not (keep & ~buf["valid"]).any()
