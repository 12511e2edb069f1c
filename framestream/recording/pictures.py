"""A recording's picture at a time: decoded with PyAV from the last keyframe before it (imported only when asked)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def picture_at(path: Path, offset_us: int, *, limit_bytes: int | None = None) -> tuple[Any, int] | None:
    """The RGB picture (height, width, 3) showing at `offset_us` from the recording's start, and its own offset
    (µs); None when the recording has no picture that early. `limit_bytes`: read only this much of the file (its
    whole fragments, while it is being written)."""
    import av

    best: tuple[Any, int] | None = None
    source: Any = str(path)
    if limit_bytes is not None:
        import io

        with open(path, "rb") as f:
            source = io.BytesIO(f.read(limit_bytes))
    with av.open(source, format="mp4") as container:
        stream = container.streams.video[0]
        target = offset_us / 1e6
        if target > 0 and stream.time_base is not None:
            container.seek(int(target / stream.time_base), stream=stream, backward=True, any_frame=False)
        for frame in container.decode(stream):
            when = frame.time if frame.time is not None else 0.0
            if when > target + 1e-6 and best is not None:
                break
            if when <= target + 1e-6 or best is None:
                best = (frame, round(when * 1e6))
    if best is None:
        return None
    frame, at = best
    return frame.to_ndarray(format="rgb24"), at
