"""The wire messages for what a frame's pages ask or give (docs/protocol.md, "A frame is a whole browser tab")."""

from __future__ import annotations

from framestream.core.wire import (
    clipboard_message,
    cursor_message,
    dialog_closed,
    dialog_message,
    download_message,
    error_message,
    file_chooser_closed,
    file_chooser_message,
)
from framestream.frames.events import (
    ClipboardCopied,
    DialogGone,
    DialogShown,
    DownloadChanged,
    FileChooserGone,
    FileChooserShown,
    FrameEvent,
    PageCursor,
    PageRefused,
)


def tab_event_text(event: FrameEvent) -> str | None:
    """The wire message for what a frame's pages asked or gave (docs/protocol.md, "A frame is a whole tab")."""
    if isinstance(event, DialogShown):
        return dialog_message(event.frame_id, event.id, event.page, event.kind, event.message, event.default)
    if isinstance(event, DialogGone):
        return dialog_closed(event.frame_id, event.id, event.reason)
    if isinstance(event, FileChooserShown):
        return file_chooser_message(event.frame_id, event.id, event.page, event.multiple, event.accept)
    if isinstance(event, FileChooserGone):
        return file_chooser_closed(event.frame_id, event.id)
    if isinstance(event, DownloadChanged):
        return download_message(event.frame_id, event.id, event.name, event.size, event.state)
    if isinstance(event, ClipboardCopied):
        return clipboard_message(event.frame_id, event.text)
    if isinstance(event, PageCursor):
        return cursor_message(event.frame_id, event.cursor)
    if isinstance(event, PageRefused):
        return error_message(event.code, event.message, event.frame_id)
    return None


__all__ = ["tab_event_text"]
