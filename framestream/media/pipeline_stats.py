"""What a frame's pipeline has done, counted by its worker thread and read by the frame (frames/runtime.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PipelineStats:
    pictures: int = 0
    changes: int = 0
    encode_seconds: float = 0.0  # x264 and patch images
    patches: int = 0  # of `pictures`, those sent as patches
    patch_bytes: int = 0
    light_pictures: int = 0  # of the light stream, beside `pictures`


__all__ = ["PipelineStats"]
