"""One exception tree for framestream.

FramestreamError
  ConfigError          bad settings at start (the CLI exits 2 with the message)
  ProtocolError        a client sent something the contract does not allow; carries a wire `code`
  TokenError           a token failed verification; `code` is `unauthorized` or `expired`
  BrowserError         Xvfb, Chromium or DevTools failed; the frame goes to `error`
    CDPError           a DevTools call failed or timed out
  CaptureError         the X display could not be read
  CapacityError        every running browser is watched, so none may close to make room (wire: `capacity`)
  FrameGone            the frame was deleted while the caller waited for it (wire: `unknown-frame`)

`protocol_error` is the one mapping from what bringing a frame up or driving it raises (`FRAME_ERRORS`) to the
contract's error codes, shared by HTTP, the WebSocket session and the input path.
"""

from __future__ import annotations


class FramestreamError(Exception):
    """Base of every error framestream raises on purpose."""


class ConfigError(FramestreamError):
    """Settings are invalid; the message says which and why."""


class ProtocolError(FramestreamError):
    """A client message broke the contract. `code` is one of the contract's error codes."""

    def __init__(self, code: str, message: str, *, seq: int | None = None, frame: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.seq = seq
        self.frame = frame


class TokenError(FramestreamError):
    """A token was refused. `code` is `unauthorized` (bad, forged, malformed) or `expired`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class BrowserError(FramestreamError):
    """Xvfb, Chromium or its DevTools endpoint failed."""


class CDPError(BrowserError):
    """A DevTools call returned an error, timed out, or the socket closed under it."""


class CaptureError(FramestreamError):
    """The X display could not be opened or read."""


class CapacityError(FramestreamError):
    """Every running browser is watched (or starting): no browser may close to make room."""

    def __init__(self, cap: int) -> None:
        super().__init__(f"all {cap} browsers are in use by viewers; close a frame or wait")
        self.cap = cap


class FrameGone(FramestreamError):
    """The frame was deleted while the caller waited for it."""


# What making a frame live or applying input to it may raise; `protocol_error` says what each means on the wire.
FRAME_ERRORS = (CapacityError, FrameGone, BrowserError)


def protocol_error(exc: CapacityError | FrameGone | BrowserError, *, frame: str | None = None,
                   seq: int | None = None) -> ProtocolError:
    """The contract's error for `exc`: `capacity`, `unknown-frame` (deleted) or `internal` (the browser failed)."""
    if isinstance(exc, CapacityError):
        return ProtocolError("capacity", str(exc), seq=seq, frame=frame)
    if isinstance(exc, FrameGone):
        return ProtocolError("unknown-frame", f"frame {frame or exc} was deleted", seq=seq, frame=frame)
    return ProtocolError("internal", f"the frame's browser failed: {exc}", seq=seq, frame=frame)
