"""`ReplayDrivingEnv` on the real WOMD samples: who is controlled, density thinning, replayed
agents in the snapshot, the TorchRL contract. References are plain loops over the raw
GPUDrive JSON and the Scenario arrays."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import warp as wp

from pictura.envs.observations import VectorizedObservationConfig
from pictura.envs.replay import ReplayDrivingEnv, replay_sim_config
from pictura.maps import load
from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE
from pictura.sim.replay import SLOT_CONTROLLED, SLOT_EMPTY, SLOT_REPLAYED
from pictura.sim.snapshot import BOX_INVALID, BoxView
from tests.data import data_missing, data_path

OBS = VectorizedObservationConfig(max_lanes=16, max_boundaries=16, subdivide_long_segments=5.0)


def _json_files() -> list[Path]:
    root = data_path("womd", "gpudrive_json", directory=True)
    files = sorted(root.glob("*.json"))
    if not files:
        data_missing(f"{root} holds no WOMD JSON scenes")
    return files


def _reference_controlled_starts(path: Path) -> list[tuple[float, float]]:
    """(x, y) at t=0 of the vehicles the protocol controls, in file order, by a plain loop
    over the raw JSON: valid at t=0, last valid position > 2 m (xy) from the first."""
    out = []
    for obj in json.loads(path.read_text())["objects"]:
        if obj["type"] != "vehicle" or not obj["valid"][0]:
            continue
        last = max(i for i, v in enumerate(obj["valid"]) if v)
        p0, p1 = obj["position"][0], obj["position"][last]
        if math.hypot(p1["x"] - p0["x"], p1["y"] - p0["y"]) > 2.0:
            out.append((p0["x"], p0["y"]))
    return out


def _in_first_valid_run(valid: np.ndarray, k: int) -> bool:
    """Is step k inside the first run of valid steps of this log?"""
    t = 0
    while t < len(valid) and not valid[t]:
        t += 1
    while t < len(valid) and valid[t]:
        if t == k:
            return True
        t += 1
    return False


def _world_slots(env, w: int) -> slice:
    """World w's slot range, from the layout's start and count."""
    start = int(env.layout.world_slot_start[w])
    return slice(start, start + int(env.layout.world_slot_count[w]))


@pytest.fixture(scope="module")
def env():
    return ReplayDrivingEnv([str(p) for p in _json_files()], observation=OBS, seed=0)


def test_controlled_slots_are_the_rule_applied_to_the_raw_files(env):
    files = _json_files()
    starts = {load(str(p)).scenario_id: _reference_controlled_starts(p) for p in files}
    assert set(env.scenario_ids) | set(env.skipped) == set(starts)
    assert all(not starts[s] for s in env.skipped)
    td = env.reset()
    box = wp.to_torch(env.state.agent_box).numpy()
    mode = env.replay_log.slot_mode
    for w, sid in enumerate(env.scenario_ids):
        rows = _world_slots(env, w)
        ctrl = np.flatnonzero(mode[rows] == SLOT_CONTROLLED) + rows.start
        np.testing.assert_allclose(box[ctrl, :2], np.asarray(starts[sid]), atol=1e-3)
        # the policy sees exactly the controlled slots as valid
        np.testing.assert_array_equal(td["valid"][rows].numpy(), mode[rows] == SLOT_CONTROLLED)


def test_density_thinning_keeps_round_fraction_of_road_users():
    files = _json_files()
    for density in (0.75, 0.5):
        e = ReplayDrivingEnv([str(p) for p in files], observation=OBS, density=density, seed=1)
        for w, sid in enumerate(e.scenario_ids):
            sc = next(load(str(p)) for p in files if load(str(p)).scenario_id == sid)
            users = np.isin(sc.track_type, (AGENT_VEHICLE, AGENT_PEDESTRIAN, AGENT_CYCLIST)) & sc.track_valid.any(1)
            mode = e.replay_log.slot_mode[_world_slots(e, w)]
            # packed: the world is exactly its kept road users, no empty slot
            assert len(mode) == round(density * int(users.sum()))
            assert not (mode == SLOT_EMPTY).any()
            assert int((mode == SLOT_CONTROLLED).sum()) >= 1
        assert e.num_slots == sum(int(s.present.sum()) for s in e.selections)


def test_replayed_agents_follow_the_log_in_the_snapshot(env):
    """After k steps every replayed slot's box is its track's logged pose of step k (or invalid)."""
    scenes = {s.scenario_id: s for s in env.scenarios}
    mode = env.replay_log.slot_mode
    gen = torch.Generator().manual_seed(0)
    td = env.reset()
    for k in range(1, 6):
        td["action"] = torch.randint(0, 12, (env.num_slots,), generator=gen)
        td = env.step(td)["next"]
        box = wp.to_torch(env.state.agent_box).numpy()
        for w, sid in enumerate(env.scenario_ids):
            sel = env.selections[w]
            sc = scenes[sid]
            replayed_tracks = np.flatnonzero(sel.present & ~sel.controlled)
            rows = _world_slots(env, w)
            slots = np.flatnonzero(mode[rows] == SLOT_REPLAYED) + rows.start
            assert len(slots) == len(replayed_tracks)
            for slot, i in zip(slots, replayed_tracks, strict=True):
                if _in_first_valid_run(sc.track_valid[i], k):
                    np.testing.assert_array_equal(box[slot, :3], sc.track_position[i, k])
                    assert BoxView(box[slot]).kind == float(sc.track_type[i])
                else:
                    assert BoxView(box[slot]).kind == BOX_INVALID
        assert not td["valid"][torch.as_tensor(mode == SLOT_REPLAYED)].any()


def test_specs_and_config(env):
    from torchrl.envs.utils import check_env_specs

    check_env_specs(env, seed=0)
    cfg = replay_sim_config()
    assert cfg.episode_length == 600 and cfg.parked_per_world == 0 and cfg.eval
    assert env.sim_config.episode_length == 600


def test_no_scene_with_a_controlled_vehicle_is_an_error(tmp_path):
    files = _json_files()
    sc = load(str(files[0]))
    sc.track_valid[:, 0] = False  # nobody valid at t=0: nobody controlled
    with pytest.raises(ValueError, match="controlled vehicle"):
        ReplayDrivingEnv([sc], observation=OBS)


def test_vectorized_observation_of_the_controlled_slots_equals_the_full_build():
    """Only the controlled slots' sets are built; they equal, bit for bit, those of the same env
    building every slot (also after `set_density`);
    replayed and empty slots get empty sets. A vectorized env builds its renderer only when a
    view is asked for."""
    sources = [str(p) for p in _json_files()]
    part = ReplayDrivingEnv(sources, observation=OBS, seed=0)
    full = ReplayDrivingEnv(sources, observation=OBS, seed=0, observe_all_slots=True)
    assert part._renderer is None and full._renderer is None
    gen = torch.Generator().manual_seed(0)
    for density in (1.0, 0.5):
        for env in (part, full):
            env.set_density(density)
        controlled = torch.as_tensor(part.replay_log.slot_mode == SLOT_CONTROLLED)
        assert 0 < int(controlled.sum()) < part.num_slots
        tds = [part.reset(), full.reset()]
        for t in range(4):
            got, want = (td["observation"] for td in tds)
            for key in (*part.vectorized.shapes(), "ego_aux"):
                assert torch.equal(got[key][controlled], want[key][controlled]), (density, t, key)
                assert not got[key][~controlled].any(), (density, t, key)
            assert want["lanes_mask"][~controlled].any()  # the full build fills replayed slots
            action = torch.randint(0, 12, (part.num_slots,), generator=gen)
            tds = [env.step(td.set("action", action.clone()))["next"] for env, td in zip((part, full), tds, strict=True)]
    assert part._renderer is None
    snap = {k: v.unsqueeze(0) for k, v in part.snapshot().items()}
    view = part.render_history(snap, torch.zeros(1, dtype=torch.int64), torch.zeros(1, dtype=torch.int64))
    assert view.shape == (1, part.num_cameras, part.rig.height, part.rig.width, 3) and part._renderer is not None
