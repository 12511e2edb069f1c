"""The recording's sidecar: one JSON object a line, each what happened at `t_us` (the capture clock: wall µs, the
clock of the video's timestamps), built from the frame's steps and events. Pure: no I/O.

What is never written: tokens (a step names its grant by subject, role and kind only), text typed while the
focus was in a password field (or where it could not be told: `redacted: true`, the length kept), the text of a
paste or a copy (sizes only), a prompt's answer (its length). docs/protocol.md, "Recordings", lists the lines.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from framestream.core.lifecycle import FrameState
from framestream.core.tokens import Claims
from framestream.core.wire import (
    DialogAnswer,
    InputEvent,
    KeyEvent,
    MouseEvent,
    Navigate,
    PageRequest,
    PasteEvent,
    TextEvent,
    TouchEvent,
    WheelEvent,
)
from framestream.frames.events import (
    ClipboardCopied,
    ControlChanged,
    DialogGone,
    DialogShown,
    DownloadChanged,
    FileChooserGone,
    FileChooserShown,
    PageCursor,
    PageRefused,
    StateChanged,
)

Line = dict[str, Any]


def dumps(line: Line) -> bytes:
    return json.dumps(line, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"


def types_text(events: Sequence[InputEvent]) -> bool:
    """Whether the events could type characters (text, a paste, a printable key), so the focus matters."""
    return any(isinstance(e, (TextEvent, PasteEvent)) or (isinstance(e, KeyEvent) and len(e.key) == 1)
               for e in events)


def event_fields(event: InputEvent, *, secret: bool) -> dict[str, Any]:
    """One input event as the wire spells it; with `secret` (a password field had the focus) no typed character."""
    if isinstance(event, MouseEvent):
        return {"kind": "mouse", "action": event.action, "x": event.x, "y": event.y, "button": event.button,
                "buttons": event.buttons, "clicks": event.clicks, "modifiers": event.modifiers}
    if isinstance(event, WheelEvent):
        return {"kind": "wheel", "x": event.x, "y": event.y, "dx": event.dx, "dy": event.dy,
                "modifiers": event.modifiers}
    if isinstance(event, KeyEvent):
        if secret and len(event.key) == 1:
            return {"kind": "key", "action": event.action, "redacted": True, "modifiers": event.modifiers}
        return {"kind": "key", "action": event.action, "key": event.key, "code": event.code,
                "modifiers": event.modifiers, "repeat": event.repeat}
    if isinstance(event, TextEvent):
        if secret:
            return {"kind": "text", "redacted": True, "length": len(event.text)}
        return {"kind": "text", "text": event.text}
    if isinstance(event, PasteEvent):  # clipboard contents never: their size only
        return {"kind": "paste", "length": len(event.text)}
    if isinstance(event, TouchEvent):
        return {"kind": "touch", "action": event.action, "points": [{"id": p.id, "x": p.x, "y": p.y}
                                                                    for p in event.points]}
    return {"kind": type(event).__name__}


def action_fields(action: object) -> dict[str, Any]:
    """A driver's action (navigate, page, dialog-answer, file chooser, or its name), its grant left out."""
    if isinstance(action, str):
        return {"kind": action}
    if isinstance(action, Navigate):
        return {"kind": "navigate", **({"url": action.url} if action.url is not None else {"action": action.action})}
    if isinstance(action, PageRequest):
        return {"kind": "page", "action": action.action, "page": action.page}
    if isinstance(action, DialogAnswer):
        fields: dict[str, Any] = {"kind": "dialog-answer", "id": action.id, "accept": action.accept}
        if action.text is not None:
            fields["text_length"] = len(action.text)
        return fields
    name = type(action).__name__
    if name == "ChooseFiles":
        return {"kind": "upload", "id": getattr(action, "id", None), **_files(getattr(action, "paths", ()))}
    if name == "DropFiles":
        return {"kind": "drop", "x": getattr(action, "x", None), "y": getattr(action, "y", None),
                **_files(getattr(action, "paths", ()))}
    if name == "AdmitDrop":
        return {"kind": "drop-admitted", "x": getattr(action, "x", None), "y": getattr(action, "y", None)}
    if name == "CancelFileChooser":
        return {"kind": "upload-cancelled", "id": getattr(action, "id", None)}
    if name == "AdmitFiles":
        return {"kind": "upload-admitted", "id": getattr(action, "id", None)}
    return {"kind": _kebab(name)}


def _files(paths: Sequence[Path]) -> dict[str, Any]:
    """An upload's files by name and size (never their contents)."""
    sizes: list[int | None] = []
    for path in paths:
        try:
            sizes.append(Path(path).stat().st_size)
        except OSError:
            sizes.append(None)
    return {"files": [Path(p).name for p in paths], "sizes": sizes}


def step_line(t_us: int, end_us: int, claims: Claims, seq: int, body: dict[str, Any], *, error: str | None,
              message: str | None = None) -> Line:
    line: Line = {"t_us": t_us, "type": "step", "end_us": end_us, "subject": claims.sub, "role": claims.role,
                  "step": bool(claims.step), "seq": seq, **body}
    if error is None:
        line["ok"] = True
    else:
        line["ok"] = False
        line["error"] = error
        if message:
            line["message"] = message
    return line


