"""A paused frame's screen as one keyframe made ahead, so that its resume shows it without a grab and an encode.

A frame paused long enough gives back its encoder, capture buffers and kept picture (media/pipeline.py). Made
again on resume, they cost a full grab, a full conversion and an IDR of the whole screen before the first picture
(about 50 ms at 2560x1600, more while the woken page competes for the CPU). So at the release the old encoder's last
keyframe of the screen (the one made at the freeze, below, or one made then) is kept (a few hundred kB) with the
capture's connection and damage object.
On resume, the server is asked whether anything was drawn since that grab: if not, the keyframe is the screen as
it is, and goes out at once; the new encoder's own keyframe follows, as its stream must start with one. If
anything was drawn, it is dropped and the resume waits for the new grab as before (issue 26: never a picture
older than the page). The runtime unpauses the pipeline before it wakes the page, so that the worker usually asks
before the page draws again (an animated page resumed in 8-14 ms median, against 24 with the page woken first).

A frame resumed before its release keeps its encoder, but a fresh keyframe of a full grab still cost the grab and an
IDR of the whole screen (45 ms median here). So once its page is frozen (SIGSTOP), a paused frame makes that keyframe
ahead with its live encoder (`FrozenScreen`), and its resume sends it if nothing was drawn since, by the damage
events read while paused and the server's own account; else it is dropped, and the resume's fresh keyframe (which
it asked for anyway, an IDR) starts the stream from the screen as it is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from framestream.media.capture import DisplayCapture
from framestream.media.encoder import H264Encoder
from framestream.media.picture import Picture
from framestream.media.pipeline_stats import PipelineStats
from framestream.media.rects import DamageRect
from framestream.media.sender import ChangeSender


@dataclass(frozen=True, slots=True)
class ParkedKeyframe:
    data: bytes  # an IDR access unit, with its parameter sets
    codec: str | None  # the stream's codec string, as the new encoder's will be
    encoded_us: int  # when it was made (wall clock, µs): before the resume that sends it

    def picture(self) -> Picture:
        """As the picture of the screen now (its capture time): sent only once the server said nothing was drawn
        since its grab."""
        return Picture(data=self.data, keyframe=True, refinement=False, capture_us=time.time_ns() // 1000,
                       encoded_us=self.encoded_us, codec=self.codec, changed=False)


def park(capture: DisplayCapture, encoder: H264Encoder) -> ParkedKeyframe:
    """Grab the whole screen, encode it as a keyframe and give back the capture's buffers. The damage is cleared
    before the grab, so anything drawn from then on (even during the grab) counts against the keyframe."""
    capture.damage_now()
    encoder.update(capture.grab(None))
    picture = encoder.encode(keyframe=True)
    capture.drop_buffers()
    return ParkedKeyframe(picture.data, encoder.codec_string, time.time_ns() // 1000)


def still_current(capture: DisplayCapture) -> bool:
    """Whether the screen is as the parked keyframe shows it: nothing drawn since, by the server's own account."""
    return not capture.damage_now()


class FrozenScreen:
    """The keyframe a paused frame makes of its frozen page for its resume, while nothing is drawn over it."""

    def __init__(self, stats: PipelineStats) -> None:
        self.keyframe: ParkedKeyframe | None = None
        self._stats = stats

    def make(self, capture: DisplayCapture, sender: ChangeSender, codec: str | None) -> np.ndarray:
        """Grab the whole screen and encode it as the live stream's next keyframe, held; returns the grab (the
        kept picture from now on: the encoder's). Damage queued before the grab is taken first, so that only what
        is drawn after it counts against the keyframe."""
        capture.damage_now()
        capture.pending_damage()  # events the server sent before that, read meanwhile
        grabbed = capture.grab(None)
        height, width = grabbed.shape[:2]
        started = time.perf_counter()
        out = sender.send(grabbed, now=time.monotonic(), keyframe=True, refinement=False, rows=(0, height),
                          boxes=[(0, 0, width, height)], hint=None)
        self._stats.encode_seconds += time.perf_counter() - started
        self.keyframe = None
        if out is not None and out.keyframe:
            self.keyframe = ParkedKeyframe(out.data, codec, time.time_ns() // 1000)
            self._stats.frozen_keyframes += 1
        return grabbed

    def note_damage(self, damage: list[DamageRect]) -> None:
        """Damage read while paused: drawn over the held keyframe, which no longer shows the screen."""
        if damage:
            self.keyframe = None

    def release(self, capture: DisplayCapture) -> ParkedKeyframe | None:
        """Paused long enough: the held keyframe as the parked one (none: `park` makes it), buffers given back."""
        held, self.keyframe = self.keyframe, None
        if held is not None:
            capture.drop_buffers()
        return held

    def take(self, capture: DisplayCapture, damage: list[DamageRect]) -> ParkedKeyframe | None:
        """On resume: the held keyframe if the screen is still as it shows (`damage` read since is none, and the
        server has none either); None, and it is dropped, otherwise."""
        held, self.keyframe = self.keyframe, None
        if held is None or damage or not still_current(capture):
            return None
        return held


__all__ = ["FrozenScreen", "ParkedKeyframe", "park", "still_current"]
