"""Waymo Open Motion Dataset scenes: ``Scenario`` protobuf records in ``.tfrecord`` files and
GPUDrive-style JSON, read with no TensorFlow or protobuf dependency (NumPy only)."""

from pictura.maps.womd.gpudrive_json import read_gpudrive_json
from pictura.maps.womd.scenario import decode_scenario, read_womd_tfrecord, read_womd_tfrecord_all

__all__ = ["decode_scenario", "read_gpudrive_json", "read_womd_tfrecord", "read_womd_tfrecord_all"]
