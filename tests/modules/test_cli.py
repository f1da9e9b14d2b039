"""The LightningCLI entry point end to end on CPU, with the FakeDrivingEnv."""

import glob
import io
import json
import os
import signal
from pathlib import Path

import pytest
import torch
import yaml
from lightning.pytorch.callbacks import Callback
from PIL import Image

from pictura.cli import main
from pictura.modules.cli import run_lightning_cli
from pictura.modules.ppo import RESUME_KEY

HEAD = """
seed_everything: 0
trainer:
  accelerator: cpu
  devices: 1
  max_epochs: -1
  log_every_n_steps: 1
  enable_model_summary: false
  enable_progress_bar: false
  logger:
    class_path: lightning.pytorch.loggers.TensorBoardLogger
    init_args: {{save_dir: {root}, name: tiny, version: v0}}
  callbacks:
    - class_path: lightning.pytorch.callbacks.ModelCheckpoint
      init_args: {{save_last: true}}
"""
"""The tiny runs' seed and trainer, up to their callbacks (``.format(root=...)``)."""

POLICY = """
    policy:
      class_path: pictura.modules.AlbertiPolicy
      init_args:
        group_width: 8
        trunk_width: 32
        trunk_layers: 2
        conv_channels: [8, 8, 8, 16, 16]
        queries_per_camera: 2
        attention_heads: 2
        camera_width: 8
    seed: ${{...seed_everything}}
"""
"""The tiny runs' policy (under ``model.init_args``), for 32x18 views."""

TINY = HEAD + """\
    - class_path: pictura.callbacks.CameraVideo
      init_args:
        every_n_iterations: 0
        max_frames: ${{.....model.init_args.rollout_steps}}
        scale: 2
model:
  class_path: pictura.modules.PPO
  init_args:
    env:
      class_path: tests.modules.fake_env.FakeDrivingEnv
      init_args:
        num_worlds: 2
        slots_per_world: 4
        agents_per_world: [2, 4]
        episode_length: 6
        rig:
          class_path: tests.modules.fake_env.FakeRig
          init_args: {{width: 32, height: 18}}""" + POLICY + """\
    rollout_steps: 6
    minibatch_size: 24
    chunk_size: 16
    max_iterations: 1
"""


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    config = root / "tiny.yaml"
    config.write_text(TINY.format(root=root))
    cli = run_lightning_cli(["fit", "-c", str(config)])
    return root, config, cli


def test_fit_writes_events_checkpoint_and_gif(first_run):
    root, _, cli = first_run
    log_dir = root / "tiny" / "v0"
    assert glob.glob(str(log_dir / "events.out.tfevents.*"))
    assert (log_dir / "checkpoints" / "last.ckpt").exists()
    gifs = sorted(glob.glob(str(log_dir / "videos" / "iter_*.gif")))
    assert gifs and os.path.basename(gifs[-1]) == "iter_0001.gif"
    assert int(cli.model.iteration) == 1
    assert cli.trainer.global_step >= 2  # 2 epochs x >= 1 minibatch, one optimizer step each
    # the event file holds the PPO scalars
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for tag in ("train/loss/policy", "train/loss/value", "train/loss/entropy", "train/loss/total",
                "train/approx_kl", "train/clip_fraction", "train/explained_variance",
                "train/advantage_filter/kept_fraction", "train/reward/goal", "train/learning_rate",
                "train/grad_norm", "train/grad_norm/policy", "train/grad_norm/value", "train/grad_norm/entropy",
                "train/advantage/abs_p99", "train/return/std", "train/value/rms_error",
                "perf/agent_steps_per_s"):
        assert tag in tags, tag
    assert "camera/mosaic" in acc.Tags()["images"]
    # one x-axis: the iterations completed, for scalars and images alike; no placeholder hp_metric
    assert "hp_metric" not in tags
    assert [e.step for e in acc.Scalars("train/iteration")] == [1]
    assert [e.step for e in acc.Images("camera/mosaic")] == [e.step for e in acc.Images("camera/video")] == [1]
    # the video plays in TensorBoard: the image's bytes are the animated GIF
    video = Image.open(io.BytesIO(acc.Images("camera/video")[0].encoded_image_string))
    assert video.format == "GIF" and video.n_frames > 1


