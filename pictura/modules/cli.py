"""LightningCLI entry point: ``python -m pictura fit -c configs/alberti.yaml [-c configs/cpu.yaml] ...``.

The model is a `PPO` subclass chosen by ``model.class_path``; its ``env`` and ``policy`` are
factories given as ``class_path`` + ``init_args`` (jsonargparse turns a class under a
``Callable[..., ReturnType]`` hint into a partial that `PPO.setup` calls with the device and
seed, resp. the env's observation spec and action count). Configs use omegaconf
interpolation, resolved after every config file and override is merged ("omegaconf+").
"""

from __future__ import annotations

import inspect
import logging
import os
import shutil
import sys
import warnings

import jsonargparse._parameter_resolvers as _resolvers
from lightning.pytorch.cli import LightningCLI

from pictura.callbacks.density_sweep import DensitySweep
from pictura.callbacks.gradients import GradientDiagnostics
from pictura.callbacks.preemption import PreemptionCheckpoint
from pictura.modules.ppo import PPO


def _own_dunder_new(cls, attr_name) -> bool:
    """jsonargparse's ``has_dunder_new_method``, comparing ``__new__`` by its function.

    TorchRL's ``EnvBase.__new__`` is a *classmethod*: every access returns a fresh bound
    method, so jsonargparse (4.53.0, pinned) believes every env subclass defines its own ``__new__`` and
    reads the env's arguments from ``EnvBase.__new__(*args, _inplace_update, _batch_locked)``
    instead of ``__init__`` (``env.init_args.num_worlds`` would be "not accepted"). Comparing
    the underlying functions restores the ``__init__`` signature.
    """

    def func(method):
        return getattr(inspect.unwrap(method), "__func__", inspect.unwrap(method))

    if attr_name != "__init__":
        return False
    origin = _resolvers.get_generic_origin(cls)
    new = func(origin.__new__)
    return new is not object.__new__ and not any(new is func(c.__new__) for c in inspect.getmro(origin)[1:])


