"""The light stream: a second, lighter encoding of a frame for viewers whose link cannot carry its stream.

A dpr 2 keyframe is 150-400 KB, 1.2-3.2 s of a 1 Mbit/s link, so "keyframes only" leaves a slow viewer seconds
behind (issue 18). The light stream is the picture at the frame's CSS size (a quarter of the pixels at dpr 2),
at most `LIGHT_FPS` pictures a second, with x264's VBV capping every picture to `LIGHT_BUFFER_S` of the rate
its slowest viewer's link carries: a keyframe is then a fraction of a second of that link too. Made only while a
slow viewer watches, shared by all of a frame's slow viewers, and re-capped live as their links change.

After motion stops, two refinement pictures at a lower CRF sharpen the still picture within the same cap.

`LightPlan` (media/light_policy.py) decides when, as a pure function of time; `LightEncoder` is the codec,
owned by the frame's worker thread like the main encoder.
"""

from __future__ import annotations

import numpy as np

from framestream.media.encoder import EncodedPicture, EncoderSettings, H264Encoder
from framestream.media.light_policy import (
    LIGHT_BUFFER_S,
    LIGHT_CRF,
    LIGHT_FPS,
    LIGHT_REFINE_CRF,
    LightDue,
    needs_recap,
)


class LightEncoder:
    """The light stream's codec: a whole BGRX picture in, scaled to the light size, an access unit out."""

    def __init__(self, width: int, height: int, kbps: int, fps: int = LIGHT_FPS) -> None:
        self.settings = EncoderSettings(fps=fps, crf=LIGHT_CRF, refine_crf=LIGHT_REFINE_CRF, max_kbps=kbps,
                                        buffer_s=LIGHT_BUFFER_S, threads=1)
        self._encoder = H264Encoder(width, height, self.settings)
        self.width, self.height = width, height

    @property
    def kbps(self) -> int:
        return self._encoder.max_kbps or 0

    @property
    def codec_string(self) -> str | None:
        return self._encoder.codec_string

    def set_kbps(self, kbps: int) -> None:
        if needs_recap(self.kbps, kbps):
            self._encoder.set_max_kbps(kbps)

    def encode(self, bgrx: np.ndarray, due: LightDue) -> EncodedPicture:
        self._encoder.update_scaled(bgrx)
        return self._encoder.encode(keyframe=due.keyframe, refinement=due.refinement)

    def close(self) -> None:
        self._encoder.close()
