"""pictura.callbacks: Lightning callbacks (importable on every DDP rank)."""

from pictura.callbacks.video import CameraVideo

__all__ = ["CameraVideo"]
