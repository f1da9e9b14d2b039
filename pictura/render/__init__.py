"""pictura.render: the Warp perspective rasterizer (Warp + NumPy only).

`CameraRig` describes the ego-mounted cameras; `Renderer` draws every requested ego's views
from a snapshot history (`pictura.sim.snapshot`) and answers occlusion queries.
"""

from pictura.render.camera import Camera, CameraRig, default_cameras
from pictura.render.kernels import DEFAULT_COVERAGE
from pictura.render.rasterizer import Renderer

__all__ = ["DEFAULT_COVERAGE", "Camera", "CameraRig", "Renderer", "default_cameras"]
