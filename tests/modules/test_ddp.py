"""A real two-process DDP run on CPU (gloo), launched the way users launch it.

``python -m pictura fit ... --trainer.devices=2 --trainer.strategy=ddp`` with the FakeDrivingEnv:
each rank builds half the worlds with its own seed, so the ranks keep different numbers of
transitions and split their minibatches into different numbers of pieces. The ranks must still
agree on every collective (a mismatch deadlocks or mixes up gradients), end with identical
weights, and log the mean of their metrics. A second run resumes from the checkpoint (each rank
gets its own worlds back) with one sample per rank per minibatch, so one rank has empty shares.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pictura.modules.ppo import RESUME_KEY
from tests.modules.test_cli import TINY

ROOT = Path(__file__).resolve().parents[2]
ITERATIONS = 2


def _fit_ddp(root: Path, probe: Path, *extra: str) -> None:
    probe.mkdir()
    env = dict(os.environ, PICTURA_DDP_PROBE=str(probe), PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    command = [
        sys.executable, "-m", "pictura", "fit", "-c", str(root / "tiny.yaml"),
        "--trainer.devices=2", "--trainer.strategy=ddp",
        "--model.class_path=tests.modules.ddp_probe.RecordingPPO",
        "--model.init_args.env.init_args.num_worlds=4",
        "--model.init_args.chunk_size=4",  # several pieces per minibatch, a different count per rank
        "--model.init_args.value_normalization=true",  # one more collective: the return statistics
        "--trainer.callbacks+=tests.modules.ddp_probe.SaveRankWeights",
        *extra,
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("ddp")
    (root / "tiny.yaml").write_text(TINY.format(root=root))
    _fit_ddp(root, root / "probe", f"--model.init_args.max_iterations={ITERATIONS}")
    return root / "probe"


@pytest.fixture(scope="module")
def ddp_resumed(ddp_run):
    root = ddp_run.parent
    ckpt = root / "tiny" / "v0" / "checkpoints" / "last.ckpt"
    # one sample per rank per minibatch: the rank that kept fewer transitions has empty shares
    _fit_ddp(root, root / "probe_resumed", f"--model.init_args.max_iterations={ITERATIONS + 1}",
             "--model.init_args.minibatch_size=2", "--model.init_args.chunk_size=1",
             "--trainer.logger.init_args.version=resumed", f"--ckpt_path={ckpt}")
    return root / "probe_resumed", torch.load(ckpt, weights_only=False)


def test_checkpoint_holds_every_ranks_env_state(ddp_run):
    """Rank 0 writes the checkpoint; both ranks' worlds are in it, so a resume continues both."""
    ckpt = torch.load(ddp_run.parent / "tiny" / "v0" / "checkpoints" / "last.ckpt", weights_only=False)
    ranks = ckpt[RESUME_KEY]["ranks"]
    assert len(ranks) == 2
    assert not torch.equal(ranks[0]["env"]["_box"], ranks[1]["env"]["_box"])  # different seeds


def test_each_rank_builds_half_the_worlds_and_steps_equally(ddp_run):
    ranks = [json.loads((ddp_run / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["num_slots"] for r in ranks] == [2 * 4, 2 * 4]  # 4 global worlds x 4 slots, halved
    assert ranks[0]["global_step"] == ranks[1]["global_step"] >= 2 * ITERATIONS


def test_ranks_share_the_return_statistics(ddp_run):
    """Each rank saw other worlds, yet both normalise their value targets by the same running
    statistics: the sums are reduced across ranks."""
    stats = [json.loads((ddp_run / f"rank{r}.json").read_text())["return_norm"] for r in (0, 1)]
    assert stats[0] == stats[1] and stats[0][1] > 0


def test_ranks_end_with_identical_weights_that_trained(ddp_run):
    first, second = (torch.load(ddp_run / f"weights_rank{r}.pt") for r in (0, 1))
    for name in first:
        assert torch.equal(first[name], second[name]), name


def test_logged_metrics_are_the_mean_over_ranks(ddp_run):
    for iteration in range(ITERATIONS):
        zero, one = (
            json.loads((ddp_run / f"metrics_rank{r}_iter{iteration + 1}.json").read_text()) for r in (0, 1)
        )
        assert zero["mean"] == one["mean"]
        # the ranks saw different worlds, so the mean is a real reduction
        assert zero["local"]["train/reward/total"] != one["local"]["train/reward/total"]
        for key, value in zero["local"].items():
            assert zero["mean"][key] == pytest.approx((value + one["local"][key]) / 2, rel=1e-5, abs=1e-6), key


def test_resume_restores_each_ranks_own_worlds(ddp_resumed):
    probe, ckpt = ddp_resumed
    for rank in (0, 1):
        saved_box = ckpt[RESUME_KEY]["ranks"][rank]["env"]["_box"].double().sum()
        start = json.loads((probe / f"start_rank{rank}.json").read_text())
        assert start["agent_box_sum"] == pytest.approx(float(saved_box), rel=1e-12), rank
        assert json.loads((probe / f"rank{rank}.json").read_text())["iteration"] == ITERATIONS + 1
    first, second = (torch.load(probe / f"weights_rank{r}.pt") for r in (0, 1))
    assert all(torch.equal(first[name], second[name]) for name in first)


def test_a_rank_with_empty_minibatch_shares_keeps_in_step(ddp_resumed):
    """Minibatches of one sample per rank: the rank that kept fewer transitions has nothing in
    some minibatches, backs a zero gradient there, and still ends with the other rank's weights."""
    probe, _ = ddp_resumed
    plans = [json.loads((probe / f"plan_rank{r}_iter{ITERATIONS + 1}.json").read_text()) for r in (0, 1)]
    assert plans[0]["minibatches"] == plans[1]["minibatches"] == max(p["kept"] for p in plans)
    assert min(p["kept"] for p in plans) < plans[0]["minibatches"]  # empty shares on one rank
