"""What one viewer connection is sent about a frame: its `video-config`, its `frame-state` (a view-only viewer's
without the URLs' queries) and each event the frame emits, as this connection may hear it.

Pure text: the session (server/session.py) says who the connection is (`presenter`, whether it may drive the frame);
the handoff and tab messages themselves are server/handoff_messages.py's and server/tab_messages.py's.
"""

from __future__ import annotations

from framestream.core.urls import without_query
from framestream.core.wire import frame_state, video_config
from framestream.frames.events import DRIVER_EVENTS, ClipboardCopied, FrameEvent, StateChanged
from framestream.server.handoff_messages import handoff_event_text
from framestream.server.session_actions import SessionFrame
from framestream.server.tab_messages import tab_event_text

DEFAULT_CODEC = "avc1.42C01F"  # named in a video-config sent before the encoder said its level


def config_text(frame: SessionFrame, slot: int, light: bool = False, link_rate: float | None = None) -> str:
    """The `video-config` of `frame` for the viewer on `slot`, with the codec as the encoder last said: of the
    frame's light stream for a viewer on it (its link's rate in bytes/s, when measured, goes with it)."""
    size = frame.size
    if light:
        width, height = size.light
        return video_config(frame.id, slot, frame.feed.light_codec or DEFAULT_CODEC, width, height,
                            size.css_width, size.css_height, stream="light",
                            link_kbps=None if link_rate is None else round(link_rate * 8 / 1000))
    return video_config(frame.id, slot, frame.feed.codec or DEFAULT_CODEC, size.width, size.height,
                        size.css_width, size.css_height)


def state_key(frame_id: str) -> str:
    """The outbox key of a frame's `frame-state`: only the newest one waits in a connection's queue."""
    return "frame-state:" + frame_id


def frame_state_text(state: StateChanged, may_drive: bool) -> str:
    """`frame-state` for a connection: one that may not drive gets the URLs without query and fragment (they
    often carry secrets: OAuth codes, an app's own tokens); the pages themselves it sees anyway."""
    url, pages = state.url, state.pages
    if not may_drive:
        url = without_query(url)
        pages = None if pages is None else [{**p, "url": without_query(str(p.get("url", "")))} for p in pages]
    return frame_state(state.frame_id, state.state, url, state.viewers, state.driver, state.message, pages,
                       state.css_size)


def event_text(event: FrameEvent, presenter: int | None, may_drive: bool, clipboard_to_viewers: bool) -> str | None:
    """The message that tells a connection (`presenter`) what a frame it watches emitted (None: not for it: what
    goes in and out of a frame is for viewers that may drive it, unless configured otherwise)."""
    if isinstance(event, StateChanged):
        return frame_state_text(event, may_drive)
    handoff = handoff_event_text(event, presenter)
    if handoff is not None:
        return handoff
    to_viewers = isinstance(event, ClipboardCopied) and clipboard_to_viewers
    if isinstance(event, DRIVER_EVENTS) and not to_viewers and not may_drive:
        return None
    return tab_event_text(event)


__all__ = ["DEFAULT_CODEC", "config_text", "event_text", "frame_state_text", "state_key"]
