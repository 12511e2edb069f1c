"""One exception tree for framestream.

FramestreamError
  ConfigError          bad settings at start (the CLI exits 2 with the message)
  ProtocolError        a client sent something the contract does not allow; carries a wire `code`
  TokenError           a token failed verification; `code` is `unauthorized` or `expired`
  BrowserError         Xvfb, Chromium or DevTools failed; the frame goes to `error`
    CDPError           a DevTools call failed or timed out
  CaptureError         the X display could not be read
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
