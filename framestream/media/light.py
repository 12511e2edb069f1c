"""The light stream: a second, lighter encoding of a frame for viewers whose link cannot carry its stream.

A dpr 2 keyframe is 150-400 KB, 1.2-3.2 s of a 1 Mbit/s link, so "keyframes only" leaves a slow viewer seconds
behind (issue 18). The light stream is the picture at the frame's CSS size (a quarter of the pixels at dpr 2),
at most `LIGHT_FPS` pictures a second, with x264's VBV capping every picture to `LIGHT_BUFFER_S` of the rate
its slowest viewer's link carries: a keyframe is then a fraction of a second of that link too. Made only while a
slow viewer watches, shared by all of a frame's slow viewers, and re-capped live as their links change.

After motion stops, two refinement pictures at a lower CRF sharpen the still picture within the same cap.

`LightPlan` (media/light_policy.py) decides when, as a pure function of time; `LightEncoder` is the codec, and
`LightWorker` runs it in a thread of its own (as aiortc runs its encoders): the frame's worker only copies the
picture for it, so the full stream keeps its pace while the light one is made (in the frame's worker itself
it took the full stream from 27 to 16 pictures a second at 2560x1600 on two cores).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import numpy as np

from framestream.media.encoder import EncodedPicture, EncoderSettings, H264Encoder
from framestream.media.light_policy import (
    LIGHT_BUFFER_S,
    LIGHT_CRF,
    LIGHT_FPS,
    LIGHT_REFINE_CRF,
    LightDue,
    LightPlan,
    needs_recap,
)

log = logging.getLogger(__name__)


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


LightSink = Callable[[EncodedPicture, "str | None", int], None]  # (picture, codec string, capture µs)


class LightWorker:
    """The light stream's thread. `submit` hands it a copy of the current picture when it is idle (False when it
    is still busy with the last one: the plan keeps the change pending); each result goes to `on_encoded` from
    this thread. `stop()` ends and joins it."""

    def __init__(self, width: int, height: int, kbps: int, on_encoded: LightSink, name: str = "frame") -> None:
        self._encoder = LightEncoder(width, height, kbps)
        self._on_encoded = on_encoded
        self._kbps = kbps
        self._cond = threading.Condition()
        self._buffer: np.ndarray | None = None
        self._job: tuple[LightDue, int] | None = None
        self._busy = False
        self._stopping = False
        self.failed = False
        self._thread = threading.Thread(target=self._run, name=f"light-{name}", daemon=True)
        self._thread.start()

    @property
    def idle(self) -> bool:
        with self._cond:
            return not self._busy and self._job is None

    def set_kbps(self, kbps: int) -> None:
        with self._cond:
            self._kbps = kbps

    def submit(self, picture: np.ndarray, due: LightDue, capture_us: int) -> bool:
        with self._cond:
            if self._busy or self._job is not None or self._stopping:
                return False
            if self._buffer is None or self._buffer.shape != picture.shape:
                self._buffer = np.empty_like(picture)
            np.copyto(self._buffer, picture)  # the worker's picture changes under it from the next grab on
            self._job = (due, capture_us)
            self._cond.notify()
            return True

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join(5.0)
        if not self._thread.is_alive():
            self._encoder.close()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._job is None and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                assert self._job is not None and self._buffer is not None
                (due, capture_us), self._job, self._busy = self._job, None, True
                kbps, buffer = self._kbps, self._buffer
            try:
                self._encoder.set_kbps(kbps)
                out = self._encoder.encode(buffer, due)
                self._on_encoded(out, self._encoder.codec_string, capture_us)
            except Exception as exc:  # the light stream is a courtesy: its failure never takes the frame down
                log.warning("light stream failed: %s", exc)
                with self._cond:
                    self.failed, self._busy = True, False
                return
            with self._cond:
                self._busy = False


class LightState:
    """The frame worker's side of the light stream (media/pipeline.py holds one): its thread while someone takes
    it, and when it sends."""

    BUSY_RETRY_S = 0.005  # the light thread is still on its last picture: look again this soon

    def __init__(self, size: tuple[int, int], on_encoded: LightSink, name: str) -> None:
        self._size = size
        self._on_encoded = on_encoded
        self._name = name
        self._worker: LightWorker | None = None
        self._plan = LightPlan()

    def want(self, kbps: int | None, keyframe: bool, now: float) -> None:
        if kbps is None or (self._worker is not None and self._worker.failed):
            self.stop()
        if kbps is None:
            return
        if self._worker is None:
            self._worker = LightWorker(*self._size, kbps, self._on_encoded, self._name)
            self._plan = LightPlan()  # starts with a keyframe
        else:
            self._worker.set_kbps(kbps)
        if keyframe:
            self._plan.request_keyframe()

    def changed(self, now: float) -> None:
        if self._worker is not None:
            self._plan.changed(now)

    def send(self, kept: np.ndarray, now: float, capture_us: int) -> None:
        if self._worker is None or not self._worker.idle:
            return
        due = self._plan.due(now)
        if due.send:
            self._worker.submit(kept, due, capture_us)

    def deadline(self, now: float) -> float | None:
        if self._worker is None:
            return None
        deadline = self._plan.next_deadline(now)
        if deadline is not None and not self._worker.idle:
            deadline = max(deadline, self.BUSY_RETRY_S)
        return deadline

    def stop(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