def test_resume_from_checkpoint_continues(first_run):
    root, config, cli = first_run
    ckpt = root / "tiny" / "v0" / "checkpoints" / "last.ckpt"
    saved = torch.load(ckpt, map_location="cpu", weights_only=False)
    assert saved["state_dict"]["iteration"] == 1
    assert float(saved["state_dict"]["filter.max_abs_ema"]) > 0
    assert saved["optimizer_states"] and saved["lr_schedulers"]
    step_before = saved["global_step"]
    resumed = run_lightning_cli([
        "fit", "-c", str(config), "--model.init_args.max_iterations=2",
        "--trainer.logger.init_args.version=v1", f"--ckpt_path={ckpt}",
    ])
    assert int(resumed.model.iteration) == 2
    assert resumed.model.hparams.max_iterations == 2  # the command's setting, not the checkpoint's 1
    assert resumed.trainer.global_step > step_before
    assert resumed.model.lr_schedulers().last_epoch == 2
    # the finished run ended at rate 0; extended to 2 iterations, iteration 2 trained at the
    # recomputed cosine's rate, 5e-4 x (1 + cos(pi / 2)) / 2, and after it the rate reached 0
    assert resumed.trainer.callback_metrics["train/learning_rate"] == pytest.approx(2.5e-4, rel=1e-6)
    assert resumed.model.optimizers().param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


def test_resuming_a_finished_run_trains_nothing(first_run, capsys):
    root, config, _ = first_run
    ckpt = root / "tiny" / "v0" / "checkpoints" / "last.ckpt"
    before = ckpt.read_bytes()
    main(["fit", "-c", str(config), "--trainer.logger.init_args.version=v_again", f"--ckpt_path={ckpt}"])
    assert "already finished its 1 of max_iterations=1 iterations" in capsys.readouterr().err
    assert ckpt.read_bytes() == before


def test_checkpoint_from_an_incompatible_config_names_the_mismatch(first_run):
    root, config, _ = first_run
    ckpt = root / "tiny" / "v0" / "checkpoints" / "last.ckpt"
    with pytest.raises(ValueError, match=r"does not fit this config.*trunk.*\(32, 48\).*\(16, 48\)"):
        run_lightning_cli([
            "fit", "-c", str(config), "--model.init_args.policy.init_args.trunk_width=16",
            "--model.init_args.max_iterations=2", "--trainer.logger.init_args.version=v2", f"--ckpt_path={ckpt}",
        ])


def test_print_config_round_trips(tmp_path, capsys, first_run):
    _, config, _ = first_run
    with pytest.raises(SystemExit):
        run_lightning_cli(["fit", "-c", str(config), "--print_config"])
    printed = capsys.readouterr().out
    assert "max_frames: 6" in printed  # interpolation resolved after merging
    again = tmp_path / "printed.yaml"
    again.write_text(printed)
    with pytest.raises(SystemExit):
        run_lightning_cli(["fit", "-c", str(again), "--print_config"])
    assert yaml.safe_load(capsys.readouterr().out) == yaml.safe_load(printed)


def test_wrong_key_names_the_key(capsys, first_run):
    _, config, _ = first_run
    with pytest.raises(SystemExit) as exit_info:
        main(["fit", "-c", str(config), "--model.init_args.rollout_stepz=3"])
    assert exit_info.value.code == 2
    assert "rollout_stepz" in capsys.readouterr().err


def test_repository_configs_parse_and_interpolate(capsys):
    """configs/alberti.yaml and the cpu.yaml overlay parse (no env is built by --print_config)."""
    pytest.importorskip("pictura.envs")
    root = os.path.join(os.path.dirname(__file__), "..", "..", "configs")
    alberti, cpu = os.path.join(root, "alberti.yaml"), os.path.join(root, "cpu.yaml")
    with pytest.raises(SystemExit):
        run_lightning_cli(["fit", "-c", alberti, "--print_config"])
    full = yaml.safe_load(capsys.readouterr().out)
    ppo = full["model"]["init_args"]
    env = ppo["env"]["init_args"]
    assert env["num_worlds"] * env["slots_per_world"] == 20_480 and env["agents_per_world"] == [1, 120]
    assert (ppo["rollout_steps"], ppo["minibatch_size"], ppo["update_epochs"]) == (128, 65_536, 2)
    assert (ppo["gamma"], ppo["gae_lambda"], ppo["clip_coef"]) == (0.999, 0.95, 0.2)
    video = next(c for c in full["trainer"]["callbacks"] if c["class_path"].endswith("CameraVideo"))
    assert video["init_args"]["max_frames"] == 128  # interpolated from rollout_steps
    with pytest.raises(SystemExit):
        run_lightning_cli(["fit", "-c", alberti, "-c", cpu, "--print_config"])
    small = yaml.safe_load(capsys.readouterr().out)
    assert small["trainer"]["accelerator"] == "cpu"
    small_video = next(c for c in small["trainer"]["callbacks"] if c["class_path"].endswith("CameraVideo"))
    assert small_video["init_args"]["max_frames"] == 32  # follows the overlay
    sweep = next(c for c in small["trainer"]["callbacks"] if c["class_path"].endswith("DensitySweep"))
    assert sweep["init_args"]["densities"] == [8, 16]  # the overlay's small end-of-fit evaluation
    assert small["model"]["init_args"]["chunk_size"] == small["model"]["init_args"]["minibatch_size"] == 256
    assert small["model"]["init_args"]["env"]["init_args"]["rig"]["init_args"]["width"] == 48


