"""A frame's recorder: its H.264 access units into fragmented MP4 and its steps and events into the sidecar.

The loop side (`FrameRecorder`) is what the frame calls: `on_picture` for every picture it publishes, `on_event`
for every event it tells its viewers, `step` around every step it applies. It only queues; one writer thread per
recording (`RecordingWriter`, recording/writer.py) does every write, so a slow or full disk never holds up the
loop, the encoder or a viewer. A write that fails (a full disk) ends that recording, cut to its last whole
fragment; the stream goes on.

One recording per live stretch: it starts at the first keyframe once the frame is live, and ends when the frame
pauses, closes, relaunches or stops. Nothing is encoded for it, with two exceptions the frame's worker makes while
`gate.open` (media/pipeline.py): an H.264 picture of what went out only as patches, within 1 s of the patch (0.4 s
after a still page's first change, at most one a second), and a keyframe asked for once the deltas since the last
one pass `KEYFRAME_AFTER_BYTES_FACTOR` times its size (at most one every `KEYFRAME_MIN_S`), so seeking never
decodes far.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from framestream.core.lifecycle import FrameState
from framestream.core.tokens import Claims
from framestream.core.wire import InputEvent
from framestream.frames.events import StateChanged
from framestream.media.picture import PatchGate, Picture
from framestream.recording import mp4
from framestream.recording.sidecar import EventLines, Line, action_fields, event_fields, step_line, types_text
from framestream.recording.store import RecordingInfo, RecordingStore
from framestream.recording.writer import RecordingWriter, now_us
from framestream.service.config import FrameSize

if TYPE_CHECKING:
    from framestream.browser.tabs import Tabs

log = logging.getLogger("framestream.recording")

KEYFRAME_MIN_S = 10.0
KEYFRAME_AFTER_BYTES_FACTOR = 8
PRE_LINES = 256  # lines kept for the next recording while none runs (a step that resumes the frame)
_RECORDING_STATES = (FrameState.LIVE, FrameState.ERROR)

# Whether the focused element (through shadow roots and same-origin frames) is a password field; a frame of
# another origin cannot be looked into, and counts as one.
_SECRET_FOCUS_JS = """(() => { let e = document.activeElement;
  try { for (let i = 0; e && i < 32; i++) {
    if (e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
    else if (e.tagName === 'IFRAME' || e.tagName === 'FRAME') {
      const d = e.contentDocument; if (!d) return true; if (!d.activeElement || d.activeElement === d.body) break;
      e = d.activeElement; }
    else break; } } catch (x) { return true; }
  return !!e && ((e.tagName === 'INPUT' && e.type === 'password') || e.tagName === 'IFRAME'); })()"""


class RecordGate(PatchGate):
    """Open while the frame is being recorded: its worker (a plain bool, read before each picture) then covers
    what went out only as patches with a picture in the H.264 stream (media/pipeline.py)."""


class FrameRecorder:
    def __init__(self, store: RecordingStore, frame_id: str, size: FrameSize, *, enabled: bool,
                 asked: bool | None = None, request_keyframe: Callable[[], None],
                 tabs: Callable[[], Tabs | None]) -> None:
        self.store = store
        self.frame_id = frame_id
        self.size = size
        self.enabled = enabled
        self.asked = asked  # what the frame's creator asked for (None: the service's default), kept in frames.json
        self.gate = RecordGate()
        self._request_keyframe = request_keyframe
        self._tabs = tabs
        self._live = False
        self._writer: RecordingWriter | None = None
        self._events = EventLines()
        self._pre: collections.deque[Line] = collections.deque(maxlen=PRE_LINES)
        self._sets: tuple[bytes, bytes] | None = None
        self._since_key_bytes = 0
        self._key_bytes = 0
        self._key_at = 0.0
        self._keyframe_asked = False
        self._closing: list[RecordingWriter] = []  # ended recordings whose writers may still be finishing

    def join(self, timeout: float) -> None:
        """Wait (off the loop) until every ended recording's files are closed."""
        for writer in self._closing:
            writer.join(timeout)

    def finishing(self, recording_id: str) -> RecordingWriter | None:
        """The writer of an ended recording that is still closing its files (a pause just ended it), if any."""
        return next((w for w in self._closing if w.info.id == recording_id and w.is_alive()), None)

    @property
    def recording(self) -> RecordingInfo | None:
        return self._writer.info if self._writer is not None else None

    # -- pictures ------------------------------------------------------------------------------------------

    def on_picture(self, picture: Picture) -> None:
        if not self.enabled or picture.light or picture.patch:
            return  # (patches are not in the H.264 stream: the worker covers them with a picture of it)
        writer = self._writer
        if writer is not None and writer.done:
            self._end(writer.reason or "stopped", keep_live=False)
            return
        if picture.keyframe:
            sets = mp4.parameter_sets(picture.data)
            if writer is not None and sets is not None and sets != self._sets:
                self._end("new-stream")  # another encoder's stream (its size or settings changed)
                writer = None
            if writer is None and self._live and sets is not None:
                try:
                    writer = self._start(picture, sets)
                except OSError as exc:  # the state dir cannot take a recording: the frame streams on
                    log.warning("recording not started: %s", exc, extra={"frame": self.frame_id})
                    self._live = False  # (tried again at the next live stretch)
                    return
            if writer is not None:
                self._key_bytes, self._since_key_bytes, self._key_at = len(picture.data), 0, time.monotonic()
                self._keyframe_asked = False
        if writer is None:
            return
        writer.picture(picture.capture_us, picture.keyframe, picture.data)
        if not picture.keyframe:
            self._since_key_bytes += len(picture.data)
            if (not self._keyframe_asked and self._since_key_bytes > KEYFRAME_AFTER_BYTES_FACTOR * self._key_bytes
                    and time.monotonic() - self._key_at >= KEYFRAME_MIN_S):
                self._keyframe_asked = True
                self._request_keyframe()

    def _start(self, picture: Picture, sets: tuple[bytes, bytes]) -> RecordingWriter:
        size = self.size
        info = self.store.begin(self.frame_id, start_us=picture.capture_us, width=size.width, height=size.height,
                                css_width=size.css_width, css_height=size.css_height, dpr=size.dpr)
        writer = self._writer = RecordingWriter(self.store, info, mp4.header(size.width, size.height, *sets))
        self._sets = sets
        writer.lines([{"t_us": info.start_us, "type": "recording", "frame": self.frame_id, "id": info.id,
                       "width": size.width, "height": size.height, "css_width": size.css_width,
                       "css_height": size.css_height, "dpr": size.dpr}, *self._events.cursor_lines(info.start_us),
                      *self._pre])
        self._pre.clear()
        writer.start()
        self.gate.open = True
        log.info("recording %s started", info.id, extra={"frame": self.frame_id})
        return writer

    def _end(self, reason: str, *, keep_live: bool = True) -> None:
        writer, self._writer = self._writer, None
        self.gate.open = False
        if writer is not None:
            writer.close(reason)
            self._closing = [w for w in self._closing if w.is_alive()] + [writer]
            log.info("recording %s ended (%s)", writer.info.id, reason, extra={"frame": self.frame_id})
        if not keep_live:
            self._live = False  # (a failed recording is not restarted within the same live stretch)

    def resized(self, size: FrameSize) -> None:
        """The frame has a new size: a recording is of one size, so the one under way ends and the next keyframe
        starts another."""
        self._end("resized")
        self.size = size

    def close(self, reason: str = "shutdown") -> None:
        self._end(reason)
        self._live = False

    # -- events and steps ----------------------------------------------------------------------------------

    def on_event(self, event: object) -> None:
        if not self.enabled:
            return
        now = now_us()
        if isinstance(event, StateChanged):
            live = event.state in _RECORDING_STATES
            if not live and self._writer is not None:
                self._emit(self._events.lines(now, event))
                self._end(event.message if event.message == "deleted" else event.state.value)
                self._live = False
                return
            self._live = live  # (the recording starts at the fresh keyframe a launch or a resume makes)
        self._emit(self._events.lines(now, event))

    def _emit(self, lines: Sequence[Line]) -> None:
        if not lines:
            return
        if self._writer is not None:
            self._writer.lines(lines)
        else:
            self._pre.extend(lines)

    async def step(self, claims: Claims, seq: int, events: Sequence[InputEvent] | None, action: object | None,
                   run: Awaitable[int]) -> int:
        """Apply the step (`run`) and write what it was and how it ended. Typed text is left out when the focus
        was in a password field before or after it."""
        if not self.enabled:
            return await run
        typing = events is not None and types_text(events)
        secret = typing and await self._secret_focus()
        began = now_us()
        try:
            started = await run
        except Exception as exc:
            self._step_line(began, claims, seq, events, action, secret=secret, error=exc)
            with contextlib.suppress(AttributeError, TypeError):
                exc._framestream_recorded = True  # type: ignore[attr-defined]  # (not again by `refused`)
            raise
        if typing and not secret:
            secret = await self._secret_focus()
        self._step_line(started, claims, seq, events, action, secret=secret, error=None)
        return started

    def refused(self, claims: Claims | None, seq: int, what: object, error: Exception) -> None:
        """A step refused before the frame applied it (its role or frame, its bounds, a replay), its events without
        any typed text. Only under a grant that verified: a forged or expired one names nobody, and anyone could
        send those."""
        if not self.enabled or claims is None or getattr(error, "_framestream_recorded", False):
            return
        events = list(what) if isinstance(what, (list, tuple)) else None
        body: dict[str, Any]
        if events is not None:
            body = {"kind": "input", "events": [event_fields(e, secret=True) for e in events]}
        else:
            body = action_fields(what)
        now = now_us()
        line: Line = {"t_us": now, "type": "step", "end_us": now, "subject": claims.sub, "role": claims.role,
                      "step": bool(claims.step), "seq": seq, **body, "ok": False,
                      "error": str(getattr(error, "code", "internal")),
                      "message": str(getattr(error, "message", error))[:500]}
        if self._writer is not None:
            self._writer.info.steps += 1
        self._emit([line])

    def _step_line(self, t_us: int, claims: Claims, seq: int, events: Sequence[InputEvent] | None,
                   action: object | None, *, secret: bool, error: Exception | None) -> None:
        body: dict[str, Any]
        if events is not None:
            body = {"kind": "input", "events": [event_fields(e, secret=secret) for e in events]}
        else:
            body = action_fields(action)
        code = message = None
        if error is not None:
            code = str(getattr(error, "code", None) or "internal")
            message = str(getattr(error, "message", None) or error)[:500]
        line = step_line(t_us, now_us(), claims, seq, body, error=code, message=message)
        if self._writer is not None:
            self._writer.info.steps += 1
        self._emit([line])

    async def _secret_focus(self) -> bool:
        tabs = self._tabs()
        if tabs is None:
            return True  # nothing to ask: leave the text out
        try:
            result = await tabs.call("Runtime.evaluate", {"expression": _SECRET_FOCUS_JS, "returnByValue": True},
                                     timeout=0.5)
        except Exception:
            return True
        return result.get("result", {}).get("value") is not False
