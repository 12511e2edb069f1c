"""What a frame tells its viewers, as values: each connection turns them into its own wire messages.

A frame never formats protocol messages; it hands these to every `Viewer.on_event` (framestream.feed), and the
connection that made the viewer decides what to send (for `ControlChanged`, whether the new driver is itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from framestream.core.lifecycle import FrameState


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


@dataclass(frozen=True, slots=True)
class ControlChanged:
    """The driving grant changed; `presenter` is the connection that presented it (None over HTTP)."""

    frame_id: str
    driver: str | None
    presenter: int | None


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
class PageRefused:
    frame_id: str
    message: str
    code: str = "page-limit"  # or `url-not-allowed`: a document off FRAMESTREAM_URL_ALLOW_HOSTS


FrameEvent = (StateChanged | ControlChanged | DialogShown | DialogGone | FileChooserShown | FileChooserGone
              | DownloadChanged | ClipboardCopied | PageRefused)
# Events only viewers whose token may drive the frame receive (what goes in and out of it).
DRIVER_EVENTS = (FileChooserShown, DownloadChanged, ClipboardCopied)

__all__ = ["DRIVER_EVENTS", "ClipboardCopied", "ControlChanged", "DialogGone", "DialogShown", "DownloadChanged",
           "FileChooserGone", "FileChooserShown", "FrameEvent", "PageRefused", "StateChanged"]