def test_trainer_max_steps_counts_gradient_steps(first_run):
    root, config, _ = first_run
    cli = run_lightning_cli([
        "fit", "-c", str(config), "--model.init_args.max_iterations=null", "--trainer.max_steps=3",
        "--trainer.logger.init_args.version=v2",
    ])
    # the run stops at the end of the PPO iteration whose optimizer steps reach max_steps
    per_iteration = cli.trainer.global_step / int(cli.model.iteration)
    assert cli.trainer.global_step >= 3 and cli.trainer.global_step - per_iteration < 3


class _IterationScalars(Callback):
    """Every iteration's logged ``train/`` scalars; a checkpoint after iteration ``save_at``."""

    def __init__(self, save_at: int | None = None, path=None):
        self.save_at, self.path, self.seen = save_at, path, {}

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        iteration = int(pl_module.iteration)
        self.seen[iteration] = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("train/")}
        if iteration == self.save_at:
            trainer.save_checkpoint(self.path)


def _fit(config, version: str, callback: _IterationScalars, ckpt_path=None, extra: tuple[str, ...] = ()) -> None:
    cli = run_lightning_cli(
        ["fit", "-c", str(config), "--model.init_args.max_iterations=3", f"--trainer.logger.init_args.version={version}",
         *extra],
        run=False,
    )
    cli.trainer.callbacks.append(callback)
    cli.trainer.fit(cli.model, ckpt_path=ckpt_path)


@pytest.fixture(scope="module")
def straight(first_run) -> tuple[_IterationScalars, Path]:
    """An uninterrupted 3-iteration run's scalars, and its checkpoint after iteration 2."""
    root, config, _ = first_run
    mid = root / "iteration2.ckpt"
    straight = _IterationScalars(save_at=2, path=mid)
    _fit(config, "straight", straight)
    assert sorted(straight.seen) == [1, 2, 3]
    return straight, mid


def test_resume_reproduces_the_uninterrupted_next_iteration(first_run, straight):
    """Stop after iteration 2 of 3 and resume: iteration 3's losses, rewards and filter
    statistics equal the uninterrupted run's bit for bit (same worlds mid-episode, same random
    numbers). Without the saved env and RNG state they do not."""
    root, config, _ = first_run
    straight, mid = straight

    resumed = _IterationScalars()
    _fit(config, "resumed", resumed, ckpt_path=mid)
    assert sorted(resumed.seen) == [3]
    assert resumed.seen[3] == straight.seen[3]
    assert "train/loss/total" in resumed.seen[3]

    saved = torch.load(mid, map_location="cpu", weights_only=False)
    del saved[RESUME_KEY]
    fresh_worlds = root / "iteration2_without_env.ckpt"
    torch.save(saved, fresh_worlds)
    reseeded = _IterationScalars()
    _fit(config, "reseeded", reseeded, ckpt_path=fresh_worlds)
    assert reseeded.seen[3]["train/reward/total"] != straight.seen[3]["train/reward/total"]


def test_resume_with_value_normalization_reproduces_the_next_iteration(first_run):
    """The learning-curve overlays turn value normalisation on: a resumed run continues its
    statistics (mean, spread, whether they are initialised) with the uninterrupted run's, so
    iteration 3 logs the same scalars, the statistics among them."""
    root, config, _ = first_run
    mid = root / "iteration2_vn.ckpt"
    extra = ("--model.init_args.value_normalization=true",)
    straight = _IterationScalars(save_at=2, path=mid)
    _fit(config, "vn_straight", straight, extra=extra)
    resumed = _IterationScalars()
    _fit(config, "vn_resumed", resumed, ckpt_path=mid, extra=extra)
    assert sorted(resumed.seen) == [3]
    assert resumed.seen[3] == straight.seen[3]
    assert straight.seen[3]["train/value/norm_std"] != straight.seen[1]["train/value/norm_std"]


