"""Top-down overview: agents land where a closed-form metres->pixels map puts them, coloured by type."""

import numpy as np
import pytest
from PIL import Image

from pictura.eval.overview import (
    EGO_COLOR,
    GOAL_COLOR,
    INFRACTION_COLOR,
    KIND_COLOR,
    LIGHT_RGB,
    PARKED_COLOR,
    draw_overview,
    side_by_side,
    world_rows,
)
from pictura.maps.roadmap import AGENT_CYCLIST, AGENT_PEDESTRIAN, AGENT_VEHICLE, LIGHT_GREEN, RoadMap
from pictura.sim.snapshot import WorldLayout

SIZE, RADIUS = 400, 50.0  # 4 px per m, window centred on the ego at (100, 200)


def pixel(img: np.ndarray, x: float, y: float) -> tuple[int, ...]:
    u = int((x - 100.0) * SIZE / (2 * RADIUS) + SIZE / 2)
    v = int((200.0 - y) * SIZE / (2 * RADIUS) + SIZE / 2)
    return tuple(int(c) for c in img[v, u])


def scene() -> np.ndarray:
    return np.array([
        [100.0, 200.0, 0, 0.0, 4.5, 2.0, 1.5, AGENT_VEHICLE],      # ego
        [120.0, 200.0, 0, 0.5, 4.5, 2.0, 1.5, AGENT_VEHICLE],
        [100.0, 220.0, 0, 0.0, 3.0, 3.0, 1.8, AGENT_PEDESTRIAN],
        [80.0, 180.0, 0, 1.0, 3.0, 3.0, 1.7, AGENT_CYCLIST],
        [70.0, 230.0, 0, 0.0, 4.5, 2.0, 1.5, -1.0],                # empty slot: not drawn
        [130.0, 170.0, 0, 0.0, 4.5, 2.0, 1.5, AGENT_VEHICLE],     # parked
    ], np.float32)


def test_agents_are_drawn_at_their_positions_in_their_colours():
    parked = np.array([0, 0, 0, 0, 0, 1], bool)
    img = draw_overview(RoadMap("empty"), scene(), None, 0, parked=parked, size=SIZE, radius=RADIUS)
    assert img.shape == (SIZE, SIZE, 3) and img.dtype == np.uint8
    assert pixel(img, 99.0, 200.5) == EGO_COLOR  # off the white heading tick along +x
    assert pixel(img, 119.0, 199.0) == KIND_COLOR[AGENT_VEHICLE]
    assert pixel(img, 100.5, 220.5) == KIND_COLOR[AGENT_PEDESTRIAN]
    assert pixel(img, 80.0, 180.6) == KIND_COLOR[AGENT_CYCLIST]
    assert pixel(img, 129.0, 170.5) == PARKED_COLOR
    background = pixel(img, 70.0, 230.0)
    assert background not in KIND_COLOR.values()


def test_goals_lights_and_infractions_are_marked():
    road_map = RoadMap(
        "light",
        light_position=np.array([[90.0, 190.0, 5.0]], np.float32),
        light_heading=np.zeros(1, np.float32),
        light_junction=np.zeros(1, np.int32),
        light_group=np.zeros(1, np.int32),
    )
    infractions = np.array([0, 1, 0, 0, 0, 0], bool)
    img = draw_overview(road_map, scene(), np.array([LIGHT_GREEN]), 0, goals=np.array([[110.0, 230.0, 0.0]]),
                        infractions=infractions, size=SIZE, radius=RADIUS)
    assert pixel(img, 90.0, 190.0) == LIGHT_RGB[LIGHT_GREEN]
    assert pixel(img, 110.0, 230.0) == GOAL_COLOR
    assert pixel(img, 120.0, 200.0) == INFRACTION_COLOR


def test_bad_inputs_name_the_field():
    with pytest.raises(ValueError, match="ego"):
        draw_overview(RoadMap("empty"), scene(), None, 4)
    with pytest.raises(ValueError, match="light_state"):
        draw_overview(RoadMap("empty"), scene(), np.array([0]), 0)
    with pytest.raises(ValueError, match="infractions"):
        draw_overview(RoadMap("empty"), scene(), None, 0, infractions=np.zeros(3, bool))


def test_world_rows_and_side_by_side():
    lay = WorldLayout.uniform([0, 0], 3, [0], parked_per_world=2)
    assert world_rows(lay, 1).tolist() == [3, 4, 5, 8, 9]
    # packed: the slots come from the snapshot's slot table (6 slots, 2 records: 4 + 2 agents)
    packed = WorldLayout.packed([0, 0], 6, 2, [0], parked_per_world=2)
    table = np.array([0, 0, 0, 0, 1, 1] + [0, 4] + [4, 2])  # slot_world | starts | counts
    assert world_rows(packed, 1, table).tolist() == [4, 5, 8, 9]
    assert world_rows(packed, 0, table).tolist() == [0, 1, 2, 3, 6, 7]
    with pytest.raises(ValueError, match="slot_table"):
        world_rows(packed, 0)
    a, b = np.full((4, 5, 3), 1, np.uint8), np.full((6, 2, 3), 2, np.uint8)
    out = side_by_side([a, b], gap=3)
    assert out.shape == (6, 10, 3)
    assert (out[:4, :5] == 1).all() and (out[4:, :5] == 0).all() and (out[:, 8:] == 2).all()


def test_camera_video_callback_draws_the_same_overview(tmp_path):
    """`CameraVideo(overview=True)`: the mosaic, then `overview_for_slot` of the same snapshot."""
    from types import SimpleNamespace

    import torch

    from pictura.callbacks.video import CameraVideo, tile_views
    from pictura.envs import DrivingEnv
    from pictura.eval.overview import overview_for_slot
    from pictura.render import CameraRig

    env = DrivingEnv(maps=["procedural:seed=0"], num_worlds=1, slots_per_world=3, agents_per_world=(3, 3),
                     rig=CameraRig(width=16, height=9), validate_actions=False)
    td = env.reset()
    snap = env.snapshot()
    box, light = snap["agent_box"], snap["light_state"]
    rollout = {**{key: value[None] for key, value in snap.items()}, "valid": td["valid"][None]}
    module = SimpleNamespace(rollout=rollout, env=env, iteration=torch.tensor(1))
    trainer = SimpleNamespace(is_global_zero=True, log_dir=str(tmp_path), default_root_dir=str(tmp_path),
                              global_step=1, logger=None)
    video = CameraVideo(every_n_iterations=1, max_frames=1, scale=1, overview=True)
    video.on_train_batch_end(trainer, module, None, None, 0)
    got = np.asarray(Image.open(tmp_path / "videos" / "iter_0001.gif").convert("RGB"))
    slot = int(rollout["valid"].sum(0).argmax())
    views = env.render_history(rollout, torch.tensor([0]), torch.tensor([slot]))[0].numpy()
    mosaic = tile_views(views, ["front", "front_left", "front_right", "back"], 1, 2)
    expected = side_by_side([mosaic, overview_for_slot(env, box.numpy(), light.numpy(), slot,
                                                       size=mosaic.shape[0], title="step 0")])
    assert got.shape == expected.shape
    assert np.abs(got.astype(int) - expected).mean() < 8  # GIF palette quantisation
