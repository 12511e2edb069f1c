"""What a frame tells its viewers, as values: each connection turns them into its own wire messages.

A frame never formats protocol messages; it hands these to every `Viewer.on_event` (framestream.fanout.feed), and the
connection that made the viewer decides what to send (for `ControlChanged`, whether the new driver is itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from framestream.core.lifecycle import FrameState
from framestream.core.wire import DriverKind, HelpOutcome, PointerAction


@dataclass(frozen=True, slots=True)
class StateChanged:
    """The frame's state, page, viewer count, driver or message changed (or a new viewer needs them)."""

    frame_id: str
    state: FrameState
    url: str
    viewers: int
    driver: str | None
    message: str | None
    pages: list[dict[str, Any]] | None = None  # while a browser runs: its pages (core/pages.Page.describe)
    css_size: tuple[int, int] | None = None  # the frame's CSS width and height: a view keeps its place before pictures


@dataclass(frozen=True, slots=True)
class ControlChanged:
    """The driving grant changed, or its hold lapsed; `presenter` is the connection that presented it (None over
    HTTP, or nobody drives). `kind`: `agent` (step grants) or `person`; `since_us`: when this driver took the
    frame (or it was handed back); `held`: a person holds it; `note`: what a driver that handed it back said."""

    frame_id: str
    driver: str | None
    presenter: int | None
    kind: DriverKind | None = None
    since_us: int | None = None
    held: bool = False
    note: str | None = None


@dataclass(frozen=True, slots=True)
class HelpRequested:
    frame_id: str
    id: str
    reason: str
    subject: str
    until_us: int


@dataclass(frozen=True, slots=True)
class HelpEnded:
    frame_id: str
    id: str
    outcome: HelpOutcome
    note: str | None = None
    by: str | None = None


@dataclass(frozen=True, slots=True)
class AgentPointer:
    """Where an agent's step acted, for viewers to draw over the picture (never into the page)."""

    frame_id: str
    x: float
    y: float
    action: PointerAction
    subject: str


@dataclass(frozen=True, slots=True)
class DialogShown:
    frame_id: str
    id: str
    page: str
    kind: str
    message: str
    default: str


@dataclass(frozen=True, slots=True)
class DialogGone:
    frame_id: str
    id: str
    reason: str


@dataclass(frozen=True, slots=True)
class FileChooserShown:
    """Told only to viewers that may drive the frame."""

    frame_id: str
    id: str
    page: str
    multiple: bool
    accept: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FileChooserGone:
    frame_id: str
    id: str


@dataclass(frozen=True, slots=True)
class DownloadChanged:
    """Told only to viewers that may drive the frame."""

    frame_id: str
    id: str
    name: str
    size: int
    state: str  # "started", "done", "failed"


@dataclass(frozen=True, slots=True)
class ClipboardCopied:
    """Text a page copied: for viewers that may drive the frame (and others only when configured). Never logged."""

    frame_id: str
    text: str


@dataclass(frozen=True, slots=True)
class PageCursor:
    """The page's cursor at the driver's pointer changed: for viewers that may drive the frame, to show over the
    picture while they drive it."""

    frame_id: str
    cursor: str  # one of core/wire's CURSORS


@dataclass(frozen=True, slots=True)
class PageRefused:
    frame_id: str
    message: str
    code: str = "page-limit"  # or `url-not-allowed`: a document off FRAMESTREAM_URL_ALLOW_HOSTS


FrameEvent = (StateChanged | ControlChanged | HelpRequested | HelpEnded | AgentPointer | DialogShown | DialogGone
              | FileChooserShown | FileChooserGone | DownloadChanged | ClipboardCopied | PageCursor | PageRefused)
# Events only viewers whose token may drive the frame receive (what goes in and out of it).
DRIVER_EVENTS = (FileChooserShown, DownloadChanged, ClipboardCopied, PageCursor)

__all__ = ["DRIVER_EVENTS", "AgentPointer", "ClipboardCopied", "ControlChanged", "DialogGone", "DialogShown",
           "DownloadChanged", "FileChooserGone", "FileChooserShown", "FrameEvent", "HelpEnded", "HelpRequested",
           "PageCursor", "PageRefused", "StateChanged"]
