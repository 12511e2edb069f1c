"""A driver's messages about the frame's tab rather than input: `page`, `navigate`, `dialog-answer`.

Each carries the envelope of `input` (`frame`, `grant`, `seq`: `bad-message` when wrong) and is checked as
strictly; its own fields are refused with `bad-input`, carrying the `seq` and `frame`. A navigation URL is only
bounded here (1 to 8192 characters): whether it may be loaded (scheme, allowed hosts) is the frame's check, the
same one frame creation uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from framestream.core.wire._fields import (
    FieldError,
    body_with_seq,
    boolean,
    choice,
    envelope,
    refused_as,
    string,
)
from framestream.core.wire._limits import MAX_ID_CHARS, MAX_TEXT_CHARS, MAX_URL_CHARS

PageAction = Literal["activate", "close", "reload"]
NavigateAction = Literal["back", "forward", "reload"]

PAGE_ACTIONS: Final = ("activate", "close", "reload")
NAVIGATE_ACTIONS: Final = ("back", "forward", "reload")


@dataclass(frozen=True, slots=True)
class PageRequest:
    """Switch to, close or reload one of the frame's pages."""

    frame: str
    grant: str
    seq: int
    action: PageAction
    page: str


@dataclass(frozen=True, slots=True)
class Navigate:
    """Go to `url`, or back, forward or reload (`action`), in the active page: exactly one of the two is set."""

    frame: str
    grant: str
    seq: int
    url: str | None = None
    action: NavigateAction | None = None

    def __post_init__(self) -> None:
        if (self.url is None) == (self.action is None):
            raise ValueError("a Navigate has exactly one of url or action")


@dataclass(frozen=True, slots=True)
class DialogAnswer:
    """OK (`accept`) or Cancel for an open dialog; `text` answers a prompt."""

    frame: str
    grant: str
    seq: int
    id: str
    accept: bool
    text: str | None = None


def parse_page(obj: Mapping[str, Any]) -> PageRequest:
    frame, grant, seq = envelope(obj, "page")
    with refused_as("bad-input", seq=seq, frame=frame):
        action = cast(PageAction, choice(obj, "action", "page", PAGE_ACTIONS))
        return PageRequest(frame, grant, seq, action, string(obj, "page", "page", max_len=MAX_ID_CHARS))


def _navigation(obj: Mapping[str, Any]) -> tuple[str | None, NavigateAction | None]:
    has_url, has_action = "url" in obj, "action" in obj
    if has_url == has_action:
        raise FieldError("navigate needs exactly one of 'url' or 'action'")
    if has_url:
        return string(obj, "url", "navigate", max_len=MAX_URL_CHARS), None
    return None, cast(NavigateAction, choice(obj, "action", "navigate", NAVIGATE_ACTIONS))


def parse_navigate(obj: Mapping[str, Any]) -> Navigate:
    frame, grant, seq = envelope(obj, "navigate")
    with refused_as("bad-input", seq=seq, frame=frame):
        url, action = _navigation(obj)
    return Navigate(frame, grant, seq, url, action)


def parse_dialog_answer(obj: Mapping[str, Any]) -> DialogAnswer:
    where = "dialog-answer"
    frame, grant, seq = envelope(obj, where)
    with refused_as("bad-input", seq=seq, frame=frame):
        dialog = string(obj, "id", where, max_len=MAX_ID_CHARS)
        accept = boolean(obj, "accept", where)
        # An empty answer to a prompt is an answer; only its length is bounded.
        text = string(obj, "text", where, max_len=MAX_TEXT_CHARS, min_len=0) if "text" in obj else None
    return DialogAnswer(frame, grant, seq, dialog, accept, text)


def parse_navigate_body(obj: object, *, frame: str, grant: str) -> Navigate:
    """Parse a decoded POST /frames/{id}/navigate body (`{"seq","url"}` or `{"seq","action"}`) into the same
    `Navigate` the WebSocket gives; `frame` comes from the path and `grant` from the Authorization header."""
    body, seq = body_with_seq(obj)
    with refused_as("bad-input", seq=seq, frame=frame):
        url, action = _navigation(body)
    return Navigate(frame, grant, seq, url, action)
