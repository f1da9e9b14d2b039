"""``python -m pictura probe``: both probes write JSON (checked against the input-blind control) and a PNG."""

import json

import pytest
from PIL import Image

from pictura.tools import probe

COMMON = ["--policy", "constant:7", "--map", "procedural:seed=0", "--agents", "6", "--resolution", "32x18",
          "--warmup", "4", "--stride", "3"]


def test_removal_probe_writes_json_and_png(tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    probe.main(["removal", *COMMON, "--states", "1", "--egos", "1", "--json", str(out), "--png", str(png)])
    data = json.loads(out.read_text())
    assert data["probe"] == "removal" and len(data["bins"]) == 5
    assert sum(b["count"] for b in data["bins"]) == len(data["records"]) > 0
    assert all(r["dV"] == 0.0 for r in data["records"])  # constant policy: no effect
    assert Image.open(png).size[0] > 100


def test_pedestrian_probe_writes_json_and_png(tmp_path):
    out, png = tmp_path / "p.json", tmp_path / "p.png"
    probe.main(["pedestrian", *COMMON, "--states", "3", "--positions", "5", "--json", str(out), "--png", str(png)])
    data = json.loads(out.read_text())
    assert data["probe"] == "pedestrian" and len(data["offset"]) == 5
    assert data["dP_brake"] == [0.0] * 5
    assert png.exists()


def test_takeover_replays_the_recording_exactly_for_the_same_policy(tmp_path):
    """Same policy twice: deterministic replay gives identical ego speeds (paired diffs 0)."""
    out, png = tmp_path / "t.json", tmp_path / "t.png"
    probe.main(["takeover", "--policy", "constant:9", "--against", "constant:9", "--map", "procedural:seed=0",
                "--agents", "4", "--resolution", "32x18", "--record-steps", "40", "--horizon", "10",
                "--cases", "1", "--json", str(out), "--png", str(png)])
    data = json.loads(out.read_text())
    assert data["policies"] == ["constant:9", "constant:9_b"]
    assert data["cases"], "a 40-step recording near a junction should give at least one case"
    for case in data["cases"]:
        a, b = case["speeds"].values()
        assert len(a) == 10 and a == b
    assert png.exists()


def test_removal_probe_without_neighbours_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no probed ego has a road user within 0.5 m"):
        probe.main(["removal", "--policy", "constant:7", "--map", "procedural:seed=0", "--agents", "2",
                    "--resolution", "32x18", "--states", "1", "--radius", "0.5", "--json", str(tmp_path / "r.json")])


def test_takeover_in_an_env_of_another_observation_layout_rewinds_to_the_same_world():
    """A vectorized env built with the same arguments restores the perspective env's recorded
    states, so a policy of either layout takes over the same situation (Alberti vs Vectorized)."""
    from pictura.envs import DrivingEnv
    from pictura.envs.observations import VectorizedObservationConfig
    from pictura.eval import takeover
    from pictura.eval.probes import ProbedPolicy
    from pictura.render import CameraRig

    kwargs = dict(seed=2, maps=["procedural:seed=0"], num_worlds=1, slots_per_world=7, agents_per_world=(6, 6))
    pixels = DrivingEnv(rig=CameraRig(width=32, height=18), validate_actions=False, **kwargs)
    sets = DrivingEnv(observation=VectorizedObservationConfig(variant="blind"), validate_actions=False, **kwargs)
    driver = ProbedPolicy.baseline("constant:9")
    rec = takeover.record(pixels, driver, 20)
    case = takeover.Case(ego=int(rec.valid[5].nonzero()[0][0]), start=5, reveal=10, hidden=False)
    a = takeover.take_over(pixels, rec, case, driver, "a", horizon=10)
    b = takeover.take_over(sets, rec, case, driver, "b", horizon=10)
    assert a == b and len(a) == 10
