"""Handing a frame between a person and an agent: `take-over`, `release`, `request-help` (client), and `control`,
`help-requested`, `help-ended`, `agent-pointer` (server).

The client messages carry the envelope of `input` (frame, grant, seq) and are answered `input-ack` or an error
with that seq, so they go through the same grant checks, in the same order, as every other driver step.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from framestream.core.wire._fields import envelope, integer, refused_as, string

MAX_NOTE_CHARS: Final = 2000
MAX_REASON_CHARS: Final = 500
HELP_TIMEOUT_DEFAULT_S: Final = 300
HELP_TIMEOUT_MAX_S: Final = 3600
DRIVER_KINDS: Final = ("agent", "person")
HELP_OUTCOMES: Final = ("answered", "timeout", "cancelled")
POINTER_ACTIONS: Final = ("click", "down", "up", "move", "wheel", "touch")

DriverKind = Literal["agent", "person"]
HelpOutcome = Literal["answered", "timeout", "cancelled"]
PointerAction = Literal["click", "down", "up", "move", "wheel", "touch"]


@dataclass(frozen=True, slots=True)
class TakeOver:
    """A person's grant takes the frame without sending input (the viewer's Take over button)."""

    frame: str
    grant: str
    seq: int


@dataclass(frozen=True, slots=True)
class Release:
    """The driver hands the frame back: nobody drives until the next grant that is newer than this one."""

    frame: str
    grant: str
    seq: int
    note: str = ""


@dataclass(frozen=True, slots=True)
class RequestHelp:
    """An agent asks a person to take over (a login, a CAPTCHA, a payment)."""

    frame: str
    grant: str
    seq: int
    reason: str
    timeout_s: int = HELP_TIMEOUT_DEFAULT_S


def parse_take_over(obj: Mapping[str, Any]) -> TakeOver:
    return TakeOver(*envelope(obj, "take-over"))


def parse_release(obj: Mapping[str, Any]) -> Release:
    frame, grant, seq = envelope(obj, "release")
    with refused_as("bad-input", seq=seq, frame=frame):
        note = string(obj, "note", "release", max_len=MAX_NOTE_CHARS, min_len=0) if "note" in obj else ""
    return Release(frame, grant, seq, note)


def parse_request_help(obj: Mapping[str, Any]) -> RequestHelp:
    where = "request-help"
    frame, grant, seq = envelope(obj, where)
    with refused_as("bad-input", seq=seq, frame=frame):
        reason = string(obj, "reason", where, max_len=MAX_REASON_CHARS)
        timeout_s = integer(obj, "timeout_s", where, 1, HELP_TIMEOUT_MAX_S, default=HELP_TIMEOUT_DEFAULT_S)
    return RequestHelp(frame, grant, seq, reason, timeout_s)


def _dumps(obj: Mapping[str, object]) -> str:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def control_message(frame: str, driver: str | None, you: bool, *, kind: DriverKind | None = None,
                    since_us: int | None = None, held: bool = False, note: str | None = None) -> str:
    """Who drives `frame` now: `kind` of the driving grant (`agent`: a step grant), since when (µs, wall clock),
    whether a person holds it (agent steps refused `taken-over`), and the note of a driver that released it."""
    if kind is not None and kind not in DRIVER_KINDS:
        raise ValueError(f"unknown driver kind {kind!r}")
    body: dict[str, object] = {"type": "control", "frame": frame, "driver": driver, "you": you, "kind": kind,
                               "since_us": since_us, "held": held}
    if note is not None:
        body["note"] = note
    return _dumps(body)


def help_requested(frame: str, request: str, reason: str, subject: str, until_us: int) -> str:
    return _dumps({"type": "help-requested", "frame": frame, "id": request, "reason": reason, "subject": subject,
                   "until_us": until_us})


def help_ended(frame: str, request: str, outcome: HelpOutcome, *, note: str | None = None,
               by: str | None = None) -> str:
    if outcome not in HELP_OUTCOMES:
        raise ValueError(f"unknown help outcome {outcome!r}")
    body: dict[str, object] = {"type": "help-ended", "frame": frame, "id": request, "outcome": outcome}
    if note is not None:
        body["note"] = note
    if by is not None:
        body["by"] = by
    return _dumps(body)


def agent_pointer(frame: str, x: float, y: float, action: PointerAction, subject: str) -> str:
    if action not in POINTER_ACTIONS:
        raise ValueError(f"unknown pointer action {action!r}")
    return _dumps({"type": "agent-pointer", "frame": frame, "x": round(x, 2), "y": round(y, 2), "action": action,
                   "subject": subject})
