"""TorchRL environments: the only torch <-> Warp boundary."""

from pictura.envs.driving import DrivingEnv

__all__ = ["DrivingEnv"]
