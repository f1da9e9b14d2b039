"""`PreemptionCheckpoint`'s periodic saves and its argument check (the signals themselves are
tested on a real CPU fit in tests/modules/test_cli.py)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from pictura.callbacks import PreemptionCheckpoint


def _trainer(tmp_path):
    saved = []
    trainer = SimpleNamespace(
        world_size=1, is_global_zero=True, checkpoint_callback=None, log_dir=str(tmp_path),
        default_root_dir=str(tmp_path), should_stop=False, saved=saved,
        _accelerator_connector=SimpleNamespace(cluster_environment=None),
        save_checkpoint=lambda path, weights_only=None: saved.append(path),
    )  # fmt: skip
    return trainer


def test_every_minutes_saves_last_ckpt_once_that_much_time_has_passed(tmp_path, monkeypatch):
    now = [0.0]
    monkeypatch.setattr("pictura.callbacks.preemption.time.monotonic", lambda: now[0])
    callback, trainer = PreemptionCheckpoint(every_minutes=2), _trainer(tmp_path)
    module = SimpleNamespace(iteration=1, device="cpu")
    for seconds in (30, 119, 121, 200, 245):  # iteration boundaries
        now[0] = seconds
        callback.on_train_batch_end(trainer, module, None, None, 0)
    # saved at 121 s (2 minutes after the start), then at 245 s (2 minutes after that save)
    assert trainer.saved == [os.path.join(str(tmp_path), "checkpoints", "last.ckpt")] * 2
    assert not trainer.should_stop


def test_without_every_minutes_nothing_is_saved_until_a_signal(tmp_path):
    callback, trainer = PreemptionCheckpoint(), _trainer(tmp_path)
    module = SimpleNamespace(iteration=3, device="cpu")
    callback.on_train_batch_end(trainer, module, None, None, 0)
    assert trainer.saved == []
    callback.received = 15  # SIGTERM: saved, then the run ends with 128 + 15
    with pytest.raises(SystemExit) as exit_info:
        callback.on_train_batch_end(trainer, module, None, None, 0)
    assert len(trainer.saved) == 1 and exit_info.value.code == 143


@pytest.mark.parametrize("minutes", [-1.0, float("nan")])
def test_a_negative_interval_is_named(minutes):
    with pytest.raises(ValueError, match="every_minutes"):
        PreemptionCheckpoint(every_minutes=minutes)


def test_slurm_requeue_signal_saves_lightnings_hpc_checkpoint_at_the_boundary(tmp_path):
    """Under SLURM with auto-requeue the requeue signal (SIGUSR1) is one of the handled signals;
    at the iteration boundary Lightning's own requeue runs (it writes ``hpc_ckpt_N.ckpt``, which
    the requeued job resumes from, and calls ``scontrol requeue``), then the run ends."""
    import signal

    from lightning.fabric.plugins.environments import SLURMEnvironment

    calls = []
    trainer = _trainer(tmp_path)
    trainer._accelerator_connector.cluster_environment = SLURMEnvironment(auto_requeue=True)
    trainer._signal_connector = SimpleNamespace(_slurm_sigusr_handler_fn=lambda signum, frame: calls.append(signum))
    trainer._checkpoint_connector = SimpleNamespace(hpc_save_path=lambda folder: os.path.join(folder, "hpc_ckpt_1.ckpt"))
    callback = PreemptionCheckpoint()
    assert signal.SIGUSR1 in callback._signals(trainer)
    callback.received = signal.SIGUSR1
    with pytest.raises(SystemExit):
        callback.on_train_batch_end(trainer, SimpleNamespace(iteration=5, device="cpu"), None, None, 0)
    assert calls == [signal.SIGUSR1] and trainer.saved == []  # Lightning's save, not last.ckpt
    assert callback.saved == os.path.join(str(tmp_path), "hpc_ckpt_1.ckpt")