def test_value_normalization_trains_logs_and_refuses_a_checkpoint_without_it(first_run):
    """The option runs an iteration, logs its statistics, and saves them with the weights; a
    checkpoint of a run without it does not fit a config with it (the error names them)."""
    root, config, _ = first_run
    cli = run_lightning_cli([
        "fit", "-c", str(config), "--model.init_args.value_normalization=true",
        "--trainer.logger.init_args.version=vn",
    ])
    assert float(cli.model.return_norm.std()) > 0 and bool(cli.model.return_norm.initialised)
    assert "train/value/norm_std" in cli.trainer.callback_metrics
    saved = torch.load(root / "tiny" / "vn" / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert "return_norm.mean" in saved["state_dict"] and "return_norm.mean_sq" in saved["state_dict"]
    with pytest.raises(ValueError, match=r"does not fit this config.*missing return_norm"):
        run_lightning_cli([
            "fit", "-c", str(config), "--model.init_args.value_normalization=true",
            "--model.init_args.max_iterations=2", "--trainer.logger.init_args.version=vn2",
            f"--ckpt_path={root / 'tiny' / 'v0' / 'checkpoints' / 'last.ckpt'}",
        ])


def _fit_until_signal(config, version: str, signum: int, at: int, ckpt_path=None) -> tuple[int, dict]:
    """A 3-iteration fit through the whole CLI, sent the real signal ``signum`` as iteration
    ``at`` starts (`SignalAt`); returns the exit code and the iterations' scalars."""
    record = config.parent / f"{version}.json"
    probe = {"class_path": "tests.modules.signal_probe.SignalAt",
             "init_args": {"record": str(record), "at": at, "signum": int(signum)}}
    args = ["fit", "-c", str(config), "--model.init_args.max_iterations=3",
            f"--trainer.logger.init_args.version={version}", f"--trainer.callbacks+={json.dumps(probe)}"]
    code = 0
    try:
        run_lightning_cli(args + ([f"--ckpt_path={ckpt_path}"] if ckpt_path else []))
    except SystemExit as exit_:
        code = exit_.code
    return code, {int(k): v for k, v in json.loads(record.read_text()).items()}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_saves_a_checkpoint_that_resumes_exactly(first_run, straight, signum):
    """Ctrl-C during iteration 2 (SIGTERM: 1): it finishes, ``last.ckpt`` is written, the
    command exits with 128 + the signal number; resumed from that file, iteration 3 equals the
    uninterrupted run's bit for bit."""
    root, config, _ = first_run
    straight, _ = straight
    name = signal.Signals(signum).name
    at = 2 if signum == signal.SIGINT else 1
    code, stopped = _fit_until_signal(config, f"{name}_stopped", signum, at=at)
    assert code == 128 + signum
    assert sorted(stopped) == list(range(1, at + 1))  # the iteration in flight finished, then the run stopped
    assert signal.getsignal(signum) in (signal.default_int_handler, signal.SIG_DFL)  # handlers restored
    ckpt = root / "tiny" / f"{name}_stopped" / "checkpoints" / "last.ckpt"
    assert int(torch.load(ckpt, map_location="cpu", weights_only=False)["state_dict"]["iteration"]) == at
    if signum == signal.SIGINT:  # (one resume: both signals save through the same code)
        code, resumed = _fit_until_signal(config, f"{name}_resumed", 0, at=0, ckpt_path=ckpt)
        assert code == 0 and sorted(resumed) == [3]
        assert resumed[3] == straight.seen[3]


def test_jsonargparse_private_hook():
    """`pictura.modules.cli` replaces jsonargparse's private ``has_dunder_new_method`` (TorchRL's
    classmethod ``__new__`` fools it into reading an env's arguments from ``EnvBase.__new__``).
    This fails when a jsonargparse upgrade renames it, changes its arguments or stops calling it
    through the module, which the exact pin in pyproject.toml guards against."""
    import inspect

    import jsonargparse
    import jsonargparse._parameter_resolvers as resolvers

    from pictura.modules import cli
    from tests.modules.fake_env import FakeDrivingEnv

    assert jsonargparse.__version__ == "4.53.0"
    assert list(inspect.signature(cli.UPSTREAM_HAS_DUNDER_NEW).parameters) == ["cls", "attr_name"]
    assert resolvers.has_dunder_new_method is cli._own_dunder_new
    assert cli.UPSTREAM_HAS_DUNDER_NEW(FakeDrivingEnv, "__init__")  # the upstream misreading
    names = {p.name for p in resolvers.get_signature_parameters(FakeDrivingEnv)}
    assert {"num_worlds", "slots_per_world", "agents_per_world"} <= names
