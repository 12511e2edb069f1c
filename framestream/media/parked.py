"""A released frame's screen as one keyframe, so that its resume shows it without waiting for a new encoder.

A frame paused long enough gives back its encoder, capture buffers and kept picture (media/pipeline.py). Made
again on resume, they cost a full grab, a full conversion and an IDR of the whole screen before the first picture
(about 50 ms at 2560x1600, more while the woken page competes for the CPU). So at the release the old encoder makes
one last keyframe of the screen, which is kept (a few hundred kB) with the capture's connection and damage object.
On resume, the server is asked whether anything was drawn since that grab: if not, the keyframe is the screen as
it is, and goes out at once; the new encoder's own keyframe follows, as its stream must start with one. If
anything was drawn, it is dropped and the resume waits for the new grab as before (issue 26: never a picture
older than the page). The runtime unpauses the pipeline before it wakes the page, so that the worker usually asks
before the page draws again (an animated page resumed in 8-14 ms median, against 24 with the page woken first).
"""

from __future__ import annotations

from dataclasses import dataclass

from framestream.media.capture import DisplayCapture
from framestream.media.encoder import H264Encoder


@dataclass(frozen=True, slots=True)
class ParkedKeyframe:
    data: bytes  # an IDR access unit, with its parameter sets
    codec: str | None  # the stream's codec string, as the new encoder's will be


def park(capture: DisplayCapture, encoder: H264Encoder) -> ParkedKeyframe:
    """Grab the whole screen, encode it as a keyframe and give back the capture's buffers. The damage is cleared
    before the grab, so anything drawn from then on (even during the grab) counts against the keyframe."""
    capture.damage_now()
    encoder.update(capture.grab(None))
    picture = encoder.encode(keyframe=True)
    capture.drop_buffers()
    return ParkedKeyframe(picture.data, encoder.codec_string)


def still_current(capture: DisplayCapture) -> bool:
    """Whether the screen is as the parked keyframe shows it: nothing drawn since, by the server's own account."""
    return not capture.damage_now()


__all__ = ["ParkedKeyframe", "park", "still_current"]
