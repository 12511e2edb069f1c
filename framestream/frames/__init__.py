"""Frames: each shared page with the processes it owns, and the manager that keeps them within the cap.

- `urls`: which pages a frame may show (`check_url`).
- `events`: what a frame tells its viewers (`StateChanged`, `ControlChanged`), as values, never wire text.
- `runtime`: one launch of Xvfb + Chromium + the capture/encode pipeline, its watchdog, the relaunch budget.
- `frame`: a frame's state, viewers, pause timer and input steps (`Frame.apply_step`).
- `registry`: frames.json, saved off the loop and retried while the state dir cannot be written.
- `manager`: every frame, the cap on running browsers, every background task, shutdown in order.
"""

from framestream.errors import CapacityError, FrameGone
from framestream.frames.events import ControlChanged, FrameEvent, StateChanged
from framestream.frames.frame import Frame
from framestream.frames.manager import FrameManager
from framestream.frames.registry import Registry, SavedFrame
from framestream.frames.runtime import FrameRuntime, Runtime, RuntimeHooks
from framestream.frames.urls import check_url

__all__ = [
    "CapacityError",
    "ControlChanged",
    "Frame",
    "FrameEvent",
    "FrameGone",
    "FrameManager",
    "FrameRuntime",
    "Registry",
    "Runtime",
    "RuntimeHooks",
    "SavedFrame",
    "StateChanged",
    "check_url",
]
