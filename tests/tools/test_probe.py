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


def test_takeover_summary_has_standard_errors_over_cases():
    """Speeds per time point and the paired difference before reveal: means and standard
    errors (sample sd / sqrt(cases)) against a hand computation."""
    import numpy as np

    from pictura.eval import takeover

    cases = [
        takeover.Case(ego=0, start=0, reveal=2, hidden=True, speeds={"a": [1.0, 3.0, 5.0], "b": [2.0, 4.0, 6.0]}),
        takeover.Case(ego=1, start=0, reveal=2, hidden=True, speeds={"a": [3.0, 5.0, 7.0], "b": [3.0, 5.0, 9.0]}),
        takeover.Case(ego=2, start=0, reveal=2, hidden=False, speeds={"a": [0.0, 0.0, 0.0], "b": [1.0, 1.0, 1.0]}),
    ]
    out = takeover.summarize(cases, ["a", "b"])
    hidden = out["hidden"]
    curve = hidden["curves"]["a"]
    assert curve["time_from_reveal_s"] == [-0.2, -0.1, 0.0]
    assert curve["speed_mean"] == [2.0, 4.0, 6.0]
    assert curve["speed_se"] == pytest.approx([1.0, 1.0, 1.0])  # pairs 1, 3 / 3, 5 / 5, 7: sd sqrt 2
    # paired (b - a) mean speed over the two steps before reveal: case 0: 3 - 2 = 1, case 1: 4 - 4 = 0
    assert hidden["paired_speed_diff_before_reveal"] == [1.0, 0.0]
    assert hidden["paired_speed_diff_mean"] == 0.5
    assert hidden["paired_speed_diff_se"] == pytest.approx(np.std([1.0, 0.0], ddof=1) / np.sqrt(2))
    control = out["control"]  # one case: means, no standard errors
    assert control["paired_speed_diff_mean"] == 1.0 and control["paired_speed_diff_se"] is None
    assert control["curves"]["b"]["speed_se"] == [None, None, None]