# jsonargparse is pinned exactly (pyproject.toml) for this private hook; tests/modules/
# test_cli.py's test_jsonargparse_private_hook fails when an upgrade moves or changes it.
UPSTREAM_HAS_DUNDER_NEW = _resolvers.has_dunder_new_method
_resolvers.has_dunder_new_method = _own_dunder_new
# PPO's "dataloader" is an endless stream of iteration indices: workers would be pointless,
# its length is the iteration count (never split over workers), and fit's validation loader is
# empty on purpose (evaluation is the DensitySweep callbacks' job).
warnings.filterwarnings("ignore", message=r".*does not have many workers.*")
warnings.filterwarnings("ignore", message=r".*Your `IterableDataset` has `__len__` defined.*")
warnings.filterwarnings("ignore", message=r".*Total length of `_IterationLoader` across ranks is zero.*")
# Lightning's own use of a torch pytree API that torch deprecated: nothing a user can act on.
warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)` is deprecated.*")


class _NoAdvert(logging.Filter):
    """Drops Lightning's advertisement for a logging service printed on every fit."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "litlogger" not in record.getMessage()


for _name in ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):
    logging.getLogger(_name).addFilter(_NoAdvert())


def _differences(asked, used, prefix: str = "model") -> list[str]:
    """Dotted keys where the model config ``used`` differs from what the command ``asked``."""
    if isinstance(asked, dict) and isinstance(used, dict):
        out = []
        for key in sorted(set(asked) | set(used)):
            out += _differences(asked.get(key), used.get(key), f"{prefix}.{key}")
        return out
    return [] if asked == used else [f"{prefix}: {asked!r} (checkpoint: {used!r})"]


class PicturaCLI(LightningCLI):
    """LightningCLI with Pictura's defaults (no datamodule: PPO makes its own data; a
    `PreemptionCheckpoint` and a `GradientDiagnostics` in every run whose config has none;
    under ``validate`` / ``test`` a default `DensitySweep`, the in-domain evaluation those
    commands run, when it has none)."""

    preemption: PreemptionCheckpoint | None = None
    checkpoint_iteration: int | None = None  # the PPO iterations of --ckpt_path's run

    def fit(self, model, **kwargs) -> None:
        """``trainer.fit``, unless ``--ckpt_path`` is a run that already reached this command's
        ``max_iterations``: then say so and train nothing (the checkpoint stays as it is)."""
        done, target = self.checkpoint_iteration, getattr(model.hparams, "max_iterations", None)
        if kwargs.get("ckpt_path") and done is not None and target is not None and done >= target:
            print(
                f"--ckpt_path {kwargs['ckpt_path']}: the run already finished its {done} of max_iterations={target} "
                "iterations; nothing to train. To continue it, pass a larger --model.init_args.max_iterations "
                "(the learning-rate schedule is recomputed over the new total).",
                file=sys.stderr,
            )
            return
        self.trainer.fit(model, **kwargs)

    def before_instantiate_classes(self) -> None:
        """TensorBoard without its placeholder ``hp_metric`` scalar (-1 on every run: PPO has
        no single metric to put there)."""
        sub = self.config.get("subcommand")
        trainer = self.config[sub]["trainer"] if sub else self.config.get("trainer")
        loggers = trainer.get("logger") if trainer is not None else None
        for logger in loggers if isinstance(loggers, list) else [loggers]:
            if str(getattr(logger, "class_path", "")).endswith("TensorBoardLogger"):
                logger.init_args["default_hp_metric"] = False

    def _instantiate_trainer(self, config: dict, callbacks: list):
        listed = [c for c in (config.get("callbacks") or []) + callbacks if isinstance(c, PreemptionCheckpoint)]
        if not listed:
            callbacks = [*callbacks, PreemptionCheckpoint()]
            listed = callbacks[-1:]
        self.preemption = listed[0]
        given = (config.get("callbacks") or []) + callbacks
        if not any(isinstance(c, GradientDiagnostics) for c in given):
            callbacks = [*callbacks, GradientDiagnostics()]
        if self.subcommand in ("validate", "test") and not any(isinstance(c, DensitySweep) for c in given):
            callbacks = [*callbacks, DensitySweep()]
        return super()._instantiate_trainer(config, callbacks)

    def _run_subcommand(self, subcommand: str) -> None:
        """Run it; after a signal that stopped training (and saved its checkpoint), exit with
        128 + the signal number, as a shell reports a process the signal ended. A ``fit``
        that fails before its first iteration (a setup error) leaves no run folder behind."""
        logger = self.trainer.logger if subcommand == "fit" else None
        log_dir = getattr(logger, "log_dir", None)
        existed = log_dir is None or os.path.exists(log_dir)
        try:
            super()._run_subcommand(subcommand)
        except BaseException as err:
            started = self.preemption is not None and self.preemption.started
            if not existed and not started:
                shutil.rmtree(log_dir, ignore_errors=True)
            if started:
                err.during_training = True  # `pictura.cli.main` shows its traceback
            raise
        received = self.preemption.received if self.preemption is not None else None
        if received is not None:  # a signal during the end-of-fit work
            raise SystemExit(128 + int(received))

    def _parse_ckpt_path(self) -> None:
        sub = self.config.get("subcommand")
        path = self.config[sub].get("ckpt_path") if sub else None
        if path:
            self.checkpoint_iteration = check_checkpoint(path)
        self._parse_ckpt_path_keeping_the_command_model()

    def _parse_ckpt_path_keeping_the_command_model(self) -> None:
        """Lightning replaces the model config with the one saved in ``--ckpt_path``, silently
        dropping this command's model settings (a longer ``max_iterations`` to continue a run
        would be lost). Here the command's settings win and the differences are printed; a
        checkpoint whose weights do not fit them is refused by `PPO.on_load_checkpoint` with
        the mismatched tensors named. Without a model config of its own (e.g. ``test
        --ckpt_path``), the checkpoint's is used."""
        sub = self.config.get("subcommand")
        if not sub or not self.config[sub].get("ckpt_path") or self.config[sub].get("model") is None:
            return super()._parse_ckpt_path()
        asked = self.config[sub]["model"]
        asked_dict = asked.as_dict()
        super()._parse_ckpt_path()
        diffs = _differences(asked_dict, self.config[sub]["model"].as_dict())
        self.config[sub]["model"] = asked
        if diffs:
            print(
                f"--ckpt_path: this command's model settings replace the checkpoint's: {'; '.join(diffs)}",
                file=sys.stderr,
            )


def check_checkpoint(path: str) -> int | None:
    """``ValueError`` naming ``path`` unless it is a Lightning checkpoint that torch can read
    (a missing file, random bytes, a foreign pickle, a plain ``state_dict``); returns the PPO
    iterations it holds (None when it has no iteration counter)."""
    import pickle

    import torch

    if not os.path.isfile(path):
        raise ValueError(f"--ckpt_path {path}: no such file")
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True, mmap=False)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError, AttributeError) as err:
        raise ValueError(f"--ckpt_path {path}: not a readable PyTorch checkpoint (torch.load: {type(err).__name__})") from err
    if not isinstance(saved, dict) or "state_dict" not in saved or "hyper_parameters" not in saved:
        raise ValueError(
            f"--ckpt_path {path}: not a Pictura training checkpoint (a Lightning checkpoint has "
            "'state_dict' and 'hyper_parameters'; runs/<name>/version_N/checkpoints/last.ckpt is one)"
        )
    iteration = saved["state_dict"].get("iteration")
    return None if iteration is None else int(iteration)


def run_lightning_cli(argv: list[str] | None = None, run: bool = True) -> PicturaCLI:
    """Parse ``argv`` (``fit|validate|test|predict ...``) and run it (``run=False``: only build)."""
    args = list(argv) if argv is not None else None
    if args is not None and args == sys.argv[1:]:
        args = None  # LightningCLI warns when given both: read them from the command line itself
    if not run and args and args[0] in ("fit", "validate", "test", "predict"):
        args = args[1:]
    return PicturaCLI(
        PPO,
        subclass_mode_model=True,
        # no option abbreviations (--trainer.max_epoch is not --trainer.max_epochs); parse errors
        # raise instead of printing the usage, so `pictura.cli.main` reports them in one line
        parser_kwargs={"parser_mode": "omegaconf+", "allow_abbrev": False, "exit_on_error": False},
        save_config_kwargs={"overwrite": True},
        # fit has no validation loop (DensitySweep evaluates): no sanity-check pass either
        trainer_defaults={"num_sanity_val_steps": 0},
        args=args,
        run=run,
        auto_configure_optimizers=False,
    )