class EventLines:
    """The sidecar lines of a frame's events (frames/events.py), remembering what it told already, so a
    `frame-state` repeated for a new viewer adds nothing, and the URL, pages and driver appear only as they change."""

    def __init__(self) -> None:
        self._url: str | None = None
        self._pages: dict[str, str] = {}
        self._driver: str | None = None
        self._state: str | None = None
        self._active: str | None = None
        self._held = False
        self._cursor = "default"  # the page's cursor at the driver's pointer, as last written

    def lines(self, t_us: int, event: object) -> list[Line]:
        if isinstance(event, StateChanged):
            return self._state_lines(t_us, event)
        if isinstance(event, ControlChanged):
            held = bool(getattr(event, "held", False))
            note = getattr(event, "note", None)
            if event.driver == self._driver and held == self._held and not note:
                return []
            self._driver, self._held = event.driver, held
            line: Line = {"t_us": t_us, "type": "driver", "driver": event.driver,
                          "kind": getattr(event, "kind", None), "held": held}
            if note:
                line["note"] = note
            return [line]
        if isinstance(event, DialogShown):
            return [{"t_us": t_us, "type": "dialog", "id": event.id, "page": event.page, "kind": event.kind,
                     "message": event.message}]
        if isinstance(event, DialogGone):
            return [{"t_us": t_us, "type": "dialog-closed", "id": event.id, "reason": event.reason}]
        if isinstance(event, FileChooserShown):
            return [{"t_us": t_us, "type": "file-chooser", "id": event.id, "page": event.page,
                     "multiple": event.multiple}]
        if isinstance(event, FileChooserGone):
            return [{"t_us": t_us, "type": "file-chooser-closed", "id": event.id}]
        if isinstance(event, DownloadChanged):
            return [{"t_us": t_us, "type": "download", "id": event.id, "name": event.name, "size": event.size,
                     "state": event.state}]
        if isinstance(event, ClipboardCopied):
            return [{"t_us": t_us, "type": "clipboard", "length": len(event.text)}]
        if isinstance(event, PageRefused):
            return [{"t_us": t_us, "type": "error", "code": event.code, "message": event.message}]
        if isinstance(event, PageCursor):  # (told only as it changes) the replay draws it at the pointer
            if event.cursor == self._cursor:
                return []
            self._cursor = event.cursor
            return [{"t_us": t_us, "type": "cursor", "cursor": event.cursor}]
        return self._other(t_us, event)

    def cursor_lines(self, t_us: int) -> list[Line]:
        """A new recording's first word on the cursor, when it is not the `default` every replay starts at."""
        return [] if self._cursor == "default" else [{"t_us": t_us, "type": "cursor", "cursor": self._cursor}]

    def _state_lines(self, t_us: int, event: StateChanged) -> list[Line]:
        out: list[Line] = []
        if event.state.value != self._state:
            self._state = event.state.value
            line: Line = {"t_us": t_us, "type": "state", "state": event.state.value}
            if event.message:
                line["message"] = event.message
            out.append(line)
            if event.state not in (FrameState.LIVE, FrameState.PAUSED):
                self._cursor = "default"  # the cursor goes with its browser (a new one tells its own), unsaid
            if event.state is FrameState.ERROR:
                out.append({"t_us": t_us, "type": "error", "code": "frame-error", "message": event.message or ""})
        if event.url != self._url:
            self._url = event.url
            out.append({"t_us": t_us, "type": "url", "url": event.url})
        if event.driver != self._driver:
            self._driver = event.driver
            out.append({"t_us": t_us, "type": "driver", "driver": event.driver})
        if event.pages is not None:
            pages = {str(p.get("id")): str(p.get("url", "")) for p in event.pages}
            for page_id, url in pages.items():
                if page_id not in self._pages:
                    out.append({"t_us": t_us, "type": "page-opened", "page": page_id, "url": url})
                elif self._pages[page_id] != url:
                    out.append({"t_us": t_us, "type": "navigated", "page": page_id, "url": url})
            for page_id in self._pages:
                if page_id not in pages:
                    out.append({"t_us": t_us, "type": "page-closed", "page": page_id})
            active = next((str(p.get("id")) for p in event.pages if p.get("active")), None)
            self._pages = pages
            if active is not None and active != self._active:
                self._active = active
                out.append({"t_us": t_us, "type": "active-page", "page": active})
        return out

    def _other(self, t_us: int, event: object) -> list[Line]:
        """Events added after this module (the handoff's help requests, an agent's pointer): their scalar fields,
        any text by its length, under the class name in kebab case."""
        if not dataclasses.is_dataclass(event) or isinstance(event, type):
            return []
        line: Line = {"t_us": t_us, "type": _kebab(type(event).__name__)}
        for field in dataclasses.fields(event):
            value = getattr(event, field.name)
            if field.name == "frame_id":
                continue
            if field.name in ("text", "token", "grant"):
                if isinstance(value, str):
                    line[f"{field.name}_length"] = len(value)
                continue
            if value is None or isinstance(value, (bool, int, float, str)):
                line[field.name] = value
        return [line]


def _kebab(name: str) -> str:
    return "".join(("-" + c.lower()) if c.isupper() and i else c.lower() for i, c in enumerate(name))
