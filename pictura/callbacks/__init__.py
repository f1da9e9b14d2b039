"""pictura.callbacks: Lightning callbacks (importable on every DDP rank)."""

from pictura.callbacks.density_sweep import DensitySweep
from pictura.callbacks.gradients import GradientDiagnostics
from pictura.callbacks.preemption import PreemptionCheckpoint
from pictura.callbacks.resolution import ResolutionCurriculum
from pictura.callbacks.video import CameraVideo

__all__ = ["CameraVideo", "DensitySweep", "GradientDiagnostics", "PreemptionCheckpoint", "ResolutionCurriculum"]
