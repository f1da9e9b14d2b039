"""What `DrivingEnv.step` returns per slot, on every step of a short random rollout that ends
in a world reset: ``done`` is ``terminated | truncated`` (TorchRL's contract), the reward is
the sum of its named terms on every slot (terminal steps included: that is where the collision
term's speed part lives), each event's term is under its own name, and a terminal event
terminates exactly its slot."""

from __future__ import annotations

import torch

from pictura.envs import DrivingEnv
from pictura.envs.observations import VectorizedObservationConfig
from pictura.sim import REWARD_TERMS, SimConfig

MAP = "procedural:seed=0,blocks_x=2,blocks_y=2"
EPISODE = 20
SWERVES = torch.tensor([9, 11])  # full throttle and full lateral jerk: agents soon leave the road


def test_done_reward_and_terminated_agree_with_the_terms_and_events():
    env = DrivingEnv(
        seed=3, maps=[MAP], num_worlds=2, slots_per_world=10, agents_per_world=(6, 10),
        observation=VectorizedObservationConfig(variant="privileged"),
        sim=SimConfig(episode_length=EPISODE, early_reset_halted_fraction=1.0),
    )  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    td = env.reset()
    saw_truncated = saw_halted = False
    ended = torch.zeros(env.num_slots, dtype=torch.bool)  # slots terminated at an earlier step
    for _ in range(EPISODE):
        valid = td["valid"].reshape(-1)
        action = SWERVES[torch.randint(0, 2, (env.num_slots,), generator=gen)]
        td = env.step(td.set("action", action))
        nxt = td["next"]
        terminated, truncated = nxt["terminated"], nxt["truncated"]
        assert torch.equal(nxt["done"], terminated | truncated)
        terms = torch.cat([nxt["info", "reward", t] for t in REWARD_TERMS], dim=-1)
        torch.testing.assert_close(nxt["reward"][valid], terms.sum(-1, keepdim=True)[valid], atol=1e-6, rtol=1e-5)
        # an infraction (collision, off-road, red light) terminates its slot and nothing else does
        events = nxt["info", "event"]
        infraction = events["collision"] | events["offroad"] | events["red_light"]
        assert torch.equal(terminated[valid], infraction[valid])
        assert not terminated[~valid].any()  # a slot halted (or empty) before the step ends nothing
        # each event's term sits under its own name: nonzero exactly where its event fired
        reward = nxt["info", "reward"]
        assert torch.equal(reward["goal"][valid], events["goal"][valid].float())
        for term, event in (("collision", "collision"), ("offroad", "offroad"), ("red_light", "red_light")):
            assert torch.equal((reward[term] < 0)[valid], events[event][valid]), term
        for term in ("overspeed", "reverse", "timestep", "comfort"):
            assert bool((reward[term] <= 0).all()), term  # penalties
        saw_truncated |= bool(truncated.any())
        saw_halted |= bool((ended & ~valid).any())
        ended |= terminated.reshape(-1)
        td = nxt
    assert saw_truncated  # the episode's end reached the flags
    assert saw_halted  # infractions happened, and their slots stayed halted in later steps


def test_an_agent_that_terminates_as_its_world_resets_is_terminated_not_truncated():
    # the early reset fires once a tenth of a world's agents halted: the step of a world's first
    # infraction resets it, so the infracting slot ends by termination, the others by truncation
    env = DrivingEnv(
        seed=3, maps=[MAP], num_worlds=2, slots_per_world=10, agents_per_world=(6, 10),
        observation=VectorizedObservationConfig(variant="privileged"),
        sim=SimConfig(episode_length=100, early_reset_halted_fraction=0.1),
    )  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    td = env.reset()
    both = False
    for _ in range(EPISODE):
        valid = td["valid"].reshape(-1)
        action = SWERVES[torch.randint(0, 2, (env.num_slots,), generator=gen)]
        td = env.step(td.set("action", action))
        nxt = td["next"]
        terminated, truncated = nxt["terminated"].reshape(2, 10), nxt["truncated"].reshape(2, 10)
        assert not (terminated & truncated).any()
        for w in range(2):
            if terminated[w].any():
                live = valid.reshape(2, 10)[w] & ~terminated[w]
                if truncated[w].any():
                    assert truncated[w][live].all()  # the world did reset in this step
                    both = True
        td = nxt
    assert both  # some world reset on the step one of its agents terminated


def test_every_acting_slot_gets_its_last_view_in_next():
    """``next_observation="final"``: every slot that acted this step, whether it goes on, ends
    by an infraction or is cut by its world's reset, holds its last view in ``("next", ...)``
    and is ``valid`` there; a slot that did not act (empty, halted before) is not. So
    ``next["valid"]`` is the step's input ``valid``, slot for slot."""
    env = DrivingEnv(
        seed=5, maps=[MAP], num_worlds=2, slots_per_world=10, agents_per_world=(6, 10),
        observation=VectorizedObservationConfig(variant="privileged"),
        sim=SimConfig(episode_length=EPISODE, early_reset_halted_fraction=1.0),
    )  # fmt: skip
    gen = torch.Generator().manual_seed(1)
    td = env.reset()
    saw = {"terminated": 0, "truncated": 0, "idle": 0}
    for _ in range(EPISODE + 2):
        valid = td["valid"].reshape(-1)
        action = SWERVES[torch.randint(0, 2, (env.num_slots,), generator=gen)]
        # TorchRL's masked reset hands the done slots their next episode's first observation
        td, root = env.step_and_maybe_reset(td.set("action", action))
        nxt = td["next"]
        terminated, truncated = nxt["terminated"].reshape(-1), nxt["truncated"].reshape(-1)
        assert torch.equal(nxt["valid"].reshape(-1), valid)
        ego = nxt["observation", "ego"]
        # the last view is the agent's own: its length (feature 1, length / 10 m) is there
        assert bool((ego[valid, 1] > 0).all())
        saw["terminated"] += int((terminated & valid).sum())
        saw["truncated"] += int((truncated & valid).sum())
        saw["idle"] += int((~valid).sum())
        td = root
    assert all(v > 0 for v in saw.values()), saw
