"""Server messages: the JSON text the service sends, built in one place so every field is the contract's."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final

PROTOCOL_VERSION: Final = 1

ERROR_CODES: Final = (
    "bad-message",
    "unknown-frame",
    "unauthorized",
    "expired",
    "forbidden",
    "replayed",
    "superseded",
    "taken-over",
    "capacity",
    "shared-frames-off",
    "bad-input",
    "rate-limited",
    "internal",
    "page-limit",
    "url-not-allowed",
    "unknown-page",
    "unknown-dialog",
    "unknown-file-chooser",
    "dialog-open",
    "unresponsive",
    "printing",
    "navigation-failed",
    "unknown-download",
    "unknown-recording",
    "recording-active",
)
FRAME_STATES: Final = ("launching", "live", "paused", "closed", "error")
DIALOG_KINDS: Final = ("alert", "confirm", "prompt", "beforeunload")
DIALOG_CLOSE_REASONS: Final = ("answered", "timeout", "closed")
DOWNLOAD_STATES: Final = ("started", "done", "failed")
# CSS's cursor keywords (CSS Basic User Interface 4, `cursor`), but `auto`, which the page resolves before it tells
# (browser/cursor_hook.py): a viewer sets one on its canvas as it is, so nothing else (an image's url()) may pass.
CURSORS: Final = (
    "default", "none", "context-menu", "help", "pointer", "progress", "wait", "cell", "crosshair", "text",
    "vertical-text", "alias", "copy", "move", "no-drop", "not-allowed", "grab", "grabbing", "e-resize", "n-resize",
    "ne-resize", "nw-resize", "s-resize", "se-resize", "sw-resize", "w-resize", "ew-resize", "ns-resize",
    "nesw-resize", "nwse-resize", "col-resize", "row-resize", "all-scroll", "zoom-in", "zoom-out",
)
# The fields of one entry of frame-state's `pages`, in the contract's order.
PAGE_FIELDS: Final = ("id", "url", "title", "active", "responsive")

# WebSocket close codes.
CLOSE_PROTOCOL: Final = 4400
CLOSE_UNAUTHORIZED: Final = 4401
CLOSE_FORBIDDEN: Final = 4403
CLOSE_HELLO_TIMEOUT: Final = 4408
CLOSE_TOO_MANY: Final = 4429
CLOSE_GOING_AWAY: Final = 1001
CLOSE_INTERNAL: Final = 1011


def _dumps(obj: Mapping[str, object]) -> str:
    # ensure_ascii: strings echoed from clients may hold lone surrogates, which UTF-8 cannot carry.
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def _check(value: str, allowed: tuple[str, ...], what: str) -> None:
    # A typo would reach clients as a value the contract does not have; catch it where it is made.
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}")


def welcome(sandbox: str, shared_frames: bool, features: tuple[str, ...] | None = None) -> str:
    """`features`: those granted, listed only when the hello asked for any (None: today's welcome, unchanged)."""
    body: dict[str, object] = {
        "type": "welcome", "protocol": PROTOCOL_VERSION, "sandbox": sandbox, "shared_frames": shared_frames
    }
    if features is not None:
        body["features"] = list(features)
    return _dumps(body)


def video_config(  # noqa: PLR0917 - the contract's field order
    frame: str, slot: int, codec: str, width: int, height: int, css_width: int, css_height: int, *,
    stream: str | None = None, link_kbps: int | None = None,
) -> str:
    message: dict[str, object] = {
        "type": "video-config",
        "frame": frame,
        "slot": slot,
        "codec": codec,
        "width": width,
        "height": height,
        "css_width": css_width,
        "css_height": css_height,
    }
    if stream is not None:  # only on the light stream: every other config stays as it always was
        message["stream"] = stream
    if link_kbps is not None:
        message["link_kbps"] = link_kbps
    return _dumps(message)


def _page_entry(page: Mapping[str, object]) -> dict[str, object]:
    missing = [name for name in PAGE_FIELDS if name not in page]
    if missing:
        raise ValueError(f"a page entry needs {', '.join(missing)}")
    return {name: page[name] for name in PAGE_FIELDS}


def frame_state(  # noqa: PLR0917 - the contract's field order
    frame: str,
    state: str,
    url: str,
    viewers: int,
    driver: str | None,
    message: str | None = None,
    pages: Sequence[Mapping[str, object]] | None = None,
    css_size: tuple[int, int] | None = None,
) -> str:
    """`pages` (each with id, url, title, active, responsive; other keys are left out) is omitted when None: a
    frame without a running browser has none, and the message is then what it was before pages existed.
    `css_size` gives `width` and `height`, the frame's CSS size (its pictures' `css_width` and `css_height`)."""
    _check(state, FRAME_STATES, "frame state")
    body: dict[str, object] = {
        "type": "frame-state",
        "frame": frame,
        "state": state,
        "url": url,
        "viewers": viewers,
        "driver": driver,
    }
    if message is not None:
        body["message"] = message
    if pages is not None:
        body["pages"] = [_page_entry(page) for page in pages]
    if css_size is not None:
        body["width"], body["height"] = css_size
    return _dumps(body)


def input_ack(frame: str, seq: int, request: str | None = None) -> str:
    """The answer to a driver's step; `request`: the id of the request for help a `request-help` opened."""
    body: dict[str, object] = {"type": "input-ack", "frame": frame, "seq": seq}
    if request is not None:
        body["id"] = request
    return _dumps(body)


def pong(seq: int | None = None) -> str:
    """The answer to `ping`, with its `seq` when it had one."""
    return _dumps({"type": "pong"} if seq is None else {"type": "pong", "seq": seq})


def error_message(code: str, message: str, frame: str | None = None, seq: int | None = None) -> str:
    _check(code, ERROR_CODES, "error code")
    body: dict[str, object] = {"type": "error", "code": code, "message": message}
    if frame is not None:
        body["frame"] = frame
    if seq is not None:
        body["seq"] = seq
    return _dumps(body)


def dialog_message(  # noqa: PLR0917 - the contract's field order
    frame: str, id: str, page: str, kind: str, message: str, default: str
) -> str:
    _check(kind, DIALOG_KINDS, "dialog kind")
    return _dumps(
        {
            "type": "dialog",
            "frame": frame,
            "id": id,
            "page": page,
            "kind": kind,
            "message": message,
            "default": default,
        }
    )


def dialog_closed(frame: str, id: str, reason: str) -> str:
    _check(reason, DIALOG_CLOSE_REASONS, "dialog-closed reason")
    return _dumps({"type": "dialog-closed", "frame": frame, "id": id, "reason": reason})


def file_chooser_message(frame: str, id: str, page: str, multiple: bool, accept: Sequence[str]) -> str:
    return _dumps(
        {
            "type": "file-chooser",
            "frame": frame,
            "id": id,
            "page": page,
            "multiple": multiple,
            "accept": list(accept),
        }
    )


def file_chooser_closed(frame: str, id: str) -> str:
    return _dumps({"type": "file-chooser-closed", "frame": frame, "id": id})


def download_message(frame: str, id: str, name: str, size: int, state: str) -> str:
    _check(state, DOWNLOAD_STATES, "download state")
    return _dumps({"type": "download", "frame": frame, "id": id, "name": name, "size": size, "state": state})


def clipboard_message(frame: str, text: str) -> str:
    """Text a page copied, for the frame's drivers (the frame cuts it to the contract's 64 KiB first)."""
    return _dumps({"type": "clipboard", "frame": frame, "text": text})


def cursor_message(frame: str, cursor: str) -> str:
    """The page's cursor at the driver's pointer, for the frame's drivers to show over its picture."""
    _check(cursor, CURSORS, "cursor")
    return _dumps({"type": "cursor", "frame": frame, "cursor": cursor})
